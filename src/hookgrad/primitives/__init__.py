"""Differentiable primitives by family, and their installation as Tensor methods."""
import inspect

import numpy as np
from .._tensor import Tensor
from .._array import array_module, is_array
from . import elementwise as E, shape as S, reduce as R, linalg as L, index as I, join as J
from . import nn as _nn_ops  # noqa: F401  (installs its own Tensor methods)
from . import stats as ST
from ._inplace import inplace_apply, resize_ as _resize_, resize_as_ as _resize_as_
from ._dispatch import as_tensor_arg, _scalar_result
from .. import _creation as C
from .. import _dtype as _D
from . import fill as FL
from .._errors import is_number
from .. import _dtype as D


def _via(fn):
    """In-place form of an out-of-place Tensor function: ``x.op_(*a)`` computes ``op(x, *a)`` and writes it
    into x (the op's node becomes x's grad_fn; versions and views follow PyTorch's rebase rules)."""
    def method(self, *a, **k):
        return I.via_(self, lambda t: fn(t, *a, **k), *a, *k.values())
    method.__name__ = getattr(fn, "__name__", "op") + "_"
    try:
        method.__signature__ = inspect.signature(fn)     # PyTorch's keyword names, as the out-of-place op's
    except (TypeError, ValueError):
        pass
    return method


def _relu_(self):
    """x.relu_(): ReLU's primitive in place, its result written straight into x (F.relu(x, inplace=True)'s path)."""
    return E.relu(self, inplace=True)


def _rsub(self, other):
    return E.rsub(self, other)


def _rtruediv(self, other):
    # PyTorch computes number / tensor as reciprocal(tensor) * number (grad_fn MulBackward0)
    return E.mul(E.reciprocal(self), other)


def _rpow(self, other):
    return E.pow(other, self)


def _rmatmul(self, other):
    return L.matmul(other, self)


def _rfloordiv(self, other):
    return E.floor_divide(other, self)


def _rmod(self, other):
    return E.remainder(other, self)


def _radd(self, other):
    return E.add(self, other)       # PyTorch: number + tensor is tensor.add(number) (the tensor's edge first)


def _rmul(self, other):
    return E.mul(self, other)


