# Seed document 003: a hook on a layer's weight printing its gradient norm.
import hookgrad as torch
import hookgrad.nn as nn
# 简单层
linear_layer = nn.Linear(10, 1, bias=False)
input_tensor = torch.randn(5, 10, requires_grad=True)
def check_weight_grad_hook(grad):
    print(f"linear_layer.weight 的梯度范数: {grad.norm().item()}")
# 在 .weight 参数的梯度上注册钩子
weight_hook = linear_layer.weight.register_hook(check_weight_grad_hook)
output = linear_layer(input_tensor).sum()
output.backward()
weight_hook.remove()
