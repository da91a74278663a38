"""Indexing: get/set items (basic and advanced, differentiable), where, comparisons."""
import numpy as np

from .. import _dtype as D
from .._tensor import Tensor
from ..autograd.graph import Node
from ._dispatch import binary, as_tensor_arg
from ._inplace import make_view, inplace_apply


def _convert_index(idx):
    """Turn a torch-style index into a NumPy one; report whether it is basic (gives a view)."""
    if not isinstance(idx, tuple):
        idx = (idx,)
    out = []
    basic = True
    for i in idx:
        if isinstance(i, Tensor):
            a = i._data
            if a.dtype.kind not in "biu":
                raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
            if a.ndim == 0 and a.dtype.kind in "iu":
                out.append(int(a))
                continue
            out.append(a)
            basic = False
        elif isinstance(i, (list, np.ndarray)):
            a = np.asarray(_unwrap_list(i))
            out.append(a)
            basic = False
        elif isinstance(i, bool):
            out.append(i)
            basic = False
        elif isinstance(i, (int, np.integer)):
            out.append(int(i))
        elif i is None or i is Ellipsis or isinstance(i, slice):
            if isinstance(i, slice) and i.step is not None and i.step <= 0:
                raise ValueError("step must be greater than zero")
            out.append(_slice(i) if isinstance(i, slice) else i)
        else:
            raise IndexError(f"only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are valid "
                             f"indices (got {type(i).__name__})")
    return tuple(out), basic


def _slice(s):
    def conv(v):
        return int(v) if isinstance(v, Tensor) else v
    return slice(conv(s.start), conv(s.stop), conv(s.step))


def _unwrap_list(lst):
    if isinstance(lst, list):
        return [_unwrap_list(x) for x in lst]
    if isinstance(lst, Tensor):
        return lst._data
    return lst


def _check_bounds(shape, idx):
    # NumPy raises IndexError already with a similar text; make it PyTorch's
    dim = 0
    for i in idx:
        if i is None:
            continue
        if i is Ellipsis:
            dim = len(shape) - sum(1 for j in idx if j is not None and j is not Ellipsis and not isinstance(j, bool)) + dim
            continue
        if isinstance(i, int) and not isinstance(i, bool):
            if dim >= len(shape):
                raise IndexError(f"too many indices for tensor of dimension {len(shape)}")
            if not -shape[dim] <= i < shape[dim]:
                raise IndexError(f"index {i} is out of bounds for dimension {dim} with size {shape[dim]}")
        dim += 1


class Index(Node, name="IndexBackward0"):
    def forward(self, x):
        self.in_shape = x.shape
        self.in_dtype = x.dtype
        try:
            return x[self.idx]
        except IndexError as e:
            _check_bounds(x.shape, self.idx)
            raise IndexError(str(e)) from None

    def backward(self, g):
        return IndexGrad.apply(g, idx=self.idx, shape=self.in_shape, basic=self.basic)


class Select(Index, name="SelectBackward0"):
    pass


class Slice(Index, name="SliceBackward0"):
    pass


class IndexGrad(Node, name="IndexPutBackward0"):
    """Scatter a gradient back into the indexed positions (summing repeats); its gradient is the index."""

    def forward(self, g):
        out = np.zeros(self.shape, g.dtype)
        if self.basic:
            out[self.idx] = g
        else:
            np.add.at(out, self.idx, g)
        return out

    def backward(self, gg):
        return Index.apply(gg, idx=self.idx, basic=self.basic)


def getitem(self, idx):
    np_idx, basic = _convert_index(idx)
    if basic:
        kinds = {type(i) for i in np_idx}
        cls = Select if kinds == {int} else Slice if kinds == {slice} else Index
        out = cls.apply(self, idx=np_idx, basic=True)
        return make_view(out, self, lambda t: t[idx])
    return Index.apply(self, idx=np_idx, basic=False)


class IndexPut(Node, name="IndexPutBackward0"):
    """out = x with x[idx] = v (functional form of setitem / index_put)."""
    accumulate = False

    def forward(self, x, v):
        out = x.copy()
        v = np.asarray(v, dtype=x.dtype)
        if self.accumulate:
            np.add.at(out, self.idx, v)
        else:
            out[self.idx] = v
        self.v_shape = v.shape
        return out

    def backward(self, g):
        nf = self.next_functions
        gx = gv = None
        if nf[0][0] is not None:
            gx = g if self.accumulate else IndexPut.apply(g, 0.0, idx=self.idx)
        if nf[1][0] is not None:
            gv = Index.apply(g, idx=self.idx, basic=False)
            if gv.shape != self.v_shape:
                gv = gv.sum_to_size(self.v_shape) if len(gv.shape) >= len(self.v_shape) else gv.reshape(self.v_shape)
        return gx, gv


class CopySlicesSet(IndexPut, name="CopySlices"):
    pass


def setitem(self, idx, value):
    np_idx, basic = _convert_index(idx)
    if isinstance(value, (list, tuple)):
        value = as_tensor_arg(value)
    if isinstance(value, Tensor) and value._data.dtype != self._data.dtype:
        value = value.to(self.dtype)
    inplace_apply(self, CopySlicesSet, (value,), {"idx": np_idx})


def index_put(input, indices, values, accumulate=False):
    np_idx, _ = _convert_index(tuple(indices))
    return IndexPut.apply(input, values, idx=np_idx, accumulate=accumulate)


def index_put_(self, indices, values, accumulate=False):
    np_idx, _ = _convert_index(tuple(indices))
    return inplace_apply(self, IndexPut, (values,), {"idx": np_idx, "accumulate": accumulate})


