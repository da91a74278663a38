"""Sparse tensors' ops: layout conversions, construction, the getters, coalesce, sparse_mask, sparse mm and sum.

A sparse tensor is a Tensor whose ``_data`` is a sparse storage (``_layout.SparseCOO`` for torch.sparse_coo,
``_layout.Compressed`` for CSR/CSC/BSR/BSC); the storages hold arrays of the values' array module and answer
the array operations autograd's plumbing needs. Each primitive here is one Node: forward on storages/arrays and
its gradient formula (on Tensors) side by side, with PyTorch's grad_fn names and its gradient layouts:

- ``to_dense`` of a sparse tensor: the gradient is the incoming one masked to the input's pattern
  (``masked_grad=True``, PyTorch's default), or all of it in the input's layout (``masked_grad=False``);
- ``to_sparse*``: the gradient converted back to the input's layout;
- ``sparse_coo_tensor(indices, values)``: the values' gradient is the incoming gradient at each index;
- ``values()``: a sparse gradient with the tensor's indices; ``_values()``/``_indices()`` are not differentiable;
- ``torch.sparse.mm``/``addmm``: the sparse operand's gradient is masked to its pattern (``torch.mm`` gives a
  dense one); ``torch.sparse.sum``: the gradient is sparse, with the input's pattern.
"""
import numpy as np

from .. import _layout as L
from .. import _dtype as D
from .._array import array_module
from .._tensor import Tensor, Size
from ..autograd.node import Node
from ..autograd.grad_mode import _state

_make = Tensor._make
_CHECK_INVARIANTS = [False]     # torch.sparse.check_sparse_tensor_invariants' global switch
_SPARSE_WARNED = set()
_STRIDED = L.strided


def _storage(t):
    return t._data


def _is_sparse(t):
    return isinstance(t, Tensor) and L.is_sparse_storage(t._data)


def _layout_arg(layout, name="layout"):
    if layout is not None and not isinstance(layout, L.layout):
        raise TypeError(f"to_sparse(): argument '{name}' must be torch.layout, not {type(layout).__name__}")
    return layout


# ---- layout conversions -------------------------------------------------------------------------------------------

class ToDense(Node, name="ToDenseBackward0"):
    save = (0,)
    saved_names = ("self",)
    masked_grad = None

    def forward(self, x):
        return L.convert(x, _STRIDED)

    def backward(self, g):
        (x,) = self.saved_values
        if self.masked_grad is None or self.masked_grad:
            return sparse_mask(g, x)
        st = x._data
        return _to(g, st._layout, getattr(st, "blocksize", None), getattr(st, "sparse_dim", None))


class _ToSparse(Node, name="ToSparseBackward1"):
    """A conversion into a sparse layout; the gradient goes back into the input's layout."""
    layout = L.sparse_coo
    blocksize = None
    sparse_dim = None
    dense_dim = None
    src_layout = _STRIDED
    src_blocksize = None
    src_sparse_dim = None

    def forward(self, x):
        self.src_layout = L.layout_of(x)
        self.src_blocksize = getattr(x, "blocksize", None)
        self.src_sparse_dim = getattr(x, "sparse_dim", None) if self.src_layout is L.sparse_coo else None
        return L.convert(x, self.layout, self.blocksize, self.sparse_dim, self.dense_dim)

    def backward(self, g):
        return _to(g, self.src_layout, self.src_blocksize, self.src_sparse_dim)


class ToSparse0(_ToSparse, name="ToSparseBackward0"):
    pass


class ToSparseCsr(_ToSparse, name="ToSparseCsrBackward0"):
    layout = L.sparse_csr


class ToSparseCsc(_ToSparse, name="ToSparseCscBackward0"):
    layout = L.sparse_csc


class ToSparseBsr(_ToSparse, name="ToSparseBsrBackward0"):
    layout = L.sparse_bsr


class ToSparseBsc(_ToSparse, name="ToSparseBscBackward0"):
    layout = L.sparse_bsc


_BY_LAYOUT = {L.sparse_csr: ToSparseCsr, L.sparse_csc: ToSparseCsc, L.sparse_bsr: ToSparseBsr,
              L.sparse_bsc: ToSparseBsc}


def _to(g, layout, blocksize=None, sparse_dim=None):
    """Gradient ``g`` (any layout) in ``layout``: differentiable, so that double backward sees it."""
    src = g.layout
    if layout is _STRIDED:
        return to_dense(g) if src is not _STRIDED else g
    if layout is L.sparse_coo:
        return _ToSparse.apply(g, layout=layout, sparse_dim=sparse_dim)
    return _BY_LAYOUT[layout].apply(g, blocksize=None if blocksize is None else tuple(blocksize))


def to_dense(self, dtype=None, *, masked_grad=None):
    """``Tensor.to_dense()``: a strided copy of a sparse tensor (a strided tensor itself)."""
    if dtype is not None and not isinstance(dtype, D.dtype):
        raise TypeError(f"to_dense(): argument 'dtype' (position 1) must be torch.dtype, not {type(dtype).__name__}")
    if dtype is not None:
        self = self.to(dtype)
    if not _is_sparse(self):
        return self
    return ToDense.apply(self, masked_grad=masked_grad) if masked_grad is not None else ToDense.apply(self)


def _check_blocksize(blocksize, name):
    if blocksize is None:
        return None
    if isinstance(blocksize, int):
        blocksize = (blocksize, blocksize)
    blocksize = tuple(int(b) for b in blocksize)
    if len(blocksize) != 2:
        raise RuntimeError(f"{name}: blocksize needs to be a tuple of size 2, but got {len(blocksize)}")
    return blocksize


