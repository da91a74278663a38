"""The last everyday Tensor methods (issue 10, part Q): legacy and Python-level helpers PyTorch scripts call.

Most compose existing primitives (their grad_fn is the composed op's, as PyTorch shows it); the random
fills reproduce PyTorch's serial CPU kernels (one 53-bit uniform per element) on the shared generator.
"""
import math
import warnings

import numpy as np

from .._tensor import Tensor, _root, UntypedStorage
from ..autograd.node import Node
from . import shape as S
from .._array import array_module
from .. import _array
from .. import _dtype as D


def _need_tensor(fname, input):
    if not isinstance(input, Tensor):
        raise TypeError(f"{fname}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")


# ---- views and shapes
def adjoint(input):
    _need_tensor("adjoint", input)
    """The conjugate transpose of the last two dims (a transpose for real tensors)."""
    if input._data.ndim < 2:
        raise RuntimeError("tensor.adjoint() is only supported on matrices or batches of matrices. "
                           f"Got {input._data.ndim}-D tensor.")
    from .complex import conj
    return conj(S.transpose(input, -2, -1))


def slice_inverse(input, src, dim=0, start=None, end=None, step=1):
    """The inverse of ``src = base.slice(dim, start, end, step)``: a view of ``input``'s storage with
    ``src``'s geometry."""
    _need_tensor("slice_inverse", input)
    from ..autograd.views import ViewFunc, set_view_func
    from ._index_nodes import _slice_symints
    out = S.as_strided(input, src.shape, src.stride(), src.storage_offset())
    # its replay keeps ``src`` and the slice's SymInts (Tensor._view_func's visitors may replace them)
    return set_view_func(out, input, ViewFunc(lambda t, s, a, b, c: slice_inverse(t, s, dim, a, b, c),
                                              _slice_symints(start, end, step), (src,)))


def as_strided_copy(input, size, stride, storage_offset=None, *, out=None):
    _need_tensor("as_strided_copy", input)
    return S.as_strided(input, size, stride, storage_offset).clone()


def dim_order(self, *, ambiguity_check=False):
    """The dims from outermost to innermost in memory (a stable sort of the strides, largest first)."""
    if not isinstance(ambiguity_check, (bool, list)):
        raise TypeError("ambiguity_check must be bool or List of torch.memory_format")
    st = self.stride()
    return tuple(sorted(range(len(st)), key=lambda d: -st[d]))


def new_empty_strided(self, size, stride, *, dtype=None, layout=None, device=None, pin_memory=False,
                      requires_grad=False):
    from .._creation import empty_strided
    return empty_strided(size, stride, dtype=dtype or self.dtype, device=device, requires_grad=requires_grad)


def as_subclass(self, cls):
    """``self`` as an instance of the Tensor subclass ``cls`` (an alias: same data, same version counter,
    attached to the graph)."""
    if not (isinstance(cls, type) and issubclass(cls, Tensor)):
        raise TypeError("Creating a Tensor subclass from a class that does not inherit from Tensor is not "
                        "possible. Make sure your class inherits from Tensor.")
    from .index import Alias
    out = Alias.apply(self, idx=(Ellipsis,), basic=True)
    out.__class__ = cls
    out._vc = self._vc
    return out


# ---- legacy (deprecated / removed) forms
class _Resize(Node, name="ResizeBackward"):
    def forward(self, x):
        self.in_shape = x.shape
        return array_module(x).ascontiguousarray(x).reshape(self.size)

    def backward(self, g):
        return g.contiguous().view(self.in_shape)


def _sizes(args):
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        args = tuple(args[0])
    return tuple(int(a) for a in args)


def resize(self, *sizes):
    """Deprecated non-in-place resize: a reshape that keeps the number of elements (PyTorch's autograd Resize)."""
    warnings.warn("non-inplace resize is deprecated", stacklevel=2)
    return _resize(self, _sizes(sizes))


def resize_as(self, tensor):
    warnings.warn("non-inplace resize_as is deprecated", stacklevel=2)
    return _resize(self, tuple(tensor.shape))


def _resize(self, sizes):
    n = math.prod(sizes)
    if n != self.numel():
        raise RuntimeError(f"requested resize to {'x'.join(map(str, sizes))} ({n} elements in total), but the given "
                           f"tensor has a size of {'x'.join(map(str, self.shape))} ({self.numel()} elements). "
                           "autograd's resize can only change the shape of a given tensor, while preserving the "
                           "number of elements. ")
    return _Resize.apply(self, size=sizes)


