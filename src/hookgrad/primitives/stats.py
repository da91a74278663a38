"""Statistics, sets, histograms, distances and the index/scatter reductions.

nansum/nanmean, quantile/nanquantile, logcumsumexp, cov/corrcoef; unique, unique_consecutive, isin,
bincount, histc/histogram, searchsorted/bucketize, count_nonzero, nonzero_static; take_along_dim,
index_fill, index_reduce, scatter_reduce, put; renorm, dist, cdist, pdist, cosine_similarity,
pairwise_distance. Composites are built from PyTorch's own composition (so grad_fn names match).
"""
import builtins
import math
import warnings

import numpy as np

from .. import _dtype as D
from .._errors import no_bf16_kernel
from .._tensor import Tensor
from .._array import array_module, module_of
from ..autograd.node import Node
from ..autograd.grad_mode import no_grad, _state as _grad_state
from ._dispatch import dims_of, wrap_dim
from . import reduce as R, index as I, shape as S, elementwise as E, return_types
from ._inplace import inplace_apply

_T = Tensor._make
_INF = float("inf")


def _short(dt):
    """PyTorch's scalar type name (Float, Long, ...) of a NumPy dtype."""
    return I._TNAME.get(np.dtype(dt).name, np.dtype(dt).name)


def _not_impl(kernel, a):
    return NotImplementedError(f'"{kernel}" not implemented for \'{_short(a.dtype)}\'')


def _const(a):
    return _T(array_module(a).ascontiguousarray(a))


# ------------------------------------------------------------------------------ nansum / nanmean
class Nansum(Node, name="NansumBackward0"):
    """Sum ignoring NaNs; the gradient is grad where the input is not NaN (no link to the input)."""
    save = (0,)
    saved_names = ("self",)
    keepdim = False
    dt = None

    def forward(self, x):
        self.in_shape = x.shape
        return array_module(x).asarray(np.nansum(x, axis=self.dims, keepdims=self.keepdim, dtype=self.dt))

    def backward(self, g):
        (x,) = self.saved_values
        g = R._restore(g, self.in_shape, self.dims, self.keepdim).expand(self.in_shape)
        return E.scale(g, ~np.isnan(x._data))


def nansum(input, dim=None, keepdim=False, *, dtype=None):
    """Sum over dim (all dims by default), treating NaN as zero (integers accumulate in int64)."""
    return Nansum.apply(input, dims=R._dims_arg(input, dim), keepdim=keepdim, dt=R._sum_dtype(input._data, dtype))


def nanmean(input, dim=None, keepdim=False, *, dtype=None):
    """Mean over dim of the non-NaN elements: nansum / count, as PyTorch composes it."""
    if not D.is_floating(input._data.dtype):
        raise RuntimeError("nanmean(): expected input to have floating point or complex dtype but got "
                           f"{_short(input._data.dtype)}")
    dims = R._dims_arg(input, dim)
    x = input._data
    count = _T(array_module(x).asarray(np.sum(~np.isnan(x), axis=dims, keepdims=keepdim), np.int64))
    return E.div(nansum(input, dim, keepdim, dtype=dtype), count)


# ------------------------------------------------------------------------------ logcumsumexp
class Logcumsumexp(Node, name="LogcumsumexpBackward0"):
    save = (0, -1)
    saved_names = ("self", "result")

    def forward(self, x):
        if not D.is_floating(x.dtype):
            raise _not_impl("logcumsumexp_out_cpu", x)
        return np.logaddexp.accumulate(x, axis=self.dim) if x.ndim else x.copy()

    def backward(self, g):
        # PyTorch's logcumsumexp_backward: positive and negative parts of grad in log space
        x, out = self.saved_values
        d = self.dim
        if g._data.ndim == 0 or g._data.size == 0:
            return g
        lowest = np.finfo(g._data.dtype).min

        def rev(t):
            return t.flip(d).logcumsumexp(d).flip(d)
        log_abs = g.abs().log()
        pos = I.where(_const(g._data > 0), log_abs, lowest)
        neg = I.where(_const(g._data < 0), log_abs, lowest)
        return (rev(pos - out) + x).exp() - (rev(neg - out) + x).exp()


def logcumsumexp(input, dim):
    """log(cumsum(exp(input))) along dim, computed stably."""
    return Logcumsumexp.apply(input, dim=wrap_dim(dim, input._data.ndim))


# ------------------------------------------------------------------------------ quantile
_INTERP = ("linear", "lower", "higher", "midpoint", "nearest")


class _UnsqueezeInplace(S.Unsqueeze, name="UnsqueezeBackward1"):
    """unsqueeze_ of a fresh result inside a composite (quantile)."""


class _TransposeInplace(S.Transpose, name="TransposeBackward1"):
    """transpose_ of a fresh result inside a composite (quantile)."""