def to_sparse(self, *args, layout=None, blocksize=None, dense_dim=None, sparse_dim=None):
    """``Tensor.to_sparse(sparse_dim)`` or ``to_sparse(layout=, blocksize=, dense_dim=)``."""
    if sparse_dim is not None:
        args = args + (sparse_dim,)
    if args:
        if len(args) > 1 or layout is not None or blocksize is not None or dense_dim is not None:
            raise TypeError("to_sparse() received an invalid combination of arguments - got "
                            f"({', '.join(type(a).__name__ for a in args)}), but expected one of:\n"
                            " * (*, torch.layout layout = None, tuple of ints blocksize = None, int dense_dim = None)\n"
                            " * (int sparse_dim)")
        sd = int(args[0])
        if not 0 <= sd <= self.dim():
            raise RuntimeError(f"sparse_dim argument must be in [0,{self.dim()}] range, but {sd} is given")
        if _is_sparse(self) and self.layout is not L.sparse_coo:
            raise RuntimeError(f"to_sparse: conversion from {L._NAMES[self.layout._name]} to Sparse with sparse_dim "
                               f"argument != 2 is not supported")
        return ToSparse0.apply(self, sparse_dim=sd)
    layout = _layout_arg(layout) or L.sparse_coo
    if layout is L.sparse_coo:
        if blocksize is not None:
            raise RuntimeError("to_sparse for Strided to Sparse conversion does not use specified blocksize")
        if self.layout is L.sparse_coo:
            return self
        return _ToSparse.apply(self, dense_dim=dense_dim) if dense_dim else _ToSparse.apply(self)
    if layout is _STRIDED:
        raise RuntimeError("to_sparse: expected a sparse layout, got torch.strided (hookgrad: use to_dense())")
    return _compressed(self, layout, blocksize, dense_dim, "to_sparse", _ToSparse)


def _compressed(self, layout, blocksize, dense_dim, name, cls=None):
    blocked = layout is L.sparse_bsr or layout is L.sparse_bsc
    blocksize = _check_blocksize(blocksize, name)
    if blocked and blocksize is None:
        raise RuntimeError(f"{name}: {L._NAMES[layout._name]} conversion requires blocksize")
    if not blocked and blocksize is not None:
        raise RuntimeError(f"{name}: blocksize is not used for conversion to {L._NAMES[layout._name]}")
    if self.dim() - (dense_dim or 0) < 2:
        err = IndexError if self.dim() < 2 else RuntimeError
        raise err(f"{name}: expected at least 2 sparse dimensions for conversion to "
                           f"{L._NAMES[layout._name]}, got {self.dim() - (dense_dim or 0)}")
    if _is_sparse(self) and self.layout is layout and getattr(self._data, "blocksize", None) == blocksize:
        return self
    _warn_beta(layout)
    cls = cls or _BY_LAYOUT[layout]
    kw = {"layout": layout} if cls is _ToSparse else {}
    if blocksize is not None:
        kw["blocksize"] = blocksize
    if dense_dim:
        kw["dense_dim"] = dense_dim
    return cls.apply(self, **kw)


def _warn_beta(layout):
    if layout is not L.sparse_coo and "beta" not in _SPARSE_WARNED:
        import warnings
        _SPARSE_WARNED.add("beta")
        warnings.warn("Sparse CSR tensor support is in beta state. If you miss a functionality in the sparse tensor "
                      "support, please submit a feature request to https://github.com/pytorch/pytorch/issues. "
                      "(Triggered internally at /__w/pytorch/pytorch/aten/src/ATen/SparseCsrTensorImpl.cpp:49.)",
                      UserWarning, stacklevel=4)


def to_sparse_coo(self):
    return to_sparse(self)


def to_sparse_csr(self, dense_dim=None):
    return _compressed(self, L.sparse_csr, None, dense_dim, "to_sparse_csr")


def to_sparse_csc(self, dense_dim=None):
    return _compressed(self, L.sparse_csc, None, dense_dim, "to_sparse_csc")


def to_sparse_bsr(self, blocksize, dense_dim=None):
    return _compressed(self, L.sparse_bsr, blocksize, dense_dim, "to_sparse_bsr")


def to_sparse_bsc(self, blocksize, dense_dim=None):
    return _compressed(self, L.sparse_bsc, blocksize, dense_dim, "to_sparse_bsc")


# ---- construction -------------------------------------------------------------------------------------------------

class SparseCooTensor(Node, name="SparseCooTensorWithDimsAndTensorsBackward0"):
    """sparse_coo_tensor(indices, values, size): the values' gradient is the incoming gradient at each index."""
    save = (0,)
    saved_names = ("_indices",)
    size = None
    coalesced = False

    def forward(self, i, v):
        return L.SparseCOO(i, v, self.size, self.coalesced)

    def backward(self, g):
        (i,) = self.saved_values
        gd = to_dense(g) if _is_sparse(g) else g
        nnz = i.shape[1]
        if i.shape[0] == 0:
            return None, gd.unsqueeze(0).expand((nnz,) + tuple(gd.shape))
        if nnz == 0:
            return None, gd.new_zeros((0,) + tuple(gd.shape[i.shape[0]:]))
        return None, gd[tuple(i)]


class _CompressedTensor(Node, name="SparseCompressedTensorBackward0"):
    """sparse_csr_tensor & co.: the values' gradient is the incoming gradient at each stored position."""
    save = ()
    layout = L.sparse_csr
    size = None
    blocksize = None

    def forward(self, c, p, v):
        self._like = L.Compressed(self.layout, c, p, v, self.size, self.blocksize)
        return self._like

    def backward(self, g):
        gd = to_dense(g) if _is_sparse(g) else g
        return None, None, _make(L.mask_dense(gd._data, self._like).values) if not _state.enabled else \
            sparse_mask(gd, _make(self._like)).values()


