"""Statistics, sets, histograms, distances, index/scatter reductions vs torch (issue 10, part D1):
values, dtypes, shapes, indices, gradients (second order where torch has it), grad_fn names, errors, warnings."""
import warnings

import numpy as np
import pytest

import torch
import hookgrad
from ops_util import data, run, same_error

I64 = np.array  # index arrays are built with dtype int64 below

X34 = data((3, 4))
X234 = data((2, 3, 4), seed=1)
NANX = X34.copy()
NANX[0, 1] = NANX[2, 3] = np.nan
NANX[1, :] = np.nan

DIFF = {  # differentiable ops: fn(L, x) on a (3, 4) float64 input; values, grads, 2nd order, grad_fn names
    "nansum": lambda L, x: L.nansum(x), "nansum_dim": lambda L, x: x.nansum(1, keepdim=True),
    "nansum_dims": lambda L, x: L.nansum(x, (0, 1)),
    "nanmean": lambda L, x: L.nanmean(x), "nanmean_dim": lambda L, x: x.nanmean(0),
    "logcumsumexp": lambda L, x: L.logcumsumexp(x, 1), "logcumsumexp0": lambda L, x: x.logcumsumexp(-2),
    "quantile": lambda L, x: L.quantile(x, 0.3), "quantile_dim": lambda L, x: x.quantile(0.3, dim=1),
    "quantile_dim0_keep": lambda L, x: L.quantile(x, 0.7, 0, True),
    "quantile_keep_all": lambda L, x: L.quantile(x, 0.5, keepdim=True),
    "quantile_q": lambda L, x: L.quantile(x, L.tensor([0.1, 0.5, 1.0], dtype=x.dtype), dim=0),
    "quantile_q_all": lambda L, x: L.quantile(x, L.tensor([0.25, 0.75], dtype=x.dtype)),
    "quantile_lower": lambda L, x: L.quantile(x, 0.4, 1, interpolation="lower"),
    "quantile_higher": lambda L, x: L.quantile(x, 0.4, 1, interpolation="higher"),
    "quantile_mid": lambda L, x: L.quantile(x, 0.4, 1, interpolation="midpoint"),
    "quantile_nearest": lambda L, x: L.quantile(x, L.tensor([0.2, 0.5], dtype=x.dtype), 1, interpolation="nearest"),
    "nanquantile": lambda L, x: L.nanquantile(x, 0.3, 1),
    "cov": lambda L, x: L.cov(x), "cov0": lambda L, x: x.cov(correction=0), "cov_1d": lambda L, x: L.cov(x[0]),
    "cov_f": lambda L, x: L.cov(x, fweights=L.tensor([1, 2, 0, 3])),
    "cov_a": lambda L, x: L.cov(x, aweights=L.tensor([0.5, 1.0, 2.0, 0.1], dtype=x.dtype)),
    "cov_fa": lambda L, x: L.cov(x, correction=2, fweights=L.tensor([1, 2, 1, 3]),
                                 aweights=L.tensor([0.5, 1.0, 2.0, 0.1], dtype=x.dtype)),
    "corrcoef": lambda L, x: L.corrcoef(x), "corrcoef_1d": lambda L, x: x[1].corrcoef(),
    "take_along_dim": lambda L, x: L.take_along_dim(x, L.tensor([[0, 3], [1, 1], [2, 0]]), 1),
    "take_along_dim_bcast": lambda L, x: L.take_along_dim(x, L.tensor([[2], [0], [1]]), dim=1),
    "take_along_dim_flat": lambda L, x: x.take_along_dim(L.tensor([0, 5, 11, 5])),
    "index_fill": lambda L, x: x.index_fill(1, L.tensor([0, -1]), 2.5),
    "index_fill_t": lambda L, x: L.index_fill(x, 0, L.tensor(1), (x[0, 0] * 3).squeeze()),
    "put": lambda L, x: x.put(L.tensor([0, 5, -1]), x[1, :3] * 2),
    "put_acc": lambda L, x: L.put(x, L.tensor([[0, 5], [5, 1]]), (x[:2, :2] * 2), accumulate=True),
    "renorm": lambda L, x: x.renorm(2, 0, 1.0), "renorm1": lambda L, x: L.renorm(x, 1, 1, 0.5),
    "renorm3": lambda L, x: x.renorm(3, -1, 1.2), "renorm_inf": lambda L, x: x.renorm(float("inf"), 0, 0.5),
    "dist": lambda L, x: L.dist(x, x.flip(0)), "dist1": lambda L, x: x.dist(x[0] * 2, 1),
    "dist3": lambda L, x: L.dist(x, x.flip(1), 3), "dist_half": lambda L, x: L.dist(x, x.flip(1), 1.5),
    "dist_inf": lambda L, x: L.dist(x, x * 0.5, float("inf")),
    "cosine_similarity": lambda L, x: L.cosine_similarity(x, x.flip(0)),
    "cosine_bcast": lambda L, x: L.cosine_similarity(x, x[0] * 2, dim=-1),
    "cosine_zero": lambda L, x: L.nn.functional.cosine_similarity(x * L.tensor([[1.], [0.], [1.]], dtype=x.dtype), x, 1),
    "pairwise_distance": lambda L, x: L.pairwise_distance(x, x.flip(0)),
    "pairwise_distance1": lambda L, x: L.nn.functional.pairwise_distance(x, x[0], 1, keepdim=True),
    "pairwise_distance3": lambda L, x: L.pairwise_distance(x, x.flip(1), 3.0),
    "normalize": lambda L, x: L.nn.functional.normalize(x), "normalize_p1": lambda L, x: L.nn.functional.normalize(x, 1, 0),
    "normalize_zero": lambda L, x: L.nn.functional.normalize(x * L.tensor([[1.], [0.], [1.]], dtype=x.dtype)),
}


