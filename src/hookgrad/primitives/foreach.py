"""``torch._foreach_*``: one op applied to each tensor of a list (what optimizers and test_autograd call).

Each is composed of the per-tensor op, so each result's grad_fn is that op's node (``ExpBackward0`` where PyTorch
shows its fused ``ForeachExpBackward0``); the values, the in-place semantics and the argument errors are
PyTorch's. ``_foreach_<op>_`` changes the tensors in place and returns the list it was given; the other forms
return a tuple. The second operand of a binary op is a number, a list of numbers, a Tensor or a list of Tensors.
"""
import numpy as np

from .._tensor import Tensor
from .._dtype import is_floating as _is_floating
from ..autograd.node import Node

_UNARY = ("abs", "acos", "asin", "atan", "ceil", "cos", "cosh", "erf", "erfc", "exp", "expm1", "floor", "frac",
          "lgamma", "log", "log10", "log1p", "log2", "neg", "reciprocal", "round", "sigmoid", "sign", "sin", "sinh",
          "sqrt", "tan", "tanh", "trunc")
_BINARY = ("add", "sub", "mul", "div", "maximum", "minimum", "pow", "clamp_min", "clamp_max")
_ALPHA = ("add", "sub")


def _check_list(tensors):
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("Tensor list must have at least one tensor.")
    return tensors


def _operands(tensors, other):
    """The second operand for each tensor: a list (of numbers or Tensors) pairs up, anything else repeats."""
    n = len(tensors)
    if isinstance(other, (list, tuple)):
        if other and isinstance(other[0], Tensor):
            if len(other) != n:
                raise RuntimeError(f"Tensor lists must have the same number of tensors, got {n} and {len(other)}")
        elif len(other) != n:
            raise RuntimeError("Tensor list must have same number of elements as scalar list.")
        return list(other)
    return [other] * n


def _binary_fn(name, t, o, kw):
    if name in ("maximum", "minimum") and not isinstance(o, Tensor):   # a number: PyTorch's clamp
        name = "clamp_min" if name == "maximum" else "clamp_max"
    return getattr(t, name)(o, **kw)


class _ForeachMaxMin(Node):
    """_foreach_maximum / _foreach_minimum of floating tensors and numbers: one node for the list (PyTorch's fused
    ForeachMaximumBackward0 / 1), saving the tensors and the number(s). Gradient per tensor: PyTorch's
    ``where(self == scalar, grad / 2, grad)``, zero where the number wins."""
    materialize_grads = False

    def forward(self, *xs):
        self.xs = xs
        op = np.maximum if self.maximum else np.minimum
        return tuple(op(x, x.dtype.type(s)) for x, s in zip(xs, self.per))

    def backward(self, *grads):
        out = []
        for g, x, s in zip(grads, self.xs, self.per):
            if g is None:
                out.append(None)
                continue
            lose = x < s if self.maximum else x > s
            f = np.where(x == s, 0.5, np.where(lose, 0.0, 1.0)).astype(x.dtype)
            out.append(g * Tensor._make(f))
        return tuple(out)


def _maxmin_node(name, which):
    return type(name, (_ForeachMaxMin,), {"__module__": __name__, "maximum": name.startswith("ForeachMax"),
                                           "saved_attrs": (which, "self=xs")}, name=name)


_MAXMIN = {(op, lst): _maxmin_node(f"Foreach{op.title()}Backward{int(lst)}", ("scalars=per" if lst else "scalar=per[0]"))
           for op in ("maximum", "minimum") for lst in (False, True)}


def _make_unary(name):
    def fn(self):
        return tuple(getattr(t, name)() for t in _check_list(self))

    def fn_(self):
        for t in _check_list(self):
            getattr(t, name + "_")()
        return self
    return fn, fn_


def _make_binary(name):
    def fn(self, other, *, alpha=None):
        if name == "pow" and not isinstance(self, (list, tuple)):      # a number to the power of each tensor
            return tuple(self ** t for t in _check_list(other))
        tensors = _check_list(self)
        kw = {} if alpha is None else {"alpha": alpha}
        ops = _operands(tensors, other)
        if name in ("maximum", "minimum") and not isinstance(ops[0], Tensor) and \
                all(_is_floating(t._data.dtype) for t in tensors):     # numbers: one fused node, as PyTorch
            cls = _MAXMIN[name, isinstance(other, (list, tuple))]
            return cls.apply(*tensors, per=tuple(ops))
        return tuple(_binary_fn(name, t, o, kw) for t, o in zip(tensors, ops))

    def fn_(self, other, *, alpha=None):
        tensors = _check_list(self)
        kw = {} if alpha is None else {"alpha": alpha}
        for t, o in zip(tensors, _operands(tensors, other)):
            if name in ("maximum", "minimum"):
                if isinstance(o, Tensor):
                    t.copy_(getattr(t, name)(o))
                else:
                    getattr(t, "clamp_min_" if name == "maximum" else "clamp_max_")(o)
            else:
                getattr(t, name + "_")(o, **kw)
        return self
    return fn, fn_


def _make_pointwise(name):
    """addcmul / addcdiv: self + value * t1 (op) t2, value a number or one per tensor."""
    def fn(self, tensor1, tensor2, value=1):
        tensors = _check_list(self)
        return tuple(getattr(t, name)(a, b, value=v) for t, a, b, v in
                     zip(tensors, tensor1, tensor2, _operands(tensors, value)))

    def fn_(self, tensor1, tensor2, value=1):
        tensors = _check_list(self)
        for t, a, b, v in zip(tensors, tensor1, tensor2, _operands(tensors, value)):
            getattr(t, name + "_")(a, b, value=v)
        return self
    return fn, fn_


def _foreach_lerp(self, tensors1, weight):
    tensors = _check_list(self)
    return tuple(t.lerp(e, w) for t, e, w in zip(tensors, tensors1, _operands(tensors, weight)))


def _foreach_lerp_(self, tensors1, weight):
    tensors = _check_list(self)
    for t, e, w in zip(tensors, tensors1, _operands(tensors, weight)):
        t.lerp_(e, w)
    return self


def _foreach_norm(self, ord=2, dtype=None):
    from .reduce import vector_norm
    return tuple(vector_norm(t, ord, dtype=dtype) for t in _check_list(self))


def _foreach_zero_(self):
    for t in _check_list(self):
        t.zero_()
    return self


def _foreach_copy_(self, src, non_blocking=False):
    tensors = _check_list(self)
    for t, s in zip(tensors, _operands(tensors, list(src))):
        t.copy_(s, non_blocking)
    return self


__all__ = ["_foreach_lerp", "_foreach_lerp_", "_foreach_norm", "_foreach_zero_", "_foreach_copy_"]
for _name in _UNARY:
    globals()["_foreach_" + _name], globals()["_foreach_" + _name + "_"] = _make_unary(_name)
    __all__ += ["_foreach_" + _name, "_foreach_" + _name + "_"]
for _name in _BINARY:
    globals()["_foreach_" + _name], globals()["_foreach_" + _name + "_"] = _make_binary(_name)
    __all__ += ["_foreach_" + _name, "_foreach_" + _name + "_"]
for _name in ("addcmul", "addcdiv"):
    globals()["_foreach_" + _name], globals()["_foreach_" + _name + "_"] = _make_pointwise(_name)
    __all__ += ["_foreach_" + _name, "_foreach_" + _name + "_"]
for _n in __all__:
    globals()[_n].__name__ = globals()[_n].__qualname__ = _n
