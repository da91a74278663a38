"""hookgrad.utils.checkpoint (mirrors torch.utils.checkpoint): activation checkpointing.

``checkpoint(fn, *args, use_reentrant=...)`` runs ``fn`` keeping only its inputs, and runs it again in
backward to get the values its backward needs, as PyTorch does, so the hooks of modules inside ``fn`` fire
twice (forward, then recomputation) and the RNG state of the forward is restored for the recomputation
(dropout draws the same mask):

- ``use_reentrant=True`` (PyTorch's default when the argument is omitted, with its warning): a custom
  Function whose forward runs ``fn`` under no_grad and whose backward reruns it under enable_grad and calls
  ``backward`` inside backward.
- ``use_reentrant=False``: saved-tensor hooks. Every tensor saved inside ``fn`` is packed as a placeholder;
  the first unpack of a backward pass reruns ``fn`` (stopping as soon as every saved tensor is recomputed,
  unless early stop is off) and each placeholder unpacks to its recomputed tensor.
"""
import contextlib
import warnings
import weakref
from collections import defaultdict

from .. import _creation
from .._tensor import Tensor
from ..autograd import engine as _engine
from ..autograd.function import Function
from ..autograd.saved import saved_tensors_hooks, _version_error
from ..autograd.grad_mode import enable_grad, no_grad, is_grad_enabled
from ..amp import autocast_mode as _amp

__all__ = ["checkpoint", "checkpoint_sequential", "CheckpointError", "CheckpointFunction",
           "check_backward_validity", "detach_variable", "get_device_states", "set_device_states",
           "noop_context_fn", "set_checkpoint_early_stop", "DefaultDeviceType", "set_checkpoint_debug_enabled",
           "GraphExecGroup"]

_DEFAULT_DETERMINISM_MODE = "default"
_checkpoint_debug_enabled = None
_enable_checkpoint_early_stop = None


class CheckpointError(RuntimeError):
    pass


@contextlib.contextmanager
def set_checkpoint_debug_enabled(enabled):
    """Context manager overriding ``debug=`` of every checkpoint inside it (in debug mode a non-determinism
    error lists where each tensor was saved in the forward and in the recomputation)."""
    global _checkpoint_debug_enabled
    prev, _checkpoint_debug_enabled = _checkpoint_debug_enabled, enabled
    try:
        yield
    finally:
        _checkpoint_debug_enabled = prev


@contextlib.contextmanager
def set_checkpoint_early_stop(enable):
    """Whether non-reentrant checkpoints created inside stop recomputation once every saved tensor exists."""
    global _enable_checkpoint_early_stop
    prev, _enable_checkpoint_early_stop = _enable_checkpoint_early_stop, enable
    try:
        yield
    finally:
        _enable_checkpoint_early_stop = prev


class DefaultDeviceType:
    """The device type whose RNG state checkpoint preserves besides the CPU's (hookgrad: CPU only)."""
    _default_device_type = "cuda"

    @staticmethod
    def set_device_type(device="cuda"):
        DefaultDeviceType._default_device_type = device

    @staticmethod
    def get_device_type():
        return DefaultDeviceType._default_device_type


def get_device_states(*args):
    """Devices of the tensor arguments other than the CPU, and their RNG states: none in hookgrad."""
    return [], []


def set_device_states(devices, states, *, device_type=None):
    return None


def noop_context_fn():
    return contextlib.nullcontext(), contextlib.nullcontext()


def detach_variable(inputs):
    if isinstance(inputs, tuple):
        out = []
        for inp in inputs:
            if not isinstance(inp, Tensor):
                out.append(inp)
                continue
            x = inp.detach()
            x.requires_grad = inp.requires_grad
            out.append(x)
        return tuple(out)
    raise RuntimeError(f"Only tuple of tensors is supported. Got Unsupported input type: {type(inputs).__name__}")


