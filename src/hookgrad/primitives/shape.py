"""Shape and view primitives. Ops that NumPy computes as views are marked as views of their
input (shared version counter, replay function for in-place rebase)."""
import numpy as np

from .._tensor import Tensor, Size
from ..autograd.forward_ad import linear_jvp, multilinear_jvp, tsum, scaled  # noqa: F401  (forward AD)
from ..autograd import op_hooks as _G
from ..autograd.node import Node
from ..autograd.formulas import TENSORS
from ..autograd.grad_mode import _state
from ._dispatch import wrap_dim, dims_of
from ._inplace import make_view
from ..autograd.views import ViewFunc
from .._creation import int_list, size_args
from .._array import array_module, is_array, data_ptr
from .. import _array
from .. import _dtype as D

_new = object.__new__


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
    saved_attrs = ("self_sym_sizes=in_shape",)
    jvp = linear_jvp

    def forward(self, x):
        self.in_shape = x.shape
        shape = _infer(self.shape, x.size, x.shape)
        if not x.flags.c_contiguous and not _viewable(x, shape):
            raise RuntimeError("view size is not compatible with input tensor's size and stride (at least one dimension "
                               "spans across two contiguous subspaces). Use .reshape(...) instead.")
        return x.reshape(shape)

    def backward(self, g, F=TENSORS):
        return g.reshape(self.in_shape)


def _viewable(x, shape):
    """Can ``x`` be viewed with ``shape`` (same elements) without a copy? PyTorch's computeStride, on the
    strides alone. NOTE: NumPy's way of asking (setting ``.shape``) copies the array before it refuses."""
    old, st = x.shape, x.strides
    if x.size == 0 or not old:
        return True
    vd = len(shape) - 1
    base = st[-1]
    tn = vn = 1
    for d in range(len(old) - 1, -1, -1):
        tn *= old[d]
        if d == 0 or (old[d - 1] != 1 and st[d - 1] != tn * base):
            while vd >= 0 and (vn < tn or shape[vd] == 1):
                vn *= shape[vd]
                vd -= 1
            if vn != tn:
                return False
            if d > 0:
                base = st[d - 1]
                tn = vn = 1
    return vd == -1


class Reshape(View, name="ViewBackward0"):
    saved_attrs = ("self_sym_sizes=in_shape",)
    jvp = linear_jvp

    def forward(self, x):
        self.in_shape = x.shape
        return x.reshape(_infer(self.shape, x.size, x.shape))


class ReshapeAlias(Reshape, name="ReshapeAliasBackward0"):
    """reshape of a non-contiguous tensor whose strides allow a view (PyTorch's _reshape_alias)."""
    jvp = linear_jvp


class UnsafeView(Reshape, name="UnsafeViewBackward0"):
    """A reshape whose result is not a view (PyTorch's _unsafe_view: after a copy, or of a fresh result)."""
    jvp = linear_jvp


