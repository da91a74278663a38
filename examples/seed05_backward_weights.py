# Seed document 001: backward() with a gradient argument, y = 2 v^2.
import hookgrad as torch
v = torch.tensor([7., 8., 9.], requires_grad=True)
print(v.grad)
y = 2*v**2
print(v.grad)
y.backward(torch.tensor([1., 2., 3.]))
print(v.grad)
# alpha = [1., 2., 3.]
# y' = 4 * v * alpha
