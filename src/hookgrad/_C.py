"""The few ``torch._C`` entry points that user code and PyTorch's own hook tests call: the engine's
queries from inside a backward pass, and the node classes under ``_C._functions``."""
from types import SimpleNamespace

from .autograd.engine import _current_autograd_node, _current_graph_task_id, _will_engine_execute_node
from .autograd import saved as _saved
from .autograd import engine as _engine
from .autograd import grad_mode as _grad_mode
from .autograd.graph import AccumulateGrad

_functions = SimpleNamespace(AccumulateGrad=AccumulateGrad)
_autograd = SimpleNamespace(
    _saved_tensors_hooks_is_enabled=lambda: _saved._hooks_tls.disabled is None,
    _get_current_graph_task_keep_graph=_engine._get_current_graph_task_keep_graph,
    _unsafe_set_version_counter=_grad_mode._unsafe_set_version_counter)


def is_grad_enabled():
    return _grad_mode._state.enabled


def _set_grad_enabled(mode):
    _grad_mode._state.enabled = bool(mode)


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
