"""Indexing: get/set items (basic and advanced, differentiable), where, comparisons."""
import builtins

import numpy as np

from .. import _dtype as D
from .._tensor import Tensor
from ..autograd.forward_ad import linear_jvp, multilinear_jvp, tsum, scaled  # noqa: F401  (forward AD)
from ..autograd.node import Node
from ..autograd.op_hooks import _op_hooks, _op_tls, run_unrecorded as _run_unrecorded
from ._dispatch import binary, as_tensor_arg
from ._inplace import make_view, inplace_apply
from ..autograd.views import ViewFunc
from ._dispatch import wrap_dim, dims_of, broadcast_error
from .._errors import not_implemented_for
from ..autograd.saved import _FREED
from ._index_nodes import (_check_bounds, Index, Select, Slice, IndexGrad, Unsqueeze, Alias,  # noqa: F401
                           zeros_for, IndexSelect, IndexAddGrad, _slice_symints)
from .elementwise import scale, Where, where  # noqa: F401  (where is an elementwise op)
from .._array import array_module, writeable, is_array


def _convert_index(idx, src):
    """Turn a torch-style index into a NumPy one; report whether it is basic (gives a view). Lists (and
    NumPy arrays) become arrays of ``src``'s module (``src``: the indexed tensor)."""
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
            a = array_module(src._data).asarray(_unwrap_list(i))
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


_ALL = slice(None)


def getitem(self, idx):
    """Tensor indexing as PyTorch's applySlicing: one select / slice / unsqueeze view per index (full
    slices skipped), then one IndexBackward0 for the tensor, list and bool indices; plain ``x[:]`` or
    ``x[...]`` is an alias."""
    result, adv = _slicing(self, idx, False)
    if adv:
        last = max(adv)
        return Index.apply(result, idx=tuple(adv.get(k, _ALL) for k in range(last + 1)), basic=False)
    if result is self:
        return make_view(Alias.apply(self, idx=(Ellipsis,), basic=True), self, lambda t: t[...])
    return result


def _slicing(self, idx, setting):
    """PyTorch's applySlicing: the views for the basic indices (select / slice / unsqueeze; full slices are
    skipped, except a lone slice when getting) and {dim: array} of the advanced indices left for them."""
    items = idx if isinstance(idx, tuple) else (idx,)
    np_idx, basic = _convert_index(idx, self)
    spec = 0
    for i in np_idx:
        if isinstance(i, np.ndarray):
            spec += i.ndim if i.dtype == np.bool_ else 1
        elif i is not None and i is not Ellipsis and not isinstance(i, bool):
            spec += 1
    nd = self._data.ndim
    if spec > nd:
        raise IndexError(f"too many indices for tensor of dimension {nd}")
    result, dim, adv = self, 0, {}
    for real_dim, (orig, i) in enumerate(zip(items, np_idx)):
        shape = result._data.shape
        if i is Ellipsis:
            dim += nd - spec
        elif i is None:
            result = _step(result, Unsqueeze, (_ALL,) * dim + (None,))
            dim += 1
        elif isinstance(i, bool):
            result = _step(result, Unsqueeze, (_ALL,) * dim + (None,))
            adv[dim] = array_module(self._data).zeros(1 if i else 0, np.int64)
            dim += 1
        elif is_array(i):
            adv[dim] = i
            dim += 1
        elif isinstance(i, slice):
            n = shape[dim]
            if i.indices(n) != (0, n, 1) or i.step not in (None, 1) or (items is not idx and not setting):
                # (a lone slice stays a view in getitem)
                result = _step(result, Slice, (_ALL,) * dim + (i,))
            dim += 1
        else:
            n = shape[dim]
            if not -n <= i < n:
                raise IndexError(f"index {i} is out of bounds for dimension {real_dim} with size {n}")
            result = _step(result, Select, (_ALL,) * dim + (i, Ellipsis))
    return result, adv


def _step(x, cls, np_idx):
    return make_view(cls.apply(x, idx=np_idx, basic=True), x, _step_func(cls, np_idx))


def _step_func(cls, np_idx):
    """The replay of one indexing view with the SymInts PyTorch's keeps: select's index, slice's start, end, step
    (an unsqueeze keeps none)."""
    head = np_idx[:-2] if cls is Select else np_idx[:-1]
    if cls is Select:
        return ViewFunc(lambda t, i: t[head + (i, Ellipsis)], (np_idx[-2],))
    if cls is Slice:
        s = np_idx[-1]
        return ViewFunc(lambda t, a, b, c: t[head + (slice(a, b, c),)], _slice_symints(s.start, s.stop, s.step))
    return lambda t: t[np_idx]


def select(input, dim, index):
    """One index along one dim (a view; SelectBackward0)."""
    nd = input._data.ndim
    if nd == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = wrap_dim(dim, nd)
    n = input._data.shape[d]
    if not -n <= index < n:
        raise IndexError(f"select(): index {index} out of range for tensor of size {list(input._data.shape)} at "
                         f"dimension {dim}")
    return _step(input, Select, (_ALL,) * d + (int(index), Ellipsis))