@pytest.mark.parametrize("name", sorted(DIFF))
def test_differentiable(name):
    run(DIFF[name], X34)


NO_SECOND = {  # torch's backward of these is not itself differentiable: first order and names only
    "cdist": lambda L, a, b: L.cdist(a, b), "cdist1": lambda L, a, b: L.cdist(a, b, p=1),
    "cdist0": lambda L, a, b: L.cdist(a, b, 0), "cdist3": lambda L, a, b: L.cdist(a, b, 3),
    "cdist_half": lambda L, a, b: L.cdist(a, b, 0.5), "cdist_1_5": lambda L, a, b: L.cdist(a, b, 1.5),
    "cdist_inf": lambda L, a, b: L.cdist(a, b, float("inf")),
    "cdist_mm": lambda L, a, b: L.cdist(a, b, compute_mode="use_mm_for_euclid_dist"),
    "cdist_batch": lambda L, a, b: L.cdist(a.reshape(1, 3, 4).expand(2, 3, 4) * 1.5, b.reshape(2, 3, 4)[:, :2]),
    "pdist": lambda L, a, b: L.pdist(a), "pdist1": lambda L, a, b: L.nn.functional.pdist(b, 1),
    "pdist3": lambda L, a, b: L.pdist(a, 3), "pdist_inf": lambda L, a, b: L.pdist(b, float("inf")),
    "pdist_half": lambda L, a, b: L.pdist(a, 0.5),
}


@pytest.mark.parametrize("name", sorted(NO_SECOND))
def test_distances_first_order(name):
    run(NO_SECOND[name], X34, data((6, 4), seed=2), second=False)


