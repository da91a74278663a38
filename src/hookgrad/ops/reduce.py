"""Reductions: sum, mean, prod, var/std, max/min (with indices), logsumexp, norms, cumsum/cumprod."""
import numpy as np

from .. import _dtype as D
from .._tensor import Tensor
from ..autograd.graph import Node, expand_np
from ._dispatch import dims_of, wrap_dim
from .elementwise import scale
from . import elementwise as _E
from . import return_types


def _restore(g, in_shape, dims, keepdim):
    """Give a reduced gradient (Tensor or array) back the reduced dims (as size 1) so it broadcasts."""
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


def _restore_np(g, in_shape, dims, keepdim):
    """Array twin of _restore."""
    if dims and not keepdim:
        shape = list(in_shape)
        for d in dims:
            shape[d] = 1
        return g.reshape(shape)
    return g


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

    def backward_np(self, g):
        return expand_np(_restore_np(g, self.in_shape, self.dims, self.keepdim), self.in_shape)


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

    def backward_np(self, g):
        return expand_np(_restore_np(g / self.n, self.in_shape, self.dims, self.keepdim), self.in_shape)


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


def _dims_arg(input, dim):
    """dim=None or an empty list: all dims; else a sorted tuple of wrapped dims."""
    nd = input._data.ndim
    if dim is None or (isinstance(dim, (list, tuple)) and len(dim) == 0):
        return tuple(range(nd))
    return dims_of(dim, nd) if nd else ()


def _count(shape, dims):
    n = 1
    for d in dims:
        n *= shape[d]
    return n


def _keep(t, node):
    """A reduced tensor (or array) with the reduced dims restored as size 1."""
    return _restore(t, node.in_shape, node.dims, node.keepdim)


def _float_check(name, input):
    if input._data.dtype.kind != "f":
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
        return np.asarray(x.prod(axis=self.dims, keepdims=self.keepdim, dtype=self.dt))

    def backward(self, g):
        x, out = self.saved_tensors
        g, out = _keep(g, self), _keep(out, self)
        if not (x._data == 0).any():
            return g * out / x
        # zeros: the product of all the other elements, one row per element (O(n^2), only then)
        xs = x.reshape(-1) if len(self.dims) != 1 else x.movedim(self.dims[0], -1)
        n = xs.shape[-1]
        eye = Tensor._make(np.eye(n, dtype=bool))
        others = _where(eye, 1.0, xs.unsqueeze(-2).expand(xs.shape[:-1] + (n, n))).prod(-1)
        others = others.reshape(x.shape) if len(self.dims) != 1 else others.movedim(-1, self.dims[0])
        return g * others


class ProdDim(Prod, name="ProdBackward1"):
    pass


def _where(c, a, b):
    from .index import where
    return where(c, a, b)


def prod(input, dim=None, keepdim=False, *, dtype=None):
    """Product of all elements, or along ``dim`` (integers accumulate in int64)."""
    dt = _sum_dtype(input._data, dtype)
    if dim is None:
        return Prod.apply(input, dims=tuple(range(input._data.ndim)), dt=dt)
    d = (wrap_dim(dim, input._data.ndim),) if input._data.ndim else ()
    return ProdDim.apply(input, dims=d, keepdim=keepdim, dt=dt)


# --------------------------------------------------------------------------------- var / std
class Var(Node, name="VarBackward0"):
    save = (0,)
    saved_names = ("self",)
    correction = 1

    def forward(self, x):
        self.in_shape = x.shape
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.asarray(np.var(x, axis=self.dims, ddof=self.correction, keepdims=self.keepdim))

    def backward(self, g):
        (x,) = self.saved_tensors
        n = _count(self.in_shape, self.dims) - self.correction
        return _keep(g, self) * (2.0 / n if n > 0 else float("inf")) * (x - x.mean(self.dims, keepdim=True))


