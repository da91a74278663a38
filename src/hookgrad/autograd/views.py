"""Views and rebase (PyTorch's view + in-place autograd): ``make_view`` marks a result as a view of its base
(shared memory and version counter, a replay function); ``_View`` regenerates a view's grad_fn as
AsStridedBackward0 once its base or another view of it was modified in place; ``_rebase`` gives a tensor a new
history after an in-place op, and ``_rebase_view`` gives the base of a modified view PyTorch's CopySlices.
The in-place op plumbing that calls these (checks, the write, the version bump) is primitives/_inplace.py.
"""
import numpy as np

from .._array import array_module, writeable
from .._tensor import Tensor
from . import node as _node, saved as _saved
from .node import Node
from .grad_mode import _state

_LEAF = "a leaf Variable that requires grad is being used in an in-place operation."
_LEAF_VIEW = "a view of a leaf Variable that requires grad is being used in an in-place operation."
_NO_GRAD_VIEW = ("A view was created in no_grad mode and {} modified inplace with grad mode enabled. Given that this "
                 "use case is ambiguous and error-prone, it is forbidden. You can clarify your code by moving both the "
                 "view and the inplace either both inside the no_grad block (if you don't want the inplace to be "
                 "tracked) or both outside (if you want the inplace to be tracked).")
_INFERENCE_VIEW = ("A view was created in inference mode and {} modified inplace in normal mode.")
_DIRECT, _INDIRECT = "is being", "its base or another view of its base has been"


_MULTI_VIEW = (" This view is the output of a function that returns multiple views. Such functions do not allow the "
               "output views to be modified inplace. You should replace the inplace operation by an out-of-place one.")
_CUSTOM_VIEW = (" This view was created inside a custom Function (or because an input was returned as-is) and the "
                "autograd logic to handle view+inplace would override the custom backward associated with the custom "
                "Function, leading to incorrect gradients. This behavior is forbidden. You can fix this by cloning the "
                "output of the custom Function.")


def _view_error(view, how):
    """PyTorch's handle_view_on_rebase: the error for an in-place change of a view whose CreationMeta is not
    the default ("no_grad", "inference", "multi": an output of a multi-view op such as split, or a view of one,
    "custom": an output of a custom Function that is one of its inputs)."""
    c = view._creation
    gf = _gf_get(view)          # the grad_fn the view was given (not regenerated)
    where = f"Output {view._output_nr} of {_saved._short_name(gf)}" if gf is not None else None
    if c == "custom":           # an input returned by a custom Function (e.g. a full backward hook's identity)
        if where is not None:
            return RuntimeError(f"{where} is a view and {how} modified inplace." + _CUSTOM_VIEW)
        return RuntimeError(f"A view was created in no_grad mode and {how} modified inplace with grad mode "
                            "enabled." + _CUSTOM_VIEW)
    if c == "multi" and where is not None:
        return RuntimeError(f"{where} is a view and {how} modified inplace." + _MULTI_VIEW)
    prefix = f"{where} is a view of a view which was created in" if where is not None else "A view was created in"
    if c == "inference":
        return RuntimeError(f"{prefix} inference mode and {how} modified inplace in normal mode."
                            + _NO_GRAD_VIEW[_NO_GRAD_VIEW.index(" Given"):].replace("no_grad", "inference_mode"))
    msg = f"{prefix} no_grad mode and {how} modified inplace with grad mode enabled."
    if c == "multi":
        return RuntimeError(msg + _MULTI_VIEW)
    return RuntimeError(msg + _NO_GRAD_VIEW[_NO_GRAD_VIEW.index(" Given"):])



_INTERNAL = ("unsupported operation: more than one element of the written-to tensor refers to a single memory location. "
             "Please clone() the tensor before performing the operation.")


def _writable(a, overlap_ok):
    """Where to write a read-only array: a view of writable memory (NumPy marks views of an expand read-only).
    PyTorch refuses to write where elements share memory (a stride 0), except a constant (fill_, zero_...)."""
    internal = any(st == 0 and n > 1 for n, st in zip(a.shape, a.strides))
    w = _writable_alias(a) if overlap_ok or not internal else None
    if w is None:
        raise RuntimeError(_INTERNAL)
    return w


class _Interface:
    def __init__(self, iface, owner):
        self.__array_interface__ = iface
        self.owner = owner


