"""vmap's batching rules: each runs an op once on the whole batch (the values of the top level's
BatchedTensors, batch dim at 0), or decomposes it into ops that have rules. A rule returns NotImplemented
where it does not cover a case; the op then runs once per sample (``_batched.fallback``).

Families: elementwise ops (operands padded so that broadcasting lines up behind the batch dim), ops with
dims (a logical dim d >= 0 is physical d + 1; negative dims stay), views and reshapes, indexing, matmul and
the products built on it, linear/conv/norms/attention/losses from nn.functional, and the random ops
(vmap's ``randomness``)."""
import functools
import inspect

from ._batched import (BatchedTensor, level_info, inplace_error, fallback, RULES, INPLACE_PHYSICAL,
                       unbatched_self_error, _key)


def _t():
    import hookgrad
    return hookgrad


def _F():
    import hookgrad.nn.functional as F
    return F


def _is_tensor(x):
    from .._tensor import Tensor
    return isinstance(x, (Tensor, BatchedTensor))


def at(x, level):
    return type(x) is BatchedTensor and x._level == level


def lrank(x, level):
    if at(x, level):
        return x._value.dim() - 1
    return x.dim() if _is_tensor(x) else 0


def wrap(out, level):
    if _is_tensor(out):
        return BatchedTensor(out, level)
    if isinstance(out, tuple):
        parts = [wrap(o, level) for o in out]
        return type(out)(*parts) if hasattr(out, "_fields") else type(out)(parts)
    if isinstance(out, list):
        return [wrap(o, level) for o in out]
    return out


def bsize(level):
    return level_info(level)[1]


def pad(v, extra):
    """``v`` (batch at 0) with ``extra`` size-1 dims after the batch dim."""
    for _ in range(extra):
        v = v.unsqueeze(1)
    return v


def value(x, level):
    """The batch of ``x`` at ``level``, batch at dim 0; an unbatched tensor is expanded (a view)."""
    if at(x, level):
        return x._value
    return x.unsqueeze(0).expand(bsize(level), *x.shape)


def check_dim(d, r):
    n = max(r, 1)
    if not -n <= d < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {d})")


def shift(d, r):
    """The physical dim of logical dim ``d`` of a rank-``r`` tensor (batch dim in front)."""
    if isinstance(d, (list, tuple)):
        return type(d)(shift(e, r) for e in d)
    check_dim(d, r)
    return d + 1 if d >= 0 else d


def norm_dim(d, r):
    check_dim(d, r)
    return d % max(r, 1)


def register(*names):
    def deco(fn):
        for n in names:
            RULES[n] = fn
        return fn
    return deco


# ------------------------------------------------------------------ elementwise
_ELEMENTWISE = """abs absolute acos arccos acosh arccosh add addcdiv addcmul angle asin arcsin asinh arcsinh atan arctan
atan2 arctan2 atanh arctanh bitwise_and bitwise_not bitwise_or bitwise_xor bitwise_left_shift bitwise_right_shift ceil
clamp clip clamp_min clamp_max conj conj_physical copysign cos cosh deg2rad digamma div divide true_divide eq erf erfc
erfinv exp exp2 expm1 float_power floor floor_divide fmax fmin fmod frac ge greater_equal gt greater hypot i0 igamma
igammac imag isfinite isinf isnan isneginf isposinf isreal ldexp le less_equal lerp lgamma log log10 log1p log2
logaddexp logaddexp2 logical_and logical_not logical_or logical_xor logit lt less maximum minimum mul multiply mvlgamma
nan_to_num ne not_equal neg negative nextafter polygamma positive pow rad2deg real reciprocal relu remainder round
rsqrt rsub sgn sigmoid sign signbit sin sinc sinh sqrt square sub subtract tan tanh trunc fix xlogy where masked_fill
heaviside selu celu relu6 hardtanh threshold hardshrink softshrink tanhshrink resolve_conj resolve_neg
contiguous clone detach float double half bfloat16 int long short bool byte char to type type_as cpu cuda
requires_grad_ zero_ fill_ copy_ clamp_ masked_fill_ detach_ uniform_ normal_
F.relu F.relu6 F.elu F.selu F.celu F.leaky_relu F.gelu F.silu F.mish F.softplus F.hardtanh F.hardswish
F.hardsigmoid F.logsigmoid F.softsign F.tanhshrink F.softshrink F.hardshrink F.threshold F.sigmoid F.tanh
F.prelu F.rrelu F.elu_ F.relu_ F.leaky_relu_ F.hardtanh_ F.celu_ F.selu_ F.threshold_""".split()
_OPS_SCALAR_FIRST = {"rsub"}
_RANDOM_FILL = {"uniform_", "normal_"}


def _padded(level, r, args, kwargs):
    """The arguments with each batch at ``level`` padded to logical rank ``r`` (broadcasting lines up)."""
    return ([pad(a._value, r - lrank(a, level)) if at(a, level) else a for a in args],
            {k: pad(a._value, r - lrank(a, level)) if at(a, level) else a for k, a in kwargs.items()})


def elementwise(level, func, args, kwargs):
    new, newk = _padded(level, max([lrank(a, level) for a in (*args, *kwargs.values()) if _is_tensor(a)] or [0]),
                        args, kwargs)
    return wrap(func(*new, **newk), level)


def inplace(level, func, args, kwargs):
    """An elementwise in-place op: run once on the physical tensors, every operand (self too) padded to the
    largest logical rank, as functorch's rule: the op's own error where the others do not broadcast to self. A
    self not batched at the level: PyTorch's error (or, for some ops, the physical run's broadcast error)."""
    self = args[0]
    r = max(lrank(a, level) for a in (*args, *kwargs.values()) if _is_tensor(a))
    if not at(self, level):
        name = _key(func)
        if name not in INPLACE_PHYSICAL:
            raise unbatched_self_error(name, level, args)
    new, newk = _padded(level, r, args, kwargs)
    func(*new, **newk)
    return self


