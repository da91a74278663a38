"""torch.autograd.forward_ad: forward-mode AD with dual tensors.

A dual tensor is a tensor with a tangent (``t._fw_grad``) at the current level. While a level is active, every
primitive comes through ``op_hooks._apply_with_op_hooks`` (this module keeps an entry in ``_op_hooks``, as autocast
does), whose ``_tangent_step`` slot is :func:`_step`: it runs the op and gives its outputs their tangents. Code
without forward AD pays nothing (no level: no entry, and the op-hook check every op already makes stays false).

The tangent of an output comes from the primitive's own ``jvp(self, primals, tangents, out)``, written beside its
forward and backward, or, where none is written, from its backward formula by the transpose of a transpose:
``J t = d/du <J^T u, t>`` (the backward run on Tensors with a cotangent ``u`` that requires grad, then
differentiated with respect to ``u``), see :func:`_fallback`. :func:`fallback_ops` lists which is which.

>>> import hookgrad as torch, hookgrad.autograd.forward_ad as fwAD
>>> with fwAD.dual_level():
...     x = fwAD.make_dual(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 0.0]))
...     fwAD.unpack_dual(x.exp()).tangent
tensor([2.7183, 0.0000])
"""
import threading
import weakref

import numpy as np
from typing import NamedTuple, Optional

from .._tensor import Tensor
from .. import _dtype as D
from .._array import module_of as _module_of
from .grad_mode import _state, _DecoratorContextManager
from . import op_hooks as _OH
from .formulas import TENSORS
from .node import _NO_EDGE
from .saved import SavedTensor
from .views import make_view, _view_tangent as _view_tangent_slot

__all__ = ["UnpackedDualTensor", "enter_dual_level", "exit_dual_level", "make_dual", "unpack_dual", "dual_level"]

_current_level = -1
_ndarray = np.ndarray

Tensor._fw_grad = None          # a tensor's tangent at the current level (set in its __dict__ while it has one)

_duals = {}                     # id -> weak reference, for every live tensor given a tangent at the current level
# vmap's BatchedTensor tangents (func/_fwad.py, a layer above, fills this when it loads): None, or the module
_vmap_support = [None]
_hook_handle = [None]           # the _op_hooks entry kept while a level is active


class _FwTLS(threading.local):
    def __init__(self):
        self.enabled = True     # torch._C._set_fwd_grad_enabled


class _FwOff:
    """A block that computes no tangents (a custom Function's forward, as PyTorch): see :func:`fw_off`."""
    __slots__ = ("prev",)

    def __enter__(self):
        self.prev = _fw.enabled
        _fw.enabled = False

    def __exit__(self, *exc):
        _fw.enabled = self.prev


class _NoOp:
    __slots__ = ()

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        pass


_NOOP = _NoOp()


def fw_off():
    """``with fw_off():`` computes no tangents in the block; without a level, a shared no-op (~0.1 us)."""
    return _NOOP if _current_level < 0 else _FwOff()


_fw = _FwTLS()
_fw_off = _FwOff()


def _is_fwd_grad_enabled():
    return _fw.enabled


class _set_fwd_grad_enabled(_DecoratorContextManager):
    """Turn the computation of tangents off (or on) for the block, as torch's private context manager."""

    def __init__(self, mode):
        self.prev = _fw.enabled
        _fw.enabled = bool(mode)

    def __enter__(self):
        pass

    def __exit__(self, exc_type, exc_value, traceback):
        _fw.enabled = self.prev


# ---------------------------------------------------------------------------------------------- levels

def enter_dual_level():
    """Enter a new forward grad level (only one at a time, as in PyTorch); return its number."""
    global _current_level
    if _current_level >= 0:
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    _current_level = 0
    _OH._tangent_step[0] = _step
    _hook_handle[0] = _OH.register_op_hook(_OH.OpHook())
    return 0


def exit_dual_level(*, level=None):
    """Exit the current level: every tangent of that level is deleted."""
    global _current_level
    if level is None:
        level = _current_level
    if level < 0:
        raise RuntimeError("Dual level must be a positive number.")
    if level != _current_level:
        raise RuntimeError("Trying to exit a forward AD level that was not the last one that was created. "
                           "This is not supported.")
    _current_level = level - 1
    _OH._tangent_step[0] = None
    h = _hook_handle[0]
    if h is not None:
        h.remove()
        _hook_handle[0] = None
    for ref in list(_duals.values()):
        t = ref()
        if t is not None:
            t.__dict__.pop("_fw_grad", None)
    _duals.clear()


