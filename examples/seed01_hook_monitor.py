# Seed document 000, case 1: a tensor hook that prints the gradient (only the import changed).
import hookgrad as torch
# 创建一个张量,并启用梯度追踪
x = torch.tensor([1.0], requires_grad=True)
y = x * 2
# 定义钩子函数
def hook_fn(grad):
    '''作用:打印梯度'''
    print("Hook triggered, gradient:", grad)
# 注册钩子:将钩子函数注册到x上,反向传播计算x梯度时自动触发钩子函数
x.register_hook(hook_fn)
# 触发反向传播和钩子函数
y.backward()