def _elementwise_rule(name):
    if name.endswith("_") and not name.startswith("F."):
        if name in _RANDOM_FILL:
            return lambda level, func, args, kwargs: random_op(level, func, args, kwargs, inplace_=True)
        return inplace
    return elementwise


for _n in _ELEMENTWISE:
    RULES[_n] = _elementwise_rule(_n)
    if not _n.endswith("_") and not _n.startswith("F."):
        RULES.setdefault(_n + "_", inplace)
for _n in ("add", "sub", "mul", "div", "floor_divide", "remainder", "pow", "bitwise_and", "bitwise_or", "bitwise_xor",
           "bitwise_left_shift", "bitwise_right_shift"):
    RULES[_n + "_"] = inplace
for _n in INPLACE_PHYSICAL:
    RULES.setdefault(_n, inplace)


# ------------------------------------------------------------------ signatures, for the rules over named parameters
_SIGS = {}


def _signature(key, func):
    sig = _SIGS.get(key)
    if sig is None:
        t = _t()
        name = key[2:] if key.startswith("F.") else key
        cands = ([getattr(_F(), name, None)] if key.startswith("F.") else
                 [getattr(t.Tensor, name, None), getattr(t, name, None)])
        cands.append(getattr(func, "_arg_checked", func))
        for c in cands:
            if c is None:
                continue
            try:
                s = inspect.signature(getattr(c, "_arg_checked", c))
            except (TypeError, ValueError):
                continue
            if not any(p.kind is p.VAR_POSITIONAL for p in s.parameters.values()):
                sig = s
                break
        _SIGS[key] = sig or False
    return sig or None


def bind(key, func, args, kwargs):
    sig = _signature(key, func)
    if sig is None:
        return None
    try:
        b = sig.bind(*args, **kwargs)
    except TypeError:
        return None
    return b


def call_bound(func, b):
    return func(*b.args, **b.kwargs)


def bound(rule, key, **kw):
    """The rule ``rule(level, func, b, **kw)`` over the call bound to the signature of ``key`` (or of ``key(func)``),
    every default filled in; a call that does not bind returns NotImplemented (the op runs once per sample)."""
    def run(level, func, args, kwargs):
        b = bind(key(func) if callable(key) else key, func, args, kwargs)
        if b is None:
            return NotImplemented
        b.apply_defaults()
        return rule(level, func, b, **kw)
    return run


def register_bound(*names, key=None):
    """``register`` for a rule over the bound call (``bound``): the signature is the first name's, or ``key``'s."""
    def deco(rule):
        register(*names)(bound(rule, names[0] if key is None else key))
        return rule
    return deco


def _first(b):
    """The bound call's first argument (the tensor an op is a method of)."""
    return b.arguments[next(iter(b.signature.parameters))]


def on_value(level, func, b, name="input"):
    """The op once on the whole batch: argument ``name`` (batched at ``level``) replaced by its batch value."""
    b.arguments[name] = b.arguments[name]._value
    return wrap(call_bound(func, b), level)


# ------------------------------------------------------------------ ops with dims
# name: (dim parameter, what dim=None means: "all" = every dim (tuple ok), "flat" = the flattened tensor,
#        None = not allowed / op default, rank change of the output for ``unsqueeze``-like ops)
_REDUCE_ALL = "sum mean nansum nanmean amax amin std var std_mean var_mean count_nonzero logsumexp norm".split()
_REDUCE_FLAT = "argmax argmin prod all any max min median nanmedian".split()
_DIM_OPS = """softmax log_softmax cumsum cumprod logcumsumexp cummax cummin sort argsort topk kthvalue mode
narrow select unbind split chunk tensor_split diff glu unflatten
F.softmax F.log_softmax F.softmin F.normalize F.glu F.cosine_similarity cosine_similarity F.pairwise_distance pairwise_distance""".split()


def _first_batched(args, level):
    return bool(args) and at(args[0], level)


def _only_batched(level, x, rest, kwargs):
    """Whether ``x`` is batched at ``level`` and no other argument is."""
    return at(x, level) and not any(at(a, level) for a in (*rest, *kwargs.values()))


def _reduce(level, func, args, kwargs, key, mode):
    if not _first_batched(args, level):
        return NotImplemented
    b = bind(key, func, args, kwargs)
    if b is None:
        return NotImplemented
    x = args[0]
    r = lrank(x, level)
    a = b.arguments
    dname = "dim" if "dim" in b.signature.parameters else None
    if dname is None:
        return NotImplemented
    d = a.get(dname)
    if d is not None and not (isinstance(d, (tuple, list)) and len(d) == 0):
        if r == 0:
            return NotImplemented
        a[dname] = shift(d, r)
        a[next(iter(b.signature.parameters))] = x._value
        return wrap(call_bound(func, b), level)
    # dim=None: every logical dim
    keep = a.get("keepdim", False)
    v = x._value
    if mode == "all" and r > 0:
        a[dname] = tuple(range(1, r + 1))
        a[next(iter(b.signature.parameters))] = v
        return wrap(call_bound(func, b), level)
    flat = v.reshape(v.shape[0], -1)
    if key in ("max", "min", "median", "nanmedian") and "dim" not in b.arguments:
        fn = {"max": _t().amax, "min": _t().amin}.get(key)
        if fn is not None:
            return wrap(fn(flat, 1), level)
        out = getattr(flat, key)(1)
        return wrap(out.values, level)
    a[dname] = 1
    a[next(iter(b.signature.parameters))] = flat
    out = call_bound(func, b)
    if keep:
        shape = (v.shape[0],) + (1,) * r
        out = tuple(o.reshape(shape) for o in out) if isinstance(out, tuple) else out.reshape(shape)
    return wrap(out, level)


for _n in _REDUCE_ALL:
    RULES[_n] = functools.partial(_reduce, key=_n, mode="all")
for _n in _REDUCE_FLAT:
    RULES[_n] = functools.partial(_reduce, key=_n, mode="flat")


