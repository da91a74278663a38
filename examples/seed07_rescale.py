# Seed document 001, experiment 4: a hook that rescales the gradient by 20200910, then is removed.
import hookgrad as torch
def grad_hook(grad):
    return grad * 20200910.0
x = torch.tensor([2., 2., 2., 2.], requires_grad=True)
y = torch.pow(x, 2)
z = torch.mean(y)
h = x.register_hook(grad_hook)
print(x.grad)
z.backward(retain_graph=True)
print(x.grad)
h.remove()    # removes the hook
print(x.grad.zero_())
print(x.grad)
z.backward()
print(x.grad)
