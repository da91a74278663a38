"""torch.layout and torch.memory_format: the types of ``torch.strided`` and ``torch.contiguous_format``.

Both are opaque tags, as in PyTorch: they print as ``torch.<name>``, cannot be constructed by users, and
pickle/copy to the same object.
"""


class _Tag:
    __slots__ = ("_name",)

    def __new__(cls, *args, **kwargs):
        raise TypeError(f"cannot create 'torch.{cls.__name__}' instances")

    @classmethod
    def _make(cls, name):
        self = object.__new__(cls)
        self._name = name
        return self

    def __repr__(self):
        return "torch." + self._name

    def __reduce__(self):
        return self._name  # pickle looks the name up in this class's module (hookgrad), as PyTorch's does

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self


class layout(_Tag):
    __slots__ = ()


class memory_format(_Tag):
    __slots__ = ()


for _c in (layout, memory_format):
    _c.__module__ = "hookgrad"
del _c

strided = layout._make("strided")
sparse_coo = layout._make("sparse_coo")
sparse_csr = layout._make("sparse_csr")
sparse_csc = layout._make("sparse_csc")
sparse_bsr = layout._make("sparse_bsr")
sparse_bsc = layout._make("sparse_bsc")
_mkldnn = layout._make("_mkldnn")
jagged = layout._make("jagged")

contiguous_format = memory_format._make("contiguous_format")
preserve_format = memory_format._make("preserve_format")
channels_last = memory_format._make("channels_last")
channels_last_3d = memory_format._make("channels_last_3d")
legacy_contiguous_format = contiguous_format  # PyTorch: the same object


def is_contiguous(data, memory_format=None):
    """``Tensor.is_contiguous(memory_format=)`` on a NumPy array (PyTorch's strides rules)."""
    if memory_format is None or memory_format is contiguous_format or memory_format is preserve_format:
        return bool(data.flags.c_contiguous)
    if memory_format is channels_last or memory_format is channels_last_3d:
        nd = 4 if memory_format is channels_last else 5
        if data.ndim != nd:
            return False
        # channels-last strides: C is the fastest dimension, then W (, D), H, N; size-1 dims are free
        order = (1,) + tuple(range(nd - 1, 1, -1)) + (0,)
        isz = data.itemsize
        expected = 1
        for d in order:
            n = data.shape[d]
            if n != 1 and data.strides[d] // isz != expected:
                return False
            expected *= n
        return True
    raise TypeError("is_contiguous(): argument 'memory_format' must be torch.memory_format, not "
                    + type(memory_format).__name__)


# ---- the sparse layouts' storage ------------------------------------------------------------------------------------
# A sparse tensor is a hookgrad Tensor whose ``_data`` is one of the two storages below instead of an array: COO
# (indices + values) or compressed (CSR, CSC, BSR, BSC: compressed indices + plain indices + values). The component
# arrays belong to one array module (the values'); every new array is made with it. A storage answers what the
# Tensor's metadata reads (shape, dtype, ndim, size, itemsize) and the few array operations that autograd's
# plumbing runs on gradients (``a + b`` when two gradients meet, ``.grad += g``, a cast, a scalar product); any
# other array operation raises PyTorch's "not implemented for the sparse backend" error instead of a NumPy error.
import numpy as _np  # noqa: E402

from . import _array  # noqa: E402


class _Flags:
    __slots__ = ()
    c_contiguous = True
    f_contiguous = False
    writeable = True


def _not_implemented(what, layout):
    backend = {"sparse_coo": "SparseCPU"}.get(layout._name, "SparseCsrCPU")
    return NotImplementedError(
        f"Could not run '{what}' with arguments from the '{backend}' backend. This could be because the operator "
        f"doesn't exist for this backend, or was omitted during the selective/custom build process (if using "
        f"custom build). (hookgrad: {what} is not implemented for torch.{layout._name} tensors)")


def _is_scalar(x):
    return not isinstance(x, _SparseStorage) and (_np.ndim(x) == 0 if not hasattr(x, "ndim") else x.ndim == 0)


