"""A test array module: NumPy's API over an array type that is not ``numpy.ndarray``.

``XArray`` subclasses ndarray, and every NumPy function or ufunc applied to XArrays returns XArrays
(through ``__array_function__`` / ``__array_ufunc__``), as CuPy's functions return CuPy arrays. What
does not stay an XArray is what hookgrad makes through the global ``numpy`` instead of the inputs'
module: ``np.zeros(...)``, ``np.asarray(x)``, ``np.array(x)`` come back as plain ndarrays. Running the
suites with this module as the default (``HOOKGRAD_TEST_BACKEND=xarray``) and checking that every
result is an XArray finds those places; the CUDA device is built through CuPy on the same seam.
"""
import types

import numpy as np

import hookgrad._array as _array


def _wrap(r):
    if type(r) is np.ndarray:
        return r.view(XArray)
    if isinstance(r, np.generic):       # a 0-d result: CuPy gives a 0-d array, so do we
        return np.asarray(r).view(XArray)
    if type(r) is tuple:
        return tuple(_wrap(x) for x in r)
    if type(r) is list:
        return [_wrap(x) for x in r]
    return r


class XArray(np.ndarray):
    """An ndarray subclass whose NumPy functions keep it (the test backend's array type)."""

    def __array_function__(self, func, types_, args, kwargs):
        return _wrap(func._implementation(*args, **kwargs))

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        inputs = tuple(x.view(np.ndarray) if isinstance(x, XArray) else x for x in inputs)
        out = kwargs.get("out")
        if out is not None:
            kwargs["out"] = tuple(x.view(np.ndarray) if isinstance(x, XArray) else x for x in out)
        res = getattr(ufunc, method)(*inputs, **kwargs)
        if out is not None:
            return out[0] if len(out) == 1 else out
        return _wrap(res)

    def __array_wrap__(self, arr, context=None, return_scalar=False):
        return arr.view(XArray)

    def __reduce__(self):           # pickles as an XArray
        return (_rebuild, (np.asarray(self),))


def _rebuild(a):
    return a.view(XArray)


def _creator(f):
    def make(*args, **kwargs):
        return _wrap(f(*args, **kwargs))
    make.__name__ = f.__name__
    return make


class _Module(types.ModuleType):
    """NumPy's namespace, with the functions that make arrays from scratch returning XArrays."""

    def __getattr__(self, name):
        value = getattr(np, name)
        if callable(value) and name in _CREATORS:
            value = _creator(value)
        setattr(self, name, value)
        return value


_CREATORS = {"zeros", "ones", "empty", "full", "zeros_like", "ones_like", "empty_like", "full_like", "array",
             "asarray", "asanyarray", "ascontiguousarray", "arange", "eye", "identity", "linspace", "logspace",
             "frombuffer", "fromiter", "tri", "copy", "stack", "concatenate"}

xp = _Module("hookgrad_test_xarray")
xp.ndarray = XArray
_array.register(XArray, xp)


def use():
    """Make the test backend the default array module (new tensors are XArrays)."""
    return _array.set_default_module(xp)
