"""vmap's batched tensor: the tensor a function sees per sample, holding the whole batch.

A ``BatchedTensor`` at vmap level ``L`` wraps ``_value``, whose dim 0 is the batch dim of level L; the
logical tensor (what ``f`` sees) is ``_value[b]`` for each sample b. ``_value`` is a hookgrad Tensor, or a
BatchedTensor of a lower (outer) level under nested vmaps, so every op is handled one level at a time,
as functorch does: the batching rule of the op (func/_rules.py) runs the op once on the values of the top
level, whose own ops are again dispatched if they are batched at a lower level. An op without a rule
falls back to a loop over the samples and a stack (with PyTorch's performance warning).

Ops reach a BatchedTensor through hookgrad's ``__torch_function__`` protocol (primitives/_dispatch.checked,
counted while BatchedTensors live), its Python operators, and its methods (``__getattr__``).
A BatchedTensor is no ``hookgrad.Tensor``: code that asks ``isinstance(x, Tensor)`` sees the difference.
"""
import functools
import itertools
import threading
import warnings

from ..primitives import _dispatch

__all__ = ["BatchedTensor", "is_batched"]


class _State(threading.local):
    def __init__(self):
        self.levels = []        # the active vmap levels, outermost first: [level, batch_size, randomness]


state = _State()
_next_level = itertools.count(1)
transform_depth = [lambda: 0]       # the differentiating transforms entered (set by func/_transforms.py)
_torch_levels = {}                  # level -> functorch's number for it (its depth among all transforms)


def push_level(batch_size, randomness):
    level = next(_next_level)
    _torch_levels[level] = len(state.levels) + transform_depth[0]() + 1
    state.levels.append((level, batch_size, randomness))
    return level


def pop_level():
    _torch_levels.pop(state.levels.pop()[0], None)


def level_info(level):
    for entry in state.levels:
        if entry[0] == level:
            return entry
    raise RuntimeError("vmap: a batched tensor escaped the vmap it was made in (its level is not active)")


def active_levels():
    return [entry[0] for entry in state.levels]


def is_batched(x):
    return type(x) is BatchedTensor


def _torch():
    import hookgrad
    return hookgrad


_ITEM = ("vmap: It looks like you're calling .item() on a Tensor. We don't support vmap over calling .item() on a "
         "Tensor, please try to rewrite what you're doing with other operations. If error is occurring somewhere "
         "inside PyTorch internals, please file a bug report.")
_CONTROL = ("vmap: It looks like you're attempting to use a Tensor in some data-dependent control flow. We don't "
            "support that yet, please file an issue at https://github.com/pytorch/pytorch/issues .")


