"""torch.backends.nnpack: no NNPACK in hookgrad: ``is_available()`` False; ``flags()`` scopes the flag."""
from contextlib import contextmanager

from .._flags import _allow_nonbracketed_mutation

__all__ = ["is_available", "flags", "set_flags"]
_enabled = [False]


def is_available():
    return False


def set_flags(_enabled_value):
    orig = (_enabled[0],)
    _enabled[0] = bool(_enabled_value)
    return orig


@contextmanager
def flags(enabled=False):
    with _allow_nonbracketed_mutation():
        orig = set_flags(enabled)
    try:
        yield
    finally:
        with _allow_nonbracketed_mutation():
            set_flags(orig[0])