def _dims(level, func, b, extra=0, names=("dim", "dims", "dim0", "dim1", "dim2", "start_dim", "end_dim", "source",
                                          "destination", "axis", "axis0", "axis1")):
    """An op whose dims are named parameters: every tensor argument batched (expanded where it is not), each
    dim shifted past the batch dim. ``extra``: the output's rank minus the input's (``unsqueeze``: 1)."""
    x = _first(b)
    if not _is_tensor(x):
        return NotImplemented
    r = lrank(x, level) + extra
    if r == 0:
        return NotImplemented
    for n in names:
        d = b.arguments.get(n)
        if d is not None and n in b.signature.parameters and not isinstance(d, str) and not _is_tensor(d):
            b.arguments[n] = shift(d, r)
    for n, v in list(b.arguments.items()):
        if _is_tensor(v):
            b.arguments[n] = value(v, level)
    for n in ("out",):
        if b.arguments.get(n) is not None:
            return NotImplemented
    return wrap(call_bound(func, b), level)


def _dims_given(level, func, b):
    """softmax/log_softmax/softmin with a dim (without one, the op's legacy implicit dim: once per sample)."""
    return NotImplemented if b.arguments.get("dim") is None else _dims(level, func, b)


for _n in _DIM_OPS:
    RULES[_n] = bound(_dims, _n)
for _n in ("F.softmax", "F.log_softmax", "F.softmin"):
    RULES[_n] = bound(_dims_given, _n)
for _n in ("transpose", "swapaxes", "swapdims", "movedim", "moveaxis", "diagonal", "gather", "scatter",
           "scatter_add", "scatter_reduce", "take_along_dim"):
    RULES[_n] = bound(_dims, _n)


def _index_op(level, func, b):
    """index_add/index_copy/index_fill: an unbatched 1-D index stays as it is; the rest is batched."""
    if at(b.arguments.get("index"), level):
        return NotImplemented
    x = b.arguments["input"]
    r = lrank(x, level)
    if r == 0:
        return NotImplemented
    b.arguments["dim"] = shift(b.arguments["dim"], r)
    for n, v in list(b.arguments.items()):
        if _is_tensor(v) and n != "index":
            b.arguments[n] = value(v, level)
    return wrap(call_bound(func, b), level)


for _n in ("index_add", "index_copy", "index_fill"):
    RULES[_n] = bound(_index_op, _n)
RULES["unsqueeze"] = bound(_dims, "unsqueeze", extra=1)
RULES["diag_embed"] = bound(_dims, "diag_embed", extra=1)


@register("index_select")
def _index_select(level, func, args, kwargs):
    b = bind("index_select", func, args, kwargs)
    if b is None or at(b.arguments.get("index"), level) or not at(b.arguments.get("input"), level):
        return NotImplemented
    x = b.arguments["input"]
    return wrap(x._value.index_select(shift(b.arguments["dim"], lrank(x, level)), b.arguments["index"]), level)


@register("squeeze")
def _squeeze(level, func, args, kwargs):
    x = args[0]
    r = lrank(x, level)
    dim = args[1] if len(args) > 1 else kwargs.get("dim")
    if len(args) > 2:
        dim = tuple(args[1:])
    if dim is None:
        dims = tuple(i + 1 for i, s in enumerate(x.shape) if s == 1)
        return wrap(x._value.squeeze(dims) if dims else x._value.view(x._value.shape), level)
    if r == 0:
        return wrap(x._value.view(x._value.shape), level)
    return wrap(x._value.squeeze(shift(tuple(dim) if isinstance(dim, (list, tuple)) else dim, r)), level)


@register_bound("flatten")
def _flatten(level, func, b):
    x = _first(b)
    if not at(x, level):
        return NotImplemented
    r = lrank(x, level)
    if r == 0:
        return wrap(x._value.reshape(x._value.shape[0], 1), level)
    s, e = norm_dim(b.arguments["start_dim"], r), norm_dim(b.arguments["end_dim"], r)
    return wrap(x._value.flatten(s + 1, e + 1), level)


@register("permute")
def _permute(level, func, args, kwargs):
    x = args[0]
    dims = args[1:] if len(args) > 1 else kwargs.get("dims")
    if len(dims) == 1 and isinstance(dims[0], (list, tuple)):
        dims = dims[0]
    r = lrank(x, level)
    return wrap(x._value.permute(0, *[norm_dim(d, r) + 1 for d in dims]), level)


@register("t")
def _t_rule(level, func, args, kwargs):
    x = args[0]
    r = lrank(x, level)
    if r > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {r}D")
    return wrap(x._value.transpose(1, 2) if r == 2 else x._value.view(x._value.shape), level)


RULES["adjoint"] = lambda level, func, args, kwargs: args[0].transpose(-2, -1).conj()


@register("tril", "triu", "tril_", "triu_", "trace_", "fill_diagonal_")
def _last_two(level, func, args, kwargs):
    if not at(args[0], level):
        return NotImplemented
    out = func(args[0]._value, *args[1:], **kwargs)
    return args[0] if out is args[0]._value else wrap(out, level)


@register("flip")
def _flip(level, func, args, kwargs):
    x = args[0]
    if not at(x, level) or lrank(x, level) == 0:
        return NotImplemented
    dims = _shape_args(args, kwargs, "dims")
    return wrap(x._value.flip(shift(tuple(dims), lrank(x, level))), level)


@register_bound("repeat_interleave")
def _repeat_interleave(level, func, b):
    if not at(b.arguments.get("input"), level) or at(b.arguments.get("repeats"), level):
        return NotImplemented
    if b.arguments.get("dim") is None:                 # the flattened tensor
        b.arguments["input"] = b.arguments["input"].flatten()
        b.arguments["dim"] = 0
        return call_bound(func, b)
    return _dims(level, func, b)


@register_bound("cross")
def _cross(level, func, b):
    if b.arguments.get("dim") is None:                 # the first dim of size 3 (PyTorch's legacy default)
        from ..primitives.linalg import _CROSS_WARNING
        from .._warnings import warn_once
        warn_once(_CROSS_WARNING)
        shape = b.arguments["input"].shape
        b.arguments["dim"] = next((i for i, n in enumerate(shape) if n == 3), -1)
    return _dims(level, func, b)


