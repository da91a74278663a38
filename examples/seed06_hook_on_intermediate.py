# Seed document 001, experiment 3: a hook on an intermediate tensor collects its gradient.
import hookgrad as torch
torch.manual_seed(seed=20200910)
def grad_hook(grad):
    y_grad.append(grad)
    print("执行自定义的钩子函数...")
y_grad = list()
print(y_grad)
x = torch.tensor([[1., 2.], [3., 4.]], requires_grad=True)
y = x ** 2 + 1
y.register_hook(grad_hook)
z = torch.mean(y*y)
print(z.grad)
print(y.grad)
print(x.grad)
print(y_grad)
z.backward()
print(y_grad)
print(z.grad)
print(y.grad)
print(x.grad)
# 数学推导得出公式: z' = x^3 + x
