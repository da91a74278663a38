# Seed document 000, case 3: a hook on a Linear layer's weight (random init: values differ per run).
import hookgrad as torch
import hookgrad.nn as nn
model = nn.Linear(1, 1)
weight = model.weight # 模型权重
# 定义钩子函数
def hook_fn(grad):
    '''作用:打印梯度'''
    print("Gradient of weight:", grad)
# 注册钩子:将钩子函数注册到weight上,反向传播计算weight梯度时自动触发钩子函数
weight.register_hook(hook_fn)
# 输入数据
x = torch.tensor([[1.0]])
target = torch.tensor([[3.0]])
# 前向传播
output = model(x)
print(output)
# 损失函数
loss = (output - target).pow(2)
# 触发反向传播和钩子函数
loss.backward()
