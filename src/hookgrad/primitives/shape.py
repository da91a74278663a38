"""Shape and view primitives. Ops that NumPy computes as views are marked as views of their
input (shared version counter, replay function for in-place rebase)."""
import numpy as np

from .._tensor import Tensor, Size
from ..autograd import graph as _G
from ..autograd.graph import Node
from ..autograd.grad_mode import _state
from ._dispatch import wrap_dim, dims_of
from ._inplace import make_view
from .._creation import int_list

_new = object.__new__


def _shape_arg(shape, fname="view", argname="size"):
    return int_list(shape, fname, argname, overloaded=fname == "view")


def _infer(shape, numel, src_shape):
    shape = list(shape)
    neg = [i for i, s in enumerate(shape) if s == -1]
    if len(neg) > 1:
        raise RuntimeError("only one dimension can be inferred")
    known = 1
    for s in shape:
        if s != -1:
            if s < 0:
                raise RuntimeError(f"invalid shape dimension {s} at index {shape.index(s)} of shape {shape}")
            known *= s
    if neg:
        if known == 0 or numel % known:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
        shape[neg[0]] = numel // known
    elif known != numel:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
    return tuple(shape)


class View(Node, name="ViewBackward0"):
    def forward(self, x):
        self.in_shape = x.shape
        shape = _infer(self.shape, x.size, x.shape)
        if not x.flags.c_contiguous and not _viewable(x, shape):
            raise RuntimeError("view size is not compatible with input tensor's size and stride (at least one dimension "
                               "spans across two contiguous subspaces). Use .reshape(...) instead.")
        return x.reshape(shape)

    def backward(self, g):
        return g.reshape(self.in_shape)

    def backward_np(self, g):
        return g.reshape(self.in_shape)


def _viewable(x, shape):
    try:
        v = x.view()
        v.shape = shape
        return True
    except AttributeError:
        return False


class Reshape(View, name="ViewBackward0"):
    def forward(self, x):
        self.in_shape = x.shape
        return x.reshape(_infer(self.shape, x.size, x.shape))


class ReshapeAlias(Reshape, name="ReshapeAliasBackward0"):
    """reshape of a non-contiguous tensor whose strides allow a view (PyTorch's _reshape_alias)."""


class UnsafeView(Reshape, name="UnsafeViewBackward0"):
    """A reshape whose result is not a view (PyTorch's _unsafe_view: after a copy, or of a fresh result)."""


def view(self, *shape):
    if len(shape) == 1 and not isinstance(shape[0], (int, np.integer, tuple, list, Size, Tensor, float, str, type(None))):
        return view_dtype(self, shape[0])
    shape = _shape_arg(shape)
    return make_view(View.apply(self, shape=shape), self, lambda t: t.view(shape))


