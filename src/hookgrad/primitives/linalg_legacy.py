"""PyTorch's top-level linear algebra (torch.det, torch.svd, torch.triangular_solve, ...): the legacy signatures
and returns over torch.linalg's ops, the few legacy-only nodes (CholeskyBackward0, CholeskySolveBackward0,
CholeskyInverseBackward0, LuUnpackBackward0, TriangularSolveBackward0, GeqrfBackward0), PyTorch's deprecation
warnings, and the errors of the functions PyTorch removed (torch.solve, torch.lstsq, torch.eig, ...)."""
import numpy as np

from .._tensor import Tensor
from ..autograd.node import Node
from .._array import array_module
from .._warnings import warn_once
from . import return_types as RT
from . import solvers as S
from . import decomp as D


def det(input):
    return D.det(input)


def inverse(input, *, out=None):
    return S.inv(input)


def slogdet(input, *, out=None):
    return RT.slogdet(*S.slogdet(input))


def logdet(input):
    """log det(input): NaN for a negative determinant, -inf for a singular matrix (as PyTorch)."""
    sign, logabs = S.slogdet(input)
    from .elementwise import where
    return where(sign == -1, float("nan"), logabs)


def matrix_exp(input):
    return D.matrix_exp(input)


def matrix_power(input, n, *, out=None):
    return S.matrix_power(input, n)


def pinverse(input, rcond=1e-15):
    return D.pinv(input, rtol=rcond)


def svd(input, some=True, compute_uv=True, *, out=None):
    """The legacy SVD: (U, S, V) with V (not Vh); ``some``: the reduced one; without ``compute_uv`` U and V are
    zeros."""
    if not compute_uv:
        s = D.svdvals(input)
        d = input._data
        xp = array_module(d)
        m, n = d.shape[-2:]
        return RT.svd(Tensor._make(xp.zeros(d.shape[:-2] + (m, m), d.dtype)), s,
                      Tensor._make(xp.zeros(d.shape[:-2] + (n, n), d.dtype)))
    U, s, Vh = D.svd(input, full_matrices=not some)
    return RT.svd(U, s, Vh.mH)


def qr(input, some=True, *, out=None):
    warn_once("torch.qr is deprecated in favor of torch.linalg.qr and will be removed in a future PyTorch release.\n"
              "The boolean parameter 'some' has been replaced with a string parameter 'mode'.\nQ, R = torch.qr(A, some)"
              "\nshould be replaced with\nQ, R = torch.linalg.qr(A, 'reduced' if some else 'complete')")
    return RT.qr(*D.qr(input, "reduced" if some else "complete"))


class Cholesky(S.LinalgCholeskyEx, name="CholeskyBackward0"):
    saved_names = ("result",)


def cholesky(input, upper=False, *, out=None):
    warn_once("torch.cholesky is deprecated in favor of torch.linalg.cholesky and will be removed in a future PyTorch "
              "release.\nL = torch.cholesky(A)\nshould be replaced with\nL = torch.linalg.cholesky(A)\nand\nU = "
              "torch.cholesky(A, upper=True)\nshould be replaced with\nU = torch.linalg.cholesky(A).mH\nThis transform "
              "will produce equivalent results for all valid (symmetric positive definite) inputs.")
    S.check_matrix("cholesky", input)
    return Cholesky.apply(input, upper=bool(upper), check=True)[0]


class CholeskySolve(Node, name="CholeskySolveBackward0"):
    save = (0, 1, -1)
    saved_names = ("self", "input2", "result")
    saved_attrs = ("upper",)

    def forward(self, b, l):
        a = np.swapaxes(l, -1, -2) @ l if self.upper else l @ np.swapaxes(l, -1, -2)
        shape = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
        a = np.broadcast_to(a, shape + a.shape[-2:])
        b = np.broadcast_to(b, shape + b.shape[-2:])
        return np.linalg.solve(a, b) if a.size and b.size else array_module(b).zeros(b.shape, b.dtype)

    def backward(self, g):
        B, L, X = self.saved_values
        nf = self.next_functions
        gB = cholesky_solve(g, L, self.upper)
        gL = None
        if nf[1][0] is not None:
            common = gB @ X.mH
            common = common + common.mH
            gL = -(L @ common) if self.upper else -(common @ L)
        return (gB if nf[0][0] is not None else None), gL