def _index_tensor(i, name, fn="sparse_coo_tensor"):
    from .._creation import tensor as _tensor
    if not isinstance(i, (Tensor, list, tuple)) and not isinstance(i, np.ndarray):
        raise TypeError(f"{fn}() received an invalid combination of arguments - got ({type(i).__name__}, ...), "
                        f"but expected one of: (hookgrad: '{name}' must be a Tensor or a sequence)")
    if not isinstance(i, Tensor):
        i = _tensor(i, dtype=D.int64)
    if i._data.dtype.kind not in "iu":
        if fn != "sparse_coo_tensor":
            raise NotImplementedError(f'"estimate_sparse_compressed_tensor_size" not implemented for '
                                      f"'{i.dtype._legacy.replace('Tensor', '')}'")
        i = _make(i._data.astype(np.int64))       # PyTorch casts a COO tensor's indices to int64
    return i


def _values_tensor(v, dtype):
    from .._creation import tensor as _tensor
    if not isinstance(v, Tensor):
        v = _tensor(v, dtype=dtype)
    elif dtype is not None and v.dtype is not dtype:
        v = v.to(dtype)
    return v


def sparse_coo_tensor(indices=None, values=None, size=None, *, dtype=None, device=None, pin_memory=False,
                      requires_grad=False, check_invariants=None, is_coalesced=None):
    """torch.sparse_coo_tensor(indices, values, size=None): a COO tensor; its values' gradient flows back."""
    from .._creation import tensor as _tensor
    if indices is None and values is None:
        if size is None:
            raise TypeError("sparse_coo_tensor() missing required argument 'indices' (pos 1)")
        dt = dtype or D.get_default_dtype()
        return sparse_coo_tensor(_tensor(np.zeros((len(size), 0), np.int64)),
                                 _tensor(np.zeros((0,), dt.np)), size, requires_grad=requires_grad)
    if values is None and isinstance(indices, (tuple, list, Size)) and size is None:
        # torch.sparse_coo_tensor(size) is the empty tensor of that size
        return sparse_coo_tensor(size=tuple(indices), dtype=dtype, requires_grad=requires_grad)
    indices = _index_tensor(indices, "indices")
    values = _values_tensor(values, dtype)
    if indices.dim() != 2:
        raise RuntimeError(f"indices must be sparse_dim x nnz, but got: {list(indices.shape)}")
    sd, nnz = indices.shape
    if values.dim() == 0:
        raise RuntimeError("values has incorrect size, expected at least 1-D (nnz) values, got a 0-D tensor")
    if values.shape[0] != nnz:
        raise RuntimeError(f"indices and values must have same nnz, but got nnz from indices: {nnz}, "
                           f"nnz from values: {values.shape[0]}")
    idx = indices._data.astype(np.int64, copy=False)
    if size is None:
        mx = (idx.max(axis=1) + 1) if nnz else np.zeros(sd, np.int64)
        size = tuple(int(m) for m in mx) + tuple(values.shape[1:])
    size = tuple(int(s) for s in size)
    if len(size) != sd + values.dim() - 1:
        raise RuntimeError(f"number of dimensions must be sparse_dim ({sd}) + dense_dim ({values.dim() - 1}), but "
                           f"got {len(size)}")
    if tuple(values.shape[1:]) != size[sd:]:
        raise RuntimeError(f"values has incorrect size, expected {[nnz] + list(size[sd:])}, got "
                           f"{list(values.shape)}")
    check = _CHECK_INVARIANTS[0] if check_invariants is None else check_invariants
    if nnz and sd and check:        # PyTorch checks the indices only when asked (check_sparse_tensor_invariants)
        if (idx < 0).any():
            raise RuntimeError(f"found negative index {int(idx.min())} for dim {int((idx < 0).any(axis=1).argmax())}")
        over = idx >= np.asarray(size[:sd], np.int64)[:, None]
        if over.any():
            d = int(over.any(axis=1).argmax())
            raise RuntimeError(f"size is inconsistent with indices: for dim {d}, size is {size[d]} but found index "
                               f"{int(idx[d].max())}")
    if idx is not indices._data:
        indices = _make(idx)
    coalesced = bool(is_coalesced) if is_coalesced is not None else nnz <= 1
    t = SparseCooTensor.apply(indices, values, size=size, coalesced=coalesced)
    if requires_grad:
        t = t.detach().requires_grad_(True) if t.grad_fn is None else t.requires_grad_(True)
    return t


def _sparse_coo_tensor_unsafe(indices, values, size=None, **kw):
    return sparse_coo_tensor(indices, values, size, **kw)