def check_backward_validity(inputs):
    if not any(inp.requires_grad for inp in inputs if isinstance(inp, Tensor)):
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None", stacklevel=2)


@contextlib.contextmanager
def _fork_rng(state, enabled):
    """Run the block from RNG ``state``; the surrounding state is restored afterwards."""
    if not enabled:
        yield
        return
    outer = _creation.get_rng_state()
    _creation.set_rng_state(state)
    try:
        yield
    finally:
        _creation.set_rng_state(outer)


def _get_autocast_kwargs():
    """The CPU autocast state of the forward, re-entered for the recomputation (as PyTorch's
    _get_autocast_kwargs; hookgrad computes on the CPU only)."""
    return {"enabled": _amp.is_autocast_enabled("cpu"), "dtype": _amp.get_autocast_dtype("cpu"),
            "cache_enabled": _amp.is_autocast_cache_enabled()}


def _is_checkpoint_valid():
    """False inside a backward pass that runs only part of the graph (autograd.grad, backward(inputs=))."""
    tasks = _engine._tls.tasks
    return not tasks or tasks[-1].needed is None


# ---------------------------------------------------------------------------------------- reentrant

class CheckpointFunction(Function):
    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, *args):
        check_backward_validity(args)
        ctx.run_function = run_function
        ctx.preserve_rng_state = preserve_rng_state
        if preserve_rng_state:
            ctx.fwd_cpu_state = _creation.get_rng_state()
        ctx.cpu_autocast_kwargs = _get_autocast_kwargs()
        ctx.had_device_in_fwd = False
        ctx.inputs = []
        ctx.tensor_indices = []
        tensor_inputs = []
        for i, arg in enumerate(args):
            if isinstance(arg, Tensor):
                tensor_inputs.append(arg)
                ctx.tensor_indices.append(i)
                ctx.inputs.append(None)
            else:
                ctx.inputs.append(arg)
        ctx.save_for_backward(*tensor_inputs)
        with no_grad():
            outputs = run_function(*args)
        return outputs

    @staticmethod
    def backward(ctx, *args):
        if not _is_checkpoint_valid():
            raise RuntimeError(
                "When use_reentrant=True, torch.utils.checkpoint is incompatible"
                " with .grad() or passing an `inputs` parameter to .backward()."
                " To resolve this error, you can either set use_reentrant=False,"
                " or call .backward() without passing the `inputs` argument.")
        inputs = list(ctx.inputs)
        for i, idx in enumerate(ctx.tensor_indices):
            inputs[idx] = ctx.saved_tensors[i]
        with _fork_rng(getattr(ctx, "fwd_cpu_state", None), ctx.preserve_rng_state):
            detached_inputs = detach_variable(tuple(inputs))
            with enable_grad(), _amp.autocast("cpu", **ctx.cpu_autocast_kwargs):
                outputs = ctx.run_function(*detached_inputs)
        if isinstance(outputs, Tensor):
            outputs = (outputs,)
        outputs_with_grad = []
        args_with_grad = []
        for i in range(len(outputs)):
            if isinstance(outputs[i], Tensor) and outputs[i].requires_grad:
                outputs_with_grad.append(outputs[i])
                args_with_grad.append(args[i])
        if len(outputs_with_grad) == 0:
            raise RuntimeError("none of output has requires_grad=True, this checkpoint() is not necessary")
        from ..autograd import backward
        backward(outputs_with_grad, args_with_grad)
        grads = tuple(inp.grad if isinstance(inp, Tensor) else None for inp in detached_inputs)
        return (None, None) + grads


# ------------------------------------------------------------------------------------ non-reentrant

class _StopRecomputationError(Exception):
    pass


class _Holder:
    def __init__(self):
        self.handles = {}       # backward pass id -> handle of its recomputed tensor (None once unpacked)


class _Handle:
    pass


def _default_meta_extractor(x):
    return {"shape": x.shape, "dtype": x.dtype, "device": x.device}


