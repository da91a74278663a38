"""Joining and splitting: cat/stack (and h/v/dstack), split/chunk/unbind (multi-output views), pad."""
import re

import numpy as np

from .. import _dtype as D
from .._tensor import Tensor
from ..autograd.forward_ad import linear_jvp, multilinear_jvp, tsum, scaled  # noqa: F401  (forward AD)
from ..autograd.node import Node
from ._dispatch import wrap_dim
from ._inplace import make_view
from ..autograd.views import ViewFunc
from ._index_nodes import Slice, IndexAddGrad, _slice_symints
from .._array import array_module, default_module

_MULTI_VIEW = ("Output {} of {} is a view and is being modified inplace. This view is the output of a function that "
               "returns multiple views. Such functions do not allow the output views to be modified inplace. You "
               "should replace the inplace operation by an out-of-place one.")


def _multi_view_error(node, view):
    """PyTorch's error for an in-place op on an output of a multi-view op (primitives._inplace.check_inplace)."""
    return _MULTI_VIEW.format(view._output_nr, re.sub(r"Backward\d*$", "", node.name()))


# ------------------------------------------------------------------------------------ cat / stack
class Cat(Node, name="CatBackward0"):
    saved_attrs = ("dim",)
    dt = None

    jvp = linear_jvp

    def forward(self, *xs):
        self.sizes = [x.shape[self.dim] if x.ndim == self.nd else None for x in xs]
        return np.concatenate([x for x in xs if x.ndim == self.nd], axis=self.dim, dtype=self.dt)

    def backward(self, g):
        sizes = [s for s in self.sizes if s is not None]
        parts = iter(g.split(sizes, self.dim))
        return tuple(next(parts) if s is not None else None for s in self.sizes)


def _tensor_list(name, tensors):
    if isinstance(tensors, Tensor):
        raise TypeError(f"{name}(): argument 'tensors' (position 1) must be tuple of Tensors, not Tensor")
    tensors = list(tensors)
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got {type(t).__name__}")
    return tensors


def cat(tensors, dim=0, *, out=None):
    """Concatenate tensors along an existing dim (dtypes promote; legacy empty 1-D tensors are skipped)."""
    ts = _tensor_list("cat", tensors)
    if not ts:
        raise ValueError("torch.cat(): expected a non-empty list of Tensors")
    for i, t in enumerate(ts):
        if t._data.ndim == 0:
            raise RuntimeError(f"zero-dimensional tensor (at position {i}) cannot be concatenated")
    real = [t for t in ts if t._data.shape != (0,)] or ts[:1]
    ref = real[0]._data.shape
    nd = len(ref)
    d = wrap_dim(dim, nd)
    for i, t in enumerate(ts):
        s = t._data.shape
        if s == (0,) and nd != 1:
            continue
        if len(s) != nd:
            raise RuntimeError(f"Tensors must have same number of dimensions: got {nd} and {len(s)}")
        for k in range(nd):
            if k != d and s[k] != ref[k]:
                raise RuntimeError(f"Sizes of tensors must match except in dimension {d}. Expected size {ref[k]} but "
                                   f"got size {s[k]} for tensor number {i} in the list.")
    dt = None
    first = ts[0]._data.dtype
    if any(t._data.dtype is not first for t in ts):
        dt = D.result_type_of(ts).np
    r = Cat.apply(*ts, dim=d, nd=nd, dt=dt)
    if out is not None:
        out.copy_(r)
        return out
    return r


concat = concatenate = cat


class Stack(Node, name="StackBackward0"):
    saved_attrs = ("dim",)
    dt = None

    jvp = linear_jvp

    def forward(self, *xs):
        return np.stack(xs, axis=self.dim, dtype=self.dt)

    def backward(self, g):
        return g.unbind(self.dim)


def stack(tensors, dim=0, *, out=None):
    """Stack equally-shaped tensors along a new dim."""
    ts = _tensor_list("stack", tensors)
    if not ts:
        raise RuntimeError("stack expects a non-empty TensorList")
    ref = ts[0]._data.shape
    for i, t in enumerate(ts):
        if t._data.shape != ref:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got {list(ref)} at entry 0 and "
                               f"{list(t._data.shape)} at entry {i}")
    d = wrap_dim(dim, len(ref) + 1)
    first = ts[0]._data.dtype
    dt = D.result_type_of(ts).np if any(t._data.dtype is not first for t in ts) else None
    r = Stack.apply(*ts, dim=d, dt=dt)
    if out is not None:
        out.copy_(r)
        return out
    return r


