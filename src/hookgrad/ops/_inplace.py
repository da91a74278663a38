"""In-place application of any primitive, with PyTorch's rebase and version-counter semantics."""
import numpy as np

from .._tensor import Tensor
from ..autograd import graph as _graph
from ..autograd.graph import Node
from ..autograd.grad_mode import _state

_LEAF = "a leaf Variable that requires grad is being used in an in-place operation."
_LEAF_VIEW = "a view of a leaf Variable that requires grad is being used in an in-place operation."


def check_inplace(self):
    """The errors PyTorch raises before any in-place write, whatever the op (and, inside
    allow_mutation_on_saved_tensors, the cloning of saved tensors about to be overwritten)."""
    mctx = _graph._mutation_ctx
    if mctx is not None:
        mctx._before_mutation(self)
    if _state.enabled and self.requires_grad:
        if self.grad_fn is None:
            raise RuntimeError(_LEAF)
        base = self._base
        if base is not None and base.grad_fn is None and base.requires_grad:
            raise RuntimeError(_LEAF_VIEW)
    hook = getattr(self.grad_fn, "_forbid_inplace", None) if self.grad_fn is not None else None
    if hook is not None and _state.enabled:
        raise RuntimeError(hook)


def inplace_apply(self, cls, args, params):
    check_inplace(self)
    record = _state.enabled and (self.requires_grad or any(isinstance(a, Tensor) and a.requires_grad for a in args)
                                 or (self._base is not None and self._base.requires_grad))
    if not record:
        out = cls.apply(self, *args, **params)
        _write(self, out._data)
        return self
    base = self._base
    saves_self = 0 in cls.save
    old = Tensor._make(self._data.copy() if saves_self else self._data, self.requires_grad, self.grad_fn,
                       self._output_nr)
    out = cls.apply(old, *args, **params)
    _write(self, out._data)
    if base is not None:
        _rebase_view(self, base, out)
    else:
        _rebase(self, out.grad_fn, 0)
    return self


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
    self.requires_grad = True
    if self._backward_hooks is not None:
        # hooks registered before the in-place op stay on the old node (spec 2.9)
        self._backward_hooks = None
    if self._retains_grad:
        grad_fn._register_retain_grad(output_nr, self)


class CopySlices(Node, name="CopySlices"):
    """The base's new history after an in-place op on one of its views."""

    def backward(self, g):
        from ..autograd.grad_mode import no_grad
        gb = g._data.copy()
        with no_grad():
            region = self.view_fn(Tensor._make(gb))._data
        gsrc = Tensor._make(np.array(region, copy=True))
        region[...] = 0
        return Tensor._make(gb), gsrc


def _rebase_view(view, base, out):
    """In-place op on a view: the base gets a CopySlices node; the view is regenerated from it."""
    fn = view._view_fn
    old_base = Tensor._make(base._data.copy(), base.requires_grad, base.grad_fn, base._output_nr)
    node = CopySlices.__new__(CopySlices)
    node.view_fn = fn
    new = node._record((old_base, out), base._data)
    _rebase(base, new.grad_fn, 0)
    regenerated = fn(base)
    if view._retains_grad and view.grad_fn is not None:
        view.grad_fn._unregister_retain_grad(view._output_nr)
    view.grad_fn = regenerated.grad_fn
    view._output_nr = regenerated._output_nr
    view.requires_grad = True
    if view._backward_hooks is not None:
        view._backward_hooks = None
    if view._retains_grad:
        view.grad_fn._register_retain_grad(view._output_nr, view)


def make_view(out, src, fn):
    """Mark ``out`` as a view of ``src`` (when NumPy shares memory): shared version counter, base and
    a replay function ``fn(tensor) -> view`` used to rebase after in-place ops."""
    if out._data.flags.owndata:
        return out
    base = src._base
    if base is None:
        out._base = src
        out._view_fn = fn
    else:
        inner = src._view_fn
        out._base = base
        out._view_fn = (lambda t: fn(inner(t))) if inner is not None else fn
    out._vc = src._vc
    return out
