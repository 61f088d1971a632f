"""The gradient reducer of DistributedDataParallel: bucketed, non-blocking all-reduces that start
while backward is still running.

Parameters are assigned to buckets once, in reverse registration order (roughly the order in which
backward produces their gradients), one dtype per bucket, up to `bucket_bytes` each. Each bucket
owns a flat buffer; every parameter has a view of its slice.

During backward, a post-accumulate-grad hook copies a parameter's fresh `.grad` into its slice.
When every parameter of a bucket has been seen, the bucket's all-reduce starts (non-blocking) -
but only after all buckets before it started, so every rank issues the same all-reduces in the same
order. At the end of backward (an engine final callback) the remaining buckets start, parameters
that got no gradient in this backward contribute their current `.grad` (zeros when it is None), a
small all-reduce of a "has a gradient" flag per parameter runs alongside, and the reducer waits:
the sums are divided by the world size once and copied back into `.grad` (a parameter without a
gradient on every rank keeps `.grad = None`).
"""
from __future__ import annotations

import time
import weakref

from ...autograd.engine import queue_callback
from ...tensor import _make


class _Bucket:
    __slots__ = ("index", "params", "slots", "views", "flat", "k", "dtype", "pending", "seen", "copied",
                 "work")

    def __init__(self, index, params, slots):
        self.index = index
        self.params = params        # the Parameters, in bucket order
        self.slots = slots          # their positions in the reducer's parameter list
        self.k = k = params[0]._k
        self.dtype = params[0]._dtype
        n = sum(p.numel() for p in params)
        self.flat = k["full"]((n,), 0, self.dtype.name)
        self.views = []
        off = 0
        for p in params:
            m = p.numel()
            self.views.append(k["reshape"](k["slice"](self.flat, (slice(off, off + m),)), tuple(p._data.shape)))
            off += m
        self.work = None
        self.reset()

    def nbytes(self) -> int:
        return self.flat.shape[0] * self.dtype.itemsize

    def reset(self):
        self.pending = len(self.params)          # parameters not yet ready
        self.seen = [False] * len(self.params)   # ready (a gradient arrived, or marked unused)
        self.copied = [False] * len(self.params)  # its gradient is in the flat buffer


def assign_buckets(params, bucket_bytes):
    """Lists of parameter positions: reverse order, one dtype (and backend) per bucket, at most
    bucket_bytes each (a larger parameter gets a bucket of its own)."""
    buckets, open_ = [], {}
    for i in reversed(range(len(params))):
        p = params[i]
        key = (p._dtype, id(p._k))
        cur = open_.get(key)
        size = p.numel() * p._dtype.itemsize
        if cur is not None and cur[1] + size > bucket_bytes:
            buckets.append(cur[0])
            cur = None
        if cur is None:
            cur = open_[key] = [[], 0]
        cur[0].append(i)
        cur[1] += size
    buckets += [c[0] for c in open_.values() if c[0]]
    # creation order differs between dtypes: order by each bucket's first parameter, which is the
    # same on every rank
    buckets.sort(key=lambda b: -b[0])
    return buckets