_allowed_determinism_checks_to_fns = {_DEFAULT_DETERMINISM_MODE: _default_meta_extractor, "none": lambda _: None}

_debug_tip_msg = """
Tip: To see a more detailed error message, either pass `debug=True` to
`torch.utils.checkpoint.checkpoint(...)` or wrap the code block
with `with torch.utils.checkpoint.set_checkpoint_debug_enabled(True):` to
enable checkpoint\u2011debug mode globally.
"""


def _user_site():
    """The innermost stack frame outside hookgrad: where the op saving a tensor was called."""
    import os
    import traceback
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for fs in reversed(traceback.extract_stack()[:-1]):
        if not os.path.abspath(fs.filename).startswith(here):
            return f"{fs.filename}:{fs.lineno} in {fs.name}: {fs.line or ''}".rstrip()
    return "<unknown>"


def _debug_log(kind, entries):
    rows = "".join(f"  {i}: {meta} saved at {site}\n" for i, (meta, site) in enumerate(entries))
    return f"Tensors saved during {kind}:\n" + (rows or "  (none)\n")


class GraphExecGroup:
    """Context manager: the backward calls made inside one ``with GraphExecGroup():`` share the
    recomputation of each non-reentrant checkpoint (it runs at most once for all of them), so those calls
    must use disjoint parts of the graph; unpacking a saved activation twice raises."""
    _current = None

    def __enter__(self):
        if GraphExecGroup._current is not None:
            raise RuntimeError(f"GraphExecGroup contexts cannot be nested. Already inside group {GraphExecGroup._current}")
        GraphExecGroup._current = self
        return self

    def __exit__(self, *exc):
        GraphExecGroup._current = None
        return False

    @classmethod
    def _get_current_group(cls):
        return cls._current


class _CheckpointFrame:
    def __init__(self, recompute_fn, early_stop, metadata_fn, debug=False):
        self.debug = debug
        self.fwd_log = []                   # debug mode: (metadata, call site) of each saved tensor
        self.recomp_log = defaultdict(list)
        self.recompute_fn = recompute_fn
        self.saved_args = []
        self.weak_holders = []
        self.recomputed = defaultdict(weakref.WeakKeyDictionary)
        self.recomp_counter = defaultdict(int)
        self.is_recomputed = defaultdict(bool)
        self.early_stop = early_stop
        self.metadata_fn = metadata_fn
        self.x_metadatas = []
        self.forward_completed = False
        self.ignore_saved_mismatch = False

    def save_inputs(self, *args):
        # (tensor, its version): a later in-place change is reported as a saved tensor's would be
        self.saved_args = [(a, a._version) if isinstance(a, Tensor) else a for a in args]
        self.tensor_args = [isinstance(a, Tensor) for a in args]

    def get_inputs(self):
        out = []
        for a, is_t in zip(self.saved_args, self.tensor_args):
            if is_t:
                t, version = a
                if t._version != version:
                    _version_error(t, version)      # PyTorch's "modified by an inplace operation" error
                a = t
            out.append(a)
        return out

    def debug_error(self, gid, err):
        """Under ``debug=True``: ``err`` (a non-determinism CheckpointError) with the debug explanation."""
        if not self.debug:
            return err
        return CheckpointError(         # (PyTorch's debug error replaces the plain one's text too)
            "torch.utils.checkpoint: Detected non-determinism while running activation checkpointing.\n"
            "You are seeing this error because you passed `debug=True` to checkpoint and the tensors saved "
            "during the original forward differ from those saved during the recomputation. This can happen "
            "if different operators ran in the original forward and in the recomputation.\n"
            + _debug_log("the original forward", self.fwd_log) + _debug_log("recomputation", self.recomp_log[gid]))

    def check_recomputed_tensors_match(self, gid):
        try:
            self._check_recomputed_tensors_match(gid)
        except CheckpointError as e:
            raise self.debug_error(gid, e) from None

    def _check_recomputed_tensors_match(self, gid):
        if self.ignore_saved_mismatch:
            return
        if not len(self.weak_holders) == self.recomp_counter[gid]:
            raise CheckpointError(
                "torch.utils.checkpoint: A different number of tensors was saved "
                "during the original forward and recomputation.\n"
                f"Number of tensors saved during forward: {len(self.weak_holders)}\n"
                f"Number of tensors saved during recomputation: {self.recomp_counter[gid]}.\n"
                f"{_debug_tip_msg}")
        different = []
        for idx, weak_holder in enumerate(self.weak_holders):
            holder = weak_holder()
            if holder is None:
                continue
            recomputed_x = self.recomputed[gid][holder.handles[gid]]
            x_meta = self.x_metadatas[idx]
            if x_meta != self.metadata_fn(recomputed_x):
                different.append((idx, x_meta, self.metadata_fn(recomputed_x)))
        if different:
            mismatched = "".join(f"tensor at position {idx}:\nsaved metadata: {m}\nrecomputed metadata: {r}\n"
                                 for idx, m, r in different)
            raise CheckpointError(
                "torch.utils.checkpoint: Recomputed values for the following tensors "
                "have different metadata than during the forward pass.\n"
                f"{mismatched}.\n{_debug_tip_msg}")