def test_cdist_mm_path_and_duplicates():
    """More than 25 rows: torch's matrix-product path (ViewBackward0 over EuclideanDistBackward0); equal
    rows give zero distance (cdist) and a zero subgradient."""
    run(lambda L, a, b: L.cdist(a, b), X34, data((30, 4), seed=3), second=False)
    run(lambda L, a, b: L.cdist(a, b), X34.astype("float32"), data((2, 30, 4), seed=3, dtype="float32"), second=False)
    # (an exact duplicate row on the matrix-product path gives a distance of BLAS rounding size, ~1e-8, both sides)
    run(lambda L, a, b: L.cdist(a, b), X34, X34.copy(), second=False)
    run(lambda L, a: L.pdist(L.cat([a, a[:1]])), X34, second=False)


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce(reduce, include_self):
    idx = np.array([[0, 1, 0, 2], [2, 2, 0, 1]])
    src = data((2, 4), seed=4)
    src[1, 2] = 0.0
    x = X34.copy()
    x[0, 0] = 0.0
    x[2, 1] = src[0, 1] = src[1, 1]       # ties for amax/amin
    run(lambda L, x, s: x.scatter_reduce(0, L.tensor(idx), s, reduce, include_self=include_self), x, src)
    run(lambda L, x, s: L.scatter_reduce(x, 1, L.tensor(idx[:, :3]), s[:, :3], reduce, include_self=include_self),
        x, src)
    run(lambda L, x, s: L.scatter_reduce(x, 1, L.tensor(idx[:, :3]), s, reduce, include_self=include_self), x, src,
        grad=False)     # (an index smaller than src: torch's backward raises a shape error)
    run(lambda L, x, s: x.clone().scatter_reduce_(0, L.tensor(idx), s, reduce, include_self=include_self), x, src)


@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_index_reduce(reduce, include_self):
    src = data((3, 3), seed=5)
    src[0, 0] = 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run(lambda L, x, s: x.index_reduce(1, L.tensor([0, 3, 0]), s, reduce, include_self=include_self), X34, src)
        run(lambda L, x, s: x.clone().index_reduce_(0, L.tensor([2, 2, 0]), s.t().repeat(1, 2)[:, :4], reduce,
                                                     include_self=include_self), X34, src)


def test_scatter_reduce_max_min_spelling():
    """'max'/'min' work forward; torch's backward then refuses them."""
    idx = np.array([[0, 1, 0, 2]])
    for red in ("max", "min"):
        run(lambda L, x: x.scatter_reduce(0, L.tensor(idx), x[1:2] * 2, red), X34, grad=False)
        same_error(lambda L, x: x.requires_grad_().scatter_reduce(0, L.tensor(idx), x[1:2] * 2, red).sum().backward(),
                   X34)


def test_scatter_reduce_ints():
    x = np.arange(12).reshape(3, 4)
    idx = np.array([[0, 1, 0, 2]])
    for red in ("sum", "prod", "mean", "amax", "amin"):
        for inc in (True, False):
            run(lambda L, x: L.scatter_reduce(x, 0, L.tensor(idx), x[1:2] * 3 - 7, red, include_self=inc), x)


def test_inplace_forms():
    run(lambda L, x: x.clone().index_fill_(1, L.tensor([1, 2]), -1.0), X34)
    run(lambda L, x: x.clone().put_(L.tensor([3, 4]), x[0, :2].exp()), X34)
    run(lambda L, x: (x * 3).renorm_(2, 1, 1.0), X34)
    a = torch.tensor(X34.copy())
    b = hookgrad.tensor(X34.copy())
    for t in (a, b):
        t.index_fill_(0, t.new_tensor([0]).long(), 7.0)
        t.put_(t.new_tensor([1]).long(), t.new_tensor([9.0]), accumulate=True)
    np.testing.assert_array_equal(b.numpy(), a.numpy())


NAN_OPS = {
    "nansum": lambda L, x: L.nansum(x, 1), "nanmean": lambda L, x: L.nanmean(x, 1),
    "nanmean_all": lambda L, x: L.nanmean(x), "nanquantile": lambda L, x: L.nanquantile(x, 0.6, 1),
    "nanquantile_q": lambda L, x: L.nanquantile(x, L.tensor([0.0, 0.6], dtype=x.dtype)),
    "quantile_nan": lambda L, x: L.quantile(x, 0.6, 1),
}


