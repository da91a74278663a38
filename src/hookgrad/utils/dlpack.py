"""torch.utils.dlpack: exchange tensors with other libraries without a copy, through the DLPack protocol.

hookgrad's CPU tensors are NumPy arrays, so the exchange goes through NumPy's DLPack support:
``from_dlpack(x)`` accepts any object with ``__dlpack__`` (a torch tensor, a NumPy array, a JAX/CuPy CPU array)
or a DLPack capsule, and shares its memory; ``Tensor.__dlpack__`` hands out the tensor's array the same way.
"""
import enum

import numpy as np

from .. import _array
from .._tensor import Tensor

__all__ = ["DLDeviceType", "from_dlpack", "to_dlpack"]


class DLDeviceType(enum.IntEnum):
    """DLPack's device types (``Tensor.__dlpack_device__()[0]``)."""
    kDLCPU = 1
    kDLCUDA = 2
    kDLCUDAHost = 3
    kDLOpenCL = 4
    kDLVulkan = 7
    kDLMetal = 8
    kDLVPI = 9
    kDLROCM = 10
    kDLROCMHost = 11
    kDLExtDev = 12
    kDLCUDAManaged = 13
    kDLOneAPI = 14
    kDLWebGPU = 15
    kDLHexagon = 16
    kDLMAIA = 17


def to_dlpack(tensor):
    """A DLPack capsule viewing ``tensor``'s memory (consume it once, e.g. with ``torch.from_dlpack``)."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"to_dlpack(): argument 'data' (position 1) must be Tensor, not {type(tensor).__name__}")
    return tensor.__dlpack__()


class _Capsule:
    """A bare DLPack capsule as an object with ``__dlpack__``, which numpy.from_dlpack consumes."""

    def __init__(self, capsule):
        self.capsule = capsule

    def __dlpack__(self, stream=None, **kwargs):
        return self.capsule

    def __dlpack_device__(self):
        return (DLDeviceType.kDLCPU, 0)


def from_dlpack(ext_tensor, *, device=None, copy=None):
    """A tensor sharing the memory of ``ext_tensor``: an object with ``__dlpack__`` (a torch tensor, a NumPy
    array, another library's CPU array) or a DLPack capsule. ``copy=True`` copies; ``device`` must be the CPU.

    >>> a = numpy.arange(3.0); t = hookgrad.from_dlpack(a); t[0] = 5.0; a[0]
    5.0
    """
    if hasattr(ext_tensor, "__dlpack__"):
        if device is not None:
            from .._tensor import _check_device
            _check_device(device)
        dev = ext_tensor.__dlpack_device__() if hasattr(ext_tensor, "__dlpack_device__") else (1, 0)
        if int(dev[0]) == DLDeviceType.kDLCUDA and _array.device_module("cuda") is not None:
            arr = _array.device_module("cuda").from_dlpack(ext_tensor)      # the device's memory, shared
            return Tensor._make(arr.copy() if copy else arr)
        if int(dev[0]) != DLDeviceType.kDLCPU:
            raise RuntimeError(f"hookgrad runs on the CPU only: from_dlpack got a tensor on DLPack device type "
                               f"{int(dev[0])} ({_device_name(dev[0])})")
        src = ext_tensor
    elif type(ext_tensor).__name__ == "PyCapsule":
        if device is not None or copy is not None:
            raise AssertionError("device and copy kwargs not supported when ext_tensor is already a DLPack capsule.")
        src = _Capsule(ext_tensor)
    else:
        raise TypeError(f"from_dlpack(): expected an object with __dlpack__ or a DLPack capsule, got "
                        f"{type(ext_tensor).__name__}")
    try:
        arr = np.from_dlpack(src)
    except (TypeError, RuntimeError) as e:
        raise RuntimeError(f"from_dlpack: {e}") from None
    if not arr.flags.writeable and isinstance(src, _Capsule):
        arr = _writable(arr)
    if copy:
        arr = arr.copy()
    return Tensor._make(arr)


class _Memory:
    """The same memory as a read-only array, offered writable through ``__array_interface__`` (keeps it alive)."""

    def __init__(self, a):
        self.a = a
        self.__array_interface__ = {"shape": a.shape, "typestr": a.dtype.str, "strides": a.strides, "version": 3,
                                    "data": (a.__array_interface__["data"][0], False)}


def _writable(a):
    """NumPy marks an array read-only when it comes from a legacy DLPack capsule (no read-only flag in that
    format); PyTorch treats such a tensor as writable, and so does hookgrad: a writable view of the memory."""
    return np.asarray(_Memory(a))


# ---- the Tensor side of the protocol (installed on Tensor below, as primitives/ installs the op methods)

def __dlpack__(self, *, stream=-1, max_version=None, dl_device=None, copy=None):
    """A DLPack capsule viewing this tensor's memory (the protocol ``numpy.from_dlpack`` and
    ``torch.from_dlpack`` consume)."""
    if self.requires_grad:
        raise BufferError("Can't export tensors that require gradient, use tensor.detach()")
    if stream is not None and stream != -1 and not isinstance(stream, int):
        raise TypeError("stream must be ``int`` or ``none``")
    a = self._data
    if not isinstance(a, np.ndarray) and _array.device_type(a) != "cpu":      # a device's array (CuPy's) exports
        return a.__dlpack__(**({} if stream is None or stream == -1 else {"stream": stream}))
    if not isinstance(a, np.ndarray):
        a = np.asarray(a)
    if a.dtype.kind not in "biufc":
        raise BufferError(f"hookgrad: NumPy's DLPack export has no code for {self.dtype} (hookgrad keeps it as an "
                          f"ml_dtypes array); convert it first, e.g. tensor.float()")
    kw = {}
    if max_version is not None:
        kw["max_version"] = max_version
    if dl_device is not None:
        kw["dl_device"] = tuple(dl_device)
    if copy is not None:
        kw["copy"] = copy
    return a.__dlpack__(**kw)


def __dlpack_device__(self):
    """``(DLDeviceType.kDLCPU, 0)`` for the CPU's tensors; a device's as its array module says (CuPy: kDLCUDA)."""
    a = self._data
    if not isinstance(a, np.ndarray) and _array.device_type(a) != "cpu":
        return a.__dlpack_device__()
    return (DLDeviceType.kDLCPU, 0)


Tensor.__dlpack__ = __dlpack__
Tensor.__dlpack_device__ = __dlpack_device__


def _device_name(code):
    try:
        return DLDeviceType(int(code)).name
    except ValueError:
        return "unknown"