def cholesky_solve(input, input2, upper=False, *, out=None):
    """The solution X of A X = input, A = L L^H given its Cholesky factor input2 (U^H U with ``upper``)."""
    S.check_matrix("cholesky_solve", input2, arg="input2")
    S.check_tensor("cholesky_solve", input)
    if input._data.ndim < 2:
        raise RuntimeError(f"b should have at least 2 dimensions, but has {input._data.ndim} dimensions instead")
    if input._data.dtype != input2._data.dtype:
        raise RuntimeError(f"Expected b and A to have the same dtype, but found b of type "
                           f"{S._LONG[input._data.dtype.name]} and A of type {S._LONG[input2._data.dtype.name]} instead.")
    return CholeskySolve.apply(input, input2, upper=bool(upper))


class CholeskyInverse(Node, name="CholeskyInverseBackward0"):
    save = (0, -1)
    saved_names = ("self", "result")
    saved_attrs = ("upper",)

    def forward(self, l):
        a = np.swapaxes(l, -1, -2) @ l if self.upper else l @ np.swapaxes(l, -1, -2)
        return np.linalg.inv(a) if a.size else a.copy()

    def backward(self, g):
        L, inv = self.saved_values
        common = inv @ ((g + g.mH) @ inv)
        return (-(L @ common) if self.upper else -(common @ L)),


def cholesky_inverse(input, upper=False, *, out=None):
    """The inverse of A = L L^H (U^H U with ``upper``) from its Cholesky factor."""
    S.check_matrix("cholesky_inverse", input, arg="input")
    return CholeskyInverse.apply(input, upper=bool(upper))


def lu(A, pivot=True, get_infos=False):
    """The legacy LU: (LU, pivots[, infos])."""
    warn_once("torch.lu is deprecated in favor of torch.linalg.lu_factor / torch.linalg.lu_factor_ex and will be "
              "removed in a future PyTorch release.\nLU, pivots = torch.lu(A, compute_pivots)\nshould be replaced with"
              "\nLU, pivots = torch.linalg.lu_factor(A, compute_pivots)\nand\nLU, pivots, info = torch.lu(A, "
              "compute_pivots, get_infos=True)\nshould be replaced with\nLU, pivots, info = torch.linalg.lu_factor_ex("
              "A, compute_pivots)")
    LU, piv, info = S.lu_factor_ex(A, pivot=pivot)
    if get_infos:
        return RT._lu_with_info(LU, piv, info)
    return LU, piv


class LuUnpack(Node, name="LuUnpackBackward0"):
    nondiff_outputs = (0,)

    def forward(self, lu, piv):
        P, L, U = S.unpack_arrays(lu, piv)
        return P, L, U

    def backward(self, gL, gU):
        m, n = self.shape
        k = min(m, n)
        from .join import cat
        gl = gL.tril(-1)
        gu = gU.triu()
        if m == n:
            return gl + gu, None
        if m > n:       # L: m x n (the whole LU), U: n x n
            return gl + cat([gu, gl[..., k:, :] * 0], -2), None
        return cat([gl, gu[..., :, k:] * 0], -1) + gu, None


def lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True, *, out=None):
    """(P, L, U) from lu_factor's packed LU and pivots."""
    S.check_tensor("lu_unpack", LU_data, "LU_data")
    P, L, U = LuUnpack.apply(LU_data, LU_pivots, shape=tuple(LU_data._data.shape[-2:]))
    d = LU_data._data
    xp = array_module(d)
    if not unpack_data:
        L = Tensor._make(xp.zeros((0,), d.dtype))
        U = Tensor._make(xp.zeros((0,), d.dtype))
    if not unpack_pivots:
        P = Tensor._make(xp.zeros((0,), d.dtype))
    return RT.lu_unpack(P, L, U)


