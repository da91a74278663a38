"""torch.linalg.ldl_factor(_ex) / ldl_solve and torch.svd_lowrank / pca_lowrank against torch: LAPACK's
Bunch-Kaufman factors and pivots (1x1 and 2x2 blocks, symmetric and Hermitian), solutions, PyTorch's errors and
its missing derivative; the randomized SVD and PCA with manual_seed giving torch's result, and their gradients."""
import numpy as np
import pytest
import torch

import hookgrad
from oracle import check, to_np
from complex_oracle import ccheck

R = np.random.default_rng(0)


def sym(n, batch=(), cplx=False, herm=False, small_diag=False, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(batch + (n, n))
    if cplx:
        a = a + 1j * rng.standard_normal(batch + (n, n))
    if small_diag:          # forces Bunch-Kaufman's row interchanges and 2x2 blocks
        a = a * (1 - 0.99 * np.eye(n))
    s = a + (np.conj(np.swapaxes(a, -1, -2)) if herm else np.swapaxes(a, -1, -2))
    if herm:
        s = s - 1j * np.imag(s) * np.eye(n)
    return s


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("kind", ["real", "complex", "hermitian"])
def test_ldl_factor_and_solve(seed, kind):
    cplx, herm = kind != "real", kind == "hermitian"
    n = 2 + seed % 5
    a = sym(n, (2,) if seed % 3 == 0 else (), cplx, herm, small_diag=seed % 2 == 0, seed=seed)
    b = np.random.default_rng(seed + 100).standard_normal(a.shape[:-1] + (3,)).astype(a.dtype)

    def f(L, a, b):
        LD, piv, info = L.linalg.ldl_factor_ex(a, hermitian=herm)
        x = L.linalg.ldl_solve(LD, piv, b, hermitian=herm)
        return LD, piv, info, x, L.linalg.ldl_factor(a, hermitian=herm)
    ccheck(f, a, b, grad=False, names=False, tol=(1e-8, 1e-8))
    if herm or not cplx:
        np.testing.assert_allclose(to_np(hookgrad.linalg.ldl_solve(*hookgrad.linalg.ldl_factor(
            hookgrad.tensor(a), hermitian=herm), hookgrad.tensor(b), hermitian=herm)), np.linalg.solve(a, b),
            rtol=1e-8, atol=1e-8)


def test_ldl_two_by_two_pivots_and_broadcasting():
    a = np.array([[0., 1, 2], [1, 0, 3], [2, 3, 0]])
    t, h = check(lambda L, a: L.linalg.ldl_factor(a), a, grad=False)
    assert (to_np(h[1]) < 0).sum() == 2     # a 2x2 block: -3, -3, 3
    b = R.standard_normal((2, 3, 2))
    check(lambda L, a, b: L.linalg.ldl_solve(*L.linalg.ldl_factor(a), b), a, b, grad=False)
    check(lambda L, a, b: L.linalg.ldl_solve(*L.linalg.ldl_factor(a), b), sym(3, (2,)), b[:1], grad=False)
    check(lambda L, a, b: L.linalg.ldl_solve(*L.linalg.ldl_factor(a), b), a, b[0, :, :0], grad=False)
    check(lambda L, a: L.linalg.ldl_factor(a), np.zeros((0, 0)), grad=False)
    check(lambda L, a: L.linalg.ldl_factor_ex(a), sym(4).astype(np.float32), grad=False)
    check(lambda L, a: L.linalg.ldl_factor_ex(a), np.zeros((2, 3, 3)), grad=False)       # info 1, D singular


def _raises(fn, exc):
    """fn(torch) and fn(hookgrad) raise the same exception type with the same text."""
    msgs = []
    for lib in (torch, hookgrad):
        with pytest.raises(exc) as e:
            fn(lib)
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1]


