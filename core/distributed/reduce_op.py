"""ReduceOp: how all_reduce, reduce and reduce_scatter combine the tensors of the ranks."""
from __future__ import annotations

import enum

__all__ = ["ReduceOp", "reduce_op"]


class ReduceOp(enum.Enum):
    """SUM, PRODUCT, MIN, MAX; BAND, BOR, BXOR (integer and bool tensors); AVG (floating point:
    the sum divided by the group's size). On bool tensors SUM is a logical or, PRODUCT a logical and."""
    SUM = "sum"
    PRODUCT = "product"
    MIN = "min"
    MAX = "max"
    BAND = "band"
    BOR = "bor"
    BXOR = "bxor"
    AVG = "avg"

    def __repr__(self):
        return f"<ReduceOp.{self.name}>"


# the name of PyTorch 0.2 (`dist.reduce_op.SUM`)
reduce_op = ReduceOp

_BY_NAME = {op.value: op for op in ReduceOp}


def as_reduce_op(op) -> ReduceOp:
    """A ReduceOp from a ReduceOp or its name ("sum", "SUM", ...); TypeError/ValueError otherwise."""
    if op.__class__ is ReduceOp:
        return op
    if isinstance(op, str):
        found = _BY_NAME.get(op.lower())
        if found is not None:
            return found
        raise ValueError(f"unknown reduce op {op!r}; expected one of {', '.join(o.name for o in ReduceOp)}")
    raise TypeError(f"op must be a tensorplug.distributed.ReduceOp, got {type(op).__name__}")