def view(input, *args, size=None, dtype=None):
    """view(*size), view(size=...), view(dtype): a view with another shape, or the same bytes as another dtype."""
    if dtype is not None and not args and size is None:
        return view_dtype(input, dtype)
    if len(args) == 1 and size is None and dtype is None and \
            not isinstance(args[0], (int, np.integer, tuple, list, Size, Tensor, float, str, type(None))):
        return view_dtype(input, args[0])
    shape = size_args(args, size, "view", overloaded=True)
    return make_view(View.apply(input, shape=shape), input, ViewFunc(lambda t, *s: t.view(s), shape))


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
        if b > a:
            r = b // a
            if self.storage_offset() % r:
                raise RuntimeError(f"self.storage_offset() must be divisible by {r} {what}, but got "
                                   f"{self.storage_offset()}")
            for i in range(x.ndim - 1):
                if (x.strides[i] // a) % r:
                    raise RuntimeError(f"self.stride({i}) must be divisible by {r} {what}, but got {x.strides[i] // a}")
    return Tensor._make(x.view(dtype.np), vc=self._vc)


def reshape(input, *args, shape=None):
    shape = size_args(args, shape, "reshape", "shape")
    x = input._data
    if x.flags.c_contiguous:
        cls = Reshape          # PyTorch: a contiguous tensor is viewed (ViewBackward0)
    elif _viewable(x, _infer(shape, x.size, x.shape)):
        cls = ReshapeAlias
    else:                      # PyTorch: _unsafe_view(clone(contiguous)): a copy, not a view
        return UnsafeView.apply(Clone.apply(input), shape=shape)
    return make_view(cls.apply(input, shape=shape), input, ViewFunc(lambda t, *s: t.reshape(s), shape))


def flatten(input, start_dim=0, end_dim=-1):
    nd = input._data.ndim
    s = wrap_dim(start_dim, nd)
    e = wrap_dim(end_dim, nd)
    if nd == 0:
        return reshape(input, (1,))
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if s == e:
        return input
    shp = input._data.shape
    n = 1
    for d in shp[s:e + 1]:
        n *= d
    return reshape(input, shp[:s] + (n,) + shp[e + 1:])


def unflatten(input, dim, sizes):
    nd = input._data.ndim
    d = wrap_dim(dim, nd)
    shp = input._data.shape
    sizes = tuple(sizes)
    n = 1
    for v in sizes:
        n *= v
    if (-1 not in sizes and n != shp[d]) or (-1 in sizes and (n == 0 or shp[d] % -n)):
        raise RuntimeError(f"unflatten: Provided sizes {list(sizes)} don't multiply up to the size of dim {dim} "
                           f"({shp[d]}) in the input tensor")
    if -1 in sizes:
        sizes = _infer(sizes, shp[d], (shp[d],))
    return view(input, shp[:d] + sizes + shp[d + 1:])


class Expand(Node, name="ExpandBackward0"):
    saved_attrs = ("self_sym_sizes=in_shape",)
    jvp = linear_jvp

    def forward(self, x):
        self.in_shape = x.shape
        if x.shape == self.shape and type(x) is np.ndarray:    # matmul's batch expand: what broadcast_to gives,
            v = x.view()                                       # read-only too, without its ~3 us
            v.flags.writeable = False
            return v
        return np.broadcast_to(x, self.shape)

    def backward(self, g, F=TENSORS):
        return g        # summed back to the input's shape by Node._run_backward


def expand(input, *args, size=None, implicit=False):
    sizes = size_args(args, size, "expand")
    shp = input._data.shape
    if len(sizes) < len(shp):
        raise RuntimeError(f"expand(torch.{input.dtype._legacy}{{{list(shp)}}}, size={list(sizes)}): the number of sizes "
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
    return make_view(Expand.apply(input, shape=target), input, ViewFunc(lambda t, *s: t.expand(s), target))


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

    def backward(self, g, F=TENSORS):
        return F.expand(g, self.in_shape)


def sum_to_size(input, *args, size=None):
    size = size_args(args, size, "sum_to_size")
    if input._data.shape == size:
        return input
    try:
        np.broadcast_shapes(size, input._data.shape)
    except ValueError:
        raise RuntimeError(f"size {{{list(size)}}} is not expandable to size {{{list(input.shape)}}}.") from None
    if not (input.requires_grad and _state.enabled):
        return SumToSize.apply(input, shape=size)
    # PyTorch's at::sum_to: a keepdim sum over the leading and broadcast dims (SumBackward1), then a
    # view dropping the leading dims (ViewBackward0): the nodes a create_graph gradient is made of
    shape = input._data.shape
    lead = len(shape) - len(size)
    axes = tuple(range(lead)) + tuple(i + lead for i, s in enumerate(size) if s == 1 and shape[i + lead] != 1)
    r = input.sum(axes, keepdim=True) if axes else input
    return r.view(size) if lead else r


class Permute(Node, name="PermuteBackward0"):
    saved_attrs = ("dims",)
    jvp = linear_jvp

    def forward(self, x):
        return x.transpose(self.dims)

    def backward(self, g, F=TENSORS):
        return F.permute(g, tuple(np.argsort(self.dims)))


class Transpose(Node, name="TransposeBackward0"):
    saved_attrs = ("dim0=d0", "dim1=d1")
    jvp = linear_jvp

    def forward(self, x):
        return np.swapaxes(x, self.d0, self.d1) if x.ndim else x.view()

    def backward(self, g, F=TENSORS):
        return F.transpose(g, self.d0, self.d1)


def permute(input, *args, dims=None):
    dims = size_args(args, dims, "permute", "dims")
    nd = input._data.ndim
    if len(dims) != nd:
        raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input does not match the length of "
                           f"the desired ordering of dimensions i.e. input.dim() = {nd} is not equal to len(dims) = {len(dims)}")
    dims = tuple(wrap_dim(d, nd) for d in dims)
    if len(set(dims)) != nd:
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    return make_view(Permute.apply(input, dims=dims), input, lambda t: t.permute(dims))


def transpose(input, dim0, dim1):
    nd = input._data.ndim
    d0, d1 = wrap_dim(dim0, nd), wrap_dim(dim1, nd)
    return make_view(Transpose.apply(input, d0=d0, d1=d1), input, lambda t: t.transpose(d0, d1))


swapdims = transpose


def swapaxes(input, axis0, axis1):
    return transpose(input, axis0, axis1)


def t(input):
    nd = input._data.ndim
    if nd > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {nd}D")
    if nd < 2:
        return make_view(TNode.apply(input, d0=0, d1=0), input, _t_replay)
    if (input._requires_grad or input._lazy_rg and input.requires_grad) and _state.enabled and not _G._op_hooks:
        # hot path (every nn.Linear call): the transposed view, recorded without apply's plumbing
        node = _new(TNode)
        return make_view(node._record((input,), input._data.T), input, _t_replay)
    return make_view(TNode.apply(input), input, _t_replay)     # d0=0, d1=1 are TNode's defaults


def _t_replay(x):
    return x.t()


class TNode(Transpose, name="TBackward0"):
    """t(): its own inverse, for 0-d, 1-d and 2-d tensors."""
    saved_attrs = ()
    d0, d1 = 0, 1

    jvp = linear_jvp

    def forward(self, x):
        return x.T

    def backward(self, g, F=TENSORS):
        return F.t(g)


def T(self):
    nd = self._data.ndim
    return permute(self, tuple(range(nd - 1, -1, -1)))


def mT(self):
    if self._data.ndim < 2:
        raise RuntimeError("tensor.mT is only supported on matrices or batches of matrices. Got 1-D tensor.")
    return transpose(self, -2, -1)


class Squeeze(Node, name="SqueezeBackward0"):
    saved_attrs = ("self_sym_sizes=in_shape",)
    jvp = linear_jvp

    def forward(self, x):
        self.in_shape = x.shape
        return x.reshape(self.shape)

    def backward(self, g, F=TENSORS):
        # PyTorch's unsqueeze_to: one unsqueeze per removed size-1 dim, in ascending order
        ins, out = self.in_shape, self.shape
        j = 0
        for i, n in enumerate(ins):
            if j < len(out) and out[j] == n:       # greedy: the squeezed dims are the unmatched 1s
                j += 1
            else:
                g = F.unsqueeze(g, i)
        return g


class Unsqueeze(Squeeze, name="UnsqueezeBackward0"):
    # the dim as given (a negative one reads wrapped, as PyTorch's int64), else the one inserted
    saved_attrs = ("dim=inserted_dim if dim_arg is None else dim_arg",)
    dim_arg = None

    jvp = linear_jvp

    @property
    def inserted_dim(self):
        out, ins = self.shape, self.in_shape
        return next(i for i in range(len(out)) if out[i] == 1 and out[:i] + out[i + 1:] == ins)

    def backward(self, g):
        out, ins = self.shape, self.in_shape
        d = next(i for i in range(len(out)) if out[i] == 1 and out[:i] + out[i + 1:] == ins)
        return g.squeeze(d)         # PyTorch: grad.squeeze(dim)


def squeeze(input, dim=None):
    shp = input._data.shape
    nd = len(shp)
    if dim is None:
        new = tuple(s for s in shp if s != 1)
        cls = Squeeze
    else:
        ds = dims_of(dim, max(nd, 1))       # (a 0-d tensor takes dims 0 and -1, as PyTorch)
        if len(set(ds)) != len(ds):
            d = next(d for d in ds if ds.count(d) > 1)
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
        new = tuple(s for i, s in enumerate(shp) if not (i in ds and s == 1))
        cls = _SqueezeDim if isinstance(dim, int) else _SqueezeDims
    return make_view(cls.apply(input, shape=new), input, lambda t: t.squeeze(dim))


class _SqueezeDim(Squeeze, name="SqueezeBackward1"):
    pass
    jvp = linear_jvp


class _SqueezeDims(Squeeze, name="SqueezeBackward2"):
    pass
    jvp = linear_jvp


class SqueezeInplace(Squeeze, name="SqueezeBackward4"):
    """squeeze_(dim) of a fresh result inside a composite (matmul of a vector and a matrix)."""
    jvp = linear_jvp


def unsqueeze(input, dim):
    shp = input._data.shape
    d = wrap_dim(dim, len(shp) + 1)
    new = shp[:d] + (1,) + shp[d:]
    return make_view(Unsqueeze.apply(input, shape=new, dim_arg=int(dim)), input, lambda t: t.unsqueeze(d))


class Contiguous(Node, name="CloneBackward0"):
    jvp = linear_jvp

    def forward(self, x):
        return array_module(x).ascontiguousarray(x)

    def backward(self, g, F=TENSORS):
        return g


def contiguous(self, memory_format=None):
    if self._data.flags.c_contiguous:
        return self
    return Contiguous.apply(self)


class Clone(Node, name="CloneBackward0"):
    jvp = linear_jvp

    def forward(self, x):
        return array_module(x).array(x, copy=True, order="C")

    def backward(self, g, F=TENSORS):
        return g


def clone(input, *, memory_format=None):
    return Clone.apply(input)


from .._dtype import cast as _cast  # noqa: E402


class ToCopy(Node, name="ToCopyBackward0"):
    jvp = linear_jvp

    def forward(self, x):
        if x.dtype.kind == "c" and np.dtype(self.dt).kind != "c":
            import warnings
            warnings.warn("Casting complex values to real discards the imaginary part", UserWarning, stacklevel=3)
            x = x.real
        return _cast(x, self.dt)      # PyTorch's float8 conversions (saturating e4m3fn ...), else astype

    def backward(self, g, F=TENSORS):
        return g


class ToDevice(Node, name="ToCopyBackward0"):
    """A copy into another device's array module (``.to("cuda")``, ``.cpu()``); the gradient goes back."""
    xp = None

    jvp = linear_jvp

    def forward(self, x):
        self.src = array_module(x)
        return _array.asarray(x, self.xp)

    def backward(self, g):
        return ToDevice.apply(g, xp=self.src)


def to_module(t, xp):
    """``t`` on the device of array module ``xp`` (``t`` itself when it is there already; differentiable)."""
    if xp is None or _array.device_type_of_module(xp) == _array.device_type(t._data):
        return t
    return ToDevice.apply(t, xp=xp)


def to(self, *args, device=None, dtype=None, non_blocking=False, copy=False, memory_format=None, tensor=None):
    """to(dtype), to(device), to(other), to(device, dtype); copy=True forces a copy."""
    from .. import _dtype as D
    from .._tensor import _check_device
    dt = dtype if tensor is None else tensor.dtype
    xp = _check_device(device) if tensor is None else tensor._xp
    if len(args) > 1 and isinstance(args[-1], bool) and isinstance(args[-2], bool):
        copy = args[-1]                         # to(dtype, non_blocking, copy)
    for a in args:

        if isinstance(a, Tensor):
            dt = a.dtype
            xp = a._xp
        elif isinstance(a, D.dtype):
            dt = a
        elif a is None or isinstance(a, bool):      # non_blocking / copy (before int: a bool is an int)
            pass
        elif isinstance(a, (str, int)) or type(a).__name__ == "device":
            xp = _check_device(a)
        else:
            dt = D.to_dtype(a)
    moved = to_module(self, xp)
    if moved is not self:
        if dt is None or dt.np == moved._data.dtype:
            return moved
        return ToCopy.apply(moved, dt=dt.np)
    if dt is None or dt.np == self._data.dtype:
        return Clone.apply(self) if copy else self
    if self.requires_grad and not dt.is_floating_point and not dt.is_complex:
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
bfloat16 = _caster("bfloat16")
long = _caster("int64")
int_ = _caster("int32")
short = _caster("int16")
char = _caster("int8")
byte = _caster("uint8")
bool_ = _caster("bool")


def cpu(self, memory_format=None):
    from .._tensor import _cpu_module
    return to_module(self, _cpu_module())


def cuda(self, device=None, non_blocking=False, memory_format=None):
    from .._tensor import _check_device
    return to_module(self, _check_device("cuda" if device is None else device))


def type_as(self, other):
    return to(self, other.dtype)


class Flip(Node, name="FlipBackward0"):
    saved_attrs = ("dims",)
    jvp = linear_jvp

    def forward(self, x):
        return np.flip(x, self.dims).copy() if x.ndim else x.copy()     # a 0-d tensor flips to itself

    def backward(self, g):
        return g.flip(self.dims)


def flip(input, *args, dims=None):
    """Reverse the order of elements along the given dims."""
    dims = size_args(args, dims, "flip", "dims")
    dims = tuple(wrap_dim(d, input._data.ndim) for d in dims)
    for i, d in enumerate(dims):
        if d in dims[:i]:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
    return Flip.apply(input, dims=dims)


def fliplr(input):
    return flip(input, (1,))


def flipud(input):
    return flip(input, (0,))


class Roll(Node, name="RollBackward0"):
    saved_attrs = ("dims=dims if type(dims) is tuple else (dims,)", "shifts=shifts if type(shifts) is tuple else (shifts,)")
    jvp = linear_jvp

    def forward(self, x):
        return np.roll(x, self.shifts, self.dims)

    def backward(self, g):
        neg = tuple(-s for s in self.shifts) if isinstance(self.shifts, tuple) else -self.shifts
        return g.roll(neg, self.dims)


def roll(input, shifts, dims=None):
    if isinstance(shifts, (list, tuple)):
        shifts = tuple(int(s) for s in shifts)
    if isinstance(dims, list):
        dims = tuple(dims)
    ns = len(shifts) if isinstance(shifts, tuple) else 1
    nd = 0 if dims is None else len(dims) if isinstance(dims, tuple) else 1
    if ns != nd and not (dims is None and ns == 1):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {ns}, dims:{nd}")
    if dims is not None and input._data.ndim == 0:
        raise IndexError(f"Dimension specified as {dims[0] if isinstance(dims, tuple) else dims} but tensor has no "
                         "dimensions")
    return Roll.apply(input, shifts=shifts, dims=dims)


class Repeat(Node, name="RepeatBackward0"):
    saved_attrs = ("repeats=reps", "self_sym_sizes=in_shape")
    jvp = linear_jvp

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


def repeat(input, *args, repeats=None):
    reps = size_args(args, repeats, "repeat", "repeats")
    if len(reps) < input._data.ndim:
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor")
    return Repeat.apply(input, reps=reps)


def tile(input, *args, dims=None):
    """repeat(), with dims left-padded with 1s to the tensor's rank."""
    dims = size_args(args, dims, "tile", "dims")
    if len(dims) < input._data.ndim:
        dims = (1,) * (input._data.ndim - len(dims)) + dims
    return repeat(input, dims)


def movedim(input, source, destination):
    nd = input._data.ndim
    def ints(v):
        if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
            return [int(v)]
        if isinstance(v, (list, tuple)) and all(isinstance(d, (int, np.integer)) for d in v):
            return [int(d) for d in v]
        return None
    src, dst = ints(source), ints(destination)
    if src is None or dst is None or isinstance(source, int) != isinstance(destination, int):
        got = ", ".join(type(v).__name__ if type(v).__name__ != "Tensor" else "Tensor" for v in (source, destination))
        raise TypeError(f"movedim() received an invalid combination of arguments - got ({got}), but expected one of:\n"
                        " * (int source, int destination)\n * (tuple of ints source, tuple of ints destination)\n")
    if len(src) != len(dst):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({src} dims) should contain the same "
                           f"number of dims as destination ({dst} dims)")
    given = src, dst
    src = [wrap_dim(s, nd) for s in src]
    dst = [wrap_dim(d, nd) for d in dst]
    for name, wrapped, g in (("source", src, given[0]), ("destination", dst, given[1])):
        if len(set(wrapped)) != len(wrapped):
            raise RuntimeError(f"movedim: repeated dim in `{name}` ({g})")
    if nd == 0:             # PyTorch: a 0-d tensor's movedim is an alias
        return make_view(_index_mod().Alias.apply(input, idx=(Ellipsis,), basic=True), input, lambda t: t)
    order = [i for i in range(nd) if i not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return permute(input, order)


moveaxis = movedim


# ------------------------------------------------------------------------ triangles, diagonals
class Tril(Node, name="TrilBackward0"):
    saved_attrs = ("diagonal=k",)
    jvp = linear_jvp

    def forward(self, x):
        return np.tril(x, self.k) if x.ndim >= 2 else x.copy()

    def backward(self, g):
        return type(self).apply(g, k=self.k)


class Triu(Tril, name="TriuBackward0"):
    saved_attrs = ("diagonal=k",)
    jvp = linear_jvp

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
    return _as_strided(y, y.shape[:-2] + (n,), y.strides[:-2] + (y.strides[-2] + y.strides[-1],))


def _as_strided(a, shape, strides, like=None):
    """A strided view of ``a``'s memory (strides in bytes), an array of the module of ``like`` (default:
    ``a``'s; NumPy's as_strided alone returns a base-class ndarray, and a storage's root array may be one)."""
    xp = array_module(a if like is None else like)
    if type(a) is np.ndarray and xp is np and a.flags.c_contiguous:
        # a view whose .base is ``a`` (NumPy's as_strided hides it behind a dummy object): the storage, its offset
        # and the version counter of the result are then those of ``a``'s root array
        return np.ndarray(shape, a.dtype, buffer=a, strides=strides)
    return xp.asarray(xp.lib.stride_tricks.as_strided(a, shape, strides))


class Diagonal(Node, name="DiagonalBackward0"):
    saved_attrs = ("offset", "dim1=d1", "dim2=d2", "self_sym_sizes=in_shape")
    jvp = linear_jvp

    def forward(self, x):
        self.in_shape = x.shape
        return _diag_view(x, self.offset, self.d1, self.d2)

    def backward(self, g):
        return DiagEmbedGrad.apply(g, shape=self.in_shape, offset=self.offset, d1=self.d1, d2=self.d2)


class DiagEmbedGrad(Node, name="DiagonalBackwardBackward0"):
    """Place a diagonal back into zeros of ``shape`` (the backward of diagonal; also diag_embed)."""

    def forward(self, g):
        out = array_module(g).zeros(self.shape, g.dtype)
        _diag_view(out, self.offset, self.d1, self.d2)[...] = g
        return out

    def backward(self, gg):
        return Diagonal.apply(gg, offset=self.offset, d1=self.d1, d2=self.d2)


class DiagEmbed(DiagEmbedGrad, name="DiagEmbedBackward0"):
    pass
    jvp = linear_jvp


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
    jvp = linear_jvp

    def forward(self, x):
        self.in_shape = x.shape
        return array_module(x).asarray(np.trace(x))

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
    from .index import _step, Slice
    return _step(input, Slice, (slice(None),) * d + (slice(start, start + length),))     # SliceBackward0, always


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
    xp = array_module(self._data)
    idx = xp.arange(count)[:, None] * step + xp.arange(size)[None, :]
    out = self[(slice(None),) * d + (Tensor._make(idx),)]
    return out.movedim(d + 1, -1) if d + 1 != nd else out


# ======================================================= more shape and view ops
def ravel(input):
    """The elements as a 1-D tensor (a view when the tensor is contiguous, else a contiguous copy's view)."""
    return view(contiguous(input), (-1,))


class Rot90(Node, name="Rot90Backward0"):
    jvp = linear_jvp

    def forward(self, x):
        return array_module(x).ascontiguousarray(np.rot90(x, self.k, self.dims))

    def backward(self, g):
        return Rot90.apply(g, k=-self.k, dims=self.dims)


def rot90(input, k=1, dims=(0, 1)):
    """Rotate by 90 degrees k times in the plane of dims (from the first towards the second)."""
    dims = list(dims)
    nd = input._data.ndim
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if nd < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {nd}")
    d0, d1 = wrap_dim(dims[0], nd), wrap_dim(dims[1], nd)
    if d0 == d1:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {d0} and dim1 = {d1}")
    return Rot90.apply(input, k=int(k) % 4, dims=(d0, d1))


# ---------------------------------------------------------------------------------- as_strided
def _storage_root(a):
    """The NumPy array that owns ``a``'s memory (hookgrad's storage)."""
    r = a
    while is_array(r.base):
        r = r.base
    return r


def _addr(a):
    return data_ptr(a)


def storage_offset_of(a):
    """The element offset of ``a``'s first element in its storage."""
    return (_addr(a) - _addr(_storage_root(a))) // a.itemsize


def _flat_storage(a):
    r = _storage_root(a)
    flat = r.reshape(-1, order="A") if (r.flags.c_contiguous or r.flags.f_contiguous) else r
    if flat.dtype != a.dtype:
        flat = flat.view(np.uint8).view(a.dtype)
    return flat


def _strided(a, size, stride, offset):
    """``a``'s storage read with the given geometry (checked against the storage's size, as PyTorch)."""
    flat = _flat_storage(a)
    isz = a.itemsize
    if any(s < 0 for s in stride):
        raise RuntimeError(f"as_strided: Negative strides are not supported at the moment, got strides: {list(stride)}")
    need = 0 if 0 in size else offset + 1 + sum((n - 1) * s for n, s in zip(size, stride))
    if need > flat.size:
        raise RuntimeError(f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset {offset}, and "
                           f"itemsize {isz} requiring a storage size of {need * isz} are out of bounds for storage "
                           f"of size {flat.size * isz}")
    return _as_strided(flat[offset:] if offset < flat.size else flat[:0], size, tuple(s * isz for s in stride), a)


def _positions(a):
    """The storage position of each element of ``a``."""
    return _geometry_positions(a.shape, tuple(st // a.itemsize for st in a.strides), storage_offset_of(a),
                               array_module(a))


def _geometry_positions(size, stride, offset, xp):
    pos = xp.full(size, offset, np.int64)
    for i, (n, st) in enumerate(zip(size, stride)):
        pos += xp.arange(n, dtype=np.int64).reshape((n,) + (1,) * (len(size) - i - 1)) * st
    return pos


class AsStridedView(Node, name="AsStridedBackward0"):
    """as_strided: a view of the input's storage with any geometry. Backward scatters the gradient into the
    storage positions it read, then reads back the input's positions (averaged where the input's own
    elements share memory, as PyTorch)."""
    saved_attrs = ("size", "stride", "storage_offset=offset_arg")     # (the offset as given: None if not)
    offset_arg = None

    jvp = linear_jvp

    def forward(self, x):
        out = _strided(x, self.size, self.stride, self.storage_offset)
        self.out_pos = _geometry_positions(self.size, self.stride, self.storage_offset, array_module(x))
        self.in_pos = _positions(x)
        return out

    def backward(self, g):
        lo = min(int(self.out_pos.min(initial=0)), int(self.in_pos.min(initial=0)))
        hi = max(int(self.out_pos.max(initial=0)), int(self.in_pos.max(initial=0))) + 1
        out_idx = Tensor._make((self.out_pos - lo).reshape(-1))
        st = g.new_zeros(hi - lo).index_add(0, out_idx, g.reshape(-1))
        gx = st[Tensor._make(self.in_pos - lo)]
        counts = np.bincount((self.in_pos - lo).reshape(-1), minlength=hi - lo)
        if (counts > 1).any():
            gx = gx / Tensor._make(counts[self.in_pos - lo].astype(g._data.dtype))
        return gx


def _int_tuple(v, fname, argname):
    return tuple(int_list((v,), fname, argname))


def as_strided(input, size, stride, storage_offset=None):
    """A view of input's storage with the given sizes, strides and offset (elements)."""
    size = _int_tuple(size, "as_strided", "size")
    stride = _int_tuple(stride, "as_strided", "stride")
    if len(size) != len(stride):
        raise RuntimeError(f"mismatch in length of strides and shape")
    off = storage_offset_of(input._data) if storage_offset is None else int(storage_offset)
    if off < 0:
        raise RuntimeError(f"Tensor: invalid storage offset {off}")
    out = AsStridedView.apply(input, size=size, stride=stride, storage_offset=off,
                              offset_arg=None if storage_offset is None else off)
    n = len(size)       # (the replay's SymInts: the sizes, the strides, the offset)
    return make_view(out, input, ViewFunc(lambda t, *s: as_strided(t, s[:n], s[n:2 * n], s[-1]), size + stride + (off,)))


# --------------------------------------------------------------------------- *_scatter (view inverses)
class _ViewScatter(Node):
    """A copy of input with ``src`` written into one of its views (select/slice/diagonal/as_strided).
    Backward: input gets the gradient with that region zeroed; src gets the region."""
    save = ()

    def forward(self, x, src):
        out = x.copy(order="C")
        region = self._np_view(out)
        if region.shape != src.shape:
            raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = "
                               f"{list(src.shape)}, slice size = {list(region.shape)}")
        region[...] = src
        return out

    def backward(self, g):
        nf = self.next_functions
        gx = gs = None
        if nf[0][0] is not None:
            region = self._t_view(g)
            gx = type(self).apply(g, region.detach().new_zeros(region._data.shape), **self._params())
        if nf[1][0] is not None:
            gs = self._t_view(g)
        return gx, gs


class SelectScatter(_ViewScatter, name="SelectScatterBackward0"):
    jvp = linear_jvp

    def _np_view(self, a):
        return a[(slice(None),) * self.dim + (self.index, Ellipsis)]

    def _t_view(self, g):
        return g.select(self.dim, self.index)

    def _params(self):
        return {"dim": self.dim, "index": self.index}


class SliceScatter(_ViewScatter, name="SliceScatterBackward0"):
    jvp = linear_jvp

    def _np_view(self, a):
        return a[(slice(None),) * self.dim + (slice(self.start, self.end, self.step),)]

    def _t_view(self, g):
        from .index import Slice
        return Slice.apply(g, idx=(slice(None),) * self.dim + (slice(self.start, self.end, self.step),), basic=True)

    def _params(self):
        return {"dim": self.dim, "start": self.start, "end": self.end, "step": self.step}


class DiagonalScatter(_ViewScatter, name="DiagonalScatterBackward0"):
    def _np_view(self, a):
        return _diag_view(a, self.offset, self.d1, self.d2)

    def _t_view(self, g):
        return g.diagonal(self.offset, self.d1, self.d2)

    def _params(self):
        return {"offset": self.offset, "d1": self.d1, "d2": self.d2}


class AsStridedScatter(_ViewScatter, name="AsStridedScatterBackward0"):
    def _np_view(self, a):
        return _strided(a, self.size, self.stride, self.storage_offset)

    def _t_view(self, g):
        return as_strided(clone(g), self.size, self.stride, self.storage_offset)

    def _params(self):
        return {"size": self.size, "stride": self.stride, "storage_offset": self.storage_offset}


def _scatter_dtypes(input, src):
    if input._data.dtype != src._data.dtype:
        raise RuntimeError(f"expected src to have the same dtype as self, but got {src.dtype} and {input.dtype}")


def select_scatter(input, src, dim, index):
    """A copy of input with src written at ``input.select(dim, index)``."""
    _scatter_dtypes(input, src)
    nd = input._data.ndim
    if nd == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = wrap_dim(dim, nd)
    n = input._data.shape[d]
    if not -n <= index < n:
        raise IndexError(f"select(): index {index} out of range for tensor of size {list(input._data.shape)} at "
                         f"dimension {dim}")
    return SelectScatter.apply(input, src, dim=d, index=int(index) % n if n else 0)


def slice_scatter(input, src, dim=0, start=None, end=None, step=1):
    """A copy of input with src written at ``input[..., start:end:step, ...]`` (along dim)."""
    _scatter_dtypes(input, src)
    d = wrap_dim(dim, input._data.ndim)
    if step <= 0:
        raise RuntimeError("slice step must be positive")
    return SliceScatter.apply(input, src, dim=d, start=start, end=end, step=int(step))


def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):
    """A copy of input with src written on the diagonal ``input.diagonal(offset, dim1, dim2)``."""
    _scatter_dtypes(input, src)
    nd = input._data.ndim
    d1, d2 = wrap_dim(dim1, nd), wrap_dim(dim2, nd)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return DiagonalScatter.apply(input, src, offset=int(offset), d1=d1, d2=d2)