@pytest.mark.parametrize("name", sorted(NAN_OPS))
def test_nan_handling(name):
    run(NAN_OPS[name], NANX, second=False)


def test_float32_and_dtypes():
    x = X34.astype("float32")
    run(lambda L, x: L.quantile(x, 0.3, 1), x)
    run(lambda L, x: L.cov(x, aweights=L.tensor([0.5, 1.0, 2.0, 0.1])), x)
    run(lambda L, x: L.cdist(x, x[:2] * 2), x, second=False)
    run(lambda L, x: L.nansum(x, dtype=L.float64), x)
    run(lambda L, x: L.cosine_similarity(x, x.double()), x)
    ints = np.array([[1, 2, 0], [3, 0, 0]], dtype="int32")
    run(lambda L, x: (L.nansum(x), L.nansum(x, 0), L.cov(x), L.corrcoef(x)), ints)
    run(lambda L, x: L.cosine_similarity(x, x.float() + 1, 0), ints)


SETS = {  # non-differentiable results: values, dtypes and shapes
    "unique": lambda L, x: L.unique(x), "unique_all": lambda L, x: L.unique(x, return_inverse=True, return_counts=True),
    "unique_inv": lambda L, x: x.unique(sorted=False, return_inverse=True),
    "unique_cnt": lambda L, x: x.unique(return_counts=True),
    "unique_dim": lambda L, x: L.unique(x, dim=0, return_inverse=True, return_counts=True),
    "unique_dim1": lambda L, x: L.unique(x, dim=-1, return_inverse=True),
    "unique_consecutive": lambda L, x: L.unique_consecutive(x, return_inverse=True, return_counts=True),
    "unique_consecutive_dim": lambda L, x: x.unique_consecutive(return_counts=True, dim=0),
    "unique_consecutive_plain": lambda L, x: x.unique_consecutive(),
    "isin": lambda L, x: L.isin(x, L.tensor([1, 3])), "isin_invert": lambda L, x: L.isin(x, 2, invert=True),
    "isin_scalar": lambda L, x: L.isin(3, x), "isin_float": lambda L, x: L.isin(x, L.tensor([2.0, 7.5])),
    "count_nonzero": lambda L, x: L.count_nonzero(x), "count_nonzero_dim": lambda L, x: x.count_nonzero(1),
    "count_nonzero_dims": lambda L, x: x.count_nonzero((0, -1)),
    "nonzero_static": lambda L, x: L.nonzero_static(x, size=4), "nonzero_static_pad": lambda L, x: x.nonzero_static(size=20, fill_value=-5),
    "argwhere": lambda L, x: x.argwhere(), "bincount": lambda L, x: L.bincount(x.reshape(-1).abs()),
    "bincount_w": lambda L, x: x.reshape(-1).abs().bincount(L.arange(12.0), 9),
    "bincount_wi": lambda L, x: L.bincount(x.reshape(-1).abs(), weights=x.reshape(-1)),
    "bincount_w64": lambda L, x: L.bincount(x.reshape(-1).abs(), x.reshape(-1).double()),
    "searchsorted": lambda L, x: L.searchsorted(L.tensor([0, 1, 3, 3, 5]), x),
    "searchsorted_right": lambda L, x: L.searchsorted(L.tensor([0, 1, 3, 3, 5]), x, right=True, out_int32=True),
    "searchsorted_side": lambda L, x: L.searchsorted(L.tensor([0., 1, 3, 3, 5]), x, side="right"),
    "searchsorted_nd": lambda L, x: L.searchsorted(x.sort(1)[0], x[:, :2] + 1),
    "searchsorted_sorter": lambda L, x: L.searchsorted(L.tensor([5, 0, 3, 1]), x, sorter=L.tensor([1, 3, 2, 0])),
    "searchsorted_scalar": lambda L, x: L.searchsorted(L.tensor([0, 1, 3]), 2),
    "bucketize": lambda L, x: L.bucketize(x, L.tensor([0, 2, 4])),
    "bucketize_right": lambda L, x: L.bucketize(x, L.tensor([0, 2, 4]), right=True, out_int32=True),
    "isneginf": lambda L, x: (x.float() / 0).isneginf(), "isposinf": lambda L, x: (x.float() / 0).isposinf(),
}
SET_DATA = np.array([[1, 0, 3, 3], [1, 0, 3, 3], [2, 2, 0, 4]])


