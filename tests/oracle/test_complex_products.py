"""Complex matrix products against torch: values, grad_fn names, and the gradients of a real loss (PyTorch's
convention: grad_a = g b^H, grad_b = a^H g), first and second order; linalg.eig with complex eigenvalues; the
linalg functions on complex matrices (values and gradients), and qr/svd vectors refusing to differentiate."""
import numpy as np
import pytest
import torch

import hookgrad
from complex_oracle import ccheck, cdata
from oracle import check

PRODUCTS = {
    "mm": (lambda L, a, b: L.mm(a, b), (3, 4), (4, 2)),
    "matmul 2d": (lambda L, a, b: a @ b, (3, 4), (4, 2)),
    "matmul folded": (lambda L, a, b: L.matmul(a, b), (2, 3, 4), (4, 2)),
    "matmul batched": (lambda L, a, b: L.matmul(a, b), (2, 3, 4), (1, 4, 2)),
    "matmul vec-mat": (lambda L, a, b: L.matmul(a, b), (4,), (2, 4, 3)),
    "matmul mat-vec": (lambda L, a, b: L.matmul(a, b), (2, 3, 4), (4,)),
    "bmm": (lambda L, a, b: L.bmm(a, b), (2, 3, 4), (2, 4, 2)),
    "mv": (lambda L, a, b: L.mv(a, b), (3, 4), (4,)),
    "dot": (lambda L, a, b: L.dot(a, b), (4,), (4,)),
    "vdot": (lambda L, a, b: L.vdot(a, b), (4,), (4,)),
    "inner": (lambda L, a, b: L.inner(a, b), (3, 4), (2, 4)),
    "einsum": (lambda L, a, b: L.einsum("bij,jk->bik", a, b), (2, 3, 4), (4, 2)),
    "einsum 3": (lambda L, a, b: L.einsum("ij,jk,kl->il", a, b, b.mT), (3, 4), (4, 2)),
    "addmm": (lambda L, a, b: L.addmm(a[:, :2], a, b), (3, 4), (4, 2)),
    "addmv": (lambda L, a, b: L.addmv(b[:3], a, b, beta=2), (3, 4), (4,)),
    "addr": (lambda L, a, b: L.addr(L.outer(b, a), a, b, alpha=3), (4,), (4,)),
    "baddbmm": (lambda L, a, b: L.baddbmm(a[..., :2], a, b), (2, 3, 4), (2, 4, 2)),
    "addbmm": (lambda L, a, b: L.addbmm(a[0, :, :2], a, b), (2, 3, 4), (2, 4, 2)),
    "linear": (lambda L, a, b: L.nn.functional.linear(a, b.mT), (3, 4), (4, 2)),
}


@pytest.mark.parametrize("name", list(PRODUCTS))
def test_complex_product(name):
    fn, sa, sb = PRODUCTS[name]
    ccheck(fn, cdata(*sa, seed=1), cdata(*sb, seed=2), second=True)


def test_complex_square_imag_loss():
    """The issue's case: ((m @ m).imag).sum()."""
    ccheck(lambda L, m: (m @ m).imag.sum(), cdata(3, 3), second=True)


def test_complex_float32_and_real_path():
    ccheck(lambda L, a, b: a @ b, cdata(3, 4, dtype="complex64"), cdata(4, 2, dtype="complex64", seed=3))
    check(lambda L, a, b: a @ b, cdata(2, 3, 4, dtype="float64"), cdata(4, 2, dtype="float64"), second=True)


@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4)])
def test_eig_complex_eigenvalues_gradients(shape):
    """A real matrix with complex-conjugate eigenvalue pairs; the loss is gauge-invariant (|V| and the
    eigenvalues), so torch's and hookgrad's gradients must agree."""
    a = np.random.default_rng(5).standard_normal(shape)

    def f(L, x):
        w, v = L.linalg.eig(x)
        return w.real, w.imag, v.abs()
    check(f, a)
    ccheck(lambda L, x: L.linalg.eigvals(x), cdata(*shape, seed=4), second=False)
    ccheck(lambda L, x: L.linalg.eig(x)[1].abs(), cdata(*shape, seed=4), second=False)


# ---------------------------------------------------------------- linalg on complex matrices
_RNG = np.random.default_rng(7)
_A = _RNG.standard_normal((4, 4)) + 1j * _RNG.standard_normal((4, 4))
_B = _RNG.standard_normal((4, 2)) + 1j * _RNG.standard_normal((4, 2))
_W = _RNG.standard_normal((4, 4)) + 1j * _RNG.standard_normal((4, 4))
_LINALG = {
    "inv": lambda L, a: L.linalg.inv(a),
    "det": lambda L, a: L.linalg.det(a).reshape(1, 1),
    "slogdet": lambda L, a: L.linalg.slogdet(a)[1].reshape(1, 1) * (1 + 0j),
    "solve": lambda L, a: L.linalg.solve(a, L.tensor(_B)),
    "cholesky": lambda L, a: L.linalg.cholesky(a @ a.mH + 4 * L.eye(4)),
    "svdvals": lambda L, a: L.linalg.svdvals(a).reshape(1, 4) * (1 + 0j),
    "eigh": lambda L, a: (lambda w, v: (v * w) @ v.mH)(*L.linalg.eigh(a @ a.mH)),
    "matrix_exp": lambda L, a: L.linalg.matrix_exp(a * 0.3),
    "pinv": lambda L, a: L.linalg.pinv(a),
    "pinv_hermitian": lambda L, a: L.linalg.pinv(a @ a.mH + L.eye(4), hermitian=True),
    "lstsq": lambda L, a: L.linalg.lstsq(a, L.tensor(_B)).solution,
    "solve_triangular": lambda L, a: L.linalg.solve_triangular(a.triu() + 3 * L.eye(4), L.tensor(_B), upper=True),
}


@pytest.mark.parametrize("name", sorted(_LINALG))
def test_linalg_on_complex_values_and_gradients(name):
    out = []
    for L in (torch, hookgrad):
        a = L.tensor(_A, requires_grad=True)
        y = _LINALG[name](L, a)
        loss = L.view_as_real(y * L.tensor(_W[:y.shape[0], :y.shape[1]])).pow(2).sum()
        g, = L.autograd.grad(loss, a)
        out.append((y.detach().numpy(), g.numpy()))
    for t, h in zip(out[0], out[1]):
        np.testing.assert_allclose(h, t, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("name", ["qr", "svd"])
def test_complex_qr_and_svd_vectors_refuse_to_differentiate(name):
    a = hookgrad.tensor(_A, requires_grad=True)
    out = hookgrad.linalg.qr(a) if name == "qr" else hookgrad.linalg.svd(a)
    with pytest.raises(NotImplementedError, match="does not support complex"):
        out[0].abs().sum().backward()
    t = torch.linalg.qr(torch.tensor(_A))[0] if name == "qr" else torch.linalg.svd(torch.tensor(_A))[0]
    assert abs(np.abs(out[0].detach().numpy()).sum() - np.abs(t.numpy()).sum()) < 1e-9   # values are PyTorch's
