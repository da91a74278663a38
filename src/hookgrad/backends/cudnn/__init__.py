"""torch.backends.cudnn: hookgrad has no cuDNN (no CUDA): ``is_available()`` is False, ``version()`` None; the flags
keep PyTorch's defaults and are recorded only (``deterministic = True`` is what NumPy always is)."""
import sys

from ..._cuda_kernels import CUDNN_FLAGS as _values    # the flags (PyTorch's defaults), read by the CUDA device
from .._flags import flag_module, scoped_flags, swap_flags

CUDNN_TENSOR_DTYPES = None      # filled below (the dtypes cuDNN would take: half, float, double)


def version():
    """The cuDNN version: None, as in a PyTorch built without cuDNN."""
    return None


def is_available():
    return False


def is_acceptable(tensor):
    """Whether cuDNN would take ``tensor``: never (it is not on a CUDA device)."""
    return False


def set_flags(_enabled=None, _benchmark=None, _benchmark_limit=None, _deterministic=None, _allow_tf32=None,
              _fp32_precision="none", _depthwise_kernel=None):
    return swap_flags(_values, {"enabled": _enabled, "benchmark": _benchmark, "benchmark_limit": _benchmark_limit,
                                "deterministic": _deterministic, "allow_tf32": _allow_tf32,
                                "fp32_precision": _fp32_precision, "depthwise_kernel": _depthwise_kernel})


def flags(enabled=False, benchmark=False, benchmark_limit=10, deterministic=False, allow_tf32=True,
          fp32_precision="none", depthwise_kernel="auto"):
    """Set the cuDNN flags for a block (PyTorch's defaults), restoring them after."""
    return scoped_flags(_values, set_flags, dict(
        _enabled=enabled, _benchmark=benchmark, _benchmark_limit=benchmark_limit, _deterministic=deterministic,
        _allow_tf32=allow_tf32, _fp32_precision=fp32_precision, _depthwise_kernel=depthwise_kernel))


def _dtypes():
    from ... import _dtype as D
    return {D.float16, D.float32, D.float64}


CUDNN_TENSOR_DTYPES = _dtypes()
flag_module(__name__, _values, "CudnnModule")
del sys
