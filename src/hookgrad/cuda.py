"""hookgrad.cuda: the CUDA device through CuPy where CuPy sees a GPU; elsewhere the answers of PyTorch built without
CUDA.

Without a device, queries answer "no CUDA" (``is_available()`` False, ``device_count()`` 0, memory counters 0); what
needs a device raises PyTorch's error (``AssertionError: Torch not compiled with CUDA enabled``, here also a
RuntimeError); constructing a ``Stream``, ``Event`` or ``CUDAGraph`` raises the RuntimeError PyTorch's dummy classes
raise; ``stream()``/``device()`` blocks do nothing, as in PyTorch without CUDA.
"""
import collections
import sys
import types

from ._errors import NoCuda
from . import _no_accelerator
from ._no_accelerator import (is_bf16_supported, is_tf32_supported, get_arch_list,  # noqa: F401
                              get_gencode_flags, seed, seed_all)

default_generators = ()


def _no_cuda():
    return NoCuda("Torch not compiled with CUDA enabled")


def _raise_no_cuda(*args, **kwargs):
    raise _no_cuda()


def set_rng_state(new_state, device="cuda"):
    pass


def set_rng_state_all(new_states):
    pass


def get_rng_state_all():
    return []


(current_stream, default_stream, get_device_properties, init, _lazy_init, get_rng_state, ipc_collect, mem_get_info,
 set_per_process_memory_fraction, caching_allocator_alloc, caching_allocator_delete, cudart) = (_raise_no_cuda,) * 12


def _c_missing(name):
    def f(*args, **kwargs):
        raise AttributeError(f"module 'torch._C' has no attribute '{name}'")
    return f


set_device = _c_missing("_cuda_setDevice")
reset_peak_memory_stats = reset_accumulated_memory_stats = _c_missing("_cuda_resetPeakMemoryStats")
get_allocator_backend = _c_missing("_cuda_getAllocatorBackend")


def reset_max_memory_allocated(device=None):
    import warnings
    warnings.warn("torch.cuda.reset_max_memory_allocated now calls torch.cuda.reset_peak_memory_stats, which resets "
                  "/all/ peak memory stats.", FutureWarning, stacklevel=2)
    return reset_peak_memory_stats(device=device)


reset_max_memory_cached = reset_max_memory_allocated


def memory_stats(device=None):
    return collections.OrderedDict()


def _no_nvml(*args, **kwargs):
    raise ModuleNotFoundError("nvidia-ml-py does not seem to be installed or it can't be imported.")


utilization = temperature = power_draw = clock_rate = device_memory_used = _no_nvml


def list_gpu_processes(device=None):
    return "pynvml module not found, please install nvidia-ml-py"


def _get_device_index(device, optional=False, allow_cpu=False):
    """The index of a CUDA device given as an int, a "cuda:N" string or a torch.device."""
    if isinstance(device, str):
        from ._tensor import device as _device
        device = _device(device)
    if isinstance(device, int):
        return device
    if device is None:
        if optional:
            raise _no_cuda()
        raise ValueError(f"Expected a torch.device with a specified index or an integer, but got:{device}")
    if device.type == "cpu" and allow_cpu:
        return -1
    if device.type != "cuda":
        raise ValueError(f"Expected a cuda device, but got: {device}")
    if device.index is None:
        if optional:
            raise _no_cuda()
        raise ValueError(f"Expected a torch.device with a specified index or an integer, but got:{device}")
    return device.index


def _dummy(name):
    def __new__(cls, *args, **kwargs):
        raise RuntimeError(f"Tried to instantiate dummy base class {name}")
    return __new__


class Stream:
    """A CUDA stream: PyTorch built without CUDA cannot make one."""

    def __new__(cls, device=None, priority=0, **kwargs):
        raise RuntimeError("torch.cuda.Stream requires CUDA support")


class ExternalStream(Stream):
    pass


class Event:
    """A CUDA event: PyTorch built without CUDA cannot make one."""
    __new__ = _dummy("Event")


class CUDAGraph:
    __new__ = _dummy("CUDAGraph")


class graph:
    """``with torch.cuda.graph(g):`` captures CUDA work into a graph: making its capture stream needs CUDA."""

    def __init__(self, cuda_graph, pool=None, stream=None, capture_error_mode="global"):
        self.capture_stream = stream if stream is not None else Stream()


def is_current_stream_capturing():
    raise RuntimeError("Tried to instantiate dummy base class _cuda_isCurrentStreamCapturing")


class StreamContext:
    """``with torch.cuda.stream(s):``: nothing to switch without CUDA (PyTorch's does nothing either)."""

    def __init__(self, stream):
        self.stream = stream
        self.idx = -1

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


def stream(stream):
    return StreamContext(stream)


def set_stream(stream):
    pass


def _exchange_device(idx):
    if idx < 0:
        return -1
    raise RuntimeError("PyTorch was compiled without CUDA support")


class device(_no_accelerator.device):
    """``with torch.cuda.device(i):``: entering switches the current CUDA device, which needs CUDA (-1: nothing to
    switch)."""
    _exchange_device = staticmethod(_exchange_device)

    @staticmethod
    def _index(device):
        return _get_device_index(device, optional=True) if device is not None else -1


class device_of(_no_accelerator.device_of, device):
    pass


class OutOfMemoryError(RuntimeError):
    """Raised when a CUDA allocation fails (never, in hookgrad)."""


def _tensor_type(name):
    def __new__(cls, *args, **kwargs):
        raise TypeError(f"type torch.cuda.{name} not available. Torch not compiled with CUDA enabled.")
    return type(name, (), {"__new__": __new__, "__module__": "torch.cuda", "is_cuda": True})