class IndexPut(Node, name="IndexPutBackward0"):
    """out = x with x[idx] = v (functional form of setitem / index_put)."""
    accumulate = False
    _saved = (None,)    # PyTorch saves the index tensors: released after a pass, a second one raises (backward)
    saved_attrs = ("accumulate", "indices=_indices")
    _indices = Index._indices

    def forward(self, x, v):
        out = x.copy()
        v = array_module(x).asarray(v, dtype=x.dtype)
        if self.accumulate:
            array_module(out).add.at(out, self.idx, v)
        else:
            out[self.idx] = v
        self.v_shape = v.shape
        return out

    def backward(self, g):
        if self._freed:
            raise RuntimeError(_FREED)
        nf = self.next_functions
        gx = gv = None
        if nf[0][0] is not None:
            gx = g if self.accumulate else IndexPut.apply(g, 0.0, idx=self.idx)
        if nf[1][0] is not None:
            gv = Index.apply(g, idx=self.idx, basic=False)
            if gv.shape != self.v_shape:
                gv = gv.sum_to_size(self.v_shape) if len(gv.shape) >= len(self.v_shape) else gv.reshape(self.v_shape)
        return gx, gv


def setitem(self, idx, value):
    """PyTorch's set_item: views for the basic indices, then index_put_ on the view with the advanced ones
    (IndexPutBackward0, inside CopySlices when there were views) or else copy_ / fill_ of the view
    (CopyBackwards / FillBackward3, inside CopySlices): the errors and the graph are the in-place op's."""
    np_idx, basic = _convert_index(idx, self)
    if isinstance(value, Tensor):
        _check_setitem_shape(self, np_idx, basic, value)
    elif isinstance(value, (bool, int, float)):
        value = Tensor._make(array_module(self._data).asarray(value, self._data.dtype))
    elif isinstance(value, complex):
        raise RuntimeError(f"value cannot be converted to type {self._data.dtype.name.rstrip('0123456789')} without "
                           "overflow")
    else:
        from . import _dispatch
        if _dispatch.torch_function_objects:        # vmap's BatchedTensor as the value: its __torch_function__
            out = _dispatch.torch_function(Tensor.__setitem__, (self, idx, value), {})
            if out is not NotImplemented:
                return out
        t = type(value)
        tn = t.__qualname__ if t.__module__ == "builtins" else f"{t.__module__.split('.')[0]}.{t.__qualname__}"
        raise TypeError(f"can't assign a {tn} to a {self.type()}")
    target, adv = _slicing(self, idx, True)
    vs = value._data.shape
    lead = 0
    while lead < len(vs) and vs[lead] == 1:
        lead += 1
    if adv:
        if value._data.dtype != self._data.dtype:
            raise RuntimeError(f"Index put requires the source and destination dtypes match, got "
                               f"{_legacy(self._data.dtype)} for the destination and {_legacy(value._data.dtype)} "
                               "for the source.")
        if lead:
            value = value.view(vs[lead:])
        last = max(adv)
        inplace_apply(target, IndexPut, (value,), {"idx": tuple(adv.get(k, _ALL) for k in range(last + 1))})
        return
    ts = target._data.shape
    if vs == ts:
        target.copy_(value)
    elif not vs:
        target.fill_(value)
    else:
        value = value.view(vs[lead:])
        target.copy_(value if value._data.shape == ts else value.expand(ts))


def _legacy(npdt):
    return D.from_numpy_dtype(npdt)._legacy.replace("Tensor", "")


def _check_setitem_shape(self, np_idx, basic, value):
    """PyTorch's errors for a value that does not broadcast to the indexed region (before any write)."""
    ts, vs = self._data[np_idx].shape, value._data.shape
    while vs and vs[0] == 1:         # PyTorch drops the value's leading size-1 dims first (slicePrefix1sSize)
        vs = vs[1:]
    try:
        if np.broadcast_shapes(vs, ts) == ts:         # vs broadcasts to ts (one way)
            return
    except ValueError:
        pass
    if not basic:
        raise RuntimeError(f"shape mismatch: value tensor of shape {list(vs)} cannot be broadcast to indexing "
                           f"result of shape {list(ts)}")
    if len(vs) > len(ts):
        raise RuntimeError(f"expand(torch.{value.type()[6:]}{{{list(vs)}}}, size={list(ts)}): the number of sizes "
                           f"provided ({len(ts)}) must be greater or equal to the number of dimensions in the tensor "
                           f"({len(vs)})")
    for i in range(1, len(vs) + 1):
        if vs[-i] != 1 and vs[-i] != ts[-i]:
            raise RuntimeError(f"The expanded size of the tensor ({ts[-i]}) must match the existing size ({vs[-i]}) at "
                               f"non-singleton dimension {len(ts) - i}.  Target sizes: {list(ts)}.  Tensor sizes: "
                               f"{list(vs)}")


