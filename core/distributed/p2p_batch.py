"""P2POp and batch_isend_irecv: several sends and receives started together.

    send = dist.P2POp(dist.isend, x, (rank + 1) % world)          # a ring: to the next process,
    recv = dist.P2POp(dist.irecv, y, (rank - 1 + world) % world)  # from the previous one
    for work in dist.batch_isend_irecv([send, recv]):
        work.wait()

Every operation of the batch is started before any is waited on, so the order of the list cannot
deadlock; messages between the same two processes (same tag) are matched in the order started.
"""
from __future__ import annotations

from ..tensor import Tensor
from .process_group import resolve

__all__ = ["P2POp", "batch_isend_irecv"]


def group_rank_of(pg, rank, group_rank, names, default=None):
    """The group rank meant by a global `rank` or a `group_rank`, whose argument names are `names`
    (e.g. ("dst", "group_dst")): exactly one of them, or neither when `default` (a global rank) is
    not None. ValueError otherwise."""
    if group_rank is not None:
        if rank is not None:
            raise ValueError(f"give {names[0]} or {names[1]}, not both")
        if isinstance(group_rank, bool) or not isinstance(group_rank, int) or not 0 <= group_rank < pg.size():
            raise ValueError(f"invalid {names[1]} {group_rank!r}: the group has ranks 0 to {pg.size() - 1}")
        return group_rank
    if rank is None:
        if default is None:
            raise ValueError(f"{names[0]} (a global rank) or {names[1]} (a rank in the group) is required")
        rank = default
    return pg.group_rank(rank, names[0])


def _point_to_point_ops():
    """{function: name} for isend and irecv, as this package exports them and as collectives has them."""
    import tensorplug.distributed as package
    from . import collectives
    return {package.isend: "isend", package.irecv: "irecv", collectives.isend: "isend",
            collectives.irecv: "irecv"}


class P2POp:
    """One operation of batch_isend_irecv: `op` is tensorplug.distributed.isend or .irecv, `peer`
    the other process's global rank (or `group_peer`, its rank in `group`), `tag` as for isend."""
    __slots__ = ("op", "tensor", "peer", "group", "tag", "group_peer")

    def __init__(self, op, tensor, peer=None, group=None, tag=0, group_peer=None):
        if op not in _point_to_point_ops():
            raise ValueError(f"P2POp: op must be tensorplug.distributed.isend or tensorplug.distributed.irecv, "
                             f"got {getattr(op, '__name__', op)!r}")
        if not isinstance(tensor, Tensor):
            raise TypeError(f"P2POp: tensor must be a tensorplug.Tensor, got {type(tensor).__name__}")
        pg = resolve(group)
        self.op, self.tensor, self.tag = op, tensor, tag
        self.group = group if pg is None else pg
        if pg is None:                       # not a member: batch_isend_irecv skips the op
            self.peer, self.group_peer = peer, group_peer
            return
        self.group_peer = group_rank_of(pg, peer, group_peer, ("peer", "group_peer"))
        if self.group_peer == pg.rank():
            raise ValueError(f"P2POp: invalid peer {peer if peer is not None else group_peer}: it is the "
                             f"rank of this process")
        self.peer = pg.global_rank(self.group_peer)

    def __repr__(self):
        name = _point_to_point_ops().get(self.op, "?")
        return f"P2POp({name}, peer={self.peer}, tag={self.tag}, {list(self.tensor.shape)}, {self.tensor.dtype})"


def batch_isend_irecv(p2p_op_list):
    """Start every P2POp of the list (all on one group) and return their Work handles, in order
    (processes that are not members of the group get an empty list)."""
    if not isinstance(p2p_op_list, list) or not all(isinstance(p, P2POp) for p in p2p_op_list):
        raise ValueError("batch_isend_irecv: p2p_op_list must be a list of tensorplug.distributed.P2POp")
    if not p2p_op_list:
        raise ValueError("batch_isend_irecv: p2p_op_list is empty")
    group = p2p_op_list[0].group
    if any(p.group is not group for p in p2p_op_list):
        raise ValueError("batch_isend_irecv: every P2POp of the list must use the same group")
    works = [p.op(p.tensor, p.peer, group, p.tag) for p in p2p_op_list]
    return [w for w in works if w is not None]