def sparse_compressed_tensor(compressed_indices, plain_indices, values, size=None, *, dtype=None, layout=None,
                             device=None, pin_memory=False, requires_grad=False, check_invariants=None):
    """torch.sparse_compressed_tensor (and its csr/csc/bsr/bsc forms)."""
    name = "sparse_compressed_tensor" if not isinstance(layout, L.layout) else f"sparse_{layout._name[7:]}_tensor"
    if size is not None and (isinstance(size, Tensor) or not isinstance(size, (tuple, list, Size))):
        raise TypeError(f"{name}() received an invalid combination of arguments - got (..., "
                        f"size={type(size).__name__}), but expected one of: (hookgrad: size must be a tuple of ints)")
    if layout is None:
        raise RuntimeError("sparse_compressed_tensor: expected a sparse compressed layout, got None")
    if not isinstance(layout, L.layout):
        raise TypeError(f"sparse_compressed_tensor(): argument 'layout' must be torch.layout, not "
                        f"{type(layout).__name__}")
    from .._creation import tensor as _tensor
    c, p = (i if isinstance(i, Tensor) else _tensor(i) for i in (compressed_indices, plain_indices))
    v = _values_tensor(values, dtype)
    blocked = layout is L.sparse_bsr or layout is L.sparse_bsc
    if c.dim() < 1 or p.dim() < 1 or v.dim() < (3 if blocked else 1):
        raise RuntimeError(f"{name}(): compressed_indices and plain_indices must have at least 1 dimension and values "
                           f"at least {3 if blocked else 1}, got {c.dim()}, {p.dim()} and {v.dim()}")
    c = _index_tensor(c, "compressed_indices", name)
    p = _index_tensor(p, "plain_indices", name)
    if c.dim() != 1 or p.dim() != 1:
        raise RuntimeError("hookgrad: batched sparse compressed tensors are not supported (compressed and plain "
                           "indices must be 1-D)")
    bs = tuple(v.shape[1:3]) if blocked else None
    row_major = layout is L.sparse_csr or layout is L.sparse_bsr
    if size is None:
        n_major = c.shape[0] - 1
        n_plain = int(p._data.max()) + 1 if p.shape[0] else 0
        b = bs or (1, 1)
        size = (n_major * b[0], n_plain * b[1]) if row_major else (n_plain * b[0], n_major * b[1])
        size = size + tuple(v.shape[3 if blocked else 1:])
    size = tuple(int(s) for s in size)
    cd, pd = c._data.astype(np.int64, copy=False), p._data.astype(np.int64, copy=False)
    b = bs or (1, 1)
    n_major = size[0] // b[0] if row_major else size[1] // b[1]
    if cd.shape[0] != n_major + 1:
        cname = "crow_indices" if row_major else "ccol_indices"
        raise RuntimeError(f"{cname}.shape[-1] must be equal to the number of {'rows' if row_major else 'columns'} + 1 "
                           f"(={n_major + 1}), but got {cd.shape[0]}")
    if v.shape[0] != pd.shape[0]:
        raise RuntimeError(f"values.shape[0] must be equal to the number of specified elements ({pd.shape[0]}), but "
                           f"got {v.shape[0]}")
    if layout is not L.sparse_coo:
        _warn_beta(layout)
    t = _CompressedTensor.apply(_make(cd), _make(pd), v, layout=layout, size=size, blocksize=bs)
    if requires_grad:
        t = t.detach().requires_grad_(True) if t.grad_fn is None else t.requires_grad_(True)
    return t


def _fixed_layout(fn, layout, want, name):
    """PyTorch's check of a layout= given to a constructor of one layout."""
    if layout is not None and layout is not want:
        got = {L.sparse_coo: "Sparse", L.sparse_csr: "SparseCsr", L.sparse_csc: "SparseCsc", L.sparse_bsr: "SparseBsr",
               L.sparse_bsc: "SparseBsc"}.get(layout, "Strided")
        raise RuntimeError(f"{fn}: layout must be {name} but got {got}")


def sparse_csr_tensor(crow_indices, col_indices, values, size=None, *, dtype=None, device=None, pin_memory=False,
                      layout=None, requires_grad=False, check_invariants=None):
    """torch.sparse_csr_tensor(crow_indices, col_indices, values, size)."""
    _fixed_layout("sparse_csr_tensor", layout, L.sparse_csr, "SparseCsr")
    return sparse_compressed_tensor(crow_indices, col_indices, values, size, dtype=dtype, layout=L.sparse_csr,
                                    requires_grad=requires_grad)


def sparse_csc_tensor(ccol_indices, row_indices, values, size=None, *, dtype=None, device=None, pin_memory=False,
                      layout=None, requires_grad=False, check_invariants=None):
    """torch.sparse_csc_tensor(ccol_indices, row_indices, values, size)."""
    _fixed_layout("sparse_csc_tensor", layout, L.sparse_csc, "SparseCsc")
    return sparse_compressed_tensor(ccol_indices, row_indices, values, size, dtype=dtype, layout=L.sparse_csc,
                                    requires_grad=requires_grad)


def sparse_bsr_tensor(crow_indices, col_indices, values, size=None, *, dtype=None, device=None, pin_memory=False,
                      layout=None, requires_grad=False, check_invariants=None):
    """torch.sparse_bsr_tensor(crow_indices, col_indices, values, size): values are nnz blocks."""
    _fixed_layout("sparse_bsr_tensor", layout, L.sparse_bsr, "SparseBsr")
    return sparse_compressed_tensor(crow_indices, col_indices, values, size, dtype=dtype, layout=L.sparse_bsr,
                                    requires_grad=requires_grad)


def sparse_bsc_tensor(ccol_indices, row_indices, values, size=None, *, dtype=None, device=None, pin_memory=False,
                      layout=None, requires_grad=False, check_invariants=None):
    """torch.sparse_bsc_tensor(ccol_indices, row_indices, values, size): values are nnz blocks."""
    _fixed_layout("sparse_bsc_tensor", layout, L.sparse_bsc, "SparseBsc")
    return sparse_compressed_tensor(ccol_indices, row_indices, values, size, dtype=dtype, layout=L.sparse_bsc,
                                    requires_grad=requires_grad)


def _convert_indices_from_coo_to_csr(input, size, *, out_int32=False):
    """torch._convert_indices_from_coo_to_csr: sorted row indices -> crow indices of ``size`` rows."""
    a = input._data
    xp = array_module(a)
    counts = xp.bincount(a.astype(np.int64), minlength=size)[:size] if a.size else xp.zeros(size, np.int64)
    crow = xp.concatenate([xp.zeros(1, np.int64), xp.cumsum(counts)])
    return _make(crow.astype(np.int32 if out_int32 else np.int64))


