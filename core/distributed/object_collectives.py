"""Collectives on picklable Python objects: broadcast_object_list, all_gather_object, gather_object,
scatter_object_list, send_object_list / recv_object_list.

    objs = [{"epoch": 3}, None] if dist.get_rank() == 0 else [None, None]
    dist.broadcast_object_list(objs, src=0)       # every rank: [{"epoch": 3}, None]

Each object is pickled into a uint8 tensor; the sizes travel first (so objects of any size, and of
different sizes per process, work), then the bytes, through the tensor collectives of this package.
The given lists are filled in place, as in PyTorch. Tensors inside objects arrive as CPU tensors
(`device=` is accepted; the bytes always travel through host memory). Unpickling runs arbitrary code:
use these only with processes you trust. Where one process's list does not match what is sent (a
different length), the data is still received in full, so no process is left waiting, then it raises.
"""
from __future__ import annotations

import numpy as np

from . import collectives as C
from .p2p_batch import group_rank_of
from .process_group import resolve

__all__ = ["broadcast_object_list", "all_gather_object", "gather_object", "scatter_object_list",
           "send_object_list", "recv_object_list"]

_I8 = np.dtype(np.int64).itemsize


def _tensor(a):
    from ..ops.creation import from_numpy
    return from_numpy(np.ascontiguousarray(a))


def _dumps(obj) -> np.ndarray:
    import io
    import pickle                       # here, not at import time of tensorplug.distributed
    f = io.BytesIO()
    pickle.Pickler(f).dump(obj)
    return np.frombuffer(f.getbuffer(), np.uint8).copy()


def _loads(a):
    import io
    import pickle
    return pickle.Unpickler(io.BytesIO(np.ascontiguousarray(a).tobytes())).load()


def _pack(objects) -> np.ndarray:
    """[sizes as int64 | the pickles], one uint8 array."""
    pickles = [_dumps(o) for o in objects]
    sizes = np.array([p.size for p in pickles], np.int64)
    return np.concatenate([sizes.view(np.uint8)] + pickles)


def _unpack(buf, count):
    sizes = buf[:count * _I8].view(np.int64)
    ends = count * _I8 + np.cumsum(sizes)
    return [_loads(buf[e - s:e]) for s, e in zip(sizes, ends)]


def _object_list(lst, what, op):
    if not isinstance(lst, list):
        raise TypeError(f"{op}: {what} must be a list, got {type(lst).__name__}")


def broadcast_object_list(object_list, src=None, group=None, device=None, group_src=None):
    """Every process's `object_list` gets (in place) the objects of the source's list (global rank
    `src`, or `group_src` in the group; default 0). The lists have the same length everywhere."""
    pg = resolve(group)
    if pg is None:
        return None
    _object_list(object_list, "object_list", "broadcast_object_list")
    root = group_rank_of(pg, src, group_src, ("src", "group_src"), default=0)
    src = pg.global_rank(root)
    me = pg.rank()
    data = _pack(object_list) if me == root else None
    header = _tensor(np.array([len(object_list), data.size] if data is not None else [0, 0], np.int64))
    C.broadcast(header, src, pg)
    count, nbytes = (int(v) for v in header.numpy())
    payload = _tensor(data if data is not None else np.empty(nbytes, np.uint8))
    C.broadcast(payload, src, pg)
    if me == root:
        return None
    if count != len(object_list):
        raise ValueError(f"broadcast_object_list: the source rank {src} sent {count} objects, but object_list "
                         f"has {len(object_list)} elements here (it must have the same length on every rank)")
    object_list[:] = _unpack(payload.numpy(), count)
    return None


def _padded(data, width):
    out = np.zeros(width, np.uint8)
    out[:data.size] = data
    return out


def _sizes(pg, n_bytes):
    """Every process's byte count, in group-rank order."""
    sizes = _tensor(np.zeros(pg.size(), np.int64))
    C.all_gather_into_tensor(sizes, _tensor(np.array([n_bytes], np.int64)), pg)
    return [int(s) for s in sizes.numpy()]


def all_gather_object(object_list, obj, group=None):
    """object_list (one element per process of the group) gets every process's `obj`, in place:
    object_list[i] is group rank i's."""
    pg = resolve(group)
    if pg is None:
        return None
    n = pg.size()
    _object_list(object_list, "object_list", "all_gather_object")
    if len(object_list) != n:
        raise ValueError(f"all_gather_object: object_list has {len(object_list)} elements; it needs one per "
                         f"process of the group ({n})")
    data = _dumps(obj)
    sizes = _sizes(pg, data.size)
    width = max(sizes)
    out = _tensor(np.zeros(n * width, np.uint8))
    C.all_gather_into_tensor(out, _tensor(_padded(data, width)), pg)
    rows = out.numpy().reshape(n, width)
    object_list[:] = [_loads(rows[i, :sizes[i]]) for i in range(n)]
    return None


