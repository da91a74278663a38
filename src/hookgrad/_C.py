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
