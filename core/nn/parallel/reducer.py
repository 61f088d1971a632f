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
small all-reduce of two flags per parameter ("has a gradient", "got none in this backward") runs
alongside, and the reducer waits: the sums are divided by the world size once (`div_factor`) and
copied back into `.grad` (a parameter without a gradient on every rank keeps `.grad = None`).

Every rank always issues the same all-reduces, so a parameter that got no gradient never hangs the
job. Without find_unused_parameters that is still a mistake, reported as PyTorch does: the next
forward raises on every rank (`unfinished`).

A communication hook (`register_comm_hook`) replaces a bucket's all-reduce: it gets a GradBucket
and returns a Future of the reduced flat tensor, copied back as it is (the hook divides). On a rank
that has joined (uneven inputs, `shadow_backward`), the same all-reduces run on zeros.
"""
from __future__ import annotations

import os
import time
import weakref

from ...autograd.engine import queue_callback
from ...tensor import _make


class _Bucket:
    __slots__ = ("index", "params", "slots", "views", "flat", "k", "dtype", "pending", "seen", "copied",
                 "work", "fut")

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
        self.fut = None
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

    def __init__(self, params, group, bucket_bytes, names=None, find_unused=False):
        self.params = list(params)
        self.names = names or [str(i) for i in range(len(self.params))]
        self.find_unused = find_unused
        self.group = group
        self.backend = group.backend
        self.handle = group.handle
        self.world = group.size()
        self.div_factor = self.world    # what the summed gradients are divided by (join may lower it)
        self.bucket_bytes = bucket_bytes
        self.buckets = [_Bucket(j, [self.params[i] for i in idx], idx)
                        for j, idx in enumerate(assign_buckets(self.params, bucket_bytes))]
        self.where = {}
        for b in self.buckets:
            for pos, i in enumerate(b.slots):
                self.where[id(self.params[i])] = (b, pos)
        self.comm_hook = None           # (state, hook) once register_comm_hook was called
        self.armed = False
        self.unfinished = None          # the error the next forward raises (parameters without gradient)
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
        """Called by forward (with grad mode on). Raises if the previous reduction could not
        finish; a backward that raised part-way leaves started all-reduces and a half-filled
        iteration behind: finish them and start clean."""
        if self.unfinished is not None:
            raise RuntimeError(self.unfinished)
        if self._queued or self._next:
            for b in self.buckets[:self._next]:
                self._wait_bucket(b)
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
        self._start(b)

    def _start(self, b):
        if self.comm_hook is None:
            b.work = self.backend.all_reduce(b.flat, "sum", self.handle, async_op=True)
            return
        state, hook = self.comm_hook
        p0 = b.params[0]
        wrap = lambda a: _make(a, b.dtype, b.k, p0._dev)            # noqa: E731
        bucket = _grad_bucket()(b.index, wrap(b.flat), list(b.params), [wrap(v) for v in b.views],
                                b.index == len(self.buckets) - 1)
        fut = hook(state, bucket)
        if not hasattr(fut, "wait") or not hasattr(fut, "then"):
            raise RuntimeError("DDP communication hook's callback must return a tensorplug.futures.Future "
                               f"object, but got {type(fut).__module__}.{type(fut).__qualname__}")
        b.fut = fut

    def _wait_bucket(self, b):
        """Wait for bucket b's reduction; with a hook, its result goes into b.flat."""
        if b.work is not None:
            b.work.wait()
            b.work = None
        elif b.fut is not None:
            fut, b.fut = b.fut, None
            out = fut.wait()
            if isinstance(out, (list, tuple)) and len(out) == 1:
                out = out[0]
            data = getattr(out, "_data", None)
            if data is None or tuple(data.shape) != tuple(b.flat.shape):
                raise RuntimeError(f"DDP communication hook of bucket {b.index} returned "
                                   f"{_describe(out)}; expected a tensor of {b.flat.shape[0]} elements "
                                   "(the bucket's buffer, reduced)")
            if data is not b.flat:
                b.k["assign"](b.flat, data)

    def _poke(self):
        """Let MPI progress the all-reduces in flight (they move only inside MPI calls)."""
        buckets = self.buckets
        while self._done < self._next:
            w = buckets[self._done].work
            if w is None or not w.is_completed():
                return
            self._done += 1

    # -- end of backward -----------------------------------------------------------------------------
    def _flags_start(self, has_grad, missing):
        """All-reduce (sum) two flags per parameter: "has a gradient", "got none in this backward"."""
        import numpy as np
        k0 = self.params[0]._k
        flags = k0["from_numpy"](np.array(list(has_grad) + list(missing), dtype=np.int32))
        return flags, self.backend.all_reduce(flags, "sum", self.handle, async_op=True)

    def _finalize(self):
        self._queued = False
        self.armed = False
        buckets = self.buckets
        while self._next < len(buckets):
            self._launch(buckets[self._next])
            self._next += 1
        missing = [False] * len(self.params)
        for b in buckets:
            for pos, i in enumerate(b.slots):
                missing[i] = not b.copied[pos]
        flags, flags_work = self._flags_start([p.grad is not None for p in self.params], missing)
        t0 = time.perf_counter()
        try:
            for b in buckets:
                self._wait_bucket(b)
        finally:
            flags_work.wait()
            self.wait_time += time.perf_counter() - t0
        self.reductions += 1
        counts = self.params[0]._k["to_numpy"](flags)
        P = len(self.params)
        used, missing_somewhere = counts[:P], counts[P:]
        div = self.div_factor
        inv = 1.0 / div
        hooked = self.comm_hook is not None
        for b in buckets:
            k = b.k
            views = b.views
            mul = k["mul"]
            for pos, p in enumerate(b.params):
                if used[b.slots[pos]]:
                    g = p.grad
                    if hooked or div == 1:
                        if g is None:
                            p.grad = _make(k["copy"](views[pos]), p._dtype, k, p._dev)
                        else:
                            k["assign"](g._data, views[pos])
                            g._bump_version()
                    elif g is None:
                        p.grad = _make(mul(views[pos], inv), p._dtype, k, p._dev)
                    else:
                        mul(views[pos], inv, out=g._data)      # average and copy back in one pass
                        g._bump_version()
            b.reset()
        self._next = self._done = 0
        if not self.find_unused and missing_somewhere.any():
            self.unfinished = self._unfinished_message([i for i in range(P) if missing[i]],
                                                       [i for i in range(P) if missing_somewhere[i]])
        if self.late:
            names = len(self.late)
            self.late = []
            raise RuntimeError(f"DistributedDataParallel: {names} parameter(s) that the forward pass did "
                               "not reach (find_unused_parameters=True) received a gradient after their "
                               "bucket was reduced; compute the loss only from the wrapped module's output")

    def _unfinished_message(self, mine, anywhere):
        rank = self.handle.rank
        head = ("Expected to have finished reduction in the prior iteration before starting a new one. "
                "This error indicates that your module has parameters that were not used in producing "
                "loss. Pass find_unused_parameters=True to DistributedDataParallel to allow that, and "
                "make sure every output of the module's forward that depends on a parameter takes part "
                "in the loss.\n")
        detail = _debug_names_parameters()
        if mine:
            if detail:
                head += (f"Parameters which did not receive grad for rank {rank}: "
                         + ", ".join(sorted(self.names[i] for i in mine)) + "\n")
            head += f"Parameter indices which did not receive grad for rank {rank}: " + " ".join(map(str, mine))
        else:
            if detail:
                head += ("Parameters which did not receive grad on another rank: "
                         + ", ".join(sorted(self.names[i] for i in anywhere)) + "\n")
            head += ("Parameter indices which did not receive grad on another rank: "
                     + " ".join(map(str, anywhere)))
        if not detail:
            head += ("\nSet the environment variable TORCH_DISTRIBUTED_DEBUG (or TENSORPLUG_DISTRIBUTED_DEBUG) "
                     "to INFO or DETAIL to have this error name the parameters.")
        return head

    # -- uneven inputs: a rank that has joined -------------------------------------------------------
    def shadow_backward(self):
        """Issue the all-reduces of one backward with zero gradients (through the comm hook, if
        any) and wait for them; this rank's .grad is left alone."""
        for b in self.buckets:
            b.k["assign"](b.flat, 0)
            self._start(b)
        P = len(self.params)
        _, flags_work = self._flags_start([0] * P, [0] * P)
        try:
            for b in self.buckets:
                self._wait_bucket(b)
        finally:
            flags_work.wait()


def _debug_names_parameters():
    """The distributed debug level is INFO or DETAIL (tensorplug.distributed.get_debug_level)."""
    try:
        from ...distributed.debug import DebugLevel, get_debug_level
    except ImportError:
        return os.environ.get("TORCH_DISTRIBUTED_DEBUG", "OFF").upper() in ("INFO", "DETAIL")
    return get_debug_level() is not DebugLevel.OFF


def _grad_bucket():
    from ...distributed.grad_bucket import GradBucket
    return GradBucket


def _describe(x):
    shape = getattr(x, "shape", None)
    return f"a {type(x).__name__} of shape {list(shape)}" if shape is not None else f"a {type(x).__name__}"
