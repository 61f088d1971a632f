"""AllToAll: the MPI backend's all-to-all collectives (a mixin of MpiBackend).

    backend.all_to_all(out_arrays, in_arrays, group, async_op=False)
        out_arrays[j] receives in_arrays[me] of group rank j; the sizes may differ per pair.
    backend.all_to_all_single(out_array, in_array, out_split_sizes, in_split_sizes, group, async_op=False)
        in_array's rows (dim 0) are split in in_split_sizes[j] rows for rank j; out_array's rows in
        out_split_sizes[j] rows from rank j. None: equal splits (dim 0 divisible by the group size).

Before the data moves, the ranks exchange what each sends to each (element count and dtype) and
agree whether everything matches: a mismatch raises RuntimeError on every rank, where MPI itself
would truncate a message (and abort) or wait forever. This costs one small Alltoall and one
Allgather; with async_op=True only the data transfer is non-blocking. Data travels as bytes.
"""
from __future__ import annotations

import numpy as np

__all__ = ["AllToAll"]


def _code(dtype):
    """An int naming a dtype the same way in every process (kind and size: int64 is one code, though
    NumPy has two type numbers for it)."""
    dtype = np.dtype(dtype)
    return ord(dtype.kind) * 256 + dtype.itemsize


def _code_name(code):
    try:
        return np.dtype(f"{chr(code // 256)}{code % 256}").name if chr(code // 256) != "b" else "bool"
    except (TypeError, ValueError):
        return "?"


def _bytes(b):
    """A contiguous ndarray's flat uint8 view (0-d and empty arrays included)."""
    return b.reshape(-1).view(np.uint8)


def _check_arrays(arrays, n, what, op):
    if not isinstance(arrays, (list, tuple)):
        raise TypeError(f"{op}: {what} must be a list of arrays, got {type(arrays).__name__}")
    if len(arrays) != n:
        raise RuntimeError(f"{op}: {what} has {len(arrays)} arrays; the group has {n} processes "
                           f"(one array per process)")


def _splits(split_sizes, shape, n, what):
    """Element counts per rank of an array split along dim 0 in `split_sizes` rows (None: equal)."""
    if len(shape) == 0:
        raise RuntimeError(f"all_to_all_single: the {what} is 0-d; it needs a dim 0 to split")
    rows = shape[0]
    row = int(np.prod(shape[1:], dtype=np.int64))
    if split_sizes is None:
        if rows % n:
            raise RuntimeError(f"all_to_all_single: the {what}'s dim 0 ({rows}) is not divisible by the "
                               f"group size ({n}); pass {what}_split_sizes")
        return [rows // n * row] * n
    split_sizes = list(split_sizes)
    if len(split_sizes) != n:
        raise RuntimeError(f"all_to_all_single: {what}_split_sizes has {len(split_sizes)} entries; the "
                           f"group has {n} processes (one split per process)")
    for s in split_sizes:
        if isinstance(s, bool) or not isinstance(s, (int, np.integer)) or s < 0:
            raise RuntimeError(f"all_to_all_single: {what}_split_sizes must be non-negative ints, got "
                               f"{split_sizes}")
    if sum(split_sizes) != rows:
        raise RuntimeError(f"all_to_all_single: {what}_split_sizes {split_sizes} sum to "
                           f"{sum(split_sizes)}, but the {what}'s dim 0 is {rows}")
    return [int(s) * row for s in split_sizes]


def _blocking(op, group, arrays, start, *args):
    """start(*args), a non-blocking MPI call, waited for under backend.py's rules (the group's
    timeout, failed peers, translated MPI errors)."""
    from .backend import blocking
    return blocking(op, group, arrays, start, *args)


def _request(req, fin, keep, group, op):
    from .backend import MpiRequest
    return MpiRequest(req, finish=fin, keep=keep, group=group, what=op)


def _displacements(counts):
    return [int(d) for d in np.concatenate(([0], np.cumsum(counts[:-1], dtype=np.int64)))]


class AllToAll:
    """all_to_all and all_to_all_single on mpi4py's Alltoall / Alltoallv (see the module docstring)."""

    def _agree(self, group, send_counts, recv_counts, dtype, op):
        """Raise RuntimeError on every rank unless each rank receives from each what it sends."""
        n, me, comm = group.size, group.rank, group.comm
        code = _code(dtype)
        mine = np.array([[c, code] for c in send_counts], np.int64).reshape(n, 2)
        theirs = np.empty_like(mine)
        _blocking(op, group, (mine,), comm.Ialltoall, mine, theirs)   # theirs[j]: what rank j sends here
        bad = [j for j in range(n) if theirs[j, 0] != recv_counts[j] or theirs[j, 1] != code]
        flags = np.empty(n, np.int64)
        _blocking(op, group, (flags,), comm.Iallgather, np.array([len(bad)], np.int64), flags)
        if not flags.any():
            return
        if bad:
            j = bad[0]
            sent = _code_name(int(theirs[j, 1]))
            raise RuntimeError(f"{op}: group rank {me} expects {recv_counts[j]} {np.dtype(dtype).name} "
                               f"elements from group rank {j}, which sends {int(theirs[j, 0])} {sent} "
                               f"elements")
        raise RuntimeError(f"{op}: the sizes or dtypes do not match between processes (group ranks "
                           f"{[r for r in range(n) if flags[r]]} receive something other than what "
                           f"is sent to them)")

    def _exchange(self, op, group, send, send_counts, recv, recv_counts, itemsize, fin, keep, async_op):
        """Move the bytes: Alltoall when every count is equal, else Alltoallv."""
        comm = group.comm
        sc = [c * itemsize for c in send_counts]
        rc = [c * itemsize for c in recv_counts]
        if len(set(sc)) == 1 and sc == rc:
            args = (send, recv)
            start = comm.Ialltoall
        else:
            args = ([send, (sc, _displacements(sc))], [recv, (rc, _displacements(rc))])
            start = comm.Ialltoallv
        if async_op:
            return _request(start(*args), fin, keep, group, op)
        _blocking(op, group, (send, recv), start, *args)
        if fin is not None:
            fin()
        return None

    def all_to_all(self, out_arrays, in_arrays, group, async_op=False):
        from .backend import _buf, _put
        n = group.size
        _check_arrays(out_arrays, n, "out_arrays", "all_to_all")
        _check_arrays(in_arrays, n, "in_arrays", "all_to_all")
        ins = [_buf(a)[0] for a in in_arrays]
        dtype = ins[0].dtype
        for what, arrays in (("in_arrays", in_arrays), ("out_arrays", out_arrays)):
            for i, a in enumerate(arrays):
                if a.dtype != dtype:
                    raise TypeError(f"all_to_all: {what}[{i}] is {a.dtype.name}, in_arrays[0] "
                                    f"{dtype.name}: every array must have the same dtype")
        send_counts = [a.size for a in ins]
        recv_counts = [int(np.prod(o.shape, dtype=np.int64)) for o in out_arrays]
        self._agree(group, send_counts, recv_counts, dtype, "all_to_all")
        send = np.concatenate([_bytes(a) for a in ins])
        recv = np.empty(sum(recv_counts) * dtype.itemsize, np.uint8)
        starts = _displacements([c * dtype.itemsize for c in recv_counts])

        def fin():
            for o, s, c in zip(out_arrays, starts, recv_counts):
                _put(o, recv[s:s + c * dtype.itemsize].view(dtype))
        return self._exchange("all_to_all", group, send, send_counts, recv, recv_counts, dtype.itemsize, fin,
                              (send, recv), async_op)

    def all_to_all_single(self, out_array, in_array, out_split_sizes, in_split_sizes, group,
                          async_op=False):
        from .backend import _buf, _put
        n = group.size
        b, _ = _buf(in_array)
        o, back = _buf(out_array)
        if b.dtype != o.dtype:
            raise TypeError(f"all_to_all_single: the output is {o.dtype.name}, the input {b.dtype.name}: "
                            f"they must have the same dtype")
        send_counts = _splits(in_split_sizes, b.shape, n, "input")
        recv_counts = _splits(out_split_sizes, o.shape, n, "output")
        self._agree(group, send_counts, recv_counts, b.dtype, "all_to_all_single")
        fin = (lambda: _put(back, o)) if back is not None else None
        return self._exchange("all_to_all_single", group, _bytes(b), send_counts, _bytes(o), recv_counts,
                              b.dtype.itemsize, fin, (b, o), async_op)
