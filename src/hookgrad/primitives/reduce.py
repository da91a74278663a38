"""Reductions: sum, mean, prod, var/std, max/min (with indices), logsumexp, norms, cumsum/cumprod."""
import builtins

import numpy as np

from .. import _dtype as D
from .._tensor import Tensor
from ..autograd.forward_ad import linear_jvp, multilinear_jvp, tsum, scaled  # noqa: F401  (forward AD)
from .._array import array_module
from ..autograd.node import Node
from ..autograd.formulas import TENSORS
from ._dispatch import dims_of, wrap_dim
from .elementwise import scale
from . import elementwise as _E
from . import return_types
from . import _reduce_order as _order


def _restore(g, in_shape, dims, keepdim):
    """Give a reduced gradient (Tensor or array) back the reduced dims (as size 1) so it broadcasts."""
    if not keepdim and dims:
        if isinstance(g, Tensor):       # PyTorch's graph: one unsqueeze per reduced dim
            for d in sorted(dims):
                g = g.unsqueeze(d)
            return g
        shape = list(in_shape)
        for d in dims:
            shape[d] = 1
        g = g.reshape(shape)
    return g


def _sum_dtype(x, dtype):
    if dtype is not None:
        return D.to_dtype(dtype).np
    if x.dtype.kind in "biuV":
        return np.dtype(np.int64) if x.dtype.kind != "V" else x.dtype     # V: bfloat16
    return None


def _accumulated(r, dt):
    """A bfloat16 sum or mean, accumulated in float32 as PyTorch's kernels do, then rounded once (``r`` is the
    float32 result, ``dt`` the dtype asked for); any other result as it is."""
    return r.astype(dt) if dt is not None and dt.kind == "V" else r


def _acc(dt):
    return np.float32 if dt is not None and dt.kind == "V" else dt


def _ordered(fn, x, dims, keepdim):
    """``fn(x, dims)`` (a reduction in PyTorch's order, ``_reduce_order``) over ``dims`` (None: all), keeping the
    reduced dims as size 1 when ``keepdim``."""
    dims = tuple(range(x.ndim)) if dims is None else tuple(dims)
    r = fn(x, dims)
    if keepdim:
        r = r.reshape([1 if d in dims else s for d, s in enumerate(x.shape)])
    return r


class Sum(Node, name="SumBackward0"):
    saved_attrs = ("self_sym_sizes=in_shape",)
    dims = None
    keepdim = False
    dt = None

    jvp = linear_jvp

    def forward(self, x):
        self.in_shape = x.shape
        dt = self.dt
        if dt is not None and dt.kind == "V":       # bfloat16
            return array_module(x).asarray(_accumulated(x.sum(axis=self.dims, keepdims=self.keepdim, dtype=_acc(dt)), dt))
        xd = x if dt is None else x.astype(dt, copy=False)
        if _order.applies(xd):          # NOTE: float32/64 add in PyTorch's CPU order (same bits as torch)
            return _ordered(_order.torch_sum, xd, self.dims, self.keepdim)
        if self.dims is None:
            return array_module(x).asarray(x.sum(dtype=dt))
        return array_module(x).asarray(x.sum(axis=self.dims, keepdims=self.keepdim, dtype=dt))

    def backward(self, g, F=TENSORS):
        dims = self.dims if self.dims is not None else ()
        return F.expand(_restore(g, self.in_shape, dims, self.keepdim), self.in_shape)


class SumDim(Sum, name="SumBackward1"):
    saved_attrs = ("dim=dims", "keepdim", "self_sym_sizes=in_shape")
    pass
    jvp = linear_jvp


class _NoDim:
    """``sum``'s default ``dim``: PyTorch's overload without ``dim`` (SumBackward0); ``dim=None`` given is
    sum.dim_IntList over every dimension (SumBackward1, and ``keepdim`` applies)."""
    __slots__ = ()

    def __repr__(self):
        return "None"


_NO_DIM = _NoDim()


def sum(input, dim=_NO_DIM, keepdim=False, *, dtype=None, axis=None):
    if axis is not None:
        dim = axis
    dt = _sum_dtype(input._data, dtype)
    if dim is _NO_DIM:
        return Sum.apply(input, dt=dt) if dt is not None else Sum.apply(input)
    if dim is None or isinstance(dim, (list, tuple)) and len(dim) == 0:
        dims = tuple(range(input._data.ndim))
    else:
        dims = _dims0(dim, input._data.ndim)
    return SumDim.apply(input, dims=dims, keepdim=keepdim, dt=dt)