def index_put(input, indices, values, accumulate=False):
    np_idx, _ = _convert_index(tuple(indices), input)
    return IndexPut.apply(input, values, idx=np_idx, accumulate=accumulate)


def index_put_(self, indices, values, accumulate=False):
    np_idx, _ = _convert_index(tuple(indices), self)
    return inplace_apply(self, IndexPut, (values,), {"idx": np_idx, "accumulate": accumulate})


# ------------------------------------------------------------------------- comparisons (no grad)
def _cmp(npfn, name):
    op = name.title().replace("_", "")     # the op hooks' name (``LogicalAnd``; aten::logical_and)

    def fn(input, other):
        if _op_hooks and not _op_tls.busy:
            return _run_unrecorded(op, fn, (input, other))
        a = input._data if isinstance(input, Tensor) else input
        b = other._data if isinstance(other, Tensor) else other
        if isinstance(b, (list, tuple)):
            b = array_module(a).asarray(b)
        if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
            try:
                np.broadcast_shapes(a.shape, b.shape)
            except ValueError:
                raise RuntimeError(f"The size of tensor a ({a.shape[-1]}) must match the size of tensor b "
                                   f"({b.shape[-1]}) at non-singleton dimension {max(a.ndim, b.ndim) - 1}") from None
        r = npfn(a, b)
        if isinstance(r, np.generic):         # NumPy's 0-d result: an array of the inputs' module
            r = array_module(a if isinstance(input, Tensor) else b).asarray(r)
        return Tensor._make(r)
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
        for x in (a, b):
            if isinstance(x, np.ndarray) and D.is_floating(x.dtype):
                raise not_implemented_for(f"{name}_cpu", x.dtype)
        return Tensor._make(array_module(a if isinstance(input, Tensor) else b).asarray(npfn(a, b)))
    return fn


bitwise_and = _bitwise(np.bitwise_and, "bitwise_and")
bitwise_or = _bitwise(np.bitwise_or, "bitwise_or")
bitwise_xor = _bitwise(np.bitwise_xor, "bitwise_xor")


def logical_not(input):
    a = input._data
    return Tensor._make(array_module(a).asarray(np.logical_not(a)))


def bitwise_not(input):
    a = input._data
    return Tensor._make(array_module(a).asarray(np.logical_not(a) if a.dtype == np.bool_ else np.invert(a)))


def _float_test(npfn, fill):
    def fn(input):
        a = input._data
        xp = array_module(a)
        return Tensor._make(xp.asarray(npfn(a)) if a.dtype.kind in "fV" else xp.full(a.shape, fill))
    fn.__name__ = fn.__qualname__ = npfn.__name__
    return fn


isnan = _float_test(np.isnan, False)
isinf = _float_test(np.isinf, False)
isfinite = _float_test(np.isfinite, True)


def isposinf(input):
    return Tensor._make(array_module(input._data).asarray(np.isposinf(input._data)))


def isneginf(input):
    return Tensor._make(array_module(input._data).asarray(np.isneginf(input._data)))


def equal(input, other):
    return input._data.shape == other._data.shape and bool(np.array_equal(input._data, other._data))


def _same_dtype(input, other):
    """PyTorch's isclose/allclose compare tensors of one dtype only."""
    if isinstance(other, Tensor) and other.dtype is not input.dtype:
        from .._errors import scalar_name
        raise RuntimeError(f"{scalar_name(input.dtype)} did not match {scalar_name(other.dtype)}")


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    _same_dtype(input, other)
    _bcast_check(input, other)
    return bool(np.allclose(input._data, other._data, rtol=rtol, atol=atol, equal_nan=equal_nan))


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    o = other._data if isinstance(other, Tensor) else other
    _same_dtype(input, other)
    _bcast_check(input, other)
    return Tensor._make(array_module(input._data).asarray(np.isclose(input._data, o, rtol=rtol, atol=atol,
                                                                     equal_nan=equal_nan)))


def nonzero(input, *, as_tuple=False):
    nz = np.nonzero(input._data)
    if as_tuple:
        return tuple(Tensor._make(a.astype(np.int64)) for a in nz)
    return Tensor._make(np.stack(nz, axis=1).astype(np.int64) if nz else
                        array_module(input._data).zeros((0, 0), np.int64))


def argwhere(input):
    return nonzero(input)


def _bcast_check(a, b):
    if isinstance(a, Tensor) and isinstance(b, Tensor):
        try:
            np.broadcast_shapes(a._data.shape, b._data.shape)
        except ValueError:
            raise broadcast_error(a._data.shape, b._data.shape) from None


def any(input, dim=None, keepdim=False):
    if dim is None:
        return Tensor._make(array_module(input._data).asarray(np.any(input._data)))
    return Tensor._make(np.any(input._data, axis=dims_of(dim, input._data.ndim), keepdims=keepdim))