# torch.linalg's and torch.special's own functions (keyed "linalg.cross" & co.: see _batched._aliases)
RULES["linalg.diagonal"] = bound(_dims, "linalg.diagonal")
for _n in ("special.softmax", "special.log_softmax"):
    RULES[_n] = bound(_dims, _n)


@register_bound("linalg.cross")
def _linalg_cross(level, func, b):
    """linalg.cross (dim -1 by default) on the batches; inputs of two ranks: the op's error, from one sample."""
    a, o = b.arguments["input"], b.arguments["other"]
    r = lrank(a, level)
    if lrank(o, level) != r:
        return func(value(a, level)[0], value(o, level)[0])     # (the op's own error, from the first sample)
    if b.arguments.get("out") is not None:
        return NotImplemented
    b.arguments["dim"] = norm_dim(b.arguments["dim"], r) + 1        # (PyTorch's message names the physical dim)
    b.arguments["input"], b.arguments["other"] = value(a, level), value(o, level)
    return wrap(call_bound(func, b), level)


@register_bound("linalg.norm")
def _linalg_norm(level, func, b):
    """linalg.norm: without dim, the vector 2-norm of every element (no ord) or the norm of a 1-D / 2-D input
    (``ord``): the logical dims named, shifted past the batch dim."""
    x = b.arguments["input"]
    if not at(x, level) or b.arguments.get("out") is not None:
        return NotImplemented
    r, dim = lrank(x, level), b.arguments["dim"]
    if dim is None:
        if b.arguments["ord"] is not None and r not in (1, 2):
            return NotImplemented           # (the op's own error, from one sample)
        if b.arguments["ord"] is None:
            v = x._value.reshape(x._value.shape[0], -1)
            out = _t().linalg.vector_norm(v, 2, dim=1, dtype=b.arguments["dtype"])
            return wrap(out.reshape(-1, *([1] * r)) if b.arguments["keepdim"] else out, level)
        dim = tuple(range(r))
    b.arguments["dim"] = shift(dim, r)
    b.arguments["input"] = x._value
    return wrap(call_bound(func, b), level)


RULES["msort"] = lambda level, func, args, kwargs: args[0].sort(0).values
RULES["fliplr"] = lambda level, func, args, kwargs: args[0].flip(1)
RULES["flipud"] = lambda level, func, args, kwargs: args[0].flip(0)


@register_bound("roll")
def _roll(level, func, b):
    x = _first(b)
    if not at(x, level):
        return NotImplemented
    v = x._value
    dims = b.arguments.get("dims")
    if dims is None or dims == () or dims == []:
        return wrap(v.reshape(v.shape[0], -1).roll(b.arguments["shifts"], 1).reshape(v.shape), level)
    return wrap(v.roll(b.arguments["shifts"], shift(dims, lrank(x, level))), level)


def _shape_args(args, kwargs, name):
    shape = args[1:] if len(args) > 1 else kwargs.get(name, kwargs.get("size", kwargs.get("shape")))
    if len(shape) == 1 and isinstance(shape[0], (list, tuple)) or len(shape) == 1 and not isinstance(shape[0], int) \
            and hasattr(shape[0], "__len__"):
        shape = tuple(shape[0])
    return tuple(shape)


def _storage_size_for(sizes, strides):
    if 0 in sizes:
        return 0
    return 1 + sum((n - 1) * s for n, s in zip(sizes, strides))


def check_as_strided_slice(first, sizes, strides, offset):
    """PyTorch's checkBasicAsStridedValidForSlice: ``first.as_strided(sizes, strides, offset)`` (``first``: a
    sample of the batch) must stay within the memory that sample can reach."""
    hi = _storage_size_for(sizes, strides)
    if not hi:
        return
    base_off = first.storage_offset()
    base_hi = _storage_size_for(tuple(first.shape), tuple(first.stride()))
    call = f"result = tensor.as_strided({list(sizes)}, {list(strides)}, {offset}) can access memory outside of `tensor`."
    if not base_hi:
        raise RuntimeError(f"{call} `tensor` has no storage but the passed-in (size, stride, storage_offset) imply a "
                           "result with some storage. This is not supported inside of vmap, please try to rewrite the "
                           "`as_strided` call as a sequence of PyTorch view operations")
    if offset + hi > base_off + base_hi or offset < base_off:
        raise RuntimeError(f"{call} `result` can access some memory in range [{offset}, {offset + hi}], but `tensor` "
                           f"can only access some memory in range [{base_off}, {base_off + base_hi}]. This is not "
                           "supported inside of vmap, please try to rewrite the `as_strided` call as a sequence of "
                           "PyTorch view operations")


def batched_as_strided(v, sizes, strides, offset, nbatch=1):
    """Each sample of ``v`` (``nbatch`` batch dims in front) viewed with (sizes, strides) at ``offset`` plus the
    sample's distance from the first one (PyTorch's as_strided under vmap: the offset counts from the batch's
    storage offset)."""
    first = v
    for _ in range(nbatch):
        first = first.select(0, 0)
    check_as_strided_slice(first, sizes, strides, offset)
    return v.as_strided(tuple(v.shape[:nbatch]) + tuple(sizes), tuple(v.stride()[:nbatch]) + tuple(strides), offset)


@register("as_strided")
def _as_strided(level, func, args, kwargs):
    b = inspect.signature(_t().as_strided).bind(*args, **kwargs)
    x = b.arguments["input"]
    if not at(x, level) or type(x._value) is BatchedTensor:
        return NotImplemented
    v = x._value
    size, stride = tuple(b.arguments["size"]), tuple(b.arguments["stride"])
    if len(size) != len(stride):
        raise RuntimeError(f"Tensor.as_strided(size, stride, ...): size and stride must have the same length! Got "
                           f"size {list(size)} and stride {list(stride)}")
    off = b.arguments.get("storage_offset")
    return wrap(batched_as_strided(v, size, stride, v.storage_offset() if off is None else int(off)), level)


