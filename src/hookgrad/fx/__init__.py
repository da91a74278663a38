"""torch.fx: symbolic tracing (``symbolic_trace``, ``Tracer``, ``Proxy``, ``wrap``), the graph IR (``Graph``,
``Node``), ``GraphModule`` (an nn.Module whose forward is generated from a Graph) and ``Interpreter`` /
``Transformer``.

    >>> gm = torch.fx.symbolic_trace(model)
    >>> [(n.op, n.target) for n in gm.graph.nodes]
"""
from .graph_module import GraphModule
from ._symbolic_trace import symbolic_trace, Tracer, wrap, PH, ProxyableClassMeta
from .graph import Graph, CodeGen
from .node import Node, map_arg, has_side_effect
from .proxy import Proxy
from .interpreter import Interpreter as Interpreter, Transformer as Transformer

from .subgraph_rewriter import replace_pattern
from . import passes  # noqa: F401
from .annotate import annotate  # noqa: F401

__all__ = ["symbolic_trace", "Tracer", "wrap", "PH", "ProxyableClassMeta", "Graph", "CodeGen", "GraphModule", "Node",
           "map_arg", "has_side_effect", "Proxy", "Interpreter", "Transformer", "replace_pattern"]
