"""autograd.Function: user-defined ops with a forward and a backward (mirrors torch.autograd.Function).

``MyFn.apply(*args)`` runs ``MyFn.forward`` with grad mode off and, if grad mode is on and a Tensor
argument requires grad, records a node of class ``MyFnBackward``. That node *is* ``ctx``: whatever
forward stores on ctx is visible on ``out.grad_fn``, and it has the whole Node API (name(),
next_functions, metadata, register_hook / register_prehook).
"""
import functools
import inspect
import warnings

import numpy as np

from .. import _array
from .grad_mode import _state, no_grad
from . import node as _g
from .formulas import TENSORS
from .node import Node
from .saved import SavedTensor
from .basic_ops import Error, DelayedError
from . import forward_ad as _fwad
from .._dtype import is_floating as _is_floating
from .._tensor import _SAME

_CLEARED = ("saved_tensors can only be accessed once when clear_saved_tensors_on_access=True is set on the "
            "autograd.Function. Either access saved_tensors only once, or set clear_saved_tensors_on_access=False.")
_DIRTY_NOT_INPUT = ("ctx.mark_dirty() received a tensor that was not an input. Only input Tensors that have been "
                    "mutated should be passed to ctx.mark_dirty().")
_DIRTY_VIEW_MULTI = (
    "If your Function modifies inplace an input that is a view of another Tensor, your Function cannot return more "
    "than one Tensor. This is not supported by the current autograd engine. You should either make sure the input is "
    "not a view (using .clone() for example) or make your Function only return one Tensor (potentially splitting it "
    "into two Functions: one doing the inplace that returns a single Tensor and a second one that does the other "
    "operations). You can ask on the forum https://discuss.pytorch.org/ if you need help to do this change.")

__all__ = ["Function", "FunctionCtx", "BackwardCFunction", "once_differentiable", "InplaceFunction",
           "NestedIOFunction"]


class FunctionCtx:
    """What ``forward``/``setup_context`` use to pass state to ``backward``."""

    def save_for_backward(self, *tensors):
        self.to_save = tensors      # checked when the graph is recorded, as in PyTorch

    def save_for_forward(self, *tensors):
        self.saved_for_forward = tensors

    def mark_dirty(self, *args):
        self.dirty_tensors = args

    def mark_non_differentiable(self, *args):
        self.non_differentiable = args

    def set_materialize_grads(self, value):
        self.materialize_grads = bool(value)

    def mark_shared_storage(self, *pairs):  # pragma: no cover - deprecated no-op in torch too
        pass