_METHODS = {
    "__add__": E.add, "__radd__": _radd, "__sub__": E.sub, "__rsub__": _rsub, "__mul__": E.mul, "__rmul__": _rmul,
    "__truediv__": E.div, "__rtruediv__": _rtruediv, "__pow__": E.pow, "__rpow__": _rpow,
    "__matmul__": L.matmul, "__rmatmul__": _rmatmul, "__neg__": E.neg, "__abs__": E.abs, "__pos__": lambda s: s,
    "__floordiv__": E.floor_divide, "__rfloordiv__": _rfloordiv, "__mod__": E.remainder, "__rmod__": _rmod,
    "__eq__": I.eq, "__ne__": I.ne, "__lt__": I.lt, "__le__": I.le, "__gt__": I.gt, "__ge__": I.ge,
    "__and__": I.bitwise_and, "__or__": I.bitwise_or, "__xor__": I.bitwise_xor, "__invert__": I.bitwise_not,
    "__rand__": lambda s, o: I.bitwise_and(o, s), "__ror__": lambda s, o: I.bitwise_or(o, s),
    "__getitem__": I.getitem, "__setitem__": I.setitem,
    "add": E.add, "sub": E.sub, "subtract": E.subtract,
 "mul": E.mul, "multiply": E.mul, "div": E.div, "divide": E.div,
    "true_divide": E.div, "pow": E.pow, "neg": E.neg, "negative": E.neg, "abs": E.abs, "absolute": E.abs,
    "exp": E.exp, "expm1": E.expm1, "log": E.log, "log2": E.log2, "log10": E.log10, "log1p": E.log1p,
    "sqrt": E.sqrt, "rsqrt": E.rsqrt, "sin": E.sin, "cos": E.cos, "tan": E.tan, "tanh": E.tanh,
    "sigmoid": E.sigmoid, "erf": E.erf, "reciprocal": E.reciprocal, "relu": E.relu, "sign": E.sign,
    "floor": E.floor, "ceil": E.ceil, "round": E.round, "trunc": E.trunc, "frac": E.frac, "clamp": E.clamp,
    "clip": E.clamp, "clamp_min": E.clamp_min, "clamp_max": E.clamp_max, "minimum": E.minimum,
    "maximum": E.maximum, "floor_divide": E.floor_divide, "remainder": E.remainder, "fmod": E.fmod,
    "square": E.square, "atan2": E.atan2, "lerp": E.lerp,
    "sum": R.sum, "mean": R.mean,
    "matmul": L.matmul, "mm": L.mm, "bmm": L.bmm, "mv": L.mv, "dot": L.dot, "addmm": L.addmm, "outer": L.outer,
    "view": S.view, "reshape": S.reshape, "flatten": S.flatten, "unflatten": S.unflatten, "expand": S.expand,
    "expand_as": S.expand_as, "sum_to_size": S.sum_to_size, "permute": S.permute, "transpose": S.transpose,
    "swapaxes": S.transpose, "swapdims": S.transpose, "t": S.t, "squeeze": S.squeeze, "unsqueeze": S.unsqueeze,
    "contiguous": S.contiguous, "clone": S.clone, "to": S.to, "float": S.float_, "double": S.double,
    "half": S.half, "bfloat16": S.bfloat16, "long": S.long, "int": S.int_, "short": S.short, "char": S.char, "byte": S.byte,
    "bool": S.bool_, "cpu": S.cpu, "cuda": S.cuda, "type_as": S.type_as, "flip": S.flip, "fliplr": S.fliplr,
    "flipud": S.flipud, "roll": S.roll, "repeat": S.repeat, "tile": S.tile, "movedim": S.movedim,
    "moveaxis": S.movedim, "view_as": lambda s, o: S.view(s, o.shape), "reshape_as": lambda s, o: S.reshape(s, o.shape),
    "eq": I.eq, "ne": I.ne, "lt": I.lt, "le": I.le, "gt": I.gt, "ge": I.ge, "not_equal": I.ne,
    "less": I.lt, "greater": I.gt, "less_equal": I.le, "greater_equal": I.ge,
    "logical_and": I.logical_and, "logical_or": I.logical_or, "logical_not": I.logical_not,
    "logical_xor": I.logical_xor, "isnan": I.isnan, "isinf": I.isinf, "isfinite": I.isfinite,
    "equal": I.equal, "allclose": I.allclose, "isclose": I.isclose, "nonzero": I.nonzero, "any": I.any,
    "all": I.all, "where": lambda s, c, o: I.where(c, s, o), "index_put": I.index_put, "index_put_": I.index_put_,
    "fill_": FL.fill_, "zero_": FL.zero_, "normal_": FL.normal_, "uniform_": FL.uniform_, "random_": FL.random_,
    "bernoulli_": FL.bernoulli_, "exponential_": FL.exponential_, "copy_": FL.copy_, "bernoulli": C.bernoulli,
    "gelu": E.gelu, "silu": E.silu, "softplus": E.softplus,
    "new_zeros": C.new_zeros, "new_ones": C.new_ones, "new_empty": C.new_empty, "new_full": C.new_full,
    "new_tensor": lambda s, data, dtype=None, device=None, requires_grad=False, **k: C.tensor(
        data, dtype=dtype or s.dtype, device=device if device is not None else C._like_device(s, None),
        requires_grad=requires_grad),
}

