"""Differentiable primitives by family, and their installation as Tensor methods."""
from .._tensor import Tensor
from . import elementwise as E, shape as S, reduce as R, linalg as L, index as I
from . import nn as _nn_ops  # noqa: F401  (installs its own Tensor methods)
from ._inplace import inplace_apply
from .. import _creation as C


def _inplace_binary(cls, **fixed):
    from ._dispatch import binary

    def fn(self, other, **kw):
        kw.update(fixed)
        # promotion happens on the out-of-place op; the result is cast back into self
        if isinstance(other, Tensor):
            return inplace_apply(self, cls, (other,), kw)
        from ._dispatch import _scalar_result
        dt = _scalar_result(self, other, False)
        if dt is not self._data.dtype:
            kw["dt"] = dt
        return inplace_apply(self, cls, (dt.type(other),), kw)
    return fn


def _inplace_unary(fn_out):
    """x.exp_() etc.: run the out-of-place function's node in place."""
    def fn(self, *a, **k):
        holder = {}
        from ._inplace import check_inplace
        check_inplace(self)
        return _inplace_via(self, lambda t: fn_out(t, *a, **k))
    return fn


def _inplace_via(self, f):
    """Generic in-place: compute f(self) out of place and write it into self with rebase."""
    from ._inplace import inplace_apply as _ia

    class _Via:
        save = (0,)

        @staticmethod
        def apply(x, **kw):
            return f(x)
    return _ia(self, _Via, (), {})


def _radd(self, other):
    return E.add(other, self)


def _rsub(self, other):
    return E.sub(other, self)


def _rmul(self, other):
    return E.mul(other, self)


def _rtruediv(self, other):
    return E.div(other, self)


def _rpow(self, other):
    return E.pow(other, self)


def _rmatmul(self, other):
    return L.matmul(other, self)


def _rfloordiv(self, other):
    return E.floor_divide(other, self)


def _rmod(self, other):
    return E.remainder(other, self)


_METHODS = {
    "__add__": E.add, "__radd__": _radd, "__sub__": E.sub, "__rsub__": _rsub, "__mul__": E.mul, "__rmul__": _rmul,
    "__truediv__": E.div, "__rtruediv__": _rtruediv, "__pow__": E.pow, "__rpow__": _rpow,
    "__matmul__": L.matmul, "__rmatmul__": _rmatmul, "__neg__": E.neg, "__abs__": E.abs, "__pos__": lambda s: s,
    "__floordiv__": E.floor_divide, "__rfloordiv__": _rfloordiv, "__mod__": E.remainder, "__rmod__": _rmod,
    "__eq__": I.eq, "__ne__": I.ne, "__lt__": I.lt, "__le__": I.le, "__gt__": I.gt, "__ge__": I.ge,
    "__and__": I.bitwise_and, "__or__": I.bitwise_or, "__xor__": I.bitwise_xor, "__invert__": I.bitwise_not,
    "__rand__": lambda s, o: I.bitwise_and(o, s), "__ror__": lambda s, o: I.bitwise_or(o, s),
    "__getitem__": I.getitem, "__setitem__": I.setitem,
    "add": E.add, "sub": E.sub, "subtract": E.sub, "mul": E.mul, "multiply": E.mul, "div": E.div, "divide": E.div,
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
    "half": S.half, "long": S.long, "int": S.int_, "short": S.short, "char": S.char, "byte": S.byte,
    "bool": S.bool_, "cpu": S.cpu, "cuda": S.cuda, "type_as": S.type_as, "flip": S.flip, "fliplr": S.fliplr,
    "flipud": S.flipud, "roll": S.roll, "repeat": S.repeat, "tile": S.tile, "movedim": S.movedim,
    "moveaxis": S.movedim, "view_as": lambda s, o: S.view(s, o.shape), "reshape_as": lambda s, o: S.reshape(s, o.shape),
    "eq": I.eq, "ne": I.ne, "lt": I.lt, "le": I.le, "gt": I.gt, "ge": I.ge, "not_equal": I.ne,
    "less": I.lt, "greater": I.gt, "less_equal": I.le, "greater_equal": I.ge,
    "logical_and": I.logical_and, "logical_or": I.logical_or, "logical_not": I.logical_not,
    "logical_xor": I.logical_xor, "isnan": I.isnan, "isinf": I.isinf, "isfinite": I.isfinite,
    "equal": I.equal, "allclose": I.allclose, "isclose": I.isclose, "nonzero": I.nonzero, "any": I.any,
    "all": I.all, "where": lambda s, c, o: I.where(c, s, o), "index_put": I.index_put, "index_put_": I.index_put_,
    "fill_": C.fill_, "zero_": C.zero_, "normal_": C.normal_, "uniform_": C.uniform_, "random_": C.random_,
    "bernoulli_": C.bernoulli_, "exponential_": C.exponential_, "copy_": C.copy_, "bernoulli": C.bernoulli,
    "gelu": E.gelu, "silu": E.silu, "softplus": E.softplus,
    "new_zeros": lambda s, *size, dtype=None, requires_grad=False, **k: C.zeros(*size, dtype=dtype or s.dtype, requires_grad=requires_grad),
    "new_ones": lambda s, *size, dtype=None, requires_grad=False, **k: C.ones(*size, dtype=dtype or s.dtype, requires_grad=requires_grad),
    "new_empty": lambda s, *size, dtype=None, requires_grad=False, **k: C.empty(*size, dtype=dtype or s.dtype, requires_grad=requires_grad),
    "new_full": lambda s, size, v, dtype=None, requires_grad=False, **k: C.full(size, v, dtype=dtype or s.dtype, requires_grad=requires_grad),
    "new_tensor": lambda s, data, dtype=None, requires_grad=False, **k: C.tensor(data, dtype=dtype or s.dtype, requires_grad=requires_grad),
}

_INPLACE_BINARY = {"add_": E.Add, "sub_": E.Sub, "mul_": E.Mul, "div_": E.Div, "__iadd__": E.Add,
                   "__isub__": E.Sub, "__imul__": E.Mul, "__itruediv__": E.Div, "subtract_": E.Sub,
                   "multiply_": E.Mul, "divide_": E.Div}


def _install():
    for name, fn in _METHODS.items():
        setattr(Tensor, name, fn)
    for name, cls in _INPLACE_BINARY.items():
        setattr(Tensor, name, _make_inplace_binary(cls))
    for name in ("exp", "log", "sqrt", "sin", "cos", "tanh", "sigmoid", "relu", "neg", "abs", "clamp", "clip",
                 "floor", "ceil", "round", "trunc", "sign", "reciprocal", "pow", "rsqrt", "expm1", "log1p",
                 "clamp_min", "clamp_max", "square", "frac", "tan", "erf", "log2", "remainder", "fmod",
                 "floor_divide", "lerp", "sigmoid", "masked_fill"):
        if name in _METHODS:
            setattr(Tensor, name + "_", _inplace_unary(_METHODS[name]))
    Tensor.T = property(S.T)
    Tensor.mT = property(S.mT)
    Tensor.H = property(S.T)
    Tensor.mH = property(S.mT)


def _make_inplace_binary(cls):
    def fn(self, other, *, alpha=1):
        if isinstance(other, (list, tuple)):
            from ._dispatch import as_tensor_arg
            other = as_tensor_arg(other)
        if alpha != 1:
            return _inplace_binary(cls, alpha=alpha)(self, other)
        return _inplace_binary(cls)(self, other)
    fn.__name__ = cls.__name__
    return fn


_install()
