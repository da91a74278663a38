"""Backward-graph nodes, the hooks that live on them, and saved tensors.

Every differentiable primitive is a subclass of :class:`Node`: ``forward`` (on NumPy arrays) and
``backward`` (on Tensors, so that gradients are themselves differentiable) sit side by side in one
small class. ``Node.apply`` is the single place where a graph edge is recorded, where saved tensors
are packed, and where broadcasting and dtype promotion are undone on the way back.

Also here (``torch.autograd.graph``): register_multi_grad_hook, saved_tensors_hooks, save_on_cpu,
disable_saved_tensors_hooks, allow_mutation_on_saved_tensors and increment_version.
"""
import contextlib
import itertools
import re
import threading
import traceback
import weakref
from collections import defaultdict

import numpy as np
from sys import getrefcount as _getrefcount

from .. import _dtype as D
from .._errors import NUMPY_ERRORS as _NUMPY_ERRORS, from_numpy as _from_numpy
from ..utils.hooks import add_hook, RemovableHandle, HookDict, hook_name
from .grad_mode import _state

__all__ = ["Node", "OpHook", "register_op_hook", "op_name", "AccumulateGrad", "saved_tensors_hooks", "save_on_cpu", "disable_saved_tensors_hooks",
           "register_multi_grad_hook", "allow_mutation_on_saved_tensors", "increment_version"]

_seq = itertools.count()
_new = object.__new__
_ndarray = np.ndarray
_weakref = weakref.ref
_asarray = np.asarray


def expand_np(g, shape):
    """A read-only broadcast of ``g`` to ``shape`` (like Tensor.expand: stride-0 dims).

    NOTE: ``np.broadcast_to`` costs ~2.5 us in Python; building the strided view directly ~1 us."""
    if g.flags.c_contiguous and g.ndim <= len(shape):
        gs = (1,) * (len(shape) - g.ndim) + g.shape
        st = (0,) * (len(shape) - g.ndim) + g.strides
        strides = tuple(0 if a == 1 and b != 1 else t for a, b, t in zip(gs, shape, st))
        out = _ndarray(shape, g.dtype, buffer=g, strides=strides)
        out.flags.writeable = False
        return out
    return np.broadcast_to(g, shape)


def sum_to_shape(a, shape):
    """Sum a broadcast array back to ``shape`` (undoing broadcasting on NumPy arrays)."""
    lead = a.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(i + lead for i, s in enumerate(shape) if s == 1 and a.shape[i + lead] != 1)
    if axes:
        a = a.sum(axis=axes, keepdims=True)
    if lead:
        a = a.reshape(shape)
    return a
_MAX_SEQ = float("inf")
_NO_EDGE = (None, 0)

Tensor = None  # set by hookgrad._tensor (avoids a circular import)
_anomaly_enabled = False  # set by autograd.anomaly: Node records the forward traceback while True

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
    od, nd = old._data, new._data
    if od.dtype != nd.dtype:
        raise RuntimeError(f"hook '{hook_name(hook)}' has changed the type of value "
                           f"(was torch.{old.dtype._legacy} got torch.{new.dtype._legacy})")
    if od.shape != nd.shape:
        raise RuntimeError(f"hook '{hook_name(hook)}' has changed the size of value "
                           f"(hookgrad: expected {list(od.shape)}, got {list(nd.shape)})")
    return new


def check_tuple_result(hook, old, new, node=None, what="grad_inputs"):
    """Validate a node hook's return value: None, or a tuple of len(old) with checked entries.
    ``node`` (when known) is named in the count error, after PyTorch's text."""
    if new is None or new is old:
        return old
    if not isinstance(new, tuple):
        raise TypeError(f"expected tuple, but hook returned '{type(new).__name__}'")
    if len(new) != len(old):
        where = f" (hookgrad: the hook is on {node.name()}, which has {len(old)} {what})" if node is not None else ""
        raise RuntimeError(f"hook '{hook_name(hook)}' has returned an incorrect number of values "
                           f"(got {len(new)}, but expected {len(old)}){where}")
    return tuple(None if n is None else check_tensor_result(hook, o, n) for o, n in zip(old, new))


def run_tensor_hooks(hooks, grad):
    """Run a tensor's gradient hooks in order (snapshot), each seeing the previous one's result."""
    for hook in tuple(hooks.values()):
        res = hook(grad)
        if res is not None:
            grad = check_tensor_result(hook, grad, res)
    return grad


# --------------------------------------------------------------------------------------------
# saved tensors

class _HookStack(threading.local):
    def __init__(self):
        self.stack = []            # (pack, unpack) pairs, innermost last
        self.disabled = None       # error message while disable_saved_tensors_hooks is active


_hooks_tls = _HookStack()


_PACK_INPLACE = ("A saved tensor pack hook is modifying its input in place. Tensors provided as input to pack hook "
                 "cannot be modified by in-place operations as this can lead to unexpected side-effects. Please open "
                 "an issue if you need to perform in-place operations on the input to a pack hook.")


