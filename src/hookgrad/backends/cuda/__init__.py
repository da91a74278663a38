"""torch.backends.cuda: hookgrad has no CUDA (``is_built()`` False); the flags keep PyTorch's defaults.

``matmul.allow_tf32`` is the same switch as ``torch.set_float32_matmul_precision`` (True for "high"/"medium"), as in
PyTorch; the scaled-dot-product-attention switches (``enable_flash_sdp`` ...) are the ones ``nn.attention.sdpa_kernel``
scopes (hookgrad's CPU flash and math kernels read them). The cuFFT plan cache raises PyTorch's no-CUDA error.
"""
import contextlib
import enum
import warnings

from ..._errors import NoCuda

__all__ = ["is_built", "cuFFTPlanCacheAttrContextProp", "cuFFTPlanCache", "cuFFTPlanCacheManager", "cuBLASModule",
           "preferred_linalg_library", "preferred_blas_library", "preferred_rocm_fa_library", "cufft_plan_cache",
           "matmul", "SDPAParams", "enable_cudnn_sdp", "cudnn_sdp_enabled", "is_flash_attention_available",
           "can_use_flash_attention", "can_use_efficient_attention", "can_use_cudnn_attention", "sdp_kernel",
           "flash_sdp_enabled", "enable_flash_sdp", "mem_efficient_sdp_enabled", "enable_mem_efficient_sdp",
           "math_sdp_enabled", "enable_math_sdp", "allow_fp16_bf16_reduction_math_sdp",
           "fp16_bf16_reduction_math_sdp_allowed", "is_ck_sdpa_available"]


def is_built():
    """Whether hookgrad was built with CUDA: no."""
    return False


def _no_cuda():
    return NoCuda("Torch not compiled with CUDA enabled")


class cuFFTPlanCacheAttrContextProp:
    def __init__(self, getter, setter):
        self.getter, self.setter = getter, setter

    def __get__(self, obj, objtype):
        return self.getter(obj.device_index)

    def __set__(self, obj, val):
        if isinstance(self.setter, str):
            raise RuntimeError(self.setter)
        self.setter(obj.device_index, val)


def _no_plan_cache(*args):
    raise _no_cuda()


class cuFFTPlanCache:
    """The cuFFT plan cache of one CUDA device: every query raises, there is no CUDA."""
    size = cuFFTPlanCacheAttrContextProp(_no_plan_cache, ".size is a read-only property showing the number of plans "
                                         "currently in the cache. To change the cache capacity, set "
                                         "cufft_plan_cache.max_size.")
    max_size = cuFFTPlanCacheAttrContextProp(_no_plan_cache, _no_plan_cache)

    def __init__(self, device_index):
        self.device_index = device_index

    def clear(self):
        raise _no_cuda()


class cuFFTPlanCacheManager:
    __initialized = False

    def __init__(self):
        self.caches = []
        self.__initialized = True

    def __getitem__(self, device):
        raise _no_cuda()

    def __getattr__(self, name):
        raise _no_cuda()

    def __setattr__(self, name, value):
        if self.__initialized:
            raise _no_cuda()
        super().__setattr__(name, value)


_matmul = {"allow_fp16_reduced_precision_reduction": True, "allow_bf16_reduced_precision_reduction": True,
           "allow_fp16_accumulation": False, "fp32_precision": "none"}


class cuBLASModule:
    """``torch.backends.cuda.matmul``: cuBLAS's switches. ``allow_tf32`` reads and sets the float32 matmul
    precision; the others are recorded."""

    def __getattr__(self, name):
        if name == "allow_tf32":
            from ... import _misc
            return _misc.get_float32_matmul_precision() != "highest"
        if name in _matmul:
            return _matmul[name]
        raise AttributeError("Unknown attribute " + name)

    def __setattr__(self, name, value):
        if name == "allow_tf32":
            from ... import _misc
            return _misc.set_float32_matmul_precision("high" if value else "highest")
        if name in _matmul:
            _matmul[name] = value
            if name == "fp32_precision":        # PyTorch's newer switch: "tf32", "ieee", or "none" (the legacy one's)
                from ... import _cuda_kernels, _misc
                _cuda_kernels.set_matmul_tf32(value == "tf32" or value == "none"
                                              and _misc.get_float32_matmul_precision() != "highest")
            return
        raise AttributeError("Unknown attribute " + name)


class _LinalgBackend(enum.Enum):
    Default = 0
    Cusolver = 1
    Magma = 2


class _BlasBackend(enum.Enum):
    Default = 0
    Cublas = 1
    Cublaslt = 2
    Ck = 3


class _ROCmFABackend(enum.Enum):
    Default = 0
    AOTriton = 1
    Ck = 2


