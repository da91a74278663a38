"""In-place application of any primitive, with PyTorch's rebase and version-counter semantics."""
import numpy as np

from .._tensor import Tensor
from ..autograd import graph as _graph
from ..autograd.graph import Node, SavedTensor
from ..autograd.grad_mode import _state

_LEAF = "a leaf Variable that requires grad is being used in an in-place operation."
_LEAF_VIEW = "a view of a leaf Variable that requires grad is being used in an in-place operation."
_NO_GRAD_VIEW = ("A view was created in no_grad mode and {} modified inplace with grad mode enabled. Given that this "
                 "use case is ambiguous and error-prone, it is forbidden. You can clarify your code by moving both the "
                 "view and the inplace either both inside the no_grad block (if you don't want the inplace to be "
                 "tracked) or both outside (if you want the inplace to be tracked).")
_INFERENCE_VIEW = ("A view was created in inference mode and {} modified inplace in normal mode.")
_DIRECT, _INDIRECT = "is being", "its base or another view of its base has been"


def _view_error(view, how):
    msg = _INFERENCE_VIEW if view._creation == "inference" else _NO_GRAD_VIEW
    return RuntimeError(msg.format(how))


def check_inplace(self):
    """The errors PyTorch raises before any in-place write, whatever the op (and, inside
    allow_mutation_on_saved_tensors, the cloning of saved tensors about to be overwritten)."""
    mctx = _graph._mutation_ctx
    if mctx is not None:
        mctx._before_mutation(self)
    if _state.enabled and self.requires_grad:
        if self._creation is not None:
            raise _view_error(self, _DIRECT)
        if self.grad_fn is None:
            raise RuntimeError(_LEAF)
        base = self._base
        if base is not None and base.grad_fn is None and base.requires_grad:
            raise RuntimeError(_LEAF_VIEW)
    if _state.enabled:           # (a stale view's grad_fn is only regenerated in grad mode here)
        gf = self.grad_fn
        hook = getattr(gf, "_forbid_inplace", None) if gf is not None else None
        if hook is not None:
            raise RuntimeError(hook if type(hook) is str else hook(self))     # str, or a method (node, view)


def inplace_apply(self, cls, args, params):
    check_inplace(self)
    record = _state.enabled and (self.requires_grad or any(isinstance(a, Tensor) and a.requires_grad for a in args)
                                 or (self._base is not None and self._base.requires_grad))
    if not record:
        out = _apply(cls, self, args, params)
        _write(self, out._data)
        return self
    saves_self = 0 in cls.save
    if type(self) is _View:
        # PyTorch's CopySlices: the op sees the view's current value through a fresh node over the base's
        # history (hooks and retain_grad on the view's previous grad_fn are not in the new graph)
        if self._creation is not None:
            raise _view_error(self, _DIRECT)
        base = self._base
        node = _as_strided_node(self, base) if base.requires_grad else None
        old = Tensor._make(self._data.copy() if saves_self else self._data, node is not None, node, 0)
        out = _apply(cls, old, args, params)
        _write(self, out._data)
        _share_saved_result(out, self)
        _rebase_view(self, base, out)
        return self
    old = Tensor._make(self._data.copy() if saves_self else self._data, self.requires_grad, self.grad_fn,
                       self._output_nr)
    out = _apply(cls, old, args, params)
    _write(self, out._data)
    _share_saved_result(out, self)
    _rebase(self, out.grad_fn, 0)
    return self


def _share_saved_result(out, self):
    """The op's result saved for backward (relu_, exp_, sigmoid_... save their output) IS ``self`` after the
    write, as in PyTorch: it shares self's version counter, at the version the write left, so a later
    in-place change of self (or of a view of it) makes backward raise instead of using a stale value."""
    gf = out.grad_fn
    if gf is None:
        return
    ovc = out._vc
    for s in gf._saved:
        if type(s) is SavedTensor and s._vc is ovc:
            s._vc = vc = self._vc
            s._version = vc[0]


def _apply(cls, x, args, params):
    """cls.apply for an in-place op: operands that do not broadcast raise PyTorch's RuntimeError."""
    try:
        return cls.apply(x, *args, **params)
    except ValueError:
        for a in args:
            if isinstance(a, Tensor):
                try:
                    np.broadcast_shapes(x._data.shape, a._data.shape)
                except ValueError:
                    from ._dispatch import broadcast_error
                    raise broadcast_error(x._data.shape, a._data.shape) from None
        raise