class Mean(Node, name="MeanBackward0"):
    saved_attrs = ("self_sym_sizes=in_shape", "self_sym_numel=input_numel(0)")
    dims = None
    keepdim = False
    dt = None

    jvp = linear_jvp

    def forward(self, x):
        self.in_shape = x.shape
        dt = self.dt
        if x.dtype.kind == "V" or (dt is not None and dt.kind == "V"):     # bfloat16: accumulated in float32
            dt = dt or x.dtype
            self.n = x.size if self.dims is None else int(np.prod([x.shape[d] for d in self.dims]))
            return array_module(x).asarray(x.mean(axis=self.dims, keepdims=self.keepdim, dtype=np.float32)
                                           ).astype(dt)
        n = x.size
        if self.dims is not None:
            n = 1
            for d in self.dims:
                n *= x.shape[d]
        self.n = n
        xd = x if dt is None else x.astype(dt, copy=False)
        if _order.applies(xd):          # PyTorch's CPU mean: its ordered sum, divided by n
            with np.errstate(invalid="ignore", divide="ignore"):       # (no elements: nan, as PyTorch)
                return _ordered(_order.torch_sum, xd, self.dims, self.keepdim) / xd.dtype.type(n)
        if self.dims is None:
            return array_module(x).asarray(x.mean(dtype=dt)).astype(dt or x.dtype, copy=False)
        return array_module(x).asarray(x.mean(axis=self.dims, keepdims=self.keepdim, dtype=dt)).astype(
            dt or x.dtype, copy=False)

    def backward(self, g, F=TENSORS):
        dims = self.dims if self.dims is not None else ()
        return F.div_number(F.expand(_restore(g, self.in_shape, dims, self.keepdim), self.in_shape), self.n,
                            _E.DivNumber)


class MeanDim(Mean, name="MeanBackward1"):
    saved_attrs = ("dim=dims", "keepdim", "self_sym_sizes=in_shape", "self_sym_numel=input_numel(0)")
    pass
    jvp = linear_jvp


def mean(input, dim=None, keepdim=False, *, dtype=None, axis=None):
    if axis is not None:
        dim = axis
    if input._data.dtype.kind not in "fcV" and dtype is None:
        raise RuntimeError("mean(): could not infer output dtype. Input dtype must be either a floating point or "
                           f"complex dtype. Got: {_legacy_short(input.dtype)}")
    dt = D.to_dtype(dtype).np if dtype is not None else None
    if dim is None:
        return Mean.apply(input, dt=dt)
    dims = _dims0(dim, input._data.ndim)
    return MeanDim.apply(input, dims=dims, keepdim=keepdim, dt=dt)


def _legacy_short(dt):
    return dt._legacy.replace("Tensor", "")


def _dims_arg(input, dim):
    """dim=None or an empty list: all dims; else a sorted tuple of wrapped dims."""
    nd = input._data.ndim
    if dim is None or (isinstance(dim, (list, tuple)) and len(dim) == 0):
        return tuple(range(nd))
    return _dims0(dim, nd)


def _dims0(dim, nd):
    """dims_of, where a 0-d tensor takes dim 0 or -1 (checked, as PyTorch) and reduces over nothing."""
    dims = dims_of(dim, nd)
    if len(set(dims)) != len(dims):         # NOTE: the ordered reductions would silently reduce a dim once
        seen = set()
        for d in dims:
            if d in seen:
                raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
            seen.add(d)
    return dims if nd else ()


def _count(shape, dims):
    n = 1
    for d in dims:
        n *= shape[d]
    return n


def _keep(t, node):
    """A reduced tensor (or array) with the reduced dims restored as size 1."""
    return _restore(t, node.in_shape, node.dims, node.keepdim)


def _float_check(name, input, ord=2):
    if input._data.dtype.kind == "c":        # the 2-norm of a complex vector (its gradient z / |z| is PyTorch's)
        if float(ord) != 2:
            from .._errors import complex_unsupported
            raise complex_unsupported(f"{name} with ord={ord}")
        return
    if not D.has_float_kernels(input._data.dtype):
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. Got "
                           f"{_legacy_short(input.dtype).replace('Tensor', '')}")


# ----------------------------------------------------------------------------------- prod
class Prod(Node, name="ProdBackward0"):
    """Product over all elements (ProdBackward0) or along one dim (ProdBackward1)."""
    save = (0, -1)
    saved_names = ("self", "result")
    dims = ()
    keepdim = False
    dt = None

    def forward(self, x):
        self.in_shape = x.shape
        return array_module(x).asarray(x.prod(axis=self.dims, keepdims=self.keepdim, dtype=self.dt))

    def backward(self, g):
        x, out = self.saved_values
        if x._data.ndim == 0:       # PyTorch's prod_backward returns grad itself for a 0-d input
            return g
        g, out = _keep(g, self), _keep(out, self)
        if not (x._data == 0).any():
            return g * (out / x)    # PyTorch's order (rounding of the double backward)
        if all(x._data.shape[d] == 1 for d in self.dims):   # prod_safe_zeros_backward: grad itself
            return g
        # zeros: the product of all the other elements, one row per element (O(n^2), only then)
        xs = x.reshape(-1) if len(self.dims) != 1 else x.movedim(self.dims[0], -1)
        n = xs.shape[-1]
        eye = Tensor._make(array_module(x._data).eye(n, dtype=bool))
        others = _where(eye, 1.0, xs.unsqueeze(-2).expand(xs.shape[:-1] + (n, n))).prod(-1)
        others = others.reshape(x.shape) if len(self.dims) != 1 else others.movedim(-1, self.dims[0])
        return g * others


class ProdDim(Prod, name="ProdBackward1"):
    saved_attrs = ("dim=dims[0]", "keepdim")
    pass


