"""hookgrad.nn: modules with PyTorch's complete hook system, layers, losses, functional, init."""
from .parameter import Parameter, Buffer
from .modules import *  # noqa: F401,F403
from . import functional, init, utils, modules