def _write(self, data):
    sd = self._data
    if data.dtype != sd.dtype and not np.can_cast(data.dtype, sd.dtype, "same_kind"):
        raise RuntimeError(f"result type {_tname(data.dtype)} can't be cast to the desired output type {_tname(sd.dtype)}")
    if data.shape != sd.shape:
        try:
            np.broadcast_to(data, sd.shape)
        except ValueError:
            raise RuntimeError(f"output with shape {list(sd.shape)} doesn't match the broadcast shape "
                               f"{list(np.broadcast_shapes(data.shape, sd.shape))}") from None
    if not sd.flags.writeable:
        raise RuntimeError("unsupported operation: more than one element of the written-to tensor refers to a single "
                           "memory location. Please clone() the tensor before performing the operation.")
    np.copyto(sd, data, casting="unsafe")
    self._vc[0] += 1


def _tname(npdt):
    return {"float32": "Float", "float64": "Double", "float16": "Half", "int64": "Long", "int32": "Int",
            "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool"}[npdt.name]


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
    """The base's new history after an in-place op on one of its views: the gradient outside the view
    goes to the base's previous history, the gradient of the view's region to the op's result."""

    def name(self):
        return "torch::autograd::CopySlices"

    def backward(self, g):
        from ..autograd.grad_mode import no_grad
        gb = g._data.copy()
        with no_grad():
            region = self.view_fn(Tensor._make(gb))._data
        gsrc = Tensor._make(np.array(region, copy=True))
        region[...] = 0
        return Tensor._make(gb), gsrc


class AsStrided(Node, name="AsStridedBackward0"):
    """A view's history regenerated from its base's (PyTorch regenerates a view's grad_fn as
    AsStridedBackward0 once the base or another view of it was modified in place). ``index``: the flat
    position in the base of each element of the view."""

    def backward(self, g):
        n = 1
        for s in self.base_shape:
            n *= s
        if not _state.enabled:
            out = np.zeros(n, g._data.dtype)
            np.add.at(out, self.index.reshape(-1), g._data.reshape(-1))
            return Tensor._make(out.reshape(self.base_shape))
        idx = Tensor._make(self.index.reshape(-1))
        return g.new_zeros(n).index_add(0, idx, g.reshape(-1)).reshape(self.base_shape)


def _as_strided_node(view, base):
    """A new AsStridedBackward0 from ``base``'s current history to ``view`` (base requires grad)."""
    from ..autograd.grad_mode import no_grad
    index = view.__dict__.get("_index")
    if index is None:
        with no_grad():
            index = view._view_fn(Tensor._make(np.arange(base._data.size).reshape(base._data.shape)))._data
        view._index = index
    node = AsStrided.__new__(AsStrided)
    node.index = index
    node.base_shape = base._data.shape
    e, m = _graph._edge(base)
    node.next_functions = (e,)
    node._in_meta = (m,)
    node._seq = next(_graph._seq)
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
    node = _as_strided_node(view, base) if base.requires_grad else None
    _set_history(view, node)
    return node


def _set_history(view, node):
    old = _gf_get(view)
    if view._retains_grad and old is not None:
        old._unregister_retain_grad(view._output_nr)
    _gf_set(view, node)
    view._output_nr = 0
    view._attr_ver = view._vc[0]
    if view._backward_hooks is not None:
        view._backward_hooks = None          # hooks registered before stay on the old node
    if view._retains_grad and node is not None:
        node._register_retain_grad(0, view)


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


def _rebase_view(view, base, out):
    """In-place op on a view: the base gets a CopySlices node; the view is regenerated from it."""
    node = CopySlices.__new__(CopySlices)
    node.view_fn = view._view_fn
    e, m = _graph._edge(base)
    oe, om = _graph._edge(out)
    node.next_functions = (e, oe)
    node._in_meta = (m, om)
    node._seq = next(_graph._seq)
    _rebase(base, node, 0)
    _set_history(view, _as_strided_node(view, base))


def make_view(out, src, fn):
    """Mark ``out`` as a view of ``src`` (when NumPy shares memory): shared version counter, base and
    a replay function ``fn(tensor) -> view`` used to regenerate its history after in-place ops."""
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
        inner = src._view_fn
        out._base = base
        out._view_fn = lambda t: fn(inner(t))
        creation = src._creation
    if not _state.enabled:
        creation = "inference" if _state.inference else "no_grad"
    out.__class__ = _View
    if creation is not None:
        out._creation = creation
    out._vc = vc = src._vc
    out._attr_ver = vc[0]
    return out