# the zero-preserving elementwise functions PyTorch runs on a sparse tensor's values (f(0) == 0)
_ZERO_PRESERVING = {"negative", "positive", "absolute", "sin", "sinh", "tan", "tanh", "arcsin", "arcsinh", "arctan",
                    "arctanh", "sqrt", "expm1", "log1p", "sign", "signbit", "floor", "ceil", "trunc", "rint",
                    "conjugate", "deg2rad", "rad2deg", "square", "fabs"}


# callbacks run when the first sparse storage is made (primitives/sparse.py installs its Tensor method overrides
# then, so that a program without sparse tensors keeps the dense methods as they are, without a layout check)
ON_FIRST_SPARSE = []


def _first_sparse():
    while ON_FIRST_SPARSE:
        ON_FIRST_SPARSE.pop(0)()


class _SparseStorage:
    """What the two sparse storages share: metadata read by Tensor, and the array protocol's sparse answers."""
    __slots__ = ("values", "shape", "__weakref__")
    _layout = None
    flags = _Flags()
    __array_priority__ = 2000

    @property
    def dtype(self):
        return self.values.dtype

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        n = 1
        for s in self.shape:
            n *= s
        return n

    @property
    def itemsize(self):
        return self.values.itemsize

    @property
    def nbytes(self):
        return sum(a.nbytes for a in self.components())

    @property
    def strides(self):
        raise RuntimeError(f"Sparse tensors do not have strides (hookgrad: layout torch.{self._layout._name})")

    @property
    def xp(self):
        return _array.array_module(self.values)

    def __getattr__(self, name):
        # an array method or attribute a sparse storage lacks (an op that reached it): PyTorch's error, not Python's
        if name.startswith("_"):
            raise AttributeError(name)
        raise _not_implemented(f"aten::{name}", self._layout)

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    # the array protocol: anything not answered below is PyTorch's NotImplementedError, never NumPy's error
    def __array__(self, *a, **k):
        raise _not_implemented("aten::to_dense (implicitly, as an array)", self._layout)

    def __array_function__(self, func, types, args, kwargs):
        name = func.__name__
        if name in ("zeros_like", "empty_like") and args and args[0] is self:
            return self.zeros_like(kwargs.get("dtype"))
        if name in ("swapaxes", "transpose") and args and args[0] is self and self.ndim == 2:
            return self.T
        if name == "ndim":
            return self.ndim
        if name == "shape":
            return self.shape
        raise _not_implemented(f"aten::{name}", self._layout)

    def __array_ufunc__(self, ufunc, method, *inputs, out=None, **kw):
        name = ufunc.__name__
        dtype = kw.pop("dtype", None)
        kw.pop("casting", None)
        if method != "__call__" or kw:
            raise _not_implemented(f"aten::{name}.{method}", self._layout)
        if out is not None:
            (o,) = out
            r = self.__array_ufunc__(ufunc, method, *inputs, dtype=dtype)
            if isinstance(o, _SparseStorage):
                if not isinstance(r, _SparseStorage):
                    raise RuntimeError(f"{name}(): a sparse output cannot hold a dense result")
                o._assign(r.astype(o.dtype))
            else:
                o[...] = r.to_dense() if isinstance(r, _SparseStorage) else r
            return o
        r = self._ufunc(name, ufunc, inputs)
        if dtype is not None and r.dtype != dtype:
            r = r.astype(dtype)
        return r

    def _ufunc(self, name, ufunc, inputs):
        if name == "matmul":
            return matmul(*inputs)
        if len(inputs) == 1:
            (x,) = inputs
            if name in ("negative", "positive", "conjugate"):
                return x._with_values(ufunc(x.values))
            if name in _ZERO_PRESERVING:
                x = x.coalesce()
                return x._with_values(ufunc(x.values))
            raise _not_implemented(f"aten::{name}", self._layout)
        a, b = inputs
        sa, sb = isinstance(a, _SparseStorage), isinstance(b, _SparseStorage)
        if name in ("add", "subtract"):
            if sa and sb:
                return a._add_sparse(b if name == "add" else b._with_values(-b.values))
            if sa:
                raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) instead.")
            if _is_scalar(b if sa else a):
                raise _not_implemented(f"aten::{name} of a sparse tensor and a scalar", self._layout)
            s, d = (a, b) if sa else (b, a)
            if isinstance(s, SparseCOO) and getattr(d, "shape", None) == s.shape and s.sparse_dim:
                # dense +/- sparse: the entries added onto a copy one by one, in storage order (PyTorch's loop)
                xp = s.xp
                out = d.astype(_np.result_type(d.dtype, s.dtype), copy=True)
                vals = s.values if name == "add" else -s.values
                xp.add.at(out, tuple(s.indices), vals)
                return out
            dense = a.to_dense() if sa else a
            other = b.to_dense() if sb else b
            return ufunc(dense, other)
        if sa and not sb and _is_scalar(b) and (name == "power" and b > 0 or name in ("maximum", "minimum") and b == 0):
            a = a.coalesce()         # zero-preserving with this scalar: x ** p (p > 0), relu's maximum(x, 0)
            return a._with_values(ufunc(a.values, b))
        if name in ("multiply", "true_divide", "divide", "floor_divide"):
            if sa and sb:
                if name != "multiply":
                    raise _not_implemented(f"aten::{name} of two sparse tensors", self._layout)
                return a._mul_sparse(b)
            if sa and _is_scalar(b):
                return a._with_values(ufunc(a.values, b))
            if sb and _is_scalar(a) and name == "multiply":
                return b._with_values(ufunc(a, b.values))
            if sa and name == "multiply":         # sparse * dense: the sparse operand's pattern
                return a._mask_mul(b)
            if sb and name == "multiply":
                return b._mask_mul(a)
        raise _not_implemented(f"aten::{name}", self._layout)

    def __add__(self, other):
        # NOTE: autograd's own sum of two gradients (a sparse one first) lands here, where PyTorch's engine allows
        # sparse + dense; the user's ``sparse + dense`` (np.add through the ufunc protocol) is PyTorch's error
        if not isinstance(other, _SparseStorage) and not _is_scalar(other):
            return _np.add(self.to_dense(), other)
        return _np.add(self, other)

    def __radd__(self, other):
        return _np.add(other, self)

    def __sub__(self, other):
        return _np.subtract(self, other)

    def __rsub__(self, other):
        return _np.subtract(other, self)

    def __mul__(self, other):
        return _np.multiply(self, other)

    def __rmul__(self, other):
        return _np.multiply(other, self)

    def __truediv__(self, other):
        return _np.true_divide(self, other)

    def __neg__(self):
        return _np.negative(self)

    def __iadd__(self, other):
        return _np.add(self, other, out=(self,))

    def __bool__(self):
        raise _not_implemented("aten::is_nonzero", self._layout)

    def __getitem__(self, i):
        raise _not_implemented("aten::index", self._layout)

    def copy(self, order="K"):
        return self._with_values(self.values.copy(), copy_indices=True)

    def astype(self, dtype, order="K", copy=True, casting=None):
        if not copy and self.values.dtype == dtype:
            return self
        return self._with_values(self.values.astype(dtype), copy_indices=copy)

    def reshape(self, *shape):
        raise _not_implemented("aten::view", self._layout)

    def sum(self, axis=None, keepdims=False, dtype=None):
        if axis is None and not keepdims:
            v = self.values.sum(dtype=dtype)
            return self.xp.asarray(v)
        raise _not_implemented("aten::sum.dim_IntList", self._layout)

    def _assign(self, other):
        for k in self.__slots__ + _SparseStorage.__slots__[:2]:
            if k != "__weakref__":
                object.__setattr__(self, k, getattr(other, k))


