"""Reductions vs torch: sum/mean/prod/var/std/max/min/amax/logsumexp/cumsum/cumprod/norms/sort/topk."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra.numpy import array_shapes

import torch
import hookgrad
from ops_util import data, run, same_error

DT = ["float32", "float64"]
SET = settings(max_examples=8, deadline=None)

REDUCE = {  # fn(L, x, dim, keepdim)
    "sum": lambda L, x, d, k: x.sum(d, keepdim=k), "mean": lambda L, x, d, k: x.mean(d, keepdim=k),
    "prod": lambda L, x, d, k: x.prod(d, keepdim=k), "var": lambda L, x, d, k: x.var(d, keepdim=k),
    "std": lambda L, x, d, k: x.std(d, keepdim=k), "var0": lambda L, x, d, k: x.var(d, correction=0, keepdim=k),
    "std_unbiased": lambda L, x, d, k: L.std(x, d, False, k),
    "max": lambda L, x, d, k: x.max(d, keepdim=k), "min": lambda L, x, d, k: x.min(d, k),
    "amax": lambda L, x, d, k: x.amax(d, keepdim=k), "amin": lambda L, x, d, k: L.amin(x, d, k),
    "argmax": lambda L, x, d, k: x.argmax(d, keepdim=k), "argmin": lambda L, x, d, k: x.argmin(d, k),
    "logsumexp": lambda L, x, d, k: x.logsumexp(d, keepdim=k), "cumsum": lambda L, x, d, k: x.cumsum(d),
    "cumprod": lambda L, x, d, k: x.cumprod(d), "norm": lambda L, x, d, k: x.norm(dim=d, keepdim=k),
    "norm1": lambda L, x, d, k: x.norm(1, d, k), "norm3": lambda L, x, d, k: L.linalg.vector_norm(x, 3, d, k),
    "norm_inf": lambda L, x, d, k: L.linalg.vector_norm(x, float("inf"), d, k),
    "norm_ninf": lambda L, x, d, k: L.linalg.vector_norm(x, -float("inf"), d, k),
    "sort": lambda L, x, d, k: x.sort(d), "sort_desc": lambda L, x, d, k: x.sort(d, descending=True),
    "argsort": lambda L, x, d, k: x.argsort(d), "topk": lambda L, x, d, k: x.topk(min(2, x.shape[d]), d),
    "topk_small": lambda L, x, d, k: x.topk(1, d, largest=False),
}
MULTI_DIM = {"sum", "mean", "var", "std", "var0", "amax", "amin", "logsumexp", "norm1", "norm3", "norm_inf"}


@pytest.mark.parametrize("name", sorted(REDUCE))
@SET
@given(shape=array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4), dt=st.sampled_from(DT),
       keep=st.booleans(), data_=st.data())
def test_reduce_dim(name, shape, dt, keep, data_):
    nd = len(shape)
    if name in MULTI_DIM and data_.draw(st.booleans()):
        dim = tuple(data_.draw(st.lists(st.integers(-nd, nd - 1), min_size=1, max_size=nd, unique_by=lambda v: v % nd)))
    else:
        dim = data_.draw(st.integers(-nd, nd - 1))
    kind = "nz" if name.startswith(("prod", "cum", "norm")) else "n"
    run(lambda L, x: REDUCE[name](L, x, dim, keep), data(shape, dt, kind))


FULL = {
    "sum": lambda L, x: x.sum(), "mean": lambda L, x: x.mean(), "prod": lambda L, x: x.prod(),
    "var": lambda L, x: x.var(), "std": lambda L, x: x.std(), "var_biased": lambda L, x: L.var(x, unbiased=False),
    "max": lambda L, x: x.max(), "min": lambda L, x: L.min(x), "amax": lambda L, x: x.amax(),
    "argmax": lambda L, x: x.argmax(), "norm": lambda L, x: x.norm(), "norm_p": lambda L, x: x.norm(p=1.5),
    "lnorm": lambda L, x: L.linalg.norm(x), "fro": lambda L, x: L.linalg.norm(x, "fro"),
    "lnorm_vec": lambda L, x: L.linalg.norm(x.reshape(-1), 3), "lse_all": lambda L, x: L.logsumexp(x, (0, 1)),
    "sum_dtype": lambda L, x: x.sum(dtype=L.float64), "mean_list": lambda L, x: x.mean([0, 1]),
    "var_mean": lambda L, x: L.var_mean(x, 1), "std_mean": lambda L, x: L.std_mean(x, 0, keepdim=True),
    "aminmax": lambda L, x: L.aminmax(x, dim=1),
}


@pytest.mark.parametrize("dtype", DT)
@pytest.mark.parametrize("name", sorted(FULL))
def test_reduce_full(name, dtype):
    names = name not in ("var_mean", "std_mean", "aminmax")   # composites: different node names
    run(FULL[name], data((3, 4), dtype, "nz"), names=names)


@pytest.mark.parametrize("fn", [
    lambda L, x: x.max(), lambda L, x: x.amax(1), lambda L, x: x.max(1), lambda L, x: x.min(0),
    lambda L, x: x.norm(float("inf")), lambda L, x: x.sort(1), lambda L, x: x.amin(),
])
def test_ties(fn):
    # max(): ties share the gradient; max(dim): the selected (first) index gets it all
    run(fn, np.array([[1.0, 3.0, 3.0], [2.0, 2.0, -2.0]]))


@pytest.mark.parametrize("fn", [lambda L, x: x.prod(), lambda L, x: x.prod(1), lambda L, x: x.cumprod(1),
                                lambda L, x: x.cumprod(0)])
def test_prod_with_zeros(fn):
    run(fn, np.array([[1.5, 0.0, 2.0], [0.0, 0.0, 3.0], [1.0, 2.0, -1.0]]))


def test_norm_at_zero():
    run(lambda L, x: x.norm(dim=1), np.array([[0.0, 0.0], [3.0, 4.0]]), second=False)


def test_return_types():
    x = data((2, 3))
    for L in (torch, hookgrad):
        r = L.tensor(x).max(1)
        assert type(r).__name__ == "max" and r.values is r[0] and r.indices is r[1]
        assert type(L.tensor(x).sort()).__name__ == "sort"
        assert "torch.return_types.max(\nvalues=tensor(" in repr(r)


@pytest.mark.parametrize("fn", [
    lambda L, x: L.zeros(0).max(), lambda L, x: L.zeros(0, 3).max(0), lambda L, x: L.zeros(0).argmax(),
    lambda L, x: x.sum(2), lambda L, x: x.var(5), lambda L, x: x.cumsum(2), lambda L, x: L.tensor([1, 2]).norm(),
    lambda L, x: L.linalg.vector_norm(L.tensor([1, 2])), lambda L, x: x.topk(5), lambda L, x: x.max(5),
    lambda L, x: x.logsumexp(3), lambda L, x: x.sort(3), lambda L, x: L.tensor([1, 2]).mean(),
    lambda L, x: L.tensor([1, 2]).var(),
])
def test_errors(fn):
    same_error(fn, data((3, 4)))


@pytest.mark.parametrize("fn", [lambda L, x: x.sum(), lambda L, x: x.sum(0), lambda L, x: x.prod(1),
                                lambda L, x: x.cumsum(0), lambda L, x: x.max(), lambda L, x: x.argmax(1),
                                lambda L, x: (x > 0).sum(), lambda L, x: x.sort(0)])
def test_int_inputs(fn):
    run(fn, data((3, 4), "int64"), second=False)