class SavedTensor:
    """One tensor saved for backward (``grad_fn._raw_saved_<name>``): checks versions, runs
    pack/unpack hooks, can be freed (``_vc`` is None once freed).

    Under saved-tensor hooks (as PyTorch's SavedVariable) only the packed object and the graph
    position of the saved tensor are kept: the unpacked value is re-attached there (its grad_fn and
    output_nr, or the leaf's AccumulateGrad), so a pack hook that detaches still gives a
    differentiable gradient under create_graph=True."""
    __slots__ = ("_tensor", "_version", "_vc", "_node_ref", "_output_nr", "_data", "_requires_grad",
                 "_packed", "_unpack", "_grad_fn", "_grad_acc")

    def __init__(self, tensor, node=None, output_nr=0):
        self._vc = vc = tensor._vc
        self._version = vc[0]
        self._unpack = None
        if node is None:
            self._tensor = tensor
            self._node_ref = None
        else:
            # Saving an output strongly would make a cycle node -> output -> node: keep its data and
            # rebuild the tensor (with this node as grad_fn) on unpack, as PyTorch does.
            self._tensor = None
            self._data = tensor._data
            self._node_ref = weakref.ref(node)
            self._output_nr = output_nr
            self._requires_grad = tensor.requires_grad
        if _hooks_tls.stack:
            pack, unpack = _hooks_tls.stack[-1]
            self._set_hooks(tensor, pack, unpack)

    def _set_hooks(self, tensor, pack, unpack):
        """Pack ``tensor`` (the input itself, or the output) with grad mode off, as PyTorch does; keep
        where it sits in the graph so that the unpacked value can be re-attached there."""
        self._grad_fn = tensor.grad_fn if self._node_ref is None else None
        self._output_nr = tensor._output_nr
        self._requires_grad = rg = tensor.requires_grad
        self._grad_acc = weakref.ref(tensor._grad_accumulator()) if rg and tensor.grad_fn is None else None
        vc = tensor._vc
        version = vc[0]
        prev = _state.enabled
        _state.enabled = False
        try:
            packed = pack(tensor)
        finally:
            _state.enabled = prev
        if vc[0] != version:
            raise RuntimeError(_PACK_INPLACE)
        self._packed = packed
        self._unpack = unpack
        self._tensor = None
        self._data = None

    @staticmethod
    def _of_input(tensor):
        """Fast path for saving an input while no saved-tensor hooks are active."""
        st = _new(SavedTensor)
        st._data = None
        st._tensor = tensor
        st._node_ref = None
        st._vc = vc = tensor._vc
        st._version = vc[0]
        st._unpack = None
        return st

    @property
    def data(self):
        """What is stored: the packed object under saved-tensor hooks, else the saved tensor."""
        if self._unpack is not None:
            return self._packed
        if self._vc is None:
            return None
        t = self._tensor
        return t if t is not None else Tensor._make(self._data, False, None, 0, self._vc)

    @property
    def unpack_hook(self):
        return self._unpack

    def _array(self):
        """The saved value as a NumPy array (version-checked): what array-level backward reads."""
        vc = self._vc
        if vc is not None and self._unpack is None and vc[0] == self._version:
            t = self._tensor
            return t._data if t is not None else self._data
        return self.unpack()._data

    def _materialize(self):
        if self._tensor is not None:
            return self._tensor
        return Tensor._make(self._data, self._requires_grad, self._node_ref(), self._output_nr, self._vc)

    def unpack(self):
        vc = self._vc
        if vc is None:
            raise RuntimeError(_FREED)
        if self._unpack is not None:
            t = self._unpack(self._packed)
            if not isinstance(t, Tensor):
                raise TypeError("Output of saved tensor unpack_hook expected to be a Tensor but got result of type "
                                f"{type(t).__name__}")
            # a new tensor over the unpacked data, at the saved tensor's place in the graph
            ref = self._node_ref
            gf = self._grad_fn if ref is None else ref()
            if gf is not None:
                return Tensor._make(t._data, True, gf, self._output_nr)
            res = Tensor._make(t._data, self._requires_grad)
            if self._grad_acc is not None:
                res._grad_acc = self._grad_acc
            return res
        if vc[0] != self._version:
            t = self._materialize()
            gf = t.grad_fn
            where = f", which is output {t._output_nr} of {_short_name(gf)}," if gf is not None else ""
            raise RuntimeError(
                "one of the variables needed for gradient computation has been modified by an inplace operation: "
                f"[torch.{t.dtype._legacy} [{', '.join(map(str, t.shape))}]]{where} is at version {vc[0]}; "
                f"expected version {self._version} instead. Hint: enable anomaly detection to find the operation "
                "that failed to compute its gradient, with torch.autograd.set_detect_anomaly(True, check_nan=False).")
        t = self._tensor
        if t is not None:
            return t
        return Tensor._make(self._data, self._requires_grad, self._node_ref(), self._output_nr, vc)

    def register_hooks(self, pack_hook, unpack_hook):
        """Per-tensor pack/unpack pair (G2b): pack runs now, unpack at every later read."""
        if not callable(pack_hook) or not callable(unpack_hook):
            raise TypeError("register_hooks(): incompatible function arguments. Both hooks must be callable.")
        if self._unpack is not None:
            raise RuntimeError("Calling register_hooks on a saved tensor whose hooks have already been set. "
                               "Hint: only one pair of hooks is allowed at a time.")
        if self._vc is None:
            raise RuntimeError(_FREED)
        self._set_hooks(self._materialize(), pack_hook, unpack_hook)

    def free(self):
        self._vc = None
        self._tensor = None
        self._data = None
        self._packed = None


class _NoneSaved(SavedTensor):
    """``grad_fn._raw_saved_<name>`` of an entry that was not saved (its gradient was not needed)."""
    __slots__ = ()

    def __init__(self):
        self._vc = None
        self._unpack = None
        self._tensor = None

    data = property(lambda self: None)

    def unpack(self):
        return None

    def register_hooks(self, pack_hook, unpack_hook):
        raise RuntimeError("Calling register_hooks on a saved tensor with value None is forbidden")


_PKG_DIR = __file__.rsplit("autograd", 1)[0]


def _user_stack():
    """The current stack as formatted lines, without hookgrad's own frames (anomaly mode)."""
    frames = [f for f in traceback.extract_stack() if not f.filename.startswith(_PKG_DIR)]
    return traceback.format_list(frames)


def _version_error(tensor, version):
    st = SavedTensor._of_input(tensor)
    st._version = version
    st.unpack()     # raises PyTorch's "modified by an inplace operation" error


def _short_name(node):
    return re.sub(r"Backward\d*$", "", node.name())


# --------------------------------------------------------------------------------------------
# Node