def all(input, dim=None, keepdim=False):
    if dim is None:
        return Tensor._make(array_module(input._data).asarray(np.all(input._data)))
    return Tensor._make(np.all(input._data, axis=dims_of(dim, input._data.ndim), keepdims=keepdim))


# ------------------------------------------------------------------ gather / scatter / select
def _along(index, dim):
    """NumPy fancy index picking ``index`` along ``dim`` and the matching position elsewhere."""
    nd, xp = index.ndim, array_module(index)
    return tuple(index if d == dim else xp.arange(n).reshape((n,) + (1,) * (nd - 1 - d))
                 for d, n in enumerate(index.shape))


def _check_index(name, input, dim, index, src=None):
    """PyTorch's checks for gather/scatter: dtype, rank, sizes and bounds of the index."""
    ia = index._data
    if ia.dtype != np.int64:
        raise RuntimeError(f"{name}(): Expected dtype int64 for index" if name != "gather" else
                           "gather(): Expected dtype int32/int64 for index")
    x = input._data
    if ia.ndim != x.ndim and ia.size:
        raise RuntimeError("Index tensor must have the same number of dimensions as "
                           + ("input tensor" if name == "gather" else "self tensor"))
    d = wrap_dim(dim, x.ndim)
    for i in range(ia.ndim):
        if i != d and ia.shape[i] > x.shape[i]:
            if src is not None:
                raise RuntimeError(f"Expected index {list(ia.shape)} to be no larger than self {list(x.shape)} apart "
                                   f"from dimension {d} and to be no larger size than src {list(src.shape)}")
            raise RuntimeError(f"Size does not match at dimension {i} expected index {list(ia.shape)} to be no larger "
                               f"than self {list(x.shape)} apart from dimension {d}")
        if src is not None and ia.shape[i] > src._data.shape[i]:
            raise RuntimeError(f"Expected index {list(ia.shape)} to be no larger than self {list(x.shape)} apart "
                               f"from dimension {d} and to be no larger size than src {list(src.shape)}")
    if ia.size:
        n = x.shape[d] if x.ndim else 1
        bad = (ia < 0) | (ia >= n)
        if bad.any():
            raise RuntimeError(f"index {ia[bad].flat[0]} is out of bounds for dimension {d} with size {n}")
    return d


class Gather(Node, name="GatherBackward0"):
    """out[i][j] = x[i][index[i][j]] (dim=1)."""
    save = (0,)
    saved_names = ("self",)
    saved_attrs = ("dim", "index", "sparse_grad")
    sparse_grad = False
    out_shape = None        # a 0-d index is gathered as a 1-element one, the result shaped back

    jvp = linear_jvp

    def forward(self, x):
        self.in_shape = x.shape
        r = x[_along(self.index, self.dim)] if x.ndim else array_module(x).broadcast_to(x, self.index.shape).copy()
        return r if self.out_shape is None else r.reshape(self.out_shape)

    def backward(self, g):
        if self.out_shape is not None:
            g = g.reshape(self.index.shape)
        if self.sparse_grad:        # PyTorch's _gather_sparse_backward: a COO gradient, one entry per index element
            from .. import _layout
            ix = self.index
            xp = array_module(ix)
            if len(self.in_shape):
                coords = xp.indices(ix.shape).reshape(ix.ndim, -1)
                coords[self.dim] = ix.reshape(-1)
            else:
                coords = xp.zeros((0, ix.size), np.int64)
            return Tensor._make(_layout.SparseCOO(coords.astype(np.int64), g._data.reshape(-1).copy(),
                                                 self.in_shape, False))
        # PyTorch's gather_backward uses only the input's size: the gradient graph does not link x
        return ScatterAddGrad.apply(g, index=self.index, dim=self.dim, shape=self.in_shape)


class ScatterAddGrad(Node, name="ScatterAddBackward0"):
    """Sum ``g`` into zeros of ``shape`` at ``index`` along ``dim`` (the backward of gather/max/sort).
    ``src`` (optional) is linked with a zero derivative, as PyTorch's backward depends on its input."""
    unique = False

    def forward(self, g, src=None):
        out = array_module(g).zeros(self.shape, g.dtype)
        if self.unique:
            out[_along(self.index, self.dim)] = g
        else:
            array_module(out).add.at(out, _along(self.index, self.dim), g)
        return out

    def backward(self, gg):
        return Gather.apply(gg, index=self.index, dim=self.dim), zeros_for(self, 1, gg)


