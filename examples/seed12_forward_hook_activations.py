# Seed document 003: a forward hook storing activations (feature extraction).
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
# 存储激活
activations = {}
def forward_hook_fn(module, input_args, output_tensor):
    print("--- 前向钩子 ---")
    print(f"模块: {module.__class__.__name__}")
    print(f"输入形状: {input_args[0].shape}")
    print(f"输出形状: {output_tensor.shape}")
    # 存储输出 (激活)
    activations[module.__class__.__name__] = output_tensor.detach()
    # 示例: 修改输出
    # return output_tensor * 100
# 注册前向钩子
forward_hook_handle = model.register_forward_hook(forward_hook_fn)
dummy_input = torch.randn(3, 5)
output = model(dummy_input)
print("\n模型输出:", output)
print("存储的激活:", activations)
forward_hook_handle.remove()