@register("view", "reshape")
def _view(level, func, args, kwargs):
    x = args[0]
    if not at(x, level):
        return NotImplemented
    v = x._value
    if len(args) == 2 and not isinstance(args[1], (int, tuple, list)) and not hasattr(args[1], "__len__"):
        return wrap(v.view(args[1]), level)            # view(dtype)
    shape = _shape_args(args, kwargs, "shape")
    if func.__name__ == "view":
        try:
            return wrap(v.view(v.shape[0], *shape), level)
        except RuntimeError:
            pass
    return wrap(v.reshape(v.shape[0], *shape), level)


@register("view_as", "reshape_as", "expand_as")
def _as(level, func, args, kwargs):
    x, other = args[0], args[1] if len(args) > 1 else kwargs["other"]
    name = func.__name__[:-3]
    if name == "expand":
        return x.expand(*other.shape)
    return getattr(x, name)(*other.shape)


@register("expand", "broadcast_to")
def _expand(level, func, args, kwargs):
    x = args[0]
    if not at(x, level):
        return NotImplemented
    sizes = _shape_args(args, kwargs, "size")
    r = lrank(x, level)
    if len(sizes) < r:
        raise RuntimeError(f"expand: the number of sizes provided ({len(sizes)}) must be greater or equal to the "
                           f"number of dimensions in the tensor ({r})")
    v = pad(x._value, len(sizes) - r)
    return wrap(v.expand(v.shape[0], *sizes), level)


@register("repeat")
def _repeat(level, func, args, kwargs):
    x = args[0]
    if not at(x, level):
        return NotImplemented
    sizes = _shape_args(args, kwargs, "repeats")
    v = pad(x._value, len(sizes) - lrank(x, level))
    return wrap(v.repeat(1, *sizes), level)


@register("cat", "concat", "concatenate", "stack")
def _cat(level, func, args, kwargs):
    tensors = args[0] if args else kwargs["tensors"]
    dim = args[1] if len(args) > 1 else kwargs.get("dim", kwargs.get("axis", 0))
    ranks = [lrank(t, level) for t in tensors]
    r = max(ranks) + (1 if func.__name__ == "stack" else 0)
    if r == 0 or "out" in kwargs:
        return NotImplemented
    vals = [value(t, level) for t in tensors]
    return wrap(func(vals, shift(dim, r)), level)


@register("new_zeros", "new_ones", "new_empty", "new_full", "new_tensor")
def _new(level, func, args, kwargs):
    x = args[0]
    if not at(x, level) or any(at(a, level) for a in args[1:]):
        return NotImplemented
    return getattr(x._value, func.__name__)(*args[1:], **kwargs)


@register("zeros_like", "ones_like", "empty_like", "full_like")
def _like(level, func, args, kwargs):
    if not at(args[0], level):
        return NotImplemented
    return wrap(func(args[0]._value, *args[1:], **kwargs), level)


# ------------------------------------------------------------------ indexing
def _index_tuple(index):
    return index if isinstance(index, tuple) else (index,)


def _adjacent_advanced(index):
    pos = [i for i, e in enumerate(index) if _is_tensor(e) or isinstance(e, (list,))]
    return not pos or pos[-1] - pos[0] == len(pos) - 1


@register("__getitem__")
def _getitem(level, func, args, kwargs):
    x, index = args
    index = _index_tuple(index)
    if any(at(e, level) and e.dtype == _t().bool for e in index):
        raise RuntimeError("vmap: We do not support batching operators that can support dynamic shape. Attempting "
                           "to batch over indexing with a boolean mask.")
    if any(at(e, level) for e in index):
        return _batched_index(level, x, index)
    if not at(x, level) or not _adjacent_advanced(index):
        return NotImplemented
    return wrap(x._value[(slice(None),) + index], level)


def _batched_index(level, x, index):
    """``x[i, j, ...]`` with integer index tensors batched at ``level`` (one advanced block from dim 0): one
    gather on the batch, the batch's own rows picked by an arange where ``x`` is batched too."""
    n = 0
    while n < len(index) and (_is_tensor(index[n]) or isinstance(index[n], int)):
        n += 1
    if not all(isinstance(e, slice) or e is Ellipsis for e in index[n:]):
        return NotImplemented
    vals = [value(e, level) if _is_tensor(e) else e for e in index]
    if at(x, level):
        nd = max(v.dim() for v in vals if _is_tensor(v))
        t = _t()
        vals = [t.arange(bsize(level)).reshape(-1, *([1] * (nd - 1)))] + vals
        x = x._value
    return wrap(x[tuple(vals)], level)


@register("__setitem__")
def _setitem(level, func, args, kwargs):
    x, index, val = args
    index = _index_tuple(index)
    if not at(x, level):        # PyTorch: index_put_ where an index is a tensor, else fill_ (a 0-dim value) or
        # copy_ of the indexed view
        raise RuntimeError(inplace_error("index_put_" if any(_is_tensor(e) or isinstance(e, list) for e in index)
                                         else "fill_" if lrank(val, level) == 0 else "inplace arithmetic"))
    if any(at(e, level) for e in index) or not _adjacent_advanced(index):
        return NotImplemented
    full = (slice(None),) + index
    if at(val, level):
        region = x._value[full].dim() - 1
        val = pad(val._value, region - lrank(val, level))
    x._value[full] = val
    return None