def _quantile(name, input, q, dim, keepdim, interpolation, ignore_nan):
    x = input._data
    if isinstance(q, Tensor):
        qa = q._data
    else:
        if not 0 <= q <= 1:
            raise RuntimeError(f"{name}() q must be in the range [0, 1] but got {q}")
        qa = None
    if x.size == 0:
        raise RuntimeError(f"{name}() input tensor must be non-empty")
    if qa is not None and qa.ndim > 1:
        raise RuntimeError(f"{name}() q must be a scalar or 1D tensor")
    if x.dtype not in (np.float32, np.float64):
        raise RuntimeError(f"{name}() input tensor must be either float or double dtype")
    if qa is not None and qa.dtype != x.dtype:
        raise RuntimeError(f"{name}() q tensor must be same dtype as the input tensor")
    if interpolation not in _INTERP:
        raise RuntimeError(f"{name}() interpolation must be one of linear, lower, higher, midpoint or nearest, "
                           f"but got {interpolation}")
    xp = array_module(x)
    if qa is None:
        qa = xp.asarray(q, x.dtype)
    if not ((qa >= 0) & (qa <= 1)).all():
        raise RuntimeError(f"{name}() q values must be in the range [0, 1]")
    nd = x.ndim
    wd = wrap_dim(dim, nd) if dim is not None else None
    if dim is not None and nd:
        out_shape = list(x.shape)
        if keepdim:
            out_shape[wd] = 1
        else:
            del out_shape[wd]
    else:
        out_shape = [1] * nd if keepdim else []
    if dim is None:
        srt = R.sort(input.flatten())[0]
    elif wd == nd - 1 or nd == 0:
        srt = R.sort(input)[0]
    else:
        srt = R.sort(input.unsqueeze(-1).transpose(wd, -1))[0]
    n = srt._data.shape[-1] if srt._data.ndim else 1
    in_shape = out_shape + [n]
    srt = srt.view(in_shape)
    sd = srt._data
    dt = sd.dtype.type
    qv = qa.reshape(-1) if qa.ndim else qa
    nan = np.isnan(sd)
    if ignore_nan:
        ranks = qv * ((~nan).sum(-1, keepdims=True) - 1).astype(sd.dtype)
        ranks = np.where(ranks < 0, dt(0), ranks)
    else:
        last = n - 1
        ranks = qv * dt(last)
        ranks, anynan = np.broadcast_arrays(ranks, nan.any(-1, keepdims=True))
        ranks = np.where(anynan, dt(last), ranks)
    ranks = xp.asarray(ranks, sd.dtype)
    if interpolation == "lower":
        ranks = np.floor(ranks)
    elif interpolation == "higher":
        ranks = np.ceil(ranks)
    elif interpolation == "nearest":
        ranks = np.round(ranks)
    below = ranks.astype(np.int64)
    vals = I.Gather.apply(srt, index=below, dim=srt._data.ndim - 1)
    if interpolation in ("linear", "midpoint"):
        w = xp.full_like(ranks, 0.5) if interpolation == "midpoint" else (ranks - below).astype(ranks.dtype)
        above = np.ceil(ranks).astype(np.int64)
        vals = E.lerp(vals, I.Gather.apply(srt, index=above, dim=srt._data.ndim - 1), _const(w))
    vs = vals._data.shape
    if qa.ndim == 0:
        return S.SqueezeInplace.apply(vals, shape=vs[:-1])
    vals = _UnsqueezeInplace.apply(vals, shape=(1,) + vs)
    vals = _TransposeInplace.apply(vals, d0=0, d1=len(vs))
    ts = vals._data.shape
    return S.SqueezeInplace.apply(vals, shape=ts[:-1])


def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    """The q-th quantiles of input (flattened, or along dim), interpolating between sorted values."""
    return _quantile("quantile", input, q, dim, keepdim, interpolation, False)


def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    """quantile ignoring NaN values (a slice of NaNs only gives NaN)."""
    return _quantile("nanquantile", input, q, dim, keepdim, interpolation, True)


# ------------------------------------------------------------------------------ cov / corrcoef
def _check_cov_weights(t, name, kinds, kind_text, nobs):
    """cov()'s checks of ``fweights`` (integral) and ``aweights`` (floating point), in PyTorch's order."""
    a = t._data
    if a.ndim > 1:
        raise RuntimeError(f"cov(): expected {name} to have one or fewer dimensions but got {name} with "
                           f"{a.ndim} dimensions")
    if a.dtype.kind not in kinds:
        raise RuntimeError(f"cov(): expected {name} to have {kind_text} dtype but got {name} with "
                           f"{_short(a.dtype)} dtype")
    if a.size != nobs:
        raise RuntimeError(f"cov(): expected {name} to have the same numel as there are observations in the "
                           f"input but got {a.size} != {nobs}")
    if nobs and a.min() < 0:
        raise RuntimeError(f"cov(): {name} cannot be negative")


def cov(input, *, correction=1, fweights=None, aweights=None):
    """Covariance of the rows (variables) over the columns (observations), as PyTorch composes it."""
    x = input._data
    xp = array_module(x)
    if x.ndim > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an input with {x.ndim} "
                           "dimensions")
    if x.dtype == np.bool_:
        raise RuntimeError("cov(): bool dtype is not supported for input")
    inp = input.view(1, -1) if x.ndim < 2 else input
    nobs = inp._data.shape[1]
    w = None
    if fweights is not None:
        _check_cov_weights(fweights, "fweights", "iu", "integral", nobs)
        w = fweights
    if aweights is not None:
        _check_cov_weights(aweights, "aweights", "f", "floating point", nobs)
        w = aweights if w is None else w * aweights
    if w is not None:
        w_sum = w.sum()
        if not bool(w_sum._data != 0):
            raise RuntimeError("cov(): weights sum to zero, can't be normalized")
    else:
        w_sum = _T(xp.asarray(nobs, np.int64))
    avg = (inp * w if w is not None else inp).sum(1) / w_sum
    if w is None:
        norm = _T(xp.asarray(nobs - correction, np.int64))
    elif correction == 0:
        norm = w_sum
    elif aweights is None:
        norm = w_sum - correction
    elif fweights is None and nobs == 1 and correction == 1:
        norm = _T(xp.asarray(0, np.int64))
    else:
        norm = w_sum - correction * (w * aweights).sum() / w_sum
    if bool(norm._data <= 0):
        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less than the number of "
                      "observations.", UserWarning, stacklevel=2)
        norm = _T(array_module(norm._data).zeros((), norm._data.dtype))
    if nobs == 1 and (fweights is None) != (aweights is None):
        inp = inp * 0       # (PyTorch zeroes the input in place: one observation has no spread)
        if not D.is_floating(inp._data.dtype):
            inp = inp.float()
    else:
        inp = inp - avg.unsqueeze(1)
    c = inp.mm((inp * w if w is not None else inp).t())
    return E.div(c, norm).squeeze()


