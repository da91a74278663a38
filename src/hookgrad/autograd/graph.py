"""Backward-graph nodes, the hooks that live on them, and saved tensors.

Every differentiable primitive is a subclass of :class:`Node`: ``forward`` (on NumPy arrays) and
``backward`` (on Tensors, so that gradients are themselves differentiable) sit side by side in one
small class. ``Node.apply`` is the single place where a graph edge is recorded, where saved tensors
are packed, and where broadcasting and dtype promotion are undone on the way back.
"""
import itertools
import re
import threading
import weakref

import numpy as np

from ..utils.hooks import RemovableHandle, HookDict, hook_name
from .grad_mode import _state

__all__ = ["Node", "AccumulateGrad", "saved_tensors_hooks", "save_on_cpu", "disable_saved_tensors_hooks",
           "register_multi_grad_hook", "allow_mutation_on_saved_tensors", "increment_version"]

_seq = itertools.count()
_MAX_SEQ = float("inf")

Tensor = None  # set by hookgrad._tensor (avoids a circular import)

_FREED = ("Trying to backward through the graph a second time (or directly access saved tensors after they "
          "have already been freed). Saved intermediate values of the graph are freed when you call .backward() "
          "or autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time "
          "or if you need to access saved tensors after calling backward.")


# --------------------------------------------------------------------------------------------
# hook-result checks shared by every autograd hook (tensor hooks, node pre/post hooks)

def check_tensor_result(hook, old, new):
    """Validate what a gradient hook returned for one gradient; return the gradient to use."""
    if new is None or new is old:
        return old
    if not isinstance(new, Tensor):
        raise TypeError(f"expected Variable, but hook returned '{type(new).__name__}'")
    if old is None:
        raise RuntimeError("can't replace a None gradient with a non-None value")
    if new.dtype is not old.dtype:
        raise RuntimeError(f"hook '{hook_name(hook)}' has changed the type of value "
                           f"(was torch.{old.dtype._legacy} got torch.{new.dtype._legacy})")
    if new._data.shape != old._data.shape:
        raise RuntimeError(f"hook '{hook_name(hook)}' has changed the size of value "
                           f"(hookgrad: expected {tuple(old.shape)}, got {tuple(new.shape)})")
    return new


def check_tuple_result(hook, old, new):
    """Validate a node hook's return value: None, or a tuple of len(old) with checked entries."""
    if new is None or new is old:
        return old
    if not isinstance(new, tuple):
        raise TypeError(f"expected tuple, but hook returned '{type(new).__name__}'")
    if len(new) != len(old):
        raise RuntimeError(f"hook '{hook_name(hook)}' has returned an incorrect number of values "
                           f"(got {len(new)}, but expected {len(old)})")
    out = []
    for o, n in zip(old, new):
        if n is None:
            out.append(None)
        else:
            out.append(check_tensor_result(hook, o, n))
    return tuple(out)


def run_tensor_hooks(hooks, grad):
    """Run a tensor's gradient hooks in order, each seeing the previous one's result."""
    for hook in tuple(hooks.values()):
        grad = check_tensor_result(hook, grad, hook(grad))
    return grad


# --------------------------------------------------------------------------------------------
# saved tensors

class _HookStack(threading.local):
    def __init__(self):
        self.stack = []            # (pack, unpack) pairs, innermost last
        self.disabled = None       # error message while disable_saved_tensors_hooks is active


_hooks_tls = _HookStack()


