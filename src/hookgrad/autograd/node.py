"""Backward-graph nodes: ``Node`` (the base of every primitive op and of ``grad_fn``), AccumulateGrad,
GraphRoot, the hooks that live on nodes and the checks of what they return.

Every differentiable primitive is a subclass of :class:`Node`: ``forward`` (on arrays) and
``backward`` sit side by side in one small class. ``Node.apply`` is the single place where a graph
edge is recorded and where saved tensors are packed; ``Node._run_backward`` runs the gradient formula
in the pass's gradient space (``formulas.py``: Tensors or arrays) and undoes broadcasting and dtype
promotion on the way back.
"""
import itertools
import threading
import traceback
import weakref

import numpy as np
from sys import getrefcount as _getrefcount

from .. import _dtype as D
from .. import _array as _array_mod
from .._tensor import Tensor, _SAME as _SAME_DTYPE, _device_of, _INPLACE_DETACHED
from .._errors import NUMPY_ERRORS as _NUMPY_ERRORS, from_numpy as _from_numpy
from ..utils.hooks import add_hook, HookDict, hook_name
from .grad_mode import _state
from .saved import SavedTensor, _NoneSaved, _hooks_tls, _version_error, _short_name, _FREED  # noqa: F401
from .op_hooks import _op_hooks, _op_tls, _apply_with_op_hooks, op_name, post_now as _post_now, _formula_ops
from .anomaly_mode import state as _anomaly   # .enabled: nodes record the forward traceback
from .formulas import TENSORS, ARRAYS, takes_space, expand_np, sum_to_shape, cast_array as _cast_array  # noqa: F401
from .._array import is_array as _is_array, module_of as _module_of, writeable as _writeable

_seq = itertools.count()
_new = object.__new__
_INFERENCE_SAVED = ("Inference tensors cannot be saved for backward. Please do not use Tensors created in inference "
                    "mode in computation tracked by autograd. To work around this, you can make a clone to get a "
                    "normal tensor and use it in autograd, or use `torch.no_grad()` instead of "
                    "`torch.inference_mode()`.")
_ndarray = np.ndarray
_weakref = weakref.ref
_asarray = np.asarray


def _as_arrays(out, args):
    """A forward's result as arrays: arrays of any module as they are; a scalar or a number becomes a
    0-d array of the inputs' module (not NumPy's when the inputs live elsewhere)."""
    if type(out) is tuple:
        return tuple(o if type(o) is _ndarray or _is_array(o) else _as_arrays(o, args) for o in out)
    if _is_array(out):
        return out
    return _module_of(*[a._data if isinstance(a, Tensor) else a for a in args]).asarray(out)


_MAX_SEQ = float("inf")
_NO_EDGE = (None, 0)

_DETACHED = ("Trying to use a saved tensor that has been detached in-place, i.e. with .detach_().This is not "
             "supported, please use out-of-place `.detach()` instead")


def _check_detached(node):
    """PyTorch's SavedVariable check: an input saved while it had a grad_fn, detached in place since."""
    saved = node._saved
    nf = node.next_functions
    for k, i in enumerate(node.save):
        if 0 <= i < len(nf) and k < len(saved):
            s = saved[k]
            t = s._tensor if type(s) is SavedTensor else s
            if isinstance(t, Tensor) and t.grad_fn is None:
                ref = t.__dict__.get("_detached_from")
                if ref is not None and ref() is nf[i][0] is not None:
                    raise RuntimeError(_DETACHED)



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


_PKG_DIR = __file__.rsplit("autograd", 1)[0]


def _user_stack():
    """The current stack as formatted lines, without hookgrad's own frames (anomaly mode)."""
    frames = [f for f in traceback.extract_stack() if not f.filename.startswith(_PKG_DIR)]
    return traceback.format_list(frames)


