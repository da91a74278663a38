# Seed document 003: a tensor hook that prints x's gradient and doubles it.
import hookgrad as torch
# 创建一个需要梯度的张量
x = torch.randn(2, 2, requires_grad=True)
y = x * 2
z = y.mean()
# 为张量 x 定义一个钩子函数
def x_grad_hook(grad):
    print("x 的梯度 (钩子内部):")
    print(grad)
    # 示例: 修改梯度
    return grad * 2
# 在张量 x 上注册钩子
x_hook_handle = x.register_hook(x_grad_hook)
# 启动反向传播
z.backward()
print("\nx 的最终梯度 (钩子之后):")
print(x.grad)
# 完成后不要忘记移除钩子
x_hook_handle.remove()