def _writable_alias(a):
    """A writable array over the memory of ``a``, a read-only broadcast (expand) of a writable array (PyTorch lets
    fill_/zero_ write a constant through elements that share memory); None if the memory is not writable."""
    if not isinstance(a, np.ndarray):
        return a            # another module's array (CuPy's): no read-only views, it is written as it is
    b = a.base
    while isinstance(b, np.ndarray) and not b.flags.writeable:
        b = b.base
    if not isinstance(b, np.ndarray):
        return None
    iface = dict(a.__array_interface__)
    iface["data"] = (iface["data"][0], False)
    return array_module(a).asarray(_Interface(iface, b))


def _rebase(self, grad_fn, output_nr):
    """Make ``grad_fn`` the tensor's history (PyTorch: rebase_history)."""
    old = self.grad_fn
    if self._retains_grad and old is not None:
        old._unregister_retain_grad(self._output_nr)
    self.grad_fn = grad_fn
    self._output_nr = output_nr
    self._requires_grad = True
    if self._backward_hooks is not None:
        # hooks registered before the in-place op stay on the old node (spec 2.9)
        self._backward_hooks = None
    if self._retains_grad:
        grad_fn._register_retain_grad(output_nr, self)


class CopySlices(Node, name="CopySlices"):
    """The base's new history after an in-place op on one of its views (PyTorch's CopySlices): the op's
    own node ``fn`` is folded inside it, as in PyTorch (not a node of the graph; its hooks do not run), so
    next_functions = (base's previous history, fn's edges to the op's other inputs). Backward: the gradient
    outside the view goes to the base's previous history; fn's gradient for the view's previous value
    replaces the view's region, fn's other gradients go to its other inputs. ``fn`` None: an op composed
    of several nodes is kept as the second edge (the view's region of the gradient flows into it)."""

    fn = None

    def name(self):
        return "torch::autograd::CopySlices"

    def _inner(self, gs):
        fn = self.fn
        if fn is False:             # released (PyTorch drops fn after a pass: a second one raises)
            raise RuntimeError(_saved._FREED)
        if fn is None:
            return [None, gs]
        return fn._run_backward([gs])

    def backward(self, g):
        if not _state.enabled:
            gb = g._data.copy()
            region = self.view_fn(Tensor._make(gb))._data
            res = self._inner(Tensor._make(region.copy(order="K")))
            if not writeable(region):
                region = _writable(region, False)
            r0 = res[0]
            region[...] = 0 if r0 is None else r0._data
            return (Tensor._make(gb), *res[1:])
        # create_graph: the same with Tensor ops, so that the gradient is itself differentiable
        result = g.clone()
        gs = self.view_fn(result)
        res = self._inner(gs.clone())
        r0 = res[0]
        if r0 is None:
            gs.zero_()
        else:
            gs.copy_(r0)
        return (result, *res[1:])

    def _release(self):
        Node._release(self)
        if self.fn:
            self.fn._release()
        self.fn = False


class AsStrided(Node, name="AsStridedBackward0"):
    """A view's history regenerated from its base's (PyTorch regenerates a view's grad_fn as
    AsStridedBackward0 once the base or another view of it was modified in place). ``index``: the flat
    position in the base of each element of the view, counted in real units when the base or the view is
    complex (a complex element is two: its real part at 2k, its imaginary part at 2k + 1; a complex view's
    index has a trailing axis of 2), so that a view across dtypes (view_as_real, .real, view_as_complex)
    maps back too."""

    base_complex = view_complex = False

    def backward(self, g):
        n = 1
        for s in self.base_shape:
            n *= s
        units = 2 * n if self.base_complex else n
        idx = self.index.reshape(-1)
        if not _state.enabled:
            xp = array_module(g._data)
            gd = g._data
            if self.view_complex:
                gd = xp.stack([gd.real, gd.imag], -1)
            out = xp.zeros(units, gd.dtype)
            xp.add.at(out, idx, gd.reshape(-1))
            if self.base_complex:
                out = out[0::2] + 1j * out[1::2]
            return Tensor._make(out.reshape(self.base_shape))
        if self.view_complex:
            g = g.real.unsqueeze(-1) * _unit_mask(g, 0) + g.imag.unsqueeze(-1) * _unit_mask(g, 1)
        out = g.new_zeros(units).index_add(0, Tensor._make(idx), g.reshape(-1))
        if self.base_complex:
            out = out[0::2] + out[1::2] * 1j
        return out.reshape(self.base_shape)