def _anomaly_record(node):
    """Anomaly mode: the forward traceback of a node being recorded, and the node running in backward when it
    is (its parent, whose traceback an error reports too)."""
    node._trace = _user_stack()
    parent = _anomaly.running
    if parent is not None:
        node._anomaly_parent = parent


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
    opmath = False            # True: PyTorch computes a bfloat16 input in float32 and rounds once (_dtype.opmath),
                              # in forward and backward; "forward": backward is made of such ops (mm, conv)
    writes_into = False       # True: run in place (relu_, add_), forward writes its result into ``_into``, the
    _into = None              # tensor's own array, when _inplace gives one (else into a new array, copied in)

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
    _out1 = None                  # single-output nodes: (shape, numpy dtype, array type) of the output
    _trace = None                 # forward traceback, recorded only in anomaly mode
    _masks_unneeded = True        # engine drops grads towards nodes a pass will not run (not custom Functions)
    _spaced = False               # backward is a formula on a gradient space, so it runs on ARRAYS too (set
                                  # per class from its signature; False on a node under saved-tensor hooks)
    next_functions = ()
    _seq = 0

    def __init_subclass__(cls, name=None, **kw):
        super().__init_subclass__(**kw)
        if name is not None:
            cls.__name__ = cls.__qualname__ = name
        # ``backward(self, g, F=TENSORS)``: one formula written against a gradient space, which runs
        # on arrays too (``_spaced``); a formula on Tensors alone runs on arrays wrapped as Tensors
        if "backward" in cls.__dict__ and "_spaced" not in cls.__dict__:
            cls._spaced = takes_space(cls.__dict__["backward"])
        if cls.opmath:      # a bfloat16 input computed in float32 and rounded once (see _dtype.opmath)
            for k in ("forward", "backward") if cls.opmath is True else ("forward",):
                # its own method, or an inherited one where this class turns opmath on
                f = cls.__dict__.get(k) or ("opmath" in cls.__dict__ and getattr(cls, k, None) or None)
                if f is not None and not getattr(f, "_opmath", False):
                    setattr(cls, k, D.opmath(f, k == "backward"))
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
                if rec and ta and tb and a._inference and b._inference:
                    rec = False         # inference tensors alone: no autograd (PyTorch dispatches past it)
            elif len(args) == 1:
                a = args[0]
                if isinstance(a, T):
                    out = node.forward(a._data)
                    rec = (a._requires_grad or a._lazy_rg and a.requires_grad) and not a._inference
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
                    if rec and all(isinstance(a, T) and a._inference for a in args):
                        rec = False     # inference tensors alone: no autograd
        except _NUMPY_ERRORS as e:          # NumPy's own error: PyTorch's type, naming the op
            moved = _cpu_scalars_moved(args)
            if moved is not None:           # a 0-d CPU tensor joins an op on another device as PyTorch lets it
                return cls.apply(*moved, **params)
            err = _device_clash(args) or _from_numpy(op_name(cls).lower(), e)
            if err is None:
                raise
            raise err from None
        if type(out) is not _ndarray:
            out = _as_arrays(out, args)
        if rec and _state.enabled:
            return node._record(args, out)
        if type(out) is tuple:
            res = tuple(T._make(o) for o in out)
            if _state.inference:        # inference tensors (a view of a normal tensor is none: make_view)
                for t in res:
                    t._inference = True
            return res
        t = _new(T)
        t._data = out
        t._requires_grad = False
        t.grad_fn = None
        t._output_nr = 0
        t._vc = [0]
        if _state.inference:
            t._inference = True
        return t

    def _record(self, args, out):
        """Record this node as the grad_fn of ``out``: edges to the inputs' history, input metadata
        for undoing broadcasting and promotion, saved tensors."""
        T = Tensor
        edges = []
        meta = []
        for a in args:
            if isinstance(a, T):
                e, m = _edge(a)
                edges.append(e)
                meta.append(m)
            else:
                edges.append(_NO_EDGE)
                meta.append(None)
        self.next_functions = tuple(edges)
        self._in_meta = meta
        self._seq = next(_seq)
        if _anomaly.enabled:
            _anomaly_record(self)
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
            self._out1 = (out.shape, out.dtype, type(out))
        save = self.save
        if save:
            # Inputs are kept as the tensors themselves plus their version at save time; a
            # SavedTensor object is only built for outputs, under saved-tensor hooks, or when
            # grad_fn._raw_saved_<name> asks for one (hot path: two list appends per input).
            # An entry is saved only if a gradient that needs it is computed (``save_if``).
            saved = []
            mask = None if self.save_if is None else self._save_mask()
            if _hooks_tls.stack:
                # packed in PyTorch's order (inputs by name, then outputs), and unpacked in that order, once
                # per backward (_run_hook_packed)
                self._hook_packed = True
                saved = [None] * len(save)
                for k in self._pack_order or range(len(save)):
                    if mask is None or mask[k]:
                        i = save[k]
                        if i < 0 and _op_tls.pending is not None:   # dispatch modes see the op now (op_hooks)
                            _post_now(self, res)
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
                        if isinstance(a, T):
                            if a._inference:
                                raise RuntimeError(_INFERENCE_SAVED)
                            vers.append(a._vc[0])
                        else:
                            vers.append(None)
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
        if self._unpacked is not None:
            return self._unpacked
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

    # ---- called by the engine ----
    _hook_packed = False        # saved tensors packed by saved_tensors_hooks
    _unpacked = None            # their unpacked values while the formula runs

    def _run_hook_packed(self, grads, F):
        """A node whose saved tensors were packed by saved_tensors_hooks: the unpack hooks run once here, in
        PyTorch's order, then the formula runs as it would without hooks (on arrays in a plain backward: the
        same arithmetic, so attaching hooks changes no bit), unless an unpack hook gave back another shape or
        dtype: then on Tensors, whose ops raise PyTorch's errors or promote as PyTorch's formula would."""
        vals = self.saved_values
        same = all(type(s) is not SavedTensor or (v._data.shape, v._data.dtype) == s._meta
                   for s, v in zip(self._saved, vals) if s is not None)
        self._unpacked = vals
        spaced = self._spaced
        if not same:
            self._spaced = False
        try:
            return self._run_backward(grads, F)
        finally:
            self._unpacked = None
            self._spaced = spaced

    def _run_backward(self, grads, F=TENSORS):
        """grad_inputs from grad_outputs, both carried in the gradient space ``F`` (Tensors or arrays),
        one per next_functions entry: materialise missing grads of a multi-output node, run the formula,
        then undo broadcasting and the dtype promotion, once here for every formula.

        A formula written against a space (``backward(self, g, F=TENSORS)``, flag ``_spaced``) runs in
        ``F``; a formula on Tensors alone runs on ARRAYS with its gradients wrapped (grad mode is off)."""
        if _INPLACE_DETACHED[0] and self._saved:
            _check_detached(self)
        if self._hook_packed and self._unpacked is None:
            return self._run_hook_packed(grads, F)
        spaced = self._spaced
        arrays = F is ARRAYS
        if arrays and not spaced:       # a formula on Tensors alone, in a plain backward: wrapped for it
            make = Tensor._make
            out = self._run_backward([None if g is None else make(g) for g in grads])
            return [None if t is None else t._data for t in out]
        if spaced and not arrays and not _state.enabled and len(grads) == 1 and not _formula_ops[0]:
            # Tensors in, but no graph of the gradient is needed: the formula runs on arrays
            g = grads[0]
            out = self._run_backward([None if g is None else g._data], ARRAYS)
            make = Tensor._make
            return [None if a is None else make(a) for a in out]
        nf = self.next_functions
        if len(grads) == 1:
            g = grads[0]
            if g is None:
                return (None,) * len(nf)
            res = self.backward(g, F) if spaced else self.backward(g)
            if type(res) is not tuple:
                if arrays:
                    # NOTE: one input on arrays (the hot unary ops): the loop below, unrolled
                    if res is None or nf[0][0] is None:
                        return (None,)
                    if type(res) is not _ndarray and not _is_array(res):    # a NumPy scalar (0-d result)
                        res = _asarray(res)
                    m = self._in_meta[0]
                    if res.shape != m[0]:
                        res = sum_to_shape(res, m[0])
                    dt = res.dtype
                    if dt is not m[1] and dt != m[1]:
                        res = _cast_array(res, m[1])
                    return (res,)
                res = (res,)
        else:
            for like in grads:
                if like is not None:
                    break
            else:
                return (None,) * len(nf)
            if self.materialize_grads and self._out_meta is not None:
                zeros = F.zeros
                grads = [g if g is not None else zeros(m[0], m[1].np, like) for g, m in zip(grads, self._out_meta)]
            res = self.backward(*grads, F) if spaced else self.backward(*grads)
            if type(res) is not tuple:
                res = (res,)
        out = []
        for (fn, _), gx, meta in zip(nf, res, self._in_meta):
            if fn is None or gx is None:
                out.append(None)
                continue
            if arrays:
                if type(gx) is not _ndarray and not _is_array(gx):  # a NumPy scalar (0-d ufunc result)
                    gx = _asarray(gx)
                d = gx
            else:
                d = gx._data
            if d.shape != meta[0]:
                gx = F.sum_to(gx, meta[0])
                d = gx if arrays else gx._data
            dt = d.dtype
            if dt is not meta[1] and dt != meta[1]:     # NOTE: `is` first: dtype != costs ~0.1 us
                gx = F.cast(gx, meta[1])
            out.append(gx)
        if len(out) != len(nf):         # a formula that returned fewer gradients than inputs
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
        return self._add_hook("_post_hooks", fn)

    def register_prehook(self, fn):
        """Pre-hook ``fn(grad_outputs)``; may return a tuple replacing grad_outputs."""
        return self._add_hook("_pre_hooks", fn)

    def _add_hook(self, attr, fn):
        hooks = getattr(self, attr)
        if hooks is None:
            hooks = HookDict()
            setattr(self, attr, hooks)
        self._hooked = True
        return add_hook(hooks, fn)

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
            self._spaced = False        # hooks may be registered on it: backward reads it as a Tensor
            return s
        return s.unpack()

    def __call__(self, *grads):
        m = self._out_meta
        n = 1 if m is None else len(m)
        if len(grads) != n:
            raise TypeError(f"expected {n} arguments, got {len(grads)} instead")
        return tuple(self._run_backward(list(grads)))

    # a node class written in Python in PyTorch (a custom Function's node) prints with its module, as
    # Python's object repr does there: <torch.autograd.function.MyFnBackward object at 0x...>
    _repr_module = None

    def __repr__(self):
        module = f"{self._repr_module}." if self._repr_module else ""
        return f"<{module}{type(self).__qualname__} object at {hex(id(self))}>"

    @property
    def _input_metadata(self):
        """Per input of this node (an output of its forward, whose gradient it receives): the tensor's
        metadata, ``_InputMetadata`` (shape, dtype, device), as PyTorch's ``grad_fn._input_metadata``."""
        m = self._out_meta
        one = self._out1
        atype = one[2] if one is not None else _ndarray
        if m is None:
            return () if one is None else (_InputMetadata(one[0], one[1], atype),)
        return tuple(None if e is None else _InputMetadata(e[0], e[1], atype) for e in m)

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
            def saved(k):
                try:
                    return getattr(self, "_saved_" + k)
                except (AttributeError, RuntimeError):      # (released after a pass)
                    return None
            raw = [k for k in specs if isinstance(saved(k), Tensor) or _is_tensor_list(saved(k))]
            if raw:
                names = sorted(names + ["_raw_saved_" + k for k in raw])
        return names