_METHODS.update({
    "__rsub__": _rsub, "rsub": E.rsub, "fmax": E.fmax, "fmin": E.fmin, "hardtanh": E.hardtanh,
    "prod": R.prod, "var": R.var, "std": R.std, "max": R.max, "min": R.min, "amax": R.amax, "amin": R.amin,
    "argmax": R.argmax, "argmin": R.argmin, "aminmax": R.aminmax, "logsumexp": R.logsumexp, "cumsum": R.cumsum,
    "cumprod": R.cumprod, "norm": R.norm_method,
 "sort": R.sort, "argsort": R.argsort, "topk": R.topk,
    "einsum": None, "split": J.split, "chunk": J.chunk, "unbind": J.unbind, "tensor_split": J.tensor_split,
    "split_with_sizes": lambda s, split_sizes, dim=0: J.split(s, list(split_sizes), dim),
    "hsplit": J.hsplit, "vsplit": J.vsplit, "dsplit": J.dsplit, "msort": R.msort, "median": R.median,
    "nanmedian": R.nanmedian, "kthvalue": R.kthvalue, "mode": R.mode, "cummax": R.cummax, "cummin": R.cummin,
    "narrow": S.narrow, "unfold": S.unfold, "tril": S.tril, "triu": S.triu, "diagonal": S.diagonal, "diag": S.diag,
    "diag_embed": S.diag_embed, "trace": S.trace,
    "gather": I.gather, "scatter": I.scatter, "scatter_add": I.scatter_add, "index_select": I.index_select, "select": I.select,
    "index_add": I.index_add, "masked_fill": I.masked_fill, "masked_select": I.masked_select, "take": I.take,
    "masked_fill_": I.masked_fill_, "scatter_": I.scatter_, "scatter_add_": I.scatter_add_, "index_add_": I.index_add_,
    "index_copy": I.index_copy, "index_copy_": I.index_copy_, "masked_scatter": I.masked_scatter,
    "masked_scatter_": I.masked_scatter_, "resize_": _resize_, "resize_as_": _resize_as_,
    "fix": E.trunc, "clamp_min": E.clamp_min, "clamp_max": E.clamp_max,
    "var_mean": None, "hstack": None, "vecdot": None,
})
from . import special as _SP
_METHODS.update({
    **_SP.METHODS, "bitwise_and": I.bitwise_and, "bitwise_or": I.bitwise_or, "bitwise_xor": I.bitwise_xor,
    "bitwise_not": I.bitwise_not,
})
_SP.sign_inplace(_METHODS)
from . import complex as _CX
_METHODS.update(_CX.METHODS)
_METHODS.update({
    "nansum": ST.nansum, "nanmean": ST.nanmean, "logcumsumexp": ST.logcumsumexp, "quantile": ST.quantile,
    "nanquantile": ST.nanquantile, "cov": ST.cov, "corrcoef": ST.corrcoef, "unique": ST.unique,
    "unique_consecutive": ST.unique_consecutive, "count_nonzero": ST.count_nonzero,
    "nonzero_static": ST.nonzero_static, "bincount": ST.bincount, "histc": ST.histc, "histogram": ST.histogram,
    "take_along_dim": ST.take_along_dim, "index_fill": ST.index_fill, "index_fill_": ST.index_fill_,
    "index_reduce": ST.index_reduce, "index_reduce_": ST.index_reduce_, "scatter_reduce": ST.scatter_reduce,
    "scatter_reduce_": ST.scatter_reduce_, "put": ST.put, "put_": ST.put_, "renorm": ST.renorm,
    "renorm_": ST.renorm_, "dist": ST.dist, "argwhere": I.argwhere, "isneginf": I.isneginf, "isposinf": I.isposinf,
})
_METHODS.update({
    "ravel": S.ravel, "rot90": S.rot90, "as_strided": S.as_strided, "as_strided_": S.as_strided_,
    "select_scatter": S.select_scatter, "slice_scatter": S.slice_scatter, "diagonal_scatter": S.diagonal_scatter,
    "as_strided_scatter": S.as_strided_scatter, "narrow_copy": S.narrow_copy, "diagflat": S.diagflat,
    "repeat_interleave": S.repeat_interleave, "diff": S.diff,
    "squeeze_": S.squeeze_, "unsqueeze_": S.unsqueeze_, "t_": S.t_, "transpose_": S.transpose_,
    "swapaxes_": S.swapaxes_, "swapdims_": S.swapdims_,
    "unsafe_split": J.unsafe_split, "unsafe_split_with_sizes": J.unsafe_split_with_sizes, "unsafe_chunk": J.unsafe_chunk,
    "addmv": L.addmv, "addr": L.addr, "baddbmm": L.baddbmm, "addbmm": L.addbmm, "vdot": L.vdot, "kron": L.kron,
    "cross": L.cross,
    "is_nonzero": C.is_nonzero, "is_same_size": C.is_same_size, "is_signed": C.is_signed,
    "is_inference": C.is_inference,
    "is_distributed": C.is_distributed,
})
_METHODS.update({
    "swapaxes": S.swapaxes, "view_as": lambda self, other: S.view(self, other.shape),
    "reshape_as": lambda self, other: S.reshape(self, other.shape),
    "where": lambda self, condition, other: I.where(condition, self, other),
    "split": lambda self, split_size, dim=0: J.split(self, split_size, dim),
})
from . import everyday as _Q
_METHODS.update({
    "adjoint": _Q.adjoint, "slice_inverse": _Q.slice_inverse, "dim_order": _Q.dim_order,
    "new_empty_strided": _Q.new_empty_strided, "as_subclass": _Q.as_subclass, "resize": _Q.resize,
    "resize_as": _Q.resize_as, "reinforce": _Q.reinforce, "volatile": _Q.volatile, "is_cpu": _Q.is_cpu,
    "const_data_ptr": _Q.const_data_ptr, "storage_type": _Q.storage_type, "module_load": _Q.module_load,
    "apply_": _Q.apply_, "map_": _Q.map_, "map2_": _Q.map2_, "fill_diagonal_": _Q.fill_diagonal_, "set_": _Q.set_,
    "is_set_to": _Q.is_set_to, "cauchy_": _Q.cauchy_, "log_normal_": _Q.log_normal_, "geometric_": _Q.geometric_,
    "broadcast_to": S.broadcast_to, "ger": L.ger, "inner": L.inner, "multinomial": C.multinomial,
    "split_with_sizes": _Q.split_with_sizes_method,
    "is_mps": _Q.not_on_device, "is_xpu": _Q.not_on_device, "is_ipu": _Q.not_on_device, "is_maia": _Q.not_on_device,
    "is_mtia": _Q.not_on_device, "is_vulkan": _Q.not_on_device, "is_xla": _Q.not_on_device,
    "is_pinned": _Q.is_pinned, "pin_memory": _Q.pin_memory, "is_shared": _Q.is_shared,
    "share_memory_": _Q.share_memory_,
    "cfloat": lambda self, memory_format=None: self.to(_D.complex64),
    "cdouble": lambda self, memory_format=None: self.to(_D.complex128),
})
from . import linalg_legacy as _LL      # det, inverse, svd, qr, cholesky, ... (and the removed eig, lstsq, ...)
_METHODS.update(_LL.METHODS)
for _k in [k for k, v in _METHODS.items() if v is None]:
    del _METHODS[_k]