def gather(input, dim, index, *, sparse_grad=False):
    """out[..., i, ...] = input[..., index[..., i, ...], ...] along ``dim``."""
    if (input._data.ndim == 0) != (index._data.ndim == 0) and max(input._data.ndim, index._data.ndim) == 1:
        # PyTorch counts a 0-d tensor as 1-d here: gather the 1-d forms, the result shaped as the index
        if input._data.ndim == 0 and sparse_grad:     # a 0-d input's sparse gradient: sparse_dim 0, one entry each
            wrap_dim(dim, 0)
            return Gather.apply(input, index=index._data, dim=0, sparse_grad=True)
        if input._data.ndim == 0:
            return gather(input.reshape(-1), dim, index, sparse_grad=sparse_grad).reshape(index.shape)
        d = wrap_dim(dim, 1)
        ix = index._data.reshape(1)
        _check_index("gather", input, d, Tensor._make(ix))
        return Gather.apply(input, index=ix, dim=d, sparse_grad=bool(sparse_grad), out_shape=())
    d = _check_index("gather", input, dim, index)
    if sparse_grad and input._data.ndim:
        return Gather.apply(input, index=index._data, dim=d, sparse_grad=True)
    return Gather.apply(input, index=index._data, dim=d)


class Scatter(Node, name="ScatterBackward0"):
    """A copy of x with x[index] = src along dim (src a tensor)."""
    reduce = None

    def forward(self, x, src):
        out = x.copy()
        pos = _along(self.index, self.dim)
        if self.reduce == "add":
            array_module(out).add.at(out, pos, src[tuple(slice(0, n) for n in self.index.shape)])
        elif isinstance(src, np.ndarray) and src.ndim:
            out[pos] = src[tuple(slice(0, n) for n in self.index.shape)]
        else:
            out[pos] = src
        return out

    def backward(self, g):
        nf = self.next_functions
        gx = gs = None
        if nf[0][0] is not None:
            if self.reduce == "add":
                gx = g
            else:
                m = array_module(g._data).ones(g.shape, bool)
                m[_along(self.index, self.dim)] = False
                gx = scale(g, m)
        if len(nf) > 1 and nf[1][0] is not None:
            gs = Gather.apply(g, index=self.index, dim=self.dim)
            if gs.shape != self.src_shape:
                gs = _pad_to(gs, self.src_shape)
        return gx, gs


class ScatterValue(Scatter, name="ScatterBackward1"):
    pass


class ScatterAdd(Scatter, name="ScatterAddBackward0"):
    reduce = "add"


def _pad_to(g, shape):
    """Zero-pad a gradient at the end of each dim up to ``shape`` (index smaller than src)."""
    from .nn import ConstantPad
    return ConstantPad.apply(g, pads=tuple((0, want - have) for have, want in zip(g.shape, shape)))


def scatter(input, dim, index, src=None, *, value=None, reduce=None):
    """Out-of-place scatter: a copy of input with src (tensor or number) written at index along dim."""
    if src is None:
        src = value
    if reduce is not None:
        if reduce not in ("add", "multiply"):
            raise RuntimeError(f"reduce argument must be either add or multiply. Got {reduce}")
        if reduce == "add" and isinstance(src, Tensor):
            return scatter_add(input, dim, index, src)
        raise NotImplementedError(f"hookgrad: scatter with reduce='{reduce}' and a number source is not supported")
    if isinstance(src, Tensor):
        if src._data.dtype != input._data.dtype:
            raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
        d = _check_index("scatter", input, dim, index, src)
        return Scatter.apply(input, src, index=index._data, dim=d, src_shape=src._data.shape)
    d = _check_index("scatter", input, dim, index)
    return ScatterValue.apply(input, input._data.dtype.type(src), index=index._data, dim=d, src_shape=())


def scatter_add(input, dim, index, src):
    """A copy of input with src summed in at index along dim (repeated indices accumulate)."""
    if src._data.dtype != input._data.dtype:
        raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
    d = _check_index("scatter_add", input, dim, index, src)
    return ScatterAdd.apply(input, src, index=index._data, dim=d, src_shape=src._data.shape)


def _check_vector_index(name, index, n):
    ia = index._data
    if ia.ndim > 1:
        raise IndexError(f"{name}(): Index is supposed to be a vector")
    if ia.dtype not in (np.int64, np.int32):
        raise RuntimeError(f"{name}(): Expected dtype int32 or int64 for index")
    return ia.reshape(-1)


def index_select(input, dim, index):
    """Select entries along dim at the (1-D) index."""
    d = wrap_dim(dim, input._data.ndim)
    ia = _check_vector_index("index_select", index, 0)
    n = input._data.shape[d] if input._data.ndim else 1
    if ia.size and (ia.min() < -n or ia.max() >= n) or (ia.size and ia.min() < 0):
        raise IndexError("index out of range in self")
    if not input._data.ndim:
        return Tensor._make(input._data.reshape(1)[ia].reshape(index._data.shape)) if not input.requires_grad \
            else input.reshape(1).index_select(0, index).reshape(index._data.shape)
    return IndexSelect.apply(input, index=ia, dim=d)