# ---- grad_fn._saved_<name>: PyTorch's names and values (Tensors, ints, floats, bools, tuples, None) ----

_SCALAR_ARGS = frozenset(("alpha", "beta", "exponent", "min", "max", "min_val", "max_val", "negative_slope",
                          "weight", "value", "threshold", "lambd", "scale", "input_scale", "eps", "other",
                          "self", "correction", "ord", "p", "end", "start", "step", "beta1", "momentum"))
_NODE_DIR = sorted(set(dir(object)) | {"__call__", "_input_metadata", "_sequence_nr", "_set_sequence_nr", "metadata", "name",
                                       "next_functions", "register_hook", "register_prehook", "requires_grad"})


def _py(v, wrap=False):
    """A saved value as PyTorch shows it: Python scalars and tuples, Tensors for arrays. Negative
    int64 arguments (dims, indices) read as PyTorch's unsigned wrap-around (-1 -> 2**64 - 1)."""
    if isinstance(v, (bool, float, str)) or v is None or isinstance(v, Tensor):
        return v
    if isinstance(v, int):
        return v + 18446744073709551616 if wrap and v < 0 else v
    if isinstance(v, np.ndarray) or _is_array(v):
        return Tensor._make(v)
    if isinstance(v, np.generic):
        return _py(v.item(), wrap)
    if isinstance(v, (tuple, list, range)):
        return tuple(_py(x, wrap) for x in v)
    if isinstance(v, np.dtype):
        return D._NP_TO_DT[v]
    return v