class Node:
    """A node of the backward graph (``tensor.grad_fn``) and, for primitives, the op itself.

    Subclasses define ``forward(self, *arrays)`` returning an array (or a tuple for multi-output ops)
    and ``backward(self, *grads)`` returning one gradient Tensor (or None) per forward argument.
    ``save`` lists the argument indices kept for backward (``-1`` keeps the output); backward reads
    them from ``self.saved_values``.
    """
    save = ()                 # argument indices to save; -1 = the (first) output, -1 - k = output k
    saved_names = ()          # names for grad_fn._saved_<name>, parallel to ``save`` ("_x": kept, not shown)
    saved_attrs = ()          # PyTorch's other saved values, grad_fn._saved_<name>: see _attr_getter
    save_if = None            # parallel to ``save``: per entry, the input indices whose gradient needs it
                              # (saved only if one of them requires grad, as PyTorch); None: always saved
    _mask2 = None
    _pack_order = None        # PyTorch's packing order of ``save`` (inputs by name, then outputs), if not ``save``'s
    nondiff_outputs = ()      # output indices that never get a grad_fn (e.g. argmax indices)
    _nondiff_slots = False    # True: those outputs still have a grad_outputs slot (custom Functions)
    materialize_grads = True

    # hook storage, created on first registration (hooks cost nothing when absent)
    _pre_hooks = None
    _post_hooks = None
    _tensor_pre_hooks = None      # list of (output slot, HookDict of a tensor)
    _retains_grad = None          # {output slot: weakref to the tensor retaining its grad}
    _hooked = False               # True once tensor hooks or retain_grad are bound to this node
    _metadata = None
    _saved = ()
    _freed = False
    _versions = None              # versions of lightly saved inputs (parallel to _saved), see _record
    _in_meta = ()                 # per next_functions entry: (shape, numpy dtype) or None
    _out_meta = None              # multi-output nodes: [(shape, hookgrad dtype)] per output
    _trace = None                 # forward traceback, recorded only in anomaly mode
    _masks_unneeded = True        # engine drops grads towards nodes a pass will not run (not custom Functions)
    next_functions = ()
    _seq = 0

    def __init_subclass__(cls, name=None, **kw):
        super().__init_subclass__(**kw)
        if name is not None:
            cls.__name__ = cls.__qualname__ = name
        # a subclass that redefines backward must not inherit an array-level twin of another formula
        if "backward" in cls.__dict__ and "backward_np" not in cls.__dict__:
            cls.backward_np = None
        if "_np" not in cls.__dict__:
            cls._np = cls.backward_np is not None
        _declare_saved(cls)
        save, names = cls.save, cls.saved_names
        order = None
        if len(names) == len(save) > 1:
            order = sorted(range(len(save)), key=lambda k: (save[k] < 0, names[k]))
            order = None if order == list(range(len(save))) else tuple(order)
        cls._pack_order = order
        cond = cls.save_if
        assert cond is None or len(cond) == len(save), cls
        # record2's table (save = (0, 1)): (input 0 needs grad, input 1 needs grad) -> what is saved
        cls._mask2 = None if cond is None or save != (0, 1) else {
            (p, q): tuple(c is None or any((p, q)[j] for j in c) for c in cond) for p in (False, True)
            for q in (False, True)}

    # ---- construction: the one place where graphs are recorded ----
    @classmethod
    def apply(cls, *args, **params):
        if _op_hooks and not _op_tls.busy:
            return _apply_with_op_hooks(cls, args, params)
        node = _new(cls)
        if params:
            node.__dict__.update(params)
        T = Tensor
        try:
            if len(args) == 2:
                a, b = args
                ta = isinstance(a, T)
                tb = isinstance(b, T)
                out = node.forward(a._data if ta else a, b._data if tb else b)
                # the slot, or for a view (``_lazy_rg``) the computed flag: see Tensor.requires_grad
                rec = ((ta and (a._requires_grad or a._lazy_rg and a.requires_grad))
                       or (tb and (b._requires_grad or b._lazy_rg and b.requires_grad)))
            elif len(args) == 1:
                a = args[0]
                if isinstance(a, T):
                    out = node.forward(a._data)
                    rec = a._requires_grad or a._lazy_rg and a.requires_grad
                else:
                    out = node.forward(a)
                    rec = False
            else:
                out = node.forward(*[a._data if isinstance(a, T) else a for a in args])
                rec = False
                if _state.enabled:
                    for a in args:
                        if isinstance(a, T) and a.requires_grad:
                            rec = True
                            break
        except _NUMPY_ERRORS as e:          # NumPy's own error: PyTorch's type, naming the op
            err = _from_numpy(op_name(cls).lower(), e)
            if err is None:
                raise
            raise err from None
        if type(out) is not _ndarray:
            out = tuple(o if type(o) is _ndarray else _asarray(o) for o in out) if type(out) is tuple else _asarray(out)
        if rec and _state.enabled:
            return node._record(args, out)
        if type(out) is tuple:
            return tuple(T._make(o) for o in out)
        t = _new(T)
        t._data = out
        t._requires_grad = False
        t.grad_fn = None
        t._output_nr = 0
        t._vc = [0]
        return t

    def _record(self, args, out):
        """Record this node as the grad_fn of ``out``: edges to the inputs' history, input metadata
        for undoing broadcasting and promotion, saved tensors."""
        T = Tensor
        edges = []
        meta = []
        for a in args:
            if isinstance(a, T) and (a._requires_grad or a._lazy_rg and a.requires_grad):
                gf = a.grad_fn
                if gf is None:
                    ref = a._grad_acc
                    gf = ref() if ref is not None else None
                    if gf is None:
                        gf = a._grad_accumulator()
                    edges.append((gf, 0))
                else:
                    edges.append((gf, a._output_nr))
                d = a._data
                meta.append((d.shape, d.dtype))
            else:
                edges.append(_NO_EDGE)
                meta.append(None)
        self.next_functions = tuple(edges)
        self._in_meta = meta
        self._seq = next(_seq)
        if _anomaly_enabled:
            self._trace = _user_stack()
        if type(out) is tuple:
            nd = self.nondiff_outputs
            if nd and not self._nondiff_slots:
                # PyTorch's built-in ops: a non-differentiable output (indices) is no output of the
                # node; the others are numbered among themselves (output_nr), and a node left with
                # one output is a single-output node (grad_outputs of length 1)
                diff = [i for i in range(len(out)) if i not in nd]
                nr = {i: k for k, i in enumerate(diff)}
                res = tuple(T._make(o) if i in nd else T._make(o, True, self, nr[i]) for i, o in enumerate(out))
                if len(diff) > 1:
                    self._out_meta = [(out[i].shape, D._NP_TO_DT[out[i].dtype]) for i in diff]
                douts = [res[i] for i in diff]      # by output_nr (save index -1 - output_nr)
                first = douts[0]
            else:
                res = douts = tuple(T._make(o) if i in nd else T._make(o, True, self, i) for i, o in enumerate(out))
                self._out_meta = [(o.shape, D._NP_TO_DT[o.dtype]) for o in out]
                first = res[0]
        else:
            res = first = _new(T)
            res._data = out
            res._requires_grad = True
            res.grad_fn = self
            res._output_nr = 0
            res._vc = [0]
        save = self.save
        if save:
            # Inputs are kept as the tensors themselves plus their version at save time; a
            # SavedTensor object is only built for outputs, under saved-tensor hooks, or when
            # grad_fn._raw_saved_<name> asks for one (hot path: two list appends per input).
            # An entry is saved only if a gradient that needs it is computed (``save_if``).
            saved = []
            mask = None if self.save_if is None else self._save_mask()
            if _hooks_tls.stack:
                # packed in PyTorch's order (inputs by name, then outputs); the array-level backward
                # is not used, so an unpacked value is read by the Tensor-level formula
                self._np = False
                saved = [None] * len(save)
                for k in self._pack_order or range(len(save)):
                    if mask is None or mask[k]:
                        i = save[k]
                        a = (first if i == -1 else douts[-1 - i]) if i < 0 else args[i]
                        saved[k] = SavedTensor(a, self, -1 - i) if i < 0 else SavedTensor(a) if isinstance(a, T) else a
            else:
                vers = []
                for k, i in enumerate(save):
                    if mask is not None and not mask[k]:
                        saved.append(None)
                        vers.append(None)
                    elif i < 0:                     # output -1 - i (-1: the first output)
                        o = first if i == -1 else douts[-1 - i]
                        st = _new(SavedTensor)      # SavedTensor(o, self, -1 - i), inlined (hot path)
                        st._tensor = None
                        st._data = o._data
                        st._vc = vc = o._vc
                        st._version = vc[0]
                        st._node_ref = _weakref(self)
                        st._output_nr = -1 - i
                        st._requires_grad = True
                        st._unpack = None
                        saved.append(st)
                        vers.append(None)
                    else:
                        a = args[i]
                        saved.append(a)
                        vers.append(a._vc[0] if isinstance(a, T) else None)
                self._versions = vers
            self._saved = saved
        return res

    def _save_mask(self):
        """Per ``save`` entry: is it needed, i.e. does one of the inputs listed in ``save_if`` for it
        need a gradient (PyTorch saves ``self`` of ``mul`` only if ``other`` requires grad)?"""
        key = tuple([e[0] is not None for e in self.next_functions])
        table = type(self).__dict__.get("_save_masks")
        if table is None:
            table = {}
            setattr(type(self), "_save_masks", table)
        mask = table.get(key)
        if mask is None:        # once per class and pattern of needed inputs
            mask = table[key] = tuple(c is None or any(key[j] for j in c if j < len(key)) for c in self.save_if)
        return mask

    # ---- what backward code uses ----
    @property
    def saved_values(self):
        """The saved entries (``save``), unpacked and version-checked: what ``backward`` reads.
        (PyTorch's built-in nodes have no ``saved_tensors``; custom Function nodes do.)"""
        if self._freed:
            raise RuntimeError(_FREED)
        vers = self._versions
        if vers is None:
            order = self._pack_order
            if order is None:
                return tuple([s.unpack() if type(s) is SavedTensor else s for s in self._saved])
            out = list(self._saved)         # unpacked in PyTorch's order, as they were packed
            for k in order:
                s = out[k]
                if type(s) is SavedTensor:
                    out[k] = s.unpack()
            return tuple(out)
        out = []
        for s, v in zip(self._saved, vers):
            if v is not None:
                if s._vc[0] != v:
                    _version_error(s, v)
                out.append(s)
            else:
                out.append(s.unpack() if type(s) is SavedTensor else s)
        return tuple(out)

    @property
    def needs_input_grad(self):
        return tuple(e[0] is not None for e in self.next_functions)

    def forward(self, *args):  # pragma: no cover - abstract
        raise NotImplementedError

    def backward(self, *grads):  # pragma: no cover - abstract
        raise NotImplementedError(f"{self.name()} has no backward")

    def _saved_pair(self):
        """saved_arrays() for two lightly saved tensors (Mul, Div, matmuls): the hot path. An entry
        that was not saved (save_if) reads None."""
        v = self._versions
        if v is not None and len(v) == 2:
            va, vb = v
            a, b = self._saved
            if va is not None:
                if vb is not None:
                    if a._vc[0] == va and b._vc[0] == vb:
                        return a._data, b._data
                elif b is None and a._vc[0] == va:
                    return a._data, None
            elif a is None and vb is not None and b._vc[0] == vb:
                return None, b._data
        return self.saved_arrays()

    def saved_arrays(self):
        """The saved values as NumPy arrays (non-tensor arguments as they were): for backward_np."""
        if self._freed:
            raise RuntimeError(_FREED)
        vers = self._versions
        if vers is None:
            return [s._array() if type(s) is SavedTensor else s for s in self._saved]
        out = []
        for s, v in zip(self._saved, vers):
            if v is not None:
                if s._vc[0] != v:
                    _version_error(s, v)
                out.append(s._data)
            elif type(s) is SavedTensor:
                vc = s._vc      # SavedTensor._array(), inlined
                if vc is not None and s._unpack is None and vc[0] == s._version:
                    t = s._tensor
                    out.append(t._data if t is not None else s._data)
                else:
                    out.append(s.unpack()._data)
            else:
                out.append(s)
        return out

    # Optional: ``backward_np(self, *grad_arrays)`` computing the same gradients on NumPy arrays.
    # Used when no graph of the gradient is needed (create_graph=False), where it skips the Tensor
    # layer; ``backward`` stays the definition (and is what double backward differentiates).
    backward_np = None
    _np = False

    def _np_run(self, buf):
        """grad_inputs as arrays from grad_outputs as arrays (single-output nodes with backward_np)."""
        g = buf[0]
        nf = self.next_functions
        if g is None or len(buf) != 1:
            return (None,) * len(nf)
        res = self.backward_np(g)
        if type(res) is not tuple:      # one input (unrolled: the hot unary ops)
            if res is None or nf[0][0] is None:
                return (None,)
            m = self._in_meta[0]
            if type(res) is not _ndarray:
                res = _asarray(res)
            if res.shape != m[0]:
                res = sum_to_shape(res, m[0])
            dt = res.dtype
            if dt is not m[1] and dt != m[1]:
                res = res.astype(m[1])
            return (res,)
        out = []
        for (fn, _), gx, meta in zip(nf, res, self._in_meta):
            if fn is None or gx is None:
                out.append(None)
                continue
            if type(gx) is not _ndarray:
                gx = _asarray(gx)
            if gx.shape != meta[0]:
                gx = sum_to_shape(gx, meta[0])
            dt = gx.dtype
            if dt is not meta[1] and dt != meta[1]:     # NOTE: `is` first: dtype != costs ~0.1 us
                gx = gx.astype(meta[1])
            out.append(gx)
        return out

    # ---- called by the engine ----
    def _run_backward(self, grads):
        """Compute grad_inputs from grad_outputs: materialise, call backward, undo broadcasting."""
        nf = self.next_functions
        if self._np and not _state.enabled and len(grads) == 1:
            g = grads[0]
            out = self._np_run([None if g is None else g._data])
            make = Tensor._make
            out = [None if a is None else make(a) for a in out]
            if len(out) < len(nf):
                out.extend([None] * (len(nf) - len(out)))
            return out
        if len(grads) == 1:
            if grads[0] is None:
                return (None,) * len(nf)
            res = self.backward(grads[0])
        else:
            for g in grads:
                if g is not None:
                    break
            else:
                return (None,) * len(nf)
            if self.materialize_grads and self._out_meta is not None:
                grads = [g if g is not None else Tensor._make(np.zeros(m[0], m[1].np))
                         for g, m in zip(grads, self._out_meta)]
            res = self.backward(*grads)
        if type(res) is not tuple:
            res = (res,)
        out = []
        for (fn, _), gx, meta in zip(nf, res, self._in_meta):
            if fn is None or gx is None:
                out.append(None)
                continue
            d = gx._data
            if d.shape != meta[0]:
                gx = gx.sum_to_size(meta[0])
                d = gx._data
            if d.dtype != meta[1]:
                gx = gx.to(_dt(meta[1]))
            out.append(gx)
        if len(out) < len(nf):
            out.extend([None] * (len(nf) - len(out)))
        return out

    def _release(self):
        saved = self._saved
        if saved:
            vers = self._versions
            if vers is None or None in vers:        # some entries are SavedTensor objects
                for s in saved:
                    if type(s) is SavedTensor:
                        s.free()
            self._saved = ()                         # drop the references (memory goes now)
            self._versions = None
            self._freed = True

    # ---- public Node API ----
    def name(self):
        return type(self).__name__

    def _sequence_nr(self):
        """The creation order the engine runs nodes by (latest first); AccumulateGrad: UINT64_MAX."""
        s = self._seq
        return 18446744073709551615 if s == _MAX_SEQ else s

    def _set_sequence_nr(self, sequence_nr):
        """Move the node in the engine's order (latest-created first)."""
        self._seq = _MAX_SEQ if sequence_nr == 18446744073709551615 else sequence_nr

    @property
    def metadata(self):
        if self._metadata is None:
            self._metadata = {}
        return self._metadata

    def hooks(self):
        """The hooks registered on this node, as ``HookInfo("node_pre" | "node", id, hook, ())``
        (tensor hooks bound to the node are listed by ``Tensor.hooks()``)."""
        from ..utils.hooks import HookInfo
        out = []
        for kind, d in (("node_pre", self._pre_hooks), ("node", self._post_hooks)):
            if d:
                out.extend(HookInfo(kind, hid, hook, ()) for hid, hook in d.items())
        return out

    def register_hook(self, fn):
        """Post-hook ``fn(grad_inputs, grad_outputs)``; may return a tuple replacing grad_inputs."""
        if self._post_hooks is None:
            self._post_hooks = HookDict()
        self._hooked = True
        h = add_hook(self._post_hooks, fn)
        return h

    def register_prehook(self, fn):
        """Pre-hook ``fn(grad_outputs)``; may return a tuple replacing grad_outputs."""
        if self._pre_hooks is None:
            self._pre_hooks = HookDict()
        self._hooked = True
        h = add_hook(self._pre_hooks, fn)
        return h

    def _register_tensor_hooks(self, slot, hooks):
        if self._tensor_pre_hooks is None:
            self._tensor_pre_hooks = []
        self._tensor_pre_hooks.append((slot, hooks))
        self._hooked = True

    def _register_retain_grad(self, slot, tensor):
        if self._retains_grad is None:
            self._retains_grad = {}
        self._retains_grad[slot] = weakref.ref(tensor)
        self._hooked = True

    def _unregister_retain_grad(self, slot):
        if self._retains_grad:
            self._retains_grad.pop(slot, None)

    # NOTE: no __getattr__ here: a class with one loses CPython's specialised attribute loads on
    # every instance (measured: 10% of a small-op forward + backward). grad_fn._saved_<name> and
    # _raw_saved_<name> are properties instead, made per class from saved_names (__init_subclass__)
    # and, for non-tensor parameters, on the first node given that parameter (apply).
    def _saved_value(self, key, raw):
        """grad_fn._saved_<key> / _raw_saved_<key>, named as PyTorch names them."""
        names = type(self).saved_names
        if key not in names:
            raise AttributeError(f"'{type(self).__name__}' object has no attribute "
                                 f"'{'_raw_saved_' if raw else '_saved_'}{key}'")
        i = names.index(key)
        if self._freed:
            # an entry that was never saved (save_if: its gradient was not needed) reads None, not "freed"
            if self.save_if is None or self._save_mask()[i]:
                if raw:                         # PyTorch: the released SavedVariable, data None
                    st = _new(SavedTensor)
                    st._unpack = None
                    st.free()
                    return st
                raise RuntimeError(_FREED)
            return _NoneSaved() if raw else None
        s = self._saved[i] if self._saved else None
        vers = self._versions
        if vers is not None and vers[i] is not None:
            # a lightly saved input: make it a SavedTensor now (register_hooks needs one)
            st = SavedTensor._of_input(s)
            st._version = vers[i]
            self._saved[i] = s = st
            vers[i] = None
        if type(s) is not SavedTensor:
            if s is None:
                return _NoneSaved() if raw else None
            # a Python number saved in a tensor's place (x * 2): PyTorch shows a 0-dim tensor
            return s if isinstance(s, Tensor) else Tensor._make(_asarray(s))
        if raw:
            if s._vc is None:
                raise RuntimeError(_FREED)
            self._np = False        # hooks may be registered on it: backward reads it as a Tensor
            return s
        return s.unpack()

    def __call__(self, *grads):
        return tuple(self._run_backward(list(grads)))

    def __repr__(self):
        return f"<{type(self).__name__} object at {hex(id(self))}>"

    def _input_shapes(self):
        return [m[0] if m else None for m in self._in_meta]


    @property
    def requires_grad(self):
        return True

    def _saved_input_tensor(self, k):
        """The tensor saved for input ``k`` (None if input k is not saved or was not needed)."""
        save = type(self).save
        if k not in save or not self._saved:
            return None
        s = self._saved[save.index(k)]
        if type(s) is SavedTensor:
            return s._tensor if s._tensor is not None else s.unpack()
        return s if isinstance(s, Tensor) else None

    def __dir__(self):
        """What PyTorch's node lists: its public API and its ``_saved_*`` values, no internals."""
        names = type(self)._dir_names
        specs = type(self)._attr_specs
        if specs:
            raw = [k for k in specs if isinstance(getattr(self, "_saved_" + k, None), Tensor)]
            if raw:
                names = sorted(names + ["_raw_saved_" + k for k in raw])
        return names


