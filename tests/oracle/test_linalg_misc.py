"""The rest of torch.linalg against torch (pinv, matrix_rank, cond, matrix norms, lstsq, matrix_exp,
householder_product, multi_dot, matrix_power, tensorinv/tensorsolve, vander, diagonal, cross, vecdot) and the
top-level legacy functions (torch.svd, torch.qr, cholesky_solve/inverse, lu/lu_unpack/lu_solve, triangular_solve,
geqrf/orgqr/ormqr, frobenius/nuclear norms, and the removed ones that raise)."""
import warnings

import numpy as np
import pytest
import torch

import hookgrad
from oracle import check

R = np.random.default_rng(2)


def rnd(*shape, dtype=np.float64):
    return R.standard_normal(shape).astype(dtype)


def mat(*shape):
    return rnd(*shape) + 3 * np.eye(shape[-1])


def spd(*shape):
    a = rnd(*shape)
    return a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


@pytest.mark.parametrize("shape", [(3, 3), (4, 2), (2, 2, 4)])
def test_pinv(shape):
    check(lambda L, a: L.linalg.pinv(a), rnd(*shape), second=True)
    check(lambda L, a: L.pinverse(a), rnd(*shape))
    check(lambda L, a: a.pinverse(), rnd(*shape))
    check(lambda L, a: L.linalg.pinv(a, hermitian=True), spd(3, 3), second=True)


def test_pinv_tolerances_and_rank():
    low = rnd(4, 2) @ rnd(2, 3)                       # rank 2
    check(lambda L, a: L.linalg.pinv(a), low, grad=False)
    check(lambda L, a: L.linalg.pinv(a, atol=0.5, rtol=0.1), rnd(3, 3), grad=False)
    check(lambda L, a: L.linalg.matrix_rank(a), np.stack([low, rnd(4, 3)]), grad=False)
    check(lambda L, a: L.linalg.matrix_rank(a, atol=1.0), rnd(3, 3), grad=False)
    check(lambda L, a: L.linalg.matrix_rank(a, hermitian=True), spd(3, 3), grad=False)


@pytest.mark.parametrize("p", [None, 2, -2, "fro", "nuc", 1, -1, float("inf"), -float("inf")])
def test_cond(p):
    # (PyTorch's own backward fails for the norms other than 2: its inv_ex result is modified in place)
    check(lambda L, a: L.linalg.cond(a, p), mat(2, 3, 3), grad=p in (None, 2, -2))
    if p in (None, 2, -2):
        # a singular matrix through the inverse (the other norms) gives inf or ~1e48 depending on how the LAPACK
        # build rounds its pivots (MKL under torch, OpenBLAS under NumPy, and the CPU's code path): not compared
        sing = np.stack([mat(3, 3), np.ones((3, 3))])
        check(lambda L, a: L.linalg.cond(a, p), sing, grad=False, tol=(1e-6, 1e-6))


@pytest.mark.parametrize("ord", [2, -2, "nuc", "fro", 1, float("inf")])
def test_matrix_norm(ord):
    check(lambda L, a: L.linalg.matrix_norm(a, ord), rnd(2, 3, 4), second=True)
    check(lambda L, a: L.linalg.matrix_norm(a, ord, dim=(0, 2), keepdim=True), rnd(3, 2, 4))
    check(lambda L, a: L.linalg.norm(a, ord), rnd(3, 4))


@pytest.mark.parametrize("driver", [None, "gelsd", "gelss", "gels"])
def test_lstsq(driver):
    check(lambda L, a, b: L.linalg.lstsq(a, b, driver=driver), rnd(5, 3), rnd(5, 2), second=driver is None)
    check(lambda L, a, b: L.linalg.lstsq(a, b, driver=driver), rnd(2, 5, 3), rnd(2, 5, 2))
    check(lambda L, a, b: L.linalg.lstsq(a, b, driver=driver)[0], rnd(5, 3), rnd(5))