class _recomputation_hook(saved_tensors_hooks):
    def __init__(self, target_frame_ref, gid):
        def pack_hook(x):
            x = x.detach() if x.requires_grad else x
            frame = target_frame_ref()
            recomp_idx = frame.recomp_counter[gid]
            frame.recomp_counter[gid] += 1
            if frame.debug:
                frame.recomp_log[gid].append((_default_meta_extractor(x), _user_site()))
            if recomp_idx >= len(frame.weak_holders):
                if not frame.forward_completed:
                    frame.ignore_saved_mismatch = True
                    return x
                raise frame.debug_error(gid, CheckpointError(
                    "torch.utils.checkpoint: trying to save more tensors during "
                    f"recomputation than during the original forward pass.\n{_debug_tip_msg}"))
            holder = frame.weak_holders[recomp_idx]()
            if holder is not None:
                holder.handles[gid] = _Handle()
                frame.recomputed[gid][holder.handles[gid]] = x
            if frame.early_stop and frame.recomp_counter[gid] == len(frame.weak_holders):
                raise _StopRecomputationError
            return x

        super().__init__(pack_hook, lambda x: x)


class _checkpoint_hook(saved_tensors_hooks):
    def __init__(self, frame):
        def pack_hook(x):
            holder = _Holder()
            frame.weak_holders.append(weakref.ref(holder))
            if frame.debug:
                frame.fwd_log.append((_default_meta_extractor(x), _user_site()))
            if frame.metadata_fn is not None:
                with no_grad():
                    frame.x_metadatas.append(frame.metadata_fn(x))
            return holder

        def unpack_hook(holder):
            gid = GraphExecGroup._current
            if gid is None:
                gid = _engine._current_graph_task_id()
                if gid == -1:       # unpacked outside backward (grad_fn._saved_self): a fresh recomputation
                    gid = object()
            if not frame.is_recomputed[gid]:
                args = frame.get_inputs()
                try:
                    with _recomputation_hook(weakref.ref(frame), gid), enable_grad():
                        frame.recompute_fn(*args)
                except _StopRecomputationError:
                    pass
                frame.is_recomputed[gid] = True
                frame.check_recomputed_tensors_match(gid)
            if holder.handles.get(gid) is None:
                overlap = ("Performing two backward calls that overlap (i.e. require the same saved activation "
                           "in order to compute gradients) is not allowed while under the "
                           "torch.utils.checkpoint.GraphExecGroup context. " if isinstance(gid, GraphExecGroup)
                           else "")
                raise CheckpointError(
                    "torch.utils.checkpoint: Unpack is being triggered for a tensor that was already "
                    f"unpacked once. {overlap}If you are calling ctx.saved_tensors in backward, make sure "
                    "to do so only once. Otherwise please open an issue with details on your use case.")
            ret = frame.recomputed[gid][holder.handles[gid]]
            holder.handles[gid] = None
            return ret

        super().__init__(pack_hook, unpack_hook)


