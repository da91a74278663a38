"""torch._dynamo.eval_frame: the names packages import (hookgrad never compiles a frame)."""
from ..nn.modules.module import Module


class OptimizedModule(Module):
    """The class of a module compiled by torch.compile in PyTorch (``_orig_mod`` is the module). hookgrad's
    torch.compile returns the module itself, so it makes none; one made by hand forwards to ``_orig_mod``."""

    def __init__(self, mod, dynamo_ctx=None):
        super().__init__()
        self._orig_mod = mod
        self.dynamo_ctx = dynamo_ctx

    def forward(self, *args, **kwargs):
        return self._orig_mod(*args, **kwargs)


def is_dynamo_supported():
    """Whether Dynamo can run here: hookgrad has no Dynamo."""
    return False


def is_inductor_supported():
    return False


class _TorchDynamoContext:
    """The base of PyTorch's compile contexts (isinstance checks only)."""


class DisableContext(_TorchDynamoContext):
    pass


class OptimizeContext(_TorchDynamoContext):
    pass
