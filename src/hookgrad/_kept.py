"""NumPy's API over an ndarray subclass: an array type whose NumPy functions and ufuncs keep it, and the module of
NumPy's namespace that makes it. The meta device's MetaArray and the tests' XArray are built on it."""
import types

import numpy


class KeptArray(numpy.ndarray):
    """An ndarray subclass whose NumPy functions and ufuncs return its own type, as CuPy's return CuPy arrays: the
    base of the meta device's MetaArray and of the tests' XArray. A 0-d result stays an array (CuPy's manner)."""

    def __array_function__(self, func, types_, args, kwargs):
        return _kept(type(self), func._implementation(*args, **kwargs))

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        inputs = tuple(x.view(numpy.ndarray) if isinstance(x, KeptArray) else x for x in inputs)
        out = kwargs.get("out")
        if out is not None:
            kwargs["out"] = tuple(x.view(numpy.ndarray) if isinstance(x, KeptArray) else x for x in out)
        res = getattr(ufunc, method)(*inputs, **kwargs)
        if out is not None:
            return out[0] if len(out) == 1 else out
        return _kept(type(self), res)

    def __array_wrap__(self, arr, context=None, return_scalar=False):
        return arr.view(type(self))


def _kept(cls, r):
    if type(r) is numpy.ndarray:
        return r.view(cls)
    if isinstance(r, numpy.generic):
        return numpy.asarray(r).view(cls)
    if type(r) is tuple:
        return tuple(_kept(cls, x) for x in r)
    if type(r) is list:
        return [_kept(cls, x) for x in r]
    return r


class KeptModule(types.ModuleType):
    """NumPy's namespace for a KeptArray type (``ndarray``): the functions that make arrays from nothing return it
    (through ``make``, which a module may replace: the meta device's makes fresh zeros)."""
    CREATORS = frozenset({"zeros", "ones", "empty", "full", "zeros_like", "ones_like", "empty_like", "full_like",
                          "array", "asarray", "asanyarray", "ascontiguousarray", "arange", "eye", "identity",
                          "linspace", "logspace", "frombuffer", "fromiter", "tri", "copy", "stack", "concatenate"})

    def __init__(self, name, ndarray):
        super().__init__(name)
        self.ndarray = ndarray

    def make(self, f):
        cls = self.ndarray

        def make(*args, **kwargs):
            return _kept(cls, f(*args, **kwargs))
        make.__name__ = f.__name__
        return make

    def __getattr__(self, name):
        value = getattr(numpy, name)
        if callable(value) and name in self.CREATORS:
            value = self.make(value)
        setattr(self, name, value)
        return value