def _convert_indices_from_csr_to_coo(crow_indices, col_indices, *, out_int32=False, transpose=False):
    """torch._convert_indices_from_csr_to_coo: crow and col indices -> the 2 x nnz COO indices."""
    c, p = crow_indices._data, col_indices._data
    xp = array_module(c)
    rows = xp.repeat(xp.arange(c.shape[0] - 1, dtype=np.int64), xp.diff(c).astype(np.int64))
    r = xp.stack([p.astype(np.int64), rows] if transpose else [rows, p.astype(np.int64)])
    return _make(r.astype(np.int32 if out_int32 else np.int64))


# ---- getters ------------------------------------------------------------------------------------------------------

def _need(self, layouts, what):
    lay = self.layout
    if lay not in layouts:
        backend = "CPU" if lay is _STRIDED else "SparseCPU" if lay is L.sparse_coo else "SparseCsrCPU"
        if what in ("indices", "_indices", "_nnz", "is_coalesced", "coalesce", "_values", "values", "sparse_dim",
                    "dense_dim") and lay is _STRIDED:
            if what in ("sparse_dim", "dense_dim"):
                raise RuntimeError(f"{what} expected sparse or strided tensor layout but got Strided")
            raise NotImplementedError(
                f"Could not run 'aten::{what}' with arguments from the '{backend}' backend. This could be because "
                f"the operator doesn't exist for this backend, or was omitted during the selective/custom build "
                f"process (if using custom build).")
        if lay in _COMPRESSED and layouts == _COO:
            raise RuntimeError(f"{what} expected sparse coordinate tensor layout but got {L._NAMES[lay._name]}")
        if what in ("crow_indices", "col_indices", "ccol_indices", "row_indices"):
            raise RuntimeError(f"{what} expected sparse row compressed tensor layout but got "
                               f"{L._NAMES[lay._name]}" if what in ("crow_indices", "col_indices") else
                               f"{what} expected sparse column compressed tensor layout but got "
                               f"{L._NAMES[lay._name]}")
        raise NotImplementedError(f"Could not run 'aten::{what}' with arguments from the '{backend}' backend.")
    return self._data


_COO = (L.sparse_coo,)
_COMPRESSED = (L.sparse_csr, L.sparse_csc, L.sparse_bsr, L.sparse_bsc)
_SPARSE = _COO + _COMPRESSED


class Values(Node, name="ValuesBackward0"):
    """values() of a coalesced COO tensor (or a compressed one): the gradient is sparse, with its pattern."""
    save = (0,)
    saved_names = ("self",)

    def forward(self, x):
        return x.values

    def backward(self, g):
        (x,) = self.saved_values
        st = x._data
        if isinstance(st, L.SparseCOO):
            return sparse_coo_tensor(_make(st.indices), g, st.shape, is_coalesced=False)
        return sparse_compressed_tensor(_make(st.compressed), _make(st.plain), g, st.shape, layout=st.layout)


def values(self):
    st = _need(self, _SPARSE, "values")
    if isinstance(st, L.SparseCOO) and not st.coalesced:
        raise RuntimeError("Cannot get values on an uncoalesced tensor, please call .coalesce() first")
    return Values.apply(self)


def _values(self):
    st = _need(self, _COO, "_values")
    return _make(st.values, False, None, 0, self._vc)


def indices(self):
    st = _need(self, _COO, "indices")
    if not st.coalesced:
        raise RuntimeError("Cannot get indices on an uncoalesced tensor, please call .coalesce() first")
    return _make(st.indices, False, None, 0, self._vc)


def _indices(self):
    return _make(_need(self, _COO, "_indices").indices, False, None, 0, self._vc)


def crow_indices(self):
    return _make(_need(self, (L.sparse_csr, L.sparse_bsr), "crow_indices").compressed)


def col_indices(self):
    return _make(_need(self, (L.sparse_csr, L.sparse_bsr), "col_indices").plain)


def ccol_indices(self):
    return _make(_need(self, (L.sparse_csc, L.sparse_bsc), "ccol_indices").compressed)


def row_indices(self):
    return _make(_need(self, (L.sparse_csc, L.sparse_bsc), "row_indices").plain)


def _nnz(self):
    return int(_need(self, _SPARSE, "_nnz").nnz)


def sparse_dim(self):
    if self.layout is _STRIDED:
        return 0
    return int(self._data.sparse_dim)


def dense_dim(self):
    if self.layout is _STRIDED:
        return self.dim()
    return int(self._data.dense_dim)


def is_coalesced(self):
    st = _need(self, _COO, "is_coalesced")
    return st.coalesced


def _coalesced_(self, coalesced):
    st = _need(self, _COO, "_coalesced_")
    st.coalesced = bool(coalesced)
    return self


class Coalesce(Node, name="CoalesceBackward0"):
    def forward(self, x):
        return x.coalesce()

    def backward(self, g):
        return g


def coalesce(self):
    """``Tensor.coalesce()``: sorted indices, duplicates summed; the tensor itself when it already is coalesced."""
    st = _need(self, _COO, "coalesce")
    if st.coalesced:
        return self
    return Coalesce.apply(self)


# ---- sparse_mask ---------------------------------------------------------------------------------------------------

class SparseMask(Node, name="SparseMaskBackward0"):
    """x.sparse_mask(mask): x's values at mask's positions, in mask's layout."""
    save = (1,)
    saved_names = ("mask",)
    src_layout = _STRIDED

    def forward(self, x, mask):
        self.src_layout = L.layout_of(x)
        dense = x.to_dense() if L.is_sparse_storage(x) else x
        return L.mask_dense(dense, mask)

    def backward(self, g):
        (mask,) = self.saved_values
        gm = sparse_mask(g, mask)
        return (to_dense(gm) if self.src_layout is _STRIDED else _to(gm, self.src_layout)), None