def view_dtype(self, dtype):
    """Tensor.view(dtype): the same bytes read as another dtype, sharing the version counter (as in PyTorch,
    not an autograd view: no _base, no grad); a different element size rescales the last dimension."""
    from .. import _dtype as D
    from .._errors import scalar_name
    if not isinstance(dtype, D.dtype):
        raise TypeError(f"view(): argument 'dtype' must be torch.dtype, not {type(dtype).__name__}")
    x = self._data
    a, b = x.dtype.itemsize, dtype.np.itemsize
    if a != b:
        what = f"to view {scalar_name(x.dtype)} as {scalar_name(dtype.np)} (different element sizes)"
        if x.ndim == 0:
            raise RuntimeError(f"self.dim() cannot be 0 {what}")
        if x.shape[-1] != 1 and x.strides[-1] != a:
            raise RuntimeError(f"self.stride(-1) must be 1 {what}, but got {x.strides[-1] // a}")
        if b > a and x.shape[-1] % (b // a):
            raise RuntimeError(f"self.size(-1) must be divisible by {b // a} {what}, but got {x.shape[-1]}")
    return Tensor._make(x.view(dtype.np), vc=self._vc)


def reshape(self, *shape):
    shape = _shape_arg(shape, "reshape", "shape")
    x = self._data
    if x.flags.c_contiguous:
        cls = Reshape          # PyTorch: a contiguous tensor is viewed (ViewBackward0)
    elif _viewable(x, _infer(shape, x.size, x.shape)):
        cls = ReshapeAlias
    else:                      # PyTorch: _unsafe_view(clone(contiguous)): a copy, not a view
        return UnsafeView.apply(Clone.apply(self), shape=shape)
    return make_view(cls.apply(self, shape=shape), self, lambda t: t.reshape(shape))


def flatten(self, start_dim=0, end_dim=-1):
    nd = self._data.ndim
    if nd == 0:
        return reshape(self, (1,))
    s = wrap_dim(start_dim, nd)
    e = wrap_dim(end_dim, nd)
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if s == e:
        return self
    shp = self._data.shape
    n = 1
    for d in shp[s:e + 1]:
        n *= d
    return reshape(self, shp[:s] + (n,) + shp[e + 1:])


def unflatten(self, dim, sizes):
    nd = self._data.ndim
    d = wrap_dim(dim, nd)
    shp = self._data.shape
    sizes = tuple(sizes)
    n = 1
    for v in sizes:
        n *= v
    if (-1 not in sizes and n != shp[d]) or (-1 in sizes and (n == 0 or shp[d] % -n)):
        raise RuntimeError(f"unflatten: Provided sizes {list(sizes)} don't multiply up to the size of dim {dim} "
                           f"({shp[d]}) in the input tensor")
    if -1 in sizes:
        sizes = _infer(sizes, shp[d], (shp[d],))
    return view(self, shp[:d] + sizes + shp[d + 1:])


class Expand(Node, name="ExpandBackward0"):
    def forward(self, x):
        self.in_shape = x.shape
        return np.broadcast_to(x, self.shape)

    def backward(self, g):
        return g.sum_to_size(self.in_shape)

    def backward_np(self, g):
        return g        # summed back to the input's shape by the caller


def expand(self, *sizes):
    sizes = _shape_arg(sizes, "expand")
    shp = self._data.shape
    if len(sizes) < len(shp):
        raise RuntimeError(f"expand(torch.{self.dtype._legacy}{{{list(shp)}}}, size={list(sizes)}): the number of sizes "
                           f"provided ({len(sizes)}) must be greater or equal to the number of dimensions in the tensor ({len(shp)})")
    lead = len(sizes) - len(shp)
    target = []
    for i, s in enumerate(sizes):
        if i < lead:
            if s < 0:
                raise RuntimeError(f"The expanded size of the tensor ({s}) isn't allowed in a leading, non-existing dimension {i}")
            target.append(s)
        else:
            cur = shp[i - lead]
            if s == -1:
                target.append(cur)
            elif cur != s and cur != 1:
                raise RuntimeError(f"The expanded size of the tensor ({s}) must match the existing size ({cur}) at "
                                   f"non-singleton dimension {i}.  Target sizes: {list(sizes)}.  Tensor sizes: {list(shp)}")
            else:
                target.append(s)
    target = tuple(target)
    return make_view(Expand.apply(self, shape=target), self, lambda t: t.expand(target))


def expand_as(self, other):
    return expand(self, other._data.shape)


def broadcast_to(input, size):
    return expand(input, size)


class SumToSize(Node, name="SumBackward1"):
    """Sum over broadcast dimensions (used to undo broadcasting in backward)."""

    def forward(self, x):
        self.in_shape = x.shape
        shape = self.shape
        lead = x.ndim - len(shape)
        axes = tuple(range(lead)) + tuple(i + lead for i, s in enumerate(shape) if s == 1 and x.shape[i + lead] != 1)
        r = x.sum(axis=axes, keepdims=True) if axes else x
        if lead:
            r = r.reshape(shape)
        return r if r is not x else x.copy()

    def backward(self, g):
        return g.expand(self.in_shape)

    def backward_np(self, g):
        return np.broadcast_to(g, self.in_shape)


def sum_to_size(self, *size):
    size = _shape_arg(size, "sum_to_size")
    if self._data.shape == size:
        return self
    try:
        np.broadcast_shapes(size, self._data.shape)
    except ValueError:
        raise RuntimeError(f"size {{{list(size)}}} is not expandable to size {{{list(self.shape)}}}.") from None
    if not (self.requires_grad and _state.enabled):
        return SumToSize.apply(self, shape=size)
    # PyTorch's at::sum_to: a keepdim sum over the leading and broadcast dims (SumBackward1), then a
    # view dropping the leading dims (ViewBackward0): the nodes a create_graph gradient is made of
    shape = self._data.shape
    lead = len(shape) - len(size)
    axes = tuple(range(lead)) + tuple(i + lead for i, s in enumerate(size) if s == 1 and shape[i + lead] != 1)
    r = self.sum(axes, keepdim=True) if axes else self
    return r.view(size) if lead else r


class Permute(Node, name="PermuteBackward0"):
    def forward(self, x):
        return x.transpose(self.dims)

    def backward(self, g):
        return g.permute(tuple(np.argsort(self.dims)))

    def backward_np(self, g):
        return g.transpose(np.argsort(self.dims))


class Transpose(Node, name="TransposeBackward0"):
    def forward(self, x):
        return np.swapaxes(x, self.d0, self.d1) if x.ndim else x.view()

    def backward(self, g):
        return g.transpose(self.d0, self.d1)

    def backward_np(self, g):
        return np.swapaxes(g, self.d0, self.d1)


def permute(self, *dims):
    dims = _shape_arg(dims, "permute", "dims")
    nd = self._data.ndim
    if len(dims) != nd:
        raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input does not match the length of "
                           f"the desired ordering of dimensions i.e. input.dim() = {nd} is not equal to len(dims) = {len(dims)}")
    dims = tuple(wrap_dim(d, nd) for d in dims)
    if len(set(dims)) != nd:
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    return make_view(Permute.apply(self, dims=dims), self, lambda t: t.permute(dims))