class _InputMetadata:
    """``torch._C._autograd._InputMetadata``: what a node knows of one tensor whose gradient it receives."""
    __slots__ = ("shape", "dtype", "device")
    is_nested_tensor = False
    is_cpp_nested_tensor = False

    def __init__(self, shape, dtype, atype=_ndarray):
        self.shape = list(shape)
        self.dtype = D._NP_TO_DT[dtype] if isinstance(dtype, np.dtype) else dtype
        self.device = _device_of(_asarray(()) if atype is _ndarray else _array_mod._BY_TYPE[atype].empty(0))

    def __repr__(self):
        return f"<torch._C._autograd._InputMetadata object at {hex(id(self))}>"


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


_EVAL_GLOBALS = {"__builtins__": {"tuple": tuple, "len": len, "int": int, "float": float, "type": type}}


def _is_tensor_list(v):
    """A saved list of (optional) tensors: a tuple of Tensors and Nones, one Tensor at least."""
    return (type(v) is tuple and any(isinstance(t, Tensor) for t in v)
            and all(t is None or isinstance(t, Tensor) for t in v))


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
            # Node._saved_value, not self._saved_value: a saved name "value" (SDPA's) shadows the method
            setattr(cls, "_saved_" + key, property(lambda self, key=key: Node._saved_value(self, key, False)))
            setattr(cls, "_raw_saved_" + key, property(lambda self, key=key: Node._saved_value(self, key, True)))
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
                if _is_tensor_list(v):      # a list of optional tensors (index's indices): one per entry
                    return tuple(_NoneSaved() if t is None else SavedTensor(t) for t in v)
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