# ------------------------------------------------------------------ products
def _matmul_values(a, b, level):
    """matmul of two logical tensors, at least one batched at ``level``: the physical call."""
    ra, rb = lrank(a, level), lrank(b, level)
    t = _t()
    if ra == 0 or rb == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are {ra}D and {rb}D")
    if at(a, level) and not at(b, level):
        va = a._value
        if ra == 1:
            if rb == 1:
                return t.matmul(va, b)
            return t.matmul(va.unsqueeze(-2), b).squeeze(-2) if rb > 2 else t.matmul(va, b)
        if rb > ra:
            va = pad(va, rb - ra)
        return t.matmul(va, b)
    if at(b, level) and not at(a, level):
        vb = b._value
        if rb == 1:
            if ra == 1:
                return t.matmul(vb, a)
            return t.matmul(a, vb.unsqueeze(-1)).squeeze(-1) if ra > 2 else t.matmul(vb, a.transpose(-2, -1))
        if ra > rb:
            vb = pad(vb, ra - rb)
        return t.matmul(a, vb)
    va, vb = a._value, b._value
    if ra == 1 and rb == 1:
        return (va * vb).sum(-1)
    squeeze = []
    if ra == 1:
        va = va.unsqueeze(-2)
        squeeze.append(-2)
    if rb == 1:
        vb = vb.unsqueeze(-1)
        squeeze.append(-1)
    na, nb = va.dim(), vb.dim()
    va, vb = pad(va, max(na, nb) - na), pad(vb, max(na, nb) - nb)
    out = t.matmul(va, vb)
    for d in squeeze:
        out = out.squeeze(d)
    return out


@register("matmul", "__matmul__")
def _matmul(level, func, args, kwargs):
    if "out" in kwargs:
        return NotImplemented
    return wrap(_matmul_values(args[0], args[1], level), level)


@register("mm", "bmm", "mv", "dot", "inner", "vdot")
def _products(level, func, args, kwargs):
    """The fixed-rank products are matmul (inner: against the transposed other; vdot: conjugated)."""
    if kwargs or len(args) != 2:
        return NotImplemented
    a, b = args
    name = func.__name__
    if name == "vdot":
        a = a.conj()
    if name == "inner" and lrank(b, level) > 1:
        if lrank(b, level) > 2:
            return NotImplemented
        b = b.transpose(-2, -1)
    return _t().matmul(a, b)


RULES["outer"] = RULES["ger"] = lambda level, func, args, kwargs: args[0].unsqueeze(-1) * args[1]


@register_bound("addmm", "addmv", "baddbmm", "addbmm", "addr", key=lambda func: func.__name__)
def _addmm(level, func, b):
    a = b.arguments
    names = list(b.signature.parameters)
    inp, m1, m2 = a[names[0]], a[names[1]], a[names[2]]
    t = _t()
    prod = t.outer(m1, m2) if func.__name__ == "addr" else t.matmul(m1, m2)
    if func.__name__ == "addbmm":
        prod = prod.sum(0)
    beta, alpha = a.get("beta", 1), a.get("alpha", 1)
    prod = prod if alpha == 1 else prod * alpha
    return prod + (inp if beta == 1 else inp * beta) if beta != 0 else prod


@register("einsum")
def _einsum(level, func, args, kwargs):
    eq = args[0]
    ops = list(args[1] if len(args) == 2 and isinstance(args[1], (list, tuple)) else args[1:])
    if "->" not in eq:
        return NotImplemented
    lhs, rhs = eq.replace(" ", "").split("->")
    letters = set(eq)
    free = next(c for c in "zyxwvutsrqponmlkjihgfedcbaZYXWVUTSRQPONMLKJIHGFEDCBA" if c not in letters)
    terms = lhs.split(",")
    new_terms, vals = [], []
    for term, op in zip(terms, ops):
        if at(op, level):
            new_terms.append(free + term)
            vals.append(op._value)
        else:
            new_terms.append(term)
            vals.append(op)
    return wrap(_t().einsum(",".join(new_terms) + "->" + free + rhs, *vals), level)


# ------------------------------------------------------------------ nn.functional
@register_bound("F.linear", "linear")
def _linear(level, func, b):
    x, w, bias = b.arguments["input"], b.arguments["weight"], b.arguments.get("bias")
    if at(x, level) and not at(w, level) and not at(bias, level):
        return wrap(func(x._value, w, bias), level)
    out = _t().matmul(x, w.transpose(-1, -2) if lrank(w, level) > 1 else w)
    return out if bias is None else out + bias


def _conv(level, func, b, k):
    a = b.arguments
    x, w, bias = a["input"], a["weight"], a.get("bias")
    stride, padding, dilation, groups = a["stride"], a["padding"], a["dilation"], a["groups"]
    B = bsize(level)
    t = _t()
    conv = getattr(t.nn.functional, f"conv{k}d")
    rx = lrank(x, level)
    if not at(w, level) and not at(bias, level):
        v = x._value
        if rx == k + 1:                                     # unbatched conv input: the batch is N
            return wrap(conv(v, w, bias, stride, padding, dilation, groups), level)
        n = v.shape[1]
        out = conv(v.reshape(B * n, *v.shape[2:]), w, bias, stride, padding, dilation, groups)
        return wrap(out.reshape(B, n, *out.shape[1:]), level)
    # a batched weight: the batch becomes groups (functorch's rule)
    v = value(x, level)
    single = rx == k + 1
    if single:
        v = v.unsqueeze(1)
    n, c = v.shape[1], v.shape[2]
    v = v.transpose(0, 1).reshape(n, B * c, *v.shape[3:])
    wv = value(w, level)
    wv = wv.reshape(B * wv.shape[1], *wv.shape[2:])
    out = conv(v, wv, None, stride, padding, dilation, groups * B)
    out = out.reshape(n, B, -1, *out.shape[2:]).transpose(0, 1)
    if single:
        out = out.squeeze(1)
    out = BatchedTensor(out, level)
    if bias is not None:
        out = out + bias.reshape(-1, *([1] * k))
    return out


for _k in (1, 2, 3):
    RULES[f"F.conv{_k}d"] = RULES[f"conv{_k}d"] = bound(_conv, f"F.conv{_k}d", k=_k)