class BackwardCFunction(Node, FunctionCtx):
    """Base of every ``<Name>Backward`` node class generated for a Function."""
    _forward_cls = None
    to_save = ()
    dirty_tensors = ()
    non_differentiable = ()
    materialize_grads = True
    _is_tensor_input = ()       # per forward argument: is it a Tensor (an edge in next_functions)?
    _needs_input_grad = ()
    _masks_unneeded = False     # like torch's PyNode: post-hooks see every grad backward returned
    _repr_module = "torch.autograd.function"
    _materialize_non_diff_grads = True
    _cleared = False            # saved tensors released by their first access (clear_saved_tensors_on_access)
    _nondiff_idx = ()           # output indices marked non-differentiable

    __dir__ = object.__dir__     # a custom Function's node lists its ctx API (not a built-in node's list)

    @property
    def needs_input_grad(self):
        return self._needs_input_grad

    @property
    def saved_tensors(self):
        fw = self.__dict__.get("_fw_saved")     # forward AD: inside jvp, what save_for_forward kept
        if fw is not None:
            return fw
        if self._freed:
            if self._cleared:
                raise RuntimeError(_CLEARED)
            raise RuntimeError(_g._FREED)
        saved = self.__dict__.get("_saved_vars")
        if saved is None:   # not recorded (no grad needed): the tensors as they were given
            return tuple(self.to_save)
        res = tuple(None if s is None else s.unpack() for s in saved)
        if self._forward_cls.clear_saved_tensors_on_access:
            self._release()         # the references go: a second access raises
            self._cleared = True
            self.__dict__["_saved_vars"] = ()
            self._saved = ()
        return res

    @property
    def saved_variables(self):
        warnings.warn("'saved_variables' is deprecated; use 'saved_tensors'", DeprecationWarning, stacklevel=2)
        return self.saved_tensors

    @property
    def _raw_saved_tensors(self):
        """The SavedTensor objects (``register_hooks``, ``data``, ``unpack_hook``), as in PyTorch."""
        if self._freed and not self._cleared:
            raise RuntimeError(_g._FREED)
        saved = self.__dict__.get("_saved_vars") or ()
        return tuple(_g._NoneSaved() if s is None else s for s in saved)

    def _get_user_fn(self):
        cls = self._forward_cls
        if cls.backward is not Function.backward and cls.vjp is not Function.vjp:
            raise RuntimeError("Implementing both 'backward' and 'vjp' for a custom Function is not allowed. You "
                               "should only implement one of them.")
        return cls.vjp if cls.vjp is not Function.vjp else cls.backward

    def _release(self):
        saved = self.__dict__.get("_saved_vars")
        if saved:
            for s in saved:
                if s is not None:
                    s.free()
            self._freed = True

    def name(self):
        return type(self).__name__

    def apply(self, *grads):
        """``grad_fn.apply(*grads)`` calls the user's backward (as in torch)."""
        return self._get_user_fn()(self, *grads)

    def _run_backward(self, grads, space=TENSORS):
        """The user's backward, on Tensors whatever the pass carries; checked grads out, carried."""
        user_fn = self._get_user_fn()
        grads = [space.tensor(g) for g in grads]
        if self.materialize_grads and self._out_meta is not None and any(g is None for g in grads):
            present = [g._data for g in grads if g is not None]
            xp = _array.module_of(*present) if present else _array.default_module()
            skip = () if self._materialize_non_diff_grads else self._nondiff_idx
            # (a non-Tensor output gets None; a non-differentiable one zeros unless _materialize_non_diff_grads
            # is False)
            grads = [g if g is not None or m is None or i in skip else _g.Tensor._make(xp.zeros(m[0], m[1].np))
                     for i, (g, m) in enumerate(zip(grads, self._out_meta))]
        res = user_fn(self, *grads)
        if type(res) is not tuple:
            res = (res,)
        n_args = len(self._is_tensor_input)
        name = self.name()
        if len(res) > n_args and all(r is None for r in res[n_args:]):
            res = res[:n_args]
        if len(res) != n_args:
            raise RuntimeError(f"function {name} returned an incorrect number of gradients (expected {n_args}, "
                               f"got {len(res)})")
        out = []
        T = _g.Tensor
        for i, (is_t, g) in enumerate(zip(self._is_tensor_input, res)):
            if not is_t:
                if g is not None:
                    raise RuntimeError(f"function {name} returned a gradient different than None at position "
                                       f"{i + 1}, but the corresponding forward input was not a Variable")
                continue
            if g is not None and not isinstance(g, T):
                raise RuntimeError(f"expected Variable or None (got {type(g).__name__})")
            out.append(g)
        checked = []
        for i, ((fn, _), g, meta) in enumerate(zip(self.next_functions, out, self._in_meta)):
            if fn is None or g is None:
                checked.append(None)
                continue
            shape, dt = meta
            gs = g._data.shape
            if gs != shape:
                try:
                    ok = np.broadcast_shapes(shape, gs) == gs
                except ValueError:
                    ok = False
                if not ok:
                    raise RuntimeError(f"Function {name} returned an invalid gradient at index {i} - got "
                                       f"{list(gs)} but expected shape compatible with {list(shape)}")
                g = g.sum_to_size(shape)
            gdt = getattr(getattr(fn, "variable", None), "_grad_dtype", _SAME)
            if gdt is not _SAME:    # a leaf's own grad_dtype (Tensor.grad_dtype): that dtype, or None (any)
                dt = None if gdt is None else gdt.np
            if dt is not None and g._data.dtype != dt:
                g = g.to(_g._dt(dt))
            checked.append(g)
        return [space.carry(g) for g in checked]