def as_strided_scatter(input, src, size, stride, storage_offset=None):
    """A copy of input with src written at ``input.as_strided(size, stride, storage_offset)``."""
    _scatter_dtypes(input, src)
    size = _int_tuple(size, "as_strided_scatter", "size")
    stride = _int_tuple(stride, "as_strided_scatter", "stride")
    return AsStridedScatter.apply(input, src, size=size, stride=stride,
                                  storage_offset=0 if storage_offset is None else int(storage_offset))


# ----------------------------------------------------------------- *_copy: view ops that copy
_COPY_CLASSES = {}


def _copy_class(cls):
    """``cls`` (a view primitive) as PyTorch's ``<View>Backward0_copy`` node: the same backward."""
    c = _COPY_CLASSES.get(cls)
    if c is None:
        name = cls.__name__ + "_copy"
        c = _COPY_CLASSES[cls] = type(name, (cls,), {"_forbid_inplace": None, "__qualname__": name}, name=name)
    return c


def _fresh(t):
    """``t`` (an output of a view op) turned into a tensor of its own: copied memory, no base, own version."""
    t._data = t._data.copy(order="C")
    if t._base is not None:
        gf = t.grad_fn
        t.__class__ = Tensor
        for k in ("_base", "_view_fn", "_creation", "_attr_ver", "_index"):
            t.__dict__.pop(k, None)
        t.grad_fn = gf
    t._vc = [0]
    return t


