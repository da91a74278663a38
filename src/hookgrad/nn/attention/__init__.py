"""torch.nn.attention: the choice of kernel behind F.scaled_dot_product_attention.

hookgrad has PyTorch's two CPU kernels, the flash kernel (one primitive) and the math path (composed of
ops); ``sdpa_kernel`` enables a subset of backends for a block, as in PyTorch. The CUDA-only backends
(efficient, cuDNN, overrideable) can be named and enabled; they are never chosen on the CPU.
"""
import contextlib
import enum

__all__ = ["SDPBackend", "sdpa_kernel", "WARN_FOR_UNFUSED_KERNELS"]

WARN_FOR_UNFUSED_KERNELS = False


class SDPBackend(enum.IntEnum):
    """The backends of scaled dot product attention (PyTorch's values)."""
    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4

    def __str__(self):
        return f"SDPBackend.{self.name}"


_ALL = (SDPBackend.CUDNN_ATTENTION, SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH,
        SDPBackend.OVERRIDEABLE)
_state = {"enabled": frozenset(_ALL), "priority": list(_ALL)}


def _enabled():
    """The set of enabled backends (read by F.scaled_dot_product_attention)."""
    return _state["enabled"]


def _cur_sdpa_kernel_backends(with_priority=False):
    backends = [b for b in _ALL if b in _state["enabled"]]
    if with_priority:
        backends.sort(key=_state["priority"].index)
    return backends


def _sdpa_kernel(backends, set_priority=False):
    _state["enabled"] = frozenset(b for b in _ALL if b in backends)
    if set_priority:
        user = list(backends)
        _state["priority"] = user + [b for b in _state["priority"] if b not in user]


@contextlib.contextmanager
def sdpa_kernel(backends, set_priority=False):
    """Enable only ``backends`` (an SDPBackend or a list of them) for scaled dot product attention in this
    block; the previous set is restored on exit.

    >>> with sdpa_kernel(SDPBackend.MATH):
    ...     pass
    """
    if not isinstance(backends, (list, SDPBackend)):
        raise AssertionError("Backend must be an instance of SDPBackend or a list of SDPBackend instances, got "
                             f"{type(backends).__name__}")
    if isinstance(backends, SDPBackend):
        backends = [backends]
    backends = list(dict.fromkeys(backends))
    previous = _cur_sdpa_kernel_backends(with_priority=set_priority)
    try:
        _sdpa_kernel(backends, set_priority)
        yield {}
    finally:
        _sdpa_kernel(previous, set_priority)


from ... import _missing  # noqa: E402
__getattr__ = _missing.module_getattr(__name__, "torch.nn.attention")
