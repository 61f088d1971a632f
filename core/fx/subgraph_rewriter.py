"""replace_pattern: find every non-overlapping occurrence of a pattern's dataflow and splice in a
replacement.

The pattern (a function, traced) is matched from its returned value backwards through the
arguments: ops and targets must agree, literal arguments be equal, and the pattern's inputs
(placeholders) match any value, the same value wherever the same input recurs. A match counts only
if the values it computes inside are used nowhere but inside it. The replacement, traced too, is
copied in before the first user of the matched result, with its inputs bound to the values the
pattern's inputs matched, in order; the matched nodes are then erased.
"""
from __future__ import annotations

from typing import Dict, List, NamedTuple

from .graph import Graph
from .node import Node


class Match(NamedTuple):
    anchor: Node                  # the pattern node the match was found from (its returned value)
    nodes_map: Dict[Node, Node]   # pattern node -> the graph node it matched


def _graph_of(fn_or_gm) -> Graph:
    if isinstance(fn_or_gm, Graph):
        return fn_or_gm
    g = getattr(fn_or_gm, "graph", None)
    if isinstance(g, Graph):
        return g
    from ._symbolic_trace import symbolic_trace
    return symbolic_trace(fn_or_gm).graph


def _match_value(p, g, m) -> bool:
    if isinstance(p, Node):
        return isinstance(g, Node) and _match_node(p, g, m)
    if isinstance(p, (list, tuple)):
        return (isinstance(g, (list, tuple)) and len(p) == len(g)
                and all(_match_value(a, b, m) for a, b in zip(p, g)))
    if isinstance(p, dict):
        return isinstance(g, dict) and p.keys() == g.keys() and all(_match_value(p[k], g[k], m) for k in p)
    return not isinstance(g, Node) and type(p) is type(g) and p == g


def _match_node(p: Node, g: Node, m: dict) -> bool:
    if p in m:
        return m[p] is g
    if p.op == "placeholder":
        m[p] = g
        return True
    if p.op != g.op or not (p.target == g.target):
        return False
    m[p] = g
    return _match_value(p.args, g.args, m) and _match_value(p.kwargs, g.kwargs, m)


def _find_matches(graph: Graph, pattern: Graph) -> List[Match]:
    out = [n for n in pattern.nodes if n.op == "output"][0]
    anchor = out.args[0]
    if not isinstance(anchor, Node):
        raise ValueError("replace_pattern supports patterns returning one value")
    matches, taken = [], set()
    for node in graph.nodes:
        m: dict = {}
        if not _match_node(anchor, node, m):
            continue
        inner = [g for p, g in m.items() if p.op != "placeholder"]
        inner_set = set(inner)
        if inner_set & taken:
            continue
        if any(u not in inner_set for g in inner if g is not node for u in g.users):
            continue
        taken |= inner_set
        matches.append(Match(anchor=anchor, nodes_map=m))
    return matches


def replace_pattern(gm, pattern, replacement) -> List[Match]:
    """Rewrite gm's graph in place (see the module docstring) and recompile gm; returns the matches."""
    graph = gm.graph
    pattern_graph = _graph_of(pattern)
    replacement_graph = _graph_of(replacement)
    matches = _find_matches(graph, pattern_graph)
    p_inputs = [n for n in pattern_graph.nodes if n.op == "placeholder"]
    r_inputs = [n for n in replacement_graph.nodes if n.op == "placeholder"]
    if len(p_inputs) != len(r_inputs):
        raise ValueError("the pattern and the replacement must take the same number of inputs")
    for match in matches:
        m = match.nodes_map
        result = m[match.anchor]
        val_map = {r: m[p] for r, p in zip(r_inputs, p_inputs)}
        first_user = next((n for n in graph.nodes if n in result.users), None)
        ctx = graph.inserting_before(first_user) if first_user is not None else graph.inserting_after(result)
        with ctx:
            new = graph.graph_copy(replacement_graph, val_map)
        if not isinstance(new, Node):
            raise ValueError("replace_pattern supports replacements returning one value")
        result.replace_all_uses_with(new)
        for p in reversed(list(pattern_graph.nodes)):
            if p in m and p.op != "placeholder":
                graph.erase_node(m[p])
    gm.recompile()
    return matches
