"""hookgrad.linalg: the part of torch.linalg that hookgrad implements (norms, matmul aliases)."""
import sys

from .reduce import vector_norm
from .linalg import matmul, einsum  # noqa: F401
from .._tensor import Tensor

__all__ = ["vector_norm", "matrix_norm", "norm", "matmul", "vecdot"]


def matrix_norm(input, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None):
    """Matrix norm over the two dims in ``dim``: 'fro' only (other orders need an SVD)."""
    if input._data.ndim < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 dimensions.")
    if len(dim) != 2:
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {len(dim)}")
    if ord == "fro":
        return vector_norm(input, 2, dim, keepdim, dtype=dtype)
    if ord in (1, -1, float("inf"), -float("inf")):
        a = vector_norm(input, 1, dim[0] if ord in (1, -1) else dim[1], True, dtype=dtype).abs()
        r = a.amax(dim, keepdim) if ord > 0 else a.amin(dim, keepdim)
        return r
    raise NotImplementedError(f"hookgrad: linalg.matrix_norm with ord={ord!r} is not supported")


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


def vecdot(x, y, *, dim=-1):
    """Dot product of x and y along dim (broadcasting)."""
    return (x * y).sum(dim)


sys.modules.setdefault("hookgrad.linalg", sys.modules[__name__])


# a torch name hookgrad lacks raises _missing.NotImplementedName (an AttributeError)
from .. import _missing  # noqa: E402
__getattr__ = _missing.module_getattr("hookgrad.linalg", 'torch.linalg')
