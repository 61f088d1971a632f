"""Collectives that autograd differentiates through (out of place; the input is not modified).

    y = all_reduce(x)          # y = sum over ranks of x; dL/dx = sum over ranks of dL/dy
    parts = all_gather(x)      # a tuple with every rank's x; dL/dx = sum over ranks of dL/dparts[me]
    y = broadcast(x, src=0)    # src's x everywhere; dL/dx on src = sum over ranks of dL/dy, else 0

Every rank must run the backward pass too (the backward of a collective is a collective).
"""
from __future__ import annotations

from ...autograd.graph import needs_grad, record, record_multi
from .. import collectives as C
from ..process_group import resolve
from ..reduce_op import ReduceOp, as_reduce_op

__all__ = ["all_reduce", "all_gather", "broadcast"]


def _fresh(t):
    """A contiguous copy of t's values, cut from the graph."""
    return t.detach().clone()


def all_reduce(tensor, op=ReduceOp.SUM, group=None):
    """The reduction of `tensor` over the group, as a new tensor. Differentiable for SUM and AVG
    (the gradient is all-reduced the same way)."""
    op = as_reduce_op(op)
    out = _fresh(tensor)
    C.all_reduce(out, op, group)
    if needs_grad(tensor):
        if op not in (ReduceOp.SUM, ReduceOp.AVG):
            def vjp(g):
                raise RuntimeError(f"all_reduce with ReduceOp.{op.name} is not differentiable "
                                   "(only SUM and AVG are)")
        else:
            def vjp(g):
                return (all_reduce(g, op, group),)
        record("AllReduceBackward", out, [tensor], vjp)
    return out


def all_gather(tensor, group=None):
    """A tuple with the `tensor` of every process of the group (in group-rank order)."""
    pg = resolve(group)
    n = pg.size()
    outs = [_fresh(tensor) for _ in range(n)]
    C.all_gather(outs, tensor.detach(), group)
    if needs_grad(tensor):
        def vjp(grads):
            mine = _fresh(grads[0])
            C.reduce_scatter(mine, [g.detach().contiguous() for g in grads], ReduceOp.SUM, group)
            return (mine,)
        record_multi("AllGatherBackward", outs, [tensor], vjp)
    return tuple(outs)


def broadcast(tensor, src, group=None):
    """`tensor` of global rank `src`, on every process, as a new tensor."""
    out = _fresh(tensor)
    C.broadcast(out, src, group)
    if needs_grad(tensor):
        pg = resolve(group)

        def vjp(g):
            acc = _fresh(g)
            C.reduce(acc, src, ReduceOp.SUM, group)
            if pg.rank() != pg.group_rank(src):
                acc = acc * 0
            return (acc,)
        record("BroadcastBackward", out, [tensor], vjp)
    return out
