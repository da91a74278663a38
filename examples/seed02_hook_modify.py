# Seed document 000, case 2: a tensor hook that returns a new gradient (x3).
import hookgrad as torch
# 创建一个张量,并启用梯度追踪
x = torch.tensor([1.0], requires_grad=True)
y = x * 2
# 定义钩子函数
def hook_fn(grad):
    '''作用:修改输入的梯度'''
    print('原梯度:',grad)
    return grad * 3
# 注册钩子:将钩子函数注册到x上,反向传播计算x梯度时自动触发钩子函数
x.register_hook(hook_fn)
# 触发反向传播和钩子函数
y.backward()
print("修改后的梯度:", x.grad)