def _as_copy(input, r):
    """``<view>_copy``: the view op's result ``r`` as a fresh tensor; its node is renamed as PyTorch's."""
    outs = r if isinstance(r, tuple) else (r,)
    if any(o is input for o in outs):
        outs = tuple(clone(o) if o is input else o for o in outs)
    nodes = {id(o.grad_fn): o.grad_fn for o in outs if o.grad_fn is not None}
    outs = tuple(_fresh(o) for o in outs)
    for n in nodes.values():
        if n is not getattr(input, "grad_fn", None):
            n.__class__ = _copy_class(type(n))
    return outs if isinstance(r, tuple) else outs[0]


def split_copy(input, split_size, dim=0):
    from .join import split
    return _as_copy(input, split(input, split_size, dim))


def split_with_sizes_copy(input, split_sizes, dim=0):
    from .join import split
    return _as_copy(input, split(input, list(split_sizes), dim))


def unbind_copy(input, dim=0):
    from .join import unbind
    return _as_copy(input, unbind(input, dim))


def _index_mod():
    from . import index
    return index


def _slice_view(input, dim=0, start=None, end=None, step=1):
    from .join import slice_dim
    d = wrap_dim(dim, input._data.ndim)
    if step == 1:
        return slice_dim(input, d, start, end)
    return input[(slice(None),) * d + (slice(start, end, step),)]