_INPLACE_VIA = ("exp", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "sin", "cos", "tan", "tanh",
                "sigmoid", "erf", "reciprocal", "neg", "negative", "abs", "absolute", "sign", "floor", "ceil",
                "round", "trunc", "frac", "clamp", "clip", "clamp_min", "clamp_max", "square", "pow",
                "remainder", "fmod", "floor_divide", "lerp", "atan2", "tril", "triu", "cumsum", "cumprod",
                "hardtanh")
_INPLACE_VIA += _SP.INPLACE_VIA + ("addmv", "addr", "baddbmm", "addbmm", "addmm")

_INPLACE_BINARY = {"add_": E.Add, "sub_": E.Sub, "mul_": E.Mul, "div_": E.Div, "__iadd__": E.Add,
                   "__isub__": E.Sub, "__imul__": E.Mul, "__itruediv__": E.Div, "subtract_": E.Sub,
                   "multiply_": E.Mul, "divide_": E.Div}


def _fast_binary(cls, general, ufunc):
    """The dunder for the common case (two tensors of one dtype) computes the ufunc and records the
    node directly (node.record2), between the op hooks when there are some; anything else (scalars,
    promotion, lists) takes the general path with PyTorch's rules. Same node, same result either way."""
    from ._dispatch import broadcast_error
    from ..autograd import op_hooks as G
    from ..autograd.node import record2
    from ..autograd.grad_mode import _state
    assert cls.save in ((), (0, 1))
    new = object.__new__
    ndarray = np.ndarray

    def method(self, other):
        if type(other) is Tensor and other._data.dtype is self._data.dtype:
            if G._op_hooks and not G._op_tls.busy:     # the same fast path, between the op hooks
                return G._apply_with_op_hooks(cls, (self, other), None, method)
            try:
                out = ufunc(self._data, other._data)
            except ValueError:
                raise broadcast_error(self._data.shape, other._data.shape) from None
            except TypeError:           # no loop for the dtype (bool - bool): the general path's error
                return general(self, other)
            if type(out) is not ndarray and not is_array(out):   # a NumPy scalar (not an array, not a sparse storage)
                out = array_module(self._data).asarray(out)
            if (self._requires_grad or other._requires_grad or self._lazy_rg and self.requires_grad) and _state.enabled \
                    and not (self._inference and other._inference):
                return record2(cls, self, other, out)
            t = new(Tensor)
            t._data = out
            t._requires_grad = False
            t.grad_fn = None
            t._output_nr = 0
            t._vc = [0]
            if _state.inference:
                t._inference = True
            return t
        return general(self, other)
    method.__name__ = general.__name__
    method.__doc__ = general.__doc__
    return method


