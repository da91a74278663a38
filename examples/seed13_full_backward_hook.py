# Seed document 003: a full backward hook printing grad_input / grad_output shapes.
import hookgrad as torch
import hookgrad.nn as nn
class MyModule(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(5, 2)
    def forward(self, x):
        print("MyModule.forward() 内部")
        return self.linear(x)
# 继续 MyModule 的例子
model = MyModule()
dummy_input = torch.randn(3, 5, requires_grad=True)
# 定义一个完整反向钩子
def full_backward_hook_fn(module, grad_input, grad_output):
    print("--- 完整反向钩子 ---")
    print(f"模块: {module.__class__.__name__}")
    if grad_input[0] is not None:
        print(f"grad_input[0] 形状: {grad_input[0].shape}")
    if grad_output[0] is not None:
        print(f"grad_output[0] 形状: {grad_output[0].shape}")
    # 示例: 修改 grad_input
    # new_grad_input = tuple(g * 0.1 if g is not None else None for g in grad_input)
    # return new_grad_input
# 注册反向钩子
bakward_hook_handle = model.register_full_backward_hook(full_backward_hook_fn)
output = model(dummy_input)
target = torch.randn_like(output)
loss = nn.MSELoss()(output, target)
loss.backward()
print("\ndummy_input 的梯度:")
print(dummy_input.grad)
bakward_hook_handle.remove()