def view_copy(input, size=None, dtype=None):
    return _as_copy(input, view(input, size if dtype is None else dtype))


def permute_copy(input, dims):
    return _as_copy(input, permute(input, dims))


def t_copy(input):
    return _as_copy(input, t(input))


def transpose_copy(input, dim0, dim1):
    return _as_copy(input, transpose(input, dim0, dim1))


def expand_copy(input, size, *, implicit=False):
    return _as_copy(input, expand(input, size))


def squeeze_copy(input, dim=None):
    return _as_copy(input, squeeze(input, dim))


def unsqueeze_copy(input, dim):
    return _as_copy(input, unsqueeze(input, dim))


def select_copy(input, dim, index):
    return _as_copy(input, _index_mod().select(input, dim, index))


def slice_copy(input, dim=0, start=None, end=None, step=1):
    return _as_copy(input, _slice_view(input, dim, start, end, step))


def diagonal_copy(input, offset=0, dim1=0, dim2=1):
    return _as_copy(input, diagonal(input, offset, dim1, dim2))


def detach_copy(input):
    """A copy of input's values; it requires grad when input does, with no derivative (as PyTorch's)."""
    from .._creation import _sampled
    return _sampled(array_module(input._data).array(input._data, copy=True), (input,), None, "detach_copy")