def reinforce(self, reward):
    def trim(s):
        return "\n".join([line.strip() for line in s.split("\n")])
    raise RuntimeError(trim(r"""reinforce() was removed.
        Use torch.distributions instead.
        See https://pytorch.org/docs/main/distributions.html

        Instead of:

        probs = policy_network(state)
        action = probs.multinomial()
        next_state, reward = env.step(action)
        action.reinforce(reward)
        action.backward()

        Use:

        probs = policy_network(state)
        # NOTE: categorical is equivalent to what used to be called multinomial
        m = torch.distributions.Categorical(probs)
        action = m.sample()
        next_state, reward = env.step(action)
        loss = -m.log_prob(action) * reward
        loss.backward()
    """))


def _volatile_get(self):
    warnings.warn("volatile was removed (Variable.volatile is always False)", stacklevel=2)
    return False


def _volatile_set(self, value):
    warnings.warn("volatile was removed and now has no effect. Use `with torch.no_grad():` instead.", stacklevel=2)


volatile = property(_volatile_get, _volatile_set)
is_cpu = property(lambda self: True)
# the backends hookgrad has no device for: a tensor is never on them (what a PyTorch build without them says)
not_on_device = property(lambda self: False)


def is_pinned(self, device=None):
    return False


def pin_memory(self, device=None):
    """Page-locked host memory serves copies to an accelerator; like a PyTorch build without one, refuse."""
    raise RuntimeError("Cannot access accelerator device when none is available.")


def is_shared(self):
    return False


def share_memory_(self):
    """PyTorch moves the storage to shared memory for worker processes; hookgrad's workers get pickled copies,
    so this returns the tensor as it is (docs/differences.md)."""
    return self


def const_data_ptr(self):
    return self.data_ptr()


def storage_type(self):
    from .. import storage
    storage._warn_typed_storage_removal()
    return storage._LEGACY[self.dtype]


def module_load(self, other, assign=False):
    """How ``nn.Module.load_state_dict`` puts ``other`` into this parameter or buffer (PyTorch's default:
    ``other.detach()`` with assign, else ``self.copy_(other).detach()``)."""
    if assign:
        return other.detach()
    return self.copy_(other).detach()


# ---- in-place data rewrites
def _rewrite(self, fname, values):
    """Write ``values`` into self outside autograd (PyTorch refuses these on a tensor that requires grad)."""
    if self.requires_grad:
        raise RuntimeError(f"Can't call {fname}() on Variable that requires grad. Use var.detach().{fname}() "
                           "instead.")
    from ..autograd.grad_mode import no_grad
    with no_grad():
        xp = array_module(self._data)
        self.copy_(Tensor._make(xp.asarray(values, dtype=self._data.dtype).reshape(self._data.shape)))
    return self


def _py(dt):
    return bool if dt.kind == "b" else int if dt.kind in "iu" else float


def apply_(self, callable):
    """Applies ``callable`` to each element (Python scalars in and out; CPU only, slow)."""
    conv = _py(self._data.dtype)
    vals = [conv(callable(v)) for v in self._data.reshape(-1).tolist()]
    return _rewrite(self, "apply_", vals)


def map_(self, tensor, callable):
    b = np.broadcast_to(tensor._data, self._data.shape)
    conv = _py(self._data.dtype)
    vals = [conv(callable(x, y)) for x, y in zip(self._data.reshape(-1).tolist(), b.reshape(-1).tolist())]
    return _rewrite(self, "map_", vals)


def map2_(self, x, y, callable):
    bx, by = (np.broadcast_to(t._data, self._data.shape).reshape(-1).tolist() for t in (x, y))
    conv = _py(self._data.dtype)
    vals = [conv(callable(a, b, c)) for a, b, c in zip(self._data.reshape(-1).tolist(), bx, by)]
    return _rewrite(self, "map2_", vals)


def fill_diagonal_(self, fill_value, wrap=False):
    """Fills the main diagonal (all dims equal for >2-D; a tall matrix restarts every ncols+1 rows with wrap)."""
    d = self._data
    nd = d.ndim
    if nd < 2:
        raise RuntimeError("dimensions must larger than 1")
    if nd > 2 and len(set(d.shape)) != 1:
        raise RuntimeError("all dimensions of input must be of equal length")
    n, xp = min(d.shape), array_module(d)
    idx = [xp.arange(n)] * nd
    if nd == 2 and wrap and d.shape[0] > d.shape[1] + 1:
        rows = [r for r in range(d.shape[0]) if r % (d.shape[1] + 1) < d.shape[1]]
        idx = [xp.array(rows), xp.array([r % (d.shape[1] + 1) for r in rows])]
    from .._creation import tensor
    return self.index_put_(tuple(Tensor._make(i) for i in idx), tensor(fill_value, dtype=self.dtype))