def _cpu_scalars_moved(args):
    """``args`` with their 0-d CPU tensors moved (differentiably: ToCopyBackward0) to the device of the others, or
    None: PyTorch lets a CPU scalar tensor join an op on another device, no other mix of devices."""
    dev = None
    for a in args:
        if isinstance(a, Tensor) and a.device.type != "cpu":
            if dev is not None and a.device != dev:
                return None
            dev = a.device
    if dev is None:
        return None
    out, moved = [], False
    for a in args:
        if isinstance(a, Tensor) and a.device.type == "cpu":
            if a.dim() != 0:
                return None
            a, moved = a.to(dev), True
        out.append(a)
    return out if moved else None


def _device_clash(args):
    """PyTorch's RuntimeError for an op given tensors on two devices (arrays of two modules refuse to mix), or None."""
    seen = None
    for a in args:
        if isinstance(a, Tensor):
            d = a.device
            if seen is None:
                seen = d
            elif d != seen:
                d1, d2 = (seen, d) if seen.type != "cpu" else (d, seen)
                return RuntimeError("Expected all tensors to be on the same device, but found at least two devices, "
                                    f"{d1} and {d2}!")
    return None


def _laid_out_like(g, d, dt):
    """Can gradient array ``g`` become the ``.grad`` (of dtype ``dt``) of a leaf with data ``d`` as it is (PyTorch's
    steal)?"""
    return (g.dtype == dt and g.shape == d.shape and g.flags.c_contiguous and _writeable(g)
            and type(g) is type(d))