def _spatial(level, func, args, kwargs, k):
    """Pooling and the like: (N, C, *spatial) or (C, *spatial) inputs with the batch merged into N."""
    x = args[0] if args else kwargs.get("input")
    if not _only_batched(level, x, args[1:], kwargs):
        return NotImplemented
    v = x._value
    rest = args[1:]
    if lrank(x, level) == k + 1:
        return wrap(func(v, *rest, **kwargs), level)
    B, n = v.shape[0], v.shape[1]
    out = func(v.reshape(B * n, *v.shape[2:]), *rest, **kwargs)
    if isinstance(out, tuple):
        return wrap(tuple(o.reshape(B, n, *o.shape[1:]) for o in out), level)
    return wrap(out.reshape(B, n, *out.shape[1:]), level)


for _k in (1, 2, 3):
    for _n in ("max_pool%dd", "avg_pool%dd", "adaptive_avg_pool%dd", "adaptive_max_pool%dd", "lp_pool%dd",
               "max_pool%dd_with_indices"):
        RULES["F." + _n % _k] = RULES[_n % _k] = functools.partial(_spatial, k=_k)
RULES["F.pixel_shuffle"] = RULES["pixel_shuffle"] = RULES["F.pixel_unshuffle"] = RULES["pixel_unshuffle"] = \
    functools.partial(_spatial, k=2)


