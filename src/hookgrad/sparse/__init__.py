"""torch.sparse: products and reductions of sparse tensors (the tensors and their ops: primitives/sparse.py)."""
import contextlib as _contextlib

from .._tensor import Tensor
from ..primitives.sparse import mm, addmm, sum  # noqa: F401
from ..primitives import sparse as _S

__all__ = ["addmm", "check_sparse_tensor_invariants", "mm", "sum", "softmax", "log_softmax", "spdiags",
           "as_sparse_gradcheck"]


def softmax(input, dim, *, dtype=None):
    """torch.sparse.softmax: the softmax over the specified entries of each slice (unspecified ones are -inf)."""
    return _masked_rows(input, dim, dtype, "softmax")


def log_softmax(input, dim, *, dtype=None):
    """torch.sparse.log_softmax: the log-softmax over the specified entries of each slice."""
    return _masked_rows(input, dim, dtype, "log_softmax")


def _masked_rows(input, dim, dtype, name):
    x = input.coalesce() if input.layout is _S.L.sparse_coo else input
    if dtype is not None:
        x = x.to(dtype)
    dense = x.to_dense()
    mask = _S.sparse_mask(dense.detach() * 0 + 1, x).to_dense() != 0
    filled = dense.masked_fill(~mask, float("-inf"))
    r = getattr(filled, name)(dim)
    r = r.masked_fill(~mask, 0.0)
    return _S.sparse_mask(r, x)


def spdiags(diagonals, offsets, shape, layout=None):
    """torch.sparse.spdiags(diagonals, offsets, shape, layout=None): a sparse matrix from diagonals (COO by default)."""
    import numpy as np
    from .._creation import tensor
    d = diagonals.detach().numpy()
    offs = [int(o) for o in offsets.tolist()]
    rows, cols, vals = [], [], []
    m, n = shape
    for k, off in enumerate(offs):
        for j in range(max(0, off), min(n, m + off)):
            rows.append(j - off)
            cols.append(j)
            vals.append(d[k, j])
    idx = tensor(np.array([rows, cols], np.int64).reshape(2, -1))
    r = _S.sparse_coo_tensor(idx, tensor(np.array(vals, d.dtype)), (m, n)).coalesce()
    if layout is not None and layout is not _S.L.sparse_coo:
        r = _S.to_sparse(r, layout=layout)
    return r


class check_sparse_tensor_invariants(_contextlib.ContextDecorator):
    """torch.sparse.check_sparse_tensor_invariants: whether sparse_coo_tensor checks its indices (off by default)."""

    def __init__(self, enable=True):
        self.state = enable
        self.saved_state = None

    @staticmethod
    def is_enabled():
        return _S._CHECK_INVARIANTS[0]

    @staticmethod
    def enable():
        _S._CHECK_INVARIANTS[0] = True

    @staticmethod
    def disable():
        _S._CHECK_INVARIANTS[0] = False

    def __enter__(self):
        self.saved_state = _S._CHECK_INVARIANTS[0]
        _S._CHECK_INVARIANTS[0] = self.state
        return self

    def __exit__(self, *exc):
        _S._CHECK_INVARIANTS[0] = self.saved_state


def as_sparse_gradcheck(gradcheck):
    """torch.sparse.as_sparse_gradcheck: hookgrad's gradcheck takes sparse inputs itself (masked=True)."""
    import functools

    @functools.wraps(gradcheck)
    def wrapped(func, inputs, **kwargs):
        kwargs.setdefault("masked", True)
        return gradcheck(func, inputs, **kwargs)
    return wrapped


del Tensor