class FunctionMeta(type):
    """Creates the ``<Name>Backward`` node class of each Function subclass."""

    def __init__(cls, name, bases, attrs):
        backward_fn = type(name + "Backward", (BackwardCFunction,), {"_forward_cls": cls})
        backward_fn.__qualname__ = name + "Backward"
        cls._backward_cls = backward_fn
        super().__init__(name, bases, attrs)


class Function(metaclass=FunctionMeta):
    """Base class for custom differentiable operations.

    >>> class Exp(Function):
    ...     @staticmethod
    ...     def forward(ctx, x):
    ...         y = x.exp(); ctx.save_for_backward(y); return y
    ...     @staticmethod
    ...     def backward(ctx, g):
    ...         (y,) = ctx.saved_tensors; return g * y
    """
    generate_vmap_rule = False
    clear_saved_tensors_on_access = False

    def __init__(self, *args, **kwargs):
        warnings.warn(f"{self.__class__} should not be instantiated. Methods on autograd functions are all static, so "
                      "you should invoke them on the class itself. Instantiating an autograd function will raise an "
                      "error in a future version of PyTorch.", DeprecationWarning, stacklevel=2)

    def __call__(self, *args, **kwargs):
        raise RuntimeError("Legacy autograd function with non-static forward method is deprecated. Please use "
                           "new-style autograd function with static forward method. (Example: "
                           "https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function)")

    @staticmethod
    def vmap(info, in_dims, *args):
        raise NotImplementedError("To use autograd.Function with vmap, you must either override the vmap staticmethod "
                                  "or set generate_vmap_rule=True.")

    @staticmethod
    def forward(*args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def setup_context(ctx, inputs, output):
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for your custom "
                                  "autograd.Function to use it with backward mode AD.")

    vjp = backward

    @staticmethod
    def jvp(ctx, *grad_inputs):
        raise NotImplementedError("You must implement the jvp function for custom autograd.Function to use it "
                                  "with forward mode AD.")

    @classmethod
    def apply(cls, *args, **kwargs):
        T = _g.Tensor
        setup_style = cls.setup_context is not Function.setup_context
        if setup_style:     # the defaults of forward's arguments are inputs too (as PyTorch binds them)
            bound = inspect.signature(cls.forward).bind(*args, **kwargs)
            bound.apply_defaults()
            args, kwargs = bound.args, bound.kwargs
        ctx = object.__new__(cls._backward_cls)
        grad_on = _state.enabled
        is_tensor = tuple(isinstance(a, T) for a in args)
        needs = tuple(grad_on and t and a.requires_grad for t, a in zip(is_tensor, args))
        ctx._is_tensor_input = is_tensor
        ctx._needs_input_grad = needs
        record = any(needs)
        if record:      # the edges are the inputs' histories before forward (which may modify them in place)
            edges, meta = [], []
            for a, t in zip(args, is_tensor):
                if t:
                    e, m = _g._edge(a)
                    edges.append(e)
                    meta.append(m)
            ctx.next_functions = tuple(edges)
            ctx._in_meta = meta
        with no_grad(), _fwad.fw_off():    # (forward AD: no tangents inside forward, as PyTorch)
            if setup_style:
                outputs = cls.forward(*args, **kwargs)
            else:
                outputs = cls.forward(ctx, *args, **kwargs)
        if setup_style:
            cls.setup_context(ctx, args, outputs)
        fw = _fwad._current_level >= 0 and (outputs, ctx.dirty_tensors, ctx.non_differentiable)
        result = _wrap_outputs(ctx, args, outputs, record)
        if fw:       # forward AD: the outputs' tangents from the Function's jvp
            _fwad._function_jvp(cls, ctx, args, result, *fw)
        return result