def corrcoef(input):
    """Pearson correlation coefficients of the rows: cov normalised by the standard deviations, clipped."""
    if input._data.ndim > 2:
        raise RuntimeError("corrcoef(): expected input to have two or fewer dimensions but got an input with "
                           f"{input._data.ndim} dimensions")
    c = cov(input)
    if c._data.ndim == 0:
        return c / c
    sd = c.diagonal().sqrt()
    c = c / sd.view(-1, 1)
    c = c / sd.view(1, -1)
    return c.clip(-1, 1)


# ------------------------------------------------------------------------------ sets (no gradient)
class _Unique(Node, name="Unique2Backward0"):
    """A set operation: values (with a grad_fn whose backward raises, as PyTorch's), inverse, counts."""
    nondiff_outputs = (1, 2)
    op = "_unique2"

    def forward(self, x):
        return self.fn(x)

    def backward(self, g):
        raise NotImplementedError(f"the derivative for '{self.op}' is not implemented.")


class _UniqueDim(_Unique, name="UniqueDimBackward0"):
    op = "unique_dim"


class _UniqueConsecutive(_Unique, name="UniqueConsecutiveBackward0"):
    op = "unique_consecutive"


def _set_result(cls, input, fn, return_inverse, return_counts):
    vals, inv, cnt = cls.apply(input, fn=fn)
    if return_inverse or return_counts:
        return (vals,) + ((inv,) if return_inverse else ()) + ((cnt,) if return_counts else ())
    return vals


def _unique_np(x, dim):
    if dim is None:
        vals, inv, cnt = np.unique(x.reshape(-1), return_inverse=True, return_counts=True, equal_nan=False)
        return vals, inv.reshape(x.shape).astype(np.int64), cnt.astype(np.int64)
    if x.shape[dim] == 0:
        xp = array_module(x)
        return x.copy(), xp.zeros(0, np.int64), xp.zeros(0, np.int64)
    vals, inv, cnt = np.unique(x, return_inverse=True, return_counts=True, axis=dim)
    return vals, inv.reshape(-1).astype(np.int64), cnt.astype(np.int64)


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """The unique elements (or slices along dim), sorted, optionally with inverse indices and counts."""
    if dim is None:
        return _set_result(_Unique, input, lambda x: _unique_np(x, None), return_inverse, return_counts)
    d = wrap_dim(dim, input._data.ndim)
    return _set_result(_UniqueDim, input, lambda x: _unique_np(x, d), return_inverse, return_counts)


def _unique(input, sorted=True, return_inverse=False):
    """torch._unique: (the unique elements, sorted; their inverse indices, or an empty int64 tensor)."""
    out, inv = unique(input, sorted, return_inverse=True)
    return out, inv if return_inverse else _T(array_module(input._data).zeros(0, np.int64))


def _unique2(input, sorted=True, return_inverse=False, return_counts=False):
    """torch._unique2: (the unique elements; their inverse indices, or an empty int64 tensor; their counts, or
    an empty int64 tensor)."""
    vals, inv, cnt = _Unique.apply(input, fn=lambda x: _unique_np(x, None))
    xp = array_module(input._data)
    return vals, inv if return_inverse else _T(xp.zeros(0, np.int64)), cnt if return_counts else _T(xp.zeros(0, np.int64))


def unique_dim(input, dim, sorted=True, return_inverse=False, return_counts=False):
    """torch._VF.unique_dim: (the unique slices along ``dim``, their inverse indices, their counts), always all
    three (PyTorch computes them whatever the flags say)."""
    d = wrap_dim(dim, input._data.ndim)
    return _UniqueDim.apply(input, fn=lambda x: _unique_np(x, d))


def _unique_consecutive_np(x, dim):
    if dim is None:
        shape, x = x.shape, x.reshape(-1)
        rows = x.reshape(-1, 1)
    else:
        shape = None
        rows = np.moveaxis(x, dim, 0).reshape(x.shape[dim], -1)
    n = rows.shape[0]
    start = array_module(x).ones(n, bool)
    if n > 1:
        start[1:] = (rows[1:] != rows[:-1]).any(axis=1)
    pos = np.flatnonzero(start)
    inv = (np.cumsum(start) - 1).astype(np.int64)
    cnt = np.diff(np.append(pos, n)).astype(np.int64)
    vals = x[pos] if dim is None else np.take(x, pos, axis=dim)
    return vals, (inv.reshape(shape) if shape is not None else inv), cnt


def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    """Collapse each run of equal consecutive elements (or slices along dim) to one."""
    d = None if dim is None else wrap_dim(dim, input._data.ndim)
    return _set_result(_UniqueConsecutive, input, lambda x: _unique_consecutive_np(x, d), return_inverse,
                       return_counts)


def _as_tensor(v):
    if isinstance(v, Tensor):
        return v
    from .._creation import tensor
    return tensor(v)


def isin(elements=None, test_elements=None, *, assume_unique=False, invert=False, element=None, test_element=None):
    """Whether each element of ``elements`` is in ``test_elements`` (either may be a number: PyTorch's overloads
    then name it ``element`` / ``test_element``)."""
    elements = element if elements is None else elements
    test_elements = test_element if test_elements is None else test_elements
    e, t = _as_tensor(elements)._data, _as_tensor(test_elements)._data
    return _T(module_of(e, t).asarray(np.isin(e, t, invert=invert)))


def count_nonzero(input, dim=None):
    """Number of non-zero elements over dim (all by default), int64."""
    x = input._data
    if dim is None:
        return _T(array_module(x).asarray(np.count_nonzero(x), np.int64))
    if isinstance(dim, (list, tuple)):
        ds = [wrap_dim(d, x.ndim) for d in dim]
        for d in ds:
            if ds.count(d) > 1:
                raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
    dims = dims_of(dim, x.ndim) if x.ndim else ()
    return _T(array_module(x).asarray(np.count_nonzero(x, axis=dims), np.int64))