def _where(c, a, b):
    from .index import where
    return where(c, a, b)


def prod(input, dim=None, keepdim=False, *, dtype=None):
    """Product of all elements, or along ``dim`` (integers accumulate in int64)."""
    dt = _sum_dtype(input._data, dtype)
    if dim is None:
        return Prod.apply(input, dims=tuple(range(input._data.ndim)), dt=dt)
    d = wrap_dim(dim, input._data.ndim)          # (one int dim; a 0-d tensor takes 0 or -1)
    d = (d,) if input._data.ndim else ()
    return ProdDim.apply(input, dims=d, keepdim=keepdim, dt=dt)


# --------------------------------------------------------------------------------- var / std
def _var(x, dims, ddof, keepdim):
    """np.var, except that a slice of equal values has variance exactly 0, as PyTorch's Welford
    kernel gives (NumPy's mean of equal values can be off by an ulp, leaving a ~1e-33 variance whose
    std gradient g / std is then huge instead of PyTorch's 0)."""
    n = _count(x.shape, dims)
    xp = array_module(x)
    if n - ddof > 0:
        v = xp.asarray(np.var(x, axis=dims, ddof=ddof, keepdims=keepdim))
    else:           # no degrees of freedom: inf or nan, as PyTorch (the public function warns, not NumPy)
        with np.errstate(divide="ignore", invalid="ignore"):
            v = xp.asarray(np.var(x, axis=dims, keepdims=keepdim) / 0.0 if n else
                           xp.full(np.sum(x, axis=dims, keepdims=keepdim).shape, np.nan, x.dtype)).astype(x.dtype)
    if v.size and x.size:
        same = np.max(x, axis=dims, keepdims=keepdim) == np.min(x, axis=dims, keepdims=keepdim)
        if same.any():      # (nan stays: inf values, or no degrees of freedom)
            v = np.where(same & np.isfinite(v), v.dtype.type(0), v)
    return v


class Var(Node, name="VarBackward0"):
    opmath = True      # bfloat16: computed in float32, rounded once (_dtype.opmath)
    save = (0,)
    saved_names = ("self",)
    saved_attrs = ("dim=dims", "correction", "keepdim")
    correction = 1

    def forward(self, x):
        self.in_shape = x.shape
        with np.errstate(divide="ignore", invalid="ignore"):
            return _var(x, self.dims, self.correction, self.keepdim)

    def backward(self, g):
        (x,) = self.saved_values
        n = _count(self.in_shape, self.dims) - self.correction
        return _keep(g, self) * (2.0 / n if n > 0 else float("inf")) * (x - x.mean(self.dims, keepdim=True))


class Std(Node, name="StdBackward0"):
    opmath = True      # bfloat16: computed in float32, rounded once (_dtype.opmath)
    save = (0, -1)
    saved_names = ("self", "result")
    saved_attrs = ("dim=dims", "correction", "keepdim")
    correction = 1

    def forward(self, x):
        self.in_shape = x.shape
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.sqrt(_var(x, self.dims, self.correction, self.keepdim))

    def backward(self, g):
        x, out = self.saved_values
        n = _count(self.in_shape, self.dims) - self.correction
        out = _keep(out, self)
        gv = _where(out == 0, 0.0, _keep(g, self) / out)
        return gv * (1.0 / n if n > 0 else float("inf")) * (x - x.mean(self.dims, keepdim=True))


def _var_args(input, dim, unbiased, keepdim, correction, name):
    if isinstance(dim, bool):           # var(x, False): the legacy ``unbiased`` positional
        dim, unbiased = None, dim
    if correction is None:
        correction = 0 if unbiased is False else 1
    elif unbiased is not None:
        raise RuntimeError(f"{name}: can't specify both unbiased and correction")
    if not D.has_float_kernels(input._data.dtype):
        raise RuntimeError("std and var only support floating point and complex dtypes")
    dims = _dims_arg(input, dim)
    if _count(input._data.shape, dims) - correction <= 0:
        import warnings
        warnings.warn(f"{name}(): degrees of freedom is <= 0. Correction should be strictly less than the reduction "
                      "factor (input numel divided by output numel).", UserWarning, stacklevel=3)
    return dims, correction, keepdim