_preferred = {"linalg": _LinalgBackend.Default, "blas": _BlasBackend.Cublas, "rocm_fa": _ROCmFABackend.Default}


def _prefer(kind, enum_type, backend):
    if backend is None:
        return _preferred[kind]
    if isinstance(backend, str):
        choices = {m.name.lower(): m for m in enum_type}
        if backend.lower() not in choices:
            raise RuntimeError(f"Unknown input value. Choose from: {', '.join(choices)}.")
        backend = choices[backend.lower()]
    elif not isinstance(backend, enum_type):
        raise RuntimeError(f"Unknown input value type: {type(backend).__name__}")
    _preferred[kind] = backend
    return backend


def preferred_linalg_library(backend=None):
    """The linear algebra library PyTorch would prefer on CUDA (recorded; hookgrad's is NumPy's LAPACK)."""
    return _prefer("linalg", _LinalgBackend, backend)


def preferred_blas_library(backend=None):
    return _prefer("blas", _BlasBackend, backend)


def preferred_rocm_fa_library(backend=None):
    return _prefer("rocm_fa", _ROCmFABackend, backend)


cufft_plan_cache = cuFFTPlanCacheManager()
matmul = cuBLASModule()


class SDPAParams:
    """The arguments of a scaled-dot-product-attention call, as the can_use_* checks take them."""

    def __init__(self, query, key, value, attn_mask=None, dropout=0.0, is_causal=False, enable_gqa=False):
        self.query, self.key, self.value, self.attn_mask = query, key, value, attn_mask
        self.dropout, self.is_causal, self.enable_gqa = dropout, is_causal, enable_gqa


def _attention():
    from ...nn import attention
    return attention


def _sdp_enabled(name):
    a = _attention()
    return getattr(a.SDPBackend, name) in a._enabled()


def _enable_sdp(name, enabled):
    a = _attention()
    b = getattr(a.SDPBackend, name)
    current = a._cur_sdpa_kernel_backends()
    a._sdpa_kernel([x for x in current if x is not b] + ([b] if enabled else []))


def flash_sdp_enabled():
    return _sdp_enabled("FLASH_ATTENTION")


def enable_flash_sdp(enabled):
    _enable_sdp("FLASH_ATTENTION", enabled)


def mem_efficient_sdp_enabled():
    return _sdp_enabled("EFFICIENT_ATTENTION")


def enable_mem_efficient_sdp(enabled):
    _enable_sdp("EFFICIENT_ATTENTION", enabled)


def math_sdp_enabled():
    return _sdp_enabled("MATH")


def enable_math_sdp(enabled):
    _enable_sdp("MATH", enabled)


def cudnn_sdp_enabled():
    return _sdp_enabled("CUDNN_ATTENTION")


def enable_cudnn_sdp(enabled):
    _enable_sdp("CUDNN_ATTENTION", enabled)


_fp16_bf16_math = [False]


def allow_fp16_bf16_reduction_math_sdp(enabled):
    _fp16_bf16_math[0] = bool(enabled)


def fp16_bf16_reduction_math_sdp_allowed():
    return _fp16_bf16_math[0]


def is_flash_attention_available():
    """Whether PyTorch's CUDA flash attention is built: no CUDA, no."""
    return False


def is_ck_sdpa_available():
    return False


def can_use_flash_attention(params, debug=False):
    return False


def can_use_efficient_attention(params, debug=False):
    return False


def can_use_cudnn_attention(params, debug=False):
    return False


@contextlib.contextmanager
def sdp_kernel(enable_flash=True, enable_math=True, enable_mem_efficient=True, enable_cudnn=True):
    """Deprecated (PyTorch warns): ``nn.attention.sdpa_kernel`` with the backends whose switch is True."""
    warnings.warn("`torch.backends.cuda.sdp_kernel()` is deprecated. In the future, this context manager will be "
                  "removed. Please see `torch.nn.attention.sdpa_kernel()` for the new context manager, with updated "
                  "signature.", FutureWarning, stacklevel=3)
    a = _attention()
    B = a.SDPBackend
    chosen = [b for b, on in ((B.CUDNN_ATTENTION, enable_cudnn), (B.FLASH_ATTENTION, enable_flash),
                              (B.EFFICIENT_ATTENTION, enable_mem_efficient), (B.MATH, enable_math)) if on]
    with a.sdpa_kernel(chosen):
        yield {}


def _SDPBackend():
    return _attention().SDPBackend


def __getattr__(name):
    if name == "SDPBackend":
        return _SDPBackend()
    from ... import _missing
    return _missing.not_found(None, "torch.backends.cuda", name, f"module {__name__!r} has no attribute {name!r}")