def _atleast(t, n):
    while t._data.ndim < n:
        t = t.unsqueeze(0) if t._data.ndim == 0 or n == 2 else t.unsqueeze(-1) if t._data.ndim == 2 else \
            t.unsqueeze(0)
    return t


def atleast_1d(*ts):
    r = tuple(t.reshape(1) if t._data.ndim == 0 else t for t in (ts[0] if len(ts) == 1 and isinstance(ts[0], (list, tuple)) else ts))
    return r[0] if len(r) == 1 else r


def atleast_2d(*ts):
    r = tuple(t.reshape(1, 1) if t._data.ndim == 0 else t.unsqueeze(0) if t._data.ndim == 1 else t
              for t in (ts[0] if len(ts) == 1 and isinstance(ts[0], (list, tuple)) else ts))
    return r[0] if len(r) == 1 else r


def hstack(tensors):
    """cat along dim 1 (dim 0 for 1-D tensors)."""
    ts = [atleast_1d(t) for t in tensors]
    return cat(ts, 0 if ts[0]._data.ndim == 1 else 1)


def vstack(tensors):
    """cat along dim 0 after making every tensor at least 2-D."""
    return cat([atleast_2d(t) for t in tensors], 0)


row_stack = vstack


def dstack(tensors):
    """cat along dim 2 after making every tensor at least 3-D."""
    ts = []
    for t in tensors:
        t = atleast_2d(t)
        ts.append(t.unsqueeze(-1) if t._data.ndim == 2 else t)
    return cat(ts, 2)


def column_stack(tensors):
    ts = [t.reshape(-1, 1) if t._data.ndim <= 1 else t for t in tensors]
    return cat(ts, 1)


# --------------------------------------------------------------------------- split / unbind
class Split(Node, name="SplitBackward0"):
    """Pieces of x along dim (views); backward concatenates the pieces' gradients."""
    saved_attrs = ("dim", "split_size", "self_sym_sizes")
    _forbid_inplace = _multi_view_error

    jvp = linear_jvp

    def forward(self, x):
        d = self.dim
        bounds = np.cumsum([0] + list(self.sizes))
        pre = (slice(None),) * d
        return tuple(x[pre + (slice(int(a), int(b)),)] for a, b in zip(bounds[:-1], bounds[1:]))

    def backward(self, *gs):
        return cat(gs, self.dim)


class SplitWithSizes(Split, name="SplitWithSizesBackward0"):
    saved_attrs = ("dim", "split_sizes=sizes", "self_sym_sizes")
    jvp = linear_jvp


class Unbind(Node, name="UnbindBackward0"):
    saved_attrs = ("dim",)
    _forbid_inplace = _multi_view_error

    jvp = linear_jvp

    def forward(self, x):
        pre = (slice(None),) * self.dim
        return tuple(x[pre + (i, Ellipsis)] for i in range(x.shape[self.dim]))     # (Ellipsis: a 0-d view, not a NumPy scalar)

    def backward(self, *gs):
        return stack(gs, self.dim)


def _views(outs, src, replay):
    outs = tuple(make_view(o, src, (lambda i: lambda t: replay(t)[i])(i)) for i, o in enumerate(outs))
    for o in outs:      # PyTorch's CreationMeta::MULTI_OUTPUT_NODE, inherited by views of these views
        if o._base is not None and o._creation is None:
            o._creation = "multi"
    return outs