def _fast_unary(cls, general):
    """Tensor.relu() & co. on a float tensor: the primitive directly (between the op hooks, if any)."""
    from ..autograd import op_hooks as G
    from ..autograd.node import record1
    from ..autograd.grad_mode import _state
    new = object.__new__
    ndarray = np.ndarray
    make = Tensor._make

    def method(self):
        dt = self._data.dtype
        if dt.kind == "f" or D.is_floating(dt):         # (float32/64 without the call: this is every unary op)
            if G._op_hooks and not G._op_tls.busy:
                return G._apply_with_op_hooks(cls, (self,), None, method)
            node = new(cls)
            out = node.forward(self._data)
            if type(out) is not ndarray and not is_array(out):   # a NumPy scalar (not an array, not a sparse storage)
                out = array_module(self._data).asarray(out)
            if (self._requires_grad or self._lazy_rg and self.requires_grad) and _state.enabled and not self._inference:
                return record1(node, self, out)
            t = make(out)
            if _state.inference:
                t._inference = True
            return t
        return general(self)
    method.__name__ = general.__name__
    method.__doc__ = general.__doc__
    return method


_FAST_UNARY = {"relu": (E.Relu, E.relu), "exp": (E.Exp, E.exp), "tanh": (E.Tanh, E.tanh),
               "sigmoid": (E.Sigmoid, E.sigmoid), "neg": (E.Neg, E.neg), "__neg__": (E.Neg, E.neg)}

_FAST = {"__add__": (E.Add, E.add, np.add), "__sub__": (E.Sub, E.sub, np.subtract),
         "__mul__": (E.Mul, E.mul, np.multiply), "mul": (E.Mul, E.mul, np.multiply)}


def _cmp_dunder(fn):
    """``tensor < other``: a Tensor or a number; anything else is NotImplemented (Python then raises TypeError,
    or for == and != compares identity), as PyTorch's dunders do."""
    def method(self, other):
        if isinstance(other, (Tensor, np.ndarray)) or is_number(other):
            return fn(self, other)
        return NotImplemented
    method.__name__ = fn.__name__
    return method


def _defer(fn):
    """``tensor <op> other`` where ``other`` is no Tensor but defines ``__torch_function__`` (vmap's BatchedTensor):
    NotImplemented, so that Python asks ``other``'s reflected operator (one global read while no such object lives)."""
    from . import _dispatch

    def method(self, other):
        if _dispatch.torch_function_objects and not isinstance(other, Tensor) and \
                getattr(type(other), "__torch_function__", None) is not None:
            return NotImplemented
        return fn(self, other)
    method.__name__ = getattr(fn, "__name__", "op")
    return method


_DEFERRING = ("__truediv__", "__rtruediv__", "__pow__", "__rpow__", "__matmul__", "__rmatmul__", "__floordiv__",
              "__rfloordiv__", "__mod__", "__rmod__", "__and__", "__or__", "__xor__", "__rand__", "__ror__",
              "__radd__", "__rsub__", "__rmul__")


def _defer_index(fn):
    """``tensor[index]`` whose index holds an object that defines ``__torch_function__`` (vmap's BatchedTensor):
    the call goes to that object (one global read while no such object lives)."""
    from . import _dispatch

    def method(self, index):
        if _dispatch.torch_function_objects:
            out = _dispatch.torch_function(method, (self, index if type(index) is tuple else (index,)), {})
            if out is not NotImplemented:
                return out
        return fn(self, index)
    method.__name__ = "__getitem__"
    return method


def _install():
    for name, fn in _METHODS.items():
        setattr(Tensor, name, _defer(fn) if name in _DEFERRING else _defer_index(fn) if name == "__getitem__" else fn)
    for name in ("__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__"):
        setattr(Tensor, name, _cmp_dunder(_METHODS[name]))
    for name, (cls, general, ufunc) in _FAST.items():
        setattr(Tensor, name, _fast_binary(cls, _defer(general) if name.startswith("__") else general, ufunc))
    for name, (cls, general) in _FAST_UNARY.items():
        setattr(Tensor, name, _fast_unary(cls, general))
    for name, cls in _INPLACE_BINARY.items():
        setattr(Tensor, name, _make_inplace_binary(cls, name))
    for name in _INPLACE_VIA:
        setattr(Tensor, name + "_", _via(_METHODS[name]))
    Tensor.relu_ = _relu_
    for name, method in _AUGMENTED.items():
        setattr(Tensor, name, _augmented(name, method))
    Tensor.T = property(S.T)
    Tensor.mT = property(S.mT)
    Tensor.H = property(_CX.H)
    Tensor.mH = property(_CX.mH)