def lu_solve(input, LU_data, LU_pivots, *, out=None):
    warn_once("torch.lu_solve is deprecated in favor of torch.linalg.lu_solveand will be removed in a future PyTorch "
              "release.\nNote that torch.linalg.lu_solve has its arguments reversed.\nX = torch.lu_solve(B, LU, "
              "pivots)\nshould be replaced with\nX = torch.linalg.lu_solve(LU, pivots, B)")
    return S.lu_solve(LU_data, LU_pivots, input)


class TriangularSolve(Node, name="TriangularSolveBackward0"):
    save = (1, -1)
    saved_names = ("A", "solution")
    saved_attrs = ("upper", "transpose", "unitriangular")

    def forward(self, b, a):
        t = np.swapaxes(a, -1, -2) if self.transpose else a
        x = S._tri_solve_arrays(t, b, self.upper != self.transpose, True, self.unitriangular)
        shape = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
        return x, array_module(a).ascontiguousarray(np.broadcast_to(a, shape + a.shape[-2:]))

    def backward(self, gX, gM):
        A, X = self.saved_values
        nf = self.next_functions
        opA = A.mT if self.transpose else A
        gB = S.solve_triangular(opA.mH, gX, upper=self.upper == self.transpose, unitriangular=self.unitriangular)
        gA = None
        if nf[1][0] is not None:
            g_op = -(gB @ X.mH)
            gA = g_op.mT if self.transpose else g_op
            if self.unitriangular:
                gA = gA.triu(1) if self.upper else gA.tril(-1)
            else:
                gA = gA.triu() if self.upper else gA.tril()
            gA = gA + gM
        return (gB if nf[0][0] is not None else None), gA


def triangular_solve(input, A, upper=True, transpose=False, unitriangular=False, *, out=None):
    """The legacy triangular solve: (solution, cloned_coefficient) of op(A) X = input."""
    warn_once("torch.triangular_solve is deprecated in favor of torch.linalg.solve_triangularand will be removed in "
              "a future PyTorch release.\ntorch.linalg.solve_triangular has its arguments reversed and does not "
              "return a copy of one of the inputs.\nX = torch.triangular_solve(B, A).solution\nshould be replaced "
              "with\nX = torch.linalg.solve_triangular(A, B).")
    S.check_matrix("triangular_solve", A, arg="A")
    S.check_tensor("triangular_solve", input)
    if input._data.ndim < 2:
        raise RuntimeError(f"torch.triangular_solve: Expected b to have at least 2 dimensions, but it has "
                           f"{input._data.ndim} dimensions instead")
    n = A._data.shape[-1]
    if input._data.shape[-2] != n:
        raise RuntimeError(f"Incompatible matrix sizes for triangular_solve: each A matrix is {n} by {n} but each b "
                           f"matrix is {input._data.shape[-2]} by {input._data.shape[-1]}")
    return RT.triangular_solve(*TriangularSolve.apply(input, A, upper=bool(upper), transpose=bool(transpose),
                                                      unitriangular=bool(unitriangular)))


class Geqrf(Node, name="GeqrfBackward0"):
    def forward(self, a):
        xp = array_module(a)
        m, n = a.shape[-2:]
        if not a.size:
            return a.copy(), xp.zeros(a.shape[:-2] + (min(m, n),), a.dtype)
        h, tau = np.linalg.qr(a, mode="raw")
        return xp.ascontiguousarray(np.swapaxes(h, -1, -2)).astype(a.dtype), tau.astype(a.dtype)

    def backward(self, ga, gtau):
        raise RuntimeError("The derivative of geqrf is not implemented. Use linalg.qr instead.")


def geqrf(input, *, out=None):
    """LAPACK's geqrf: R above the diagonal, the Householder vectors below, and their scales tau."""
    S.check_matrix("geqrf", input, square=False, arg="input")
    return RT.geqrf(*Geqrf.apply(input))


def orgqr(input, input2, *, out=None):
    return D.householder_product(input, input2)


def ormqr(input, input2, input3, left=True, transpose=False, *, out=None):
    """op(Q) @ other (or other @ op(Q)), Q = the product of the Householder matrices of (input, tau)."""
    tau, other = input2, input3
    from .join import cat
    from .linalg import matmul
    m, n = input._data.shape[-2:]
    a = input if n == m else cat([input, input[..., :, :1].expand(input.shape[:-1] + (m - n,)) * 0], -1) \
        if n < m else input[..., :, :m]
    Q = D.householder_product(a, tau)
    if transpose:
        Q = Q.mH
    return matmul(Q, other) if left else matmul(other, Q)


