# Seed document 002: the legacy register_backward_hook on a Sequential, returning two gradients.
# It fails exactly as in PyTorch: the hook sits on the last node (AddmmBackward0 of the last Linear),
# which has three grad_inputs (bias, input, weight.T). Only change besides the imports: the try/except,
# so that the error is printed instead of ending the script.
import hookgrad as torch
import hookgrad.nn as nn
def backward_hook(module, grad_input, grad_output):
    print(f'{module} grad_input: {grad_input}, grad_output: {grad_output}')
    return (grad_input[0], grad_input[1] * 0.1)
model = nn.Sequential(nn.Linear(10, 20), nn.ReLU(), nn.Linear(20, 30))
handle = model.register_backward_hook(backward_hook)
x = torch.randn(1, 10)
y = model(x)
loss = y.sum()
try:
    loss.backward()
except RuntimeError as e:
    print(f"{type(e).__name__}: {e}")
handle.remove()