def nonzero_static(input, *, size, fill_value=-1):
    """nonzero() padded with fill_value (or truncated) to exactly ``size`` rows."""
    if not isinstance(size, int) or size < 0:
        raise RuntimeError("nonzero_static: 'size' must be an non-negative integer")
    x = input._data
    xp = array_module(x)
    nz = np.stack(np.nonzero(x), axis=1).astype(np.int64) if x.ndim else xp.zeros((int(bool(x)), 0), np.int64)
    out = xp.full((size, x.ndim), fill_value, np.int64)
    k = builtins.min(size, nz.shape[0])
    out[:k] = nz[:k]
    return _T(out)


def bincount(input, weights=None, minlength=0):
    """Count of each non-negative integer in a 1-D tensor (or the sum of its weights)."""
    x = input._data
    if x.dtype.kind not in "iu":
        raise _not_impl("bincount_cpu", x)
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    if x.ndim != 1 or (x.size and x.min() < 0):
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if weights is None:
        return _T(np.bincount(x, minlength=minlength).astype(np.int64))
    w = weights._data
    if w.ndim != 1 or w.shape[0] != x.shape[0]:
        raise RuntimeError("weights should be 1-d and have the same length as input")
    dt = w.dtype if D.is_floating(w.dtype) else np.dtype(np.float64)
    return _T(np.bincount(x, weights=w.astype(np.float64), minlength=minlength).astype(dt))


def _edges(x, bins, lo, hi, name):
    if lo > hi:
        raise RuntimeError(f"{name}: min should not exceed max, but got min {lo:g} max {hi:g} for dimension 0")
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    return array_module(x).linspace(lo, hi, bins + 1, dtype=np.float64).astype(x.dtype)


def histc(input, bins=100, min=0, max=0):
    """Histogram with ``bins`` equal-width bins between min and max (the data's range if both are 0)."""
    x = input._data
    if not D.is_floating(x.dtype):
        raise _not_impl("histogram_cpu", x)
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")
    if min > max:
        raise RuntimeError("torch.histc: max must be larger than min")
    lo, hi = float(min), float(max)
    if lo == hi and x.size:
        lo, hi = float(x.min()), float(x.max())
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise RuntimeError(f"torch.histc: range of [{lo:g}, {hi:g}] is not finite".replace("nan", "-nan"))
    edges = _edges(x, bins, lo, hi, "torch.histogramdd")
    hist, _ = np.histogram(x.reshape(-1), edges)
    return _T(hist.astype(x.dtype))


def histogram(input, bins, *, range=None, weight=None, density=False):
    """(hist, bin_edges): bins a number of equal bins over range (the data's by default) or the edges."""
    x = input._data
    if not D.is_floating(x.dtype):
        raise _not_impl("histogramdd", x)
    if isinstance(bins, Tensor):
        edges = bins._data.astype(x.dtype)
    else:
        if bins <= 0:
            raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")
        if range is not None:
            lo, hi = float(range[0]), float(range[1])
        elif x.size:
            lo, hi = float(x.min()), float(x.max())
        else:
            lo, hi = 0.0, 0.0
        edges = _edges(x, bins, lo, hi, "torch.histogramdd")
    w = None if weight is None else weight._data.reshape(-1)
    hist, _ = np.histogram(x.reshape(-1), edges.astype(np.float64), weights=w)
    hist = hist.astype(x.dtype)
    if density:
        hist = (hist / (hist.sum() * np.diff(edges))).astype(x.dtype)
    return return_types.histogram(_T(hist), _T(edges.copy()))


def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None, sorter=None, out=None):
    """Indices where the values would be inserted into the (innermost-dim) sorted sequence."""
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but got {side}")
        if right and side == "left":
            raise RuntimeError("torch.searchsorted(): side and right can't be set to opposites, got side of left "
                               "while right was True")
        right = side == "right"
    seq = sorted_sequence._data
    scalar = not isinstance(input, Tensor)
    xp = array_module(seq)
    v = xp.asarray(input) if scalar else input._data
    if sorter is not None:
        seq = np.take_along_axis(seq, sorter._data, axis=-1)
    if seq.ndim != 1 and seq.shape[:-1] != v.shape[:-1]:
        raise RuntimeError("torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 dimensions "
                           "of boundaries tensor and input value tensor must match, but we got boundaries tensor "
                           f"{list(seq.shape)} and input value tensor {list(v.shape)}")
    how = "right" if right else "left"
    if seq.ndim == 1:
        res = np.searchsorted(seq, v, side=how)
    else:
        rows, vals = seq.reshape(-1, seq.shape[-1]), v.reshape(-1, v.shape[-1])
        res = np.stack([np.searchsorted(r, q, side=how) for r, q in zip(rows, vals)]).reshape(v.shape)
    return _T(xp.asarray(res, np.int32 if out_int32 else np.int64))


def bucketize(input, boundaries, *, out_int32=False, right=False):
    """The bucket of each value among the 1-D sorted boundaries."""
    if boundaries._data.ndim != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim({boundaries._data.ndim})")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


# ------------------------------------------------------------------------------ take_along_dim
def take_along_dim(input, indices, dim=None):
    """Pick values along dim at indices (broadcast against input), or from the flattened input."""
    if indices._data.dtype != np.int64:
        raise RuntimeError(f"torch.take_along_dim(): dtype of indices should be Long but got {_short(indices._data.dtype)}")
    if dim is None:
        return I.gather(input.view(-1), 0, indices.view(-1))
    xs, ids = input._data.shape, indices._data.shape
    if len(xs) != len(ids):
        raise RuntimeError("torch.take_along_dim(): input and indices should have the same number of dimensions, "
                           f"but got {len(xs)} dimensions for input, and {len(ids)} dimensions for indices")
    d = wrap_dim(dim, len(xs))
    s = list(xs)
    s[d] = ids[d]
    idx = S.broadcast_to(indices, _bshape(s, ids))
    s = list(ids)
    s[d] = xs[d]
    x = S.broadcast_to(input, _bshape(s, xs))
    return I.gather(x, d, idx)


