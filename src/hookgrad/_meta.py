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
import numpy as np

from . import _kept

NO_DATA = "Cannot copy out of meta tensor; no data!"


class MetaArray(_kept.KeptArray):
    """The array of a meta tensor: NumPy functions on it give MetaArrays."""

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


class _Module(_kept.KeptModule):
    """NumPy's namespace, with the functions that make arrays returning fresh MetaArrays of their result's shape
    and dtype (zeros: untouched calloc pages take no memory): no data is shared with an input, so a CPU array
    copied to the meta device leaves its values behind, as in PyTorch."""

    def make(self, f):
        def make(*args, **kwargs):
            r = f(*(a.view(np.ndarray) if isinstance(a, MetaArray) else a for a in args), **kwargs)
            return np.zeros(np.shape(r), r.dtype if hasattr(r, "dtype") else np.asarray(r).dtype).view(MetaArray)
        make.__name__ = f.__name__
        return make


xp = _Module("hookgrad.meta", MetaArray)    # _array.device_module("meta") registers it as the meta device's module
xp.asnumpy = asnumpy