class SavedTensor:
    """One tensor saved for backward: checks versions, runs pack/unpack hooks, can be freed."""
    __slots__ = ("_tensor", "_version", "_vc", "_is_output", "_node_ref", "_output_nr", "_data",
                 "_requires_grad", "_packed", "_unpack", "_freed", "_hooks_set")

    def __init__(self, tensor, node=None, output_nr=0):
        self._freed = False
        self._hooks_set = False
        self._version = tensor._vc[0]
        self._vc = tensor._vc
        self._is_output = node is not None
        self._unpack = None
        if self._is_output:
            # Saving an output strongly would make a cycle node -> output -> node: keep its data and
            # rebuild the tensor (with this node as grad_fn) on unpack, as PyTorch does.
            self._tensor = None
            self._data = tensor._data
            self._node_ref = weakref.ref(node)
            self._output_nr = output_nr
            self._requires_grad = tensor.requires_grad
        else:
            self._tensor = tensor
        tls = _hooks_tls
        if tls.stack:
            if tls.disabled is not None:
                raise RuntimeError(tls.disabled)
            pack, self._unpack = tls.stack[-1]
            self._packed = pack(self._materialize())
            self._tensor = None
            self._data = None

    def _materialize(self):
        if self._tensor is not None:
            return self._tensor
        node = self._node_ref()
        return Tensor._make(self._data, self._requires_grad, node, self._output_nr, self._vc)

    def unpack(self, node=None):
        if self._freed:
            raise RuntimeError(_FREED)
        if self._unpack is not None:
            t = self._unpack(self._packed)
            if not isinstance(t, Tensor):
                raise TypeError("Output of saved tensor unpack_hook expected to be a Tensor but got result of type "
                                f"{type(t).__name__}")
            return t
        if self._vc[0] != self._version:
            t = self._materialize()
            gf = t.grad_fn
            where = f", which is output {t._output_nr} of {_short_name(gf)}," if gf is not None else ""
            raise RuntimeError(
                "one of the variables needed for gradient computation has been modified by an inplace operation: "
                f"[torch.{t.dtype._legacy} [{', '.join(map(str, t.shape))}]]{where} is at version {self._vc[0]}; "
                f"expected version {self._version} instead. Hint: enable anomaly detection to find the operation "
                "that failed to compute its gradient, with torch.autograd.set_detect_anomaly(True, check_nan=False).")
        return self._materialize()

    def register_hooks(self, pack, unpack):
        if self._hooks_set:
            raise RuntimeError("Calling register_hooks on a saved tensor whose hooks have already been set. "
                               "Hint: only one pair of hooks is allowed at a time.")
        if self._freed:
            raise RuntimeError(_FREED)
        self._hooks_set = True
        t = self._materialize() if self._unpack is None else self._unpack(self._packed)
        self._packed = pack(t)
        self._unpack = unpack
        self._tensor = None
        self._data = None

    def free(self):
        self._freed = True
        self._tensor = None
        self._data = None
        self._packed = None


def _short_name(node):
    return re.sub(r"Backward\d*$", "", node.name())


# --------------------------------------------------------------------------------------------
# Node