def _unit_mask(g, k):
    """(1, 0) for k == 0, (0, 1) for k == 1, in ``g``'s real dtype: spreads a part of a complex gradient onto the
    trailing axis of real units."""
    m = g.real.new_zeros(2)
    m[k] = 1
    return m


def _real_units(xp, shape, complex_):
    """The positions of a tensor's elements in real units: arange for a real tensor, 2k + (2k + 1)j for a
    complex one."""
    n = 1
    for s in shape:
        n *= s
    if not complex_:
        return xp.arange(n, dtype=np.float64).reshape(shape)
    k = xp.arange(0, 2 * n, 2, dtype=np.float64)
    return (k + 1j * (k + 1)).reshape(shape)


def _as_strided_node(view, base):
    """A new AsStridedBackward0 from ``base``'s current history to ``view`` (base requires grad)."""
    from .grad_mode import no_grad
    bc, vc = base._data.dtype.kind == "c", view._data.dtype.kind == "c"
    index = view.__dict__.get("_index")
    if index is None:
        with no_grad():
            bd = base._data
            xp = array_module(bd)
            if bc or vc:
                index = view._view_fn(Tensor._make(_real_units(xp, bd.shape, bc)))._data
                if vc:
                    index = xp.stack([index.real, index.imag], -1)
                index = index.astype(np.int64)
            else:
                index = view._view_fn(Tensor._make(xp.arange(bd.size).reshape(bd.shape)))._data
        view._index = index
    node = AsStrided.__new__(AsStrided)
    node.index = index
    node.base_shape = base._data.shape
    node.base_complex, node.view_complex = bc, vc
    vd = view._data
    node._out1 = (vd.shape, vd.dtype, type(vd))     # (_input_metadata: the view it is the history of)
    e, m = _node._edge(base)
    node.next_functions = (e,)
    node._in_meta = (m,)
    node._seq = next(_node._seq)
    return node


_GF = Tensor.__dict__["grad_fn"]
_RG = Tensor.__dict__["_requires_grad"]           # the slot (Tensor.requires_grad is the checking property)
_gf_get, _gf_set = _GF.__get__, _GF.__set__
_rg_get, _rg_set = _RG.__get__, Tensor.__dict__["requires_grad"].fset


def _refresh(view, gf):
    """The view's grad_fn after its base (or another view of it) was modified in place (PyTorch:
    VariableHooks::grad_fn). Hooks registered on the previous grad_fn stay there; retain_grad moves."""
    base = view._base
    if gf is None and not base.requires_grad:
        return None
    if view._creation is not None:
        raise _view_error(view, _INDIRECT)
    if not base.requires_grad:
        _set_history(view, None)
        return None
    return _regenerate(view, base)


def _regenerate(view, base):
    """Give ``view`` a new history from ``base``'s current one: its view op replayed on the base when it was made
    with view replay on (torch.autograd._force_original_view_tracking: ViewBackward0, SelectBackward0...), else
    AsStridedBackward0, as PyTorch does."""
    if view.__dict__.get("_replay"):
        prev = _state.enabled
        _state.enabled = True
        try:
            dv = view._view_fn(base)
        finally:
            _state.enabled = prev
        node = dv.grad_fn
        _set_history(view, node, dv._output_nr)
        return node
    node = _as_strided_node(view, base)
    _set_history(view, node)
    return node


def _set_history(view, node, output_nr=0):
    old = _gf_get(view)
    if view._retains_grad and old is not None:
        old._unregister_retain_grad(view._output_nr)
    _gf_set(view, node)
    view._output_nr = output_nr
    view._attr_ver = view._vc[0]
    if view._backward_hooks is not None:
        view._backward_hooks = None          # hooks registered before stay on the old node
    if view._retains_grad and node is not None:
        node._register_retain_grad(output_nr, view)


def _view_grad_fn(self):
    gf = _gf_get(self)
    ver = self._attr_ver
    if ver is None or ver == self._vc[0]:
        return gf
    return _refresh(self, gf)


def _view_requires_grad(self):
    # PyTorch: requires_grad_ || grad_fn_ || base.requires_grad()
    return _rg_get(self) or _gf_get(self) is not None or self._base.requires_grad