class Reducer:
    """See the module docstring. `armed` is set by DistributedDataParallel.forward; hooks of a
    backward that follows a forward under no_sync() (or outside the wrapper) do nothing."""

    def __init__(self, params, group, bucket_bytes):
        self.params = list(params)
        self.group = group
        self.backend = group.backend
        self.handle = group.handle
        self.world = group.size()
        self.bucket_bytes = bucket_bytes
        self.buckets = [_Bucket(j, [self.params[i] for i in idx], idx)
                        for j, idx in enumerate(assign_buckets(self.params, bucket_bytes))]
        self.where = {}
        for b in self.buckets:
            for pos, i in enumerate(b.slots):
                self.where[id(self.params[i])] = (b, pos)
        self.armed = False
        self._queued = False
        self._next = 0                  # the first bucket whose all-reduce has not started
        self._done = 0                  # buckets before this one have finished their all-reduce
        self.late = []
        # statistics: seconds blocked waiting for all-reduces, number of reductions
        self.wait_time = 0.0
        self.reductions = 0
        self.launched_early = 0         # buckets started from hooks, while backward was running
        ref = weakref.ref(self)

        def hook(p, ref=ref):
            r = ref()
            if r is not None:
                r._on_grad(p)
        self._handles = [p.register_post_accumulate_grad_hook(hook) for p in self.params]

    def remove_hooks(self):
        for h in self._handles:
            h.remove()
        self._handles = []

    def prepare(self, armed):
        """Called by forward. A backward that raised part-way leaves started all-reduces and a
        half-filled iteration behind: finish them and start clean."""
        if self._queued or self._next:
            for b in self.buckets[:self._next]:
                if b.work is not None:
                    b.work.wait()
                    b.work = None
            for b in self.buckets:
                b.reset()
            self._queued = False
            self._next = self._done = 0
            self.late = []
        self.armed = armed

    # -- during backward ----------------------------------------------------------------------------
    def mark_unused(self, used_ids):
        """find_unused_parameters: parameters that backward cannot reach count as ready now (they
        contribute their current .grad, or zeros, when their bucket starts)."""
        for p in self.params:
            if id(p) not in used_ids:
                b, pos = self.where[id(p)]
                if not b.seen[pos]:
                    b.seen[pos] = True
                    b.pending -= 1

    def _on_grad(self, p):
        if not self.armed:
            return
        b, pos = self.where[id(p)]
        if not self._queued:
            queue_callback(self._finalize)
            self._queued = True
        if b.index < self._next:
            # marked unused at forward, but a gradient arrived after its bucket started
            self.late.append(p)
            return
        b.k["assign"](b.views[pos], p.grad._data)
        b.copied[pos] = True
        if not b.seen[pos]:
            b.seen[pos] = True
            b.pending -= 1
            if b.pending == 0 and b.index == self._next:
                self._launch_ready()
                return
        self._poke()

    def _launch_ready(self):
        buckets = self.buckets
        while self._next < len(buckets) and buckets[self._next].pending == 0:
            self._launch(buckets[self._next])
            self._next += 1
            self.launched_early += 1

    def _launch(self, b):
        k = b.k
        copied = b.copied
        for pos, p in enumerate(b.params):
            if not copied[pos]:             # no gradient in this backward: its current .grad or zeros
                g = p.grad
                k["assign"](b.views[pos], 0 if g is None else g._data)
        b.work = self.backend.all_reduce(b.flat, "sum", self.handle, async_op=True)

    def _poke(self):
        """Let MPI progress the all-reduces in flight (they move only inside MPI calls)."""
        buckets = self.buckets
        while self._done < self._next:
            if not buckets[self._done].work.is_completed():
                return
            self._done += 1

    # -- end of backward -----------------------------------------------------------------------------
    def _finalize(self):
        self._queued = False
        self.armed = False
        buckets = self.buckets
        while self._next < len(buckets):
            self._launch(buckets[self._next])
            self._next += 1
        # which parameters have a gradient on some rank (the others keep .grad = None)
        k0 = self.params[0]._k
        flags = k0["from_numpy"](_flags([p.grad is not None for p in self.params]))
        flags_work = self.backend.all_reduce(flags, "max", self.handle, async_op=True)
        t0 = time.perf_counter()
        for b in buckets:
            b.work.wait()
        flags_work.wait()
        self.wait_time += time.perf_counter() - t0
        self.reductions += 1
        used = k0["to_numpy"](flags)
        world = self.world
        inv = 1.0 / world
        for b in buckets:
            k = b.k
            views = b.views
            mul = k["mul"]
            for pos, p in enumerate(b.params):
                if used[b.slots[pos]]:
                    g = p.grad
                    if g is None:
                        p.grad = _make(mul(views[pos], inv) if world > 1 else k["copy"](views[pos]),
                                       p._dtype, k, p._dev)
                    elif world > 1:
                        mul(views[pos], inv, out=g._data)      # average and copy back in one pass
                        g._bump_version()
            b.work = None
            b.reset()
        self._next = self._done = 0
        if self.late:
            names = len(self.late)
            self.late = []
            raise RuntimeError(f"DistributedDataParallel: {names} parameter(s) that the forward pass did "
                               "not reach (find_unused_parameters=True) received a gradient after their "
                               "bucket was reduced; compute the loss only from the wrapped module's output")


def _flags(values):
    import numpy as np
    return np.array(values, dtype=np.uint8)