class dual_level(_DecoratorContextManager):
    """Context manager for forward AD: ``with dual_level():`` enters a level and exits it (deleting its tangents)."""

    def __enter__(self):
        return enter_dual_level()

    def __exit__(self, exc_type, exc_value, traceback):
        exit_dual_level()


def _check_level(level, what):
    if level is None:
        level = _current_level
    if level < 0:
        return None
    if level != _current_level:
        raise RuntimeError(f"Invalid level given to {what}")
    return level


# ---------------------------------------------------------------------------------------------- dual tensors

class UnpackedDualTensor(NamedTuple):
    """``(primal, tangent)``: what :func:`unpack_dual` returns."""
    primal: Tensor
    tangent: Optional[Tensor]


def _set_tangent(t, tangent):
    t.__dict__["_fw_grad"] = tangent
    k = id(t)
    if k not in _duals:     # (a dead tensor's entry goes with it: the table stays the size of the live duals)
        _duals[k] = weakref.ref(t, lambda _, k=k: _duals.pop(k, None))


def _alias(tensor):
    """A view of the whole tensor (PyTorch's alias of make_dual / unpack_dual, whose grad_fn is ViewBackward0),
    made without tangents. NOTE: a dispatch mode sees aten::view here, PyTorch's sees aten::alias."""
    prev = _fw.enabled
    _fw.enabled = False
    try:
        return tensor.view(tensor.shape)
    finally:
        _fw.enabled = prev


def make_dual(tensor, tangent, *, level=None):
    """A new tensor aliased to ``tensor`` with ``tangent`` as its forward gradient (kept as it is)."""
    if level is None and _current_level < 0 or level is not None and level < 0:
        raise RuntimeError("Trying to create a dual Tensor for forward AD but no level exists, make sure to "
                           "enter_dual_level() first.")
    if not isinstance(tensor, Tensor):
        raise TypeError(f"make_dual(): argument 'tensor' (position 1) must be Tensor, not {type(tensor).__name__}")
    V = _vmap_support[0]
    batched = V is not None and V.is_batched(tangent)
    if not isinstance(tangent, Tensor) and not batched:
        raise TypeError(f"make_dual(): argument 'tangent' (position 2) must be Tensor, not {type(tangent).__name__}")
    if not (tensor.is_floating_point() or tensor.is_complex()):
        raise ValueError(f"Expected primal to be floating point or complex, but got: {tensor.dtype}")
    if not (tangent.is_floating_point() or tangent.is_complex()):
        raise ValueError(f"Expected tangent to be floating point or complex, but got: {tangent.dtype}")
    level = _check_level(level, "_make_dual")
    if tensor._fw_grad is not None:
        raise RuntimeError(f"Making a dual Tensor based on a Tensor that already has a forward gradient at the "
                           f"same level {level} is not supported.")
    if tangent._fw_grad is not None:
        raise RuntimeError(f"Setting a forward grad that itself has a forward gradient at the same level{level} is "
                           "not supported.")
    if tuple(tangent.shape) != tensor._data.shape:
        raise RuntimeError("Trying to set a forward gradient that has a different size than that of the original "
                           f"Tensor, this is not supported. Tensor is of size {list(tensor._data.shape)} while the "
                           f"given forward gradient is of size {list(tangent.shape)}.")
    out = _alias(tensor)
    _set_tangent(out, V.laid_out_like(tangent, tensor) if batched else _laid_out_like(tangent, tensor))
    return out


