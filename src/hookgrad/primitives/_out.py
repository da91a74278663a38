"""PyTorch's ``out=`` argument, in one place: every public function whose PyTorch signature has ``out`` takes it
through :func:`takes_out`, which writes the result into the given tensor(s) and returns them.

PyTorch's rules (aten's out= kernels and the autograd wrappers around them):
  * out is a Tensor (a tuple/list of them, one per output, for max(dim)/sort/topk/...); anything else TypeError;
  * under grad mode, an op whose result would require grad (an input requires grad) or an out that requires grad
    raises "functions with out=... arguments don't support automatic differentiation";
  * the result's dtype must cast to out's (no float -> integral, no non-bool -> bool); index outputs are Long;
    factories (zeros, arange, randn, ...) take out's dtype, and refuse a different explicit dtype;
  * an out of another shape is resized (with the deprecation UserWarning when it had elements); the copy bumps
    out's version counter once.
"""
import functools
import inspect
import warnings

import numpy as np

from .._tensor import Tensor
from ..autograd import forward_ad as _fwad

_RESIZE_WARNING = ("An output with one or more elements was resized since it had shape {}, which does not match the "
                   "required output shape {}. This behavior is deprecated, and in a future PyTorch release outputs "
                   "will not be resized unless they have zero elements. You can explicitly reuse an out tensor t by "
                   "resizing it, inplace, to zero elements with t.resize_(0).")


def _scalar_name(dt):
    from .._errors import scalar_name
    return scalar_name(dt)


def _write_one(result, out, name, index_output=False, warn=True):
    from .._creation import can_cast
    from ..autograd.grad_mode import no_grad
    rd, od = result._data.dtype, out._data.dtype
    if index_output and rd != od:
        raise RuntimeError(f"Expected out tensor to have dtype {rd.name.replace('int64', 'long int')}, but got "
                           f"{np.dtype(od).name.replace('float32', 'float').replace('float64', 'double')} instead")
    if rd != od and not can_cast(result.dtype, out.dtype):
        raise RuntimeError(f"result type {_scalar_name(rd)} can't be cast to the desired output type "
                           f"{_scalar_name(od)}")
    shape = result._data.shape
    with no_grad():
        if out._data.shape != shape:
            if out._data.size and warn:            # (factories resize silently)
                warnings.warn(_RESIZE_WARNING.format(list(out._data.shape), list(shape)), UserWarning, stacklevel=4)
            version = out._vc[0]
            out.resize_(shape)
            out._data[...] = result._data
            out._vc[0] = version + 1                # one write, as PyTorch's resize-and-copy
        else:
            out.copy_(result)
    return out


def write_out(result, out, name, warn=True):
    """Write ``result`` (a tensor, or a tuple of them) into ``out``; returns out (for tuples, the result's named
    tuple holding the out tensors)."""
    from ..autograd.grad_mode import is_grad_enabled
    outs = out if isinstance(out, (tuple, list)) else (out,)
    multi = isinstance(result, tuple)
    results = result if multi else (result,)
    if multi != isinstance(out, (tuple, list)):
        raise TypeError(f"{name}(): argument 'out' must be {'tuple of Tensors' if multi else 'Tensor'}, not "
                        f"{type(out).__name__}")
    if len(outs) != len(results):
        raise TypeError(f"expected tuple of {len(results)} elements but got {len(outs)}")
    for o in outs:
        if not isinstance(o, Tensor):
            raise TypeError(f"{name}(): argument 'out' must be Tensor, not {type(o).__name__}")
    if _fwad._current_level >= 0 and any(t._fw_grad is not None for t in results + tuple(outs)):
        raise NotImplementedError(f"Trying to use forward AD with {name}_out that does not support it because it is "
                                  "an out= function")
    if is_grad_enabled() and any(r.requires_grad for r in results) or any(o.requires_grad for o in outs) and \
            is_grad_enabled():
        raise RuntimeError(f"{name}(): functions with out=... arguments don't support automatic differentiation, "
                           "but one of the arguments requires grad.")
    written = []
    for r, o in zip(results, outs):             # (a loop, not a comprehension: the warning's stacklevel)
        written.append(_write_one(r, o, name, index_output=multi and r._data.dtype == np.int64, warn=warn))
    if not multi:
        return written[0]
    return tuple(written) if type(result) is tuple else type(result)(*written)


