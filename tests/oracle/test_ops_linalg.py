"""Matrix products and einsum vs torch (values, first/second-order grads, grad_fn names, errors)."""
import pytest
from hypothesis import given, settings, strategies as st

import torch
import hookgrad
from ops_util import data, run, same_error

DT = ["float32", "float64"]

PRODUCTS = {  # name: (fn, shapes)
    "mm": (lambda L, a, b: a.mm(b), [(3, 4), (4, 2)]), "matmul_2d": (lambda L, a, b: a @ b, [(3, 4), (4, 2)]),
    "matmul_batched": (lambda L, a, b: a @ b, [(2, 3, 4), (4, 5)]), "matmul_bcast": (lambda L, a, b: L.matmul(a, b), [(2, 1, 3, 4), (3, 4, 2)]),
    "matmul_vec": (lambda L, a, b: a @ b, [(2, 3, 4), (4,)]), "vec_matmul": (lambda L, a, b: a @ b, [(4,), (2, 4, 3)]),
    "dot": (lambda L, a, b: a.dot(b), [(4,), (4,)]), "mv": (lambda L, a, b: a.mv(b), [(3, 4), (4,)]),
    "bmm": (lambda L, a, b: a.bmm(b), [(2, 3, 4), (2, 4, 5)]), "outer": (lambda L, a, b: L.outer(a, b), [(3,), (4,)]),
    "addmm": (lambda L, a, b: L.addmm(b[0], a, b), [(3, 4), (4, 2)]),
    "addmm_ab": (lambda L, a, b: L.addmm(b[:1, :1], a, b, beta=0.5, alpha=2.0), [(3, 4), (4, 2)]),
    "einsum_mm": (lambda L, a, b: L.einsum("ij,jk->ik", a, b), [(3, 4), (4, 2)]),
    "einsum_bmm": (lambda L, a, b: L.einsum("bij,bjk->bik", a, b), [(2, 3, 4), (2, 4, 5)]),
    "einsum_outer": (lambda L, a, b: L.einsum("i,j->ij", a, b), [(3,), (4,)]),
    "einsum_sum": (lambda L, a, b: L.einsum("ij->j", a) * b.sum(), [(3, 4), (2,)]),
    "einsum_mul": (lambda L, a, b: L.einsum("ij,ij->ij", a, b), [(3, 4), (3, 4)]),
    "einsum_implicit": (lambda L, a, b: L.einsum("ij,jk", a, b), [(3, 4), (4, 2)]),
    "einsum_ellipsis": (lambda L, a, b: L.einsum("...ij,...jk->...ik", a, b), [(2, 3, 4), (2, 4, 5)]),
    "einsum_ell_bcast": (lambda L, a, b: L.einsum("...i,...i->...", a, b), [(2, 1, 4), (3, 4)]),
    "einsum_three": (lambda L, a, b: L.einsum("ij,jk,kl->il", a, b, b.t()), [(3, 4), (4, 4)]),
    "einsum_list": (lambda L, a, b: L.einsum("ij,kj->ik", [a, b]), [(3, 4), (2, 4)]),
    "einsum_unused": (lambda L, a, b: L.einsum("ij,k->i", a, b), [(3, 4), (2,)]),
    "einsum_trace": (lambda L, a, b: L.einsum("ii->i", a) * b, [(3, 3), (3,)]),
}
NO_NAME = {"einsum_sum", "einsum_mul", "einsum_outer", "einsum_ell_bcast", "einsum_three", "einsum_unused",
           "einsum_trace", "einsum_implicit", "matmul_batched", "matmul_bcast", "vec_matmul", "einsum_bmm",
           "einsum_ellipsis"}   # torch's node depends on its internal path


@pytest.mark.parametrize("dtype", DT)
@pytest.mark.parametrize("name", sorted(PRODUCTS))
def test_product(name, dtype):
    fn, shapes = PRODUCTS[name]
    grad = name != "einsum_trace"    # repeated subscripts: forward only (documented)
    run(fn, *[data(s, dtype, seed=i) for i, s in enumerate(shapes)], names=name not in NO_NAME, grad=grad)


@settings(max_examples=10, deadline=None)
@given(b=st.lists(st.integers(1, 3), max_size=2), m=st.integers(1, 3), k=st.integers(1, 3), n=st.integers(1, 3),
       dt=st.sampled_from(DT))
def test_matmul_shapes(b, m, k, n, dt):
    run(lambda L, x, y: x @ y, data(tuple(b) + (m, k), dt, seed=1), data((k, n), dt, seed=2), names=False)


@pytest.mark.parametrize("fn", [
    lambda L, x: x @ L.randn(5, 2), lambda L, x: L.mm(x, L.randn(3, 2)), lambda L, x: L.einsum("ij,jk->ik", x, L.randn(3, 2)),
    lambda L, x: L.einsum("ij,jk->ik", x), lambda L, x: L.einsum("ij->ik", x), lambda L, x: L.einsum("ij", x, x),
    lambda L, x: L.einsum("ij,jk->ik", x, L.randn(4, 2, dtype=L.float64)), lambda L, x: x @ L.tensor(1.),
    lambda L, x: L.bmm(x, x), lambda L, x: x.mm(x.double().t()),
])
def test_errors(fn):
    same_error(fn, data((3, 4), "float32"))
