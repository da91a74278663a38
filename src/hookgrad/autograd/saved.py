"""Tensors saved for backward (``grad_fn._raw_saved_<name>``) and the hooks on them: pack/unpack
hooks (saved_tensors_hooks, save_on_cpu, disable_saved_tensors_hooks, per-tensor register_hooks),
allow_mutation_on_saved_tensors, and increment_version."""
import contextlib
import re
import threading
import weakref
from collections import defaultdict

from .._tensor import Tensor
from .grad_mode import _state
from .op_hooks import _op_tls

_new = object.__new__

_FREED = ("Trying to backward through the graph a second time (or directly access saved tensors after they "
          "have already been freed). Saved intermediate values of the graph are freed when you call .backward() "
          "or autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time "
          "or if you need to access saved tensors after calling backward.")


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
                 "_packed", "_unpack", "_grad_fn", "_grad_acc", "_meta")

    def __init__(self, tensor=None, node=None, output_nr=0):
        if tensor is None:
            raise RuntimeError("Trying to create a SavedTensor object from Python is forbidden.")
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
        busy = _op_tls.busy
        _op_tls.busy = False        # the hook's own ops are seen by the op hooks (dispatch modes), as in PyTorch
        try:
            packed = pack(tensor)
        finally:
            _state.enabled = prev
            _op_tls.busy = busy
        if vc[0] != version:
            raise RuntimeError(_PACK_INPLACE)
        self._meta = (tensor._data.shape, tensor._data.dtype)      # what an unpack hook should give back
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
            if not self._requires_grad and not t.requires_grad:
                return t            # nothing to re-attach: the unpacked tensor itself, as PyTorch (no detach)
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

    def register_hooks(self, *hooks):
        """Per-tensor pack/unpack pair (G2b): pack runs now, unpack at every later read."""
        if len(hooks) != 2 or not all(map(callable, hooks)):
            raise TypeError("register_hooks(): incompatible function arguments. The following argument types are "
                            "supported:\n    1. (self: torch._C._autograd.SavedTensor, arg0: collections.abc.Callable, "
                            "arg1: collections.abc.Callable) -> None\n\nInvoked with: "
                            + ", ".join(map(repr, (self,) + hooks)))
        pack_hook, unpack_hook = hooks
        if self._unpack is not None:
            raise RuntimeError("Calling register_hooks on a saved tensor whose hooks have already been set. "
                               "Hint: only one pair of hooks is allowed at a time.")
        if self._vc is None:
            raise RuntimeError("Calling register_hooks on a saved tensor after it has been freed. Saved intermediate "
                               "values of the graph are freed when you call .backward() or autograd.grad(). Specify "
                               "retain_graph=True if you need to backward through the graph a second time or if you "
                               "need to access saved variables after calling backward.")
        self._set_hooks(self._materialize(), pack_hook, unpack_hook)

    def free(self):
        self._vc = None
        self._tensor = None
        self._data = None
        self._packed = None


def _make_saved_tensor(tensor, is_output, is_inplace_on_view=False):
    """torch._C._autograd._make_saved_tensor: a SavedTensor of ``tensor`` (packed by the active saved-tensor
    hooks); an output is kept as its data and graph position, as a node keeps its own output."""
    if is_output and tensor.grad_fn is not None:
        return SavedTensor(tensor, tensor.grad_fn, tensor._output_nr)
    return SavedTensor(tensor)


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


def _version_error(tensor, version):
    st = SavedTensor._of_input(tensor)
    st._version = version
    st.unpack()     # raises PyTorch's "modified by an inplace operation" error


def _short_name(node):
    return re.sub(r"Backward\d*$", "", node.name())


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