@pytest.mark.parametrize("name", sorted(SETS))
def test_sets_and_counts(name):
    run(SETS[name], SET_DATA)


def test_unique_float_grad_fn():
    """unique of a tensor that requires grad: PyTorch's grad_fn names, and a backward that raises."""
    x = np.array([3.0, 1.0, 3.0, np.nan, 2.0])
    run(lambda L, x: L.unique(x), x, grad=False)
    for f in (lambda L, x: x.unique(), lambda L, x: x.unique(dim=0), lambda L, x: x.unique_consecutive(),
              lambda L, x: x.unique(return_counts=True)[0]):
        run(f, x[[0, 1, 2, 4]], grad=False)
        same_error(lambda L, x: f(L, x.requires_grad_()).sum().backward(), x)


HIST = {
    "histc": lambda L, x: L.histc(x, 4), "histc_range": lambda L, x: x.histc(bins=5, min=-1, max=1),
    "histc_const": lambda L, x: L.histc(x * 0 + 1, 3),
    "histogram": lambda L, x: L.histogram(x, 4), "histogram_range": lambda L, x: x.histogram(3, range=(-1.0, 1.0)),
    "histogram_w": lambda L, x: L.histogram(x, 3, weight=x.abs(), density=True),
    "histogram_edges": lambda L, x: L.histogram(x, L.tensor([-2.0, 0.0, 0.5, 2.0], dtype=x.dtype)),
    "histogram_edges_density": lambda L, x: L.histogram(x, L.tensor([-2.0, 0.0, 0.5, 2.0], dtype=x.dtype), density=True),
}


@pytest.mark.parametrize("name", sorted(HIST))
@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_histograms(name, dt):
    run(HIST[name], X34.astype(dt), grad=False)
    h = HIST[name](hookgrad, hookgrad.tensor(X34.astype(dt)))
    if name.startswith("histogram"):
        assert type(h).__name__ == "histogram" and h.hist is h[0] and h.bin_edges is h[1]