def _checkpoint_without_reentrant_generator(fn, preserve_rng_state=True, context_fn=noop_context_fn,
                                            determinism_check=_DEFAULT_DETERMINISM_MODE, debug=False,
                                            early_stop=True, *args, **kwargs):
    debug = _checkpoint_debug_enabled if _checkpoint_debug_enabled is not None else debug
    if debug:
        if context_fn is not noop_context_fn:
            raise ValueError("debug=True is incompatible with non-default context_fn")
    if determinism_check in _allowed_determinism_checks_to_fns:
        metadata_fn = _allowed_determinism_checks_to_fns[determinism_check]
    else:
        raise ValueError(f"determinism_check should be one of {list(_allowed_determinism_checks_to_fns.keys())}, "
                         f"but got {determinism_check}")
    forward_context, recompute_context = context_fn()
    fwd_cpu_state = _creation.get_rng_state() if preserve_rng_state else None
    cpu_autocast_kwargs = _get_autocast_kwargs()

    def recompute_fn(*inputs):
        with _fork_rng(fwd_cpu_state, preserve_rng_state), _amp.autocast("cpu", **cpu_autocast_kwargs), \
                recompute_context:
            fn(*inputs, **kwargs)

    frame = _CheckpointFrame(recompute_fn,
                             _enable_checkpoint_early_stop if _enable_checkpoint_early_stop is not None
                             else early_stop, metadata_fn, debug)
    if not is_grad_enabled():
        yield
        return
    frame.save_inputs(*args)
    suppressed = False
    with _checkpoint_hook(frame), forward_context:
        try:
            yield
        except BaseException:
            suppressed = True
            raise
    if suppressed:
        raise RuntimeError(
            "torch.utils.checkpoint: the forward context provided by "
            "context_fn suppressed an exception raised during the "
            "checkpointed forward. This is not supported because checkpoint "
            "cannot return a value for a failed forward.")
    frame.forward_completed = True


# ---------------------------------------------------------------------------------------- public

def checkpoint(function, *args, use_reentrant=None, context_fn=noop_context_fn,
               determinism_check=_DEFAULT_DETERMINISM_MODE, debug=False, early_stop=True, **kwargs):
    """Run ``function(*args, **kwargs)`` without keeping its intermediate values; they are recomputed in
    backward (see the module docstring for the two variants)."""
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint: the use_reentrant parameter should be "
            "passed explicitly. Starting in PyTorch 2.9, calling checkpoint "
            "without use_reentrant will raise an exception. use_reentrant=False is "
            "recommended, but if you need to preserve the current default "
            "behavior, you can pass use_reentrant=True. Refer to docs for more "
            "details on the differences between the two variants.", stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs and use_reentrant:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
    if use_reentrant:
        if context_fn is not noop_context_fn or debug is not False:
            raise ValueError("Passing `context_fn` or `debug` is only supported when use_reentrant=False.")
        return CheckpointFunction.apply(function, preserve, *args)
    gen = _checkpoint_without_reentrant_generator(function, preserve, context_fn, determinism_check, debug,
                                                  early_stop, *args, **kwargs)
    next(gen)
    try:
        ret = function(*args, **kwargs)
    except BaseException as e:
        try:
            gen.throw(e)
        except StopIteration as stop:
            raise RuntimeError(
                "torch.utils.checkpoint: the forward context provided by "
                "context_fn suppressed an exception raised during the "
                "checkpointed forward. This is not supported because "
                "checkpoint cannot return a value for a failed forward.") from stop
        raise
    try:
        next(gen)
    except StopIteration:
        return ret
    raise AssertionError("torch.utils.checkpoint: expected context_fn generator to yield "
                         "exactly twice, but it yielded more than twice.")


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """Run a Sequential (or list of modules/functions) in ``segments`` chunks, checkpointing all but the
    last."""
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint.checkpoint_sequential: the use_reentrant "
            "parameter should be passed explicitly. "
            "In version 2.9 we will raise an exception if use_reentrant "
            "is not passed. use_reentrant=False is "
            "recommended, but if you need to preserve the current default "
            "behavior, you can pass use_reentrant=True. Refer to docs for more "
            "details on the differences between the two variants.", stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))

    def run_function(start, end, functions):
        def forward(input):
            for j in range(start, end + 1):
                input = functions[j](input)
            return input
        return forward

    from ..nn import Sequential
    if isinstance(functions, Sequential):
        functions = list(functions.children())
    segment_size = len(functions) // segments
    end = -1
    for start in range(0, segment_size * (segments - 1), segment_size):
        end = start + segment_size - 1
        input = checkpoint(run_function(start, end, functions), input, use_reentrant=use_reentrant,
                           preserve_rng_state=preserve)
    return run_function(end + 1, len(functions) - 1, functions)(input)