def takes_out(fn, name=None):
    """``fn`` with PyTorch's out=: called without out, its result written into out (see the module's doc). ``fn``
    declares ``out=None`` (its signature stays PyTorch's); a call without out costs one dict lookup."""
    name = name or fn.__name__
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        params = {}
    factory = "dtype" in params and "requires_grad" in params
    p = params.get("out")
    at = list(params).index("out") if p is not None and p.kind == p.POSITIONAL_OR_KEYWORD else None

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        out = kwargs.pop("out", None)
        if at is not None and len(args) > at:           # out by position (torch.norm, tensordot)
            if out is not None:
                raise TypeError(f"{name}() got multiple values for argument 'out'")
            out, args = args[at], args[:at] + args[at + 1:]
            if args[at:]:
                kwargs.update(zip(list(params)[at + 1:], args[at:]))
                args = args[:at]
        if out is None:
            return fn(*args, **kwargs)

        if factory and isinstance(out, Tensor):
            dt = kwargs.get("dtype")
            if dt is None:
                kwargs["dtype"] = out.dtype
            elif dt != out.dtype:
                raise RuntimeError(f"dtype {_scalar_name(dt.np)} does not match dtype of out parameter "
                                   f"({_scalar_name(out._data.dtype)})")
        return write_out(fn(*args, **kwargs), out, name, warn=not factory)
    wrapper._takes_out = True
    return wrapper


# functions PyTorch gives out= whose hookgrad definition does not declare it (out= is added to their signature)
OUT_NAMES = {
    "torch": frozenset("""
    addmm alias_copy all amax amin aminmax any arctan2 argmax argmin argsort atan2 bernoulli bitwise_and
    bitwise_not bitwise_or bitwise_xor bmm bucketize clamp_max clamp_min column_stack complex conj_physical
    cummax cummin cumprod cumsum detach_copy diag diagonal_copy diff dot dstack eq expand_copy floor_divide
    fmax fmin fmod gather ge ger greater greater_equal gt hardshrink histc histogram hstack index_add
    index_copy index_reduce index_select isin isneginf isposinf le lerp less less_equal log_softmax
    logcumsumexp logical_and logical_not logical_or logical_xor logsumexp lt masked_select matmul maximum
    mean minimum mm msort multinomial mv nanmean nanquantile nansum narrow_copy ne nonzero nonzero_static
    not_equal outer permute_copy polar pow prod quantile remainder renorm round row_stack scatter
    scatter_add scatter_reduce select_copy slice_copy slice_scatter softmax sort split_copy
    split_with_sizes_copy square squeeze_copy std sum t_copy take take_along_dim threshold topk
    transpose_copy tril triu unbind_copy unfold_copy unsqueeze_copy var view_copy vstack where
    """.split()),
    "linalg": frozenset("matmul matrix_norm norm vecdot".split()),
}


def _with_out_param(fn):
    sig = inspect.signature(fn)
    params = list(sig.parameters.values())
    at = next((i for i, p in enumerate(params) if p.kind == p.VAR_KEYWORD), len(params))
    params.insert(at, inspect.Parameter("out", inspect.Parameter.KEYWORD_ONLY, default=None))
    fn.__signature__ = sig.replace(parameters=params)
    return fn


def install(namespace, ns="torch", prefix=""):
    """Wrap every public function of ``namespace`` (a module's dict) that declares ``out`` or that PyTorch gives
    out= (OUT_NAMES[ns])."""
    extra = OUT_NAMES.get(ns, ())
    for k, v in list(namespace.items()):
        if k.startswith("_") or not inspect.isfunction(v) or getattr(v, "_takes_out", False):
            continue
        try:
            p = inspect.signature(v).parameters.get("out")
        except (TypeError, ValueError):
            continue
        if p is not None and p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD):
            namespace[k] = takes_out(v, prefix + v.__name__)
        elif p is None and k in extra:
            namespace[k] = _with_out_param(takes_out(v, prefix + v.__name__))


def share(src, dst, names):
    """Where the namespace ``dst`` (nn.functional) holds, under one of torch's public names ``names``, the
    function that ``src`` (torch) wraps, give ``dst`` torch's object itself, so that ``F.pdist is torch.pdist``
    as in PyTorch (a helper the module imported for its own use is left alone)."""
    outer = {id(inspect.unwrap(v)): v for v in src.values()
             if inspect.isfunction(v) and getattr(v, "__wrapped__", None) is not None}
    for k, v in list(dst.items()):
        if k in names and inspect.isfunction(v):
            w = outer.get(id(inspect.unwrap(v)))
            if w is not None:
                dst[k] = w
