# Seed document 003: feature extraction with a forward hook on ResNet-18's avgpool.
# Changes from the seed, and why:
#  - `import hookgrad as torch` (the seed uses torch without importing it) and `hookgrad.models`
#    in place of `torchvision.models`.
#  - weights=None instead of models.ResNet18_Weights.DEFAULT: nothing can be downloaded here, so the
#    weights are random (load a torchvision checkpoint with resnet18.load_state_dict(torch.load(path))).
#  - the seed writes `nonlocal extracted_features` at module level, which is a SyntaxError in Python
#    ("nonlocal declaration not allowed at module level"); `global` is what it means there.
import hookgrad as torch
import hookgrad.models as models
resnet18 = models.resnet18(weights=None)
resnet18.eval() # 设置为评估模式
# 我们想从最终分类器之前的层中提取特征
target_layer = resnet18.avgpool
extracted_features = None
def feature_extractor_hook(module, input, output):
    global extracted_features
    extracted_features = output.detach().clone() # 存储一个副本
hook_handle = target_layer.register_forward_hook(feature_extractor_hook)
dummy_image_batch = torch.randn(1, 3, 224, 224) # 包含一张图像的批次
_ = resnet18(dummy_image_batch) # 执行一次前向传播
hook_handle.remove() # 清理
if extracted_features is not None:
    print(f"从 avgpool 中提取的特征形状: {extracted_features.shape}")
# 形状: ResNet18 为 torch.Size([1, 512, 1, 1])