class IndexAdd(Node, name="IndexAddBackward0"):
    alpha = 1

    def forward(self, x, src):
        out = x.copy()
        array_module(out).add.at(out, (slice(None),) * self.dim + (self.index,), src if self.alpha == 1 else src * self.alpha)
        return out

    def backward(self, g):
        nf = self.next_functions
        gs = None
        if nf[1][0] is not None:
            gs = IndexSelect.apply(g, index=self.index, dim=self.dim)
            if self.alpha != 1:
                gs = gs * self.alpha
        return g, gs


def index_add(input, dim, index, source, *, alpha=1):
    """A copy of input with alpha * source summed in at index along dim."""
    d = wrap_dim(dim, input._data.ndim)
    if source._data.dtype != input._data.dtype:
        raise RuntimeError(f"index_add_(): self ({_TNAME[input._data.dtype.name]}) and source "
                           f"({_TNAME[source._data.dtype.name]}) must have the same scalar type")
    ia = _check_vector_index("index_add", index, 0)
    n = input._data.shape[d]
    if ia.size and (ia.min() < 0 or ia.max() >= n):
        bad = ia[(ia < 0) | (ia >= n)][0]
        if input._data.ndim <= 1:           # PyTorch's 1-D kernel (index_select_add) says only this
            raise IndexError(f"index out of range in self (hookgrad: index {bad} is out of bounds for dimension "
                             f"{d} with size {n})")
        raise RuntimeError(f"index {bad} is out of bounds for dimension {d} with size {n}")
    if source._data.dtype != input._data.dtype:
        raise RuntimeError(f"index_add_(): self ({input.dtype}) and source ({source.dtype}) must have the same "
                           "scalar type")
    return IndexAdd.apply(input, source, index=ia, dim=d, alpha=alpha)


class MaskedFill(Node, name="MaskedFillBackward0"):
    """x with the masked positions set to a value (number: grad only to x; 0-dim tensor: grad sums)."""
    saved_attrs = ("mask",)

    def forward(self, x, *v):        # a number is the ``fill`` parameter (no edge), a 0-dim tensor an input
        return np.where(self.mask, array_module(x).asarray(v[0] if v else self.fill, x.dtype), x)

    def backward(self, g):
        nf = self.next_functions
        gx = scale(g, ~self.mask) if nf[0][0] is not None else None
        gv = None
        if len(nf) > 1 and nf[1][0] is not None:
            gv = scale(g, self.mask).sum()
        return gx, gv


class MaskedFillT(MaskedFill, name="MaskedFillBackward1"):
    pass


def _bool_mask(name, mask):
    if mask._data.dtype != np.bool_:
        raise RuntimeError(f"{name} only supports boolean masks, but got mask with dtype "
                           f"{_DT_SHORT.get(mask._data.dtype.name, mask._data.dtype.name)}")
    return mask._data


_TNAME = {"float32": "Float", "float64": "Double", "float16": "Half", "int64": "Long", "int32": "Int",
          "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool"}
_DT_SHORT = {"float32": "float", "float64": "double", "int64": "long int", "int32": "int", "uint8": "unsigned char",
             "float16": "c10::Half", "int16": "short int", "int8": "signed char"}