def _laid_out_like(tangent, tensor):
    """The tangent as it is when it has the primal's layout (strides, and a storage of the primal's size), else a
    copy laid out like the primal within a storage like the primal's (PyTorch's make_dual: as_strided on the dual
    then works on the tangent too)."""
    if tangent._bits != tensor._bits:
        # (PyTorch's layout check compares the conjugate and negative bits too: a copy, with the primal's)
        tangent = Tensor._make(_module_of(tangent._data).array(tangent._data, copy=True))
        tangent._bits = tensor._bits
    d, g = tensor._data, tangent._data
    root = d
    while getattr(root, "base", None) is not None:
        root = root.base
    groot = g
    while getattr(groot, "base", None) is not None:
        groot = groot.base
    if type(d) is not _ndarray or type(root) is not _ndarray or g.dtype != d.dtype or (
            g.strides == d.strides and groot.nbytes == root.nbytes):
        return tangent
    off = d.__array_interface__["data"][0] - root.__array_interface__["data"][0]
    if off < 0 or root.nbytes % d.itemsize or not root.flags.c_contiguous:
        return tangent
    buf = np.zeros(root.nbytes // d.itemsize, g.dtype)
    view = np.ndarray(d.shape, g.dtype, buffer=buf, offset=off, strides=d.strides)
    view[...] = g
    t = Tensor._make(view)
    t._base = Tensor._make(buf)
    return t


def unpack_dual(tensor, *, level=None):
    """``(primal, tangent)`` of a dual tensor: the primal as a view of ``tensor``, the tangent as it is (or None)."""
    level = _check_level(level, "_unpack_dual")
    if level is None:
        return UnpackedDualTensor(tensor, None)
    tangent = tensor._fw_grad
    if tangent is None:
        return UnpackedDualTensor(tensor, None)
    return UnpackedDualTensor(_alias(tensor), tangent)


# ---------------------------------------------------------------------------------------------- the tangent step

def _run(cls, args, params, run):
    return run(*args) if run is not None else cls.apply(*args, **(params or {}))


def _float(t):
    k = t._data.dtype.kind
    return k == "f" or k == "c" or k == "V"


_JVP_USED = {}          # class -> "explicit" | "fallback": what computed the tangents this process (tests, docs)


def _step(cls, args, params, run):
    """Run primitive ``cls`` on ``args`` and give its floating outputs their tangents (``op_hooks._tangent_step``)."""
    if not _fw.enabled:
        return _run(cls, args, params, run)
    tans = None
    for i, a in enumerate(args):
        if isinstance(a, Tensor) and a._fw_grad is not None:
            if tans is None:
                tans = [None] * len(args)
            tans[i] = a._fw_grad
    if tans is None:
        return _run(cls, args, params, run)
    # The tangent needs the op's node (its saved values, what forward set on it): a dual input that does not
    # require grad is replaced by a probe, a leaf sharing its data that does, so that the op records its node.
    grad_on = _state.enabled
    records = grad_on and any(isinstance(a, Tensor) and a.requires_grad for a in args)
    probed = []
    pargs = list(args)
    for i, t in enumerate(tans):
        if t is not None:
            a = args[i]
            if not (grad_on and a.requires_grad):
                pargs[i] = Tensor._make(a._data, True, None, 0, a._vc)
                probed.append(i)
    prev = _state.enabled
    _state.enabled = True
    try:
        out = _run(cls, tuple(pargs), params, run)
    finally:
        _state.enabled = prev
    single = type(out) is not tuple
    outs = (out,) if single else out
    node = None
    for o in outs:
        if isinstance(o, Tensor) and o.grad_fn is not None:
            node = o.grad_fn
            break
    if node is None:
        return out
    nrs = [o._output_nr if isinstance(o, Tensor) and o.grad_fn is node and _float(o) else None for o in outs]
    if probed and not records:      # the op records no graph: outputs without history, as it would have made them
        outs = tuple(Tensor._make(o._data, False, None, 0, o._vc) if isinstance(o, Tensor) else o for o in outs)
        out = outs[0] if single else outs
    _tangents(cls, node, args, params, tans, outs, nrs)
    if records and node._saved:
        _keep_saved_outputs(node, outs)
    if probed and records:          # the probes' edges go: the graph is the one the op would have recorded
            nf = list(node.next_functions)
            meta = list(node._in_meta)
            for i in probed:
                nf[i] = _NO_EDGE
                meta[i] = None
            node.next_functions = tuple(nf)
            node._in_meta = meta
    return out


def _keep_saved_outputs(node, outs):
    """An output the node saved for backward unpacks as the output itself while it has a tangent, so that a
    backward run inside the level (forward over reverse: gradgradcheck's check_fwd_over_rev) sees the tangent.
    NOTE: a reference cycle (node -> saved -> output -> node), made only for dual outputs."""
    for st in node._saved:
        if type(st) is SavedTensor and st._tensor is None and st._node_ref is not None:
            for o in outs:
                if isinstance(o, Tensor) and o.grad_fn is node and o._output_nr == st._output_nr \
                        and o._fw_grad is not None and o._data is st._data:
                    st._tensor = o
                    break


def _tangents(cls, node, args, params, tans, outs, nrs):
    """Compute and set the tangents of the node's differentiable outputs (``nrs``: their slots, or None)."""
    douts = [o if n is not None else None for o, n in zip(outs, nrs)]
    if not any(d is not None for d in douts):
        return
    V = _vmap_support[0]

    def compute(ts):
        level = None if V is None else V.top_level(ts)
        if level is None:
            return _tangent_values(cls, node, args, params, ts, outs, douts, nrs)
        return V.per_sample(level, compute, ts)     # a vmap BatchedTensor tangent: once per sample (each level)
    res = compute(tans)
    for o, t in zip(douts, res):
        if o is not None and t is not None:
            _set_tangent(o, t)


def _tangent_values(cls, node, args, params, tans, outs, douts, nrs):
    """The tangents of the node's outputs (None where an output has none), in the outputs' dtypes and shapes."""
    jvp = _jvp_of(cls)
    if jvp is not None:
        _JVP_USED[cls] = "explicit"
        node._fw_params = params
        res = node.jvp(args, tans, outs[0] if len(outs) == 1 else outs)
        if type(res) is not tuple:
            res = (res,)
    else:
        _JVP_USED[cls] = "fallback"
        res = _fallback(node, douts, nrs, tans)
    values = []
    for o, t in zip(douts, res):
        if o is None or t is None:
            values.append(None)
            continue
        if not isinstance(t, Tensor):
            t = Tensor._make(_module_of(o._data).asarray(t))
        d = t._data
        if d.dtype.kind == "c" and o._data.dtype.kind != "c":     # a real output of a complex input
            t = t.real
            d = t._data
        if d.shape != o._data.shape:
            t = t.expand(o._data.shape)
        if d.dtype != o._data.dtype and (d.dtype.kind != "f" or o._data.dtype.kind != "f"):
            # (a floating tangent keeps its own precision, as PyTorch: make_dual takes a tangent of another dtype)
            t = t.to(D._NP_TO_DT[o._data.dtype])
        values.append(t)
    return values


def _view_tangent(out, src, fn):
    """``out``, made by view replay ``fn`` of ``src``, got a batched tangent computed per sample: it becomes the
    same view of ``src``'s batched tangent (views.make_view calls this while ``out`` has a tangent)."""
    V = _vmap_support[0]
    t = src._fw_grad
    if V is None or not V.is_batched(t) or not V.is_batched(out._fw_grad):
        return
    prev = _fw.enabled
    _fw.enabled = False
    try:
        r = V.view_tangent(fn, t)
    finally:
        _fw.enabled = prev
    if r is not None:
        out.__dict__["_fw_grad"] = r


_JVPS = {}


def _jvp_of(cls):
    """The class's jvp formula, or None: one written for its own forward and backward (a subclass that
    redefines either does not inherit its parent's jvp)."""
    try:
        return _JVPS[cls]
    except KeyError:
        pass
    jvp = None
    for c in cls.__mro__:
        if "jvp" in c.__dict__:
            jvp = c.__dict__["jvp"]
            break
        if "forward" in c.__dict__ or "backward" in c.__dict__:
            break
    _JVPS[cls] = jvp
    return jvp


def _fallback(node, douts, nrs, tans):
    """The forward product from the backward formula: ``J t = d/du <J^T u, t>``. The backward runs on Tensors
    with a cotangent ``u`` per output that requires grad (J^T u is linear in u), and the engine differentiates
    ``sum_i <(J^T u)_i, t_i>`` with respect to ``u``. Needs a backward formula that is itself differentiable."""
    from .engine import run_backward
    create = _state.enabled and any(t is not None and t.requires_grad for t in tans)
    prev = _state.enabled
    _state.enabled = True
    try:
        us = []
        for o in douts:
            if o is None:
                us.append(None)
            else:
                d = o._data
                us.append(Tensor._make(_module_of(d).ones(d.shape, d.dtype), True))
        m = node._out_meta
        grads = [None] * (1 if m is None else len(m))
        for n, u in zip(nrs, us):
            if u is not None:
                grads[n] = u
        try:
            gs = node._run_backward(grads, TENSORS)
        except NotImplementedError:     # no backward formula either: PyTorch's error for an op without one
            raise NotImplementedError(f"Trying to use forward AD with {_OH.aten_name(node)} that does not support "
                                      "it because it has not been implemented yet.\nPlease file an issue to PyTorch "
                                      "at https://github.com/pytorch/pytorch/issues/new?template=feature-request.yml "
                                      "so that we can prioritize its implementation.") from None
        total = None
        for g, t in zip(gs, tans):
            if g is None or t is None:
                continue
            if not g.requires_grad:
                if (g._data != 0).any():
                    raise RuntimeError(f"hookgrad: forward AD: {node.name()} has no jvp formula and its backward "
                                       "formula is not differentiable, so its forward gradient cannot be derived")
                continue
            if g.is_complex():
                p = (g.conj() * t).real.sum()
            else:
                p = (g * t.to(g.dtype) if t.dtype != g.dtype else g * t).sum()
            total = p if total is None else total + p
        leaves = [u for u in us if u is not None]
        if total is None:
            return [None if u is None else u.detach() * 0 for u in us]
        seed = Tensor._make(_module_of(total._data).ones((), total._data.dtype))
        got = run_backward([(total.grad_fn, total._output_nr)], [seed], create, create,
                           inputs=[(u._grad_accumulator(), 0) for u in leaves], accumulate=False)
    finally:
        _state.enabled = prev
    got = iter(got)
    res = []
    for u in us:
        if u is None:
            res.append(None)
            continue
        g = next(got)
        res.append(u.detach() * 0 if g is None else g)
    return res


def fallback_ops():
    """``{"explicit": [...], "fallback": [...]}``: the primitives (``family.GradFnName``) whose
    tangents come from a ``jvp`` formula written beside their forward, and those derived from the backward
    formula (the transpose of a transpose). Lists every Node subclass with a forward of its own."""
    from .node import Node
    out = {"explicit": set(), "fallback": set()}
    stack = [Node]
    while stack:
        for c in stack.pop().__subclasses__():
            stack.append(c)
            if "forward" in c.__dict__ or "backward" in c.__dict__:
                out["explicit" if _jvp_of(c) is not None else "fallback"].add(
                    f"{c.__module__.rsplit('.', 1)[-1]}.{c.__name__}")
    return {k: sorted(v) for k, v in out.items()}


# ---------------------------------------------------------------------------------------------- in-place ops

def _carry_tangent(self, old):
    """An in-place op computes on ``old``, a stand-in for ``self``'s current value: it carries self's tangent."""
    t = self._fw_grad
    if t is not None:
        old.__dict__["_fw_grad"] = t


def _inplace_tangent(self, out):
    """After an in-place op wrote ``out`` into ``self``: self's tangent is updated in place to out's (a view's
    tangent is a view of its base's tangent, made as zeros first where the base has none, as PyTorch)."""
    if not _fw.enabled:             # (inside a custom Function's forward: its jvp updates the tangent)
        return
    ot = out._fw_grad
    st = self._fw_grad
    prev = _fw.enabled
    _fw.enabled = False
    try:
        if ot is None:
            if st is not None and _float(out):
                st.zero_()
            return
        if st is None:
            base = self._base
            fn = getattr(self, "_view_fn", None)
            if base is None or fn is None:
                _set_tangent(self, ot)
                return
            V = _vmap_support[0]
            batched = V is not None and V.is_batched(ot)
            bt = base._fw_grad
            if bt is None:
                # PyTorch's shortcut: a new tangent laid out as the base and the view is both theirs (a copy here
                # where it may be another tensor's tangent: a formula may return an input's tangent as it is)
                cand = ot if batched else ot.clone()
                if _same_meta(cand, base, V) and _same_meta(cand, self, V):
                    _set_tangent(base, cand)
                    _set_tangent(self, cand)
                    return
                bt = V.new_zeros_with_same_feature_meta(ot, base) if batched else \
                    Tensor._make(_module_of(base._data).zeros(base._data.shape, base._data.dtype))
                _set_tangent(base, bt)
            st = V.view_tangent(fn, bt) if V is not None and V.is_batched(bt) else fn(bt)
            _set_tangent(self, st)
        if ot is not st:
            st.copy_(ot.detach() if not _state.enabled else ot)
    finally:
        _fw.enabled = prev


def _phys(t):
    """A tangent's hookgrad Tensor: itself, or the physical value of a vmap BatchedTensor."""
    V = _vmap_support[0]
    return V.physical(t) if V is not None and V.is_batched(t) else t


def _same_meta(t, other, V):
    """PyTorch's has_same_meta for a tangent: sizes, strides, storage offset and storage size (per sample for a
    batched tangent) are those of ``other``."""
    if V is not None and V.is_batched(t):
        return V.same_feature_meta(t, other)
    return (t._data.shape == other._data.shape and t.stride() == other.stride()
            and t.storage_offset() == other.storage_offset()
            and t.untyped_storage().nbytes() // t.element_size()
            == other.untyped_storage().nbytes() // other.element_size())


# ---------------------------------------------------------------------------------------------- jvp helpers
# The primitives' ``jvp(self, primals, tangents, out)`` (one tangent or None per forward argument; the op's
# parameters are ``self._fw_params``) return the output's tangent (a tuple for several outputs). Shared shapes:

def _zeros_of(p):
    return Tensor._make(_module_of(p._data).zeros(p._data.shape, p._data.dtype))


def linear_jvp(self, primals, tangents, out):
    """A primitive linear in its floating tensor inputs together (views, reshapes, joins, sums, copies): the same
    primitive on the tangents, a zero tangent where an input has none; a view op so gives a view of the tangent."""
    args = []
    for p, t in zip(primals, tangents):
        if t is not None:
            args.append(t)
        elif isinstance(p, Tensor) and _float(p):
            args.append(_zeros_of(p))
        else:
            args.append(p)
    cls, params = type(self), self._fw_params or {}
    res = cls.apply(*args, **params)
    duals = [t for t in tangents if t is not None]
    if type(res) is not tuple and len(duals) == 1 and len(args) == 1:
        src = duals[0]      # a view op: the tangent's result is a view of the tangent (its _base, replayed in-place)
        res = make_view(res, src, lambda x: cls.apply(x, **params))
    return res


def elementwise_jvp(self, primals, tangents, out):
    """A one-input elementwise primitive (PyTorch's ``auto_element_wise``): its Jacobian is diagonal, so the
    tangent is the backward formula applied to it, ``conj(backward(conj(t)))`` (complex: conjugated around)."""
    t = tangents[0]
    cx = t._data.dtype.kind == "c"
    g = self._run_backward([t.conj() if cx else t], TENSORS)[0]
    return None if g is None else (g.conj() if cx else g)


def multilinear_jvp(self, primals, tangents, out):
    """A primitive linear in each tensor input separately (mul, mm, bmm, dot, einsum): the sum over dual inputs
    of the primitive with that input replaced by its tangent."""
    total = None
    params = self._fw_params or {}
    for i, t in enumerate(tangents):
        if t is not None:
            args = list(primals)
            args[i] = t
            r = type(self).apply(*args, **params)
            total = r if total is None else total + r
    return total


def tsum(*terms):
    """The sum of the tangent terms that are not None (None if all are)."""
    total = None
    for t in terms:
        if t is not None:
            total = t if total is None else total + t
    return total


def scaled(t, k):
    return None if t is None else (t if k == 1 else t * k)


# ---------------------------------------------------------------------------------------------- custom Functions

def _function_jvp(cls, ctx, args, result, raw=None, dirty_tensors=None, non_differentiable=None):
    """After a custom Function's forward: if an input is dual, its ``jvp(ctx, *tangents)`` gives the outputs'
    tangents (a zero tangent for a floating tensor input without one, None for other arguments; ``ctx.saved_tensors``
    reads what ``save_for_forward`` kept), with PyTorch's checks (_process_forward_mode_AD): none for a
    non-differentiable output, a view of the input's tangent for an output that is a view of (or is) an input,
    the input's own tangent modified in place for an input marked dirty."""
    if not _fw.enabled or not any(isinstance(a, Tensor) and a._fw_grad is not None for a in args):
        return
    tans = []
    versions = {}
    for a in args:
        if isinstance(a, Tensor):
            t = a._fw_grad
            if t is not None:
                versions[id(t)] = _phys(t)._vc[0]
            tans.append(t if t is not None else _zeros_of(a) if _float(a) else None)
        else:
            tans.append(None)
    fw_saved = getattr(ctx, "saved_for_forward", None)
    ctx._fw_saved = () if fw_saved is None else tuple(fw_saved)     # jvp sees only what save_for_forward kept
    prev = _fw.enabled
    _fw.enabled = False
    try:
        res = cls.jvp(ctx, *tans)
    finally:
        _fw.enabled = prev
        ctx.__dict__.pop("_fw_saved", None)
    outs = result if type(result) is tuple else (result,)
    res = res if type(res) is tuple else (res,)
    if len(res) != len(outs):
        raise RuntimeError(f"Function's jvp returned an invalid number of forward gradients (expected {len(outs)} "
                           f"but got {len(res)})")
    if raw is None:     # (called without forward's raw outputs: the ctx's lists, where they are still kept)
        raw, dirty_tensors = result, getattr(ctx, "dirty_tensors", ())
        non_differentiable = getattr(ctx, "non_differentiable", ())
    nondiff = {id(t) for t in non_differentiable or ()}
    dirty = {id(t) for t in dirty_tensors or ()}
    raw = raw if type(raw) is tuple else (raw,)
    inputs = {id(a): a for a in args if isinstance(a, Tensor)}
    bases = {}
    for a in args:
        if isinstance(a, Tensor):
            bases.setdefault(id(a._base if a._base is not None else a), a)
    for i, (o, r, t) in enumerate(zip(outs, raw, res)):
        if not isinstance(o, Tensor) or id(r) in nondiff or not _float(o):
            if t is not None:
                raise RuntimeError(f"Function's jvp returned a gradient at position {i}, but  the corresponding "
                                   "forward output is not a differentiable Tensor.You should return None at that "
                                   "position instead.")
            continue
        if t is None:
            continue
        pt = _phys(t)
        if not isinstance(pt, Tensor):
            raise TypeError(f"jvp() function must return Tensors or None, but got {type(t).__name__}")
        if tuple(t.shape) != o._data.shape:
            raise RuntimeError(f"Trying to set a forward gradient that has a different size than that of the "
                               f"original Tensor, this is not supported. Tensor is of size {list(o._data.shape)} "
                               f"while the given forward gradient is of size {list(t.shape)}.")
        if id(r) in dirty and id(r) in inputs:
            it = inputs[id(r)]._fw_grad
            if it is not None:
                if pt._vc[0] == versions[id(it)]:
                    raise RuntimeError("An inplace custom Function is not modifying the forward mode gradients "
                                       "inplace. If the forward is modifying an input inplace, then the jvp "
                                       "function must modify the corresponding gradient inplace.")
                if t is not it:
                    raise RuntimeError("An inplace custom Function is not returning the forward mode gradients "
                                       "as-is. If the forward is modifying an input inplace, then the jvp function "
                                       "must modify the gradient inplace and return it as-is.")
                continue
        elif o._base is not None and id(o._base) in bases:
            inp = bases[id(o._base)]
            it = inp._fw_grad
            if it is not None:
                it = _phys(it)      # (a batched tangent: its physical value is the view)
                if pt._base is None:
                    raise RuntimeError("A custom Function's forward is returning a view (or an input as-is) but the "
                                       "jvp is not returning a view.")
                if it._base is not None:
                    if pt._base is not it._base:
                        raise RuntimeError("A custom Function is returning a view but the jvp is not returning a view "
                                           "of the same base as the given grad input.")
                elif pt._base is not it:
                    raise RuntimeError("A custom Function is returning a view but the jvp is not returning a view of "
                                       "the given grad input.")
        o.__dict__.pop("_fw_grad", None)
        _set_tangent(o, t)


_view_tangent_slot[0] = _view_tangent