class Node:
    """A node of the backward graph (``tensor.grad_fn``) and, for primitives, the op itself.

    Subclasses define ``forward(self, *arrays)`` returning an array (or a tuple for multi-output ops)
    and ``backward(self, *grads)`` returning one gradient Tensor (or None) per forward argument.
    ``save`` lists the argument indices kept for backward (``-1`` keeps the output); backward reads
    them from ``self.saved_tensors``.
    """
    save = ()                 # argument indices to save; -1 = the (first) output
    saved_names = ()          # names for grad_fn._saved_<name>, parallel to ``save``
    nondiff_outputs = ()      # output indices that never get a grad_fn (e.g. argmax indices)
    materialize_grads = True

    # hook storage, created on first registration (hooks cost nothing when absent)
    _pre_hooks = None
    _post_hooks = None
    _tensor_pre_hooks = None      # list of (output slot, HookDict of a tensor)
    _retains_grad = None          # {output slot: weakref to the tensor retaining its grad}
    _metadata = None
    _saved = ()
    _freed = False
    _in_meta = ()
    _out_meta = None
    next_functions = ()
    _seq = 0

    def __init_subclass__(cls, name=None, **kw):
        super().__init_subclass__(**kw)
        if name is not None:
            cls.__name__ = cls.__qualname__ = name

    # ---- construction: the one place where graphs are recorded ----
    @classmethod
    def apply(cls, *args, **params):
        node = cls.__new__(cls)
        if params:
            node.__dict__.update(params)
        T = Tensor
        arrays = [a._data if isinstance(a, T) else a for a in args]
        out = node.forward(*arrays)
        st = _state
        if st.enabled:
            for a in args:
                if isinstance(a, T) and a.requires_grad:
                    return node._record(args, out)
        if type(out) is tuple:
            return tuple(T._make(o) for o in out)
        return T._make(out)

    def _record(self, args, out):
        T = Tensor
        edges = []
        meta = []
        for a in args:
            if isinstance(a, T) and a.requires_grad:
                gf = a.grad_fn
                edges.append((gf, a._output_nr) if gf is not None else (a._grad_accumulator(), 0))
                meta.append((a._data.shape, a.dtype))
            else:
                edges.append((None, 0))
                meta.append(None)
        self.next_functions = tuple(edges)
        self._in_meta = meta
        self._seq = next(_seq)
        if type(out) is tuple:
            nd = self.nondiff_outputs
            res = tuple(T._make(o) if i in nd else T._make(o, True, self, i) for i, o in enumerate(out))
            self._out_meta = [(o.shape, o.dtype) for o in out]
            first = res[0]
        else:
            res = first = T._make(out, True, self, 0)
        if self.save:
            self._saved = tuple(SavedTensor(first, self, 0) if i == -1 else
                                (SavedTensor(args[i]) if isinstance(args[i], T) else args[i]) for i in self.save)
        return res

    # ---- what backward code uses ----
    @property
    def saved_tensors(self):
        return tuple(s.unpack() if type(s) is SavedTensor else s for s in self._saved)

    @property
    def needs_input_grad(self):
        return tuple(e[0] is not None for e in self.next_functions)

    def forward(self, *args):  # pragma: no cover - abstract
        raise NotImplementedError

    def backward(self, *grads):  # pragma: no cover - abstract
        raise NotImplementedError(f"{self.name()} has no backward")

    # ---- called by the engine ----
    def _run_backward(self, grads):
        """Compute grad_inputs from grad_outputs: materialise, call backward, undo broadcasting."""
        n = len(self.next_functions)
        if all(g is None for g in grads):
            return (None,) * n
        if len(grads) > 1 and self.materialize_grads and self._out_meta is not None:
            grads = [g if g is not None else Tensor._make(np.zeros(m[0], m[1].np)) for g, m in zip(grads, self._out_meta)]
        res = self.backward(*grads)
        if type(res) is not tuple:
            res = (res,)
        if len(res) < n:
            res = res + (None,) * (n - len(res))
        out = []
        for (fn, _), gx, meta in zip(self.next_functions, res, self._in_meta):
            if fn is None or gx is None:
                out.append(None)
                continue
            shape, dt = meta
            if gx._data.shape != shape:
                gx = gx.sum_to_size(shape)
            if gx.dtype is not dt:
                gx = gx.to(dt)
            out.append(gx)
        return tuple(out)

    def _release(self):
        if self._saved:
            for s in self._saved:
                if type(s) is SavedTensor:
                    s.free()
            self._freed = True

    # ---- public Node API ----
    def name(self):
        return type(self).__name__

    @property
    def metadata(self):
        if self._metadata is None:
            self._metadata = {}
        return self._metadata

    def register_hook(self, fn):
        """Post-hook ``fn(grad_inputs, grad_outputs)``; may return a tuple replacing grad_inputs."""
        if self._post_hooks is None:
            self._post_hooks = HookDict()
        h = RemovableHandle(self._post_hooks)
        self._post_hooks[h.id] = fn
        return h

    def register_prehook(self, fn):
        """Pre-hook ``fn(grad_outputs)``; may return a tuple replacing grad_outputs."""
        if self._pre_hooks is None:
            self._pre_hooks = HookDict()
        h = RemovableHandle(self._pre_hooks)
        self._pre_hooks[h.id] = fn
        return h

    def _register_tensor_hooks(self, slot, hooks):
        if self._tensor_pre_hooks is None:
            self._tensor_pre_hooks = []
        self._tensor_pre_hooks.append((slot, hooks))

    def _register_retain_grad(self, slot, tensor):
        if self._retains_grad is None:
            self._retains_grad = {}
        self._retains_grad[slot] = weakref.ref(tensor)

    def __getattr__(self, attr):
        # grad_fn._saved_self / _raw_saved_self, named as PyTorch names them
        if attr.startswith("_raw_saved_") or attr.startswith("_saved_"):
            raw = attr.startswith("_raw_saved_")
            key = attr[len("_raw_saved_"):] if raw else attr[len("_saved_"):]
            names = self.saved_names
            if key in names:
                s = self._saved[names.index(key)] if self._saved else None
                if type(s) is not SavedTensor:
                    return s
                return s if raw else s.unpack()
            if not raw and key in self.__dict__:
                return self.__dict__[key]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{attr}'")

    def __call__(self, *grads):
        return self._run_backward(list(grads))

    def _input_shapes(self):
        return [m[0] if m else None for m in self._in_meta]