def split(tensor, split_size_or_sections, dim=0):
    """Split into pieces of split_size (the last may be smaller) or of the listed sizes, along dim."""
    nd = tensor._data.ndim
    if nd == 0:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    d = wrap_dim(dim, nd)
    n = tensor._data.shape[d]
    s = split_size_or_sections
    if isinstance(s, Tensor):
        s = s.tolist()
    if isinstance(s, (list, tuple)):
        sizes = [int(v) for v in s]
        if sum(sizes) != n or any(v < 0 for v in sizes):
            raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's size at "
                               f"dimension {d}), but got split_sizes={sizes}")
        outs = SplitWithSizes.apply(tensor, dim=d, sizes=sizes, split_sizes=tuple(sizes),
                                    self_sym_sizes=tensor._data.shape)
        return _views(outs if isinstance(outs, tuple) else (outs,), tensor, lambda t: t.split(sizes, d))
    s = int(s)
    if s < 0:
        raise RuntimeError(f"split expects split_size be non-negative, but got split_size={s}")
    if s == 0 and n != 0:
        raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got dimension size of {n}")
    sizes = [s] * (n // s) + ([n % s] if n % s else []) if s else [0]
    if not sizes:
        sizes = [0]
    outs = Split.apply(tensor, dim=d, sizes=sizes, split_size=s, self_sym_sizes=tensor._data.shape)
    return _views(outs if isinstance(outs, tuple) else (outs,), tensor, lambda t: t.split(s, d))


def _chunk_size(input, chunks, dim):
    """The split size of chunk() and unsafe_chunk(): ``chunks`` pieces of equal size, the last may be smaller."""
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    nd = input._data.ndim
    if nd == 0:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    n = input._data.shape[wrap_dim(dim, nd)]
    return -(-n // chunks) if n else 0


def chunk(input, chunks, dim=0):
    """Split into ``chunks`` pieces of equal size (the last may be smaller; fewer pieces if needed)."""
    return split(input, _chunk_size(input, chunks, dim), dim)


def slice_dim(input, d, start, stop):
    """``input`` narrowed to [start:stop) along dim d (Python slice rules): a SliceBackward0 view,
    whatever the range (PyTorch's narrow/slice; plain indexing of a full range gives an alias)."""
    idx = (slice(None),) * d + (slice(start, stop),)
    out = Slice.apply(input, idx=idx, basic=True)
    # (the replay's SymInts, as PyTorch's slice keeps them: start, end, step)
    return make_view(out, input, ViewFunc(lambda t, a, b, c: slice_dim(t, d, a, b), _slice_symints(start, stop)))


_TENSOR_SPLIT_OVERLOADS = (" * (Tensor input, tuple of ints indices, int dim = 0)\n"
                           " * (Tensor input, Tensor tensor_indices_or_sections, int dim = 0)\n"
                           " * (Tensor input, int sections, int dim = 0)\n")
_HVD_OVERLOADS = " * (Tensor input, int sections)\n * (Tensor input, tuple of ints indices)\n"


def _sections_arg(name, overloads, sections, indices, tensor_ios=None):
    """PyTorch's overloads of tensor_split/hsplit/...: ``sections`` (an int; any type by position), ``indices``
    (a sequence) or ``tensor_indices_or_sections`` (a Tensor), exactly one of them."""
    given = [(k, v) for k, v in (("sections", sections), ("indices", indices),
                                 ("tensor_indices_or_sections", tensor_ios)) if v is not None]
    ok = len(given) == 1 and (given[0][0] != "indices" or isinstance(indices, (list, tuple, Tensor))) and \
        (given[0][0] != "tensor_indices_or_sections" or isinstance(tensor_ios, Tensor))
    if not ok:
        got = ", ".join(["Tensor"] + [f"{k}={type(v).__name__}" for k, v in given])
        raise TypeError(f"{name}() received an invalid combination of arguments - got ({got}, ), but expected one "
                        f"of:\n{overloads}")
    return given[0][1]


def tensor_split(input, sections=None, dim=0, *, indices=None, tensor_indices_or_sections=None):
    """Split at the given indices, or into n nearly-equal sections: separate slices (one
    SliceBackward0 node each), unlike split/chunk."""
    ios = _sections_arg("tensor_split", _TENSOR_SPLIT_OVERLOADS, sections, indices, tensor_indices_or_sections)
    nd = input._data.ndim
    if nd == 0:
        raise RuntimeError("tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims")
    if isinstance(ios, Tensor):
        if ios._data.ndim > 1:
            raise RuntimeError("tensor_split expected tensor_indices_or_sections to be a zero-dimensional or "
                               f"one-dimensional tensor, but got a tensor with {ios._data.ndim} dims")
        if ios._data.dtype != np.int64:
            raise RuntimeError("tensor_split expected tensor_indices_or_sections to have dtype of long, but got "
                               f"{ios.dtype._legacy.replace('Tensor', '')}")
        ios = int(ios._data) if ios._data.ndim == 0 else [int(i) for i in ios._data]
    d = wrap_dim(dim, nd)
    n = input._data.shape[d]
    if isinstance(ios, (int, np.integer)) and not isinstance(ios, bool):
        k = int(ios)
        if k <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {k}")
        sizes = [n // k + 1] * (n % k) + [n // k] * (k - n % k)
        bounds = np.cumsum([0] + sizes).tolist()
        starts, stops = bounds[:-1], bounds[1:]
    elif isinstance(ios, (list, tuple)):
        idx = [int(i) for i in ios]
        starts, stops = [0] + idx, idx + [n]
    else:
        raise TypeError(f"tensor_split() received an invalid combination of arguments - got (Tensor, "
                        f"{type(ios).__name__}), but expected one of:\n{_TENSOR_SPLIT_OVERLOADS}")
    return tuple(slice_dim(input, d, a, b) for a, b in zip(starts, stops))


def _hvd_split(name, min_dims, dim_of):
    def fn(input, sections=None, *, indices=None):
        indices_or_sections = _sections_arg(name, _HVD_OVERLOADS, sections, indices)
        nd = input._data.ndim

        if nd < min_dims:
            raise RuntimeError(f"torch.{name} requires a tensor with at least {min_dims} dimension, but got a tensor "
                               f"with {nd} dimensions!")
        d = dim_of(nd)
        ios = indices_or_sections
        if isinstance(ios, Tensor) and ios._data.ndim == 0:
            ios = int(ios._data)
        if isinstance(ios, (int, np.integer)) and not isinstance(ios, bool):
            n = input._data.shape[d]
            if ios == 0 or n % ios:
                raise RuntimeError(f"torch.{name} attempted to split along dimension {d}, but the size of the "
                                   f"dimension {n} is not divisible by the split_size {ios}!")
        return tensor_split(input, ios, d)
    fn.__name__ = name
    fn.__doc__ = f"tensor_split along dim {dim_of(3)} (sections must divide the size evenly)."
    return fn


hsplit = _hvd_split("hsplit", 1, lambda nd: 1 if nd > 1 else 0)
vsplit = _hvd_split("vsplit", 2, lambda nd: 0)
dsplit = _hvd_split("dsplit", 3, lambda nd: 2)


def unbind(input, dim=0):
    """The slices along dim, as a tuple of views."""
    nd = input._data.ndim
    if nd == 0:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    d = wrap_dim(dim, nd)
    outs = Unbind.apply(input, dim=d)
    if not isinstance(outs, tuple):
        outs = (outs,)
    return _views(outs, input, lambda t: t.unbind(d))


# ------------------------------------------------------------------------------------------ pad
class ConstantPad(Node, name="ConstantPadNdBackward0"):
    """Pad (or crop, for negative amounts) the last dims with a constant; backward crops back."""
    value = 0

    def forward(self, x):
        p = self.pads                               # ((before, after) per dim, first dim first)
        shape = tuple(n + a + b for n, (a, b) in zip(x.shape, p))
        if any(s < 0 for s in shape):
            raise RuntimeError(f"The input size {x.shape[-1]}, plus negative padding {p[-1][0]} and {p[-1][1]} "
                               f"resulted in a negative output size, which is invalid. Check dimension "
                               f"{len(x.shape) - 1} of your input.")
        out = array_module(x).full(shape, self.value, dtype=x.dtype)
        src = tuple(slice(max(-a, 0), n - max(-b, 0)) for n, (a, b) in zip(x.shape, p))
        dst = tuple(slice(max(a, 0), s - max(b, 0)) for s, (a, b) in zip(shape, p))
        out[dst] = x[src]
        return out

    def backward(self, g):
        return ConstantPad.apply(g, pads=tuple((-a, -b) for a, b in self.pads), value=0)


class IndexPad(Node, name="ReflectionPad1DBackward0"):
    """Reflect/replicate/circular padding: each padded dim is gathered through an index map."""
    save = (0,)
    saved_names = ("self",)

    def forward(self, x):
        for d, m in self.maps:
            x = np.take(x, m, axis=d)
        return x

    def backward(self, g):
        (x,) = self.saved_values
        shape = list(g.shape)
        for d, m in reversed(self.maps):
            shape[d] = self.in_shape[d]
            g = IndexAddGrad.apply(g, x, index=m, dim=d, shape=tuple(shape))
        return g


_PAD_NAMES = {("reflect", 1): "ReflectionPad1DBackward0", ("reflect", 2): "ReflectionPad2DBackward0",
              ("reflect", 3): "ReflectionPad3DBackward0", ("replicate", 1): "ReplicationPad1DBackward0",
              ("replicate", 2): "ReplicationPad2DBackward0", ("replicate", 3): "ReplicationPad3DBackward0"}
_PAD_CLASSES = {k: type(v, (IndexPad,), {"__qualname__": v}) for k, v in _PAD_NAMES.items()}
_CircularPad = type("CopySlices", (IndexPad,), {"__qualname__": "CopySlices",
                                                "name": lambda self: "torch::autograd::CopySlices"})


def index_pad(input, pairs, mode):
    """Reflect / replicate / circular padding of the last ``len(pairs)`` dims (``pairs``: (before, after),
    first padded dim first; a negative amount crops). F.pad checks the arguments."""
    x = input._data
    k = len(pairs)
    maps = []
    xp = array_module(x)
    for i, (a, b) in enumerate(pairs):
        d = x.ndim - k + i
        m = xp.arange(x.shape[d])
        if a < 0:
            m, a = m[-a:], 0
        if b < 0:
            m, b = m[:len(m) + b], 0
        maps.append((d, np.pad(m, (a, b), mode={"reflect": "reflect", "replicate": "edge", "circular": "wrap"}[mode])))
    cls = _CircularPad if mode == "circular" else _PAD_CLASSES[(mode, k)]
    return cls.apply(input, maps=tuple(maps), in_shape=x.shape)


# ============================================================ more joins and splits
def atleast_3d(*ts):
    """Each tensor viewed with at least 3 dims (0-d: 1x1x1, 1-d (n): 1xnx1, 2-d: a trailing 1)."""
    def one(t):
        nd = t._data.ndim
        if nd == 0:
            return t.reshape(1, 1, 1)
        if nd == 1:
            return t.unsqueeze(0).unsqueeze(-1)
        if nd == 2:
            return t.unsqueeze(-1)
        return t
    r = tuple(one(t) for t in (ts[0] if len(ts) == 1 and isinstance(ts[0], (list, tuple)) else ts))
    return r[0] if len(r) == 1 else r


class BlockDiag(Node, name="BlockDiagBackward0"):
    dt = None

    jvp = linear_jvp

    def forward(self, *xs):
        xs = [x.reshape(1, -1) if x.ndim < 2 else x for x in xs]
        self.shapes = [x.shape for x in xs]
        out = array_module(xs[0]).zeros((sum(s[0] for s in self.shapes), sum(s[1] for s in self.shapes)),
                                        self.dt or xs[0].dtype)
        r = c = 0
        for x in xs:
            out[r:r + x.shape[0], c:c + x.shape[1]] = x
            r, c = r + x.shape[0], c + x.shape[1]
        return out

    def backward(self, g):
        grads = []
        r = c = 0
        for (n, m), meta in zip(self.shapes, self._in_meta):
            grads.append(g[r:r + n, c:c + m].reshape(meta[0]) if meta is not None else None)
            r, c = r + n, c + m
        return tuple(grads)


def block_diag(*tensors):
    """A block-diagonal matrix of the given (at most 2-D) tensors."""
    ts = list(tensors)
    for i, t in enumerate(ts):
        if t._data.ndim > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {i} has "
                               f"{t._data.ndim} dimensions")
    if not ts:
        return Tensor._make(default_module().zeros((1, 0), D.get_default_dtype().np))
    dt = D.result_type_of(ts).np if any(t._data.dtype != ts[0]._data.dtype for t in ts) else None
    return BlockDiag.apply(*ts, dt=dt)


class UnsafeSplit(Split, name="UnsafeSplitBackward0"):
    """split whose outputs autograd does not treat as views (in-place changes of them are allowed)."""
    _forbid_inplace = None
    jvp = linear_jvp


class UnsafeSplitWithSizes(Split, name="UnsafeSplitWithSizesBackward0"):
    _forbid_inplace = None
    jvp = linear_jvp


def unsafe_split(input, split_size, dim=0):
    """split(), with outputs that are not autograd views."""
    tensor = input
    if isinstance(split_size, (list, tuple)):
        return unsafe_split_with_sizes(tensor, split_size, dim)
    parts = split(tensor, split_size, dim)
    return _unsafe(tensor, UnsafeSplit, [p._data.shape[wrap_dim(dim, tensor._data.ndim)] for p in parts], dim,
                   split_size=int(split_size))


def unsafe_split_with_sizes(input, split_sizes, dim=0):
    tensor = input
    split(tensor, list(split_sizes), dim)       # PyTorch's checks
    return _unsafe(tensor, UnsafeSplitWithSizes, [int(s) for s in split_sizes], dim, split_sizes=tuple(split_sizes))


def _unsafe(tensor, cls, sizes, dim, **params):
    d = wrap_dim(dim, tensor._data.ndim)
    outs = cls.apply(tensor, dim=d, sizes=sizes, self_sym_sizes=tensor._data.shape, **params)
    return outs if isinstance(outs, tuple) else (outs,)


def unsafe_chunk(input, chunks, dim=0):
    """chunk(), with outputs that are not autograd views."""
    return unsafe_split(input, _chunk_size(input, chunks, dim), dim)