class Std(Node, name="StdBackward0"):
    save = (0, -1)
    saved_names = ("self", "result")
    correction = 1

    def forward(self, x):
        self.in_shape = x.shape
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.asarray(np.std(x, axis=self.dims, ddof=self.correction, keepdims=self.keepdim))

    def backward(self, g):
        x, out = self.saved_tensors
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
    if input._data.dtype.kind != "f":
        raise RuntimeError("std and var only support floating point and complex dtypes")
    return _dims_arg(input, dim), correction, keepdim


def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """Variance over ``dim`` (all dims by default) with Bessel's ``correction`` (default 1)."""
    dims, c, keepdim = _var_args(input, dim, unbiased, keepdim, correction, "var")
    return Var.apply(input, dims=dims, correction=c, keepdim=keepdim)


def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """Standard deviation over ``dim`` with Bessel's ``correction`` (default 1)."""
    dims, c, keepdim = _var_args(input, dim, unbiased, keepdim, correction, "std")
    return Std.apply(input, dims=dims, correction=c, keepdim=keepdim)


def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """(var, mean) over the same dims."""
    dims, c, keepdim = _var_args(input, dim, unbiased, keepdim, correction, "var_mean")
    return Var.apply(input, dims=dims, correction=c, keepdim=keepdim), mean(input, dims, keepdim)


def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """(std, mean) over the same dims."""
    dims, c, keepdim = _var_args(input, dim, unbiased, keepdim, correction, "std_mean")
    return Std.apply(input, dims=dims, correction=c, keepdim=keepdim), mean(input, dims, keepdim)


# ------------------------------------------------------------------------ max / min / amax
class Amax(Node, name="AmaxBackward0"):
    """Max over dims; the gradient is shared evenly among tied maxima."""
    save = (0, -1)
    saved_names = ("self", "result")
    op = staticmethod(np.max)
    keepdim = False

    def forward(self, x):
        self.in_shape = x.shape
        return np.asarray(self.op(x, axis=self.dims, keepdims=self.keepdim))

    def backward(self, g):
        x, out = self.saved_tensors
        mask = x._data == _restore(out._data, self.in_shape, self.dims, self.keepdim)
        mask = mask / mask.sum(axis=self.dims, keepdims=True)
        return scale(_keep(g, self), mask, x)


class Amin(Amax, name="AminBackward0"):
    op = staticmethod(np.min)


class MaxAll(Amax, name="MaxBackward1"):
    pass


class MinAll(Amin, name="MinBackward1"):
    pass


class MaxDim(Node, name="MaxBackward0"):
    """(values, indices) along one dim; the gradient goes to the selected index."""
    nondiff_outputs = (1,)
    arg = staticmethod(np.argmax)
    keepdim = False

    def forward(self, x):
        self.in_shape = x.shape
        d = self.dim
        idx = self.arg(x, axis=d, keepdims=True)
        self.idx = idx
        vals = np.take_along_axis(x, idx, d)
        if not self.keepdim:
            vals, idx = vals.squeeze(d), idx.squeeze(d)
        return vals, idx

    def backward(self, g, _):
        from .index import ScatterAddGrad
        g = g if self.keepdim else g.unsqueeze(self.dim)
        return ScatterAddGrad.apply(g, index=self.idx, dim=self.dim, shape=self.in_shape, unique=True)


class MinDim(MaxDim, name="MinBackward0"):
    arg = staticmethod(np.argmin)


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

    def fn(input, dim=None, keepdim=False, *, out=None):
        if isinstance(dim, Tensor):
            return binary_fn(input, dim)
        if dim is None:
            if input._data.size == 0:
                raise RuntimeError(f"{name}(): Expected reduction dim to be specified for input.numel() == 0. Specify "
                                   "the reduction dim with the 'dim' argument.")
            return all_cls.apply(input, dims=tuple(range(input._data.ndim)))
        d = _reduce_dim(name, input, dim)
        if not input._data.ndim:
            return rt(dim_cls.apply(input.reshape(1), dim=0, keepdim=False)[0].reshape(()), Tensor._make(np.asarray(0)))
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
            r = np.asarray(npfn(x))
            return Tensor._make(r.reshape((1,) * x.ndim) if keepdim else r)
        d = _reduce_dim(name, input, dim)
        if not x.ndim:
            return Tensor._make(np.asarray(0))
        return Tensor._make(npfn(x, axis=d, keepdims=keepdim))
    fn.__name__ = name
    fn.__doc__ = f"Index of the first {name[3:]}imum (of the flattened tensor when dim is None)."
    return fn


