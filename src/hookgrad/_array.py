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


def to_numpy(a):
    """``a`` as a NumPy ndarray: itself for NumPy's arrays, a view for subclasses, the module's ``asnumpy``
    (CuPy: a copy to the host) for the others."""
    if type(a) is numpy.ndarray:
        return a
    m = array_module(a)
    if m is numpy:              # NOTE: a failed attribute lookup on the numpy module costs ~5 us
        return numpy.asarray(a)
    f = getattr(m, "asnumpy", None)
    return f(a) if f is not None else numpy.asarray(a)


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