def _var_op(node, name, doc):
    """The public function of a var/std node: PyTorch's signature, the arguments checked by _var_args."""
    def op(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
        dims, c, keepdim = _var_args(input, dim, unbiased, keepdim, correction, name)
        return node.apply(input, dims=dims, correction=c, keepdim=keepdim)
    op.__name__ = op.__qualname__ = name
    op.__doc__ = doc
    return op


var = _var_op(Var, "var", "Variance over ``dim`` (all dims by default) with Bessel's ``correction`` (default 1).")
std = _var_op(Std, "std", "Standard deviation over ``dim`` with Bessel's ``correction`` (default 1).")


class VarMean(Node, name="VarMeanBackward0"):
    """(var, mean) as one node with two outputs; a missing output grad contributes nothing."""
    opmath = True      # bfloat16: computed in float32, rounded once (_dtype.opmath)
    save = (0,)
    saved_names = ("self",)
    materialize_grads = False
    _std = False

    def forward(self, x):
        self.in_shape = x.shape
        self.n = _count(x.shape, self.dims)
        with np.errstate(divide="ignore", invalid="ignore"):
            v = _var(x, self.dims, self.correction, self.keepdim)
            m = array_module(x).asarray(np.mean(x, axis=self.dims, keepdims=self.keepdim))
        return (np.sqrt(v) if self._std else v), m

    def backward(self, gv, gm):
        res = None
        if gv is not None:      # (unpacks the saved tensors once: an unpack hook runs once per node call)
            res = (Std.backward if self._std else Var.backward)(self, gv)
        else:
            self.saved_values  # NOTE: PyTorch unpacks (and version-checks) every saved tensor whenever the node runs
        if gm is not None:
            g = _keep(gm / self.n, self).expand(self.in_shape)
            res = g if res is None else res + g
        return res


class StdMean(VarMean, name="StdMeanBackward0"):
    save = (0, -1)
    saved_names = ("self", "result0")
    _std = True


var_mean = _var_op(VarMean, "var_mean", "(var, mean) over the same dims: one node with two outputs.")
std_mean = _var_op(StdMean, "std_mean", "(std, mean) over the same dims: one node with two outputs.")


# ------------------------------------------------------------------------ max / min / amax
class Amax(Node, name="AmaxBackward0"):
    """Max over dims; the gradient is shared evenly among tied maxima."""
    save = (0, -1)
    saved_names = ("self", "result")
    saved_attrs = ("dim=dims", "keepdim")
    op = staticmethod(np.max)
    keepdim = False

    def forward(self, x):
        self.in_shape = x.shape
        return array_module(x).asarray(self.op(x, axis=self.dims, keepdims=self.keepdim))

    def backward(self, g):
        x, out = self.saved_values
        mask = x._data == _restore(out._data, self.in_shape, self.dims, self.keepdim)
        mask = mask / mask.sum(axis=self.dims, keepdims=True)
        return scale(_keep(g, self), mask)     # PyTorch's mask is a comparison: no link to x


class Amin(Amax, name="AminBackward0"):
    op = staticmethod(np.min)


def _evenly_distribute(self, g):
    """PyTorch's evenly_distribute_backward (max/min/median of all elements): the gradient shared by the elements
    equal to the result, NaN counting as equal to a NaN result (zeros masked_fill'ed with grad / count: no link
    to x)."""
    x, out = self.saved_values
    xd, od = x._data, out._data
    mask = (xd == od) | (np.isnan(xd) & np.isnan(od)) if xd.dtype.kind in "fc" else xd == od
    return scale(g, mask / builtins.max(int(mask.sum()), 1))


class MaxAll(Amax, name="MaxBackward1"):
    saved_attrs = ()
    backward = _evenly_distribute


class MinAll(Amin, name="MinBackward1"):
    backward = _evenly_distribute


class MaxDim(Node, name="MaxBackward0"):
    """(values, indices) along one dim; the gradient goes to the selected index."""
    saved_attrs = ("dim", "keepdim", "indices=idx if keepdim else idx.squeeze(dim)", "self_sym_sizes=in_shape")
    nondiff_outputs = (1,)
    arg = staticmethod(np.argmax)
    keepdim = False

    def forward(self, x):
        self.in_shape = x.shape
        if not x.ndim:                      # a 0-dim input: the value itself, index 0
            self.idx = None
            return x.copy(), array_module(x).zeros((), np.int64)
        d = self.dim
        idx = self.arg(x, axis=d, keepdims=True)
        self.idx = idx
        vals = np.take_along_axis(x, idx, d)
        if not self.keepdim:
            vals, idx = vals.squeeze(d), idx.squeeze(d)
        return vals, idx

    def backward(self, g):
        from .index import ScatterAddGrad
        if self.idx is None:
            return g.clone()
        g = g if self.keepdim else g.unsqueeze(self.dim)
        return ScatterAddGrad.apply(g, index=self.idx, dim=self.dim, shape=self.in_shape, unique=True)


class MinDim(MaxDim, name="MinBackward0"):
    arg = staticmethod(np.argmin)


# value-selecting reductions along one dim: (values, indices), one node whose only output is the
# values (the indices are no output of the node); `arg` picks one index per row (keepdims)
def _lower_median_arg(x, axis, keepdims=True, skipnan=False):
    srt = np.argsort(x, axis=axis, kind="stable")          # NaNs sort last
    nan = np.isnan(x)
    cnt = x.shape[axis] - (nan.sum(axis=axis, keepdims=True) if skipnan else 0)
    pos = np.maximum((cnt - 1) // 2, 0) if skipnan else array_module(x).full((1,) * x.ndim, (x.shape[axis] - 1) // 2)
    idx = np.take_along_axis(srt, np.broadcast_to(pos, srt.shape[:axis] + (1,) + srt.shape[axis + 1:]), axis)
    if not skipnan:     # a row with a NaN: its median is NaN, at the row's first NaN
        anynan = nan.any(axis=axis, keepdims=True)
        if anynan.any():
            idx = np.where(anynan, np.argmax(nan, axis=axis, keepdims=True), idx)
    return idx


class MedianDim(MaxDim, name="MedianBackward1"):
    def arg(self, x, axis, keepdims):
        return _lower_median_arg(x, axis)


class NanmedianDim(MaxDim, name="NanmedianBackward1"):
    def arg(self, x, axis, keepdims):
        return _lower_median_arg(x, axis, skipnan=True)


class Kthvalue(MaxDim, name="KthvalueBackward0"):
    def arg(self, x, axis, keepdims):
        return np.take(np.argsort(x, axis=axis, kind="stable"), [self.k - 1], axis=axis)


class Mode(MaxDim, name="ModeBackward0"):
    """The most frequent value (the smallest among equally frequent ones), at its last occurrence."""

    def arg(self, x, axis, keepdims):
        xm = np.moveaxis(x, axis, -1)
        rows = xm.reshape(-1, xm.shape[-1])
        out = array_module(x).empty(rows.shape[0], np.int64)
        for r, row in enumerate(rows):
            vals, counts = np.unique(row, return_counts=True)      # sorted; NaNs last
            v = vals[np.argmax(counts)]
            hit = np.flatnonzero((row == v) | (np.isnan(row) & np.isnan(v)))
            out[r] = hit[-1]
        return np.expand_dims(out.reshape(xm.shape[:-1]), axis)


class MedianAll(Node, name="MedianBackward0"):
    """The lower median of all elements (NaN if any); the gradient is shared by the elements equal to it."""
    save = (0, -1)
    saved_names = ("self", "result")
    skipnan = False

    def forward(self, x):
        flat = x.reshape(-1)
        xp = array_module(x)
        if flat.size == 0:
            return xp.asarray(np.nan, x.dtype)
        return xp.asarray(flat[_lower_median_arg(flat, 0, skipnan=self.skipnan)[0]])

    backward = _evenly_distribute


class NanmedianAll(MedianAll, name="NanmedianBackward0"):
    skipnan = True


def _select_fn(name, dim_cls, all_cls=None, k_arg=False):
    rt = getattr(return_types, name)

    def fn(input, k=None, dim=None, keepdim=False):
        if dim is None:
            if all_cls is None:
                raise TypeError(f"{name}(): argument 'dim' must be int, not NoneType")
            return all_cls.apply(input)
        d = _reduce_dim(name, input, dim)
        params = {}
        if k_arg:
            n = input._data.shape[d] if input._data.ndim else 1
            if not 1 <= k <= n:
                raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d}")
            params["k"] = k
        return rt(*dim_cls.apply(input, dim=d, keepdim=keepdim, **params))
    fn.__name__ = name
    return fn



_median = _select_fn("median", MedianDim, MedianAll)
_nanmedian = _select_fn("nanmedian", NanmedianDim, NanmedianAll)
_kthvalue = _select_fn("kthvalue", Kthvalue, k_arg=True)
_mode = _select_fn("mode", Mode)


def median(input, dim=None, keepdim=False, *, out=None):
    return _median(input, None, dim, keepdim)


def nanmedian(input, dim=None, keepdim=False, *, out=None):
    return _nanmedian(input, None, dim, keepdim)


def kthvalue(input, k, dim=-1, keepdim=False, *, out=None):
    return _kthvalue(input, k, dim, keepdim)


def mode(input, dim=-1, keepdim=False, *, out=None):
    return _mode(input, None, dim, keepdim)

median.__doc__ = "median(input): the lower median; median(input, dim, keepdim): (values, indices)."
nanmedian.__doc__ = "median ignoring NaNs."
kthvalue.__doc__ = "kthvalue(input, k, dim=-1, keepdim=False): the k-th smallest values and their indices."
mode.__doc__ = "mode(input, dim=-1, keepdim=False): the most frequent values and their (last) indices."


class Cummax(Node, name="CummaxBackward0"):
    """(values, indices) of the running max along dim (ties and NaNs: the latest); the gradient is
    summed back at the indices."""
    nondiff_outputs = (1,)
    save = (0,)
    saved_names = ("self",)
    acc = np.maximum

    def forward(self, x):
        d = self.dim
        xp = array_module(x)
        if not x.ndim:
            self.idx = xp.zeros((), np.int64)
            return x.copy(), self.idx
        v = self.acc.accumulate(x, axis=d) if x.size else x.copy()
        hit = (x == v) | (np.isnan(x) & np.isnan(v))
        ar = xp.arange(x.shape[d]).reshape((-1,) + (1,) * (x.ndim - d - 1))
        idx = np.maximum.accumulate(np.where(hit, ar, 0), axis=d) if x.size else xp.zeros(x.shape, np.int64)
        self.idx = idx = idx.astype(np.int64)
        return v, idx

    def backward(self, g):
        from .index import ScatterAddGrad
        if not self.idx.ndim:
            return g.clone()
        return ScatterAddGrad.apply(g, index=self.idx, dim=self.dim, shape=self.idx.shape)


class Cummin(Cummax, name="CumminBackward0"):
    acc = np.minimum


def cummax(input, dim):
    """Running maximum along dim and the index where it was attained."""
    d = wrap_dim(dim, input._data.ndim)
    return return_types.cummax(*Cummax.apply(input, dim=d))


def cummin(input, dim):
    """Running minimum along dim and the index where it was attained."""
    d = wrap_dim(dim, input._data.ndim)
    return return_types.cummin(*Cummin.apply(input, dim=d))


def _reduce_dim(name, input, dim):
    x = input._data
    if not x.ndim:
        wrap_dim(dim, 0)
        return 0
    d = wrap_dim(dim, x.ndim)
    if x.shape[d] == 0:
        raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")
    return d


def _minmax(name, all_cls, dim_cls, binary_fn):
    rt = getattr(return_types, name)

    def fn(input, dim=None, keepdim=False, *, other=None, out=None):
        if other is not None:
            if dim is not None:
                raise TypeError(f"{name}() received an invalid combination of arguments - got both dim and other")
            dim = other
        if isinstance(dim, Tensor):
            return binary_fn(input, dim)

        if dim is None:
            if input._data.size == 0:
                raise RuntimeError(f"{name}(): Expected reduction dim to be specified for input.numel() == 0. Specify "
                                   "the reduction dim with the 'dim' argument.")
            return all_cls.apply(input, dims=tuple(range(input._data.ndim)))
        d = _reduce_dim(name, input, dim)
        return rt(*dim_cls.apply(input, dim=d, keepdim=keepdim))
    fn.__name__ = name
    fn.__doc__ = (f"{name}(input): the {name}imum (ties share the gradient); {name}(input, dim, keepdim): a "
                  f"(values, indices) named tuple whose gradient goes to the selected index; {name}(input, other): "
                  f"elementwise {name}imum.")
    return fn


max = _minmax("max", MaxAll, MaxDim, lambda a, b: _E.maximum(a, b))
min = _minmax("min", MinAll, MinDim, lambda a, b: _E.minimum(a, b))


def amax(input, dim=(), keepdim=False):
    """Max over dims (all by default); tied maxima share the gradient evenly."""
    return Amax.apply(input, dims=_dims_arg(input, dim), keepdim=keepdim)


def amin(input, dim=(), keepdim=False):
    """Min over dims (all by default); tied minima share the gradient evenly."""
    return Amin.apply(input, dims=_dims_arg(input, dim), keepdim=keepdim)


def _arg(name, npfn):
    def fn(input, dim=None, keepdim=False):
        x = input._data
        if dim is None:
            if x.size == 0:
                raise IndexError(f"{name}(): Expected reduction dim to be specified for input.numel() == 0.")
            r = array_module(x).asarray(npfn(x))
            return Tensor._make(r.reshape((1,) * x.ndim) if keepdim else r)
        d = _reduce_dim(name, input, dim)
        if not x.ndim:
            return Tensor._make(array_module(x).asarray(0))
        return Tensor._make(npfn(x, axis=d, keepdims=keepdim))
    fn.__name__ = name
    fn.__doc__ = f"Index of the first {name[3:]}imum (of the flattened tensor when dim is None)."
    return fn


argmax = _arg("argmax", np.argmax)
argmin = _arg("argmin", np.argmin)


class Aminmax(Node, name="AminmaxBackward0"):
    """(min, max) as one node with two outputs; tied extrema share each gradient evenly."""
    save = (0, -1, -2)                  # self, output 0 (min), output 1 (max)
    saved_names = ("self", "min", "max")
    materialize_grads = False

    def forward(self, x):
        self.in_shape = x.shape
        xp = array_module(x)
        return (xp.asarray(np.min(x, axis=self.dims, keepdims=self.keepdim)),
                xp.asarray(np.max(x, axis=self.dims, keepdims=self.keepdim)))

    def backward(self, gmin, gmax):
        x, lo, hi = self.saved_values
        res = None
        for g, out in ((gmin, lo), (gmax, hi)):
            if g is not None:
                mask = x._data == _restore(out._data, self.in_shape, self.dims, self.keepdim)
                gx = scale(_keep(g, self), mask / mask.sum(axis=self.dims, keepdims=True))   # no link to x (PyTorch)
                res = gx if res is None else res + gx
        return res


def aminmax(input, *, dim=None, keepdim=False):
    """(min, max) named tuple over dim (all by default): one node with two outputs."""
    x = input._data
    if dim is None:
        if x.size == 0:
            raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the operation has "
                               "no identity.")
        dims = tuple(range(x.ndim))
    else:
        d = wrap_dim(dim, x.ndim)
        if x.ndim and x.shape[d] == 0:
            raise IndexError(f"aminmax: Expected reduction dim {d} to have non-zero size.")
        dims = (d,) if x.ndim else ()
    return return_types.aminmax(*Aminmax.apply(input, dims=dims, keepdim=keepdim))


