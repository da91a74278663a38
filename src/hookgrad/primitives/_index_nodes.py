"""The indexing nodes that the index and join families share: a basic or advanced index (and its view
classes Select / Slice / Unsqueeze / Alias) with the scatter that is its gradient, index_select with
index_add as its gradient. index.py re-exports them with the functions that build them."""
import numpy as np

from .._tensor import Tensor
from ..autograd.forward_ad import linear_jvp, multilinear_jvp, tsum, scaled  # noqa: F401  (forward AD)
from ..autograd.node import Node
from ..autograd.saved import _FREED
from ..autograd.formulas import TENSORS
from .._array import array_module


def _check_bounds(shape, idx):
    # NumPy raises IndexError already with a similar text; make it PyTorch's
    dim = 0
    for i in idx:
        if i is None:
            continue
        if i is Ellipsis:
            dim = len(shape) - sum(1 for j in idx if j is not None and j is not Ellipsis and not isinstance(j, bool)) + dim
            continue
        if isinstance(i, int) and not isinstance(i, bool):
            if dim >= len(shape):
                raise IndexError(f"too many indices for tensor of dimension {len(shape)}")
            if not -shape[dim] <= i < shape[dim]:
                raise IndexError(f"index {i} is out of bounds for dimension {dim} with size {shape[dim]}")
        dim += 1


_U64 = 1 << 64
_INT64_MAX = (1 << 63) - 1


def _slice_symints(start, stop, step=None):
    """A slice's (start, end, step) as PyTorch's slice keeps them (its view replay's SymInts)."""
    return (start or 0, _INT64_MAX if stop is None else stop, step or 1)


def _u64(v):
    """A negative int64 as PyTorch's grad_fn._saved_<int> reads it (unsigned wrap-around)."""
    return v + _U64 if v < 0 else v


class Index(Node, name="IndexBackward0"):
    jvp = linear_jvp
    # PyTorch's saved values: the advanced indices (None for a dim before the last that has none), the input's sizes
    saved_attrs = ("indices=_indices", "self_sym_sizes=in_shape")

    @property
    def _indices(self):
        if self._freed:
            raise RuntimeError(_FREED)
        return tuple(None if isinstance(i, slice) else i for i in self.idx)

    def forward(self, x):
        self.in_shape = x.shape
        self.in_dtype = x.dtype
        if not self.basic:      # PyTorch saves an advanced index's tensors: released after a pass (see backward)
            self._saved = (None,)
        try:
            return x[self.idx]
        except IndexError as e:
            _check_bounds(x.shape, self.idx)
            raise IndexError(str(e).replace(" axis ", " dimension ")) from None

    def backward(self, g):
        if self._freed:
            raise RuntimeError(_FREED)
        return self.grad_node.apply(g, idx=self.idx, shape=self.in_shape, basic=self.basic)


class Select(Index, name="SelectBackward0"):
    jvp = linear_jvp
    saved_attrs = ("dim=len(idx) - 2", "index=idx[-2]", "self_sym_sizes=in_shape")     # idx: (:, ..., index, ...)


class Slice(Index, name="SliceBackward0"):
    jvp = linear_jvp
    # idx: (:, ..., slice); a negative start / end reads wrapped, no end reads INT64_MAX (as PyTorch's slice)
    saved_attrs = ("dim=len(idx) - 1", "start=_u64(idx[-1].start or 0)",
                   "end=_INT64_MAX if idx[-1].stop is None else _u64(idx[-1].stop)", "step=idx[-1].step or 1",
                   "self_sym_sizes=in_shape")
    _u64 = staticmethod(_u64)
    _INT64_MAX = _INT64_MAX


class IndexGrad(Node, name="IndexPutBackward0"):
    """Scatter a gradient back into the indexed positions (summing repeats); its gradient is the index
    (``fwd_node``: the index node it is the gradient of, so that each level shows PyTorch's grad_fn name)."""
    fwd_node = Index

    def forward(self, g):
        out = array_module(g).zeros(self.shape, g.dtype)
        if self.basic:
            out[self.idx] = g
        else:
            array_module(out).add.at(out, self.idx, g)
        return out

    def backward(self, gg):
        return self.fwd_node.apply(gg, idx=self.idx, basic=self.basic)


class Unsqueeze(Index, name="UnsqueezeBackward0"):
    jvp = linear_jvp
    saved_attrs = ("dim=len(idx) - 1",)         # idx: (:, ..., None)


class Alias(Index, name="AliasBackward0"):
    jvp = linear_jvp
    saved_attrs = ()

    def backward(self, g, F=TENSORS):
        return g                    # PyTorch's alias passes the gradient on as it is


# The gradient node of each index node, with PyTorch's name; its own gradient is that index node again.
class IndexPutImplGrad(IndexGrad, name="IndexPutImplBackward0"):    # advanced indexing's (index_put_impl)
    fwd_node = Index


class SelectGrad(IndexGrad, name="SelectBackwardBackward0"):
    fwd_node = Select


class SliceGrad(IndexGrad, name="SliceBackwardBackward0"):
    fwd_node = Slice


class SqueezeGrad(IndexGrad, name="SqueezeBackward1"):              # x[None]'s gradient is a squeeze
    fwd_node = Unsqueeze


Index.grad_node, Select.grad_node, Slice.grad_node, Unsqueeze.grad_node = (IndexPutImplGrad, SelectGrad, SliceGrad,
                                                                           SqueezeGrad)


def zeros_for(node, i, like):
    """A zero gradient for input ``i`` of a node (the zero derivative of a linked input), made with the
    module of the Tensor ``like``."""
    nf = node.next_functions
    if i >= len(nf) or nf[i][0] is None:
        return None
    shape, dt = node._in_meta[i]
    return Tensor._make(array_module(like._data).zeros(shape, getattr(dt, "np", dt)))


class IndexSelect(Node, name="IndexSelectBackward0"):
    saved_attrs = ("dim", "index", "self_sym_sizes=in_shape")
    def forward(self, x):
        self.in_shape = x.shape
        return np.take(x, self.index, axis=self.dim)

    def backward(self, g):
        return IndexAddGrad.apply(g, index=self.index, dim=self.dim, shape=self.in_shape)


class IndexAddGrad(Node, name="IndexAddBackward0"):
    """zeros(shape).index_add(dim, index, g): the backward of index_select (``src``: an optional input
    linked with a zero derivative, for backward formulas that depend on their input in PyTorch)."""

    def forward(self, g, src=None):
        out = array_module(g).zeros(self.shape, g.dtype)
        array_module(out).add.at(out, (slice(None),) * self.dim + (self.index,), g)
        return out

    def backward(self, gg):
        return IndexSelect.apply(gg, index=self.index, dim=self.dim), zeros_for(self, 1, gg)
