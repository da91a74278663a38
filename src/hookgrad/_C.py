"""The few ``torch._C`` entry points that user code and PyTorch's own hook tests call: the engine's
queries from inside a backward pass, and the node classes under ``_C._functions``."""
from types import SimpleNamespace

from .autograd.engine import _current_autograd_node, _current_graph_task_id, _will_engine_execute_node
from .autograd import graph as _graph
from .autograd.graph import AccumulateGrad

_functions = SimpleNamespace(AccumulateGrad=AccumulateGrad)
_autograd = SimpleNamespace(
    _saved_tensors_hooks_is_enabled=lambda: _graph._hooks_tls.disabled is None)

__all__ = ["_current_autograd_node", "_current_graph_task_id", "_will_engine_execute_node", "_functions", "_autograd"]
