"""ReduceOp: how all_reduce, reduce and reduce_scatter combine the tensors of the ranks.

ReduceOp.PREMUL_SUM is PyTorch's NCCL-only op, here for every backend: `_make_nccl_premul_sum(f)`
is an op that multiplies each process's input by f, then sums (FSDP divides gradients with it).
The collectives apply it with `premul` (the backend only ever sees a plain "sum")."""
from __future__ import annotations

import enum

__all__ = ["ReduceOp", "reduce_op", "premul"]


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


class PremulSum:
    """ReduceOp.PREMUL_SUM, with the factor `_make_nccl_premul_sum` gives it (None: not usable yet).
    Not an enum member (PyTorch's ReduceOp.PREMUL_SUM cannot be used without a factor either)."""
    __slots__ = ("factor",)
    name = "PREMUL_SUM"

    def __init__(self, factor=None):
        self.factor = factor

    def __eq__(self, other):
        return other.__class__ is PremulSum

    def __hash__(self):
        return hash(PremulSum)

    def __repr__(self):
        return "<ReduceOp.PREMUL_SUM>" if self.factor is None else f"<ReduceOp.PREMUL_SUM({self.factor})>"


ReduceOp.PREMUL_SUM = PremulSum()


def _make_nccl_premul_sum(factor):
    """ReduceOp.PREMUL_SUM with `factor`: a Python number, or a tensor of one element (read now, so
    each process may pass its own)."""
    from ..tensor import Tensor
    if isinstance(factor, Tensor):
        if factor.numel() != 1:
            raise ValueError(f"_make_nccl_premul_sum: a tensor factor must have one element, got shape "
                             f"{list(factor.shape)}")
        factor = factor.item()
    if isinstance(factor, bool) or not isinstance(factor, (int, float)):
        raise TypeError(f"_make_nccl_premul_sum: factor must be a number or a one-element tensor, got "
                        f"{type(factor).__name__}")
    return PremulSum(factor)


def premul(op, tensor, out=None):
    """Apply PREMUL_SUM's scaling: for PREMUL_SUM, ("sum", factor * tensor's data) written into the
    backend array `out` when given (e.g. the tensor's own data, for all_reduce) else into a new one;
    `tensor` may be a list of tensors (reduce_scatter's inputs), giving a list of new arrays. For any
    other op (op, None): unchanged. RuntimeError for a PREMUL_SUM without a factor or on a tensor
    that is not floating point."""
    if op.__class__ is not PremulSum:
        return op, None
    if op.factor is None:
        raise RuntimeError("ReduceOp.PREMUL_SUM needs a factor: pass "
                           "tensorplug.distributed._make_nccl_premul_sum(factor) as the op")
    if isinstance(tensor, (list, tuple)):
        return "sum", [premul(op, t)[1] for t in tensor]
    if not tensor._dtype.is_floating_point:
        raise RuntimeError(f"ReduceOp.PREMUL_SUM needs a floating-point tensor, got {tensor._dtype.name}")
    k = tensor._k
    if out is None:
        return "sum", k["mul"](tensor._data, op.factor)
    k["mul"](tensor._data, op.factor, out=out)
    return "sum", out


# the name of PyTorch 0.2 (`dist.reduce_op.SUM`)
reduce_op = ReduceOp

_BY_NAME = {op.value: op for op in ReduceOp}


def as_reduce_op(op) -> ReduceOp:
    """A ReduceOp from a ReduceOp or its name ("sum", "SUM", ...); TypeError/ValueError otherwise."""
    if op.__class__ is ReduceOp:
        return op
    if op.__class__ is PremulSum:
        raise ValueError("ReduceOp.PREMUL_SUM is only supported by all_reduce, reduce, reduce_scatter "
                         "and reduce_scatter_tensor")
    if isinstance(op, str):
        found = _BY_NAME.get(op.lower())
        if found is not None:
            return found
        raise ValueError(f"unknown reduce op {op!r}; expected one of {', '.join(o.name for o in ReduceOp)}")
    raise TypeError(f"op must be a tensorplug.distributed.ReduceOp, got {type(op).__name__}")
