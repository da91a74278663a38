"""In-place fills (fill_, zero_, the random fills normal_, uniform_, random_, bernoulli_, exponential_) and copy_:
in-place ops whose gradient is zero for the overwritten tensor (FillBackward2, ZeroBackward0, NormalBackward0, ...,
CopyBackwards), applied through inplace_apply like any in-place op."""
import numpy as np

from .. import _array
from .._array import array_module, to_numpy
from .._tensor import Tensor
from ..autograd.node import Node as _Node
from .._creation import _gen, _no_more_kwargs, tensor
from ..autograd.grad_mode import _state
from ._inplace import inplace_apply, check_inplace


def _in_module_of(x, v):
    """``v`` (a number, or an array of any module: the generator's random values, copy_'s source on another
    device) as an array of ``x``'s module."""
    xp = array_module(x)
    if not hasattr(v, "shape"):             # a Python number
        return xp.asarray(v)
    return v if array_module(v) is xp else xp.asarray(to_numpy(v))


def _fill(self, values, cls=None, value=None):
    """Write values into self as an in-place op whose gradient is zero (PyTorch's FillBackward2,
    ZeroBackward0, NormalBackward0, ...): rebase, views (CopySlices) and versions as any in-place op."""
    args = () if value is None else (value,)
    return inplace_apply(self, cls or _FillRandom, args, {"_v": values})


class _Fill(_Node, name="FillBackward2"):
    """x.fill_(value) & co.: the new values do not depend on x (its gradient is zeros, as PyTorch's
    zeros_like(grad)); fill_ with a 0-dim tensor (FillBackward3) gives that tensor the gradient's sum."""
    _overlap_ok = True          # PyTorch writes a constant even where elements share memory (expand)

    def forward(self, x, *value):
        v = _in_module_of(x, value[0] if value else self._v)
        return np.broadcast_to(v.astype(x.dtype, copy=False), x.shape)

    def backward(self, g):
        z = Tensor._make(np.zeros_like(g._data))
        return (z, g.sum()) if len(self.next_functions) > 1 else z


class _Zero(_Fill, name="ZeroBackward0"):
    pass


class _FillT(_Fill, name="FillBackward3"):
    _overlap_ok = False


class _FillRandom(_Fill, name="FillBackward0"):
    _overlap_ok = False


_RANDOM_NODES = {n: type(n, (_FillRandom,), {}, name=n) for n in (
    "NormalBackward0", "UniformBackward0", "RandomBackward0", "RandomBackward1", "RandomBackward2",
    "BernoulliBackward1", "BernoulliBackward2", "ExponentialBackward0")}


def fill_(self, value):
    if isinstance(value, Tensor):
        if value._data.ndim:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with {value._data.ndim} "
                               "dimensions.")
        return _fill(self, None, _FillT, value)
    return _fill(self, value, _Fill)


def zero_(self):
    return _fill(self, 0, _Zero)


def _meta_fill(self, node):
    """A random fill of a meta tensor (no data): as in PyTorch, nothing is drawn from the generator, and,
    unless autograd records the fill, nothing is written (a write would touch every calloc page of the
    MetaArray: a model built under ``with torch.device("meta")`` would take its full size in memory)."""
    if _state.enabled and (self.requires_grad or (self._base is not None and self._base.requires_grad)):
        return _fill(self, 0, _RANDOM_NODES[node])
    check_inplace(self)
    self._vc[0] += 1
    return self


def normal_(self, mean=0.0, std=1.0, *, generator=None):
    if self.is_meta:
        return _meta_fill(self, "NormalBackward0")
    d = self._data
    return _fill(self, _gen(generator)._normal(d.size, d.dtype, mean, std).reshape(d.shape), _RANDOM_NODES["NormalBackward0"])


def uniform_(self, from_=0.0, to=1.0, *, generator=None, **kw):
    # ``from`` is a Python keyword: PyTorch's x.uniform_(**{"from": 0, "to": 1}) arrives in kw
    a, b = kw.pop("from", from_), to
    _no_more_kwargs(kw, "uniform_")
    if self.is_meta:
        return _meta_fill(self, "UniformBackward0")
    d = self._data
    return _fill(self, _uniform_values(_gen(generator)._uniform01(d.size, d.dtype), a, b, d.dtype).reshape(d.shape),
                 _RANDOM_NODES["UniformBackward0"])


