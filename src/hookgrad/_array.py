"""Array modules: which library holds a tensor's storage.

A tensor's storage is an array of some *array module*: NumPy on the CPU, or another library with
NumPy's API (CuPy for the GPU device; the tests' own backend). The module is known from the
array's type, resolved once per type and kept in a table, so ``array_module(a)`` is a dict lookup.

Ops never make arrays through the global ``numpy`` when their inputs live elsewhere: constants,
zeros and scalars are made with the inputs' module (``array_module(x).zeros(...)``), and
tensors made from nothing (``torch.zeros(3)``) use ``default_module()``.
"""
import numpy

_BY_TYPE = {numpy.ndarray: numpy}
_default = [numpy]


def register(array_type, module):
    """Arrays of ``array_type`` (and its subclasses) belong to ``module``."""
    _BY_TYPE[array_type] = module


def array_module(a):
    """The array module of ``a`` (an array, a NumPy scalar or a Python number: NumPy)."""
    m = _BY_TYPE.get(type(a))
    if m is not None:
        return m
    for t, m in tuple(_BY_TYPE.items()):
        if t is not numpy.ndarray and isinstance(a, t):
            _BY_TYPE[type(a)] = m
            return m
    return numpy


HOST_READS = [0]       # copies from another module's memory to the host (to_host calls that copied)


def to_host(a):
    """``a`` as a NumPy ndarray: itself for NumPy's arrays, a view for subclasses, the module's ``asnumpy``
    (CuPy: a copy from the device, which waits for it) for the others. Every host read of hookgrad
    (``.item()``, ``.tolist()``, ``.numpy()``, printing, ``bool(t)``) goes through here; ``HOST_READS`` counts
    the copies, so tests can check that hooks and tools read nothing behind the user's back."""
    if type(a) is numpy.ndarray:
        return a
    m = array_module(a)
    if m is numpy:              # NOTE: a failed attribute lookup on the numpy module costs ~5 us
        return numpy.asarray(a)
    f = getattr(m, "asnumpy", None)
    if f is None:
        return numpy.asarray(a)
    HOST_READS[0] += 1
    return f(a)


to_numpy = to_host


def asarray(a, like):
    """``a`` (an array of any module, a NumPy scalar, a number or nested lists) as an array of ``like``'s module:
    ``a`` itself when it already is one, a copy to the device for a host array."""
    xp = array_module(like) if not isinstance(like, type(numpy)) else like
    if xp is numpy:
        return numpy.asarray(a) if array_module(a) is numpy else to_host(a)
    if array_module(a) is xp:
        return a
    if is_array(a) and array_module(a) is not numpy:
        a = to_host(a)
    return xp.asarray(a)


def writeable(a):
    """Whether ``a`` may be written: NumPy's flag; other modules' arrays (CuPy's have no read-only mode) are
    written unless a broadcast dimension makes several elements one memory location."""
    w = getattr(a.flags, "writeable", None)
    if w is not None:
        return w
    return not any(s == 0 and n > 1 for s, n in zip(a.strides, a.shape))


def data_ptr(a):
    """The address of ``a``'s first element (NumPy's ``__array_interface__``, CuPy's ``a.data.ptr``)."""
    i = getattr(a, "__array_interface__", None)
    return i["data"][0] if i is not None else a.data.ptr


def as_strided(a, shape, strides):
    """A strided view of ``a``'s memory (strides in bytes), in ``a``'s module; read-only where the module has the
    flag (NumPy: windows that overlap must not be written)."""
    if isinstance(a, numpy.ndarray):        # (subok: an ndarray subclass stays one)
        return numpy.lib.stride_tricks.as_strided(a, shape, strides, subok=True, writeable=False)
    return array_module(a).lib.stride_tricks.as_strided(a, shape, strides)


# ---- devices: which array module holds a device's tensors ----------------------------------------------------------
_DEVICE_MODULE = {}         # device type ("cuda") -> array module
_MODULE_DEVICE = {}         # array module -> device type
_probed = set()


def register_device(kind, module):
    """Tensors on device ``kind`` ("cuda") hold arrays of ``module`` (CuPy, or the tests' stand-in)."""
    _DEVICE_MODULE[kind] = module
    _MODULE_DEVICE[module] = kind


def device_module(kind):
    """The array module of device ``kind``, or None where there is none. "cuda" imports CuPy on first ask (never
    before: the CPU path does not import it) and takes it only when a CUDA device is present."""
    m = _DEVICE_MODULE.get(kind)
    if m is None and kind == "meta":
        from . import _meta             # the meta device (tensors without data), on first use
        register(_meta.MetaArray, _meta.xp)
        register_device("meta", _meta.xp)
        return _meta.xp
    if m is None and kind == "cuda" and kind not in _probed:
        _probed.add(kind)
        try:
            import cupy
            if cupy.cuda.runtime.getDeviceCount() > 0:
                register(cupy.ndarray, cupy)
                register_device("cuda", cupy)
                from ._cuda_kernels import apply_tf32
                apply_tf32(cupy)        # PyTorch's TF32 default (off for matmuls), whatever CUPY_TF32 says
                m = cupy
        except Exception:       # not installed, no driver, no device: no CUDA
            m = None
    return m


def device_type_of_module(m):
    """The device type of ``m``'s arrays ("cpu" for NumPy and the test modules)."""
    return _MODULE_DEVICE.get(m, "cpu")


def device_type(a):
    """The device type of array ``a``: "cpu", or the kind its module was registered for ("cuda")."""
    if type(a) is numpy.ndarray or not _MODULE_DEVICE:
        return "cpu"
    return _MODULE_DEVICE.get(array_module(a), "cpu")


def module_of(*arrays):
    """The array module shared by ``arrays``: the first one that is not NumPy's, else NumPy."""
    for a in arrays:
        m = _BY_TYPE.get(type(a))
        if m is None:
            m = array_module(a)
        if m is not numpy:
            return m
    return numpy


def is_array(a):
    """Whether ``a`` is an array of a known module (not a scalar, not a list)."""
    t = type(a)
    return t in _BY_TYPE or isinstance(a, numpy.ndarray) or (
        not isinstance(a, numpy.generic) and array_module(a) is not numpy and hasattr(a, "shape"))


def default_module():
    """The module of tensors made from nothing (``zeros(3)``, ``tensor([1, 2])``)."""
    return _default[0]


def set_default_module(module):
    """Make new tensors in ``module``'s arrays; returns the previous default."""
    prev = _default[0]
    _default[0] = module
    return prev