@register_bound("F.pad", "pad")
def _pad(level, func, b):
    a = b.arguments
    x = a["input"]
    if not at(x, level) or any(at(v, level) for v in a.values() if v is not x):
        return NotImplemented
    if a.get("mode", "constant") == "constant":
        return on_value(level, func, b)
    return _spatial(level, func, b.args, b.kwargs, len(a["pad"]) // 2)


def _affine(out, w, bias, shape=None):
    """A norm's affine step: ``out * w + bias`` (either may be None), ``w`` and ``bias`` reshaped to ``shape``."""
    if w is not None:
        out = out * (w if shape is None else w.reshape(shape))
    return out if bias is None else out + (bias if shape is None else bias.reshape(shape))


@register_bound("F.rms_norm", "rms_norm")
def _rms_norm(level, func, b):
    a = b.arguments
    if not at(a["input"], level) or at(a.get("weight"), level):
        return NotImplemented
    return on_value(level, func, b)


@register_bound("F.layer_norm", "layer_norm")
def _layer_norm(level, func, b):
    a = b.arguments
    x, shape, w, bias, eps = a["input"], a["normalized_shape"], a["weight"], a["bias"], a["eps"]
    if at(x, level) and not at(w, level) and not at(bias, level):
        return wrap(func(x._value, shape, w, bias, eps), level)
    return _affine(_F().layer_norm(x, shape, None, None, eps), w, bias)


_BN_ERROR = ("Batch norm got a batched tensor as input while the running_mean or running_var, which will be updated "
             "in place, were not batched.\nIf you are using a module and do not need eval mode, please set "
             "`track_running_stats` to be False.If you are using a prebuilt module and do not need eval mode, please "
             "see the functorch website for resources on how to patch your module to work with vmap")


@register_bound("F.batch_norm", "batch_norm")
def _batch_norm(level, func, b):
    a = b.arguments
    x, rm, rv, w, bias = a["input"], a["running_mean"], a["running_var"], a["weight"], a["bias"]
    training, momentum, eps = a["training"], a["momentum"], a["eps"]
    r = lrank(x, level)
    stat_shape = (-1,) + (1,) * (r - 2)
    dims = (0,) + tuple(range(2, r))
    if training:
        if at(x, level) and ((rm is not None and not at(rm, level)) or (rv is not None and not at(rv, level))):
            raise RuntimeError(_BN_ERROR)
        mean = x.mean(dims, keepdim=True)
        var = x.var(dims, unbiased=False, keepdim=True)
        if rm is not None or rv is not None:
            n = x.numel() // x.shape[1]
            t = _t()
            with t.no_grad():
                if rm is not None:
                    rm.mul_(1 - momentum).add_(mean.detach().reshape(-1) * momentum)
                if rv is not None:
                    rv.mul_(1 - momentum).add_(var.detach().reshape(-1) * (momentum * n / max(n - 1, 1)))
        out = (x - mean) / (var + eps).sqrt()
    else:
        out = (x - rm.reshape(stat_shape)) / (rv.reshape(stat_shape) + eps).sqrt()
    return _affine(out, w, bias, stat_shape)


@register_bound("F.group_norm", "group_norm")
def _group_norm(level, func, b):
    a = b.arguments
    x, g, w, bias, eps = a["input"], a["num_groups"], a["weight"], a["bias"], a["eps"]
    shape = x.shape
    y = x.reshape(shape[0], g, -1)
    mean = y.mean(-1, keepdim=True)
    var = y.var(-1, unbiased=False, keepdim=True)
    out = ((y - mean) / (var + eps).sqrt()).reshape(shape)
    return _affine(out, w, bias, (-1,) + (1,) * (len(shape) - 2))


@register_bound("F.embedding", "embedding")
def _embedding(level, func, b):
    if func.__name__ == "embedding" and not getattr(func, "__module__", "").startswith("hookgrad.nn"):
        return NotImplemented                # torch.embedding(weight, input): the loop
    if at(b.arguments["weight"], level) or b.arguments.get("max_norm") is not None:
        return NotImplemented
    return on_value(level, func, b)


@register_bound("F.scaled_dot_product_attention", "scaled_dot_product_attention")
def _sdpa(level, func, b):
    a = b.arguments
    if a.get("dropout_p", 0.0):
        return NotImplemented
    q, k, v = a["query"], a["key"], a["value"]
    r = max(lrank(q, level), lrank(k, level), lrank(v, level))
    for n in ("query", "key", "value", "attn_mask"):
        t = a.get(n)
        if t is not None:
            a[n] = pad(value(t, level), r - lrank(t, level))
    return wrap(call_bound(func, b), level)


# losses: the elementwise loss (reduction="none") once on the batch, then the reduction per sample
_POINTWISE_LOSSES = ("mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "binary_cross_entropy",
                     "binary_cross_entropy_with_logits", "soft_margin_loss", "kl_div", "poisson_nll_loss")


def _reduce_loss(out, reduction, x):
    if reduction == "mean":
        return out.mean()
    if reduction == "sum":
        return out.sum()
    if reduction == "batchmean":
        return out.sum() / x.shape[0] if x.dim() else out.sum()
    return out


def _pointwise_loss(level, func, b):
    a = b.arguments
    if a.get("size_average") is not None or a.get("reduce") is not None:
        return NotImplemented
    reduction = a.get("reduction", "mean")
    a["reduction"] = "none"
    x = a["input"]
    out = elementwise(level, func, b.args, b.kwargs)
    return _reduce_loss(out, reduction, x)


for _n in _POINTWISE_LOSSES:
    RULES["F." + _n] = bound(_pointwise_loss, "F." + _n)


def _nll(level, logp, target, weight, ignore_index, reduction, label_smoothing=0.0):
    if weight is not None or label_smoothing:
        return NotImplemented
    cdim = 1 if logp.dim() >= 2 else 0
    if target.is_floating_point():                          # class probabilities
        out = -(target * logp).sum(cdim)
        return _reduce_loss(out, reduction, logp)
    keep = (target != ignore_index)
    safe = target * keep
    picked = -logp.gather(cdim, safe.unsqueeze(cdim)).squeeze(cdim) * keep
    if reduction == "mean":
        return picked.sum() / keep.sum()
    return _reduce_loss(picked, reduction, logp)


@register_bound("F.cross_entropy", "F.nll_loss", key=lambda func: "F." + func.__name__)
def _cross_entropy(level, func, b):
    a = b.arguments
    if a.get("size_average") is not None or a.get("reduce") is not None:
        return NotImplemented
    x = a["input"]
    logp = _F().log_softmax(x, 1 if x.dim() >= 2 else 0) if func.__name__ == "cross_entropy" else x
    return _nll(level, logp, a["target"], a.get("weight"), a.get("ignore_index", -100), a.get("reduction", "mean"),
                a.get("label_smoothing", 0.0))


# nn.functional's Python functions written over the public ops: their body runs on the BatchedTensors (functorch's
# decompositions); one that reads an internal of its argument (AttributeError) runs once per sample instead
_COMPOSITE = ("multi_head_attention_forward", "bilinear", "local_response_norm",
              "triplet_margin_loss", "margin_ranking_loss", "hinge_embedding_loss", "cosine_embedding_loss",
              "gaussian_nll_loss", "multilabel_soft_margin_loss")


def _composite(level, func, args, kwargs):
    body = getattr(func, "_arg_checked", None)
    if body is None:
        return NotImplemented
    try:
        return body(*args, **kwargs)
    except (AttributeError, TypeError):     # a primitive's own body, which only takes Tensors
        return NotImplemented


for _n in _COMPOSITE:
    RULES["F." + _n] = _composite


# ------------------------------------------------------------------ randomness
_RANDOM_ERROR = ("vmap: called random operation while in randomness error mode. Please either use the 'same' or "
                 "'different' randomness flags on vmap or perform the randomness operation out of vmap")
# torch._vmap_internals' legacy vmap (gradcheck's batched checks) runs with randomness "legacy": no random ops
_RANDOM_ERROR_LEGACY = ("vmap: We do not yet support calling random operations inside of vmap. Please perform random "
                        "operations outside of vmap as a workaround")


def _random_error(mode):
    return RuntimeError(_RANDOM_ERROR_LEGACY if mode == "legacy" else _RANDOM_ERROR)


def random_op(level, func, args, kwargs, inplace_=False):
    mode = level_info(level)[2]
    if mode in ("error", "legacy"):
        raise _random_error(mode)
    x = args[0]
    if not _only_batched(level, x, args[1:], kwargs):
        return NotImplemented
    v = x._value
    if mode == "different":
        out = func(v, *args[1:], **kwargs)
        return x if inplace_ else wrap(out, level)
    sample = func(v.select(0, 0).clone() if inplace_ else v.select(0, 0), *args[1:], **kwargs)   # "same"
    if inplace_:
        v.copy_(sample.unsqueeze(0).expand(v.shape))
        return x
    return sample


for _n in ("rand_like", "randn_like", "randint_like", "bernoulli", "poisson", "multinomial", "normal",
           "bernoulli_", "exponential_", "geometric_", "cauchy_", "log_normal_", "random_"):
    RULES[_n] = functools.partial(random_op, inplace_=_n.endswith("_"))


@register_bound("F.dropout", "F.dropout1d", "F.dropout2d", "F.dropout3d", "F.alpha_dropout", "F.feature_alpha_dropout",
                "dropout", "alpha_dropout", "feature_dropout", "feature_alpha_dropout",
                key=lambda func: ("F." if func.__module__.startswith("hookgrad.nn") else "") + func.__name__)
def _dropout(level, func, b):
    a = b.arguments
    training = a.get("training", a.get("train", True))
    x = a["input"]
    if not training or a.get("p") == 0:
        return x
    mode = level_info(level)[2]
    if mode in ("error", "legacy"):
        raise _random_error(mode)
    if not at(x, level):
        return NotImplemented
    if "inplace" in a:
        a["inplace"] = False
    v = x._value
    if mode == "different":
        return on_value(level, func, b)
    a["input"] = _t().ones_like(v.select(0, 0))
    return x * call_bound(func, b)


# ------------------------------------------------------------------ torch.autograd.grad inside vmap (gradcheck's
# batched checks): one backward per sample of the batched arguments, no warning
@register("autograd.grad")
def _autograd_grad(level, func, args, kwargs):
    b = inspect.signature(func).bind(*args, **kwargs)
    b.arguments["retain_graph"] = True
    saved = _batched_warning_off()
    try:
        return fallback("autograd.grad", level, func, b.args, b.kwargs)
    finally:
        _batched_warning_restore(saved)


def _batched_warning_off():
    from . import _batched
    saved = _batched.fallback_warning[0]
    _batched.fallback_warning[0] = False
    return saved


def _batched_warning_restore(saved):
    from . import _batched
    _batched.fallback_warning[0] = saved
