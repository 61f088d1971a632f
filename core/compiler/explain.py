"""torch._dynamo.explain(fn)(*args): run fn compiled once and say how it was captured."""
from __future__ import annotations

import dataclasses


@dataclasses.dataclass
class ExplainOutput:
    graph_count: int
    graph_break_count: int
    break_reasons: list
    op_count: int

    def __str__(self):
        lines = [f"Graph Count: {self.graph_count}", f"Graph Break Count: {self.graph_break_count}",
                 f"Op Count: {self.op_count}", "Break Reasons:"]
        lines += [f"  Break Reason {i + 1}: {r}" for i, r in enumerate(self.break_reasons)]
        return "\n".join(lines) + "\n"


def explain(fn, *extra_args, **extra_kwargs):
    from .api import compile as _compile

    def run(*args, **kwargs):
        compiled = _compile(fn, backend="eager")
        inner = compiled._compiled if hasattr(compiled, "_compiled") else compiled
        compiled(*args, **kwargs)
        entries = list(inner.cache.values())
        breaks = [e.eager_reason for e in entries if e.eager_reason is not None]
        graphs = [e for e in entries if e.eager_reason is None]
        ops = sum(len(e.forward) for e in graphs)
        return ExplainOutput(len(graphs), len(breaks), breaks, ops)
    if extra_args or extra_kwargs:
        return run(*extra_args, **extra_kwargs)
    return run