class SparseCOO(_SparseStorage):
    """torch.sparse_coo: ``indices`` (int64, sparse_dim x nnz), ``values`` (nnz x dense dims), ``shape``, and
    whether the entries are known to be sorted and unique (``coalesced``)."""
    __slots__ = ("indices", "coalesced")
    _layout = sparse_coo
    blocksize = None

    def __init__(self, indices, values, shape, coalesced=False):
        if ON_FIRST_SPARSE:
            _first_sparse()
        self.indices = indices
        self.values = values
        self.shape = tuple(int(s) for s in shape)
        self.coalesced = bool(coalesced) or values.shape[0] <= 1      # (PyTorch: no two entries, coalesced)

    def components(self):
        return (self.indices, self.values)

    @property
    def sparse_dim(self):
        return self.indices.shape[0]

    @property
    def dense_dim(self):
        return self.values.ndim - 1

    @property
    def nnz(self):
        return self.values.shape[0]

    def _with_values(self, values, copy_indices=False, coalesced=None):
        return SparseCOO(self.indices.copy() if copy_indices else self.indices, values, self.shape,
                         self.coalesced if coalesced is None else coalesced)

    def zeros_like(self, dtype=None):
        xp = self.xp
        return SparseCOO(xp.zeros((self.sparse_dim, 0), _np.int64),
                         xp.zeros((0,) + self.shape[self.sparse_dim:], dtype or self.dtype), self.shape, True)

    def _linear(self):
        """Each entry's row-major position among the sparse dimensions."""
        xp = self.xp
        if self.sparse_dim == 0:
            return xp.zeros(self.nnz, _np.int64)
        return xp.ravel_multi_index(tuple(self.indices), self.shape[:self.sparse_dim]) if self.nnz else \
            xp.zeros(0, _np.int64)

    def coalesce(self):
        """Sorted indices, duplicates summed (a new storage; itself when already coalesced)."""
        if self.coalesced:
            return self
        xp = self.xp
        if self.sparse_dim == 0:        # every entry is the one position: their sum
            n = min(self.nnz, 1)
            return SparseCOO(xp.zeros((0, n), _np.int64), self.values.sum(axis=0, keepdims=True)[:n], self.shape, True)
        lin = self._linear()
        uniq, inv = xp.unique(lin, return_inverse=True)
        values = xp.zeros((uniq.shape[0],) + self.values.shape[1:], self.dtype)
        if self.nnz:
            xp.add.at(values, inv.reshape(-1), self.values)
        sd = self.sparse_dim
        idx = xp.stack(xp.unravel_index(uniq, self.shape[:sd])).astype(_np.int64) if sd and uniq.shape[0] else \
            xp.zeros((sd, uniq.shape[0]), _np.int64)
        return SparseCOO(idx.reshape(sd, -1), values, self.shape, True)

    def to_dense(self):
        xp = self.xp
        out = xp.zeros(self.shape, self.dtype)
        if self.nnz and self.sparse_dim == 0:
            return self.values.sum(axis=0).astype(self.dtype)
        if self.nnz:
            idx = tuple(self.indices)
            if self.dtype == _np.bool_:
                out[idx] = out[idx] | self.values
            else:
                xp.add.at(out, idx, self.values)
        return out

    def _add_sparse(self, other):
        if self.shape != other.shape:
            raise RuntimeError(f"add: expected 'self' and 'other' to have same size, but self has size "
                               f"{list(self.shape)} while other has size {list(other.shape)} (hookgrad: sparse tensors "
                               f"are not broadcast)")
        if self.sparse_dim != other.sparse_dim:
            raise RuntimeError(f"add: expected 'self' and 'other' to have same sparse dimensions, but got "
                               f"{self.sparse_dim} and {other.sparse_dim}")
        xp = self.xp
        dt = _np.result_type(self.dtype, other.dtype)
        r = SparseCOO(xp.concatenate([self.indices, other.indices], axis=1),
                      xp.concatenate([self.values.astype(dt), other.values.astype(dt)]), self.shape, False)
        # PyTorch merges the two patterns (sorted, duplicates summed); the result is flagged coalesced only when
        # both operands were
        m = r.coalesce()
        m.coalesced = self.coalesced and other.coalesced
        return m

    def _mul_sparse(self, other):
        a, b = self.coalesce(), other.coalesce()
        xp = self.xp
        la, lb = a._linear(), b._linear()
        common, ia, ib = xp.intersect1d(la, lb, assume_unique=True, return_indices=True)
        return SparseCOO(a.indices[:, ia], a.values[ia] * b.values[ib], self.shape, True)

    def _mask_mul(self, dense):
        dense = self.xp.broadcast_to(dense, self.shape) if getattr(dense, "shape", ()) != self.shape else dense
        sd = self.sparse_dim
        picked = dense[tuple(self.indices)] if sd else dense[None]
        return self._with_values(self.values * picked)