def transpose(self, dim0, dim1):
    nd = self._data.ndim
    d0, d1 = wrap_dim(dim0, nd), wrap_dim(dim1, nd)
    return make_view(Transpose.apply(self, d0=d0, d1=d1), self, lambda t: t.transpose(d0, d1))


swapaxes = swapdims = transpose


def t(self):
    nd = self._data.ndim
    if nd > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {nd}D")
    if nd < 2:
        return make_view(TNode.apply(self, d0=0, d1=0), self, _t_replay)
    if (self._requires_grad or self._lazy_rg and self.requires_grad) and _state.enabled and not _G._op_hooks:
        # hot path (every nn.Linear call): the transposed view, recorded without apply's plumbing
        node = _new(TNode)
        return make_view(node._record((self,), self._data.T), self, _t_replay)
    return make_view(TNode.apply(self), self, _t_replay)     # d0=0, d1=1 are TNode's defaults


def _t_replay(x):
    return x.t()


class TNode(Transpose, name="TBackward0"):
    """t(): its own inverse, for 0-d, 1-d and 2-d tensors."""
    d0, d1 = 0, 1

    def forward(self, x):
        return x.T

    def backward(self, g):
        return g.t()

    def backward_np(self, g):
        return g.T


def T(self):
    nd = self._data.ndim
    return permute(self, tuple(range(nd - 1, -1, -1)))


def mT(self):
    if self._data.ndim < 2:
        raise RuntimeError("tensor.mT is only supported on matrices or batches of matrices. Got 1-D tensor.")
    return transpose(self, -2, -1)


class Squeeze(Node, name="SqueezeBackward0"):
    def forward(self, x):
        self.in_shape = x.shape
        return x.reshape(self.shape)

    def backward(self, g):
        # PyTorch's unsqueeze_to: one unsqueeze per removed size-1 dim, in ascending order
        ins, out = self.in_shape, self.shape
        j = 0
        for i, n in enumerate(ins):
            if j < len(out) and out[j] == n:       # greedy: the squeezed dims are the unmatched 1s
                j += 1
            else:
                g = g.unsqueeze(i)
        return g

    def backward_np(self, g):
        return g.reshape(self.in_shape)


class Unsqueeze(Squeeze, name="UnsqueezeBackward0"):
    def backward(self, g):
        out, ins = self.shape, self.in_shape
        d = next(i for i in range(len(out)) if out[i] == 1 and out[:i] + out[i + 1:] == ins)
        return g.squeeze(d)         # PyTorch: grad.squeeze(dim)