class Where(Node, name="WhereBackward0"):
    dt = None

    def forward(self, cond, x, y):
        self.cond = cond
        r = np.where(cond, x, y)
        return r.astype(self.dt, copy=False) if self.dt is not None else r

    def backward(self, g):
        nf = self.next_functions
        zero = g * 0
        return (None,
                where(self._ct(), g, zero) if nf[1][0] is not None else None,
                where(self._ct(), zero, g) if nf[2][0] is not None else None)

    def _ct(self):
        return Tensor._make(self.cond)


def where(condition, input=None, other=None):
    if input is None and other is None:
        return tuple(Tensor._make(a) for a in np.nonzero(condition._data))
    cond = condition._data if isinstance(condition, Tensor) else np.asarray(condition)
    if cond.dtype != np.bool_:
        if cond.dtype == np.uint8:
            cond = cond.astype(bool)
        else:
            raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor with dtype "
                               f"{D.from_numpy_dtype(cond.dtype).name.capitalize() if cond.dtype.kind != 'f' else 'Float'}")
    ts = [t for t in (input, other) if isinstance(t, Tensor)]
    ss = [s for s in (input, other) if not isinstance(s, Tensor)]
    dt = D.result_type_of(ts, ss)
    a = input if isinstance(input, Tensor) else dt.np.type(input)
    b = other if isinstance(other, Tensor) else dt.np.type(other)
    params = {}
    if any(t._data.dtype != dt.np for t in ts) or not ts:
        params["dt"] = dt.np
    return Where.apply(Tensor._make(cond), a, b, **params)


# ------------------------------------------------------------------------- comparisons (no grad)
def _cmp(npfn, name):
    def fn(input, other):
        a = input._data if isinstance(input, Tensor) else input
        b = other._data if isinstance(other, Tensor) else other
        if isinstance(b, (list, tuple)):
            b = np.asarray(b)
        if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
            try:
                np.broadcast_shapes(a.shape, b.shape)
            except ValueError:
                raise RuntimeError(f"The size of tensor a ({a.shape[-1]}) must match the size of tensor b "
                                   f"({b.shape[-1]}) at non-singleton dimension {max(a.ndim, b.ndim) - 1}") from None
        return Tensor._make(np.asarray(npfn(a, b)))
    fn.__name__ = name
    return fn


eq = _cmp(np.equal, "eq")
ne = not_equal = _cmp(np.not_equal, "ne")
lt = less = _cmp(np.less, "lt")
le = less_equal = _cmp(np.less_equal, "le")
gt = greater = _cmp(np.greater, "gt")
ge = greater_equal = _cmp(np.greater_equal, "ge")
logical_and = _cmp(np.logical_and, "logical_and")
logical_or = _cmp(np.logical_or, "logical_or")
logical_xor = _cmp(np.logical_xor, "logical_xor")


def _bitwise(npfn, name):
    def fn(input, other):
        a = input._data if isinstance(input, Tensor) else input
        b = other._data if isinstance(other, Tensor) else other
        if isinstance(a, np.ndarray) and a.dtype.kind == "f" or isinstance(b, np.ndarray) and b.dtype.kind == "f":
            raise RuntimeError(f'"{name}_cpu" not implemented for \'Float\'')
        return Tensor._make(np.asarray(npfn(a, b)))
    return fn


bitwise_and = _bitwise(np.bitwise_and, "bitwise_and")
bitwise_or = _bitwise(np.bitwise_or, "bitwise_or")
bitwise_xor = _bitwise(np.bitwise_xor, "bitwise_xor")


def logical_not(input):
    return Tensor._make(np.logical_not(input._data))


def bitwise_not(input):
    a = input._data
    return Tensor._make(np.logical_not(a) if a.dtype == np.bool_ else np.invert(a))


def isnan(input):
    return Tensor._make(np.isnan(input._data) if input._data.dtype.kind == "f" else np.zeros(input._data.shape, bool))


def isinf(input):
    return Tensor._make(np.isinf(input._data) if input._data.dtype.kind == "f" else np.zeros(input._data.shape, bool))


def isfinite(input):
    return Tensor._make(np.isfinite(input._data) if input._data.dtype.kind == "f" else np.ones(input._data.shape, bool))


def isposinf(input):
    return Tensor._make(np.isposinf(input._data))


def isneginf(input):
    return Tensor._make(np.isneginf(input._data))


def equal(input, other):
    return input._data.shape == other._data.shape and bool(np.array_equal(input._data, other._data))


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    return bool(np.allclose(input._data, other._data, rtol=rtol, atol=atol, equal_nan=equal_nan))


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    o = other._data if isinstance(other, Tensor) else other
    return Tensor._make(np.isclose(input._data, o, rtol=rtol, atol=atol, equal_nan=equal_nan))


def nonzero(input, *, as_tuple=False):
    nz = np.nonzero(input._data)
    if as_tuple:
        return tuple(Tensor._make(a.astype(np.int64)) for a in nz)
    return Tensor._make(np.stack(nz, axis=1).astype(np.int64) if nz else np.zeros((0, 0), np.int64))


def argwhere(input):
    return nonzero(input)


def any(input, dim=None, keepdim=False):
    if dim is None:
        return Tensor._make(np.asarray(np.any(input._data)))
    return Tensor._make(np.any(input._data, axis=dim, keepdims=keepdim))


def all(input, dim=None, keepdim=False):
    if dim is None:
        return Tensor._make(np.asarray(np.all(input._data)))
    return Tensor._make(np.all(input._data, axis=dim, keepdims=keepdim))