ERRORS = {
    "nanmean_int": (lambda L, x: L.nanmean(x.long()), X34),
    "logcumsumexp_int": (lambda L, x: L.logcumsumexp(x.long(), 0), X34),
    "quantile_q_range": (lambda L, x: L.quantile(x, 1.5), X34),
    "quantile_q_tensor_range": (lambda L, x: L.quantile(x, L.tensor([0.5, 1.5], dtype=x.dtype)), X34),
    "quantile_q_dtype": (lambda L, x: L.quantile(x, L.tensor([0.5], dtype=L.float32)), X34),
    "quantile_q_2d": (lambda L, x: L.quantile(x, L.ones(1, 1, dtype=x.dtype)), X34),
    "quantile_interp": (lambda L, x: L.quantile(x, 0.5, interpolation="cubic"), X34),
    "quantile_int": (lambda L, x: L.quantile(x.long(), 0.5), X34),
    "quantile_empty": (lambda L, x: L.quantile(x[:0], 0.5), X34),
    "cov_3d": (lambda L, x: L.cov(x.reshape(1, 3, 4)), X34),
    "cov_bool": (lambda L, x: L.cov(x > 0), X34),
    "cov_fw_float": (lambda L, x: L.cov(x, fweights=x[0]), X34),
    "cov_fw_neg": (lambda L, x: L.cov(x, fweights=L.tensor([1, -1, 1, 1])), X34),
    "cov_fw_numel": (lambda L, x: L.cov(x, fweights=L.tensor([1, 1])), X34),
    "cov_aw_int": (lambda L, x: L.cov(x, aweights=L.tensor([1, 1, 1, 1])), X34),
    "cov_w_zero": (lambda L, x: L.cov(x, fweights=L.tensor([0, 0, 0, 0])), X34),
    "corrcoef_3d": (lambda L, x: L.corrcoef(x.reshape(1, 3, 4)), X34),
    "bincount_float": (lambda L, x: L.bincount(x), X34[0]),
    "bincount_neg": (lambda L, x: L.bincount(L.tensor([0, -1])), X34),
    "bincount_2d": (lambda L, x: L.bincount(L.tensor([[0, 1]])), X34),
    "bincount_w_len": (lambda L, x: L.bincount(L.tensor([0, 1]), L.tensor([1.0])), X34),
    "histc_int": (lambda L, x: L.histc(x.long()), X34),
    "histc_minmax": (lambda L, x: L.histc(x, 3, min=2, max=1), X34),
    "histc_bins": (lambda L, x: L.histc(x, 0), X34),
    "histogram_range": (lambda L, x: L.histogram(x, 3, range=(2.0, 1.0)), X34),
    "histogram_int": (lambda L, x: L.histogram(x.long(), 3), X34),
    "searchsorted_shape": (lambda L, x: L.searchsorted(x, x[0]), X34),
    "searchsorted_side": (lambda L, x: L.searchsorted(x[0], x, side="left", right=True), X34),
    "bucketize_2d": (lambda L, x: L.bucketize(x, x), X34),
    "nonzero_static_size": (lambda L, x: L.nonzero_static(x, size=-1), X34),
    "count_nonzero_dup": (lambda L, x: L.count_nonzero(x, (0, -2)), X34),
    "take_along_dim_dtype": (lambda L, x: L.take_along_dim(x, L.tensor([[0]], dtype=L.int32), 1), X34),
    "take_along_dim_ndim": (lambda L, x: L.take_along_dim(x, L.tensor([0]), 1), X34),
    "index_fill_dtype": (lambda L, x: x.index_fill(1, L.tensor([1], dtype=L.int32), 2.0), X34),
    "index_fill_2d": (lambda L, x: x.index_fill(1, L.tensor([[1]]), 2.0), X34),
    "index_fill_bounds": (lambda L, x: x.index_fill(1, L.tensor([4]), 2.0), X34),
    "index_fill_value": (lambda L, x: x.index_fill(1, L.tensor(1), x[0]), X34),
    "scatter_reduce_name": (lambda L, x: x.scatter_reduce(0, L.tensor([[0]]), x, "add"), X34),
    "scatter_reduce_dtype": (lambda L, x: x.scatter_reduce(0, L.tensor([[0]]), x.float(), "sum"), X34),
    "scatter_reduce_bounds": (lambda L, x: x.scatter_reduce(0, L.tensor([[3]]), x, "sum"), X34),
    "index_reduce_sum": (lambda L, x: x.index_reduce(0, L.tensor([0]), x[:1], "sum"), X34),
    "index_reduce_numel": (lambda L, x: x.index_reduce(0, L.tensor([0]), x[:2], "prod"), X34),
    "index_reduce_bounds": (lambda L, x: x.index_reduce(0, L.tensor([5]), x[:1], "prod"), X34),
    "put_bounds": (lambda L, x: x.put(L.tensor([20]), x[0, :1]), X34),
    "put_numel": (lambda L, x: x.put(L.tensor([1, 2]), x[0, :1]), X34),
    "put_dtype": (lambda L, x: x.put(L.tensor([1]), x[0, :1].float()), X34),
    "put_index_dtype": (lambda L, x: x.put(L.tensor([1], dtype=L.int32), x[0, :1]), X34),
    "renorm_maxnorm": (lambda L, x: x.renorm(2, 0, -1.0), X34),
    "renorm_p": (lambda L, x: x.renorm(-1, 0, 1.0), X34),
    "dist_int": (lambda L, x: L.dist(x.long(), x.long()), X34),
    "dist_bcast": (lambda L, x: L.dist(x, x[:, :2]), X34),
    "cdist_1d": (lambda L, x: L.cdist(x[0], x), X34),
    "cdist_cols": (lambda L, x: L.cdist(x, x[:, :2]), X34),
    "cdist_int": (lambda L, x: L.cdist(x.long(), x.long()), X34),
    "cdist_p": (lambda L, x: L.cdist(x, x, p=-1), X34),
    "cdist_dtype": (lambda L, x: L.cdist(x.float(), x), X34),
    "cdist_mode": (lambda L, x: L.cdist(x, x, compute_mode="fast"), X34),
    "pdist_3d": (lambda L, x: L.pdist(x.reshape(1, 3, 4)), X34),
    "pdist_p": (lambda L, x: L.pdist(x, -1), X34),
    "cosine_int": (lambda L, x: L.cosine_similarity(x.long(), x.long()), X34),
    "cosine_shape": (lambda L, x: L.cosine_similarity(x, x[:, :3]), X34),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors(name):
    fn, x = ERRORS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        same_error(fn, x)


def _warned(lib, fn):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        r = fn(lib)
    return r, [(x.category.__name__, str(x.message).split(" (Triggered internally")[0]) for x in w]


@pytest.mark.parametrize("expr", [
    "L.ones(3, 1).std(1)", "L.ones(3, 1).var(1)", "L.ones(1).var()", "L.ones(0).var()",
    "L.var_mean(L.ones(3, 1), 1)", "L.std_mean(L.ones(3, 1), 1)", "L.ones(3, 2).std(1, correction=2)",
    "L.tensor([[1., 2], [3, 5]]).var(1, correction=3)", "L.ones(3, 1).std(1, correction=0)",
    "L.ones(3, 2).std(1)", "L.cov(L.ones(3, 1))", "L.cov(L.ones(3, 4), correction=0)",
])
def test_warnings(expr):
    """PyTorch's own UserWarning text, once per call, and no NumPy RuntimeWarning."""
    rt, wt = _warned(torch, lambda L: eval(expr))
    rh, wh = _warned(hookgrad, lambda L: eval(expr))
    assert wh == wt
    rt, rh = (rt if isinstance(rt, tuple) else (rt,)), (rh if isinstance(rh, tuple) else (rh,))
    for a, b in zip(rt, rh):
        np.testing.assert_array_equal(b.numpy(), a.numpy())


def test_modules():
    a, b = data((5, 3), seed=6), data((5, 3), seed=7)
    for kw in ({}, {"p": 1.0, "keepdim": True}, {"eps": 0.1}):
        run(lambda L, a, b: L.nn.PairwiseDistance(**kw)(a, b), a, b)
    for kw in ({}, {"dim": 0}, {"eps": 10.0}):
        run(lambda L, a, b: L.nn.CosineSimilarity(**kw)(a, b), a, b)
    assert repr(hookgrad.nn.PairwiseDistance()) == repr(torch.nn.PairwiseDistance())
    assert hookgrad.nn.functional.pdist is hookgrad.pdist


def test_hooks_see_torch_graph():
    """A tensor hook on the input and a node hook on the composite's last node fire as in torch."""
    import oracle

    def scen(L, log):
        x = L.tensor(X34.copy(), requires_grad=True)
        x.register_hook(lambda g: log("x", g))
        q = L.quantile(x, L.tensor([0.2, 0.9], dtype=x.dtype), dim=1)
        q.grad_fn.register_prehook(lambda go: log("pre", type(q.grad_fn).__name__, go))
        (L.cov(x).sum() + q.sum() + L.cdist(x, x[:2].detach()).sum()).backward()
    oracle.events(scen)