def test_lstsq_underdetermined():
    check(lambda L, a, b: L.linalg.lstsq(a, b).solution, rnd(3, 5), rnd(3, 2), second=True)


@pytest.mark.parametrize("scale", [0.1, 1.0, 8.0])
def test_matrix_exp(scale):
    check(lambda L, a: L.linalg.matrix_exp(a), rnd(2, 3, 3) * scale, second=scale == 1.0)
    check(lambda L, a: L.matrix_exp(a), rnd(3, 3) * scale)
    check(lambda L, a: a.matrix_exp(), rnd(3, 3, dtype=np.float32) * scale)


@pytest.mark.parametrize("m,n,k", [(4, 3, 2), (3, 3, 3), (5, 2, 2)])
def test_householder_product(m, n, k):
    check(lambda L, a, t: L.linalg.householder_product(a, t), rnd(m, n), rnd(k), second=True)
    check(lambda L, a, t: L.orgqr(a, t), rnd(2, m, n), rnd(2, k))


def test_geqrf_orgqr_ormqr():
    check(lambda L, a: L.geqrf(a), rnd(4, 3), grad=False)
    check(lambda L, a: L.geqrf(a), rnd(2, 3, 5), grad=False)
    check(lambda L, a: L.orgqr(*L.geqrf(a)), rnd(4, 3), grad=False)
    for left in (True, False):
        for tr in (True, False):
            c = rnd(4, 2) if left else rnd(2, 4)
            check(lambda L, a, t, c: L.ormqr(a, t, c, left=left, transpose=tr), rnd(4, 3), rnd(3), c)


@pytest.mark.parametrize("n", [0, 1, 2, 3, 5, 6, -1, -3])
def test_matrix_power(n):
    check(lambda L, a: L.linalg.matrix_power(a, n), mat(2, 3, 3), second=True)
    check(lambda L, a: L.matrix_power(a, n), mat(3, 3))


def test_multi_dot():
    check(lambda L, a, b, c: L.linalg.multi_dot([a, b, c]), rnd(2, 3), rnd(3, 6), rnd(6, 2), second=True)
    check(lambda L, a, b, c, d: L.linalg.multi_dot([a, b, c, d]), rnd(3), rnd(3, 6), rnd(6, 2), rnd(2))
    check(lambda L, a, b: L.linalg.multi_dot([a, b]), rnd(3, 4), rnd(4))


def test_tensorinv_tensorsolve():
    check(lambda L, a: L.linalg.tensorinv(a, ind=2), mat(6, 6).reshape(2, 3, 6), second=True)
    check(lambda L, a: L.linalg.tensorinv(a, ind=1), mat(6, 6).reshape(6, 2, 3))
    check(lambda L, a, b: L.linalg.tensorsolve(a, b), mat(6, 6).reshape(2, 3, 6), rnd(2, 3))
    check(lambda L, a, b: L.linalg.tensorsolve(a, b, dims=(0,)), mat(6, 6).reshape(6, 2, 3), rnd(2, 3))


def test_small_ones():
    check(lambda L, x: L.linalg.vander(x), rnd(2, 3), second=True)
    check(lambda L, x: L.linalg.vander(x, N=5), rnd(3))
    check(lambda L, a: L.linalg.diagonal(a, offset=1), rnd(2, 3, 4))
    check(lambda L, a, b: L.linalg.cross(a, b), rnd(2, 3), rnd(1, 3), second=True)
    check(lambda L, a, b: L.linalg.vecdot(a, b, dim=0), rnd(3, 2), rnd(3, 2))


