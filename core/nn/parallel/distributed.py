"""DistributedDataParallel: data-parallel training over the processes of a process group.

    dist.init_process_group("mpi")                 # launched by: tensorplug run -n 2 train.py
    model = nn.parallel.DistributedDataParallel(model)
    sampler = DistributedSampler(dataset)          # each rank its own share of every epoch
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        for x, y in DataLoader(dataset, batch_size=32, sampler=sampler):
            opt.zero_grad()
            loss_fn(model(x), y).backward()        # gradients are averaged over the ranks here
            opt.step()

At wrap time the parameters and buffers of rank 0 are broadcast to every rank (after checking
that every rank has the same parameter shapes). During backward, gradients are all-reduced in
buckets (`bucket_cap_mb`, default 25) by non-blocking all-reduces started from gradient hooks;
`backward()` returns only when they are done and `.grad` holds the average over the ranks (see
`reducer.py`). `no_sync()` skips the reduction (gradients accumulate locally) for the backward of a
forward run inside it. Buffers (e.g. batch-norm statistics) are broadcast from rank 0 at the start
of a forward when `broadcast_buffers` is true - as in PyTorch, only when the forward before it ran
with grad mode on and outside no_sync() (`require_forward_param_sync`): the first forward after a
no_sync() or no_grad() forward keeps each rank's own buffers.

`register_comm_hook(state, hook)` replaces the bucket all-reduce (see
tensorplug.distributed.algorithms.ddp_comm_hooks); `join()` trains on uneven inputs (see
tensorplug.distributed.algorithms.join).
"""
from __future__ import annotations

import contextlib
import time
import zlib

from ...autograd import grad_mode
from ...autograd.graph import AccumulateGrad
from ...tensor import Tensor
from ..modules.module import Module
from .reducer import Reducer

__all__ = ["DistributedDataParallel"]

_BROADCAST_BYTES = 256 << 20


def _dist():
    import tensorplug.distributed as dist
    return dist