def test_ldl_errors():
    A = sym(3)

    def fac(lib):
        return lib.linalg.ldl_factor(lib.tensor(A))
    _raises(lambda L: L.linalg.ldl_factor(L.ones(3)), RuntimeError)
    _raises(lambda L: L.linalg.ldl_factor(L.ones(3, 4)), RuntimeError)
    _raises(lambda L: L.linalg.ldl_factor_ex(L.ones(3, 3, dtype=L.int64)), RuntimeError)
    _raises(lambda L: L.linalg.ldl_factor(L.ones(3, 3, dtype=L.float16)), NotImplementedError)
    _raises(lambda L: L.linalg.ldl_factor([[1.0]]), TypeError)
    _raises(lambda L: L.linalg.ldl_solve(*fac(L), L.ones(3, dtype=L.float64)), IndexError)
    _raises(lambda L: L.linalg.ldl_solve(*fac(L), L.ones(4, 2, dtype=L.float64)), RuntimeError)
    _raises(lambda L: L.linalg.ldl_solve(fac(L)[0], fac(L)[1][:2], L.ones(3, 2, dtype=L.float64)), RuntimeError)
    _raises(lambda L: L.linalg.ldl_solve(fac(L)[0], fac(L)[1].double(), L.ones(3, 2, dtype=L.float64)),
            RuntimeError)
    _raises(lambda L: L.linalg.ldl_solve(*fac(L), L.ones(3, 2)), RuntimeError)
    _raises(lambda L: L.linalg.ldl_solve(fac(L)[0].expand(2, 3, 3), fac(L)[1].expand(2, 3),
                                         L.ones(3, 3, 2, dtype=L.float64)), RuntimeError)
    # a singular D: torch 2.13 fails an internal assert; hookgrad raises LinAlgError (a RuntimeError)
    with pytest.raises(hookgrad.linalg.LinAlgError, match="D\\[0,0\\] is zero"):
        hookgrad.linalg.ldl_factor(hookgrad.zeros(3, 3))
    with pytest.raises(RuntimeError):
        torch.linalg.ldl_factor(torch.zeros(3, 3))


def test_ldl_has_no_derivative():
    A, B = sym(3), R.standard_normal((3, 2))
    for lib in (torch, hookgrad):
        a = lib.tensor(A, requires_grad=True)
        LD, piv = lib.linalg.ldl_factor(a)
        assert LD.requires_grad and not piv.requires_grad
        assert LD.grad_fn.name() == "torch::autograd::NotImplemented"
        x = lib.linalg.ldl_solve(LD.detach(), piv, lib.tensor(B, requires_grad=True))
        assert x.grad_fn.name() == "torch::autograd::NotImplemented"
        with pytest.raises(RuntimeError, match="derivative for aten::linalg_ldl_solve is not implemented"):
            x.sum().backward()
        with pytest.raises(RuntimeError, match="derivative for aten::linalg_ldl_factor_ex is not implemented"):
            LD.sum().backward()


# ------------------------------------------------------------------ svd_lowrank, pca_lowrank
def _seeded(fn):
    """fn under manual_seed(7), its (U, S, V) compared where the SVD's signs cannot matter: the singular values
    (exactly torch's), the approximation U diag(S) V^H and the projectors U U^H, V V^H (hookgrad's final SVD is
    NumPy's LAPACK, whose singular-vector signs may differ from torch's: see docs/differences.md)."""
    def f(L, *xs):
        L.manual_seed(7)
        U, S, V = fn(L, *xs)
        return S, (U * S.unsqueeze(-2)) @ V.mH, U @ U.mH, V @ V.mH, (U.abs() ** 4).sum(-2)
    return f


@pytest.mark.parametrize("shape,q,niter", [((6, 4), 3, 2), ((4, 7), 3, 1), ((2, 6, 5), 4, 0), ((5, 4), 6, 2)])
def test_svd_lowrank(shape, q, niter):
    a = R.standard_normal(shape)
    check(_seeded(lambda L, a: L.svd_lowrank(a, q=q, niter=niter)), a, tol=(1e-7, 1e-7), second=q == 3)
    check(_seeded(lambda L, a, m: L.svd_lowrank(a, q=q, niter=niter, M=m)), a, a[..., :1, :], tol=(1e-7, 1e-7))


@pytest.mark.parametrize("shape", [(6, 4), (8, 5), (2, 5, 4)])
def test_pca_lowrank(shape):
    a = R.standard_normal(shape)
    check(_seeded(lambda L, a: L.pca_lowrank(a)), a, tol=(1e-7, 1e-7))
    check(_seeded(lambda L, a: L.pca_lowrank(a, q=2, center=False, niter=3)), a, tol=(1e-7, 1e-7))
    check(_seeded(lambda L, a: L.pca_lowrank(a, q=3)), a.astype(np.float32), grad=False, tol=(1e-4, 1e-4))


def test_lowrank_complex_and_errors():
    z = np.random.default_rng(3).standard_normal((5, 4, 2)) @ np.array([1, 1j])
    # values only: hookgrad's complex qr/svd gradients are not torch's yet (see the report)
    ccheck(_seeded(lambda L, a: L.svd_lowrank(a, q=3)), z, grad=False, names=False)
    _raises(lambda L: L.pca_lowrank(L.ones(5, 4), q=5), ValueError)
    _raises(lambda L: L.pca_lowrank(L.ones(5, 4), niter=-1), ValueError)
    _raises(lambda L: L.svd_lowrank(L.ones(5)), ValueError)