def sparse_mask(self, mask):
    """``Tensor.sparse_mask(mask)``: a sparse tensor of mask's layout and pattern holding this tensor's values."""
    if not isinstance(mask, Tensor):
        raise TypeError(f"sparse_mask(): argument 'mask' (position 1) must be Tensor, not {type(mask).__name__}")
    if not _is_sparse(mask):
        raise NotImplementedError("Could not run 'aten::sparse_mask' with arguments from the 'CPU' backend. (hookgrad: "
                                  "the mask must be a sparse tensor, got a strided one)")
    if tuple(self.shape) != tuple(mask.shape):
        raise RuntimeError(f"sparse_mask(): operands have incompatible sizes; self has size {list(self.shape)} but "
                           f"mask has size {list(mask.shape)}")
    if self.dtype is not mask.dtype:
        mask = _make(mask._data.astype(self._data.dtype))
    if self.layout is L.sparse_coo and mask.layout is not L.sparse_coo:
        raise RuntimeError("sparse_mask(): a COO tensor can only be masked by a COO mask (hookgrad)")
    return SparseMask.apply(self, mask.detach() if mask.requires_grad else mask)


# ---- torch.sparse.mm / addmm / sum ---------------------------------------------------------------------------------

class SparseAddmm(Node, name="SparseAddmmBackward0"):
    """torch.sparse.addmm(input, sparse, dense, beta, alpha) (and torch.sparse.mm: beta 0 over zeros). The sparse
    operand's gradient keeps its pattern (not coalesced); the dense one's is dense."""
    save = (1, 2)
    saved_names = ("mat1", "mat2")
    beta = 1
    alpha = 1

    def forward(self, inp, s, d):
        r = L.matmul(s, d)
        if self.alpha != 1:
            r = r * self.alpha
        if self.beta != 0:
            r = r + (inp if self.beta == 1 else inp * self.beta)
        return r

    def backward(self, g):
        s, d = self.saved_values
        nf = self.next_functions
        gi = (g if self.beta == 1 else g * self.beta) if nf[0][0] is not None else None
        gd = mm(transpose(s), g) if nf[2][0] is not None else None
        if gd is not None and self.alpha != 1:
            gd = gd * self.alpha
        gs = None
        if nf[1][0] is not None:
            full = g.mm(d.t())
            if self.alpha != 1:
                full = full * self.alpha
            gs = sparse_mask(full, s)
            if gs.layout is L.sparse_coo:
                gs._data.coalesced = False
        return gi, gs, gd


class SparseMmReduce(Node, name="SparseMmReduceImplBackward0"):
    """torch.sparse.mm(csr, dense, reduce): each output row reduces ("sum", "mean", "amax", "amin") the products of
    the row's stored values with the matching rows of ``dense``; a row without entries is 0. The sparse operand's
    gradient keeps its pattern and layout; amax/amin send the gradient to the entries that reached the extremum."""
    save = (0, 1)
    saved_names = ("self", "other")
    reduce = "sum"

    def forward(self, s, d):
        xp = s.xp
        r, c = s._rows_cols()
        v = s.values
        prod = v[:, None] * d[c]
        R = s.shape[0]
        self.count = xp.bincount(r, minlength=R)[:R] if r.shape[0] else xp.zeros(R, np.int64)
        out = xp.zeros((R, d.shape[1]), prod.dtype)
        if self.reduce in ("sum", "mean"):
            xp.add.at(out, r, prod)
            if self.reduce == "mean":
                out = out / xp.maximum(self.count, 1)[:, None].astype(out.dtype)
            self.sel = None
        else:
            fill = -np.inf if self.reduce == "amax" else np.inf
            out[:] = fill
            (xp.maximum if self.reduce == "amax" else xp.minimum).at(out, r, prod)
            out[self.count == 0] = 0
            self.sel = (prod == out[r]).astype(prod.dtype)
        return out

    def backward(self, g):
        s, d = self.saved_values
        st = s._data
        r, c = st._rows_cols()
        ga = g._data
        if self.reduce == "mean":
            ga = ga / np.maximum(self.count, 1)[:, None].astype(ga.dtype)
        gr = ga[r]
        if self.sel is not None:
            gr = gr * self.sel
        dd = d._data
        nf = self.next_functions
        gs = _make(st._with_values((gr * dd[c]).sum(axis=1).astype(st.dtype))) if nf[0][0] is not None else None
        gd = None
        if nf[1][0] is not None:
            gd_a = array_module(dd).zeros(dd.shape, dd.dtype)
            array_module(dd).add.at(gd_a, c, st.values[:, None] * gr)
            gd = _make(gd_a)
        return gs, gd


def mm(mat1, mat2, reduce=None):
    """torch.sparse.mm: sparse @ dense (SparseAddmmBackward0: the sparse operand's gradient is sparse), sparse @
    sparse (sparse), or with ``reduce`` ("sum", "mean", "amax", "amin") a CSR matrix's row-wise reduction."""
    if reduce is not None:
        if reduce not in ("sum", "mean", "amax", "amin", "max", "min"):
            raise RuntimeError(f"reduce argument must be either sum, mean, amax or amin, got {reduce}")
        reduce = {"max": "amax", "min": "amin"}.get(reduce, reduce)
        if not _is_sparse(mat1) or mat1.layout is not L.sparse_csr:
            raise RuntimeError(f"sparse_mm_reduce: expected self to be a SparseCsr tensor (hookgrad: got "
                               f"{mat1.layout})")
        return SparseMmReduce.apply(mat1, mat2, reduce=reduce)
    if _is_sparse(mat1) and not _is_sparse(mat2):
        zeros = mat2.new_zeros((mat1.shape[0], mat2.shape[1]))
        return SparseAddmm.apply(zeros, mat1, mat2, beta=0)
    return mat1.mm(mat2)