def _bshape(a, b):
    from ._dispatch import broadcast_error
    try:
        return np.broadcast_shapes(tuple(a), tuple(b))
    except ValueError:
        raise broadcast_error(tuple(a), tuple(b)) from None


# ------------------------------------------------------------------------------ index_fill
class IndexFill(Node, name="IndexFillBackward0"):
    """x with the slices at index along dim set to a number (gradient: grad with those slices zeroed)."""

    def forward(self, x, *v):
        out = x.copy()
        out[(slice(None),) * self.dim + (self.index,)] = v[0] if v else self.value
        return out

    def backward(self, g):
        nf = self.next_functions
        gx = IndexFill.apply(g, index=self.index, dim=self.dim, value=0) if nf[0][0] is not None else None
        gv = None
        if len(nf) > 1 and nf[1][0] is not None:
            gv = I.IndexSelect.apply(g, index=self.index, dim=self.dim).sum()
        return gx, gv


class IndexFillT(IndexFill, name="IndexFillBackward1"):
    pass


def index_fill(input, dim, index, value):
    """A copy of input with the slices at index along dim filled with value (a number or 0-dim tensor)."""
    ia = index._data
    if ia.dtype != np.int64:
        raise IndexError("index_fill_(): Expected dtype int64 for index.")
    if ia.ndim > 1:
        raise RuntimeError("Index has to be a vector/scalar")
    x = input._data
    d = wrap_dim(dim, builtins.max(x.ndim, 1))
    n = x.shape[d] if x.ndim else 1
    ia = ia.reshape(-1)
    bad = ia[(ia < -n) | (ia >= n)]
    if bad.size:
        raise IndexError(f"index {int(bad[0])} is out of bounds for dimension {d} with size {n}")
    ia = np.where(ia < 0, ia + n, ia)
    if not x.ndim:
        return index_fill(input.view(1), 0, _T(ia), value).view(())
    if isinstance(value, Tensor):
        if value._data.ndim:
            raise RuntimeError("index_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                               f"{value._data.ndim} dimension(s).")
        if value._data.dtype != x.dtype:
            value = value.to(input.dtype)
        return IndexFillT.apply(input, value, index=ia, dim=d)
    return IndexFill.apply(input, index=ia, dim=d, value=value)


def index_fill_(self, dim, index, value):
    return I.via_(self, lambda t: index_fill(t, dim, index, value), value, cls=I._ViaShared)


# ------------------------------------------------------------------------------ scatter_reduce / index_reduce
_REDUCE = ("sum", "prod", "mean", "amax", "amin")
_ALIAS = {"max": "amax", "min": "amin"}      # PyTorch's forward accepts these; its backward refuses them


def _scatter_reduce_np(x, dim, index, src, reduce, include_self):
    out = x.copy()
    pos = I._along(index, dim)
    s = src[tuple(slice(0, n) for n in index.shape)]
    if not include_self and index.size:
        ident = {"sum": 0, "mean": 0, "prod": 1}.get(reduce)
        if ident is None:
            big = np.inf if D.is_floating(x.dtype) else (np.iinfo(x.dtype).max if x.dtype.kind != "b" else True)
            ident = -big if reduce == "amax" and D.is_floating(x.dtype) else \
                (np.iinfo(x.dtype).min if reduce == "amax" and x.dtype.kind in "iu" else big)
        out[pos] = ident
    if reduce in ("sum", "mean"):
        array_module(out).add.at(out, pos, s)
    elif reduce == "prod":
        array_module(out).multiply.at(out, pos, s)
    elif reduce == "amax":
        array_module(out).maximum.at(out, pos, s)
    else:
        array_module(out).minimum.at(out, pos, s)
    if reduce == "mean":
        xp = array_module(x)
        cnt = xp.ones(x.shape, np.int64) if include_self else xp.zeros(x.shape, np.int64)
        array_module(cnt).add.at(cnt, pos, 1)
        cnt = np.maximum(cnt, 1)
        out = (out / cnt).astype(x.dtype) if D.is_floating(x.dtype) else np.floor_divide(out, cnt).astype(x.dtype)
    return out


class ScatterReduce(Node, name="ScatterReduceBackward0"):
    """x with src reduced in at index along dim (sum, prod, mean, amax, amin; include_self or not)."""
    save = (0, 1, -1)
    saved_names = ("self", "src", "result")

    def forward(self, x, src):
        return _scatter_reduce_np(x, self.dim, self.index, src, _ALIAS.get(self.reduce, self.reduce),
                                  self.include_self)

    def backward(self, g):
        # PyTorch's scatter_reduce_backward, written with gather/scatter_add on the full index
        x, src, out = self.saved_values
        dim, index, red = self.dim, self.index, self.reduce
        if red not in _REDUCE:
            raise RuntimeError(f"Expected 'reduce' to be one of 'sum', 'prod', 'mean', 'amax', 'amin' but got {red}.")
        if src._data.shape != index.shape:
            src = src[tuple(slice(0, n) for n in index.shape)]
        sd, xd = src._data, x._data
        pos = I._along(index, dim)

        def gather(t):
            return I.Gather.apply(t, index=index, dim=dim)
        if red == "sum":
            gx, gs = g, gather(g)
        elif red == "mean":
            xp = array_module(xd)
            n = xp.ones(xd.shape, g._data.dtype) if self.include_self else xp.zeros(xd.shape, g._data.dtype)
            array_module(n).add.at(n, pos, 1)
            n[n == 0] = 1
            gx, gs = g / _const(n), gather(g) / _const(n[pos])
        elif red in ("amax", "amin"):
            self_is = (xd == out._data).astype(xd.dtype)
            src_is = (sd == out._data[pos]).astype(xd.dtype)
            n = self_is.copy()
            array_module(n).add.at(n, pos, src_is)
            gd = g / _const(n)
            gx, gs = gd * _const(self_is), gather(gd) * _const(src_is)
        else:   # prod: exclusive products, with zeros handled as PyTorch does
            masked_self = x.masked_fill(_const(xd == 0), 1)
            gx = g * self._again(masked_self, src) / masked_self
            src_zero = sd == 0
            nz = array_module(xd).zeros(xd.shape, np.int64)
            array_module(nz).add.at(nz, pos, src_zero)
            single = src_zero & (nz[pos] == 1)
            masked_src_result = self._again(x, src.masked_fill(_const(single), 1))
            gs = I.where(_const(single), gather(g * masked_src_result),
                         gather(g * out) / src.masked_fill(_const(src_zero), 1))
            if _grad_state.enabled and (nz[pos] > 1).any():
                # two zeros of src meet at one position: this gradient is not differentiable (PyTorch's
                # DelayedError node: differentiating it raises)
                from ..autograd.function import _DelayedError
                gs = _DelayedError.apply(gs, msg=self._gradgrad_error)
        if not self.include_self:
            m = array_module(xd).ones(xd.shape, bool)
            m[pos] = False
            gx = E.scale(gx, m)
        return gx, gs       # NOTE: index smaller than src: PyTorch's shape error for src's gradient, as there

    _gradgrad_error = ("scatter_reduce(): Double backward is unsupported for src when >1 zeros in src are scattered "
                       "to the same position in self")

    def _again(self, x, src):
        return ScatterReduce.apply(x, src, dim=self.dim, index=self.index, reduce=self.reduce,
                                   include_self=self.include_self)


class IndexReduce(ScatterReduce, name="IndexReduceBackward0"):
    """index_reduce: scatter_reduce with the vector index spread over source's slices."""
    _gradgrad_error = ("index_reduce(): Double backward is unsupported for source when >1 zeros in source are "
                       "scattered to the same position in self")


def scatter_reduce(input, dim, index, src, reduce, *, include_self=True):
    """A copy of input with src reduced in at index along dim ("sum", "prod", "mean", "amax", "amin")."""
    if _ALIAS.get(reduce, reduce) not in _REDUCE:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    if src._data.dtype != input._data.dtype:
        raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
    if index._data.dtype not in (np.int64, np.int32):
        raise RuntimeError("scatter_reduce(): Expected dtype int64 for index")
    ix = index if index._data.dtype == np.int64 else _T(index._data.astype(np.int64))
    d = I._check_index("scatter_reduce", input, dim, ix, src)
    if not input._data.ndim:
        return scatter_reduce(input.view(1), 0, ix.view(-1), src.view(-1), reduce, include_self=include_self).view(())
    return ScatterReduce.apply(input, src, dim=d, index=ix._data, reduce=reduce, include_self=include_self)


def scatter_reduce_(self, dim, index, src, reduce, *, include_self=True):
    return I.via_(self, lambda t: scatter_reduce(t, dim, index, src, reduce, include_self=include_self), src)


def index_reduce(input, dim, index, source, reduce, *, include_self=True):
    """A copy of input with source's slices reduced in at index along dim ("prod", "mean", "amax", "amin")."""
    from .._warnings import warn_once
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got {reduce}.")
    warn_once("index_reduce() is in beta and the API may change at any time.")
    x, s = input._data, source._data
    d = wrap_dim(dim, builtins.max(x.ndim, 1))
    ia = I._check_vector_index("index_reduce_", index, 0)
    ss = s.shape if s.ndim else (1,)
    if ia.size != ss[d]:
        raise RuntimeError(f"index_reduce_(): Number of indices ({ia.size}) should be equal to source.size(dim): "
                           f"({ss[d]}), for dim: {d}")
    if s.dtype != x.dtype:
        raise RuntimeError(f"index_reduce_(): self ({_short(x.dtype)}) and source ({_short(s.dtype)}) must have the "
                           "same scalar type")
    n = x.shape[d] if x.ndim else 1
    if ia.size and (ia.min() < 0 or ia.max() >= n):
        raise IndexError("index out of range in self")
    if not x.ndim:
        return index_reduce(input.view(1), 0, index, source.view(-1), reduce, include_self=include_self).view(())
    shape = [1] * s.ndim
    shape[d] = -1
    full = array_module(s).ascontiguousarray(np.broadcast_to(ia.astype(np.int64).reshape(shape), s.shape))
    return IndexReduce.apply(input, source, dim=d, index=full, reduce=reduce, include_self=include_self)


def index_reduce_(self, dim, index, source, reduce, *, include_self=True):
    return I.via_(self, lambda t: index_reduce(t, dim, index, source, reduce, include_self=include_self), source)


# ------------------------------------------------------------------------------ put
class Put(Node, name="PutBackward0"):
    """x (flattened) with source written (or accumulated) at index."""

    def forward(self, x, src):
        out = x.reshape(-1).copy()
        if self.accumulate:
            array_module(out).add.at(out, self.index, src.reshape(-1))
        else:
            out[self.index] = src.reshape(-1)
        return out.reshape(x.shape)

    def backward(self, g):
        nf = self.next_functions
        gx = gs = None
        if nf[0][0] is not None:
            if self.accumulate:
                gx = g
            else:
                m = array_module(g._data).ones(g._data.size, bool)
                m[self.index] = False
                gx = E.scale(g, m.reshape(g._data.shape))
        if nf[1][0] is not None:
            gs = I.Take.apply(g, index=self.index).reshape(self.src_shape)
        return gx, gs


def put(input, index, source, accumulate=False):
    """A copy of input (seen as 1-D) with source's elements written (or added) at index."""
    ia, x = index._data, input._data
    if ia.dtype != np.int64:
        raise RuntimeError(f"put_(): Expected a long tensor for index, but got {_short(ia.dtype)}")
    if source._data.dtype != x.dtype:
        raise RuntimeError(f"put_(): self and source expected to have the same dtype, but got self.dtype = "
                           f"{_short(x.dtype)} and source.dtype = {_short(source._data.dtype)}")
    if source._data.size != ia.size:
        raise IndexError(f"put_(): Expected source and index to have the same number of elements, but got "
                         f"source.numel() = {source._data.size}, index.numel() = {ia.size}")
    n = x.size
    bad = ia[(ia < -n) | (ia >= n)]
    if bad.size:
        raise IndexError(f"out of range: tried to access index {int(bad.flat[0])} on a tensor of {n} elements.")
    ia = np.where(ia < 0, ia + n, ia).reshape(-1)
    return Put.apply(input, source, index=ia, accumulate=bool(accumulate), src_shape=source._data.shape)


def put_(self, index, source, accumulate=False):
    return I.via_(self, lambda t: put(t, index, source, accumulate), source)


# ------------------------------------------------------------------------------ renorm
class Renorm(Node, name="RenormBackward0"):
    """Each slice along dim whose p-norm exceeds maxnorm is scaled down to norm maxnorm."""
    save = (0,)
    saved_names = ("self",)

    def _dims(self, nd):
        return tuple(i for i in range(nd) if i != self.dim)

    def forward(self, x):
        dims = self._dims(x.ndim)
        norm = _np_norm(x.astype(np.float64), self.p, dims)
        factor = np.where(norm > self.maxnorm, self.maxnorm / (norm + 1e-7), 1.0)
        return (x * factor.astype(x.dtype)).astype(x.dtype, copy=False)

    def backward(self, g):
        # PyTorch's renorm_backward
        (x,) = self.saved_values
        dims = self._dims(x._data.ndim)
        norm = R.vector_norm(x, self.p, dims, keepdim=True)
        go = (x * g).sum(dims, keepdim=True)
        nb = R.norm_backward(go, x, self.p, norm, dims)
        inv = (norm + 1e-7).reciprocal()
        factor = inv * self.maxnorm
        return I.where(norm > self.maxnorm, factor * g - (factor * inv) * nb, g)


def _np_norm(a, p, dims, keepdims=True):
    a = np.abs(a)
    if p == _INF:
        return np.max(a, axis=dims, keepdims=keepdims, initial=0)
    if p == -_INF:
        return np.min(a, axis=dims, keepdims=keepdims)
    if p == 0:
        return np.sum(a != 0, axis=dims, keepdims=keepdims).astype(a.dtype)
    if p == 1:
        return np.sum(a, axis=dims, keepdims=keepdims)
    if p == 2:
        return np.sqrt(np.sum(a * a, axis=dims, keepdims=keepdims))
    return np.sum(a ** p, axis=dims, keepdims=keepdims) ** (1.0 / p)


def renorm(input, p, dim, maxnorm):
    """Rescale each slice along dim whose p-norm exceeds maxnorm to have norm maxnorm."""
    if not D.is_floating(input._data.dtype):
        raise _not_impl("renorm_out", input._data)
    if p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm:g}")
    if input._data.ndim <= 1:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {input._data.ndim} dimensions")
    d = wrap_dim(dim, input._data.ndim)
    return Renorm.apply(input, p=float(p), dim=d, maxnorm=float(maxnorm))


