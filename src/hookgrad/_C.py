"""The few ``torch._C`` entry points that user code and PyTorch's own hook tests call: the engine's
queries from inside a backward pass, and the node classes under ``_C._functions``."""
import sys
from types import SimpleNamespace

from .autograd.engine import _current_autograd_node, _current_graph_task_id, _will_engine_execute_node, \
    _current_graph_task_execution_order
from .autograd import saved as _saved
from .autograd import engine as _engine
from .autograd import grad_mode as _grad_mode
from .autograd.graph import AccumulateGrad
from .autograd.basic_ops import UndefinedGrad, DelayedError

# the build's features: LAPACK and FFTs through NumPy; no MKL, no OpenMP (torch.backends.mkl / openmp say the same)
has_lapack = has_spectral = True
has_mkl = has_openmp = False

_functions = SimpleNamespace(AccumulateGrad=AccumulateGrad, UndefinedGrad=UndefinedGrad, DelayedError=DelayedError)
_autograd = SimpleNamespace(
    _saved_tensors_hooks_is_enabled=lambda: _saved._hooks_tls.disabled is None,
    _get_current_graph_task_keep_graph=_engine._get_current_graph_task_keep_graph,
    _unsafe_set_version_counter=_grad_mode._unsafe_set_version_counter,
    SavedTensor=_saved.SavedTensor, _make_saved_tensor=_saved._make_saved_tensor)


class _WeakTensorRef:
    """torch._C._WeakTensorRef(t): a weak reference to a Tensor; ``expired()`` once the Tensor is gone."""

    def __init__(self, tensor):
        import weakref
        self._ref = weakref.ref(tensor)

    def expired(self):
        return self._ref() is None


# torch._C's cached-tensor registry (CUDA graphs' static inputs): hookgrad records membership only
_cached_tensors = {"enabled": False, "ids": {}}


def _set_cached_tensors_enabled(enabled):
    _cached_tensors["enabled"] = bool(enabled)


def _add_cached_tensor(t):
    import weakref
    _cached_tensors["ids"][id(t)] = weakref.ref(t)


def _remove_cached_tensor(t):
    _cached_tensors["ids"].pop(id(t), None)


def _is_cached_tensor(t):
    ref = _cached_tensors["ids"].get(id(t))
    return ref is not None and ref() is t


def is_grad_enabled():
    return _grad_mode._state.enabled


def _set_grad_enabled(mode):
    _grad_mode._state.enabled = bool(mode)


def _set_fwd_grad_enabled(mode):
    from .autograd import forward_ad
    forward_ad._fw.enabled = bool(mode)


def _is_fwd_grad_enabled():
    from .autograd import forward_ad
    return forward_ad._fw.enabled


_is_view_replay_enabled = _grad_mode._is_view_replay_enabled
_set_view_replay_enabled = _grad_mode._set_view_replay_enabled


def _is_multithreading_enabled():
    return _grad_mode._state.multithreading


def _set_multithreading_enabled(mode):
    _grad_mode._state.multithreading = bool(mode)

__all__ = ["_current_autograd_node", "_current_graph_task_id", "_will_engine_execute_node", "_functions", "_autograd"]


# ---- the dispatcher's key names (torch.library and torchvision's registrations build key sets from them;
# hookgrad dispatches custom operators by key name in hookgrad.ops, and excluding keys changes nothing)
class DispatchKey:
    """torch._C.DispatchKey: the key names, as attributes (``DispatchKey.CPU.name == "CPU"``)."""

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"DispatchKey.{self.name}"


for _k in ("Undefined", "CPU", "CUDA", "Meta", "XLA", "MPS", "XPU", "HPU", "PrivateUse1", "Autograd", "AutogradCPU",
           "AutogradCUDA", "AutogradXPU", "AutogradMeta", "AutocastCPU", "AutocastCUDA", "AutocastXPU", "AutocastMPS",
           "CompositeImplicitAutograd", "CompositeExplicitAutograd", "CompositeExplicitAutogradNonFunctional",
           "Python", "PythonTLSSnapshot", "Functionalize", "ADInplaceOrView", "BackendSelect", "FuncTorchBatched",
           "Conjugate", "Negative", "ZeroTensor", "Sparse", "SparseCPU", "QuantizedCPU"):
    setattr(DispatchKey, _k, DispatchKey(_k))


