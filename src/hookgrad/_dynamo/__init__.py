"""torch._dynamo: the names packages import from PyTorch's graph capture, with hookgrad's answers (there is no
graph capture: code always runs eagerly, so hooks always fire).

``disable``/``allow_in_graph``/``assume_constant_result`` return the function; ``mark_dynamic``, ``mark_static`` and
``mark_static_address`` record nothing; ``is_compiling()`` is False; ``config`` holds PyTorch's settings (read,
set and ``config.patch``-ed, changing nothing); ``OptimizedModule`` is the class a compiled module would have
(``torch.compile`` returns the module itself, so no object is ever one).
"""
from .. import compiler as _compiler
from ..compiler import allow_in_graph, assume_constant_result, is_compiling, reset, set_stance, substitute_in_graph
from . import config, eval_frame, exc, external_utils, utils  # noqa: F401
from .eval_frame import OptimizedModule, is_dynamo_supported, is_inductor_supported  # noqa: F401

__all__ = ["allow_in_graph", "assume_constant_result", "config", "disable", "disallow_in_graph", "forbid_in_graph",
           "graph_break", "is_compiling", "list_backends", "mark_dynamic", "maybe_mark_dynamic", "mark_static",
           "mark_static_address", "OptimizedModule", "optimize", "reset", "run", "set_stance", "substitute_in_graph",
           "is_dynamo_supported", "is_inductor_supported"]


def disable(fn=None, recursive=True, *, reason=None, wrapping=True):
    return _compiler.disable(fn, recursive, reason=reason)


def _same(fn):
    return fn


disallow_in_graph = forbid_in_graph = _same
list_backends = _compiler.list_backends


def _check_tensor(fname, t):
    from .._tensor import Tensor
    if not isinstance(t, Tensor):
        raise TypeError(f"{fname} expects a tensor/nn.Module class but received {type(t)}")


def mark_dynamic(t, index, *, hint_override=None, min=None, max=None, specialize_on=None):
    """Mark dimensions of ``t`` as dynamic for a later compilation: nothing is compiled, nothing recorded."""


def maybe_mark_dynamic(t, index):
    pass


def mark_static(t, index=None):
    pass


def mark_static_address(t, guard=False):
    _check_tensor("mark_static_address", t)


def graph_break(msg=""):
    pass


def optimize(*args, **kwargs):
    """The old entry point of torch.compile: a decorator returning what it decorates."""
    return _same


def run(fn=None):
    return _same if fn is None else fn


from .. import _missing  # noqa: E402
__getattr__ = _missing.module_getattr(__name__, "torch._dynamo")
