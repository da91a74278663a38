"""Model definitions whose state_dict keys match the reference implementations (torchvision, HF)."""
from .resnet import ResNet, BasicBlock, Bottleneck, resnet18, resnet34, resnet50
from . import bert
from .bert import BertConfig, BertModel, SentenceEncoder