for _name in ("FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "LongTensor", "IntTensor",
              "ShortTensor", "CharTensor", "ByteTensor", "BoolTensor"):
    globals()[_name] = _tensor_type(_name)


# ---- a CUDA device through CuPy (issue 24) ---------------------------------------------------------------------------
# Where CuPy imports and a GPU is present (or the tests' stand-in is registered: tests/backend/cupylike.py,
# HOOKGRAD_FAKE_CUDA=cupylike), "cuda" is a device: the answers below replace the no-CUDA ones above. Nothing here
# imports CuPy before CUDA is asked about (is_available(), device="cuda").
def _device_xp():
    from ._array import device_module
    return device_module("cuda")


def _need_xp():
    m = _device_xp()
    if m is None:
        raise _no_cuda()
    return m


def _cupy_cuda(m):
    return getattr(m, "cuda", None)        # CuPy's cupy.cuda (the stand-in has none)


def is_available():
    """Whether hookgrad has a CUDA device (CuPy imports and sees a GPU)."""
    return _device_xp() is not None


def is_initialized():
    return is_available()


def _is_compiled():
    return is_available()


def device_count():
    m = _device_xp()
    if m is None:
        return 0
    c = _cupy_cuda(m)
    return c.runtime.getDeviceCount() if c is not None else 1


def current_device():
    c = _cupy_cuda(_need_xp())
    return c.Device().id if c is not None else 0


def synchronize(device=None):
    """Wait for the device's queued work (CuPy: the current device's streams)."""
    c = _cupy_cuda(_need_xp())
    if c is not None:
        c.Device().synchronize()


def get_device_name(device=None):
    c = _cupy_cuda(_need_xp())
    if c is None:
        return "hookgrad test stand-in (cupylike)"
    name = c.runtime.getDeviceProperties(c.Device().id)["name"]
    return name.decode() if isinstance(name, bytes) else name


def get_device_capability(device=None):
    c = _cupy_cuda(_need_xp())
    if c is None:
        return (0, 0)
    cc = c.Device().compute_capability
    return (int(cc[:-1]), int(cc[-1]))


def manual_seed(seed):
    """Seed the cuda device's generator (and CuPy's own, which cupy-level code draws from); without CUDA it is kept
    for later, as PyTorch does."""
    from ._creation import cuda_generator
    cuda_generator().manual_seed(seed)
    from ._array import _DEVICE_MODULE
    m = _DEVICE_MODULE.get("cuda")
    if m is not None and hasattr(m, "random"):
        m.random.seed(int(seed) & 0xFFFFFFFF)


manual_seed_all = manual_seed


def initial_seed():
    _need_xp()
    from ._creation import cuda_generator
    return cuda_generator().initial_seed()


def _pool():
    m = _device_xp()
    f = getattr(m, "get_default_memory_pool", None) if m is not None else None
    return f() if f is not None else None


def memory_allocated(device=None):
    """Bytes held by tensors (CuPy's memory pool: used bytes); 0 without CUDA."""
    p = _pool()
    return p.used_bytes() if p is not None else 0


def memory_reserved(device=None):
    """Bytes the pool holds from the driver (CuPy: total bytes); 0 without CUDA."""
    p = _pool()
    return p.total_bytes() if p is not None else 0


def max_memory_allocated(device=None):
    """The peak is not tracked by CuPy's pool: the pool's total bytes, an upper bound of the peak of
    memory_allocated() since the last empty_cache()."""
    return max(memory_reserved(device), memory_allocated(device))


memory_cached = memory_reserved
max_memory_reserved = max_memory_cached = max_memory_allocated


def empty_cache():
    """Give the pool's unused blocks back to the driver (CuPy's free_all_blocks)."""
    p = _pool()
    if p is not None:
        p.free_all_blocks()


def _submodule(name, doc, **attrs):
    """A small submodule (``torch.cuda.nvtx`` ...), importable as ``import torch.cuda.<name>``."""
    m = types.ModuleType(f"{__name__}.{name}", doc)
    m.__dict__.update(attrs)
    sys.modules[m.__name__] = m
    return m


def _no_nvtx(*args, **kwargs):
    raise RuntimeError("NVTX functions not installed. Are you sure you have a CUDA build?")


nvtx = _submodule("nvtx", "torch.cuda.nvtx: NVTX ranges need a CUDA build.", range_push=_no_nvtx,
                  range_pop=_no_nvtx, range_start=_no_nvtx, range_end=_no_nvtx, mark=_no_nvtx, range=_no_nvtx)
random = _submodule("random", "torch.cuda.random", get_rng_state=get_rng_state, get_rng_state_all=get_rng_state_all,
                    set_rng_state=set_rng_state, set_rng_state_all=set_rng_state_all, manual_seed=manual_seed,
                    manual_seed_all=manual_seed_all, seed=seed, seed_all=seed_all, initial_seed=initial_seed)
memory = _submodule("memory", "torch.cuda.memory", **{n: globals()[n] for n in (
    "memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved", "memory_stats",
    "reset_peak_memory_stats", "empty_cache", "mem_get_info", "set_per_process_memory_fraction",
    "caching_allocator_alloc", "caching_allocator_delete", "list_gpu_processes")},
    change_current_allocator=_raise_no_cuda)
streams = _submodule("streams", "torch.cuda.streams", Stream=Stream, ExternalStream=ExternalStream, Event=Event)
graphs = _submodule("graphs", "torch.cuda.graphs", CUDAGraph=CUDAGraph, graph=graph,
                    is_current_stream_capturing=is_current_stream_capturing)

from . import _missing  # noqa: E402
__getattr__ = _missing.module_getattr(__name__, "torch.cuda")


from .amp._deprecated import module_for as _amp_module  # noqa: E402
amp = _amp_module("cuda", __name__)      # torch.cuda.amp: the deprecated aliases of torch.amp