# ---- grad_fn._saved_<name>: PyTorch's names and values (Tensors, ints, floats, bools, tuples, None) ----

_SCALAR_ARGS = frozenset(("alpha", "beta", "exponent", "min", "max", "min_val", "max_val", "negative_slope",
                          "weight", "value", "threshold", "lambd", "scale", "input_scale", "eps", "other",
                          "self", "correction", "ord", "p", "end", "start", "step", "beta1", "momentum"))
_NODE_DIR = sorted(set(dir(object)) | {"__call__", "_sequence_nr", "_set_sequence_nr", "metadata", "name",
                                       "next_functions", "register_hook", "register_prehook", "requires_grad"})


def _py(v, wrap=False):
    """A saved value as PyTorch shows it: Python scalars and tuples, Tensors for arrays. Negative
    int64 arguments (dims, indices) read as PyTorch's unsigned wrap-around (-1 -> 2**64 - 1)."""
    if isinstance(v, (bool, float, str)) or v is None or isinstance(v, Tensor):
        return v
    if isinstance(v, int):
        return v + 18446744073709551616 if wrap and v < 0 else v
    if isinstance(v, np.ndarray):
        return Tensor._make(v)
    if isinstance(v, np.generic):
        return _py(v.item(), wrap)
    if isinstance(v, (tuple, list, range)):
        return tuple(_py(x, wrap) for x in v)
    if isinstance(v, np.dtype):
        return D._NP_TO_DT[v]
    return v


