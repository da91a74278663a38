"""Complex matrix products against torch: values, grad_fn names, and the gradients of a real loss (PyTorch's
convention: grad_a = g b^H, grad_b = a^H g), first and second order; linalg.eig with complex eigenvalues."""
import numpy as np
import pytest

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