def addmm(mat, mat1, mat2, *, beta=1.0, alpha=1.0):
    """torch.sparse.addmm(mat, sparse mat1, dense mat2, beta, alpha)."""
    if not _is_sparse(mat1):
        raise RuntimeError("torch.sparse.addmm: expected mat1 to be sparse (hookgrad)")
    return SparseAddmm.apply(mat, mat1, mat2, beta=beta, alpha=alpha)


class SparseSumAll(Node, name="SumBackward0"):
    """torch.sparse.sum(x): a 0-d dense sum; the gradient is sparse, with x's pattern."""
    save = (0,)
    saved_names = ("self",)
    dt = None

    def forward(self, x):
        v = x.coalesce().values
        return array_module(v).asarray(v.sum(dtype=self.dt))

    def backward(self, g):
        (x,) = self.saved_values
        st = x._data
        if isinstance(st, L.SparseCOO):
            c = st.coalesce()
            vals = g.reshape((1,) * c.values.ndim).expand(c.values.shape).to(x.dtype)
            return sparse_coo_tensor(_make(c.indices), vals, c.shape, is_coalesced=True)
        return sparse_mask(g.expand(x.shape), x)


class SparseSum(Node, name="SparseSumBackward0"):
    """torch.sparse.sum(x, dim): sparse while some sparse dimension is left, else dense."""
    save = (0,)
    saved_names = ("self",)
    dims = ()

    def forward(self, x):
        x = x.coalesce()
        xp = x.xp
        sd = x.sparse_dim
        sdims = [d for d in self.dims if d < sd]
        ddims = tuple(d - sd + 1 for d in self.dims if d >= sd)
        vals = x.values.sum(axis=ddims) if ddims else x.values
        keep = [d for d in range(sd) if d not in sdims]
        dshape = tuple(s for d, s in enumerate(x.shape) if d >= sd and d not in self.dims)
        if not keep:
            return xp.asarray(vals.sum(axis=0)).reshape(dshape)
        r = L.SparseCOO(x.indices[keep], vals, tuple(x.shape[d] for d in keep) + dshape, False)
        return r.coalesce()

    def backward(self, g):
        (x,) = self.saved_values
        if not _is_sparse(g) and any(d < x._data.sparse_dim for d in self.dims) and \
                len(self.dims) < x._data.sparse_dim:
            raise RuntimeError("_sparse_sum_backward_cpu: expected grad_ Tensor to be sparse, but got dense")
        st = x._data.coalesce()
        sd = st.sparse_dim
        gd = to_dense(g) if _is_sparse(g) else g
        keep = [d for d in range(sd) if d not in self.dims]
        for d in sorted(d for d in self.dims if d >= sd):      # summed dense dims come back as size-1 dims
            gd = gd.unsqueeze(d - sd + len(keep))
        picked = gd[tuple(_make(st.indices[k]) for k in keep)] if keep else gd.unsqueeze(0).expand(
            (st.nnz,) + tuple(gd.shape))
        vals = picked.expand(st.values.shape) if tuple(picked.shape) != st.values.shape else picked
        return sparse_coo_tensor(_make(st.indices), vals.contiguous(), st.shape, is_coalesced=False)


def sum(input, dim=None, dtype=None):
    """torch.sparse.sum(input, dim=None, dtype=None)."""
    if not _is_sparse(input):
        return input.sum() if dim is None else input.sum(dim)
    if dtype is not None:
        input = input.to(dtype)
    if input.layout is not L.sparse_coo:
        input = to_sparse(input)
    if dim is None:
        return SparseSumAll.apply(input)
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    n = input.dim()
    dims = tuple(sorted(set(d % n if -n <= d < n else _bad_dim(d, n) for d in dims)))
    return SparseSum.apply(input, dims=dims)


def _bad_dim(d, n):
    raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {d})")


# ---- embedding(sparse=True) ------------------------------------------------------------------------------------------

class SparseEmbedding(Node, name="EmbeddingBackward0"):
    """nn.functional.embedding(..., sparse=True): the weight's gradient is COO, one entry per looked-up index (in
    the input's order, not coalesced; padding_idx left out), as PyTorch's embedding_sparse_backward."""
    saved_attrs = ("indices=idx", "padding_idx=-1 if padding_idx is None else padding_idx", "scale_grad_by_freq=False",
                   "sparse=True", "weight_sym_argsize_0=num")
    padding_idx = None

    def forward(self, w, idx):
        self.idx, self.num, self.dim = idx, w.shape[0], w.shape[1]
        return w[idx]

    def backward(self, g, *_):
        flat = self.idx.reshape(-1).astype(np.int64)
        gv = g._data.reshape(-1, self.dim)
        if self.padding_idx is not None:
            keep = flat != self.padding_idx
            flat, gv = flat[keep], gv[keep]
        return _make(L.SparseCOO(flat[None].copy(), gv.copy(), (self.num, self.dim), False)), None


def embedding(weight, input, padding_idx=None):
    """The lookup of nn.functional.embedding with ``sparse=True`` (its arguments already checked there)."""
    return SparseEmbedding.apply(weight, input, padding_idx=padding_idx)


# ---- transpose (a new tensor, not a view, as PyTorch's sparse transpose) ------------------------------------------

class SparseT(Node, name="TBackward0"):
    def forward(self, x):
        return x.T

    def backward(self, g):
        return transpose(g)