def masked_fill(input, mask, value):
    """Fill input where mask is True with value (a number or a 0-dim tensor)."""
    m = _bool_mask("masked_fill_", mask)
    try:
        np.broadcast_shapes(m.shape, input._data.shape)
    except ValueError:
        raise _size_mismatch(m.shape, input._data.shape) from None
    if m.shape != input._data.shape:
        m = np.broadcast_to(m, np.broadcast_shapes(m.shape, input._data.shape))
    if isinstance(value, Tensor):
        if value._data.ndim:
            raise RuntimeError("masked_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                               f"{value._data.ndim} dimension(s).")
        if value._data.dtype != input._data.dtype:
            value = value.to(input.dtype)
        return MaskedFillT.apply(input, value, mask=m)
    return MaskedFill.apply(input, mask=m, fill=value)


def _size_mismatch(sa, sb):
    from ._dispatch import broadcast_error
    return broadcast_error(sa, sb)


class MaskedSelect(Node, name="MaskedSelectBackward0"):
    save = (0,)
    saved_names = ("self",)

    jvp = linear_jvp

    def forward(self, x):
        self.in_shape = x.shape
        return x[self.mask]

    def backward(self, g):
        return MaskedScatterGrad.apply(g, None, mask=self.mask, shape=self.in_shape)   # no link to x


class MaskedScatterGrad(Node, name="MaskedScatterBackward0"):
    def forward(self, g, src):
        out = array_module(g).zeros(self.shape, g.dtype)
        out[self.mask] = g
        return out

    def backward(self, gg):
        return MaskedSelect.apply(gg, mask=self.mask), zeros_for(self, 1, gg)


def masked_select(input, mask):
    """The 1-D tensor of input's elements where mask (broadcast) is True."""
    if mask._data.dtype != np.bool_:
        raise RuntimeError("masked_select: expected BoolTensor for mask")
    try:
        shape = np.broadcast_shapes(mask._data.shape, input._data.shape)
    except ValueError:
        raise _size_mismatch(mask._data.shape, input._data.shape) from None
    x = input if input._data.shape == shape else input.expand(shape)
    return MaskedSelect.apply(x, mask=np.broadcast_to(mask._data, shape))


class Take(Node, name="TakeBackward0"):
    save = (0,)
    saved_names = ("self",)

    jvp = linear_jvp

    def forward(self, x):
        self.in_shape = x.shape
        return x.reshape(-1)[self.index]

    def backward(self, g):
        return TakeGrad.apply(g, None, index=self.index, shape=self.in_shape)   # no link to x


class TakeGrad(Node, name="PutBackward0"):
    def forward(self, g, src):
        out = array_module(g).zeros(int(np.prod(self.shape)), g.dtype)
        array_module(out).add.at(out, self.index, g)
        return out.reshape(self.shape)

    def backward(self, gg):
        return Take.apply(gg, index=self.index), zeros_for(self, 1, gg)


def take(input, index):
    """input treated as 1-D, indexed by index (result has index's shape)."""
    n = input._data.size
    ia = index._data
    if ia.size and (ia.min() < -n or ia.max() >= n):
        bad = ia[(ia < -n) | (ia >= n)].flat[0]
        raise IndexError(f"out of range: tried to access index {bad} on a tensor of {n} elements.")
    return Take.apply(input, index=np.where(ia < 0, ia + n, ia))


# ----------------------------------------------------------------------------- in-place forms
def masked_fill_(self, mask, value):
    if not writeable(self._data) and 0 in self._data.strides:
        import warnings
        warnings.warn("Use of masked_fill_ on expanded tensors is deprecated. Please clone() the tensor before performing "
                      "this operation. This also applies to advanced indexing e.g. tensor[mask] = scalar", UserWarning,
                      stacklevel=2)
    return via_(self, lambda t: masked_fill(t, mask, value), value, cls=_ViaConst)


def scatter_(self, dim, index, src=None, *, value=None, reduce=None):
    return via_(self, lambda t: scatter(t, dim, index, src, value=value, reduce=reduce), src, value)


def scatter_add_(self, dim, index, src):
    return via_(self, lambda t: scatter_add(t, dim, index, src), src)


def index_add_(self, dim, index, source, *, alpha=1):
    return via_(self, lambda t: index_add(t, dim, index, source, alpha=alpha), source)


class _Via:
    """Adapter for inplace_apply: run an out-of-place Tensor function ``f`` (its graph becomes self's history).
    The Tensors f reads besides self come as ``operands`` (inplace_apply's args): a source that requires grad
    makes the write record a graph even where self does not, and PyTorch's overlap check sees them."""
    save = (0,)

    @staticmethod
    def apply(x, *operands, f):
        return f(x)


class _ViaShared(_Via):
    """_Via for the ops PyTorch runs without its overlap check between self and the operands (masked_scatter_,
    index_fill_, float_power_, ...)."""
    _args_may_overlap = True


def via_(self, f, *operands, cls=_Via):
    """Write ``f(self)`` into self (in place); ``operands``: every argument of f, the Tensors among them are
    recorded (the one place an in-place op built over an out-of-place function names its extra inputs)."""
    return inplace_apply(self, cls, tuple(a for a in operands if isinstance(a, Tensor)), {"f": f})


# ------------------------------------------------------------------ index_copy / masked_scatter
class IndexCopy(Node, name="IndexCopyBackward0"):
    """x with the slices at ``index`` along ``dim`` replaced by source's (self: grad with those slices zeroed;
    source: grad's slices at index)."""

    def forward(self, x, src):
        out = x.copy()
        out[(slice(None),) * self.dim + (self.index,)] = src
        return out

    def backward(self, g):
        nf = self.next_functions
        gx = gs = None
        if nf[0][0] is not None:
            gx = IndexCopy.apply(g, Tensor._make(array_module(g._data).zeros(1, g._data.dtype)), index=self.index,
                                 dim=self.dim)
        if nf[1][0] is not None:
            gs = IndexSelect.apply(g, index=self.index, dim=self.dim)
        return gx, gs


def index_copy(input, dim, index, source):
    """A copy of input with source's slices along dim written at index (IndexCopyBackward0)."""
    xd, sd, ia = input._data, source._data, index._data
    nd = xd.ndim
    d = wrap_dim(dim, max(nd, 1))
    if ia.ndim > 1:
        raise IndexError(f"index_copy_(): Index should have dimension 1 or 0 (got {ia.ndim})")
    if ia.dtype != np.int64:
        raise RuntimeError(f"index_copy_(): Expected a long tensor for index, but got {_TNAME[ia.dtype.name]}")
    ia = ia.reshape(-1)
    ss = sd.shape if sd.ndim else (1,)
    xs = xd.shape if nd else (1,)
    if len(ss) != len(xs) or builtins.any(a != b for k, (a, b) in enumerate(zip(xs, ss)) if k != d):
        for k, (a, b) in enumerate(zip(xs, ss)):
            if k != d and a != b:
                break
        else:
            k, a, b = d, None, None
        raise RuntimeError("index_copy_(): Source/destination tensor must have same slice shapes. Destination slice "
                           f"shape: {a} at dimension {k} and source slice shape: {b} at dimension {k}.")
    if ia.size != ss[d]:
        raise IndexError(f"index_copy_(): Number of indices ({ia.size}) should be equal to source.size(dim) ({ss[d]})")
    if sd.dtype != xd.dtype:
        raise RuntimeError(f"index_copy_(): self and source expected to have the same dtype, but got (self) "
                           f"{_TNAME[xd.dtype.name]} and (source) {_TNAME[sd.dtype.name]}")
    bad = ia[(ia < 0) | (ia >= xs[d])]
    if bad.size:
        raise IndexError(f"index_copy_(): index {int(bad[0])} is out of bounds for dimension {d} with size {xs[d]}")
    if not nd:
        return IndexCopy.apply(input.reshape(1), source.reshape(1), index=ia, dim=0).reshape(())
    return IndexCopy.apply(input, source, index=ia, dim=d)


def index_copy_(self, dim, index, source):
    return via_(self, lambda t: index_copy(t, dim, index, source), source)


class MaskedScatter(Node, name="MaskedScatterBackward0"):
    """x with its masked positions taking source's first elements in order (self: grad zeroed at the mask;
    source: grad's masked elements, then zeros, in source's shape)."""

    def forward(self, x, src):
        out = x.copy()
        k = int(self.mask.sum())
        out[self.mask] = src.reshape(-1)[:k]
        self.src_shape = src.shape
        return out

    def backward(self, g):
        nf = self.next_functions
        gx = gs = None
        if nf[0][0] is not None:
            gx = MaskedFill.apply(g, mask=self.mask, fill=0.0)
        if nf[1][0] is not None:
            from .join import cat
            sel = MaskedSelect.apply(g, mask=self.mask)
            n = int(np.prod(self.src_shape))
            pad = n - sel._data.shape[0]
            if pad:
                sel = cat([sel, Tensor._make(array_module(g._data).zeros(pad, g._data.dtype))])
            gs = sel.reshape(self.src_shape)
        return gx, gs


def masked_scatter(input, mask, source):
    """Copy source's elements, in order, into input where mask (broadcast) is True (MaskedScatterBackward0)."""
    if mask._data.dtype != np.bool_:
        raise RuntimeError(f"masked_scatter_ only supports boolean masks, but got mask with dtype "
                           f"{_TNAME[mask._data.dtype.name]}")
    if source._data.dtype != input._data.dtype:
        raise RuntimeError(f"masked_scatter: expected self and source to have same dtypes but got"
                           f"{_TNAME[input._data.dtype.name]} and {_TNAME[source._data.dtype.name]}")
    try:
        shape = np.broadcast_shapes(mask._data.shape, input._data.shape)
    except ValueError:
        raise _size_mismatch(mask._data.shape, input._data.shape) from None
    m = np.broadcast_to(mask._data, shape)
    if int(m.sum()) > source._data.size:
        raise RuntimeError("Number of elements of source < number of ones in mask")
    x = input if input._data.shape == shape else input.expand(shape)
    return MaskedScatter.apply(x, source, mask=m)


def masked_scatter_(self, mask, source):
    if mask._data.dtype == np.bool_:
        try:
            if np.broadcast_shapes(mask._data.shape, self._data.shape) != self._data.shape:
                raise ValueError
        except ValueError:
            raise _size_mismatch(mask._data.shape, self._data.shape) from None
    return via_(self, lambda t: masked_scatter(t, mask, source), source, cls=_ViaShared)


class _ViaConst(_ViaShared):
    """_Via for an op that writes a constant (masked_fill_): PyTorch lets it write through elements that share
    memory (an expanded tensor)."""
    _overlap_ok = True


def combinations(input, r=2, with_replacement=False):
    """The length-r combinations of a 1-D tensor's elements (itertools.combinations's order), one per row."""
    import itertools
    if input._data.ndim != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input._data.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    xp = array_module(input._data)
    if r == 0:
        return Tensor._make(xp.zeros(0, input._data.dtype))
    n = input._data.shape[0]
    gen = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    idx = xp.array(list(gen(range(n), r)), dtype=np.int64).reshape(-1, r)
    if idx.shape[0] == 0:
        return Tensor._make(xp.zeros((0, r), input._data.dtype))
    from .join import stack
    return stack([getitem(input, Tensor._make(idx[:, k].copy())) for k in range(r)], 1)
