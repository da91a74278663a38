"""The meta device: tensors with a shape, a dtype and strides but no data (``device="meta"``).

PyTorch uses it to build a model's structure without memory (transformers and accelerate build every model on
it, then load or allocate the real weights). Here a meta tensor holds a ``MetaArray``: an ndarray subclass made
with ``zeros`` (calloc: pages never read or written take no memory), whose NumPy functions and ufuncs return
MetaArrays, so every op gives a meta result with PyTorch's shape and dtype. Nothing can be read from it: the
host copy (``_array.to_host``: ``.item()``, ``.tolist()``, ``.cpu()``, printing) raises PyTorch's errors.
What differs from PyTorch: an op on meta tensors computes on the zeros (it costs the time and memory of the op
on the CPU, where PyTorch's meta kernels only infer shapes), and in-place writes land in those zeros
(docs/differences.md).
"""
import types

import numpy as np

NO_DATA = "Cannot copy out of meta tensor; no data!"


def _wrap(r):
    if type(r) is np.ndarray:
        return r.view(MetaArray)
    if isinstance(r, np.generic):           # 0-d results stay arrays, on the device
        return np.asarray(r).view(MetaArray)
    if type(r) is tuple:
        return tuple(_wrap(x) for x in r)
    if type(r) is list:
        return [_wrap(x) for x in r]
    return r


def _plain(x):
    return x.view(np.ndarray) if isinstance(x, MetaArray) else x


class MetaArray(np.ndarray):
    """The array of a meta tensor: NumPy functions on it give MetaArrays."""

    def __array_function__(self, func, types_, args, kwargs):
        return _wrap(func._implementation(*args, **kwargs))

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        inputs = tuple(_plain(x) for x in inputs)
        out = kwargs.get("out")
        if out is not None:
            kwargs["out"] = tuple(_plain(x) for x in out)
        res = getattr(ufunc, method)(*inputs, **kwargs)
        if out is not None:
            return out[0] if len(out) == 1 else out
        return _wrap(res)

    def __array_wrap__(self, arr, context=None, return_scalar=False):
        return arr.view(MetaArray)

    def __reduce__(self):           # a meta tensor pickles as its shape and dtype
        return (_rebuild, (self.shape, self.dtype.str))

    def tolist(self):
        raise NotImplementedError(NO_DATA)

    def item(self, *args):
        raise RuntimeError("Tensor.item() cannot be called on meta tensors")


def _rebuild(shape, dtype):
    return np.zeros(shape, dtype).view(MetaArray)


def asnumpy(a):
    raise NotImplementedError(NO_DATA)


def _creator(f):
    """``f`` giving a fresh meta array of its result's shape and dtype: no data is shared with an input (a CPU
    array copied to the meta device leaves its values behind, as in PyTorch)."""
    def make(*args, **kwargs):
        r = f(*(_plain(a) for a in args), **kwargs)
        return np.zeros(np.shape(r), np.asarray(r).dtype if not hasattr(r, "dtype") else r.dtype).view(MetaArray)
    make.__name__ = f.__name__
    return make


class _Module(types.ModuleType):
    """NumPy's namespace, with the functions that make arrays from nothing returning fresh MetaArrays (zeros:
    untouched calloc pages take no memory)."""

    def __getattr__(self, name):
        value = getattr(np, name)
        if callable(value) and name in _CREATORS:
            value = _creator(value)
        setattr(self, name, value)
        return value


_CREATORS = {"zeros", "ones", "empty", "full", "zeros_like", "ones_like", "empty_like", "full_like", "array",
             "asarray", "asanyarray", "ascontiguousarray", "arange", "eye", "identity", "linspace", "logspace",
             "frombuffer", "fromiter", "tri", "copy", "stack", "concatenate"}

xp = _Module("hookgrad.meta")        # _array.device_module("meta") registers it as the meta device's module
xp.ndarray = MetaArray
xp.asnumpy = asnumpy
