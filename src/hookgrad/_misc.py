"""Small top-level utilities PyTorch scripts call (is_tensor, numel, thread and determinism switches)."""
from ._tensor import Tensor

_deterministic = False


def is_tensor(obj):
    return isinstance(obj, Tensor)


def is_floating_point(input):
    return input.is_floating_point()


def numel(input):
    return input.numel()


def set_num_threads(n):
    """Accepted for compatibility: NumPy's BLAS picks its own thread count."""


def get_num_threads():
    import os
    return os.cpu_count() or 1


def use_deterministic_algorithms(mode, *, warn_only=False):
    """hookgrad is deterministic for a given seed; the flag is recorded for the getter."""
    global _deterministic
    _deterministic = bool(mode)


def are_deterministic_algorithms_enabled():
    return _deterministic


def compile(model=None, *, fullgraph=False, dynamic=None, backend="inductor", mode=None, options=None, name=None,
            disable=False, recompile_limit=None, isolate_recompiles=False, shapes_spec=None):

    """There is no compiler: returns the model (or function) unchanged, so hooks keep working."""
    if model is None:
        return lambda m: m
    return model