def test_legacy_svd_qr():
    check(lambda L, a: L.svd(a)[1], rnd(4, 3), second=True)
    check(lambda L, a: L.svd(a, compute_uv=False), rnd(4, 3))
    check(lambda L, a: L.svd(a), rnd(3, 3), grad=False)
    check(lambda L, a: (lambda u, s, v: (u * s) @ v.mT)(*L.svd(a)), rnd(4, 3))
    check(lambda L, a: L.qr(a), rnd(4, 3))
    check(lambda L, a: a.qr(some=False), rnd(3, 4))


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_solve_inverse(upper):
    def f(L, s, b):
        c = L.linalg.cholesky(s, upper=upper)
        return L.cholesky_solve(b, c, upper=upper), L.cholesky_inverse(c, upper=upper), c.cholesky_inverse(upper)
    check(f, spd(2, 3, 3), rnd(2, 3, 2), second=True)
    check(lambda L, s: L.cholesky(s, upper), spd(3, 3))


def test_legacy_lu():
    check(lambda L, a: L.lu(a), mat(2, 3, 3))
    check(lambda L, a: L.lu(a, get_infos=True), mat(3, 3))
    check(lambda L, a: L.lu_unpack(*L.linalg.lu_factor(a)), mat(2, 3, 3), second=True)
    check(lambda L, a: L.lu_unpack(*L.linalg.lu_factor(a)), rnd(4, 3))
    check(lambda L, a: L.lu_unpack(*L.linalg.lu_factor(a)), rnd(3, 4))
    check(lambda L, a, b: L.lu_solve(b, *L.linalg.lu_factor(a)), mat(3, 3), rnd(3, 2))
    check(lambda L, a, b: b.lu_solve(*a.lu()), mat(3, 3), rnd(3, 2))


@pytest.mark.parametrize("upper", [True, False])
@pytest.mark.parametrize("transpose", [False, True])
@pytest.mark.parametrize("unit", [False, True])
def test_triangular_solve(upper, transpose, unit):
    check(lambda L, b, a: L.triangular_solve(b, a, upper, transpose, unit), rnd(3, 2), mat(3, 3), second=True)


def test_legacy_misc():
    check(lambda L, a: L.frobenius_norm(a, (0, 1)), rnd(3, 4))
    check(lambda L, a: L.nuclear_norm(a), rnd(3, 4))
    check(lambda L, a: L.nuclear_norm(a, (0, 1), True), rnd(3, 4))
    check(lambda L, a: L.logdet(a), mat(3, 3), second=True)
    check(lambda L, a: L.logdet(a), -mat(3, 3))
    check(lambda L, a: a.slogdet(), mat(3, 3))
    check(lambda L, a: a.logdet(), spd(3, 3))


def _raises(fn, *arrays):
    msgs = []
    for lib in (torch, hookgrad):
        with pytest.raises(Exception) as e:
            fn(lib, *[lib.tensor(a) for a in arrays])
        msgs.append((type(e.value).__name__, str(e.value)))
    assert msgs[0] == msgs[1]


def test_errors():
    e = np.eye(3)
    _raises(lambda L, a: L.solve(a, a), e)
    _raises(lambda L, a: a.solve(a), e)
    _raises(lambda L, a: L.lstsq(a, a), e)
    _raises(lambda L, a: a.lstsq(a), e)
    _raises(lambda L, a: L.eig(a), e)
    _raises(lambda L, a: a.eig(), e)
    _raises(lambda L, a: L.symeig(a), e)
    _raises(lambda L, a: L.matrix_rank(a), e)
    _raises(lambda L, a: L.linalg.matrix_power(a, 2), np.ones((3, 2)))
    _raises(lambda L, a: L.linalg.multi_dot([a]), np.ones(3))
    _raises(lambda L, a: L.linalg.multi_dot([a, a]), np.ones((2, 3)))
    _raises(lambda L, a: L.linalg.multi_dot([a, a.T]), np.ones((2, 3, 3)))
    _raises(lambda L, a: L.linalg.matrix_norm(a, 2), np.ones(3))
    _raises(lambda L, a: L.linalg.householder_product(a, a[0]), np.ones((2, 3)))
    _raises(lambda L, a: L.geqrf(a).a.sum().backward(), np.ones((2, 3)) if False else np.ones((2, 3)))
