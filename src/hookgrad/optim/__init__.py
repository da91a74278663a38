"""hookgrad.optim (mirrors torch.optim): optimizers with PyTorch's state layout and hooks, and lr schedulers.

The step of every optimizer is PyTorch's single-tensor (for-loop) algorithm; ``foreach``/``fused`` are
accepted and recorded in the param groups but run the same code. ``differentiable=True`` is not supported.
"""
from .optimizer import Optimizer
from .sgd import SGD
from .adam import Adam, AdamW
from .rmsprop import RMSprop
from .adagrad import Adagrad
from . import optimizer, lr_scheduler

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "lr_scheduler"]