def transpose(x):
    """The transpose of a sparse matrix (COO: indices swapped, not coalesced; CSR <-> CSC)."""
    return SparseT.apply(x)


class SparseClone(Node, name="CloneBackward0"):
    def forward(self, x):
        return x.copy()

    def backward(self, g):
        return g


def _sparse_clone(self, *, memory_format=None):
    return SparseClone.apply(self)


def _no_storage(what):
    def method(self, *args, **kwargs):
        if what == "storage":
            raise NotImplementedError("Cannot access storage of SparseTensorImpl")
        raise RuntimeError("Cannot access data pointer of Tensor that doesn't have storage")
    return method


def _sparse_numpy(self, *, force=False):
    raise TypeError(f"can't convert {L._NAMES[self.layout._name]} layout tensor to numpy. Use Tensor.to_dense() first.")


def _sparse_contiguous(self, memory_format=None):
    raise RuntimeError("unsupported memory format option Contiguous")


def _inplace(op):
    """An in-place op on a sparse tensor: the result's storage replaces the tensor's (its version moves)."""
    def method(self, *args, **kwargs):
        if self.requires_grad and _state.enabled:
            raise RuntimeError("hookgrad: in-place operations on a sparse tensor that requires grad are not supported")
        r = op(self, *args, **kwargs)
        st = r._data if isinstance(r, Tensor) else r
        if st.dtype != self._data.dtype:
            st = st.astype(self._data.dtype)
        self._data._assign(st)
        self._vc[0] += 1
        return self
    return method


def _no_reshape(self, *shape):
    raise RuntimeError("reshape is not implemented for sparse tensors")


def _zero(self):
    return self._data.zeros_like()


def _sparse_sum_method(self, dim=None, keepdim=False, *, dtype=None):
    if keepdim:
        raise RuntimeError("hookgrad: sum(keepdim=True) of a sparse tensor is not supported")
    if dim is None:
        from . import reduce as _R
        return _R.Sum.apply(self) if dtype is None else _R.Sum.apply(self.to(dtype))
    return sum(self, dim, dtype)


def _sparse_first(dense_method, sparse_fn):
    """A Tensor method that runs ``sparse_fn`` for a sparse tensor and the dense method otherwise."""
    def method(self, *args, **kwargs):
        if type(self._data) is not np.ndarray and L.is_sparse_storage(self._data):
            return sparse_fn(self, *args, **kwargs)
        return dense_method(self, *args, **kwargs)
    method.__name__ = dense_method.__name__
    method.__doc__ = dense_method.__doc__
    method.__wrapped__ = dense_method
    return method


def _sparse_transpose(self, dim0=0, dim1=1):
    n = self.dim()
    if n > 2 or {dim0 % max(n, 1), dim1 % max(n, 1)} not in ({0, 1}, {0}, {1}):
        raise RuntimeError("hookgrad: transpose of a sparse tensor is implemented for matrices only")
    return transpose(self) if dim0 % n != dim1 % n else self


# ---- Tensor methods ------------------------------------------------------------------------------------------------

def _install():
    methods = {
        "to_dense": to_dense, "to_sparse": to_sparse, "to_sparse_coo": to_sparse_coo, "to_sparse_csr": to_sparse_csr,
        "to_sparse_csc": to_sparse_csc, "to_sparse_bsr": to_sparse_bsr, "to_sparse_bsc": to_sparse_bsc,
        "coalesce": coalesce, "is_coalesced": is_coalesced, "_coalesced_": _coalesced_, "values": values,
        "_values": _values, "indices": indices, "_indices": _indices, "crow_indices": crow_indices,
        "col_indices": col_indices, "ccol_indices": ccol_indices, "row_indices": row_indices, "_nnz": _nnz,
        "sparse_dim": sparse_dim, "dense_dim": dense_dim, "sparse_mask": sparse_mask,
    }
    for k, f in methods.items():
        setattr(Tensor, k, f)
    L.ON_FIRST_SPARSE.append(_install_overrides)


def _install_overrides():
    """Tensor methods that need a sparse branch, wrapped when the first sparse tensor is made."""
    Tensor.t = _sparse_first(Tensor.t, lambda self: _sparse_transpose(self))
    Tensor.transpose = _sparse_first(Tensor.transpose, _sparse_transpose)
    Tensor.clone = _sparse_first(Tensor.clone, _sparse_clone)
    Tensor.numpy = _sparse_first(Tensor.numpy, _sparse_numpy)
    Tensor.tolist = _sparse_first(Tensor.tolist, _no_storage("tolist"))
    Tensor.data_ptr = _sparse_first(Tensor.data_ptr, _no_storage("data_ptr"))
    Tensor.untyped_storage = _sparse_first(Tensor.untyped_storage, _no_storage("storage"))
    Tensor.is_contiguous = _sparse_first(Tensor.is_contiguous, lambda self, memory_format=None: False)
    Tensor.contiguous = _sparse_first(Tensor.contiguous, _sparse_contiguous)
    Tensor.zero_ = _sparse_first(Tensor.zero_, _inplace(lambda self: _zero(self)))
    Tensor.mul_ = _sparse_first(Tensor.mul_, _inplace(lambda self, other: self * other))
    Tensor.add_ = _sparse_first(Tensor.add_, _inplace(
        lambda self, other, *, alpha=1: self + (other if alpha == 1 else other * alpha)))
    Tensor.sum = _sparse_first(Tensor.sum, _sparse_sum_method)
    Tensor.stride = _sparse_first(Tensor.stride, lambda self, dim=None: (0,) * self.dim() if dim is None else 0)
    Tensor.reshape = _sparse_first(Tensor.reshape, _no_reshape)


_install()