# --------------------------------------------------------------------------------- logsumexp
class Logsumexp(Node, name="LogsumexpBackward0"):
    save = (0, -1)
    saved_names = ("self", "result")
    saved_attrs = ("dim=dims", "keepdim")
    keepdim = False

    def forward(self, x):
        self.in_shape = x.shape
        if x.size == 0:
            return np.log(np.sum(np.exp(x), axis=self.dims, keepdims=self.keepdim))
        m = np.max(x, axis=self.dims, keepdims=True)
        m = np.where(np.isinf(m), 0, m).astype(x.dtype, copy=False)
        # bfloat16: PyTorch composes bfloat16 ops (each rounds once), its sum accumulating in float32
        acc = np.float32 if x.dtype.kind == "V" else None
        with np.errstate(divide="ignore"):
            r = np.log(np.sum(np.exp(x - m), axis=self.dims, keepdims=True, dtype=acc).astype(x.dtype, copy=False)) + m
        return r if self.keepdim else r.squeeze(self.dims)

    def backward(self, g):
        x, out = self.saved_values
        return _keep(g, self) * (x - _keep(out, self)).exp()


def logsumexp(input, dim, keepdim=False):
    """log(sum(exp(input))) over dim, computed stably."""
    if not D.is_floating(input._data.dtype):
        input = input.to(D.get_default_dtype())
    return Logsumexp.apply(input, dims=_dims_arg(input, dim), keepdim=keepdim)


