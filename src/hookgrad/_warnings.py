"""PyTorch's warn-once switch: ``set_warn_always`` / ``is_warn_always_enabled`` and ``warn_once``
(a warning PyTorch raises with TORCH_WARN_ONCE: once per process unless warn-always is on)."""
import warnings

_warn_always = False
_warned = set()


def set_warn_always(b):
    """When True, warnings PyTorch issues once per process are issued every time."""
    global _warn_always
    if not isinstance(b, bool):
        raise RuntimeError(f"setWarnOnlyOnce expects a bool, but got {type(b).__name__}")
    _warn_always = b


def is_warn_always_enabled():
    return _warn_always


def warn_once(message, category=UserWarning, stacklevel=3):
    """Issue ``message`` the first time (every time while warn-always is on)."""
    if _warn_always or message not in _warned:
        _warned.add(message)
        warnings.warn(message, category, stacklevel=stacklevel)