def frobenius_norm(input, dim, keepdim=False, *, out=None):
    warn_once("at::frobenius_norm is deprecated and it is just left for JIT compatibility. It will be removed in a "
              "future PyTorch release. Please use `linalg.vector_norm(A, 2., dim, keepdim)` instead")
    from .reduce import vector_norm
    return vector_norm(input, 2, dim, keepdim)


def nuclear_norm(input, dim=None, keepdim=False, *, out=None):
    warn_once("at::nuclear_norm is deprecated and it is just left for JIT compatibility. It will be removed in a "
              "future PyTorch release. Please use `linalg.matrix_norm(A, 'nuc', dim, keepdim)` instead")
    if isinstance(dim, bool):
        dim, keepdim = None, dim
    return D.spectral_norm(input, "nuc", (-2, -1) if dim is None else tuple(dim), keepdim)


# ------------------------------------------------------------------ functions PyTorch removed (they raise)
_REMOVED = "This function was deprecated since version 1.9 and is now removed. "
_SOLVE = (_REMOVED + "`torch.solve` is deprecated in favor of `torch.linalg.solve`. `torch.linalg.solve` has its "
          "arguments reversed and does not return the LU factorization.\n\nTo get the LU factorization see "
          "`torch.lu`, which can be used with `torch.lu_solve` or `torch.lu_unpack`.\nX = torch.solve(B, A).solution "
          "should be replaced with:\nX = torch.linalg.solve(A, B)")
_LSTSQ = (_REMOVED + "`torch.lstsq` is deprecated in favor of `torch.linalg.lstsq`.\n`torch.linalg.lstsq` has "
          "reversed arguments and does not return the QR decomposition in the returned tuple (although it returns "
          "other information about the problem).\n\nTo get the QR decomposition consider using `torch.linalg.qr`.\n\n"
          "The returned solution in `torch.lstsq` stored the residuals of the solution in the last m - n columns of "
          "the returned value whenever m > n. In torch.linalg.lstsq, the residuals are in the field 'residuals' of "
          "the returned named tuple.\n\nThe unpacking of the solution, as in\nX, _ = torch.lstsq(B, A).solution"
          "[:A.size(1)]\nshould be replaced with:\nX = torch.linalg.lstsq(A, B).solution")
_EIG = (_REMOVED + "`torch.linalg.eig` returns complex tensors of dtype `cfloat` or `cdouble` rather than real "
        "tensors mimicking complex tensors.\n\nL, _ = torch.eig(A) should be replaced with:\nL_complex = "
        "torch.linalg.eigvals(A)\n\nand\n\nL, V = torch.eig(A, eigenvectors=True) should be replaced with:\n"
        "L_complex, V_complex = torch.linalg.eig(A)")
_SYMEIG = (_REMOVED + "The default behavior has changed from using the upper triangular portion of the matrix by "
           "default to using the lower triangular portion.\n\nL, _ = torch.symeig(A, upper=upper) should be replaced "
           "with:\nL = torch.linalg.eigvalsh(A, UPLO='U' if upper else 'L')\n\nand\n\nL, V = torch.symeig(A, "
           "eigenvectors=True) should be replaced with:\nL, V = torch.linalg.eigh(A, UPLO='U' if upper else 'L')")
_MATRIX_RANK = (_REMOVED[:-1] + "\nPlease use the `torch.linalg.matrix_rank` function instead. The parameter 'symmetric' "
                "was renamed in `torch.linalg.matrix_rank()` to 'hermitian'.")


def solve(input, A, *, out=None):
    raise RuntimeError(_SOLVE)


def lstsq(input, A, *, out=None):
    raise RuntimeError(_LSTSQ)


def eig(self, eigenvectors=False, *, e=None, v=None):
    raise RuntimeError(_EIG)


def symeig(input, eigenvectors=False, upper=True, *, out=None):
    raise RuntimeError(_SYMEIG)


def matrix_rank(input, tol=None, symmetric=False, *, out=None):
    raise RuntimeError(_MATRIX_RANK)