class AccumulateGrad(Node):
    """Writes a leaf's ``.grad``. One per leaf while someone references it (PyTorch semantics)."""
    _seq = _MAX_SEQ

    def __init__(self, variable):
        self.variable = variable
        self.next_functions = ()
        # the leaf's tensor hooks run here; Tensor.register_hook sets the flag on a live accumulator
        self._hooked = variable._backward_hooks is not None

    @property
    def _tensor_pre_hooks(self):
        """The leaf's tensor hooks, bound to slot 0 of its accumulator (read when the node runs: the
        leaf may get its hook dict after its accumulator was made)."""
        hooks = self.variable._backward_hooks
        return ((0, hooks),) if hooks else None

    def name(self):
        return "torch::autograd::AccumulateGrad"

    def __repr__(self):
        return f"<AccumulateGrad object at {hex(id(self))}>"

    def _run_backward(self, grads, space=TENSORS):
        g = grads[0]
        if g is None:
            return ()
        var = self.variable
        with _accumulate_lock:
            self._accumulate(var, g)
        if var._post_accumulate_grad_hooks:
            _run_post_accumulate_hooks(var)
        return ()

    def _accumulate(self, var, g):
        """``.grad`` += g, for ``g`` carried as an array or as a Tensor (a carrier-agnostic rule)."""
        grad = var._grad
        if _state.enabled:      # create_graph: the sum keeps the graph; a first .grad is a copy (never stolen)
            if not isinstance(g, Tensor):
                g = Tensor._make(g)
            var._grad = _CopyGrad.apply(None, g) if grad is None else grad + g if type(grad._data) is _ndarray or \
                getattr(g._data, "_layout", None) is not None else g + grad     # (sparse .grad: dense + sparse)
            return
        t = type(g) is not _ndarray and isinstance(g, Tensor)      # an array (ARRAYS) or a Tensor
        d = g._data if t else g
        if grad is None:
            vd = var._data
            gdt = var._grad_dtype       # Tensor.grad_dtype: the leaf's dtype (default), another one, or None (any)
            tdt = vd.dtype if gdt is _SAME_DTYPE else (d.dtype if gdt is None else gdt.np)
            # PyTorch's rule: take the incoming gradient itself when only the engine holds it (the node's
            # input buffer; here ``g`` in _run_backward and in this frame, ``d``, getrefcount's argument)
            # and it is laid out like the variable. A Tensor gradient lends its version counter, so
            # ``.grad`` is a detached alias of it: a hook that changes ``.grad`` in place is seen in the
            # grad_outputs of AccumulateGrad's post-hooks. A view keeps sharing its base, as a stolen view
            # does in PyTorch.
            alone = (_getrefcount(g) == 4 and _getrefcount(d) == 3) if t else _getrefcount(d) == 5
            if alone and _laid_out_like(d, vd, tdt):
                var._grad = Tensor._make(d, False, None, 0, g._vc) if t else Tensor._make(d)
            elif type(d) is not _ndarray and getattr(d, "_layout", None) is not None:
                # a sparse gradient (PyTorch): its indices and values are taken, in a new sparse tensor, when only
                # the engine holds it and both are contiguous; else copied
                take = alone and d.dtype == tdt and all(c.flags.c_contiguous for c in d.components())
                var._grad = Tensor._make(d._with_values(d.values) if take else d.astype(tdt, copy=True))
            else:
                var._grad = Tensor._make(d.astype(tdt, order="C", copy=True))
            return
        gd = grad._data
        if type(gd) is not _ndarray and getattr(gd, "_layout", None) is not None and \
                getattr(d, "_layout", None) is None:     # a sparse .grad and a dense gradient: a new .grad (PyTorch)
            var._grad = Tensor._make(d + gd)
            return
        if gd.shape != d.shape:
            raise RuntimeError(f"hookgrad: the gradient of shape {tuple(d.shape)} cannot be accumulated "
                               f"into .grad of shape {tuple(gd.shape)}")
        if not _writeable(gd):
            var._grad = Tensor._make(gd + d)
        else:
            np.add(gd, d, out=gd, casting="unsafe")
            grad._vc[0] += 1