def _is_view(t):
    return t._base is not None


def _wrap_outputs(ctx, args, outputs, record):
    """PyTorch's _wrap_outputs: record ctx as the grad_fn of the differentiable outputs (``record``: an input needs
    a gradient), rebase the inputs marked dirty, alias the inputs returned as-is as views, and give every view among
    the outputs its CreationMeta (made in a custom Function, or one of several differentiable outputs)."""
    T = _g.Tensor
    tensor_args = [a for a in args if isinstance(a, T)]
    single = not isinstance(outputs, tuple)
    outs = (outputs,) if single else outputs
    input_ids = {id(a) for a in tensor_args}
    dirty = ctx.dirty_tensors
    if dirty:
        out_ids = {id(o) for o in outs}
        if any(id(t) not in out_ids for t in dirty):
            raise RuntimeError("Some elements marked as dirty during the forward method were not returned as output. "
                               "The inputs that are modified inplace must all be outputs of the Function.")
    for t in dict.fromkeys(dirty):   # like torch, marking dirty bumps the version once more
        t._vc[0] += 1
    dirty = {id(t) for t in dirty}
    nondiff = {id(t) for t in ctx.non_differentiable}
    if record:
        ctx._seq = next(_g._seq)
        if _g._anomaly.enabled:
            _g._anomaly_record(ctx)
    from .views import _LEAF_VIEW, _DIRECT, _View, _gf_get, _view_error, _rebase, _copy_slices, as_custom_view
    result = []
    out_meta = []
    nondiff_idx = []
    views = []                      # differentiable-or-not views among the outputs (CreationMeta set below)
    n_diff = 0
    for i, o in enumerate(outs):
        if not isinstance(o, T):
            result.append(o)
            out_meta.append(None)
            continue
        out_meta.append((o._data.shape, o.dtype))
        is_input = id(o) in input_ids
        modified = id(o) in dirty
        dt = o._data.dtype
        diff = record and id(o) not in nondiff and (_is_floating(dt) or dt.kind == "c")
        if id(o) in nondiff:
            nondiff_idx.append(i)
        if is_input and not modified and type(getattr(type(o), "__torch_function__", None)).__name__ not in \
                ("NoneType", "_DisabledTorchFunctionImpl"):
            # an input returned as-is whose class overrides __torch_function__: aliased by ``o.view_as(o)`` through
            # the protocol, as PyTorch does (the class may wrap the alias in its own type)
            o = type(o).__torch_function__(T.view_as, (type(o),), (o, o), {})
            if diff and isinstance(o, T):
                o._requires_grad = True
                o.grad_fn = ctx
                o._output_nr = i
                n_diff += 1
            result.append(o)
            continue
        if not diff:
            if not o.requires_grad:
                if is_input and not modified:       # a view of the input that does not require grad
                    o = as_custom_view(T._make(o._data), o, "custom")
            elif is_input:                          # a detached alias of the input
                o = o.detach()
            elif not _is_view(o):
                o._requires_grad = False
                o.grad_fn = None
        elif modified:
            if (_gf_get(o) if type(o) is _View else o.grad_fn) is None and o.requires_grad:
                raise RuntimeError("a leaf Variable that requires grad has been used in an in-place operation.")
            if not is_input:
                if _is_view(o):
                    raise RuntimeError(_DIRTY_NOT_INPUT)
                warnings.warn(_DIRTY_NOT_INPUT, stacklevel=3)
            if _is_view(o):
                base = o._base
                if o._creation is not None:
                    raise _view_error(o, _DIRECT)
                if base.grad_fn is None and base.requires_grad:
                    raise RuntimeError(_LEAF_VIEW)
                if len(outs) > 1:
                    raise RuntimeError(_DIRTY_VIEW_MULTI)
                _copy_slices(o, base, ctx)
            else:
                _rebase(o, ctx, i)
        elif is_input:                              # an input returned as-is: a view of it
            o = as_custom_view(T._make(o._data, True, ctx, i), o, "custom")
        elif o.grad_fn is not None and o.requires_grad and o.grad_fn is not ctx:
            o = T._make(o._data, True, ctx, i, o._vc)  # a tensor from outside forward: alias it
        else:
            o._requires_grad = True
            o.grad_fn = ctx                         # (twice the same output: the last slot, as PyTorch)
            o._output_nr = i
        if _is_view(o) and not (is_input and modified):
            views.append(o)
        if diff:
            n_diff += 1
        result.append(o)
    for v in views:
        as_custom_view(v, v, "multi" if n_diff > 1 else "custom")
    # the graph knows them now (as PyTorch clears them: the node must not keep its outputs alive)
    ctx.__dict__.pop("dirty_tensors", None)
    ctx.__dict__.pop("non_differentiable", None)
    if not record:
        return result[0] if single else tuple(result)
    ctx._out_meta = out_meta        # (materialized zeros for undefined grads, one output or several)
    if nondiff_idx:
        ctx._nondiff_idx = frozenset(nondiff_idx)
    # saved tensors are packed once the outputs are known (an output is saved without a cycle)
    to_save = ctx.to_save
    if to_save:
        # cleared first: the SavedTensors hold them now (as PyTorch clears ctx.to_save), and a pack hook that
        # raises (a checkpoint's early stop) leaves no cycle output -> ctx -> to_save behind
        del ctx.to_save
        by_id = {id(r): k for k, r in enumerate(result) if isinstance(r, T)}
        orig_ids = {id(o): k for k, o in enumerate(outs) if isinstance(o, T)}
        saved = []
        for i, t in enumerate(to_save):
            if t is None:
                saved.append(None)
            elif not isinstance(t, T):
                raise TypeError(f"save_for_backward can only save variables, but argument {i} is of type "
                                f"{type(t).__name__}")
            elif id(t) in by_id or id(t) in orig_ids:
                k = by_id.get(id(t), orig_ids.get(id(t)))
                r = result[k]
                if r.grad_fn is ctx:
                    saved.append(SavedTensor(r, ctx, r._output_nr))
                elif id(r) in dirty and _is_view(r):
                    # a view modified in place (PyTorch's is_inplace_on_view): its data and a weak reference to
                    # this node, not the view itself (which would make a cycle through CopySlices)
                    saved.append(SavedTensor(r, ctx, k))
                else:
                    saved.append(SavedTensor(r))
            else:
                saved.append(SavedTensor(t))
        ctx._saved_vars = saved
        ctx._saved = tuple(saved)
    return result[0] if single else tuple(result)


_DelayedError = Error     # (primitives' non-differentiable gradients: ``_DelayedError.apply(g, msg=...)``)


def once_differentiable(fn):
    """Decorate a Function's backward that is not itself differentiable: it runs under no_grad and
    differentiating its result raises."""
    @functools.wraps(fn)
    def wrapper(ctx, *args):
        with no_grad():
            outputs = fn(ctx, *args)
        if not _state.enabled:
            return outputs
        T = _g.Tensor
        if not any(isinstance(a, T) and a.requires_grad for a in args):
            return outputs
        outs = outputs if isinstance(outputs, tuple) else (outputs,)
        # one Error node for all outputs (PyTorch's DelayedError): aliases that require grad, None as None
        fake = [o.detach().requires_grad_(True) if isinstance(o, T) and (_is_floating(o._data.dtype) or
                                                                          o._data.dtype.kind == "c") else o
                for o in outs]
        return DelayedError(b"trying to differentiate twice a function that was marked with @once_differentiable",
                            len(outs))(*fake)
    return wrapper


class InplaceFunction(Function):
    def __init__(self, inplace=False):
        self.inplace = inplace


class NestedIOFunction(Function):  # pragma: no cover - legacy API kept for imports
    pass