class Compressed(_SparseStorage):
    """torch.sparse_csr / csc / bsr / bsc of a 2-D tensor (plus dense dimensions for CSR/CSC): ``compressed``
    (crow or ccol indices), ``plain`` (col or row indices), ``values`` (nnz x [block] x dense dims), ``blocksize``."""
    __slots__ = ("layout", "compressed", "plain", "blocksize")

    def __init__(self, layout, compressed, plain, values, shape, blocksize=None):
        if ON_FIRST_SPARSE:
            _first_sparse()
        self.layout = layout
        self.compressed = compressed
        self.plain = plain
        self.values = values
        self.shape = tuple(int(s) for s in shape)
        self.blocksize = None if blocksize is None else tuple(int(b) for b in blocksize)

    @property
    def _layout(self):
        return self.layout

    def components(self):
        return (self.compressed, self.plain, self.values)

    @property
    def nnz(self):
        return self.plain.shape[-1]

    @property
    def row_major(self):
        return self.layout is sparse_csr or self.layout is sparse_bsr

    @property
    def dense_dim(self):
        return self.values.ndim - 1 - (2 if self.blocksize else 0)

    sparse_dim = 2

    def _block(self):
        return self.blocksize or (1, 1)

    def _with_values(self, values, copy_indices=False, coalesced=None):
        c, p = (self.compressed.copy(), self.plain.copy()) if copy_indices else (self.compressed, self.plain)
        return Compressed(self.layout, c, p, values, self.shape, self.blocksize)

    def zeros_like(self, dtype=None):
        xp = self.xp
        n = self.shape[0 if self.row_major else 1] // self._block()[0 if self.row_major else 1]
        vshape = (0,) + (self.blocksize or ()) + self.shape[2:]
        return Compressed(self.layout, xp.zeros(n + 1, _np.int64), xp.zeros(0, _np.int64),
                          xp.zeros(vshape, dtype or self.dtype), self.shape, self.blocksize)

    def coalesce(self):
        return self

    def _rows_cols(self):
        """(block) row and column of every stored entry, in storage order."""
        xp = self.xp
        counts = xp.diff(self.compressed)
        major = xp.repeat(xp.arange(counts.shape[0], dtype=_np.int64), counts)
        return (major, self.plain) if self.row_major else (self.plain, major)

    def to_dense(self):
        xp = self.xp
        r, c = self._rows_cols()
        if not self.blocksize:
            out = xp.zeros(self.shape, self.dtype)
            if self.nnz:
                xp.add.at(out, (r, c), self.values)
            return out
        br, bc = self.blocksize
        R, C = self.shape[:2]
        blocks = xp.zeros((R // br, C // bc, br, bc) + self.shape[2:], self.dtype)
        if self.nnz:
            xp.add.at(blocks, (r, c), self.values)
        return xp.moveaxis(blocks, 1, 2).reshape(self.shape)

    def _add_sparse(self, other):
        if self.shape != other.shape or other.layout is not self.layout:
            raise RuntimeError(f"add: expected 'self' and 'other' to have same size and layout, but got "
                               f"{list(self.shape)} torch.{self.layout._name} and {list(other.shape)} "
                               f"torch.{other.layout._name}")
        # the union of two patterns: through the dense sum, keeping every position either operand stores
        mask = self._stored_mask() | other._stored_mask()
        return compressed_from_dense(self.to_dense() + other.to_dense(), self.layout, self.blocksize, mask=mask)

    def _stored_mask(self):
        xp = self.xp
        br, bc = self._block()
        m = xp.zeros((self.shape[0] // br, self.shape[1] // bc), bool)
        r, c = self._rows_cols()
        m[r, c] = True
        return m

    def _mul_sparse(self, other):
        mask = self._stored_mask() & other._stored_mask()
        return compressed_from_dense(self.to_dense() * other.to_dense(), self.layout, self.blocksize, mask=mask)

    def _mask_mul(self, dense):
        return compressed_from_dense(self.to_dense() * dense, self.layout, self.blocksize, mask=self._stored_mask())


SPARSE_STORAGES = (SparseCOO, Compressed)


def is_sparse_storage(a):
    return isinstance(a, _SparseStorage)


def layout_of(a):
    """The torch.layout of a tensor's ``_data``: strided for arrays."""
    return a._layout if isinstance(a, _SparseStorage) else strided


def coo_from_dense(a, sparse_dim=None):
    """The COO storage of dense array ``a`` (entries nonzero somewhere in their dense part); coalesced."""
    xp = _array.array_module(a)
    sd = a.ndim if sparse_dim is None else sparse_dim
    nz = a != 0
    if a.ndim > sd:
        nz = nz.any(axis=tuple(range(sd, a.ndim)))
    if sd == 0:
        keep = bool(nz)
        return SparseCOO(xp.zeros((0, int(keep)), _np.int64), a[None][:int(keep)].copy(), a.shape, True)
    idx = xp.nonzero(nz)
    indices = xp.stack(idx).astype(_np.int64) if idx else xp.zeros((0, 0), _np.int64)
    return SparseCOO(indices.reshape(sd, -1), a[idx].copy(), a.shape, True)


def compressed_from_dense(a, layout, blocksize=None, mask=None, dense_dim=0):
    """The CSR/CSC/BSR/BSC storage of 2-D (+ ``dense_dim`` dense dimensions) array ``a``: the entries (blocks) that
    are nonzero somewhere, or those where the boolean (block) ``mask`` is set."""
    xp = _array.array_module(a)
    if a.ndim - dense_dim != 2:
        raise RuntimeError(f"to_sparse: conversion from Strided to {_NAMES[layout._name]} is supported for 2-D "
                           f"tensors (plus dense dimensions) only (hookgrad: no batch dimensions), got {a.ndim}-D")
    R, C = a.shape[:2]
    blocked = layout is sparse_bsr or layout is sparse_bsc
    if blocked:
        br, bc = blocksize
        if R % br or C % bc:
            raise RuntimeError(f"Tensor size({0 if R % br else 1}) {R if R % br else C} needs to be divisible by "
                               f"blocksize[{0 if R % br else 1}] {br if R % br else bc}")
        blocks = xp.moveaxis(a.reshape((R // br, br, C // bc, bc) + a.shape[2:]), 1, 2)
        nzb = blocks != 0
        nzb = nzb.any(axis=tuple(range(2, nzb.ndim))) if nzb.ndim > 2 else nzb
    else:
        br = bc = 1
        blocks = a
        nzb = a != 0
        if a.ndim > 2:
            nzb = nzb.any(axis=tuple(range(2, a.ndim)))
    if mask is not None:
        nzb = mask
    row_major = layout is sparse_csr or layout is sparse_bsr
    if row_major:
        r, c = xp.nonzero(nzb)
        major, plain, n = r, c, R // br
    else:
        c, r = xp.nonzero(nzb.T)
        major, plain, n = c, r, C // bc
    counts = xp.bincount(major, minlength=n) if major.shape[0] else xp.zeros(n, _np.int64)
    comp = xp.concatenate([xp.zeros(1, _np.int64), xp.cumsum(counts).astype(_np.int64)])
    return Compressed(layout, comp, plain.astype(_np.int64), blocks[r, c].copy(), a.shape,
                      (br, bc) if blocked else None)


_NAMES = {"sparse_coo": "Sparse", "sparse_csr": "SparseCsr", "sparse_csc": "SparseCsc", "sparse_bsr": "SparseBsr",
          "sparse_bsc": "SparseBsc", "strided": "Strided"}


def convert(a, layout, blocksize=None, sparse_dim=None, dense_dim=None):
    """``a`` (an array or a sparse storage) in ``layout``: the conversions behind to_dense / to_sparse*."""
    src = layout_of(a)
    if layout is strided:
        return a.to_dense() if src is not strided else a
    if src is layout and (blocksize is None or getattr(a, "blocksize", None) == tuple(blocksize)) and \
            (sparse_dim is None or getattr(a, "sparse_dim", None) == sparse_dim):
        return a
    if layout is sparse_coo:
        if src is sparse_csr or src is sparse_csc:
            r, c = a._rows_cols()
            xp = a.xp
            return SparseCOO(xp.stack([r, c]).astype(_np.int64).reshape(2, -1), a.values, a.shape, src is sparse_csr)
        d = a.to_dense() if src is not strided else a
        return coo_from_dense(d, sparse_dim)
    if src is sparse_coo and a.sparse_dim != 2 and layout is not strided:
        raise RuntimeError(f"to_sparse: conversion from Sparse to {_NAMES[layout._name]} for input tensors with "
                           f"sparse_dim() != 2 is not supported")
    if src in (sparse_bsr, sparse_bsc) and layout in (sparse_csr, sparse_csc):
        raise RuntimeError(f"sparse_compressed_to_{layout._name}: expected SparseCsr or SparseCsc layout but got "
                           f"{_NAMES[src._name]}")
    if src is not strided:
        dd = a.dense_dim
        mask = None
        if blocksize is None and (layout is sparse_csr or layout is sparse_csc):
            # keep the stored pattern (explicit zeros too), as PyTorch's conversions do
            co = a.coalesce() if src is sparse_coo else None
            if co is not None:
                xp = co.xp
                mask = xp.zeros(a.shape[:2], bool)
                mask[tuple(co.indices)] = True
            elif src in (sparse_csr, sparse_csc):
                mask = a._stored_mask()
        return compressed_from_dense(a.to_dense(), layout, blocksize, mask=mask, dense_dim=dd)
    return compressed_from_dense(a, layout, blocksize, dense_dim=dense_dim or 0)


def mask_dense(dense, like):
    """A storage in ``like``'s layout and (coalesced) pattern whose values are ``dense``'s at those positions
    (PyTorch's ``dense.sparse_mask(like)``)."""
    xp = _array.array_module(dense)
    if isinstance(like, SparseCOO):
        like = like.coalesce()
        sd = like.sparse_dim
        if sd:
            vals = dense[tuple(like.indices)]
        else:
            vals = xp.broadcast_to(dense[None], (like.nnz,) + dense.shape)
        return SparseCOO(like.indices, xp.ascontiguousarray(vals), like.shape, True)
    r, c = like._rows_cols()
    if like.blocksize:
        br, bc = like.blocksize
        R, C = like.shape[:2]
        blocks = xp.moveaxis(dense.reshape((R // br, br, C // bc, bc) + dense.shape[2:]), 1, 2)
        vals = blocks[r, c]
    else:
        vals = dense[r, c]
    return like._with_values(xp.ascontiguousarray(vals))


def _coo_T(self):
    if self.ndim != 2 or self.sparse_dim != 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 sparse and 0 dense dimensions, but got "
                           f"{self.sparse_dim} sparse and {self.dense_dim} dense dimensions")
    return SparseCOO(self.indices[::-1].copy(), self.values, self.shape[::-1], False)


def _compressed_T(self):
    if self.ndim != 2:
        raise _not_implemented("aten::t (with dense dimensions)", self.layout)
    flip = {sparse_csr: sparse_csc, sparse_csc: sparse_csr, sparse_bsr: sparse_bsc, sparse_bsc: sparse_bsr}
    vals = self.values if not self.blocksize else self.xp.ascontiguousarray(self.xp.swapaxes(self.values, 1, 2))
    return Compressed(flip[self.layout], self.compressed, self.plain, vals, self.shape[::-1],
                      self.blocksize[::-1] if self.blocksize else None)


SparseCOO.T = property(_coo_T)
Compressed.T = property(_compressed_T)


def matmul(a, b):
    """``a @ b`` where one operand (or both) is sparse and both are matrices: dense unless both are sparse (then
    COO with the structural pattern of the product)."""
    sa, sb = isinstance(a, _SparseStorage), isinstance(b, _SparseStorage)
    if a.ndim != 2 or b.ndim != 2:
        raise _not_implemented("aten::matmul (sparse operands other than matrices)", (a if sa else b)._layout)
    if a.shape[1] != b.shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({a.shape[0]}x{a.shape[1]} and "
                           f"{b.shape[0]}x{b.shape[1]})")
    if sa and sb:
        xp = a.xp
        pa = a if layout_of(a) is sparse_coo else convert(a, sparse_coo)
        pb = b if layout_of(b) is sparse_coo else convert(b, sparse_coo)
        ma = xp.zeros(a.shape, _np.int64)
        mb = xp.zeros(b.shape, _np.int64)
        ma[tuple(pa.indices)] = 1
        mb[tuple(pb.indices)] = 1
        mask = (ma @ mb) > 0
        d = a.to_dense() @ b.to_dense()
        idx = xp.nonzero(mask)
        r = SparseCOO(xp.stack(idx).astype(_np.int64).reshape(2, -1), d[idx].copy(), d.shape, True)
        return r if layout_of(a) is sparse_coo else convert(r, layout_of(a))
    s = a if sa else b
    if layout_of(s) is not sparse_coo:
        s = convert(s, sparse_coo)
    xp = s.xp
    r, c = s.indices
    dt = _np.result_type(s.dtype, b.dtype if sa else a.dtype)
    if sa:
        out = xp.zeros((a.shape[0], b.shape[1]), dt)
        if s.nnz:
            xp.add.at(out, r, s.values[:, None] * b[c])
        return out
    out = xp.zeros((b.shape[1], a.shape[0]), dt)      # (a @ b).T, rows of b.T are columns of the result
    if s.nnz:
        xp.add.at(out, c, (a[:, r] * s.values).T)
    return out.T.copy()


_SparseStorage.__matmul__ = lambda self, other: matmul(self, other)
_SparseStorage.__rmatmul__ = lambda self, other: matmul(other, self)
_array.register(SparseCOO, _np)
_array.register(Compressed, _np)


def value_positions(st):
    """For each element of coalesced storage ``st``'s values, its flat position in the dense tensor (gradcheck's
    Jacobian rows of a sparse input)."""
    xp = st.xp
    n = st.values.size
    ids = st._with_values(xp.arange(1, n + 1, dtype=_np.float64).reshape(st.values.shape)).to_dense().reshape(-1)
    ids = _array.to_host(ids)
    nz = _np.nonzero(ids)[0]
    pos = _np.zeros(n, _np.int64)
    pos[ids[nz].astype(_np.int64) - 1] = nz
    return pos


def densified(st):
    """``st`` with every element specified (the unspecified ones as explicit zeros), in its layout: gradcheck's
    input when the gradients of unspecified elements count (masked=False)."""
    xp = st.xp
    d = st.to_dense()
    if isinstance(st, SparseCOO):
        sd = st.sparse_dim
        full = xp.ones(st.shape[:sd], bool)
        idx = xp.nonzero(full) if sd else ()
        indices = xp.stack(idx).astype(_np.int64).reshape(sd, -1) if sd else xp.zeros((0, 1), _np.int64)
        vals = d[idx] if sd else d[None]
        return SparseCOO(indices, xp.ascontiguousarray(vals), st.shape, True)
    br, bc = st._block()
    mask = xp.ones((st.shape[0] // br, st.shape[1] // bc), bool)
    return compressed_from_dense(d, st.layout, st.blocksize, mask=mask, dense_dim=st.dense_dim)


def sparse_copy(st):
    """A coalesced copy of ``st`` with C-contiguous, writable values (gradcheck pokes them)."""
    st = st.coalesce()
    return st._with_values(st.xp.array(st.values, copy=True, order="C"), copy_indices=True)