def squeeze(self, dim=None):
    shp = self._data.shape
    nd = len(shp)
    if dim is None:
        new = tuple(s for s in shp if s != 1)
        cls = Squeeze
    else:
        ds = dims_of(dim, nd) if nd else ()
        if len(set(ds)) != len(ds):
            d = next(d for d in ds if ds.count(d) > 1)
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
        new = tuple(s for i, s in enumerate(shp) if not (i in ds and s == 1))
        cls = _SqueezeDim if isinstance(dim, int) else _SqueezeDims
    return make_view(cls.apply(self, shape=new), self, lambda t: t.squeeze(dim))


class _SqueezeDim(Squeeze, name="SqueezeBackward1"):
    pass


class _SqueezeDims(Squeeze, name="SqueezeBackward2"):
    pass


class SqueezeInplace(Squeeze, name="SqueezeBackward4"):
    """squeeze_(dim) of a fresh result inside a composite (matmul of a vector and a matrix)."""


def unsqueeze(self, dim):
    shp = self._data.shape
    d = wrap_dim(dim, len(shp) + 1)
    new = shp[:d] + (1,) + shp[d:]
    return make_view(Unsqueeze.apply(self, shape=new), self, lambda t: t.unsqueeze(d))


class Contiguous(Node, name="CloneBackward0"):
    def forward(self, x):
        return np.ascontiguousarray(x)

    def backward(self, g):
        return g

    def backward_np(self, g):
        return g


def contiguous(self, memory_format=None):
    if self._data.flags.c_contiguous:
        return self
    return Contiguous.apply(self)


class Clone(Node, name="CloneBackward0"):
    def forward(self, x):
        return np.array(x, copy=True, order="C")

    def backward(self, g):
        return g

    def backward_np(self, g):
        return g


def clone(self, *, memory_format=None):
    return Clone.apply(self)


class ToCopy(Node, name="ToCopyBackward0"):
    def forward(self, x):
        return x.astype(self.dt)

    def backward(self, g):
        return g

    def backward_np(self, g):
        return g


def to(self, *args, **kwargs):
    """to(dtype), to(device), to(other), to(device, dtype); copy=True forces a copy."""
    from .. import _dtype as D
    from .._tensor import _check_device
    dt = kwargs.get("dtype")
    copy = kwargs.get("copy", False)
    _check_device(kwargs.get("device"))
    for a in args:
        if isinstance(a, Tensor):
            dt = a.dtype
        elif isinstance(a, D.dtype):
            dt = a
        elif isinstance(a, (str, int)) or type(a).__name__ == "device":
            _check_device(a)
        elif a is None or isinstance(a, bool):
            pass
        else:
            dt = D.to_dtype(a)
    if dt is None or dt.np == self._data.dtype:
        return Clone.apply(self) if copy else self
    if self.requires_grad and not dt.is_floating_point:
        with _no_grad():
            return ToCopy.apply(self, dt=dt.np)
    return ToCopy.apply(self, dt=dt.np)


def _no_grad():
    from ..autograd.grad_mode import no_grad
    return no_grad()


def _caster(dt_name):
    def fn(self, memory_format=None):
        from .. import _dtype as D
        return to(self, D._NAMES[dt_name])
    fn.__name__ = dt_name
    return fn


float_ = _caster("float32")
double = _caster("float64")
half = _caster("float16")
long = _caster("int64")
int_ = _caster("int32")
short = _caster("int16")
char = _caster("int8")
byte = _caster("uint8")
bool_ = _caster("bool")


def cpu(self, *a, **k):
    return self


def cuda(self, *a, **k):
    from .._errors import no_device
    raise no_device("cuda")


def type_as(self, other):
    return to(self, other.dtype)


class Flip(Node, name="FlipBackward0"):
    def forward(self, x):
        return np.flip(x, self.dims).copy() if x.ndim else x.copy()     # a 0-d tensor flips to itself

    def backward(self, g):
        return g.flip(self.dims)


def flip(self, *dims):
    """Reverse the order of elements along the given dims."""
    dims = _shape_arg(dims, "flip", "dims")
    dims = tuple(wrap_dim(d, self._data.ndim) for d in dims)
    for i, d in enumerate(dims):
        if d in dims[:i]:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
    return Flip.apply(self, dims=dims)


def fliplr(self):
    return flip(self, (1,))


def flipud(self):
    return flip(self, (0,))