class AccumulateGrad(Node):
    """Writes a leaf's ``.grad``. One per leaf while someone references it (PyTorch semantics)."""
    _seq = _MAX_SEQ

    def __init__(self, variable):
        self.variable = variable
        self.next_functions = ()

    def name(self):
        return "torch::autograd::AccumulateGrad"

    def _run_backward(self, grads):
        g = grads[0]
        var = self.variable
        if g is None:
            return ()
        if var._grad is None:
            if _state.enabled:     # create_graph: keep the graph of the gradient
                var._grad = g if g.grad_fn is None and not g.requires_grad and g._data.flags.owndata else g.clone()
            else:
                var._grad = Tensor._make(np.array(g._data, dtype=var._data.dtype, copy=True))
        elif _state.enabled:
            var._grad = var._grad + g
        else:
            gd = var._grad._data
            if gd.shape != g._data.shape:
                raise RuntimeError(f"hookgrad: the gradient of shape {tuple(g.shape)} cannot be accumulated "
                                   f"into .grad of shape {tuple(gd.shape)}")
            np.add(gd, g._data, out=gd, casting="unsafe")
            var._grad._vc[0] += 1
        hooks = var._post_accumulate_grad_hooks
        if hooks:
            for hook in tuple(hooks.values()):
                r = hook(var)
                if r is not None:
                    if isinstance(r, Tensor):
                        raise RuntimeError("Tensor post accumulate grad hooks should return None.")
                    raise TypeError(f"expected Variable, but hook returned '{type(r).__name__}'")
        return ()


class GraphRoot(Node, name="GraphRoot"):
    """Starts a backward with several roots: returns the seed gradients."""

    def __init__(self, edges, grads):
        self.next_functions = tuple(edges)
        self._grads = grads
        self._in_meta = [None] * len(edges)
        self._seq = _MAX_SEQ

    def _run_backward(self, grads):
        return tuple(self._grads)


# --------------------------------------------------------------------------------------------
# saved-tensor hooks (G2-G5)

class saved_tensors_hooks:
    """Context manager setting pack/unpack hooks for every tensor saved for backward inside it."""

    def __init__(self, pack_hook, unpack_hook):
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self):
        if _hooks_tls.disabled is not None:
            raise RuntimeError(_hooks_tls.disabled)
        _hooks_tls.stack.append((self.pack_hook, self.unpack_hook))
        return self

    def __exit__(self, *exc):
        _hooks_tls.stack.pop()


class save_on_cpu(saved_tensors_hooks):
    """Saved tensors are moved to the CPU when packed and back to their device when unpacked."""

    def __init__(self, pin_memory=False, device_type="cuda"):
        def pack(t):
            return (t.device, t.cpu())

        def unpack(packed):
            device, t = packed
            return t.to(device, non_blocking=pin_memory)
        super().__init__(pack, unpack)


class disable_saved_tensors_hooks:
    """Any use of saved_tensors_hooks inside this context raises RuntimeError(error_message)."""

    def __init__(self, error_message):
        self.error_message = error_message

    def __enter__(self):
        self.prev = _hooks_tls.disabled
        _hooks_tls.disabled = self.error_message
        if _hooks_tls.stack:
            _hooks_tls.disabled = self.prev
            raise RuntimeError(self.error_message)

    def __exit__(self, *exc):
        _hooks_tls.disabled = self.prev


def increment_version(tensor):
    tensor._vc[0] += 1