def renorm_(self, p, dim, maxnorm):
    return inplace_apply(self, I._Via, (), {"f": lambda t: renorm(t, p, dim, maxnorm)})


# ------------------------------------------------------------------------------ distances
class Dist(Node, name="DistBackward0"):
    """The p-norm of x - y (broadcast), over all elements."""
    save = (0, 1, -1)
    saved_names = ("self", "other", "result")

    def forward(self, x, y):
        return module_of(x, y).asarray(_np_norm(x - y, self.p, None, False), dtype=np.result_type(x, y))

    def backward(self, g):
        x, y, out = self.saved_values
        gx = R.norm_backward(g, x - y, self.p, out, None)
        if gx is None:
            return None, None
        nf = self.next_functions
        return gx, (-gx if nf[1][0] is not None else None)


def dist(input, other, p=2):
    """The p-norm of input - other."""
    if not D.is_floating(input._data.dtype) or not D.is_floating(other._data.dtype):
        bad = input if not D.is_floating(input._data.dtype) else other
        raise RuntimeError("norm(): input dtype should be either floating point or complex. Got "
                           f"{_short(bad._data.dtype)} instead.")
    _bshape(input._data.shape, other._data.shape)
    if input._data.dtype != other._data.dtype:
        dt = D.result_type_of([input, other])
        input, other = input.to(dt), other.to(dt)
    return Dist.apply(input, other, p=float(p))


