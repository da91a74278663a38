"""hookgrad.nn: modules with PyTorch's complete hook system, layers, losses, functional, init."""
from .parameter import Parameter, Buffer
from .modules import *  # noqa: F401,F403
from . import functional, init, utils, modules
from . import parallel
from .parallel import DataParallel


# [part A] a torch name hookgrad lacks raises _missing.NotImplementedName (an AttributeError)
from .. import _missing  # noqa: E402
__getattr__ = _missing.module_getattr(__name__, 'torch.nn')
