"""torch.lobpcg: the k largest (or smallest) eigenpairs of the symmetric (generalized) eigenproblem A X = B X E.

PyTorch finds them by LOBPCG iterations (torch/_lobpcg.py); hookgrad computes the same eigenpairs with a dense
symmetric eigensolver (NumPy's eigh, after reducing B = L L^T to a standard problem), so the answer is the one the
iterations converge to, to machine precision rather than to ``tol`` (docs/differences.md). ``niter``, ``tol``,
``method``, ``iK``, ``tracker`` and the ``ortho_*`` parameters are checked and take no effect.

The gradient is PyTorch's (``A`` is symmetrized as ``(A + A^T) / 2`` first, so that its gradient is symmetric):
the full-eigenspace formula U (diag(dD) + (U^T dU) * F) U^T, F_ij = 1 / (d_j - d_i), plus, when U holds k < m
eigenvectors, the solution of the Sylvester equation on the orthogonal complement of span(U) through the
characteristic polynomial of D (Hu and Cheng, 2006). It is written with differentiable ops, so it has a
gradient of its own (gradgradcheck).
"""
import numpy as np

from .. import _dtype as Dt
from .._tensor import Tensor
from .._creation import eye, ones, zeros
from ..autograd.function import Function
from .join import cat
from .linalg_legacy import cholesky_solve
from .shape import diag_embed
from .solvers import cholesky

__all__ = ["lobpcg"]


# ---------------------------------------------------------------------------------------------- forward

def _eigenpairs(a, b, k, largest):
    """The k extreme eigenpairs of A x = lambda B x for the arrays ``a`` (..., m, m) and ``b`` (or None)."""
    if b is None:
        w, v = np.linalg.eigh(a)
    else:
        lo = np.linalg.cholesky(b)
        li = np.linalg.inv(lo)
        c = li @ a @ np.swapaxes(li, -1, -2)
        w, v = np.linalg.eigh((c + np.swapaxes(c, -1, -2)) / 2)
        v = np.swapaxes(li, -1, -2) @ v             # B-orthonormal eigenvectors of the generalized problem
    if largest:
        w, v = w[..., ::-1], v[..., ::-1]
    return np.ascontiguousarray(w[..., :k]), np.ascontiguousarray(v[..., :k])


def _sparse(t):
    return getattr(t._data, "_layout", None) is not None


def _dense(t):
    if t is None:
        return None
    if _sparse(t):
        t = t.to_dense()
    return t.detach()._data


def _solve(A, k, B, X, n, largest):
    """The checks of PyTorch's _lobpcg, then the eigenpairs (E, X) as tensors of A's floating dtype."""
    if A.shape[-2] != A.shape[-1]:
        raise AssertionError(f"A must be square, got shape {A.shape}")
    if B is not None and A.shape != B.shape:
        raise AssertionError(f"A and B must have same shape, got {A.shape} vs {B.shape}")
    m = A.shape[-1]
    k = (1 if X is None else X.shape[-1]) if k is None else k
    n = (k if n is None else n) if X is None else X.shape[-1]
    if m < 3 * n:
        raise ValueError(f"LOBPCG algorithm is not applicable when the number of A rows (={m}) is smaller than 3 x "
                         f"the number of requested eigenpairs (={n})")
    if X is not None and tuple(X.shape[-2:]) != (m, n):
        raise AssertionError(f"X shape mismatch: got {X.shape}, expected {(m, n)}")
    dt = A.dtype if A.dtype in (Dt.float32, Dt.float64) else Dt.float32
    a = _dense(A).astype(dt.np)
    b = None if B is None else _dense(B).astype(dt.np)
    w, v = _eigenpairs(a, b, k, True if largest is None else largest)
    return Tensor._make(w), Tensor._make(v)


# --------------------------------------------------------------------------------------------- backward

def _char_poly(d):
    """Coefficients c_0..c_k (ascending powers, c_k = 1) of prod_i (x - d_i) over the last dim of ``d``, built from
    differentiable ops."""
    shape = tuple(d.shape[:-1]) + (1,)
    z = zeros(shape, dtype=d.dtype)
    c = ones(shape, dtype=d.dtype)
    for i in range(d.shape[-1]):
        r = d[..., i:i + 1]
        c = cat([z, c], -1) - r * cat([c, z], -1)
    return c


def _poly_at_values(c, x):
    """sum_j c_j x^j (c's last coefficient 1) at each entry of ``x`` (..., k), by Horner's rule."""
    res = ones(x.shape, dtype=x.dtype)
    for j in range(c.shape[-1] - 2, -1, -1):
        res = c[..., j:j + 1] + x * res
    return res