def _pdist_weight(diff, d, p):
    """d dist / d diff for the p-distance ``d`` of ``diff`` (last axis), zero where PyTorch's kernel is 0."""
    zero = _const(d._data == 0)
    if p == 1:
        return diff.sign()
    if p == _INF:
        return diff.sign() * _const((np.abs(diff._data) == d._data).astype(diff._data.dtype))
    if p == 2:
        return I.where(zero, 0.0, diff / d)
    if p < 2:
        z = d._data == 0
        if p < 1:
            z = z | (diff._data == 0)
        return I.where(_const(z), 0.0, diff.sign() * diff.abs().pow(p - 1) / d.pow(p - 1))
    return I.where(zero, 0.0, diff * diff.abs().pow(p - 2) / d.pow(p - 1))


class Cdist(Node, name="CdistBackward0"):
    """Pairwise p-distances between the rows of x1 (..., P, M) and x2 (..., R, M)."""
    save = (0, 1, -1)
    saved_names = ("x1", "x2", "result")

    def forward(self, x1, x2):
        diff = x1[..., :, None, :] - x2[..., None, :, :]
        return array_module(x1).asarray(_np_norm(diff, self.p, -1, False), x1.dtype)

    def backward(self, g):
        x1, x2, out = self.saved_values
        if self.p == 0:
            return _const(array_module(x1._data).zeros(x1._data.shape, x1._data.dtype)), \
                _const(array_module(x2._data).zeros(x2._data.shape, x2._data.dtype))
        diff = x1.unsqueeze(-2) - x2.unsqueeze(-3)
        v = g.unsqueeze(-1) * _pdist_weight(diff, out.unsqueeze(-1), self.p)
        return v.sum(-2), -v.sum(-3)