# the augmented assignments beyond _INPLACE_BINARY's, in place as PyTorch's (``x **= y`` is ``x.pow_(y)``)
_AUGMENTED = {"__ipow__": "pow_", "__ifloordiv__": "floor_divide_", "__imod__": "remainder_", "__idiv__": "div_",
              "__iand__": "bitwise_and_", "__ior__": "bitwise_or_", "__ixor__": "bitwise_xor_",
              "__ilshift__": "bitwise_left_shift_", "__irshift__": "bitwise_right_shift_"}


def _augmented(name, method):
    def fn(self, other):
        return getattr(self, method)(other)
    fn.__name__ = fn.__qualname__ = name
    return fn


def _make_inplace_binary(cls, name):
    """x.add_(other, alpha=...) etc.: the op runs at the promoted dtype; the result is cast back into x."""
    from . import _dispatch
    float_only = cls is E.Div

    def general(self, other, kw):
        if isinstance(other, (list, tuple)):
            other = as_tensor_arg(other, self)
        if isinstance(other, Tensor):
            sd, od = self._data.dtype, other._data.dtype
            if sd != od and cls is not E.Div and sd.kind in "biuf" and od.kind in "biuf":
                dt = D.result_type_of([self, other], []).np      # PyTorch's (int64 + float32: float32; NumPy's: 64)
                if dt != np.result_type(sd, od):
                    kw["dt"] = dt
            return inplace_apply(self, cls, (other,), kw)
        if _dispatch.torch_function_objects:        # vmap's BatchedTensor as ``other``: its __torch_function__
            out = _dispatch.torch_function(fn, (self, other), kw)
            if out is not NotImplemented:
                return out
        dt = _scalar_result(self, other, float_only)
        if dt is not self._data.dtype:
            kw["dt"] = dt
        return inplace_apply(self, cls, (dt.type(other),), kw)

    # PyTorch's keyword names: add_/sub_(other, *, alpha), subtract_(other, alpha) (alpha by position for a
    # number), mul_(other), div_(other, *, rounding_mode)
    if cls is E.Div:
        def fn(self, other, *, rounding_mode=None):
            if rounding_mode is None:
                return general(self, other, {})
            return I.via_(self, lambda t: E.div(t, other, rounding_mode=rounding_mode), other)
    elif cls is E.Mul:
        def fn(self, other):
            return general(self, other, {})
    elif name == "subtract_":
        def fn(self, other, alpha=1):
            return general(self, other, {} if alpha == 1 else {"alpha": alpha})
    else:
        def fn(self, other, *rest, alpha=1):
            if rest:        # the deprecated x.add_(Number alpha, Tensor other)
                other, alpha = E._alpha_overload(name, self, other, rest, alpha)
            return general(self, other, {} if alpha == 1 else {"alpha": alpha})
    fn.__name__ = fn.__qualname__ = name
    return fn



_install()


# PyTorch's methods whose one argument is a list of ints also take them as varargs
def _s_varargs(fn):
    """``x.squeeze(0, 1)``: PyTorch's methods whose one argument is a list of ints also take them as varargs."""
    import functools

    @functools.wraps(fn)            # PyTorch's keyword names (inspect.signature follows __wrapped__)
    def method(self, *args, **kw):
        if len(args) > 1 and all(type(a) is int for a in args):
            return fn(self, args, **kw)
        return fn(self, *args, **kw)
    return method


for _k in ("squeeze", "squeeze_", "count_nonzero", "hsplit", "vsplit", "dsplit", "broadcast_to"):
    setattr(Tensor, _k, _s_varargs(getattr(Tensor, _k)))


# PyTorch's argument-parser errors on Tensor methods (error path only; the fast dunders stay as they are)
def _r_check_methods():
    from ._dispatch import checked
    from .._errors import _PYTHON_LEVEL
    skip = set(_FAST) | set(_FAST_UNARY) | _PYTHON_LEVEL
    for name in list(_METHODS) + [n + "_" for n in _INPLACE_VIA]:
        fn = Tensor.__dict__.get(name)
        if name.startswith("__") or name in skip or not inspect.isfunction(fn) or getattr(fn, "_arg_checked", 0):
            continue
        setattr(Tensor, name, checked(fn, name, method=True))


_r_check_methods()
