"""torch.autograd.profiler_legacy: the deprecated profiler class; it records through the one recorder of
torch.autograd.profiler (same events, tables and traces)."""
from . import profiler as _profiler

__all__ = ["profile"]


class profile(_profiler.profile):
    """DEPRECATED: use torch.profiler instead. (PyTorch marks it deprecated without a runtime warning.)"""

    def __init__(self, enabled=True, *, use_cuda=False, record_shapes=False, with_flops=False, profile_memory=False,
                 with_stack=False, with_modules=False):
        super().__init__(enabled, use_cuda=use_cuda, record_shapes=record_shapes, with_flops=with_flops,
                         profile_memory=profile_memory, with_stack=with_stack, with_modules=with_modules)
