# Seed document 002: a forward hook printing each call's module, input and output.
import hookgrad as torch
import hookgrad.nn as nn
def forward_hook(module, input, output):
    print(f'{module} input: {input}, output: {output}')
model = nn.Sequential(nn.Linear(10, 20), nn.ReLU(), nn.Linear(20, 30))
handle = model.register_forward_hook(forward_hook)
x = torch.randn(1, 10)
y = model(x)
handle.remove()
