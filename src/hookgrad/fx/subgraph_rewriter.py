"""torch.fx.subgraph_rewriter: ``replace_pattern(gm, pattern, replacement)`` finds each occurrence of the graph
of ``pattern`` in ``gm.graph`` and puts the graph of ``replacement`` in its place."""
from typing import NamedTuple

from ._compatibility import compatibility
from .graph import Graph
from .graph_module import GraphModule
from .node import Node

__all__ = ["Match", "replace_pattern"]


@compatibility(is_backward_compatible=True)
class Match(NamedTuple):
    anchor: Node        # the Node of the graph that the pattern's output matched
    nodes_map: dict     # pattern Node -> graph Node


def _graph_of(fn):
    if isinstance(fn, Graph):
        return fn
    if isinstance(fn, GraphModule):
        return fn.graph
    from ._symbolic_trace import symbolic_trace
    return symbolic_trace(fn).graph


def _returning(graph):
    out = next(n for n in reversed(graph.nodes) if n.op == "output")
    ret = out.args[0]
    return list(ret) if isinstance(ret, (tuple, list)) else [ret], out


class _Matcher:
    def __init__(self, pattern, gm):
        self.pattern = pattern
        self.gm = gm

    def _same_op(self, pn, gn):
        if pn.op != gn.op:
            return False
        if pn.op == "call_module":
            p_root = self.pattern.owning_module
            p_mod = p_root.get_submodule(pn.target) if p_root is not None else None
            return p_mod is None or type(p_mod) is type(self.gm.get_submodule(gn.target))
        if pn.op == "get_attr":
            return True
        return pn.target == gn.target

    def match_arg(self, pa, ga, m):
        if isinstance(pa, Node):
            if pa.op == "placeholder":
                if pa in m:
                    return m[pa] is ga if isinstance(ga, Node) else m[pa] == ga
                m[pa] = ga
                return True
            return isinstance(ga, Node) and self.match_node(pa, ga, m)
        if isinstance(pa, (tuple, list)):
            return isinstance(ga, (tuple, list)) and len(pa) == len(ga) and \
                all(self.match_arg(a, b, m) for a, b in zip(pa, ga))
        if isinstance(pa, dict):
            return isinstance(ga, dict) and pa.keys() == ga.keys() and all(self.match_arg(pa[k], ga[k], m) for k in pa)
        return type(pa) is type(ga) and pa == ga

    def match_node(self, pn, gn, m):
        if pn in m:
            return m[pn] is gn
        if not self._same_op(pn, gn) or len(pn.args) != len(gn.args) or pn.kwargs.keys() != gn.kwargs.keys():
            return False
        m[pn] = gn
        return self.match_arg(tuple(pn.args), tuple(gn.args), m) and \
            self.match_arg(dict(pn.kwargs), dict(gn.kwargs), m)


def _find_matches(gm, pattern):
    returning, _ = _returning(pattern)
    anchor = returning[0]
    matcher = _Matcher(pattern, gm)
    matches, taken = [], set()
    for gn in gm.graph.nodes:
        m = {}
        if not (isinstance(anchor, Node) and matcher.match_node(anchor, gn, m)):
            continue
        ok = all(r in m for r in returning[1:])     # the other returned Nodes are reached from the first
        inner = {p: g for p, g in m.items() if p.op != "placeholder"}
        returned = {m[r] for r in returning if r in m}
        # an inner Node may not be used outside the match, and matches may not overlap
        if not ok or any(u not in inner.values() for p, g in inner.items() if g not in returned for u in g.users) \
                or any(g in taken for g in inner.values()):
            continue
        taken.update(inner.values())
        matches.append(Match(anchor=anchor, nodes_map=m))
    return matches


@compatibility(is_backward_compatible=True)
def replace_pattern(gm, pattern, replacement):
    """Replaces every occurrence of ``pattern`` (a function, Module or Graph) in ``gm`` by ``replacement``;
    returns the Matches (each with its anchor Node and the map of pattern Nodes to ``gm``'s Nodes)."""
    pattern_graph = _graph_of(pattern)
    replacement_graph = _graph_of(replacement)
    matches = _find_matches(gm, pattern_graph)
    p_placeholders = [n for n in pattern_graph.nodes if n.op == "placeholder"]
    r_placeholders = [n for n in replacement_graph.nodes if n.op == "placeholder"]
    p_returning, _ = _returning(pattern_graph)
    graph = gm.graph
    for match in matches:
        m = match.nodes_map
        val_map = {r: m[p] for r, p in zip(r_placeholders, p_placeholders)}
        returning = [m[p] for p in p_returning]
        users = {u for n in returning for u in n.users}
        insert_point = next((n for n in graph.nodes if n in users), None)     # the first user, as PyTorch
        if insert_point is None:
            insert_point = max(returning, key=lambda n: _position(graph, n)).next
        with graph.inserting_before(insert_point):
            copied = graph.graph_copy(replacement_graph, val_map)
        copied = list(copied) if isinstance(copied, (tuple, list)) and len(p_returning) > 1 else [copied]
        for p, new in zip(p_returning, copied):
            m[p].replace_all_uses_with(new)
        for p in reversed(list(pattern_graph.nodes)):
            if p.op not in ("placeholder", "output") and p in m and not m[p].users:
                graph.erase_node(m[p])
    gm.recompile()
    return matches


def _position(graph, node):
    for i, n in enumerate(graph.nodes):
        if n is node:
            return i
    return -1