class DistributedDataParallel(Module):
    """Wraps `module` (see the module docstring). `device_ids`, `output_device`, `dim`,
    `gradient_as_bucket_view` and `static_graph` are accepted for compatibility.

    find_unused_parameters: trace the graph after each forward, so that parameters the loss does
    not depend on count as ready (their buckets start without them). Without it every parameter
    must get a gradient in every synchronized backward: one that got none makes the next forward
    raise RuntimeError ("Expected to have finished reduction in the prior iteration ..."), on every
    rank; TORCH_DISTRIBUTED_DEBUG=INFO (or DETAIL) has the error name the parameters."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0, broadcast_buffers=True,
                 process_group=None, bucket_cap_mb=None, find_unused_parameters=False,
                 check_reduction=False, gradient_as_bucket_view=False, static_graph=False,
                 init_sync=True):
        super().__init__()
        if not isinstance(module, Module):
            raise TypeError(f"DistributedDataParallel wraps a tensorplug.nn.Module, got {type(module).__name__}")
        dist = _dist()
        pg = dist.process_group.resolve(process_group)
        if pg is None:
            raise ValueError("DistributedDataParallel: this process is not a member of process_group")
        params = [p for p in module.parameters() if p.requires_grad]
        if not params:
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't have any "
                               "parameter that requires a gradient.")
        self.module = module
        self.process_group = pg
        self.dim = dim
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.require_backward_grad_sync = True
        self.require_forward_param_sync = True
        cap = 25 if bucket_cap_mb is None else bucket_cap_mb
        if cap <= 0:
            raise ValueError(f"bucket_cap_mb must be positive, got {bucket_cap_mb}")
        self.bucket_bytes_cap = int(cap * 1024 * 1024)
        self._src = pg.global_rank(0)
        self.buffer_sync_time = 0.0
        self._verify_same_model(module)
        if init_sync:
            named = {id(t): (n, t) for n, t in [*module.named_parameters(), *module.named_buffers()]}
            self._broadcast_coalesced([t for _, t in sorted(named.values(), key=lambda nt: nt[0])])
        names = {id(p): n for n, p in module.named_parameters()}
        self.reducer = Reducer(params, pg, self.bucket_bytes_cap, [names[id(p)] for p in params],
                               find_unused_parameters)
        self._join_config = _disabled_join_config()
        self._divide_by_initial_world_size = True

    # -- wrap time ----------------------------------------------------------------------------------
    def _verify_same_model(self, module):
        """Every rank must wrap a model with the same parameter names, shapes and dtypes, or the
        collectives that follow would mismatch; checked with one small all-reduce."""
        desc = ";".join(f"{n}:{tuple(p.shape)}:{p.dtype.name}:{p.requires_grad}"
                        for n, p in module.named_parameters())
        sig = zlib.crc32(desc.encode()) & 0x7FFFFFFF
        from ...ops.creation import tensor
        t = tensor([sig, -sig], dtype=_int64())
        _dist().all_reduce(t, _dist().ReduceOp.MAX, self.process_group)
        hi, neg_lo = t.tolist()
        if hi != -neg_lo:
            raise RuntimeError("DistributedDataParallel: the wrapped module's parameters (names, shapes, "
                               "dtypes or requires_grad) differ between ranks; every rank must build the "
                               f"same model (this rank: {len(list(module.parameters()))} parameters)")

    def _broadcast_coalesced(self, tensors, src_group_rank=0):
        """Broadcast `tensors` from group rank `src_group_rank`, packed into flat buffers per dtype."""
        pg = self.process_group
        if pg.size() == 1 or not tensors:
            return
        me_src = pg.rank() == src_group_rank
        groups = {}
        for t in tensors:
            groups.setdefault((t._dtype, id(t._k)), []).append(t)
        for ts in groups.values():
            chunk, size = [], 0
            for t in ts:
                nb = t.numel() * t._dtype.itemsize
                if chunk and size + nb > _BROADCAST_BYTES:
                    self._broadcast_flat(chunk, me_src, src_group_rank)
                    chunk, size = [], 0
                chunk.append(t)
                size += nb
            self._broadcast_flat(chunk, me_src, src_group_rank)

    def _broadcast_flat(self, chunk, me_src, src):
        if not chunk:
            return
        pg = self.process_group
        k = chunk[0]._k
        n = sum(t.numel() for t in chunk)
        if me_src:
            flat = k["concat"]([k["reshape"](t._data, (t.numel(),)) for t in chunk], 0)
        else:
            flat = k["full"]((n,), 0, chunk[0]._dtype.name)
        pg.backend.broadcast(flat, src, pg.handle)
        if me_src:
            return
        off = 0
        for t in chunk:
            m = t.numel()
            k["assign"](t._data, k["reshape"](k["slice"](flat, (slice(off, off + m),)), tuple(t._data.shape)))
            t._bump_version()
            off += m

    # -- training -------------------------------------------------------------------------------------
    def forward(self, *inputs, **kwargs):
        reducer = self.reducer
        grad_on = grad_mode.state.enabled
        if grad_on:
            reducer.prepare(self.require_backward_grad_sync)
        joining = self._join_config.enable
        if joining:
            count = _join().Join.notify_join_context(self)
            if count is not None:
                active = int(count.result()[0].item())
                reducer.div_factor = (self.process_group.size() if self._divide_by_initial_world_size
                                      else active)
        if self._will_sync_buffers():
            self._sync_buffers(self._find_common_rank(True) if joining else 0)
        if joining:
            # (PyTorch sends require_backward_grad_sync alone; a no-grad forward then hangs the joined
            # ranks in a backward that never comes)
            self._global_requires_backward_grad_sync(grad_on and self.require_backward_grad_sync)
        out = self.module(*inputs, **kwargs)
        if grad_on and self.require_backward_grad_sync:
            self.require_forward_param_sync = True
            if reducer.armed and self.find_unused_parameters:
                reducer.mark_unused(_reachable_leaves(out))
        else:
            self.require_forward_param_sync = False
        return out

    def _will_sync_buffers(self):
        return (self.broadcast_buffers and self.require_forward_param_sync and self.process_group.size() > 1
                and any(True for _ in self.module.buffers()))

    def _sync_buffers(self, src_group_rank):
        t0 = time.perf_counter()
        self._broadcast_coalesced([b for _, b in self.module.named_buffers()], src_group_rank)
        self.buffer_sync_time += time.perf_counter() - t0

    def _find_common_rank(self, candidate):
        """The highest group rank among the ranks that pass candidate=True (one all-reduce)."""
        from ...ops.creation import tensor
        pg = self.process_group
        t = tensor([pg.rank() if candidate else -1], dtype=_int64())
        _dist().all_reduce(t, _dist().ReduceOp.MAX, pg)
        rank = int(t.item())
        if rank < 0:
            raise RuntimeError("DistributedDataParallel join: no rank is left to take the model from")
        return rank

    def _global_requires_backward_grad_sync(self, mine):
        """Whether any rank still training will reduce gradients in this iteration (one all-reduce)."""
        from ...ops.creation import tensor
        t = tensor([1 if mine else 0], dtype=_int64())
        _dist().all_reduce(t, group=self.process_group)
        return bool(t.item())

    # -- communication hooks --------------------------------------------------------------------------
    def register_comm_hook(self, state, hook):
        """Reduce each gradient bucket with `hook(state, bucket)` instead of the built-in all-reduce:
        `bucket` is a tensorplug.distributed.GradBucket; the hook returns a tensorplug.futures.Future
        whose value is the bucket's reduced flat tensor (copied into .grad as it is: the hook does
        the averaging). Registered once, on every rank."""
        if not callable(hook):
            raise TypeError("Communication hook must be callable.")
        if self.reducer.comm_hook is not None:
            raise RuntimeError("register_comm_hook or register_builtin_comm_hook can only be called once.")
        self.reducer.comm_hook = (state, hook)

    # -- uneven inputs ----------------------------------------------------------------------------------
    def join(self, divide_by_initial_world_size=True, enable=True, throw_on_early_termination=False):
        """Context manager for uneven inputs: `Join([self], ...)` (see
        tensorplug.distributed.algorithms.join). A rank out of batches shadows the others'
        all-reduces with zero gradients; divide_by_initial_world_size: divide the summed gradients by
        the world size (True) or by the number of ranks still training in that iteration (False)."""
        return _join().Join([self], enable, throw_on_early_termination,
                            divide_by_initial_world_size=divide_by_initial_world_size)

    def join_hook(self, **kwargs):
        return _DDPJoinHook(self, kwargs.get("divide_by_initial_world_size", True))

    @property
    def join_device(self):
        return next(iter(self.module.parameters())).device

    @property
    def join_process_group(self):
        return self.process_group

    @contextlib.contextmanager
    def no_sync(self):
        """Within this context, backward passes (of forwards run inside it) accumulate gradients
        locally without communication; the first backward after it averages the accumulated sum."""
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old

    def comm_stats(self) -> dict:
        """Seconds spent blocked on gradient all-reduces and buffer broadcasts, the number of
        gradient reductions so far, the number of buckets, and how many bucket all-reduces started
        from gradient hooks (before the end of backward)."""
        r = self.reducer
        return {"grad_wait_s": r.wait_time, "buffer_sync_s": self.buffer_sync_time,
                "reductions": r.reductions, "buckets": len(r.buckets),
                "buckets_started_during_backward": r.launched_early}

    def extra_repr(self):
        return f"world_size={self.process_group.size()}, bucket_cap_mb={self.bucket_bytes_cap / 2**20:g}"


class _DDPJoinHook:
    """DDP on a rank that has joined: per iteration of the others, the buffer broadcast (when they
    do one), the "will you reduce" all-reduce and, when they reduce, the bucket all-reduces on
    zeros; at the end every rank takes the parameters and buffers of the last rank to join."""

    def __init__(self, ddp, divide_by_initial_world_size):
        self.ddp = ddp
        ddp._divide_by_initial_world_size = divide_by_initial_world_size

    def main_hook(self):
        ddp = self.ddp
        if ddp._will_sync_buffers():
            ddp._sync_buffers(ddp._find_common_rank(False))
        sync = ddp._global_requires_backward_grad_sync(False)
        ddp.require_forward_param_sync = sync
        if sync:
            ddp.reducer.shadow_backward()

    def post_hook(self, is_last_joiner):
        ddp = self.ddp
        src = ddp._find_common_rank(is_last_joiner)
        named = {id(t): (n, t) for n, t in [*ddp.module.named_parameters(), *ddp.module.named_buffers()]}
        ddp._broadcast_coalesced([t for _, t in sorted(named.values(), key=lambda nt: nt[0])], src)
        ddp.reducer.div_factor = ddp.process_group.size()


def _join():
    from ...distributed.algorithms import join
    return join


def _disabled_join_config():
    return _join()._JoinConfig.disabled()


def _int64():
    from ... import dtypes
    return dtypes.int64


def _reachable_leaves(out):
    """ids of the leaf tensors whose gradient backward from the tensors in `out` would accumulate."""
    roots = []
    stack = [out]
    while stack:
        o = stack.pop()
        if isinstance(o, Tensor):
            if o.grad_fn is not None:
                roots.append(o.grad_fn)
            elif o._rg:
                roots.append(o)
        elif isinstance(o, (list, tuple)):
            stack.extend(o)
        elif isinstance(o, dict):
            stack.extend(o.values())
    found, seen = set(), set()
    stack = list(roots)
    while stack:
        node = stack.pop()
        if isinstance(node, Tensor):
            found.add(id(node))
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        if node.__class__ is AccumulateGrad:
            found.add(id(node.variable))
            continue
        for e in node.edges:
            if e is not None:
                stack.append(e[0])
    return found