# ---------------------------------------------------------------------------- cumsum / cumprod
class Cumsum(Node, name="CumsumBackward0"):
    opmath = True      # bfloat16: computed in float32, rounded once (_dtype.opmath)
    saved_attrs = ("dim",)
    dt = None

    jvp = linear_jvp

    def forward(self, x):
        return np.cumsum(x, axis=self.dim, dtype=self.dt) if x.ndim else array_module(x).array(x, dtype=self.dt or x.dtype)

    def backward(self, g):
        d = self.dim
        if g._data.ndim == 0 or g._data.shape[d] <= 1:      # as PyTorch's cumsum_backward
            return g
        return g.flip(d).cumsum(d).flip(d)


def cumsum(input, dim, *, dtype=None):
    """Cumulative sum along dim (integers accumulate in int64)."""
    d = wrap_dim(dim, input._data.ndim)
    return Cumsum.apply(input, dim=d, dt=_sum_dtype(input._data, dtype))


class Cumprod(Node, name="CumprodBackward0"):
    save = (0, -1)
    saved_names = ("self", "result")
    dt = None

    def forward(self, x):
        return np.cumprod(x, axis=self.dim, dtype=self.dt) if x.ndim else array_module(x).array(x, dtype=self.dt or x.dtype)

    def backward(self, g):
        x, out = self.saved_values
        d = self.dim
        if x._data.size <= 1:       # PyTorch's cumprod_backward returns grad itself
            return g
        if not (x._data == 0).any():
            return (g * out).flip(d).cumsum(d).flip(d) / x
        # zeros: grad_i = sum_{j >= i} g_j prod_{k <= j, k != i} x_k, via an n x n table (only then)
        xs, gs = x.movedim(d, -1), g.movedim(d, -1)
        n = xs.shape[-1]
        xp = array_module(x._data)
        eye = Tensor._make(xp.eye(n, dtype=bool))
        table = _where(eye, 1.0, xs.unsqueeze(-2).expand(xs.shape[:-1] + (n, n))).cumprod(-1)
        upper = Tensor._make(np.triu(xp.ones((n, n), dtype=x._data.dtype)))
        return (table * upper * gs.unsqueeze(-2)).sum(-1).movedim(-1, d)