# ------------------------------------------------------------------------- selective checkpointing
# The policy of each op run inside a non-reentrant checkpoint decides whether its output is kept from the
# forward (MUST_SAVE / PREFER_SAVE) or recomputed. hookgrad's dispatch modes observe ops after they ran
# (utils._python_dispatch): the recomputation computes every primitive again (the same values), and the modes
# keep PyTorch's bookkeeping on top: the policy calls (``ctx.is_recompute``), the cached outputs per op (detached,
# with their version), and the errors of a second recomputation or of a cached output mutated in place. An
# operator defined through torch.library is dispatched for real: its saved output is used and it is not run again.

import enum  # noqa: E402


class CheckpointPolicy(enum.Enum):
    """What selective checkpointing does with an op's output: save it or recompute it."""
    MUST_SAVE = 0
    PREFER_SAVE = 1
    MUST_RECOMPUTE = 2
    PREFER_RECOMPUTE = 3


class SelectiveCheckpointContext:
    """The first argument of a policy function: ``is_recompute`` says which pass is running."""

    def __init__(self, *, is_recompute):
        self.is_recompute = is_recompute


class _VersionWrapper:
    """A cached output: the (detached) value and its version when cached."""

    def __init__(self, val):
        self.val = val
        self.version = val._version if isinstance(val, Tensor) else None

    def get_val(self, allow_cache_entry_mutation):
        if self.version is not None and not allow_cache_entry_mutation and self.val._version != self.version:
            raise RuntimeError("Tensor cached during selective activation checkpoint has been mutated")
        return self.val


def _policy_from_bool(b):
    return CheckpointPolicy.MUST_SAVE if b else CheckpointPolicy.PREFER_RECOMPUTE


def _ignored(func):
    name = getattr(func, "_opname", "")
    return name in ("sym_size", "sym_stride", "sym_numel", "sym_storage_offset", "detach")


def _detached(x):
    if isinstance(x, Tensor):
        return x.detach()
    if isinstance(x, (tuple, list)):
        return type(x)(_detached(v) for v in x)
    return x


_MODES = {}