class BatchedTensor:
    """A batch of tensors seen as one tensor of the batch's element shape (``torch._C._functorch``'s
    BatchedTensor): ``_value`` holds the batch at dim 0, ``_level`` is the vmap that made it."""
    __slots__ = ("_value", "_level", "__weakref__")

    def __init__(self, value, level):
        self._value = value
        self._level = level
        _dispatch.torch_function_objects += 1

    def __del__(self):
        try:
            _dispatch.torch_function_objects -= 1
        except (AttributeError, TypeError):     # interpreter shutdown
            pass

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return dispatch(_key(func), func, args, kwargs or {})

    # ---- what does not depend on the samples
    @property
    def shape(self):
        return self._value.shape[1:]

    def size(self, dim=None):
        shape = self.shape
        if dim is None:
            return shape
        n = len(shape)
        if not -max(n, 1) <= dim < max(n, 1):
            raise IndexError(f"Dimension out of range (expected to be in range of [{-max(n, 1)}, {max(n, 1) - 1}], "
                             f"but got {dim})")
        return shape[dim] if n else 1

    def dim(self):
        return self._value.dim() - 1

    ndimension = dim
    ndim = property(dim)

    def numel(self):
        n = 1
        for s in self.shape:
            n *= s
        return n

    nelement = numel

    def __len__(self):
        if self.dim() == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def __iter__(self):
        return iter(self.unbind(0))

    _fw_grad = None             # a BatchedTensor has no forward gradient of its own (forward_ad's check)
    dtype = property(lambda self: self._value.dtype)
    device = property(lambda self: self._value.device)
    layout = property(lambda self: self._value.layout)
    is_cuda = property(lambda self: False)
    is_sparse = property(lambda self: False)
    is_quantized = property(lambda self: False)
    is_meta = property(lambda self: False)
    is_nested = property(lambda self: False)
    requires_grad = property(lambda self: self._value.requires_grad)
    is_leaf = property(lambda self: self._value.is_leaf)
    grad_fn = property(lambda self: self._value.grad_fn)
    data = property(lambda self: self.detach())
    T = property(lambda self: self.permute(*range(self.dim() - 1, -1, -1)))
    mT = property(lambda self: self.transpose(-2, -1))
    H = property(lambda self: self.T.conj())
    mH = property(lambda self: self.mT.conj())
    real = property(lambda self: dispatch("real", _torch().real, (self,), {}))
    imag = property(lambda self: dispatch("imag", _torch().imag, (self,), {}))

    def is_floating_point(self):
        return self._value.is_floating_point()

    def is_complex(self):
        return self._value.is_complex()

    def element_size(self):
        return self._value.element_size()

    def is_contiguous(self, memory_format=None):
        return True

    def __repr__(self):
        return f"BatchedTensor(lvl={self._level}, bdim=0, value=\n{self._value!r}\n)"

    def __hash__(self):
        return id(self)

    # ---- what would need one sample's value: PyTorch's errors
    def item(self):
        raise RuntimeError(_ITEM)

    def __bool__(self):
        raise RuntimeError(_CONTROL)

    def __int__(self):
        raise RuntimeError(_ITEM)

    def __float__(self):
        raise RuntimeError(_ITEM)

    __index__ = __int__
    __complex__ = __float__

    def tolist(self):
        raise RuntimeError("Cannot access data pointer of Tensor that doesn't have storage")

    numpy = tolist

    def __array__(self, *args, **kwargs):
        raise RuntimeError("Cannot access data pointer of Tensor that doesn't have storage")

    def __format__(self, spec):
        return repr(self) if not spec else format(self.item(), spec)

    # ---- methods: the same rules as the functions
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        from .._tensor import Tensor
        attr = getattr(Tensor, name, None)
        if isinstance(attr, property):
            return dispatch(name, _method(name), (self,), {})
        if attr is None or not callable(attr) or name.startswith("_") and not hasattr(attr, "__code__"):
            # NOTE: hookgrad's internals (``_data``, slots) have no per-sample meaning: refused, never guessed
            raise AttributeError(f"'BatchedTensor' object has no attribute '{name}' (vmap hands functions a "
                                 "BatchedTensor, which has Tensor's public API)")
        return functools.partial(_call_method, name, self)

    def __setitem__(self, index, value):
        dispatch("__setitem__", _setitem, (self, index, value), {})

    def __getitem__(self, index):
        return dispatch("__getitem__", _getitem, (self, index), {})


def _getitem(x, index):
    return x[index]


def _setitem(x, index, value):
    x[index] = value


def _call_method(name, self, *args, **kwargs):
    return dispatch(name, _method(name), (self, *args), kwargs)


@functools.lru_cache(maxsize=None)
def _method(name):
    def call(self, *args, **kwargs):
        return getattr(self, name)(*args, **kwargs)
    call.__name__ = name
    return call


def _binary(name, op, reflected=False):
    def method(self, other):
        if reflected:
            return dispatch(name, op, (other, self), {})
        return dispatch(name, op, (self, other), {})
    method.__name__ = f"__{'r' if reflected else ''}{name}__"
    return method


def _unary(name, op):
    def method(self):
        return dispatch(name, op, (self,), {})
    method.__name__ = f"__{name}__"
    return method


def _install_operators():
    import operator as o
    binary = {"add": o.add, "sub": o.sub, "mul": o.mul, "truediv": o.truediv, "floordiv": o.floordiv,
              "mod": o.mod, "pow": o.pow, "matmul": o.matmul, "and": o.and_, "or": o.or_, "xor": o.xor,
              "lshift": o.lshift, "rshift": o.rshift}
    keys = {"truediv": "div", "floordiv": "floor_divide", "mod": "remainder", "and": "bitwise_and",
            "or": "bitwise_or", "xor": "bitwise_xor", "lshift": "bitwise_left_shift",
            "rshift": "bitwise_right_shift"}
    for name, op in binary.items():
        key = keys.get(name, name)
        setattr(BatchedTensor, f"__{name}__", _binary(key, op))
        setattr(BatchedTensor, f"__r{name}__", _binary(key, op, reflected=True))
        setattr(BatchedTensor, f"__i{name}__", _binary(key + "_", getattr(o, f"i{name}")))
    for name, key in (("lt", "lt"), ("le", "le"), ("gt", "gt"), ("ge", "ge"), ("eq", "eq"), ("ne", "ne")):
        setattr(BatchedTensor, f"__{name}__", _binary(key, getattr(o, name)))
    for name, key, op in (("neg", "neg", o.neg), ("pos", "positive", o.pos), ("abs", "abs", o.abs),
                          ("invert", "bitwise_not", o.invert)):
        setattr(BatchedTensor, f"__{name}__", _unary(key, op))


