"""torch.linalg's decompositions against torch: svd, svdvals, eigh, eigvalsh, qr, lu, lu_factor, cholesky-based
and LU-based gradients (first and second order in float64, through gauge-invariant functions where the
decomposition's signs are free), float32, batching and grad_fn names."""
import numpy as np
import pytest
import torch

import hookgrad
from oracle import check

R = np.random.default_rng(1)


def rnd(*shape, dtype=np.float64):
    return R.standard_normal(shape).astype(dtype)


def sym(*shape):
    a = R.standard_normal(shape)
    return a + np.swapaxes(a, -1, -2)


def _svd_invariants(L, a, full=False):
    """Functions of the SVD that do not depend on the signs of the singular vectors."""
    U, S, Vh = L.linalg.svd(a, full_matrices=full)
    k = S.shape[-1]
    U, Vh = U[..., :, :k], Vh[..., :k, :]
    return S, U @ U.mT * 1.5, (U * S.unsqueeze(-2)) @ Vh, (Vh.mT @ Vh) * 0.5, U[..., :, :1] @ Vh[..., :1, :]


@pytest.mark.parametrize("shape", [(3, 3), (4, 2), (2, 4), (2, 3, 3), (2, 4, 3)])
def test_svd(shape):
    check(lambda L, a: _svd_invariants(L, a), rnd(*shape), second=True)
    check(lambda L, a: L.linalg.svdvals(a), rnd(*shape), second=True)


def test_svd_products_of_vectors():
    # U[:, i] v_i^T is sign-free: its gradient needs the gU and gVh terms
    def f(L, a):
        U, S, Vh = L.linalg.svd(a, full_matrices=False)
        return U[..., :, :2] @ Vh[..., :2, :], (U[..., :, 0:1] * 2) @ Vh[..., 0:1, :]
    check(f, rnd(4, 3), second=True)
    check(f, rnd(3, 5), second=True)


def test_svd_full_square_values():
    a = rnd(2, 3, 3)
    check(lambda L, a: L.linalg.svd(a), a, grad=False)       # square: NumPy's and PyTorch's signs agree
    check(lambda L, a: _svd_invariants(L, a, True), rnd(3, 3))
    check(lambda L, a: L.linalg.svdvals(a), rnd(4, 3, dtype=np.float32))


@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigh(uplo):
    def f(L, a):
        w, V = L.linalg.eigh(a, UPLO=uplo)
        return w, (V * w.unsqueeze(-2)) @ V.mT, V[..., :, :1] @ V[..., :, :1].mT
    check(f, sym(3, 3), second=True)
    check(f, sym(2, 4, 4), second=True)
    check(lambda L, a: L.linalg.eigvalsh(a, UPLO=uplo), rnd(2, 3, 3), second=True)
    check(lambda L, a: L.linalg.eigvalsh(a), sym(3, 3).astype(np.float32))


@pytest.mark.parametrize("shape", [(3, 3), (5, 3), (2, 4, 2), (3, 5), (2, 2, 4)])
def test_qr(shape):
    check(lambda L, a: L.linalg.qr(a), rnd(*shape), second=True)
    check(lambda L, a: L.linalg.qr(a, mode="r"), rnd(*shape), grad=False)
    check(lambda L, a: L.linalg.qr(a, mode="complete"), rnd(*shape), grad=shape[-2] <= shape[-1])
    check(lambda L, a: L.linalg.qr(a)[1], rnd(*shape, dtype=np.float32))


@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4), (5, 3), (3, 5)])
def test_lu(shape):
    check(lambda L, a: L.linalg.lu(a), rnd(*shape), second=True)
    check(lambda L, a: L.linalg.lu_factor(a), rnd(*shape), second=True)
    check(lambda L, a: L.linalg.lu_factor_ex(a), rnd(*shape))


@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("adjoint", [False, True])
def test_lu_solve(left, adjoint):
    b = rnd(2, 3, 2) if left else rnd(2, 2, 3)

    def f(L, a, b):
        LU, piv = L.linalg.lu_factor(a)
        return L.linalg.lu_solve(LU, piv, b, left=left, adjoint=adjoint)
    check(f, rnd(2, 3, 3), b, second=True)


def test_det_of_lu_and_cholesky_inverse_path():
    check(lambda L, a: L.linalg.lu_factor(a)[0].diagonal(0, -2, -1).prod(-1), rnd(2, 3, 3))


def test_grad_fn_names():
    a = hookgrad.tensor(rnd(3, 3), requires_grad=True)
    L = hookgrad.linalg
    assert L.svd(a).U.grad_fn.name() == "LinalgSvdBackward0"
    assert L.svdvals(a).grad_fn.name() == "LinalgSvdBackward0"
    assert L.eigh(a).eigenvectors.grad_fn.name() == "LinalgEighBackward0"
    assert L.qr(a).Q.grad_fn.name() == "LinalgQrBackward0"
    assert L.lu(a).L.grad_fn.name() == "LinalgLuBackward0" and L.lu(a).P.grad_fn is None
    assert L.lu_factor(a).LU.grad_fn.name() == "LinalgLuFactorExBackward0"
    assert L.lu_factor(a).pivots.dtype == hookgrad.int32


def _raises(fn, *arrays):
    msgs = []
    for lib in (torch, hookgrad):
        with pytest.raises(Exception) as e:
            fn(lib, *[lib.tensor(a) for a in arrays])
        msgs.append((type(e.value).__name__, str(e.value).split("\n")[0]))
    assert msgs[0] == msgs[1]


def test_errors():
    _raises(lambda L, a: L.linalg.eigh(a), np.ones((2, 3)))
    _raises(lambda L, a: L.linalg.svd(a), np.ones(3))
    _raises(lambda L, a: L.linalg.qr(a, mode="bad"), np.ones((3, 3)))
    _raises(lambda L, a: L.linalg.lu_factor(a), np.zeros((3, 3)))
    _raises(lambda L, a: L.linalg.lu(a, pivot=False), np.ones((3, 3)))
    _raises(lambda L, a: L.linalg.qr(a, mode="r")[1].sum().backward() if False else
            L.autograd.grad(L.linalg.qr(a.requires_grad_(), mode="r")[1].sum(), a), np.ones((3, 3)))


@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4)])
def test_eig(shape):
    def f(L, a):
        w, v = L.linalg.eig(a)
        return w.real, w.imag, v.abs(), L.linalg.eigvals(a).abs()
    check(f, rnd(*shape), grad=False)
    # (float32: MKL's geev and NumPy's LAPACK may order the eigenvalues differently)
    check(lambda L, a: L.linalg.eigvals(a).abs().sort().values, rnd(*shape).astype(np.float32), grad=False)
    # gradients where the eigenvalues are real (complex pairs need complex matmul gradients: see the report)
    n = shape[-1]
    real_spectrum = 0.3 * rnd(*shape) + np.diag(np.arange(1.0, n + 1))
    check(f, real_spectrum)
    for lib in (torch, hookgrad):
        w = lib.linalg.eigvals(lib.tensor(rnd(3, 3)))
        assert str(w.dtype).endswith("complex128")
    assert hookgrad.linalg.eig(hookgrad.tensor(rnd(3, 3), requires_grad=True))[0].grad_fn.name() == \
        "LinalgEigBackward0"
