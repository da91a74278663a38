"""torch.backends.mkldnn: hookgrad has no oneDNN (MKL-DNN) kernels, so ``is_available()`` is False, as in a PyTorch
built without it (PyTorch's CPU wheels have it and say True); the flags keep PyTorch's defaults, recorded only."""
from .._flags import flag_module, scoped_flags, swap_flags

VERBOSE_OFF = 0
VERBOSE_ON = 1
VERBOSE_ON_CREATION = 2
_values = {"enabled": True, "deterministic": False, "allow_tf32": None, "fp32_precision": "none"}


def is_available():
    return False


def is_acl_available():
    return False


class verbose:
    """On-demand oneDNN verbosing: there is no oneDNN, so turning it on fails as PyTorch's does without it."""

    def __init__(self, level):
        self.level = level

    def __enter__(self):
        if self.level == VERBOSE_OFF:
            return
        raise AssertionError("Failed to set MKLDNN into verbose mode. Please consider to disable this verbose scope.")

    def __exit__(self, exc_type, exc_val, exc_tb):
        return False


def set_flags(_enabled=None, _deterministic=None, _allow_tf32=None, _fp32_precision="none"):
    return swap_flags(_values, {"enabled": _enabled, "deterministic": _deterministic, "allow_tf32": _allow_tf32,
                                "fp32_precision": _fp32_precision})


def flags(enabled=False, deterministic=False, allow_tf32=True, fp32_precision="none"):
    return scoped_flags(_values, set_flags, dict(_enabled=enabled, _deterministic=deterministic,
                                                 _allow_tf32=allow_tf32, _fp32_precision=fp32_precision))


flag_module(__name__, _values, "MkldnnModule")