def _uniform_values(u, a, b, dtype):
    """PyTorch's ``x * (to - from) + from`` for draws ``u`` in [0, 1) (float64 arrays holding the exact
    24- or 53-bit fractions), with ``from`` and ``to`` cast to ``dtype`` first and the product and sum fused
    as the CPU kernel's FMA does, so that ``manual_seed`` gives PyTorch's numbers bit for bit."""
    if dtype == np.float32:
        a, b = np.float32(a), np.float32(b)
        # u * (b - a) is exact in float64 (24-bit by 24-bit), so one rounding of the sum is the FMA
        return (u * np.float64(b - a) + np.float64(a)).astype(np.float32)
    if dtype == np.float64:
        return _fma(u, float(b) - float(a), float(a))
    return u * (b - a) + a


def _fma(x, y, z):
    """x * y + z rounded once (float64 arrays/numbers), by error-free transformations: Dekker's product
    and Knuth's sum; the result's last bit agrees with a hardware FMA but for rare double roundings."""
    p = x * y
    split = 134217729.0                                 # 2**27 + 1
    cx = split * x
    xh = cx - (cx - x)
    xl = x - xh
    cy = split * y
    yh = cy - (cy - y)
    yl = y - yh
    ep = ((xh * yh - p) + xh * yl + xl * yh) + xl * yl  # p + ep == x * y exactly
    s = p + z
    bb = s - p
    es = (p - (s - bb)) + (z - bb)                      # s + es == p + z exactly
    return s + (ep + es)


def random_(self, from_=0, to=None, *, generator=None, **kw):
    from_ = kw.pop("from", from_)
    _no_more_kwargs(kw, "random_")
    kind = 0 if to is not None else 1 if from_ else 2
    if to is None:
        if from_:
            from_, to = 0, from_
        else:
            k = self._data.dtype
            to = 2 ** 24 + 1 if k == np.float32 else 2 ** 53 + 1 if k == np.float64 else \
                int(np.iinfo(k).max) + 1 if k.kind in "iu" else 2
    d = self._data
    return _fill(self, _gen(generator)._randint(from_, to, d.size).reshape(d.shape), _RANDOM_NODES[f"RandomBackward{kind}"])


def bernoulli_(self, p=0.5, *, generator=None):
    d = self._data
    prob = p._data if isinstance(p, Tensor) else p
    return _fill(self, _gen(generator)._uniform01(d.size, np.float64).reshape(d.shape) < prob,
                 _RANDOM_NODES["BernoulliBackward1" if isinstance(p, Tensor) else "BernoulliBackward2"])


def exponential_(self, lambd=1.0, *, generator=None):
    u = _gen(generator)._uniform01(self._data.size, np.float64).reshape(self._data.shape)
    return _fill(self, -np.log1p(-u) / lambd, _RANDOM_NODES["ExponentialBackward0"])   # PyTorch's numbers


def copy_(self, other, non_blocking=False):
    """Copy other into self (broadcasting); differentiable w.r.t. other, like PyTorch (whose keyword is other)."""
    src = other

    if not isinstance(src, Tensor):
        src = tensor(src)
    try:
        np.broadcast_to(src._data, self._data.shape)
    except ValueError:
        raise RuntimeError(f"The size of tensor a ({self._data.shape[-1] if self._data.ndim else 1}) must match the size "
                           f"of tensor b ({src._data.shape[-1] if src._data.ndim else 1}) at non-singleton dimension "
                           f"{max(self._data.ndim - 1, 0)}") from None
    return inplace_apply(self, _Copy, (src,), {})


class _Copy(_Node, name="CopyBackwards"):
    def name(self):
        return "torch::autograd::CopyBackwards"

    def forward(self, x, src):
        self.src_dtype = src.dtype
        self.src_xp = array_module(src)
        return np.broadcast_to(_in_module_of(x, src), x.shape).astype(x.dtype)

    def backward(self, g):
        # PyTorch's CopyBackwards: zeros_like(grad) for self, a constant (no graph under create_graph); the
        # source's gradient on the source's device
        gs = g
        if _array.device_type_of_module(self.src_xp) != _array.device_type(g._data):
            gs = Tensor._make(_array.asarray(g._data, self.src_xp))
        return Tensor._make(np.zeros_like(g._data)), gs