class DispatchKeySet:
    """torch._C.DispatchKeySet: a set of DispatchKeys (``|``, ``&``, ``-``, ``has``)."""

    def __init__(self, *keys):
        self._keys = frozenset(k.name if isinstance(k, DispatchKey) else str(k) for k in keys)

    @classmethod
    def _of(cls, names):
        s = cls()
        s._keys = frozenset(names)
        return s

    def __or__(self, other):
        return DispatchKeySet._of(self._keys | other._keys)

    def __and__(self, other):
        return DispatchKeySet._of(self._keys & other._keys)

    def __sub__(self, other):
        return DispatchKeySet._of(self._keys - other._keys)

    def has(self, key):
        return (key.name if isinstance(key, DispatchKey) else str(key)) in self._keys

    def __eq__(self, other):
        return isinstance(other, DispatchKeySet) and self._keys == other._keys

    __hash__ = None

    def __repr__(self):
        return f"DispatchKeySet({', '.join(sorted(self._keys))})"


class _ExcludeDispatchKeyGuard:
    """A no-op ``with`` block (hookgrad has no dispatch keys to exclude)."""

    def __init__(self, keyset):
        self.keyset = keyset

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


_IncludeDispatchKeyGuard = _ExcludeDispatchKeyGuard


# ---------------------------------------------------------------- names packages read from torch._C at load time
# (issue 22): each answers as PyTorch's CPU build does where hookgrad has the same state (no JIT, no tracing, no
# functorch transforms, the CPU as the only device); the JIT switches are recorded and return PyTorch's defaults.
def _log_api_usage_once(event):
    """PyTorch's one-time usage logging (off unless a logger is installed there): nothing to log."""


def _log_api_usage_metadata(event, metadata_map):
    pass


class _DisabledTorchFunctionImpl:
    """``__torch_function__ = torch._C._disabled_torch_function_impl`` opts a Tensor subclass out of the protocol:
    the function runs as it is (a callable that does not bind, as PyTorch's builtin)."""

    def __call__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))

    def __repr__(self):
        return "<built-in function _disabled_torch_function_impl>"


_disabled_torch_function_impl = _DisabledTorchFunctionImpl()


class DisableTorchFunctionSubclass:
    """``with DisableTorchFunctionSubclass():``: hookgrad's functions never dispatch to ``__torch_function__``."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


DisableTorchFunction = DisableTorchFunctionSubclass


def _get_tracing_state():
    """The JIT tracer's state: hookgrad never traces (torch.jit.trace runs the function eagerly)."""
    return None


def _are_functorch_transforms_active():
    """True inside a torch.func transform (a vmap, or a grad/vjp/jvp being computed): hookgrad.func's state."""
    from .func import _batched, _transforms
    return bool(_batched.state.levels) or _transforms._depth.n > 0


def _get_accelerator(check=False):
    """The current accelerator: hookgrad has none, so the CPU (PyTorch's CPU build answers the same)."""
    from ._tensor import device
    return device("cpu")


def _get_default_device():
    return "cpu"


def _get_privateuse1_backend_name():
    return "privateuseone"


_jit_flags = {"profiling_mode": True, "profiling_executor": True, "texpr_fuser": True, "nvfuser": False}


def _jit_flag(name, value):
    old, _jit_flags[name] = _jit_flags[name], bool(value)
    return old


def _jit_set_profiling_mode(flag):
    return _jit_flag("profiling_mode", flag)


def _jit_set_profiling_executor(flag):
    return _jit_flag("profiling_executor", flag)


def _jit_set_texpr_fuser_enabled(flag):
    _jit_flag("texpr_fuser", flag)


def _jit_texpr_fuser_enabled():
    return _jit_flags["texpr_fuser"]


def _jit_set_nvfuser_enabled(flag):
    return _jit_flag("nvfuser", flag)


def _jit_set_nvfuser_guard_mode(flag):
    return False


def _jit_override_can_fuse_on_cpu(flag):
    pass


_jit_override_can_fuse_on_gpu = _jit_override_can_fuse_on_cpu


def _jit_can_fuse_on_cpu():
    return False


_jit_can_fuse_on_gpu = _jit_can_fuse_on_cpu


class Graph:
    """The TorchScript IR graph type (named in ONNX ``symbolic`` signatures); hookgrad builds none."""


