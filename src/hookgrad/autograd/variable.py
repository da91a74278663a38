"""torch.autograd.variable: the module that holds the legacy ``Variable`` class (defined in hookgrad.autograd)."""
from .api import Variable

__all__ = ["Variable"]