def _modes():
    """The two dispatch modes, built on first use: TorchDispatchMode lives above this layer (with torch.ops), so
    it is looked up when selective checkpointing is first asked for, not imported with this module."""
    if not _MODES:
        from ._python_dispatch import TorchDispatchMode as _TDM     # an allowed upward import (tests/unit/test_layers.py)

        class _CachingTorchDispatchMode(_TDM):
            """The forward's mode: asks the policy about each op and caches the outputs it saves."""

            def __init__(self, policy_fn, storage):
                super().__init__()
                self.policy_fn = policy_fn
                self.storage = storage

            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                kwargs = kwargs or {}
                out = func(*args, **kwargs)
                if _ignored(func):
                    return out
                policy = self.policy_fn(SelectiveCheckpointContext(is_recompute=False), func, *args, **kwargs)
                if isinstance(policy, bool):
                    policy = _policy_from_bool(policy)
                if policy in (CheckpointPolicy.MUST_SAVE, CheckpointPolicy.PREFER_SAVE):
                    self.storage[func].append(_VersionWrapper(_detached(out)))
                return out


        class _CachedTorchDispatchMode(_TDM):
            """The recomputation's mode: asks the policy again and takes the cached outputs (once each)."""

            def __init__(self, policy_fn, storage, allow_cache_entry_mutation):
                super().__init__()
                self.policy_fn = policy_fn
                self.storage = storage
                self.allow_cache_entry_mutation = allow_cache_entry_mutation

            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                kwargs = kwargs or {}
                if _ignored(func):
                    return func(*args, **kwargs)
                policy = self.policy_fn(SelectiveCheckpointContext(is_recompute=True), func, *args, **kwargs)
                if isinstance(policy, bool):
                    policy = _policy_from_bool(policy)
                if policy in (CheckpointPolicy.MUST_SAVE, CheckpointPolicy.PREFER_SAVE):
                    storage = self.storage.get(func)
                    if storage is None:
                        raise RuntimeError(f"{func} encountered during backward, but not found in storage")
                    if len(storage) == 0:
                        raise RuntimeError("Trying to backward an extra time. You are only allowed to backward once on any "
                                           "region computed under selective activation checkpoint.")
                    # the saved output, not computed again (an operator defined through torch.library is not run;
                    # a primitive has run already and its result stands: see utils._python_dispatch)
                    return storage.pop(0).get_val(self.allow_cache_entry_mutation)
                return func(*args, **kwargs)


        _MODES["caching"], _MODES["cached"] = _CachingTorchDispatchMode, _CachedTorchDispatchMode
    return _MODES["caching"], _MODES["cached"]


def __getattr__(name):
    if name == "_CachingTorchDispatchMode":
        return _modes()[0]
    if name == "_CachedTorchDispatchMode":
        return _modes()[1]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def create_selective_checkpoint_contexts(policy_fn_or_list, allow_cache_entry_mutation=False):
    """``context_fn`` for ``checkpoint(..., use_reentrant=False)``: a policy function
    ``policy_fn(ctx, op, *args, **kwargs) -> CheckpointPolicy | bool``, or a list of ops whose outputs are saved.
    Returns (forward context, recompute context)."""
    if isinstance(policy_fn_or_list, list):
        for op in policy_fn_or_list:
            kind = type(op).__name__        # (torch.ops' classes, named: they live above this layer)
            if kind != "OpOverload":
                _extra_msg = ("Please update the OpOverloadPacket to a specific OpOverload."
                              "For example, if you have `torch.ops.aten.mm`, change it to `torch.ops.aten.mm.default`."
                              ) if kind == "OpOverloadPacket" else ""
                raise ValueError(f"Expected op in `op_list` to be an OpOverload but got: {op} of type {type(op)}. "
                                 f"{_extra_msg}")
        ops = policy_fn_or_list

        def policy_fn(ctx, op, *args, **kwargs):
            return CheckpointPolicy.MUST_SAVE if op in ops else CheckpointPolicy.PREFER_RECOMPUTE
    elif callable(policy_fn_or_list):
        policy_fn = policy_fn_or_list
    else:
        raise TypeError("policy_fn_or_list must be either a function or a list of ops.")
    storage = defaultdict(list)
    caching, cached = _modes()
    return caching(policy_fn, storage), cached(policy_fn, storage, allow_cache_entry_mutation)


__all__ += ["CheckpointPolicy", "SelectiveCheckpointContext", "create_selective_checkpoint_contexts"]
