"""Small top-level utilities PyTorch scripts call (is_tensor, numel, thread and determinism switches)."""
from ._tensor import Tensor
from ._parallel import get_num_threads, set_num_threads  # noqa: F401  (one number: BLAS and the pool)

_deterministic = False


def is_tensor(obj):
    return isinstance(obj, Tensor)


def is_floating_point(input):
    return input.is_floating_point()


def numel(input):
    return input.numel()


def use_deterministic_algorithms(mode, *, warn_only=False):
    """hookgrad is deterministic for a given seed; the flags are recorded for the getters."""
    global _deterministic, _warn_only
    _deterministic = bool(mode)
    _warn_only = bool(warn_only)


def are_deterministic_algorithms_enabled():
    return _deterministic


_warn_only = False


def is_deterministic_algorithms_warn_only_enabled():
    return _warn_only


def set_deterministic_debug_mode(debug_mode):
    """0/"default": off, 1/"warn": deterministic with warn_only, 2/"error": deterministic (PyTorch's mapping)."""
    if type(debug_mode) not in (int, str):
        raise TypeError(f"debug_mode must be str or int, but got {type(debug_mode)}")
    if isinstance(debug_mode, str):
        modes = {"default": 0, "warn": 1, "error": 2}
        if debug_mode not in modes:
            raise RuntimeError("invalid value of debug_mode, expected one of `default`, `warn`, `error`, "
                               f"but got {debug_mode}")
        debug_mode = modes[debug_mode]
    if debug_mode not in (0, 1, 2):
        raise RuntimeError(f"invalid value of debug_mode, expected 0, 1, or 2, but got {debug_mode}")
    use_deterministic_algorithms(debug_mode != 0, warn_only=debug_mode == 1)


def get_deterministic_debug_mode():
    return 0 if not _deterministic else 1 if _warn_only else 2


def compile(model=None, *, fullgraph=False, dynamic=None, backend="inductor", mode=None, options=None, name=None,
            disable=False, recompile_limit=None, isolate_recompiles=False, shapes_spec=None):

    """There is no compiler: returns the model (or function) unchanged, so hooks keep working."""
    if model is None:
        return lambda m: m
    return model


# more switches PyTorch scripts flip; hookgrad records them for the getters
_matmul_precision = "highest"
_interop_threads = None


def get_float32_matmul_precision():
    return _matmul_precision


def set_float32_matmul_precision(precision):
    """NumPy's float32 matmul has one precision; the CUDA device's (CuPy's cuBLAS) uses TF32 unless "highest"."""
    global _matmul_precision
    if not isinstance(precision, str):
        raise RuntimeError(f"set_float32_matmul_precision expects a str, but got {type(precision).__name__}")
    if precision not in ("highest", "high", "medium"):
        import warnings
        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current"
                      "setFloat32MatmulPrecision call has no effect.")
        return
    _matmul_precision = precision
    from . import _cuda_kernels     # the CUDA device's cuBLAS (CuPy): TF32 for "high" and "medium", as PyTorch
    _cuda_kernels.set_matmul_tf32(precision != "highest")


def get_num_interop_threads():
    return _interop_threads if _interop_threads is not None else get_num_threads()


def set_num_interop_threads(num):
    """Recorded only: hookgrad runs ops on the calling thread."""
    global _interop_threads
    if not isinstance(num, int):
        raise RuntimeError(f"set_num_interop_threads expects an int, but got {type(num).__name__}")
    if num <= 0:
        raise RuntimeError("set_num_interop_threads expects a positive integer")
    _interop_threads = num


def set_flush_denormal(mode):
    """False: NumPy gives no control over flushing denormals (PyTorch returns False where unsupported)."""
    return False


def get_device(input):
    """-1 for a CPU tensor (hookgrad has no other device)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"get_device(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    return input.get_device()


class FatalError(Exception):
    pass


def classproperty(func):
    """A read-only property of the class (PyTorch's ``torch.classproperty`` helper)."""
    class _ClassPropertyDescriptor:
        def __init__(self, fget):
            self.fget = fget

        def __get__(self, instance, owner=None):
            if owner is None:
                owner = type(instance)
            return self.fget.__get__(instance, owner)()

    if not isinstance(func, (classmethod, staticmethod)):
        func = classmethod(func)
    return _ClassPropertyDescriptor(func)