def _poly_at_matrix(c, a):
    """sum_j c_j A^j (c's last coefficient 1) for the batch of matrices ``a`` (N, m, m), by Horner's rule."""
    i = eye(a.shape[-1], dtype=a.dtype)
    res = i.expand(a.shape)
    for j in range(c.shape[-1] - 2, -1, -1):
        res = a.bmm(res) + c[..., j:j + 1].unsqueeze(-1) * i
    return res


def _full_eigenspace_grad(dd, du, d, u):
    k = d.shape[-1]
    gap = d.unsqueeze(-2) - d.unsqueeze(-1)
    diag = eye(k, dtype=Dt.bool_)
    f = gap.masked_fill(diag, float("inf")).reciprocal()         # F_ij = 1 / (d_j - d_i), F_ii = 0
    ut = u.mT
    return u.bmm((diag_embed(dd) + ut.bmm(du) * f).bmm(ut))


def _eigenpairs_grad(dd, du, a, d, u, largest):
    """The gradient of A from those of the eigenpairs (D, U); the batch is flattened (N, ...) so that every product
    is one bmm."""
    batch, m, k = tuple(a.shape[:-2]), u.shape[-2], u.shape[-1]
    a, d, u = a.reshape(-1, m, m), d.reshape(-1, k), u.reshape(-1, m, k)
    dd, du = dd.reshape(-1, k), du.reshape(-1, m, k)
    res = _full_eigenspace_grad(dd, du, d, u)
    if k < m:
        ut = u.mT
        proj = eye(m, dtype=a.dtype) - u.bmm(ut)             # onto the orthogonal complement of span(U)
        # a fixed spanning set projected onto it (the gradient does not depend on which)
        fixed = np.random.default_rng(0).standard_normal((a.shape[0], m, m - k)).astype(a.dtype.np)
        u_ortho = proj.bmm(Tensor._make(fixed))
        u_ortho_t = u_ortho.mT
        c = _char_poly(d)
        # sum_j A^(j-1) dU * p_j(D), p_j having the coefficients c_j.. of the characteristic polynomial
        acc = None
        du_j = du
        for j in range(1, k + 1):
            term = du_j * _poly_at_values(c[..., j:], d).unsqueeze(-2)
            acc = term if acc is None else acc + term
            du_j = a.bmm(du_j)
        restricted = u_ortho_t.bmm(_poly_at_matrix(c, a).bmm(u_ortho))
        sign = -1.0 if (largest and k % 2 == 1) else 1.0    # restricted * sign is positive definite
        low = cholesky(sign * restricted)
        res = res - u_ortho.bmm(sign * cholesky_solve(u_ortho_t.bmm(acc), low)).bmm(ut)
    return res.reshape(*batch, m, m)


class _LOBPCG(Function):
    @staticmethod
    def forward(ctx, A, k, B, X, n, largest):
        E, U = _solve(A, k, B, X, n, largest)
        ctx.save_for_backward(A, E, U)
        ctx.largest = True if largest is None else largest
        ctx.has_b = B is not None
        return E, U

    @staticmethod
    def backward(ctx, dE, dU):
        A, E, U = ctx.saved_tensors
        if _sparse(A):
            raise ValueError("lobpcg.backward does not support sparse input yet.Note that lobpcg.forward does though.")
        if A.dtype.is_complex:
            raise ValueError("lobpcg.backward does not support complex input yet.Note that lobpcg.forward does though.")
        if ctx.has_b:
            raise ValueError("lobpcg.backward does not support backward with B != I yet.")
        return _eigenpairs_grad(dE, dU, A, E, U, ctx.largest), None, None, None, None, None


def lobpcg(A, k=None, B=None, X=None, n=None, iK=None, niter=None, tol=None, largest=None, method=None,
           tracker=None, ortho_iparams=None, ortho_fparams=None, ortho_bparams=None):
    """The ``k`` largest (``largest=False``: smallest) eigenvalues E and B-orthonormal eigenvectors X of
    A X = B X diag(E), for symmetric A (and positive definite B); batched over leading dims. See the module
    docstring for what differs from PyTorch's iterations."""
    if method not in (None, "basic", "ortho"):
        raise ValueError(f"Expected method to be 'basic' or 'ortho', but got {method}")
    if A.requires_grad or (B is not None and B.requires_grad):
        # the gradient of a symmetric A is made symmetric (so that A - lr * A.grad stays symmetric), as PyTorch
        A_sym = (A + A.mT) / 2
        B_sym = (B + B.mT) / 2 if B is not None else None
        return _LOBPCG.apply(A_sym, k, B_sym, X, n, largest)
    return _solve(A, k, B, X, n, largest)