def set_(self, source=None, storage_offset=0, size=None, stride=None):
    """Makes self share ``source``'s data (a Tensor) or view a storage (with offset, size and stride)."""
    if source is None:
        arr = array_module(self._data).empty((0,), self._data.dtype)
    elif isinstance(source, Tensor):
        arr = source._data
    elif isinstance(source, UntypedStorage):
        root = source._array
        flat = root.reshape(-1).view(np.uint8).view(self._data.dtype) if root.dtype != self._data.dtype \
            else root.reshape(-1)
        if size is None:
            arr = array_module(self._data).asarray(flat)    # the root may be a base-class array under it
        else:
            size = tuple(size)
            stride = tuple(stride) if stride is not None else \
                tuple(int(np.prod(size[i + 1:])) for i in range(len(size)))
            arr = S._as_strided(flat[storage_offset:], size, tuple(s * flat.itemsize for s in stride), self._data)
    else:
        raise TypeError(f"set_() received an invalid combination of arguments - got ({type(source).__name__})")
    self._data = arr
    self._vc[0] += 1
    if self.grad_fn is None and self._grad_acc is not None:
        self._grad_acc = None   # a leaf given new storage gets a new AccumulateGrad (graphs made before no longer reach it)
    return self


def is_set_to(self, tensor):
    """True if both tensors view the same storage with the same offset, sizes and strides."""
    a, b = self._data, tensor._data
    return (_root(a) is _root(b) and _array.data_ptr(a) == _array.data_ptr(b)
            and a.shape == b.shape and a.strides == b.strides)


# ---- random fills: PyTorch's serial CPU kernels, one 53-bit uniform (or one double normal) per element
def _gen(generator):
    from .._creation import _gen
    return _gen(generator)


def _float_only(self, what, dist):
    if not D.is_floating(self._data.dtype):
        from .._creation import _long_name
        raise RuntimeError(f"{dist} distribution is a continuous probability distribution. dtype must be a "
                           f"floating point but you specified {_long_name(self.dtype)}")


def _random_fill(self, values, name):
    from .fill import _fill, _RANDOM_NODES
    node = _RANDOM_NODES.get(name)
    if node is None:
        from .fill import _FillRandom
        node = _RANDOM_NODES[name] = type(name, (_FillRandom,), {}, name=name)
    values = array_module(self._data).asarray(values.astype(self._data.dtype).reshape(self._data.shape))
    return _fill(self, values, node)


def cauchy_(self, median=0, sigma=1, *, generator=None):
    if not sigma > 0.0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma}")
    _float_only(self, "cauchy_", "Cauchy")
    u = _gen(generator)._uniform01(self._data.size, np.float64)
    return _random_fill(self, median + sigma * np.tan(np.pi * (u - 0.5)), "CauchyBackward0")


def log_normal_(self, mean=1, std=2, *, generator=None):
    if not std > 0.0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std}")
    _float_only(self, "log_normal_", "log_normal_")
    g = _gen(generator)
    vals = np.array([g._normal(1, np.float64, mean, std)[0] for _ in range(self._data.size)])
    return _random_fill(self, np.exp(vals), "LogNormalBackward0")


def geometric_(self, p, *, generator=None):
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p}")
    u = _gen(generator)._uniform01(self._data.size, np.float64)
    return _random_fill(self, np.ceil(np.log(u) / np.log1p(-p)), "GeometricBackward0")




def split_with_sizes(input, split_sizes, dim=0, _pos=2):
    _need_tensor("split_with_sizes", input)
    if not isinstance(split_sizes, (list, tuple)) or not all(isinstance(v, int) or
                                                             (isinstance(v, Tensor) and v.dim() == 0)
                                                             for v in split_sizes):
        bad = type(split_sizes).__name__ if not isinstance(split_sizes, (list, tuple)) else \
            f"{type(split_sizes).__name__} of [{', '.join(type(v).__name__ for v in split_sizes)}]"
        raise TypeError(f"split_with_sizes(): argument 'split_sizes' (position {_pos}) must be tuple of ints, "
                        f"not {bad}")
    from .join import split
    return split(input, [int(v) for v in split_sizes], dim)


def split_with_sizes_method(self, split_sizes, dim=0):
    return split_with_sizes(self, split_sizes, dim, _pos=1)
