"""all_to_all and all_to_all_single: every process sends a different piece to every other.

    # 2 processes; rank r's input is [2r, 2r + 1]
    out = torch.empty(2)
    dist.all_to_all_single(out, torch.tensor([2.0 * r, 2.0 * r + 1]))
    # rank 0: [0, 2]   rank 1: [1, 3]   (rank j gets the j-th piece of everyone's input)

Pieces may have different sizes: all_to_all's tensors per pair, all_to_all_single's split sizes (rows
of dim 0). What a process receives from each must match what that one sends to it, else every
process raises RuntimeError. These are optional collectives of a communication backend: one that
lacks them raises NotImplementedError naming itself.
"""
from __future__ import annotations

from ..tensor import Tensor
from .process_group import resolve
from .work import Work

__all__ = ["all_to_all", "all_to_all_single"]


def _spi(pg, name):
    fn = getattr(pg.backend, name, None)
    if fn is None:
        raise NotImplementedError(f"{name}: the communication backend {pg.backend.name!r} does not "
                                  f"provide {name}")
    return fn


def _tensor_list(tensors, n, what):
    if not isinstance(tensors, (list, tuple)):
        raise TypeError(f"all_to_all: {what} must be a list of tensors, got {type(tensors).__name__}")
    if len(tensors) != n:
        raise RuntimeError(f"all_to_all: {what} has {len(tensors)} tensors; the group has {n} processes "
                           f"(one tensor per process)")
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"all_to_all: {what}[{i}] must be a tensorplug.Tensor, got {type(t).__name__}")


def _same_kind(pairs, op):
    """Every (name, tensor) has the first one's dtype (ValueError) and device (RuntimeError)."""
    name0, t0 = pairs[0]
    for name, t in pairs[1:]:
        if t._dtype is not t0._dtype:
            raise ValueError(f"{op}: {name} is {t._dtype.name}, {name0} {t0._dtype.name}: the tensors "
                             f"must have the same dtype")
        if t._k is not t0._k:
            raise RuntimeError(f"{op}: {name} is on {t.device}, {name0} on {t0.device}")


def all_to_all(output_tensor_list, input_tensor_list, group=None, async_op=False):
    """Group rank j receives input_tensor_list[i] of group rank i in its output_tensor_list[i]
    (one tensor per process in each list; sizes may differ per pair, dtypes may not)."""
    pg = resolve(group)
    if pg is None:
        return None
    n = pg.handle.size
    _tensor_list(output_tensor_list, n, "output_tensor_list")
    _tensor_list(input_tensor_list, n, "input_tensor_list")
    _same_kind([(f"input_tensor_list[{i}]", t) for i, t in enumerate(input_tensor_list)]
               + [(f"output_tensor_list[{i}]", t) for i, t in enumerate(output_tensor_list)], "all_to_all")
    fn = _spi(pg, "all_to_all")
    for t in output_tensor_list:
        t._bump_version()
    req = fn([t._data for t in output_tensor_list], [t._data for t in input_tensor_list], pg.handle, async_op)
    return Work(req, None, pg) if async_op else None


def _split_list(sizes, what):
    if sizes is None:
        return None
    if not isinstance(sizes, (list, tuple)):
        raise TypeError(f"all_to_all_single: {what} must be a list of ints or None, got {type(sizes).__name__}")
    return [int(s) if isinstance(s, Tensor) else s for s in sizes]


def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None, group=None,
                      async_op=False):
    """Split `input` along dim 0 (input_split_sizes[j] rows for group rank j; None: equal pieces),
    send the j-th piece to rank j, and concatenate what arrives along dim 0 of `output`
    (output_split_sizes[i] rows from rank i; None: equal pieces)."""
    pg = resolve(group)
    if pg is None:
        return None
    for what, t in (("output", output), ("input", input)):
        if not isinstance(t, Tensor):
            raise TypeError(f"all_to_all_single: {what} must be a tensorplug.Tensor, got {type(t).__name__}")
    _same_kind([("input", input), ("output", output)], "all_to_all_single")
    outs = _split_list(output_split_sizes, "output_split_sizes")
    ins = _split_list(input_split_sizes, "input_split_sizes")
    fn = _spi(pg, "all_to_all_single")
    output._bump_version()
    req = fn(output._data, input._data, outs, ins, pg.handle, async_op)
    return Work(req, None, pg) if async_op else None