def gather_object(obj, object_gather_list=None, dst=None, group=None, group_dst=None):
    """The destination (global rank `dst`, or `group_dst`; default 0) gets every process's `obj` in
    object_gather_list (one element per process, filled in place); elsewhere it must be None."""
    pg = resolve(group)
    if pg is None:
        return None
    n = pg.size()
    root = group_rank_of(pg, dst, group_dst, ("dst", "group_dst"), default=0)
    me = pg.rank()
    if me == root:
        if object_gather_list is None:
            raise ValueError("gather_object: object_gather_list is required on the destination rank")
        _object_list(object_gather_list, "object_gather_list", "gather_object")
        if len(object_gather_list) != n:
            raise ValueError(f"gather_object: object_gather_list has {len(object_gather_list)} elements; it "
                             f"needs one per process of the group ({n})")
    elif object_gather_list:
        raise ValueError("gather_object: object_gather_list must be None on ranks other than the destination")
    data = _dumps(obj)
    sizes = _sizes(pg, data.size)
    width = max(sizes)
    outs = [_tensor(np.zeros(width, np.uint8)) for _ in range(n)] if me == root else None
    C.gather(_tensor(_padded(data, width)), outs, pg.global_rank(root), pg)
    if me == root:
        object_gather_list[:] = [_loads(o.numpy()[:s]) for o, s in zip(outs, sizes)]
    return None


def scatter_object_list(scatter_object_output_list, scatter_object_input_list=None, src=None, group=None,
                        group_src=None):
    """The source (global rank `src`, or `group_src`; default 0) sends scatter_object_input_list[i]
    to group rank i, which gets it as scatter_object_output_list[0] (a non-empty list; the rest of
    it is left alone). The input list matters on the source only."""
    pg = resolve(group)
    if pg is None:
        return None
    n = pg.size()
    if not isinstance(scatter_object_output_list, list) or not scatter_object_output_list:
        raise ValueError("scatter_object_list: scatter_object_output_list must be a list with at least one "
                         "element (its first element receives the object)")
    root = group_rank_of(pg, src, group_src, ("src", "group_src"), default=0)
    src = pg.global_rank(root)
    me = pg.rank()
    header = np.zeros(n + 1, np.int64)          # [input list is valid, byte count per rank...]
    pickles = None
    problem = None
    if me == root:
        lst = scatter_object_input_list
        if not isinstance(lst, (list, tuple)) or len(lst) != n:
            got = f"{len(lst)} elements" if isinstance(lst, (list, tuple)) else repr(type(lst).__name__)
            problem = (f"scatter_object_list: scatter_object_input_list on the source rank {src} must be a list "
                       f"with one object per process of the group ({n}), got {got}")
        else:
            pickles = [_dumps(o) for o in lst]
            header[0] = 1
            header[1:] = [p.size for p in pickles]
    head = _tensor(header)
    C.broadcast(head, src, pg)              # so that every rank raises on a bad input list
    header = head.numpy()
    if not header[0]:
        raise ValueError(problem or f"scatter_object_list: the source rank {src} has no valid "
                                    f"scatter_object_input_list (one object per process of the group, {n})")
    width = int(header[1:].max())
    piece = _tensor(np.zeros(width, np.uint8))
    ins = [_tensor(_padded(p, width)) for p in pickles] if me == root else None
    C.scatter(piece, ins, src, pg)
    scatter_object_output_list[0] = _loads(piece.numpy()[:int(header[1 + me])])
    return None


def send_object_list(object_list, dst=None, group=None, device=None, group_dst=None, use_batch=False):
    """Send the objects of `object_list` to global rank `dst` (or `group_dst`), which receives
    them with recv_object_list."""
    pg = resolve(group)
    if pg is None:
        return None
    _object_list(object_list, "object_list", "send_object_list")
    dst = pg.global_rank(group_rank_of(pg, dst, group_dst, ("dst", "group_dst")))
    data = _pack(object_list)
    C.send(_tensor(np.array([len(object_list), data.size], np.int64)), dst, pg)
    C.send(_tensor(data), dst, pg)
    return None


def recv_object_list(object_list, src=None, group=None, device=None, group_src=None, use_batch=False):
    """Receive (in place) the objects another process sent with send_object_list, from global rank
    `src` or `group_src` (neither: from any process); `object_list` has as many elements as were sent.
    Returns the sender's global rank."""
    pg = resolve(group)
    if pg is None:
        return -1
    _object_list(object_list, "object_list", "recv_object_list")
    if src is not None or group_src is not None:
        src = pg.global_rank(group_rank_of(pg, src, group_src, ("src", "group_src")))
    header = _tensor(np.zeros(2, np.int64))
    sender = C.recv(header, src, pg)
    count, nbytes = (int(v) for v in header.numpy())
    payload = _tensor(np.empty(nbytes, np.uint8))
    C.recv(payload, sender, pg)             # the rest of that sender's message, whatever src was
    if count != len(object_list):
        raise ValueError(f"recv_object_list: rank {sender} sent {count} objects, but object_list has "
                         f"{len(object_list)} elements (it must have as many as the sent list)")
    object_list[:] = _unpack(payload.numpy(), count)
    return sender
