"""hookgrad.linalg: the part of torch.linalg that hookgrad implements (norms, matmul aliases)."""
import sys

from .reduce import vector_norm
from .linalg import matmul, einsum  # noqa: F401
from .._tensor import Tensor
from .solvers import (LinAlgError, inv, inv_ex, solve, solve_ex, cholesky, cholesky_ex,  # noqa: F401
                      solve_triangular, slogdet, lu_factor, lu_factor_ex, lu, lu_solve, matrix_power, multi_dot,
                      tensorinv, tensorsolve, ldl_factor, ldl_factor_ex, ldl_solve)
from .decomp import (svd, svdvals, eigh, eigvalsh, qr, det, pinv, matrix_rank, lstsq, matrix_exp,  # noqa: F401
                     householder_product, eig, eigvals, spectral_norm as _spectral_norm)
from . import linalg as _L

__all__ = ["vector_norm", "matrix_norm", "norm", "matmul", "vecdot", "LinAlgError", "inv", "inv_ex", "solve",
           "solve_ex", "cholesky", "cholesky_ex", "solve_triangular", "slogdet", "lu_factor", "lu_factor_ex", "lu",
           "lu_solve", "matrix_power", "multi_dot", "tensorinv", "tensorsolve", "svd", "svdvals", "eigh",
           "eigvalsh", "qr", "det", "pinv", "matrix_rank", "lstsq", "matrix_exp", "householder_product", "cond",
           "cross", "diagonal", "vander", "eig", "eigvals", "ldl_factor", "ldl_factor_ex", "ldl_solve"]


def matrix_norm(input, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None):
    """Matrix norm over the two dims in ``dim``: 'fro' only (other orders need an SVD)."""
    if input._data.ndim < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 dimensions.")
    if len(dim) != 2:
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {len(dim)}")
    if ord == "fro":
        return vector_norm(input, 2, dim, keepdim, dtype=dtype)
    if ord in (2, -2, "nuc"):
        if dtype is not None:
            input = input.to(dtype)
        return _spectral_norm(input, ord, dim, keepdim)
    if ord in (1, -1, float("inf"), -float("inf")):
        a = vector_norm(input, 1, dim[0] if ord in (1, -1) else dim[1], True, dtype=dtype).abs()
        r = a.amax(dim, keepdim) if ord > 0 else a.amin(dim, keepdim)
        return r
    raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")


def norm(input, ord=None, dim=None, keepdim=False, *, dtype=None):
    """Vector norm (1-D input, or ord None with dim None/int) or Frobenius/1/inf matrix norm (2-D)."""
    if isinstance(dim, int):
        dim = (dim,)
    if ord is None:
        return vector_norm(input, 2, dim, keepdim, dtype=dtype)
    if dim is not None and len(dim) == 1 or dim is None and input._data.ndim == 1:
        if isinstance(ord, str):
            raise RuntimeError(f"linalg.vector_norm: ord must be a number, got {ord}")
        return vector_norm(input, ord, dim, keepdim, dtype=dtype)
    if dim is None and input._data.ndim != 2:
        raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got "
                           f"{input._data.ndim}D.")
    return matrix_norm(input, ord, (-2, -1) if dim is None else dim, keepdim, dtype=dtype)


def vecdot(x, y, *, dim=-1, out=None):
    """Dot product of x and y along dim (broadcasting)."""
    return (x * y).sum(dim)


def cross(input, other, *, dim=-1, out=None):
    """The cross product of 3-vectors along dim (the inputs broadcast)."""
    return _L.cross(input, other, dim)


def diagonal(A, *, offset=0, dim1=-2, dim2=-1):
    """The diagonals of (batches of) matrices (a view)."""
    return A.diagonal(offset, dim1, dim2)


def vander(x, N=None):
    """The Vandermonde matrix of the last dim of x: powers 0 .. N-1, increasing."""
    if x._data.ndim < 1:
        raise RuntimeError("linalg.vander: x must have at least one dimension")
    n = x._data.shape[-1] if N is None else N
    if n <= 1:
        if n < 1:
            raise RuntimeError("N must be greater than 1.")
        return x.unsqueeze(-1) * 0 + 1
    from .join import cat
    ones = (x.unsqueeze(-1) * 0 + 1).detach() if not x.dtype.is_floating_point else x.new_ones(x.shape + (1,))
    pw = x.unsqueeze(-1).expand(x.shape + (n - 1,)).cumprod(-1)
    return cat([ones.to(pw.dtype), pw], -1)


def cond(input, p=None, *, out=None):
    """The condition number of (batches of) matrices in the norm ``p`` (None or 2: by the singular values)."""
    A = input
    if A._data.ndim < 2:
        raise RuntimeError("linalg.cond: The input tensor A must have at least 2 dimensions.")
    if p in (None, 2, -2):
        s = svdvals(A)
        r = s[..., :1] / s[..., -1:] if p in (None, 2) else s[..., -1:] / s[..., :1]
        return r.squeeze(-1)
    if p not in ("fro", "nuc", 1, -1, float("inf"), -float("inf")):
        raise RuntimeError(f"linalg.cond got an invalid norm type: {p}")
    if A._data.shape[-1] != A._data.shape[-2]:
        raise RuntimeError(f"linalg.cond: A must be batches of square matrices, but they are {A._data.shape[-2]} by "
                           f"{A._data.shape[-1]} matrices")
    Ainv, info = inv_ex(A)
    if not info._data.any():
        return matrix_norm(A, p) * matrix_norm(Ainv, p)
    # a singular matrix: inf, as PyTorch (its inverse, full of inf, is not used)
    from .elementwise import where
    from .solvers import eye_like
    bad = info > 0
    Ainv = inv(where(bad.unsqueeze(-1).unsqueeze(-1), eye_like(A), A))
    return where(bad, float("inf"), matrix_norm(A, p) * matrix_norm(Ainv, p))


sys.modules.setdefault("hookgrad.linalg", sys.modules[__name__])


# a torch name hookgrad lacks raises _missing.NotImplementedName (an AttributeError)
from .. import _missing  # noqa: E402
common_notes = {"experimental_warning": "This function is experimental and may change.", "sync_note": "No device synchronisation on the CPU.", "sync_note_ex": "No device synchronisation on the CPU.", "sync_note_has_ex": "No device synchronisation on the CPU; see :func:`{}`."}  # noqa: E501 (PyTorch's keys, for docstrings)
__getattr__ = _missing.module_getattr("hookgrad.linalg", 'torch.linalg')
