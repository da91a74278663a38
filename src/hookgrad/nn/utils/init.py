"""torch.nn.utils.init: build a module without initialising its parameters."""
import inspect

from ..modules.module import Module
from ...random import fork_rng

__all__ = ["skip_init"]


def skip_init(module_cls, *args, **kwargs):
    """``module_cls(*args, **kwargs)`` whose parameters and buffers hold unspecified values (PyTorch allocates
    them uninitialised on the meta device). hookgrad builds the module as usual, but inside a forked random
    state, so that, as in PyTorch, no random number is drawn from the global generator."""
    if not (isinstance(module_cls, type) and issubclass(module_cls, Module)):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    with fork_rng():
        return module_cls(*args, **kwargs)
