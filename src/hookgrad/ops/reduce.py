"""Reductions: sum, mean, prod, var/std, max/min (with indices), logsumexp, norms, cumsum/cumprod."""
import numpy as np

from .. import _dtype as D
from .._tensor import Tensor
from ..autograd.graph import Node
from ._dispatch import dims_of


def _restore(g, in_shape, dims, keepdim):
    """Give a reduced gradient back the reduced dims (as size 1) so it broadcasts over the input."""
    if not keepdim and dims:
        shape = list(in_shape)
        for d in dims:
            shape[d] = 1
        g = g.reshape(shape)
    return g


def _sum_dtype(x, dtype):
    if dtype is not None:
        return D.to_dtype(dtype).np
    if x.dtype.kind in "biu":
        return np.dtype(np.int64)
    return None


class Sum(Node, name="SumBackward0"):
    dims = None
    keepdim = False
    dt = None

    def forward(self, x):
        self.in_shape = x.shape
        if self.dims is None:
            return np.asarray(x.sum(dtype=self.dt))
        return np.asarray(x.sum(axis=self.dims, keepdims=self.keepdim, dtype=self.dt))

    def backward(self, g):
        dims = self.dims if self.dims is not None else ()
        return _restore(g, self.in_shape, dims, self.keepdim).expand(self.in_shape)


class SumDim(Sum, name="SumBackward1"):
    pass


def sum(input, dim=None, keepdim=False, *, dtype=None, axis=None):
    if axis is not None:
        dim = axis
    dt = _sum_dtype(input._data, dtype)
    if dim is None:
        return Sum.apply(input, dt=dt) if dt is not None else Sum.apply(input)
    dims = dims_of(dim, input._data.ndim) if input._data.ndim else ()
    if isinstance(dim, (list, tuple)) and len(dim) == 0:
        dims = tuple(range(input._data.ndim))
    return SumDim.apply(input, dims=dims, keepdim=keepdim, dt=dt)


class Mean(Node, name="MeanBackward0"):
    dims = None
    keepdim = False
    dt = None

    def forward(self, x):
        self.in_shape = x.shape
        if self.dims is None:
            self.n = x.size
            return np.asarray(x.mean(dtype=self.dt)).astype(self.dt or x.dtype, copy=False)
        n = 1
        for d in self.dims:
            n *= x.shape[d]
        self.n = n
        return np.asarray(x.mean(axis=self.dims, keepdims=self.keepdim, dtype=self.dt)).astype(self.dt or x.dtype, copy=False)

    def backward(self, g):
        dims = self.dims if self.dims is not None else ()
        return _restore(g / self.n, self.in_shape, dims, self.keepdim).expand(self.in_shape)


class MeanDim(Mean, name="MeanBackward1"):
    pass


def mean(input, dim=None, keepdim=False, *, dtype=None, axis=None):
    if axis is not None:
        dim = axis
    if input._data.dtype.kind != "f" and dtype is None:
        raise RuntimeError("mean(): could not infer output dtype. Input dtype must be either a floating point or "
                           f"complex dtype. Got: {_legacy_short(input.dtype)}")
    dt = D.to_dtype(dtype).np if dtype is not None else None
    if dim is None:
        return Mean.apply(input, dt=dt)
    dims = dims_of(dim, input._data.ndim) if input._data.ndim else ()
    return MeanDim.apply(input, dims=dims, keepdim=keepdim, dt=dt)


def _legacy_short(dt):
    return dt._legacy.replace("Tensor", "")