_install_operators()


_ALIASES = {}


def _aliases():
    """{function: its torch name} for hookgrad's public functions and Tensor methods whose ``__name__`` is another
    (made by a factory, or an alias: Tensor.eq_ is a ``method``)."""
    if not _ALIASES:
        import hookgrad
        import hookgrad.nn.functional as F
        methods = vars(hookgrad.Tensor)
        for prefix, ns in (("", vars(hookgrad)), ("F.", vars(F)), ("", methods)):
            for k, v in ns.items():
                public = not k.startswith("_") or ns is methods and k.startswith("__") and k.endswith("__")
                if callable(v) and public and getattr(v, "__name__", k) != k and not isinstance(v, type):
                    _ALIASES.setdefault(id(v), (v, prefix + k))
        # torch.linalg/special/fft functions named as a torch function or Tensor method that they are not
        # (linalg.cross's dim is keyword-only and -1 by default, cross's the first of size 3): their own names
        for prefix in ("linalg", "special", "fft"):
            for k, v in vars(getattr(hookgrad, prefix)).items():
                if k.startswith("_") or not callable(v) or isinstance(v, type) or id(v) in _ALIASES:
                    continue
                name = getattr(v, "__name__", k)
                other = getattr(hookgrad, name, None) or getattr(hookgrad.Tensor, name, None)
                if other is not None and other is not v and _signature(other) != _signature(v):
                    _ALIASES[id(v)] = (v, f"{prefix}.{k}")
    return _ALIASES


def _signature(f):
    import inspect
    try:
        return inspect.signature(getattr(f, "_arg_checked", f))
    except (TypeError, ValueError):
        return None


def _key(func):
    """The rule table's name for a function: its name; nn.functional's own functions get ``F.``."""
    alias = _aliases().get(id(func))
    if alias is not None and alias[0] is func:
        return alias[1]
    name = getattr(func, "__name__", None) or repr(func)
    module = getattr(func, "__module__", None) or ""
    if module.startswith("hookgrad.nn.functional"):
        return "F." + name
    if module.startswith("hookgrad.autograd"):
        return "autograd." + name
    return name


def top_level(args, kwargs):
    level = None
    for a in itertools.chain(args, kwargs.values()):
        for b in (a if type(a) in (list, tuple) else (a,)):
            if type(b) is BatchedTensor and (level is None or b._level > level):
                level = b._level
    return level


RULES = {}      # name -> batching rule, filled by func/_rules.py


def dispatch(key, func, args, kwargs):
    """``func(*args, **kwargs)`` for arguments batched at some levels: the top level's rule, or the loop."""
    level = top_level(args, kwargs)
    if level is None:
        return func(*args, **kwargs)
    rule = RULES.get(key)
    if rule is not None:
        out = rule(level, func, args, kwargs)
        if out is not NotImplemented:
            return out
    return fallback(key, level, func, args, kwargs)


# ------------------------------------------------------------------ the fallback: one call per sample
def _slice(x, level, b):
    if type(x) is BatchedTensor and x._level == level:
        return x._value.select(0, b)
    if type(x) in (list, tuple):
        return type(x)(_slice(y, level, b) for y in x)
    return x


def _stack_results(outs, level, name):
    first = outs[0]
    from .._tensor import Tensor
    if isinstance(first, (Tensor, BatchedTensor)):
        return BatchedTensor(_torch().stack(outs), level)
    if first is None:
        return None
    if isinstance(first, tuple):
        parts = [_stack_results([o[i] for o in outs], level, name) for i in range(len(first))]
        return type(first)(*parts) if hasattr(first, "_fields") else type(first)(parts)
    if isinstance(first, list):
        return [_stack_results([o[i] for o in outs], level, name) for i in range(len(first))]
    if all(o == first for o in outs[1:]):
        return first
    raise RuntimeError(f"Batching rule not implemented for aten::{name}. We could not generate a fallback.")