class Value:
    """A value of a TorchScript IR graph (see Graph)."""


def _parse_to(*args, **kwargs):
    """``Tensor.to``'s arguments as ``(device, dtype, non_blocking, memory_format)`` (torch._C._nn._parse_to)."""
    from . import _dtype as D
    from ._tensor import Tensor, device as _device
    dev, dt = kwargs.get("device"), kwargs.get("dtype")
    non_blocking, memory_format = bool(kwargs.get("non_blocking", False)), kwargs.get("memory_format")
    for a in args:
        if isinstance(a, Tensor):
            dev, dt = _device("cpu"), a.dtype
        elif isinstance(a, D.dtype):
            dt = a
        elif isinstance(a, (str, int)) and not isinstance(a, bool) or type(a).__name__ == "device":
            dev = a
        elif isinstance(a, bool):
            non_blocking = a
    if dev is not None and not type(dev).__name__ == "device":
        dev = _device(dev)
    return dev, dt, non_blocking, memory_format


def _submodule(name, **attrs):
    """A namespace of torch._C that packages import from (``from torch._C._nn import _parse_to``): a module
    registered in sys.modules, as PyTorch's C extension registers its submodules."""
    import types
    m = types.ModuleType(f"{__name__}.{name}")
    m.__dict__.update(attrs)
    sys.modules[m.__name__] = m
    return m


from .autograd._test_ops import _test_warn_in_autograd  # noqa: E402
_nn = _submodule("_nn", _parse_to=_parse_to, _test_warn_in_autograd=_test_warn_in_autograd)
def _is_batched(t):
    from .func._batched import is_batched
    return is_batched(t)


def _set_vmap_fallback_warning_enabled(enabled):
    from .func._batched import fallback_warning
    fallback_warning[0] = bool(enabled)


_functorch = _submodule("_functorch", is_legacy_batchedtensor=_is_batched, is_batchedtensor=_is_batched,
                        is_gradtrackingtensor=lambda t: False, is_functionaltensor=lambda t: False,
                        _set_vmap_fallback_warning_enabled=_set_vmap_fallback_warning_enabled)
_distributed_rpc = _submodule("_distributed_rpc", _is_current_rpc_agent_set=lambda: False)


def __getattr__(name):
    if name == "_TensorMeta":                   # the metaclass of Tensor
        from ._tensor import Tensor
        return type(Tensor)
    if name == "Generator":
        from ._creation import Generator
        return Generator
    if name == "_distributed_c10d":             # the C++ classes of torch.distributed (Reducer, Work, stores)
        from . import distributed
        return SimpleNamespace(Reducer=distributed.Reducer, Logger=distributed.Logger, Store=distributed.Store,
                               HashStore=distributed.HashStore, PrefixStore=distributed.PrefixStore,
                               GradBucket=distributed.GradBucket)
    from . import _missing
    return _missing.not_found(sys.modules[__name__], "torch._C", name, f"module {__name__!r} has no attribute {name!r}")


class PyTorchFileReader:
    """Reads the records of a checkpoint archive (``torch.save``'s zip format) by name, over the reader
    ``torch.load`` uses. ``get_storage_from_record`` is not supported (hookgrad loads whole checkpoints)."""

    def __init__(self, name_or_buffer):
        from .serialization import _Reader
        if isinstance(name_or_buffer, (str, bytes)) or hasattr(name_or_buffer, "__fspath__"):
            self._file = open(name_or_buffer, "rb")
            what = repr(str(name_or_buffer))
        else:
            self._file, what = name_or_buffer, "the buffer"
        self._reader = _Reader(self._file, what)

    def get_record(self, name):
        return self._reader.record(name)

    def has_record(self, name):
        return f"{self._reader.prefix}/{name}" in self._reader.infos

    def get_all_records(self):
        return [n.split("/", 1)[1] for n in self._reader.infos]

    def get_record_offset(self, name):
        info = self._reader._info(name)
        return info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)

    def serialization_id(self):
        return self.get_record(".data/serialization_id").decode() if self.has_record(".data/serialization_id") \
            else ""

    def get_storage_from_record(self, name, numel, dtype):
        raise NotImplementedError("torch._C.PyTorchFileReader.get_storage_from_record is not implemented in "
                                  "hookgrad (load the checkpoint with torch.load)")
