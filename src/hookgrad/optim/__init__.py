"""hookgrad.optim (mirrors torch.optim): optimizers with PyTorch's state layout and hooks, and lr schedulers.

The step of every optimizer is PyTorch's single-tensor (for-loop) algorithm; ``foreach``/``fused`` are
accepted and recorded in the param groups but run the same code. ``differentiable=True`` is not supported.
"""
from .optimizer import Optimizer
from .sgd import SGD
from .adam import Adam, AdamW
from .rmsprop import RMSprop
from .adagrad import Adagrad
from .adadelta import Adadelta
from .adamax import Adamax
from .asgd import ASGD
from .nadam import NAdam
from .radam import RAdam
from .rprop import Rprop
from .lbfgs import LBFGS
from ._adafactor import Adafactor
from .sparse_adam import SparseAdam
from . import optimizer, lr_scheduler, swa_utils

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax", "ASGD", "NAdam", "RAdam",
           "Rprop", "LBFGS", "Adafactor", "SparseAdam", "lr_scheduler", "swa_utils"]


# a torch name hookgrad lacks raises _missing.NotImplementedName (an AttributeError)
from .. import _missing  # noqa: E402
__getattr__ = _missing.module_getattr(__name__, 'torch.optim')