_FALLBACK_MSG = ("There is a performance drop because we have not yet implemented the batching rule for aten::{}. "
                 "Please file us an issue on GitHub so that we can prioritize its implementation.")
fallback_warning = [True]


def fallback(key, level, func, args, kwargs):
    name = (key[2:] if key.startswith("F.") else key).replace(".", "_")     # (aten's: linalg.det is linalg_det)
    if is_inplace(name) and args and not (type(args[0]) is BatchedTensor and args[0]._level == level):
        raise unbatched_self_error(name, level, args)
    if fallback_warning[0]:
        warnings.warn(_FALLBACK_MSG.format(name.strip("_")), UserWarning, stacklevel=4)
    _, size, _ = level_info(level)
    outs = []
    returns_self = True
    for b in range(size):
        a = [_slice(x, level, b) for x in args]
        k = {n: _slice(v, level, b) for n, v in kwargs.items()}
        out = func(*a, **k)
        returns_self = returns_self and len(a) > 0 and out is a[0]
        outs.append(out)
    if returns_self and size:
        return args[0]
    if not outs:
        raise RuntimeError(f"vmap: the batching rule of {name} has no sample to run on (batch size 0)")
    return _stack_results(outs, level, name)


# In-place ops whose self is not batched at the vmap level while an argument is, as PyTorch (functorch) answers
# them: these run on the physical tensors (batch dim in front), so that the op's own broadcast error tells
# ("output with shape [5] doesn't match the broadcast shape [4, 5]"); these raise "inplace arithmetic"'s error;
# these their own name's; every other one raises the in-place fallback's error ("aten::<op> ... at level <n>").
INPLACE_PHYSICAL = frozenset("""add_ __iadd__ atan2_ arctan2_ copysign_ bitwise_and_ bitwise_or_ bitwise_xor_
bitwise_left_shift_ bitwise_right_shift_ gcd_ lcm_ __iand__ __ior__ __ixor__ __ilshift__ __irshift__""".split())
_INPLACE_ARITHMETIC = frozenset("""sub_ __isub__ mul_ __imul__ div_ __itruediv__ divide_ true_divide_ multiply_ copy_
clamp_min_ clamp_max_ logical_and_ logical_or_ logical_xor_""".split())
_INPLACE_OWN_NAME = frozenset("fill_ index_fill_ index_add_ scatter_add_ scatter_reduce_ index_put_".split())
_ATEN_NAMES = {"__ipow__": "pow_", "__imod__": "remainder_", "__ifloordiv__": "floor_divide_",
               "__imatmul__": "matmul_"}


def is_inplace(name):
    """An in-place op's name (``add_``, ``__iadd__``)."""
    if name.startswith("__i") and name.endswith("__"):
        return name not in ("__init__", "__iter__", "__index__", "__int__", "__invert__")
    return name.endswith("_") and not name.endswith("__")


def unbatched_self_error(name, level, args=()):
    """PyTorch's error for the in-place op ``name`` whose self is not batched at ``level`` (an argument is)."""
    if name == "masked_fill_" and len(args) > 2 and not (type(args[1]) is BatchedTensor and args[1]._level == level):
        name = "masked_fill_.value"         # (a batched value, not a batched mask: the fallback's error)
    elif name in _INPLACE_ARITHMETIC or name == "masked_fill_":
        return RuntimeError(inplace_error("inplace arithmetic"))
    if name in _INPLACE_OWN_NAME:
        return RuntimeError(inplace_error(name))
    op = "aten::" + _ATEN_NAMES.get(name, name.split(".")[0])
    return RuntimeError(
        f"vmap: {op}(self, *extra_args) is not possible because there exists a Tensor `other` in extra_args that has "
        "more elements than `self`. This happened due to `other` being vmapped over but `self` not being vmapped "
        f"over at level {_torch_levels.get(level, level)}. Please try to use out-of-place operators instead of {op}. "
        "If said operator is being called inside the PyTorch framework, please file a bug report instead.")


def inplace_error(name):
    return (f"vmap: {name}(self, *extra_args) is not possible because there exists a Tensor `other` in extra_args "
            "that has more elements than `self`. This happened due to `other` being vmapped over but `self` not "
            "being vmapped over in a vmap. Please try to use out-of-place operators instead of "
            f"{name}. If said operator is being called inside the PyTorch framework, please file a bug report "
            "instead.")