argmax = _arg("argmax", np.argmax)
argmin = _arg("argmin", np.argmin)


def aminmax(input, *, dim=None, keepdim=False):
    """(min, max) named tuple over dim (all by default)."""
    return return_types.aminmax(amin(input, () if dim is None else dim, keepdim),
                                amax(input, () if dim is None else dim, keepdim))


# --------------------------------------------------------------------------------- logsumexp
class Logsumexp(Node, name="LogsumexpBackward0"):
    save = (0, -1)
    saved_names = ("self", "result")
    keepdim = False

    def forward(self, x):
        self.in_shape = x.shape
        if x.size == 0:
            return np.log(np.sum(np.exp(x), axis=self.dims, keepdims=self.keepdim))
        m = np.max(x, axis=self.dims, keepdims=True)
        m = np.where(np.isinf(m), 0, m)
        with np.errstate(divide="ignore"):
            r = np.log(np.sum(np.exp(x - m), axis=self.dims, keepdims=True)) + m
        return r if self.keepdim else r.squeeze(self.dims)

    def backward(self, g):
        x, out = self.saved_tensors
        return _keep(g, self) * (x - _keep(out, self)).exp()


def logsumexp(input, dim, keepdim=False):
    """log(sum(exp(input))) over dim, computed stably."""
    if input._data.dtype.kind != "f":
        input = input.to(D.get_default_dtype())
    return Logsumexp.apply(input, dims=_dims_arg(input, dim), keepdim=keepdim)


# ---------------------------------------------------------------------------- cumsum / cumprod
class Cumsum(Node, name="CumsumBackward0"):
    dt = None

    def forward(self, x):
        return np.cumsum(x, axis=self.dim, dtype=self.dt)

    def backward(self, g):
        d = self.dim
        return g.flip(d).cumsum(d).flip(d)


def cumsum(input, dim, *, dtype=None):
    """Cumulative sum along dim (integers accumulate in int64)."""
    d = wrap_dim(dim, input._data.ndim)
    if not input._data.ndim:
        return input.reshape(1).cumsum(0, dtype=dtype).reshape(())
    return Cumsum.apply(input, dim=d, dt=_sum_dtype(input._data, dtype))


class Cumprod(Node, name="CumprodBackward0"):
    save = (0, -1)
    saved_names = ("self", "result")
    dt = None

    def forward(self, x):
        return np.cumprod(x, axis=self.dim, dtype=self.dt)

    def backward(self, g):
        x, out = self.saved_tensors
        d = self.dim
        if not (x._data == 0).any():
            return (g * out).flip(d).cumsum(d).flip(d) / x
        # zeros: grad_i = sum_{j >= i} g_j prod_{k <= j, k != i} x_k, via an n x n table (only then)
        xs, gs = x.movedim(d, -1), g.movedim(d, -1)
        n = xs.shape[-1]
        eye = Tensor._make(np.eye(n, dtype=bool))
        table = _where(eye, 1.0, xs.unsqueeze(-2).expand(xs.shape[:-1] + (n, n))).cumprod(-1)
        upper = Tensor._make(np.triu(np.ones((n, n), dtype=x._data.dtype)))
        return (table * upper * gs.unsqueeze(-2)).sum(-1).movedim(-1, d)