class _View(Tensor):
    """A Tensor made by a view op (make_view): it shares memory and the version counter with its base, and
    its grad_fn is regenerated lazily when the version moved since it was made (the only class whose
    grad_fn/requires_grad are computed; plain tensors keep slot attributes on the hot path)."""
    __slots__ = ()
    _attr_ver = None
    _lazy_rg = True
    _plain_repr = True        # prints as tensor(...), like Tensor
    grad_fn = property(_view_grad_fn, _gf_set)
    requires_grad = property(_view_requires_grad, _rg_set)


_View.__name__ = _View.__qualname__ = "Tensor"


def _rebase_view(view, base, out, node):
    """In-place op on a view: the base gets a CopySlices node; the view is regenerated from it. ``node``: the
    history the op saw for the view's previous value (None if the base does not require grad)."""
    fn = out.grad_fn
    if fn is not None and fn.next_functions and fn.next_functions[0][0] is node:
        _copy_slices(view, base, fn)
    else:
        _copy_slices(view, base, None, _node._edge(out))


def _copy_slices(view, base, fn, edge=None):
    """Give ``base`` a CopySlices over ``fn`` (the node of the in-place op, whose input 0 is the view's previous
    value: PyTorch's rebase_history of a view) or, ``fn`` None, over the edge of the op's result."""
    cs = CopySlices.__new__(CopySlices)
    cs.view_fn = view._view_fn
    e, m = _node._edge(base)
    if fn is not None:
        cs.fn = fn
        cs.next_functions = (e, *fn.next_functions[1:])
        cs._in_meta = (m, *fn._in_meta[1:])
    else:
        oe, om = edge
        cs.next_functions = (e, oe)
        cs._in_meta = (m, om)
    cs._seq = next(_node._seq)
    bd = base._data
    cs._out1 = (bd.shape, bd.dtype, type(bd))       # (_input_metadata: the base it is the history of)
    cs._saved = [None]          # (non-empty: the engine releases it after a pass, see _release)
    _rebase(base, cs, 0)
    _regenerate(view, base)


def _identity_view(t):
    return t


def as_custom_view(out, t, creation):
    """Make ``out`` (a new Tensor over ``t``'s memory) a view of ``t``, as PyTorch marks a custom Function's input
    returned as-is or a view made inside its forward (CreationMeta IN_CUSTOM_FUNCTION, "custom"; MULTI_OUTPUT_NODE,
    "multi", when the node has several differentiable outputs): an in-place change of it, or a use of it after its
    base changed in place, raises (_view_error)."""
    base = t._base
    if base is None:
        out._base = t
        out._view_fn = _identity_view
    else:
        out._base = base
        out._view_fn = t._view_fn or _identity_view
    if type(out) is not _View:
        out.__class__ = _View
    out._creation = creation
    out._vc = vc = t._vc
    out._attr_ver = vc[0]
    return out


_view_tangent = [None]      # forward_ad's: a view's tangent when it is a vmap BatchedTensor (set by forward_ad)


def make_view(out, src, fn):
    """Mark ``out`` as a view of ``src`` (when NumPy shares memory): shared version counter, base and
    a replay function ``fn(tensor) -> view`` used to regenerate its history after in-place ops."""
    if out._fw_grad is not None:
        _view_tangent[0](out, src, fn)
    if src._bits:
        out._bits = src._bits       # a view of a conjugate (negative) keeps the bit, as PyTorch's
    if src._inference or out._inference:
        # a view of an inference tensor is one, and no view (no base, version counter or history: PyTorch's
        # inference tensors skip view tracking); a view of a normal tensor made in inference mode is normal
        if src._inference:
            out.grad_fn = None
            out._requires_grad = False
            out._inference = True
            return out
        out._inference = False
    if out._data.flags.owndata:
        return out
    base = src._base
    if base is None or src._view_fn is None:
        if base is not None:
            return out
        out._base = src
        out._view_fn = fn
        creation = None
    else:
        out._base = base
        out._view_fn = _chain(src._view_fn, fn)
        creation = src._creation          # a view of a view keeps its CreationMeta (PyTorch's propagate_creation_meta)
    if not _state.enabled and creation != "inference":
        creation = "inference" if _state.inference else "no_grad"
    out.__class__ = _View
    if creation is not None:
        out._creation = creation
    if _state.view_replay:
        out._replay = True
    out._vc = vc = src._vc
    out._attr_ver = vc[0]
    return out


# ---- view functions: how a view is made from its base, replayed on another base (Tensor._view_func) ----