def alias_copy(input):
    return _as_copy(input, make_view(_index_mod().Alias.apply(input, idx=(Ellipsis,), basic=True), input, lambda t: t))


def unfold_copy(input, dimension, size, step):
    return _as_copy(input, unfold(input, dimension, size, step))


class NarrowCopy(Node, name="NarrowCopyBackward0"):
    def forward(self, x):
        self.in_shape = x.shape
        return array_module(x).array(x[(slice(None),) * self.dim + (slice(self.start, self.start + self.length),)],
                                     copy=True)

    def backward(self, g):
        from .index import IndexGrad
        return IndexGrad.apply(g, idx=(slice(None),) * self.dim + (slice(self.start, self.start + self.length),),
                               shape=self.in_shape, basic=True)


def narrow_copy(input, dim, start, length):
    """narrow(), as a fresh tensor (NarrowCopyBackward0)."""
    narrow(input, dim, start, length)           # PyTorch's argument checks
    d = wrap_dim(dim, input._data.ndim)
    start = int(start) % input._data.shape[d] if int(start) < 0 else int(start)
    return NarrowCopy.apply(input, dim=d, start=start, length=int(length))


# ---------------------------------------------------------- in-place metadata ops (squeeze_, t_ ...)
class SqueezeInplaceAll(Squeeze, name="SqueezeBackward3"):
    pass
    jvp = linear_jvp


class UnsqueezeInplace(Unsqueeze, name="UnsqueezeBackward1"):
    pass
    jvp = linear_jvp


class TInplace(TNode, name="TBackward1"):
    pass
    jvp = linear_jvp


class TransposeInplace(Transpose, name="TransposeBackward1"):
    pass
    jvp = linear_jvp


def _meta_inplace(self, out, replay):
    """Make ``self`` the result ``out`` of a view op on itself (new shape/strides over the same memory): its
    history becomes the op's node and its version moves, as PyTorch's squeeze_/t_/transpose_."""
    from ._inplace import check_inplace, _rebase
    self._data = out._data
    self._vc[0] += 1
    if out._fw_grad is not None:        # forward AD: the tangent is the same view of the tangent
        from ..autograd.forward_ad import _set_tangent
        _set_tangent(self, out._fw_grad)
    gf = out.grad_fn
    if self._base is not None:
        inner = self._view_fn
        # NOTE: PyTorch replays a view across dtypes (view_as_real, view_as_complex) with its view function, which
        # an in-place view op does not update (its test_autograd_inplace_views_cross_dtype pins this bug down); a
        # same-dtype view is replayed from its current strides, which the op did change.
        if inner is not None and (self._data.dtype.kind == "c") == (self._base._data.dtype.kind == "c"):
            self._view_fn = lambda t: replay(inner(t))
        self.__dict__.pop("_index", None)
        if gf is not None:
            from ._inplace import _set_history
            _set_history(self, gf)
        else:
            self._attr_ver = self._vc[0]
    elif gf is not None:
        _rebase(self, gf, 0)
    return self


def _check_meta_inplace(self):
    from ._inplace import check_inplace
    check_inplace(self)


def squeeze_(self, dim=None):
    _check_meta_inplace(self)
    shp = self._data.shape
    if dim is None:
        new = tuple(s for s in shp if s != 1)
        cls = SqueezeInplaceAll
    else:
        ds = dims_of(dim, len(shp)) if shp else ()
        if len(set(ds)) != len(ds):
            d = next(d for d in ds if ds.count(d) > 1)
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
        new = tuple(s for i, s in enumerate(shp) if not (i in ds and s == 1))
        cls = SqueezeInplace
    return _meta_inplace(self, cls.apply(self, shape=new), lambda t: t.squeeze(dim))


def unsqueeze_(self, dim):
    _check_meta_inplace(self)
    shp = self._data.shape
    d = wrap_dim(dim, len(shp) + 1)
    new = shp[:d] + (1,) + shp[d:]
    return _meta_inplace(self, UnsqueezeInplace.apply(self, shape=new, dim_arg=int(dim)), lambda t: t.unsqueeze(d))