def cumprod(input, dim, *, dtype=None):
    """Cumulative product along dim."""
    d = wrap_dim(dim, input._data.ndim)
    return Cumprod.apply(input, dim=d, dt=_sum_dtype(input._data, dtype))


# ------------------------------------------------------------------------------------- norms
class VectorNorm(Node, name="LinalgVectorNormBackward0"):
    opmath = True      # bfloat16: computed in float32, rounded once (_dtype.opmath)
    save = (0, -1)
    saved_names = ("self", "result")
    saved_attrs = ("ord=int(ord) if ord == int(ord) else ord", "dim=dims", "keepdim")
    ord = 2.0
    keepdim = False

    def forward(self, x):
        self.in_shape = x.shape
        p, ax, k = self.ord, self.dims, self.keepdim
        if x.dtype.kind == "c":             # a complex vector's norm is its moduli's (a real result)
            x = np.abs(x)
        if p == 2 and _order.applies(x):    # NOTE: PyTorch's CPU order of the sum of squares (same bits)
            return _ordered(_order.torch_norm2, x, ax, k)
        a = np.abs(x)
        if p == 2:
            r = np.sqrt(np.sum(x * x, axis=ax, keepdims=k))
        elif p == 1:
            r = np.sum(a, axis=ax, keepdims=k)
        elif p == float("inf"):
            r = np.max(a, axis=ax, keepdims=k, initial=0)
        elif p == -float("inf"):
            r = np.min(a, axis=ax, keepdims=k)
        elif p == 0:
            r = np.sum(a != 0, axis=ax, keepdims=k).astype(x.dtype)
        else:
            with np.errstate(divide="ignore"):
                r = np.sum(a ** p, axis=ax, keepdims=k) ** (1.0 / p)
        return array_module(x).asarray(r, dtype=x.dtype)

    def backward(self, g):
        x, out = self.saved_values
        return norm_backward(_keep(g, self), x, self.ord, _keep(out, self), self.dims)


