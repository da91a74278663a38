# Seed document 003: a forward pre-hook that halves the module's input.
import hookgrad as torch
import hookgrad.nn as nn
# 定义一个简单模块
class MyModule(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(5, 2)
    def forward(self, x):
        print("MyModule.forward() 内部")
        return self.linear(x)
model = MyModule()
# 定义一个前向预钩子
def pre_hook_fn(module, input_args):
    print("--- 前向预钩子 ---")
    print(f"模块: {module.__class__.__name__}")
    print(f"原始输入形状: {input_args[0].shape}")
    # 示例: 修改输入 (例如, 缩放它)
    modified_input = input_args[0] * 0.5
    print("输入已在前向预钩子中修改。")
    return (modified_input,) # 必须返回一个输入元组
# 注册前向预钩子
pre_hook_handle = model.register_forward_pre_hook(pre_hook_fn)
dummy_input = torch.randn(3, 5)
output = model(dummy_input)
pre_hook_handle.remove()
