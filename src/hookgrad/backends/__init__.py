"""torch.backends: the switches of PyTorch's compute libraries, answered as a PyTorch build without them answers.

hookgrad computes with NumPy on the CPU: it has no cuDNN, MKL-DNN (oneDNN), MKL, OpenMP, MPS or NNPACK, so each
``is_available()`` is False; the flags (``cudnn.deterministic``, ``cuda.matmul.allow_tf32`` ...) keep PyTorch's
defaults, can be set and read back, and are scoped by each submodule's ``flags()`` context manager. They change no
computation (NumPy has one float32 matmul precision and is deterministic). As in PyTorch, ``disable_global_flags()``
makes setting a flag outside ``flags()`` an error.

>>> import hookgrad.backends
>>> hookgrad.backends.cudnn.deterministic = True
"""
from ._flags import (ContextProp, PropModule, _allow_nonbracketed_mutation, disable_global_flags,  # noqa: F401
                     flag_module, flags_frozen, scoped_flags, swap_flags)

_generic = {"fp32_precision": "none"}


def set_flags(_fp32_precision="none"):
    return swap_flags(_generic, {"fp32_precision": _fp32_precision})


def flags(fp32_precision="none"):
    return scoped_flags(_generic, set_flags, {"_fp32_precision": fp32_precision})


flag_module(__name__, _generic, "GenericModule")

from . import (cpu, cuda, cudnn, cusparselt, kleidiai, mha, miopen, mkl, mkldnn, mps, nnpack, openmp,  # noqa: E402
               opt_einsum, quantized, xnnpack)
from .. import _missing  # noqa: E402
__getattr__ = _missing.module_getattr(__name__, "torch.backends")
