"""Which library (hookgrad or torch) an object belongs to, found from the object itself so that the
tools never import torch. Used by the tools added for issue 25 (per_sample_grads, check_hooks,
grads_ready, saved_bytes, capture)."""
import sys

__all__ = ["library_of"]

_ROOTS = ("hookgrad", "torch")
_BASES = ("Module", "Tensor", "Optimizer", "Parameter")


def library_of(*objs):
    """The top-level package (``hookgrad`` or ``torch``) whose ``nn.Module`` / ``Tensor`` /
    ``Optimizer`` the first recognised object derives from; hookgrad when none is recognised."""
    for o in objs:
        for cls in type(o).__mro__:
            root = (getattr(cls, "__module__", None) or "").split(".")[0]
            if root in _ROOTS and cls.__name__ in _BASES:
                return sys.modules[root]
    return sys.modules["hookgrad"]