def cumprod(input, dim, *, dtype=None):
    """Cumulative product along dim."""
    d = wrap_dim(dim, input._data.ndim)
    if not input._data.ndim:
        return input.reshape(1).cumprod(0, dtype=dtype).reshape(())
    return Cumprod.apply(input, dim=d, dt=_sum_dtype(input._data, dtype))


# ------------------------------------------------------------------------------------- norms
class VectorNorm(Node, name="LinalgVectorNormBackward0"):
    save = (0, -1)
    saved_names = ("self", "result")
    ord = 2.0
    keepdim = False

    def forward(self, x):
        self.in_shape = x.shape
        p, ax, k = self.ord, self.dims, self.keepdim
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
        return np.asarray(r, dtype=x.dtype)

    def backward(self, g):
        x, out = self.saved_tensors
        p = self.ord
        g, out = _keep(g, self), _keep(out, self)
        if p == 0:
            return g * 0
        if p == 1:
            return scale(g, np.sign(x._data), x)
        if p in (float("inf"), -float("inf")):
            m = (np.abs(x._data) == out._data) * np.sign(x._data)
            return scale(g, m / np.maximum(np.abs(m).sum(axis=self.dims, keepdims=True), 1), x)
        zero = out._data == 0
        if p == 2:
            return x * _where(Tensor._make(zero), 0.0, g / out)
        return x * x.abs().pow(p - 2) * _where(Tensor._make(zero), 0.0, g / out.pow(p - 1))


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None, out=None):
    """The ord-norm of x flattened over dim (all dims by default)."""
    _float_check("linalg.vector_norm", x)
    if dtype is not None:
        x = x.to(dtype)
    return VectorNorm.apply(x, ord=float(ord), dims=_dims_arg(x, dim), keepdim=keepdim)


def norm(input, p="fro", dim=None, keepdim=False, dtype=None):
    """torch.norm: the vector p-norm over dim (p='fro' is the 2-norm); 'nuc' is not supported."""
    if p == "fro" or p is None:
        p = 2
    if isinstance(p, str):
        if p == "nuc":
            raise NotImplementedError("hookgrad: the nuclear norm is not supported")
        raise RuntimeError(f"norm(): invalid norm type {p}")
    if input._data.dtype.kind != "f":
        raise RuntimeError("linalg.vector_norm: Expected a floating point or complex tensor as input. Got "
                           f"{_legacy_short(input.dtype)}")
    return vector_norm(input, p, dim, keepdim, dtype=dtype)


# ------------------------------------------------------------------------- sort / topk
class Sort(Node, name="SortBackward0"):
    """(values, indices) along dim; the gradient goes back to where each value came from."""
    nondiff_outputs = (1,)

    def forward(self, x):
        self.in_shape = x.shape
        d = self.dim
        if self.descending:
            idx = np.flip(np.argsort(np.flip(x, d), axis=d, kind="stable"), d)
            idx = x.shape[d] - 1 - idx
        else:
            idx = np.argsort(x, axis=d, kind="stable")
        if self.k is not None:
            idx = np.take(idx, np.arange(self.k), axis=d)
        self.idx = idx
        return np.take_along_axis(x, idx, d), idx.astype(np.int64)

    def backward(self, g, _):
        from .index import ScatterAddGrad
        return ScatterAddGrad.apply(g, index=self.idx, dim=self.dim, shape=self.in_shape, unique=True)


class Topk(Sort, name="TopkBackward0"):
    pass


def sort(input, dim=-1, descending=False, stable=False):
    """Sorted values and their original indices along dim (stable)."""
    if not input._data.ndim:
        return return_types.sort(input.clone(), Tensor._make(np.asarray(0)))
    d = wrap_dim(dim, input._data.ndim)
    return return_types.sort(*Sort.apply(input, dim=d, descending=descending, k=None))


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
    if not nd:
        return return_types.topk(input.clone(), Tensor._make(np.asarray(0)))
    return return_types.topk(*Topk.apply(input, dim=d, descending=largest, k=k))