class _NodeNS(dict):
    """Names a ``saved_attrs`` expression reads: the node's attributes (parameters given to apply,
    values set in forward, class defaults) and input_sizes(k) / input_strides(k) / input_numel(k)."""
    __slots__ = ("node",)

    def __missing__(self, key):
        node = self.node
        if key == "input_sizes":
            return lambda k: None if node._in_meta[k] is None else tuple(node._in_meta[k][0])
        if key == "input_numel":
            return lambda k: None if node._in_meta[k] is None else int(np.prod(node._in_meta[k][0], dtype=np.int64))
        if key == "input_strides":
            def strides(k):
                t = node._saved_input_tensor(k)
                return None if t is None else tuple(st // t._data.itemsize for st in t._data.strides)
            return strides
        try:
            return getattr(node, key)
        except AttributeError:
            raise KeyError(key) from None      # falls through to the builtins


_EVAL_GLOBALS = {"__builtins__": {"tuple": tuple, "len": len, "int": int, "type": type}}


def _attr_getter(name, src):
    """How ``grad_fn._saved_<name>`` reads its value, from one ``saved_attrs`` entry ``"name"`` (the
    parameter of that name) or ``"name=<expression>"`` over the node's attributes, e.g.
    ``"dim=dims"``, ``"padding=padding[::2]"``, ``"self_sym_sizes=input_sizes(0)"``, ``"alpha=1"``."""
    wrap = name not in _SCALAR_ARGS
    code = compile(src, f"<saved_attrs {name}>", "eval")

    def get(node):
        ns = _NodeNS()
        ns.node = node
        return _py(eval(code, _EVAL_GLOBALS, ns), wrap)
    return get


def _declare_saved(cls):
    """Properties ``_saved_<name>`` / ``_raw_saved_<name>`` for a node class's declared names, and
    the list ``dir()`` shows."""
    for key in cls.__dict__.get("saved_names", ()):
        if not key.startswith("_"):
            setattr(cls, "_saved_" + key, property(lambda self, key=key: self._saved_value(key, False)))
            setattr(cls, "_raw_saved_" + key, property(lambda self, key=key: self._saved_value(key, True)))
    if "saved_attrs" in cls.__dict__:
        specs = {}
        for entry in cls.saved_attrs:
            name, _, src = entry.partition("=")
            specs[name] = _attr_getter(name, src or name)
        cls._attr_specs = specs
        for name in specs:
            def prop(self, name=name):
                get = type(self)._attr_specs.get(name)
                if get is None:
                    raise AttributeError(f"'{type(self).__name__}' object has no attribute '_saved_{name}'")
                return get(self)
            setattr(cls, "_saved_" + name, property(prop))

            def raw(self, name=name):       # a value kept as an array reads as a saved tensor
                v = getattr(self, "_saved_" + name)
                if not isinstance(v, Tensor):
                    raise AttributeError(f"'{type(self).__name__}' object has no attribute '_raw_saved_{name}'")
                return SavedTensor(v)
            setattr(cls, "_raw_saved_" + name, property(raw))
    tensors = [k for k in cls.saved_names if not k.startswith("_")]
    attrs = [k for k in getattr(cls, "_attr_specs", ()) if k not in tensors]
    cls._dir_names = sorted(_NODE_DIR + ["_saved_" + k for k in tensors + attrs]
                            + ["_raw_saved_" + k for k in tensors])


Node._attr_specs = {}
_declare_saved(Node)


def _dt(npdtype):
    return D._NP_TO_DT[np.dtype(npdtype)]


grad_accumulator_lock = threading.Lock()    # Tensor._grad_accumulator: one AccumulateGrad per leaf
# threads accumulating into .grad (PyTorch: a mutex per AccumulateGrad). One lock for all leaves: creating
# a lock per accumulator cost an allocation per leaf and step; reentrant, as a create_graph copy may run ops
_accumulate_lock = threading.RLock()


def _laid_out_like(g, d):
    """Can gradient array ``g`` become the ``.grad`` of a leaf with data ``d`` as it is (PyTorch's steal)?"""
    return (g.dtype == d.dtype and g.shape == d.shape and g.flags.c_contiguous and g.flags.writeable
            and type(g) is np.ndarray)


class AccumulateGrad(Node):
    """Writes a leaf's ``.grad``. One per leaf while someone references it (PyTorch semantics)."""
    _seq = _MAX_SEQ

    def __init__(self, variable):
        self.variable = variable
        self.next_functions = ()
        # the leaf's tensor hooks run here; Tensor.register_hook sets the flag on a live accumulator
        self._hooked = variable._backward_hooks is not None

    def name(self):
        return "torch::autograd::AccumulateGrad"

    def __repr__(self):
        return f"<AccumulateGrad object at {hex(id(self))}>"

    _np = True

    def _np_run(self, buf):
        """Array-level accumulation (plain backward, no hooks bound to this leaf's accumulator)."""
        g = buf[0]
        if g is None:
            return ()
        var = self.variable
        with _accumulate_lock:
            done = self._np_accumulate(var, g)
        if not done:
            return self._run_backward([Tensor._make(g)])
        if var._post_accumulate_grad_hooks:
            _run_post_accumulate_hooks(var)
        return ()

    def _np_accumulate(self, var, g):
        grad = var._grad
        if grad is None:
            d = var._data
            # PyTorch's rule: take the incoming gradient itself when no one else holds that object
            # (here: buf, the two frames' g and getrefcount's argument) and it is laid out like the variable; a view
            # keeps sharing its base, as a stolen view does in PyTorch.
            if _getrefcount(g) == 4 and _laid_out_like(g, d):
                var._grad = Tensor._make(g)
            else:
                var._grad = Tensor._make(np.array(g, dtype=d.dtype, copy=True, order="C"))
        else:
            gd = grad._data
            if gd.shape != g.shape or not gd.flags.writeable:
                return False
            np.add(gd, g, out=gd, casting="unsafe")
            grad._vc[0] += 1
        return True

    def _run_backward(self, grads):
        g = grads[0]
        var = self.variable
        if g is None:
            return ()
        with _accumulate_lock:
            self._accumulate(var, g)
        if var._post_accumulate_grad_hooks:
            _run_post_accumulate_hooks(var)
        return ()

    def _accumulate(self, var, g):
        if var._grad is None:
            if _state.enabled:     # create_graph: a copy that keeps the graph of the gradient (never stolen)
                var._grad = _CopyGrad.apply(g)
            else:
                d = g._data
                vd = var._data
                # PyTorch's rule (as in _np_run): take the incoming gradient when only the engine holds
                # it (its input buffer; ``g`` here and in _run_backward, ``d``; getrefcount's argument) and
                # it is laid out like the variable; ``.grad`` is then a detached alias of it, so a hook that
                # changes ``.grad`` in place is seen in the grad_outputs of AccumulateGrad's post-hooks.
                if _getrefcount(g) == 4 and _getrefcount(d) == 3 and _laid_out_like(d, vd):
                    var._grad = Tensor._make(d, False, None, 0, g._vc)
                else:
                    var._grad = Tensor._make(np.array(d, dtype=vd.dtype, copy=True, order="C"))
        elif _state.enabled:
            var._grad = var._grad + g
        else:
            gd = var._grad._data
            if gd.shape != g._data.shape:
                raise RuntimeError(f"hookgrad: the gradient of shape {tuple(g.shape)} cannot be accumulated "
                                   f"into .grad of shape {tuple(gd.shape)}")
            if not gd.flags.writeable:
                var._grad = Tensor._make(gd + g._data)
            else:
                np.add(gd, g._data, out=gd, casting="unsafe")
                var._grad._vc[0] += 1


AccumulateGrad._dir_names = sorted(Node._dir_names + ["variable"])


class _CopyGrad(Node, name="CopyBackwards"):
    """The first ``.grad`` under create_graph: a copy of the gradient (PyTorch copies it into a new
    tensor, whose grad_fn is CopyBackwards)."""

    def forward(self, g):
        return np.array(g, copy=True, order="C")

    def backward(self, gg):
        return gg

    def name(self):
        return "torch::autograd::CopyBackwards"


def _run_post_accumulate_hooks(var):
    for hook in tuple(var._post_accumulate_grad_hooks.values()):
        r = hook(var)
        if r is not None:
            if isinstance(r, Tensor):
                raise RuntimeError("Tensor post accumulate grad hooks should return None.")
            raise TypeError(f"expected Variable, but hook returned '{type(r).__name__}'")


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
# register_multi_grad_hook (G1)

class _MultiHandle(RemovableHandle):
    """Handle over several hooks (one per tensor); ``remove()`` removes them all."""

    def __init__(self, handles):
        self.handles = handles

    def remove(self):
        for handle in self.handles:
            handle.remove()

    def __getstate__(self):
        return self.handles

    def __setstate__(self, state):
        self.handles = state


def _grad_fn_or_acc(t):
    if t.requires_grad and t.grad_fn is None:
        return t._grad_accumulator()
    if t.grad_fn is None:
        raise AssertionError("Expected gradient function to be set")
    return t.grad_fn


def register_multi_grad_hook(tensors, fn, *, mode="all"):
    """Call ``fn`` once per backward after the grads of ``tensors`` are computed.

    mode="all": ``fn(grads)`` with one entry per tensor (None where no grad is computed in this pass),
    called when the last grad the engine will compute among them arrives.
    mode="any": ``fn(grad)`` with the first grad computed among them.
    """
    from . import engine
    supported = ("all", "any")
    if mode not in supported:
        raise ValueError(f"Expects mode to be one of {supported} but got {mode}")
    lock = threading.Lock()

    if mode == "all":
        tensors = tuple(tensors)
        count = {}
        buffer = {}
        nb_calls = None
        grad_fns = [_grad_fn_or_acc(t) for t in tensors]
        n = len(tensors)

        def get_inner_hook(idx):
            def inner_hook(grad):
                nonlocal nb_calls
                tid = engine._current_graph_task_id()
                assert tid != -1, "expected this hook to be called inside a backward call"
                with lock:      # PyTorch's lock: tasks on several threads share the counters
                    cur = count.get(tid, 0)
                    count[tid] = cur + 1
                    buf = buffer.setdefault(tid, [None] * n)
                    if cur == 0:
                        nb_calls = sum(map(engine._will_engine_execute_node, grad_fns))
                buf[idx] = grad
                if cur == nb_calls - 1:
                    del count[tid]
                    del buffer[tid]
                    fn(buf)
            return inner_hook

        handles = tuple(t.register_hook(get_inner_hook(i)) for i, t in enumerate(tensors))
    else:
        ran = defaultdict(bool)

        def wrapped_fn(grad):
            tid = engine._current_graph_task_id()
            assert tid != -1, "expected this hook to be called inside a backward call"
            with lock:
                prev, ran[tid] = ran[tid], True
            if prev:
                return
            fn(grad)

        handles = tuple(t.register_hook(wrapped_fn) for t in tensors if t.requires_grad)
    return _MultiHandle(handles)


def _edge(t):
    """(edge, input meta) of a tensor argument: where its gradient goes, and its shape and dtype."""
    if not (t._requires_grad or t._lazy_rg and t.requires_grad):
        return _NO_EDGE, None
    gf = t.grad_fn
    if gf is None:
        ref = t._grad_acc
        gf = ref() if ref is not None else None
        if gf is None:
            gf = t._grad_accumulator()
        e = (gf, 0)
    else:
        e = (gf, t._output_nr)
    d = t._data
    return e, (d.shape, d.dtype)


def record1(node, a, out):
    """Node._record for a one-input primitive (``node`` has run its forward on ``a``) whose ``save``
    is (), (0,) or (-1,): the hot path of Tensor.relu() & co. NOTE: the output Tensor and SavedTensor
    are built inline here, in record2 and in _record on purpose: a shared helper costs ~1% of
    instructions on the small-op chain (callgrind), and record1 itself saves 1.7% over _record."""
    save = node.save
    if _anomaly_enabled or _hooks_tls.stack or len(save) > 1:
        return node._record((a,), out)
    e, m = _edge(a)
    node.next_functions = (e,)
    node._in_meta = (m,)
    node._seq = next(_seq)
    res = _new(Tensor)
    res._data = out
    res._requires_grad = True
    res.grad_fn = node
    res._output_nr = 0
    res._vc = vc = [0]
    if save:
        if save[0] == -1:
            st = _new(SavedTensor)          # SavedTensor(res, node, 0), inlined
            st._tensor = None
            st._data = out
            st._vc = vc
            st._version = 0
            st._node_ref = _weakref(node)
            st._output_nr = 0
            st._requires_grad = True
            st._unpack = None
            node._saved = [st]
            node._versions = [None]
        else:
            node._saved = [a]
            node._versions = [a._vc[0]]
    return res


def record2(cls, a, b, out):
    """Node._record for a primitive of two tensors whose ``save`` is () or (0, 1): the hot path of
    the arithmetic dunders (same result as ``cls.apply(a, b)``, minus the generic plumbing)."""
    if _anomaly_enabled or _hooks_tls.stack:
        return _new(cls)._record((a, b), out)
    node = _new(cls)
    ea, ma = _edge(a)
    eb, mb = _edge(b)
    node.next_functions = (ea, eb)
    node._in_meta = (ma, mb)
    node._seq = next(_seq)
    res = _new(Tensor)
    res._data = out
    res._requires_grad = True
    res.grad_fn = node
    res._output_nr = 0
    res._vc = [0]
    if cls.save:
        m = cls._mask2
        if m is None:
            node._saved = [a, b]
            node._versions = [a._vc[0], b._vc[0]]
        else:                               # save_if: only what the needed gradients use
            sa, sb = m[ea[0] is not None, eb[0] is not None]
            node._saved = [a if sa else None, b if sb else None]
            node._versions = [a._vc[0] if sa else None, b._vc[0] if sb else None]
    return res


# --------------------------------------------------------------------------------------------
# op-level hooks (Chainer's function hooks, which PyTorch lacks)

_op_hooks = HookDict()          # id -> OpHook; checked (one global lookup) on every op


class _OpTLS(threading.local):
    def __init__(self):
        self.busy = False       # True while op hooks run: ops they call themselves are not hooked


_op_tls = _OpTLS()


class OpHook:
    """An op-level hook: sees every primitive in forward and every node in backward.

    Override any of the four methods; register with ``register()`` (returns a RemovableHandle) or use
    the hook as a context manager. Ops that a hook method itself runs are not hooked.

    >>> class Count(OpHook):
    ...     n = 0
    ...     def forward_post(self, name, inputs, output, node):
    ...         self.n += 1
    >>> with Count() as c:
    ...     _ = hookgrad.ones(2) * 2 + 1
    >>> c.n
    2
    """

    def forward_pre(self, name, inputs):
        """Before a primitive runs: ``name`` is its op name (e.g. ``"Mul"``), ``inputs`` its arguments."""

    def forward_post(self, name, inputs, output, node):
        """After it ran: ``output`` (Tensor or tuple); ``node`` is the grad_fn it recorded, or None."""

    def backward_pre(self, node, grad_outputs):
        """Before a backward node runs, with the gradients flowing into it."""

    def backward_post(self, node, grad_inputs, grad_outputs):
        """After it ran, with the gradients it produced for its inputs."""

    def register(self):
        return register_op_hook(self)

    def __enter__(self):
        self._handle = self.register()
        return self

    def __exit__(self, *exc):
        self._handle.remove()


def register_op_hook(hook):
    """Register an OpHook (or any object with its methods) for every op and backward node."""
    h = add_hook(_op_hooks, hook)
    return h


_OP_NAMES = {}


def op_name(node_or_cls):
    """The forward op's name of a node class or node: ``MulBackward0`` -> ``Mul``."""
    name = node_or_cls.__name__ if isinstance(node_or_cls, type) else node_or_cls.name()
    op = _OP_NAMES.get(name)
    if op is None:
        op = _OP_NAMES[name] = re.sub(r"Backward\d*$", "", name)
    return op


def _apply_with_op_hooks(cls, args, params, run=None):
    """``cls.apply(*args, **params)`` (or ``run(*args)``, a fast path computing the same op) between
    the op hooks' forward_pre and forward_post."""
    hooks = tuple(_op_hooks.values())
    name = op_name(cls)
    tls = _op_tls
    tls.busy = True         # the op itself, and any op a hook runs, go unhooked
    tls.params = params     # the op's parameters, for hooks that need them (utils._python_dispatch)
    try:
        for h in hooks:
            h.forward_pre(name, args)
        out = run(*args) if run is not None else Node.apply.__func__(cls, *args, **params)
        node = (out[0] if type(out) is tuple else out).grad_fn
        node = node if type(node) is cls else None
        for h in hooks:
            h.forward_post(name, args, out, node)
    finally:
        tls.busy = False
    return out


def run_backward_op_hooks(fn, grad_outputs, grad_inputs=None, post=False):
    """Called by the engine around a node while op hooks are registered."""
    tls = _op_tls
    tls.busy = True
    try:
        if post:
            for h in tuple(_op_hooks.values()):
                h.backward_post(fn, grad_inputs, grad_outputs)
        else:
            for h in tuple(_op_hooks.values()):
                h.backward_pre(fn, grad_outputs)
    finally:
        tls.busy = False


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
        if _hooks_tls.stack:
            raise RuntimeError(self.error_message)
        _hooks_tls.disabled = self.error_message

    def __exit__(self, *exc):
        _hooks_tls.disabled = self.prev

    def __call__(self, func):
        import functools

        @functools.wraps(func)
        def wrapper(*a, **k):
            with self.__class__(self.error_message):
                return func(*a, **k)
        return wrapper


class _Handle:
    __slots__ = ("__weakref__",)


class _AllowMutationOnSavedContext:
    """State of allow_mutation_on_saved_tensors: originals and clones of saved tensors, by handle."""

    def __init__(self):
        self.original = weakref.WeakKeyDictionary()
        self.cloned = weakref.WeakKeyDictionary()
        self.tid_to_weakhandle = weakref.WeakValueDictionary()
        self.sid_to_tid = defaultdict(set)

    def clear(self):
        for d in (self.original, self.cloned, self.tid_to_weakhandle, self.sid_to_tid):
            d.clear()

    def _before_mutation(self, tensor):
        """Clone every saved tensor sharing storage with ``tensor`` before it is written."""
        for tid in self.sid_to_tid.get(id(tensor._vc), ()):
            handle = self.tid_to_weakhandle.get(tid)
            if handle is None or handle in self.cloned:
                continue
            orig = self.original.pop(handle, None)
            if orig is not None:
                self.cloned[handle] = Tensor._make(orig._data.copy(), orig.requires_grad, orig.grad_fn,
                                                   orig._output_nr)


_mutation_ctx = None   # the active _AllowMutationOnSavedContext (primitives._inplace calls _before_mutation)

_G5_ERR = ("Trying to backward outside of the 'allow_mutation_on_saved_tensors' context"
           "in which the graph was originally recorded.")


@contextlib.contextmanager
def allow_mutation_on_saved_tensors():
    """Tensors saved for backward are cloned just before an in-place op mutates them, so backward
    still sees the saved value. Forward and backward must both run inside the context."""
    global _mutation_ctx
    ctx = _AllowMutationOnSavedContext()

    def pack(t):
        tid = (id(t), t._vc[0])
        sid = id(t._vc)
        ctx.sid_to_tid[sid].add(tid)
        handle = ctx.tid_to_weakhandle.get(tid)
        if handle is None:
            handle = _Handle()
            ctx.tid_to_weakhandle[tid] = handle
            ctx.original[handle] = t
        return handle

    def unpack(handle):
        if _mutation_ctx is not ctx:
            raise AssertionError(_G5_ERR)
        if handle in ctx.cloned:
            return ctx.cloned[handle]
        if handle not in ctx.original:
            raise AssertionError(_G5_ERR)
        return ctx.original[handle]

    with saved_tensors_hooks(pack, unpack):
        try:
            if _mutation_ctx is not None:
                raise RuntimeError("allow_mutation_on_saved_tensors contexts cannot be nested")
            _mutation_ctx = ctx
            yield ctx
        finally:
            ctx.clear()
            _mutation_ctx = None


def increment_version(tensor):
    """Bump the version counter of a tensor (or of each tensor in an iterable)."""
    if isinstance(tensor, Tensor):
        tensor._vc[0] += 1
        return
    for t in tensor:
        t._vc[0] += 1
