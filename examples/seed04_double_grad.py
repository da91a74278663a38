# Seed document 001: the register_hook documentation example (double the gradient, then remove).
import hookgrad as torch
torch.manual_seed(seed=20200910)
v = torch.tensor([0., 0., 0.], requires_grad=True)
h = v.register_hook(lambda grad: grad * 2)  # double the gradient
print(v.grad)
v.backward(torch.tensor([1., 2., 3.]))
print(v.grad)
h.remove()  # removes the hook
print(v.grad.zero_())
print(v.grad)
v.backward(torch.tensor([1., 2., 3.]))
print(v.grad)
# without a hook
v = torch.tensor([0., 0., 0.], requires_grad=True)
print(v.grad)
v.backward(torch.tensor([1., 2., 3.]))
print(v.grad)