def t_(self):
    nd = self._data.ndim
    if nd > 2:
        raise RuntimeError(f"t_() expects a tensor with <= 2 dimensions, but self is {nd}D")
    _check_meta_inplace(self)
    return _meta_inplace(self, TInplace.apply(self, d0=0, d1=min(nd, 2) - 1 if nd == 2 else 0), _t_replay)


def transpose_(self, dim0, dim1):
    nd = self._data.ndim
    d0, d1 = wrap_dim(dim0, nd), wrap_dim(dim1, nd)
    _check_meta_inplace(self)
    return _meta_inplace(self, TransposeInplace.apply(self, d0=d0, d1=d1), lambda t: t.transpose(d0, d1))


swapdims_ = transpose_


def swapaxes_(self, axis0, axis1):
    return transpose_(self, axis0, axis1)


def as_strided_(input, size, stride, storage_offset=None):
    self = input
    _check_meta_inplace(self)
    size = _int_tuple(size, "as_strided_", "size")
    stride = _int_tuple(stride, "as_strided_", "stride")
    off = storage_offset_of(self._data) if storage_offset is None else int(storage_offset)
    out = AsStridedView.apply(self, size=size, stride=stride, storage_offset=off)
    return _meta_inplace(self, out, lambda t: as_strided(t, size, stride, off))



# ------------------------------------------------------------------------------- diagflat
def diagflat(input, offset=0):
    """A square matrix with the flattened input on the offset-th diagonal."""
    return diag_embed(input.contiguous().view(-1), offset, 0, 1)


# ------------------------------------------------------------------------------- broadcasting
def broadcast_shapes(*shapes):
    """The shape that all the given shapes broadcast to (ints count as 1-D shapes)."""
    shapes = tuple((int(x),) if isinstance(x, (int, np.integer)) else x for x in shapes if x is not None)
    if not shapes:
        return Size(())
    for shape in shapes:
        if not isinstance(shape, (tuple, list)):
            raise RuntimeError(f"Input shapes should be of type ints, a tuple of ints, or a list of ints, got {shape}")
    common = [1] * max(len(sh) for sh in shapes)
    for k, shape in enumerate(shapes):
        for i in range(-1, -1 - len(shape), -1):
            if shape[i] == common[i]:
                continue
            if common[i] == 1:
                if isinstance(shape[i], (int, np.integer)) and shape[i] < 0:
                    raise ValueError("Attempting to broadcast a dimension with negative length!")
                common[i] = shape[i]
            if shape[i] == 1:
                continue
            if common[i] != shape[i]:
                raise RuntimeError(f"Attempting to broadcast a dimension of length {shape[i]} at {i}! Mismatching "
                                   f"argument at index {k} had {shape}; but expected shape should be broadcastable "
                                   f"to {common}")
    return Size(tuple(common))


def broadcast_tensors(*tensors):
    """Every tensor expanded to their common broadcast shape (views)."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    from ._dispatch import broadcast_error
    shape = ()
    for t in tensors:
        try:
            shape = np.broadcast_shapes(shape, t._data.shape)
        except ValueError:
            raise broadcast_error(shape, t._data.shape) from None
    return tuple(t if t._data.shape == shape else expand(t, shape) for t in tensors)   # no-op: the tensor itself


_MESHGRID_WARNING = "torch.meshgrid: in an upcoming release, it will be required to pass the indexing argument."


def meshgrid(*tensors, indexing=None):
    """Coordinate grids: output i varies along dim i ('ij') or with the first two dims swapped ('xy')."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing is None:
        from .._warnings import warn_once
        warn_once(_MESHGRID_WARNING)
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f'torch.meshgrid: indexing must be one of "xy" or "ij", but received: {indexing}')
    if not tensors:
        raise RuntimeError("torch.meshgrid: Expected at least one tensor")
    for t in tensors:
        if t._data.ndim > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got a tensor of "
                               f"shape {list(t._data.shape)}")
    for t in tensors[1:]:
        if t._data.dtype != tensors[0]._data.dtype:
            raise RuntimeError("meshgrid expects all tensors to have the same dtype")
    n = len(tensors)
    pos = list(range(n))
    if indexing == "xy" and n >= 2:
        pos[0], pos[1] = 1, 0
    shape = [0] * n
    for p, t in zip(pos, tensors):
        shape[p] = t._data.size
    out = []
    for p, t in zip(pos, tensors):
        vs = [1] * n
        vs[p] = -1
        out.append(expand(view(t, tuple(vs)), tuple(shape)))
    return tuple(out)


def cartesian_prod(*tensors):
    """The cartesian product of 1-D tensors, one row per combination (itertools.product's order)."""
    from .join import stack
    ts = list(tensors[0]) if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)) else list(tensors)
    for t in ts:
        if t._data.ndim != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {list(t._data.shape)}")
    if len(ts) == 1:
        return ts[0]
    grids = meshgrid(*ts, indexing="ij")
    return stack([g.flatten() for g in grids], 1)


# ------------------------------------------------------------------------------ repeat_interleave
def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):
    """Repeat each element (or slice along dim) ``repeats`` times; with only a repeats tensor, the indices
    ``[0]*r0 + [1]*r1 + ...``."""
    if repeats is None:                      # torch.repeat_interleave(repeats)
        reps = input
        if reps._data.ndim > 1:
            raise RuntimeError("repeat_interleave only accept 1D vector as repeat")
        if reps._data.dtype not in (np.int64, np.int32):
            raise RuntimeError("repeats has to be Long or Int tensor")
        if (reps._data < 0).any():
            raise RuntimeError("repeats can not be negative")
        r = np.repeat(array_module(reps._data).arange(reps._data.size), reps._data.reshape(-1)).astype(reps._data.dtype)
        if output_size is not None and r.size != output_size:
            raise RuntimeError(f"allocated size does not match required size")
        return Tensor._make(r)
    if dim is None:
        input = flatten(input)
        d = 0
    else:
        d = wrap_dim(dim, input._data.ndim)
    n = input._data.shape[d] if input._data.ndim else 1
    if isinstance(repeats, Tensor) and repeats._data.ndim == 0:
        repeats = int(repeats._data)
    if isinstance(repeats, Tensor):
        reps = repeats._data
        if reps.ndim > 1:
            raise RuntimeError("repeat_interleave only accept 1D vector as repeat")
        if reps.dtype not in (np.int64, np.int32):
            raise RuntimeError("repeats has to be Long or Int tensor")
        if reps.size == 1:
            reps = np.repeat(reps.reshape(-1), n)
        if True:
            if reps.size != n:
                raise RuntimeError(f"repeats must have the same size as input along dim, but got "
                                   f"repeats.size(0) = {reps.size} and input.size({d}) = {n}")
            if (reps < 0).any():
                raise RuntimeError("repeats can not be negative")
            idx = np.repeat(array_module(reps).arange(n), reps)
            if output_size is not None and idx.size != output_size:
                raise RuntimeError("allocated size does not match required size")
            return input.index_select(d, Tensor._make(idx))
    repeats = int(repeats)
    if repeats < 0:
        raise RuntimeError("Repeats must be non-negative")
    if input._data.ndim == 0:
        input = input.reshape(1)
    shp = input._data.shape
    x = unsqueeze(input, d + 1).expand(shp[:d + 1] + (repeats,) + shp[d + 1:]).contiguous()
    return flatten(x, d, d + 1)