class Roll(Node, name="RollBackward0"):
    def forward(self, x):
        return np.roll(x, self.shifts, self.dims)

    def backward(self, g):
        neg = tuple(-s for s in self.shifts) if isinstance(self.shifts, tuple) else -self.shifts
        return g.roll(neg, self.dims)


def roll(self, shifts, dims=None):
    if isinstance(shifts, (list, tuple)):
        shifts = tuple(int(s) for s in shifts)
    if isinstance(dims, list):
        dims = tuple(dims)
    ns = len(shifts) if isinstance(shifts, tuple) else 1
    nd = 0 if dims is None else len(dims) if isinstance(dims, tuple) else 1
    if ns != nd and not (dims is None and ns == 1):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {ns}, dims:{nd}")
    return Roll.apply(self, shifts=shifts, dims=dims)


class Repeat(Node, name="RepeatBackward0"):
    def forward(self, x):
        reps = self.reps
        lead = len(reps) - x.ndim
        self.in_shape = x.shape
        xx = x.reshape((1,) * lead + x.shape)
        return np.tile(xx, reps)

    def backward(self, g):
        reps = self.reps
        shp = (1,) * (len(reps) - len(self.in_shape)) + tuple(self.in_shape)
        inter = []
        for r, s in zip(reps, shp):
            inter += [r, s]
        return g.reshape(inter).sum(dim=tuple(range(0, 2 * len(reps), 2))).reshape(self.in_shape)


def repeat(self, *sizes):
    reps = _shape_arg(sizes, "repeat", "repeats")
    if len(reps) < self._data.ndim:
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor")
    return Repeat.apply(self, reps=reps)


def tile(self, *dims):
    """repeat(), with dims left-padded with 1s to the tensor's rank."""
    dims = _shape_arg(dims, "tile", "dims")
    if len(dims) < self._data.ndim:
        dims = (1,) * (self._data.ndim - len(dims)) + dims
    return repeat(self, dims)