def _solve_method(self, other):
    raise RuntimeError(_SOLVE)


def _lstsq_method(self, other):
    raise RuntimeError(_LSTSQ)


def _symeig_method(self, eigenvectors=False, upper=True):
    raise RuntimeError(_SYMEIG)


# ------------------------------------------------------------------ randomized low-rank SVD and PCA (torch._lowrank)
def _lowrank_matmul(A, B):
    from .linalg import matmul
    return B if A is None else matmul(A, B)


def get_approximate_basis(A, q, niter=2, M=None):
    """Q with q orthonormal columns such that Q Q^H (A - M) approximates A - M: Halko et al.'s randomized range
    finder (Algorithm 4.4), drawing its Gaussian test matrix with ``randn`` as PyTorch (same seed, same Q)."""
    from .._creation import randn, _in_module
    niter = 2 if niter is None else niter
    dt = A.dtype if (A.dtype.is_floating_point or A.is_complex()) else None
    R = _in_module(randn(A.shape[-1], q, dtype=dt), A._xp)
    X = _lowrank_matmul(A, R)
    if M is not None:
        X = X - _lowrank_matmul(M, R)
    Q = D.qr(X).Q
    for _ in range(niter):
        X = _lowrank_matmul(A.mH, Q)
        if M is not None:
            X = X - _lowrank_matmul(M.mH, Q)
        Q = D.qr(X).Q
        X = _lowrank_matmul(A, Q)
        if M is not None:
            X = X - _lowrank_matmul(M, Q)
        Q = D.qr(X).Q
    return Q


def _svd_lowrank(A, q=6, niter=2, M=None):
    q = 6 if q is None else q
    m, n = A.shape[-2:]
    if M is not None:
        M = M.broadcast_to(A.size())
    if m < n:
        A = A.mH
        if M is not None:
            M = M.mH
    Q = get_approximate_basis(A, q, niter=niter, M=M)
    B = _lowrank_matmul(Q.mH, A)
    if M is not None:
        B = B - _lowrank_matmul(Q.mH, M)
    U, S, Vh = D.svd(B, full_matrices=False)
    V = Vh.mH
    U = Q.matmul(U)
    if m < n:
        U, V = V, U
    return U, S, V


def svd_lowrank(A, q=6, niter=2, M=None):
    """A ~ U diag(S) V^H (of A - M when M is given) by a randomized SVD of rank q (Halko et al., Algorithm 5.1):
    built from matmul, qr and svd, so it is differentiable; ``manual_seed`` gives PyTorch's result."""
    return _svd_lowrank(A, q=q, niter=niter, M=M)


def pca_lowrank(A, q=None, center=True, niter=2):
    """PCA of the data matrix A (m samples x n features, batches too) by svd_lowrank of the centred A:
    (U, S, V), V's columns the principal directions; q defaults to min(6, m, n)."""
    m, n = A.shape[-2:]
    if q is None:
        q = min(6, m, n)
    elif not (q >= 0 and q <= min(m, n)):
        raise ValueError(f"q(={q}) must be non-negative integer and not greater than min(m, n)={min(m, n)}")
    if not (niter >= 0):
        raise ValueError(f"niter(={niter}) must be non-negative integer")
    if not center:
        return _svd_lowrank(A, q, niter=niter, M=None)
    C = A.mean(dim=(-2,), keepdim=True)
    return _svd_lowrank(A - C, q, niter=niter, M=None)


# Tensor methods (installed by primitives/__init__.py)
METHODS = {
    "det": det, "inverse": inverse, "slogdet": slogdet, "logdet": logdet, "matrix_exp": matrix_exp,
    "matrix_power": matrix_power, "pinverse": pinverse, "svd": svd, "qr": qr, "cholesky": cholesky,
    "cholesky_solve": cholesky_solve, "cholesky_inverse": cholesky_inverse, "lu": lu, "lu_solve": lu_solve,
    "triangular_solve": triangular_solve, "geqrf": geqrf, "orgqr": orgqr, "ormqr": ormqr,
    "solve": _solve_method, "lstsq": _lstsq_method, "eig": eig, "symeig": _symeig_method,
}