class ViewFunc:
    """A view op's replay ``fn(tensor, *tensors, *symints)`` with the state PyTorch's ViewFunc keeps: the SymInts
    (sizes, an index, a slice's start / end / step...) and the tensors (slice_inverse's ``src``) that
    ``Tensor._view_func``'s visitors may replace. A view op without such state replays with a plain function."""
    __slots__ = ("fn", "symints", "tensors")

    def __init__(self, fn, symints=(), tensors=()):
        self.fn = fn
        self.symints = tuple(symints)
        self.tensors = tuple(tensors)

    def __call__(self, t):
        return self.fn(t, *self.tensors, *self.symints)

    def get_symints(self):
        return list(self.symints)

    def get_tensors(self):
        return list(self.tensors)

    def clone_and_set(self, symints=None, tensors=None):
        return ViewFunc(self.fn, self.symints if symints is None else symints,
                        self.tensors if tensors is None else tensors)


class _Chained(ViewFunc):
    """A view of a view: ``second(first(t))``; the state is the first's, then the second's (PyTorch's
    ChainedViewFunc)."""
    __slots__ = ("first", "second")

    def __init__(self, first, second):
        self.first, self.second = first, second

    def __call__(self, t):
        return self.second(self.first(t))

    def get_symints(self):
        return _get(self.first, "get_symints") + _get(self.second, "get_symints")

    def get_tensors(self):
        return _get(self.first, "get_tensors") + _get(self.second, "get_tensors")

    def clone_and_set(self, symints=None, tensors=None):
        parts = []
        for f in (self.first, self.second):
            ns, nt = len(_get(f, "get_symints")), len(_get(f, "get_tensors"))
            s, symints = (None, None) if symints is None else (symints[:ns], symints[ns:])
            ts, tensors = (None, None) if tensors is None else (tensors[:nt], tensors[nt:])
            parts.append(f.clone_and_set(s, ts) if isinstance(f, ViewFunc) else f)
        return _Chained(*parts)


def _get(f, what):
    return getattr(f, what)() if isinstance(f, ViewFunc) else []


def _chain(inner, fn):
    if isinstance(inner, ViewFunc) or isinstance(fn, ViewFunc):
        return _Chained(inner, fn)
    return lambda t: fn(inner(t))


def set_view_func(out, src, fn):
    """Give ``out``, a view just made of ``src`` by a composite (slice_inverse over as_strided), its own op's
    view function ``fn``."""
    if out._base is None:
        return out
    if out._base is src:
        out._view_fn = fn
    elif src._view_fn is not None:
        out._view_fn = _chain(src._view_fn, fn)
    return out


def _same_meta(a, b):
    """PyTorch's has_same_meta: the same sizes, strides, storage offset and storage size."""
    return (a.shape == b.shape and a.stride() == b.stride() and a.storage_offset() == b.storage_offset()
            and a.untyped_storage().nbytes() == b.untyped_storage().nbytes())


def _view_func(self, new_base, symint_visitor_fn=None, tensor_visitor_fn=None, _check=True):
    """``Tensor._view_func(new_base)``: this view's view op(s) replayed on ``new_base``; ``symint_visitor_fn`` /
    ``tensor_visitor_fn`` map the op's saved SymInts / tensors first (the view itself keeps its own). A view made
    without view replay (torch.autograd._force_original_view_tracking) is replayed as an as_strided of its geometry,
    as PyTorch does. None: not a view, or (``_view_func``, not ``_view_func_unsafe``) ``new_base`` unlike the
    view's base in sizes, strides, offset or storage size."""
    if self._base is None or (_check and not _same_meta(new_base, self._base)):
        return None
    fn = self._view_fn
    if fn is None or not (self.__dict__.get("_replay") or self._base._data.dtype != self._data.dtype):
        return new_base.as_strided(tuple(self.shape), self.stride(), self.storage_offset())
    if isinstance(fn, ViewFunc) and (symint_visitor_fn is not None or tensor_visitor_fn is not None):
        symints = [symint_visitor_fn(s) for s in fn.get_symints()] if symint_visitor_fn is not None else None
        tensors = [tensor_visitor_fn(t) for t in fn.get_tensors()] if tensor_visitor_fn is not None else None
        fn = fn.clone_and_set(symints, tensors)
    return fn(new_base)


def _view_func_unsafe(self, new_base, symint_visitor_fn=None, tensor_visitor_fn=None):
    return _view_func(self, new_base, symint_visitor_fn, tensor_visitor_fn, _check=False)


Tensor._view_func = _view_func
Tensor._view_func_unsafe = _view_func_unsafe