class EuclideanDist(Node, name="EuclideanDistBackward0"):
    """cdist's matrix-product path for p=2: sqrt(clamp(|a|^2 + |b|^2 - 2 a.b, 1e-30))."""
    save = (0, 1, -1)
    saved_names = ("x1", "x2", "result")

    def forward(self, x1, x2):
        n1 = (x1 * x1).sum(-1, keepdims=True)
        n2 = (x2 * x2).sum(-1, keepdims=True)
        xp = module_of(x1, x2)
        a = np.concatenate([-2 * x1, n1, xp.ones_like(n1)], -1)         # PyTorch's one product, same rounding
        b = np.concatenate([x2, xp.ones_like(n2), n2], -1)
        r = a @ np.swapaxes(b, -1, -2)
        return np.sqrt(np.maximum(r, 1e-30)).astype(x1.dtype, copy=False)

    def backward(self, g):
        x1, x2, out = self.saved_values
        ratio = I.where(_const(out._data == 0), 0.0, g / out)
        return (x1 * ratio.sum(-1, keepdim=True) - ratio.matmul(x2),
                x2 * ratio.sum(-2).unsqueeze(-1) - ratio.transpose(-1, -2).matmul(x1))


_CDIST_MODES = {None: 0, "use_mm_for_euclid_dist_if_necessary": 0, "use_mm_for_euclid_dist": 1,
                "donot_use_mm_for_euclid_dist": 2}


def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """Distances between each row of x1 and each row of x2 (batched over leading dims)."""
    a, b = x1._data, x2._data
    if compute_mode not in _CDIST_MODES:
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    for name, t in (("X1", a), ("X2", b)):
        if t.ndim < 2:
            raise RuntimeError(f"cdist only supports at least 2D tensors, {name} got: {t.ndim}D")
    if a.shape[-1] != b.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {a.shape[-1]} X2: {b.shape[-1]}")
    for name, t in (("X1", a), ("X2", b)):
        if not D.is_floating(t.dtype):
            raise RuntimeError(f"cdist only supports floating-point dtypes, {name} got: {_short(t.dtype)}")
    if a.dtype != b.dtype:
        raise RuntimeError(f"expected scalar type {_short(a.dtype)} but found {_short(b.dtype)}")
    no_bf16_kernel(x1, "cdist")
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    batch = _bshape(a.shape[:-2], b.shape[:-2])
    mode = _CDIST_MODES[compute_mode]
    r1, r2 = a.shape[-2], b.shape[-2]
    if a.size and b.size and p == 2 and (mode == 1 or (mode == 0 and (r1 > 25 or r2 > 25))):
        if a.shape[:-2] != batch:
            x1 = x1.expand(batch + a.shape[-2:])
        if b.shape[:-2] != batch:
            x2 = x2.expand(batch + b.shape[-2:])
        return EuclideanDist.apply(x1, x2).view(batch + (r1, r2))
    return Cdist.apply(x1, x2, p=float(p))


class Pdist(Node, name="PdistBackward0"):
    """p-distances between all pairs of rows i < j of a 2-D input, in row-major order."""
    save = (0, -1)
    saved_names = ("self", "result")
    saved_attrs = ("p=float(p)",)

    def forward(self, x):
        xp = array_module(x)
        self.i, self.j = (xp.asarray(a, np.int64) for a in xp.triu_indices(x.shape[0], 1))
        return xp.asarray(_np_norm(x[self.i] - x[self.j], self.p, -1, False), x.dtype)

    def backward(self, g):
        x, out = self.saved_values
        shape = x._data.shape
        if self.p == 0 or not self.i.size:
            return _const(array_module(x._data).zeros(shape, x._data.dtype))
        diff = I.IndexSelect.apply(x, index=self.i, dim=0) - I.IndexSelect.apply(x, index=self.j, dim=0)
        v = g.unsqueeze(-1) * _pdist_weight(diff, out.unsqueeze(-1), self.p)
        return (I.IndexAddGrad.apply(v, index=self.i, dim=0, shape=shape)
                - I.IndexAddGrad.apply(v, index=self.j, dim=0, shape=shape))


def pdist(input, p=2):
    """The p-distances between every pair of rows (i < j) of a 2-D input."""
    x = input._data
    if x.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {x.ndim}D")
    if not D.is_floating(x.dtype):
        raise RuntimeError(f"pdist only supports floating-point dtypes")
    no_bf16_kernel(input, "pdist")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    return Pdist.apply(input, p=float(p))


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """Cosine of the angle between x1 and x2 along dim (each norm clamped to eps), as PyTorch composes it."""
    dt = D.result_type_of([x1, x2])
    if not dt.is_floating_point:
        raise RuntimeError(f"expected common dtype to be floating point, yet common dtype is {_short(dt.np)}")
    if x1._data.dtype.kind in "biu":
        x1 = x1.to(dt)
    if x2._data.dtype.kind in "biu":
        x2 = x2.to(dt)
    if x1._data.shape != x2._data.shape:
        shape = _bshape(x1._data.shape, x2._data.shape)
        x1, x2 = x1.expand(shape), x2.expand(shape)
    n1 = R.vector_norm(x1, 2, dim, keepdim=True).clone()
    n2 = R.vector_norm(x2, 2, dim, keepdim=True).clone()
    with no_grad():
        n1.clamp_min_(eps)
        n2.clamp_min_(eps)
    return ((x1 / n1) * (x2 / n2)).sum(dim)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """The p-norm of x1 - x2 + eps over the last dim (torch.norm: NormBackward1)."""
    nd = builtins.max(x1._data.ndim, x2._data.ndim)
    return R.norm_dim(x1 - x2 + eps, p, nd - 1, keepdim)