def _acc_input_metadata(self):
    d = self.variable._data
    return (_InputMetadata(d.shape, d.dtype, type(d)),)


AccumulateGrad._input_metadata = property(_acc_input_metadata)
AccumulateGrad._dir_names = sorted(Node._dir_names + ["variable"])


class _CopyGrad(Node, name="CopyBackwards"):
    """The first ``.grad`` under create_graph: a copy of the gradient (PyTorch copies it into a new empty
    tensor, ``new_empty_strided(...).copy_(grad)``, whose grad_fn is CopyBackwards with two edges: none for
    the new tensor, the gradient's history). ``apply(None, g)``."""

    def forward(self, dst, g):
        return g.copy(order="C")

    def backward(self, gg):
        return None, gg

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

    def _run_backward(self, grads, space=TENSORS):
        return [space.carry(g) for g in self._grads]


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
    if _anomaly.enabled or _hooks_tls.stack or len(save) > 1:
        return node._record((a,), out)
    e, m = _edge(a)
    node.next_functions = (e,)
    node._in_meta = (m,)
    node._seq = next(_seq)
    node._out1 = (out.shape, out.dtype, type(out))
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
            if a._inference:
                raise RuntimeError(_INFERENCE_SAVED)
            node._saved = [a]
            node._versions = [a._vc[0]]
    return res


def record2(cls, a, b, out):
    """Node._record for a primitive of two tensors whose ``save`` is () or (0, 1): the hot path of
    the arithmetic dunders (same result as ``cls.apply(a, b)``, minus the generic plumbing)."""
    if _anomaly.enabled or _hooks_tls.stack:
        return _new(cls)._record((a, b), out)
    node = _new(cls)
    ea, ma = _edge(a)
    eb, mb = _edge(b)
    node.next_functions = (ea, eb)
    node._in_meta = (ma, mb)
    node._seq = next(_seq)
    node._out1 = (out.shape, out.dtype, type(out))
    res = _new(Tensor)
    res._data = out
    res._requires_grad = True
    res.grad_fn = node
    res._output_nr = 0
    res._vc = [0]
    if cls.save:
        m = cls._mask2
        if m is None:
            sa = sb = True
            node._saved = [a, b]
            node._versions = [a._vc[0], b._vc[0]]
        else:                               # save_if: only what the needed gradients use
            sa, sb = m[ea[0] is not None, eb[0] is not None]
            node._saved = [a if sa else None, b if sb else None]
            node._versions = [a._vc[0] if sa else None, b._vc[0] if sb else None]
        if (sa and a._inference) or (sb and b._inference):
            raise RuntimeError(_INFERENCE_SAVED)
    return res


def _grad_accumulator(self):
    """``Tensor._grad_accumulator()``: the leaf's AccumulateGrad, made on first use (installed on Tensor
    below: _tensor sits under autograd and does not import it)."""
    acc = self._grad_acc() if self._grad_acc is not None else None
    if acc is None:
        # NOTE: several threads may reach a leaf at once; one AccumulateGrad per leaf (PyTorch locks too)
        with grad_accumulator_lock:
            acc = self._grad_acc() if self._grad_acc is not None else None
            if acc is None:
                acc = AccumulateGrad(self)
                self._grad_acc = weakref.ref(acc)
    return acc


Tensor._grad_accumulator = _grad_accumulator