def movedim(self, source, destination):
    nd = self._data.ndim
    src = [source] if isinstance(source, int) else list(source)
    dst = [destination] if isinstance(destination, int) else list(destination)
    src = [wrap_dim(s, nd) for s in src]
    dst = [wrap_dim(d, nd) for d in dst]
    order = [i for i in range(nd) if i not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return permute(self, order)


moveaxis = movedim


# ------------------------------------------------------------------------ triangles, diagonals
class Tril(Node, name="TrilBackward0"):
    def forward(self, x):
        return np.tril(x, self.k) if x.ndim >= 2 else x.copy()

    def backward(self, g):
        return type(self).apply(g, k=self.k)


class Triu(Tril, name="TriuBackward0"):
    def forward(self, x):
        return np.triu(x, self.k)


def _int_arg(name, v, what="diagonal"):
    if not isinstance(v, (int, np.integer)) or isinstance(v, bool):
        raise TypeError(f"{name}(): argument '{what}' (position 1) must be int, not {type(v).__name__}")
    return int(v)


def tril(input, diagonal=0):
    """Zero the elements above the k-th diagonal of the last two dims."""
    if input._data.ndim < 2:
        raise RuntimeError("tril: input tensor must have at least 2 dimensions")
    return Tril.apply(input, k=_int_arg("tril", diagonal))


def triu(input, diagonal=0):
    """Zero the elements below the k-th diagonal of the last two dims."""
    if input._data.ndim < 2:
        raise RuntimeError("triu: input tensor must have at least 2 dimensions")
    return Triu.apply(input, k=_int_arg("triu", diagonal))


def _diag_view(x, offset, d1, d2):
    """A writable strided view of the diagonal (moved to the last dim)."""
    y = np.moveaxis(x, (d1, d2), (-2, -1))
    y = y[..., :, offset:] if offset >= 0 else y[..., -offset:, :]
    n = max(min(y.shape[-2], y.shape[-1]), 0)
    return np.lib.stride_tricks.as_strided(y, y.shape[:-2] + (n,), y.strides[:-2] + (y.strides[-2] + y.strides[-1],))


class Diagonal(Node, name="DiagonalBackward0"):
    def forward(self, x):
        self.in_shape = x.shape
        return _diag_view(x, self.offset, self.d1, self.d2)

    def backward(self, g):
        return DiagEmbedGrad.apply(g, shape=self.in_shape, offset=self.offset, d1=self.d1, d2=self.d2)


class DiagEmbedGrad(Node, name="DiagonalBackwardBackward0"):
    """Place a diagonal back into zeros of ``shape`` (the backward of diagonal; also diag_embed)."""

    def forward(self, g):
        out = np.zeros(self.shape, g.dtype)
        _diag_view(out, self.offset, self.d1, self.d2)[...] = g
        return out

    def backward(self, gg):
        return Diagonal.apply(gg, offset=self.offset, d1=self.d1, d2=self.d2)


class DiagEmbed(DiagEmbedGrad, name="DiagEmbedBackward0"):
    pass


class DiagonalCopy(Diagonal, name="DiagonalBackward0_copy"):
    def forward(self, x):
        return Diagonal.forward(self, x).copy()


def diagonal(input, offset=0, dim1=0, dim2=1):
    """A view of the diagonal of the (dim1, dim2) planes, as the last dim."""
    nd = input._data.ndim
    d1, d2 = wrap_dim(dim1, nd), wrap_dim(dim2, nd)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    out = Diagonal.apply(input, offset=offset, d1=d1, d2=d2)
    return make_view(out, input, lambda t: t.diagonal(offset, d1, d2))


def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    """Matrices (last two dims by default) whose diagonal is the last dim of input."""
    nd = input._data.ndim + 1
    d1, d2 = wrap_dim(dim1, nd), wrap_dim(dim2, nd)
    n = input._data.shape[-1] + abs(offset)
    shape = list(input._data.shape[:-1])
    for d in sorted((d1, d2)):
        shape.insert(d, n)
    return DiagEmbed.apply(input, shape=tuple(shape), offset=offset, d1=d1, d2=d2)


def diag(input, diagonal=0):
    """1-D input: a square matrix with it on the k-th diagonal; 2-D input: its k-th diagonal (a copy)."""
    nd = input._data.ndim
    if nd == 1:
        return diag_embed(input, diagonal, 0, 1)
    if nd == 2:
        return DiagonalCopy.apply(input, offset=diagonal, d1=0, d2=1)
    raise RuntimeError("diag(): Supports 1D or 2D tensors. Got {}D".format(nd))


class Trace(Node, name="TraceBackward0"):
    def forward(self, x):
        self.in_shape = x.shape
        return np.asarray(np.trace(x))

    def backward(self, g):
        n = min(self.in_shape)
        return DiagEmbedGrad.apply(g.expand(n), shape=self.in_shape, offset=0, d1=0, d2=1)


def trace(input):
    """Sum of the main diagonal of a matrix."""
    if input._data.ndim != 2:
        raise RuntimeError("trace: expected a matrix, but got tensor with dim {}".format(input._data.ndim))
    return Trace.apply(input)


def narrow(input, dim, start, length):
    """A view of ``length`` elements along dim from ``start``."""
    nd = input._data.ndim
    if nd == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    d = wrap_dim(dim, nd)
    n = input._data.shape[d]
    start = int(start)
    if not -n <= start <= n:
        raise IndexError(f"start out of range (expected to be in range of [{-n}, {n}], but got {start})")
    if start < 0:
        start += n
    if start + length > n:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({n}).")
    return input[(slice(None),) * d + (slice(start, start + length),)]


def unfold(self, dimension, size, step):
    """Tensor.unfold: every window of ``size`` elements along ``dimension``, ``step`` apart, as a new last
    dimension (computed by indexing, so its grad_fn is IndexBackward0 rather than PyTorch's UnfoldBackward0)."""
    x = self._data
    nd = x.ndim
    d = wrap_dim(dimension, nd)
    n = x.shape[d] if nd else 1
    if size < 0:
        raise RuntimeError(f"size is {size} but must be >= 0")
    if size > n:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {n} but size is {size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    if nd == 0:
        return self.reshape(1)
    count = (n - size) // step + 1
    idx = np.arange(count)[:, None] * step + np.arange(size)[None, :]
    out = self[(slice(None),) * d + (Tensor._make(idx),)]
    return out.movedim(d + 1, -1) if d + 1 != nd else out