# ----------------------------------------------------------------------- differences, integration
def diff(input, n=1, dim=-1, prepend=None, append=None):
    """The n-th forward difference along dim (after prepending/appending the given values)."""
    from . import join
    nd = input._data.ndim
    if nd == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    d = wrap_dim(dim, nd)
    parts = []
    for extra in (prepend, append):
        if extra is not None:
            if not isinstance(extra, Tensor):
                extra = Tensor._make(array_module(input._data).asarray(extra))
            if extra._data.ndim == 0:
                shp = list(input._data.shape)
                shp[d] = 1
                extra = extra.expand(tuple(shp))
            if extra._data.ndim != nd:
                raise RuntimeError("diff expects prepend or append to be the same dimension as input")
        parts.append(extra)
    if parts[0] is not None or parts[1] is not None:
        input = join.cat([t for t in (parts[0], input, parts[1]) if t is not None], d)
    for _ in range(n):
        m = input._data.shape[d]
        if m == 0:
            break
        hi, lo = narrow(input, d, 1, m - 1), narrow(input, d, 0, m - 1)
        input = hi.logical_xor(lo) if input._data.dtype == np.bool_ else hi - lo
    return input


def _trapezoid_x(y, x, d, fname):
    if x._data.ndim == 1:
        if x._data.shape[0] != y._data.shape[d]:
            raise RuntimeError(f"{fname}: There must be one `x` value for each sample point")
        vs = [1] * y._data.ndim
        vs[d] = x._data.shape[0]
        x = x.view(tuple(vs))
    elif x._data.ndim < y._data.ndim:
        x = x.view((1,) * (y._data.ndim - x._data.ndim) + x._data.shape)
    m = x._data.shape[d]
    return narrow(x, d, 1, m - 1) - narrow(x, d, 0, m - 1)


def trapezoid(y, x=None, *, dx=None, dim=-1):
    """The trapezoid rule along dim, with sample points x or a constant spacing dx (default 1)."""
    if isinstance(x, (int, float)) and dx is None:      # trapezoid(y, dx) positionally (trapz's overload)
        x, dx = None, x
    d = wrap_dim(dim, y._data.ndim)
    if x is not None and dx is not None:
        raise RuntimeError("trapezoid: received both x and dx as input, but only one should be specified.")
    if y._data.shape[d] == 0:
        return Tensor._make(array_module(y._data).zeros(y._data.shape[:d] + y._data.shape[d + 1:], y._data.dtype))
    if y._data.dtype == np.bool_ or (x is not None and x._data.dtype == np.bool_):
        raise RuntimeError("trapezoid: received a bool input for `x` or `y`, but bool is not supported" if x is not None
                           else "trapezoid: received a bool input for `y`, but bool is not supported")
    from . import index as I
    if x is not None:
        m = y._data.shape[d]
        dxs = _trapezoid_x(y, x, d, "trapezoid")
        return ((narrow(y, d, 0, m - 1) + narrow(y, d, 1, m - 1)) * dxs).sum(d) / 2.0
    dx = 1 if dx is None else dx
    return (y.sum(d) - (I.select(y, d, 0) + I.select(y, d, -1)) * 0.5) * dx


def trapz(y, x=None, *, dx=None, dim=-1):
    return trapezoid(y, x, dx=dx, dim=dim)


def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    """The running trapezoid rule along dim (one element fewer than y along dim)."""
    if isinstance(x, (int, float)) and dx is None:
        x, dx = None, x
    d = wrap_dim(dim, y._data.ndim)
    if x is not None and dx is not None:
        raise RuntimeError("cumulative_trapezoid: received both x and dx as input, but only one should be specified.")
    if y._data.dtype == np.bool_ or (x is not None and x._data.dtype == np.bool_):
        raise RuntimeError("cumulative_trapezoid: received a bool input for `x` or `y`, but bool is not supported"
                           if x is not None else
                           "cumulative_trapezoid: received a bool input for `y`, but bool is not supported")
    m = y._data.shape[d]
    left, right = narrow(y, d, 0, max(m - 1, 0)), narrow(y, d, 1, max(m - 1, 0)) if m else narrow(y, d, 0, 0)
    if x is not None:
        return ((left + right) * _trapezoid_x(y, x, d, "cumulative_trapezoid")).cumsum(d) / 2.0
    dx = 1 if dx is None else dx
    return (dx / 2.0 * (left + right)).cumsum(d)


def vander(x, N=None, increasing=False):
    """The Vandermonde matrix: columns x**(N-1), ..., x**0 (or ascending powers)."""
    if x._data.ndim != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    if N is None:
        N = x._data.shape[0]
    if N < 0:
        raise RuntimeError("N must be non-negative.")
    from .. import _dtype as D
    dt = x.dtype if D.is_floating(x._data.dtype) else D.int64
    xp = array_module(x._data)
    if N == 0:
        return Tensor._make(xp.zeros((x._data.shape[0], 0), dt.np))
    cols = [Tensor._make(xp.ones(x._data.shape[0], dt.np))]
    if N > 1:
        xx = x.to(dt).unsqueeze(1).expand(x._data.shape[0], N - 1).cumprod(1)
        from .join import cat
        out = cat([cols[0].unsqueeze(1), xx], 1)
    else:
        out = cols[0].unsqueeze(1)
    return out if increasing else out.flip(1)


def unravel_index(indices, shape):
    """The coordinates of flat indices in a tensor of the given shape (a tuple of tensors)."""
    if not isinstance(indices, Tensor):
        raise TypeError(f"expected 'indices' to be integer dtype, but got {type(indices)}")
    if indices._data.dtype.kind not in "iu" or indices._data.dtype == np.bool_:
        raise TypeError(f"expected 'indices' to be integer dtype, but got {indices.dtype}")
    shape = tuple(int(s) for s in ((shape,) if isinstance(shape, (int, np.integer)) else shape))
    if any(s < 0 for s in shape):
        raise ValueError("'shape' cannot have negative values, but got " + str(shape))
    if not shape:
        return ()
    n = int(np.prod(shape, dtype=np.int64))
    idx = indices._data.astype(np.int64)
    idx = idx % n if n else idx          # PyTorch wraps indices outside [0, numel) around
    coords = np.unravel_index(idx, shape)
    xp = array_module(idx)
    return tuple(Tensor._make(xp.asarray(c, np.int64)) for c in coords)