class NormDim(VectorNorm, name="NormBackward1"):
    """torch.norm's own kernel (at::norm, as pairwise_distance calls it): the same vector norm."""


def norm_dim(x, p, dim, keepdim=False):
    """at::norm(x, p, dim, keepdim): grad_fn NormBackward1 (what PyTorch's composites call)."""
    _float_check("linalg.vector_norm", x, p)
    return NormDim.apply(x, ord=float(p), dims=_dims_arg(x, dim), keepdim=keepdim)


def norm_backward(g, x, p, out, dims):
    """PyTorch's norm_backward: g * d||x||_p / dx, with g and the norm ``out`` keeping the reduced dims
    (size 1); ``dims`` None is all dims. p=0 has no gradient (None, as PyTorch's undefined grad)."""
    if p == 0:
        return None
    xd = x._data
    if p == 1:
        return scale(g, np.sign(xd), x)
    if p in (float("inf"), -float("inf")):
        m = (np.abs(xd) == out._data) * np.sign(xd)
        return scale(g, m / np.maximum(np.abs(m).sum(axis=dims, keepdims=True), 1), x)
    zero = Tensor._make(out._data == 0)
    if p == 2:
        return x * _where(zero, 0.0, g / out)
    if p < 1:
        xs = x.sign() * _where(Tensor._make(xd == 0), 0.0, x.abs().pow(p - 1))
        return xs * g * out.pow(1 - p)
    xs = x.sign() * x.abs().pow(p - 1) if p < 2 else x * x.abs().pow(p - 2)
    return xs * _where(zero, 0.0, g / out.pow(p - 1))


def vector_norm(input, ord=2, dim=None, keepdim=False, *, dtype=None, out=None):
    """The ord-norm of input flattened over dim (all dims by default)."""
    _float_check("linalg.vector_norm", input, ord)
    if dtype is not None:
        input = input.to(dtype)
    return VectorNorm.apply(input, ord=float(ord), dims=_dims_arg(input, dim), keepdim=keepdim)


def norm(input, p="fro", dim=None, keepdim=False, out=None, dtype=None):

    """torch.norm: the vector p-norm over dim (p='fro' is the 2-norm); 'nuc' is not supported."""
    if p == "fro" or p is None:
        p = 2
    if isinstance(p, str):
        if p == "nuc":
            raise NotImplementedError("hookgrad: the nuclear norm is not supported")
        raise RuntimeError(f"norm(): invalid norm type {p}")
    _float_check("linalg.vector_norm", input, p)
    return vector_norm(input, p, dim, keepdim, dtype=dtype)


def norm_method(self, p="fro", dim=None, keepdim=False, dtype=None):
    """Tensor.norm (torch/_tensor.py's order: no out)."""
    return norm(self, p, dim, keepdim, dtype=dtype)



# ------------------------------------------------------------------------- sort / topk
class Sort(Node, name="SortBackward0"):
    """(values, indices) along dim; the gradient goes back to where each value came from."""
    saved_attrs = ("dim", "indices=idx", "self_sym_sizes=in_shape")
    nondiff_outputs = (1,)

    def forward(self, x):
        self.in_shape = x.shape
        if not x.ndim:                      # a 0-dim input: the value itself, index 0
            self.idx = None
            return x.copy(), array_module(x).zeros((), np.int64)
        d = self.dim
        if self.descending:
            idx = np.flip(np.argsort(np.flip(x, d), axis=d, kind="stable"), d)
            idx = x.shape[d] - 1 - idx
        else:
            idx = np.argsort(x, axis=d, kind="stable")
        if self.k is not None:
            idx = np.take(idx, array_module(x).arange(self.k), axis=d)
        self.idx = idx
        return np.take_along_axis(x, idx, d), idx.astype(np.int64)

    def backward(self, g):
        from .index import ScatterAddGrad
        if self.idx is None:
            return g.clone()
        return ScatterAddGrad.apply(g, index=self.idx, dim=self.dim, shape=self.in_shape, unique=True)


class SortStable(Sort, name="SortBackward1"):
    """sort(..., stable=...): PyTorch's other overload (same formula)."""


class Topk(Sort, name="TopkBackward0"):
    pass


def sort(input, dim=-1, descending=False, stable=None):
    """Sorted values and their original indices along dim (always stable here); giving ``stable``
    selects PyTorch's other overload (grad_fn SortBackward1)."""
    d = wrap_dim(dim, input._data.ndim)
    cls = Sort if stable is None else SortStable
    return return_types.sort(*cls.apply(input, dim=d, descending=descending, k=None))


def msort(input):
    """sort along dim 0 (values only)."""
    return sort(input, 0)[0]


def argsort(input, dim=-1, descending=False, stable=False):
    """The indices that sort input along dim."""
    return sort(input, dim, descending, stable)[1]


def topk(input, k, dim=-1, largest=True, sorted=True):
    """The k largest (or smallest) values along dim, with their indices."""
    nd = input._data.ndim
    d = wrap_dim(dim, nd)
    n = input._data.shape[d] if nd else 1
    if not 0 <= k <= n:
        raise RuntimeError("selected index k out of range")
    return return_types.topk(*Topk.apply(input, dim=d, descending=largest, k=k))
