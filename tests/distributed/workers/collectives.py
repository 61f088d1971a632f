"""Every point-to-point op and collective, for several dtypes and shapes (0-d, empty, non-contiguous),
checked on every rank against values computed with NumPy; plus groups, errors and the process-group
life cycle. Check names are "<family>.<details>"."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import Checks, dist  # noqa: E402

import numpy as np  # noqa: E402

import tensorplug as torch  # noqa: E402
import tensorplug.distributed.nn.functional as dfn  # noqa: E402
from tensorplug.utils.data.distributed import DistributedSampler  # noqa: E402

DTYPES = ["float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "bool"]
INTS = ["int8", "int16", "int32", "int64", "uint8", "bool"]
FLOATS = ["float16", "float32", "float64"]
SHAPES = [(), (7,), (3, 4), (2, 3, 5), (0,)]
ReduceOp = dist.ReduceOp
C = Checks()


def expect_raises(exc, fn, *args, **kwargs):
    try:
        fn(*args, **kwargs)
    except exc as e:
        return str(e)
    raise AssertionError(f"{fn.__name__} did not raise {exc.__name__}")


# -- before init -----------------------------------------------------------------------------------
def before_init():
    assert dist.is_available() and not dist.is_initialized()
    assert "init_process_group" in expect_raises(RuntimeError, dist.get_rank)
    assert "not initialized" in expect_raises(RuntimeError, DistributedSampler, list(range(4)))


C.run("lifecycle.before_init", before_init)

from mpi4py import MPI  # noqa: E402  (the launcher's view, to compare with)

N0, R0 = MPI.COMM_WORLD.size, MPI.COMM_WORLD.rank


def init_mismatch():
    msg = expect_raises(ValueError, dist.init_process_group, "mpi", world_size=N0 + 1)
    assert "world_size" in msg and "launcher" in msg, msg
    msg = expect_raises(ValueError, dist.init_process_group, "mpi", rank=(R0 + 1) % N0 if N0 > 1 else 5)
    assert "rank" in msg, msg
    assert not dist.is_initialized()
    msg = expect_raises(ValueError, dist.init_process_group, "nosuchbackend")
    assert "unknown communication backend 'nosuchbackend'" in msg and "mpi" in msg, msg


C.run("lifecycle.init_mismatch", init_mismatch)
dist.init_process_group(backend="mpi", world_size=N0, rank=R0)
R, N = dist.get_rank(), dist.get_world_size()


def after_init():
    assert dist.is_initialized() and (R, N) == (R0, N0) and dist.get_backend() == "mpi"
    assert "twice" in expect_raises(RuntimeError, dist.init_process_group, "mpi")


C.run("lifecycle.after_init", after_init)


# -- data ------------------------------------------------------------------------------------------
def values(rank, dtype, shape, kind="sum"):
    n = int(np.prod(shape, dtype=np.int64))
    i = np.arange(n)
    if dtype == "bool":
        v = (i * 3 + rank) % (N + 1) == 0
    elif kind == "prod":
        v = (i + rank) % 2 + 1
    elif kind == "minmax":
        v = (i * 3 + rank * 5) % 11 - (0 if dtype == "uint8" else 5)
    elif kind == "bit":
        v = (i * 37 + rank * 11) % 64
    else:
        v = i % 7 + rank + 1
    if dtype in FLOATS and dtype != "bool":
        v = v * 0.5
    return np.asarray(v).astype(dtype).reshape(shape)


def make(a, noncontig=False):
    """A tensor with a's values; noncontig: a strided view into a larger tensor of zeros."""
    if not noncontig:
        return torch.from_numpy(np.array(a))
    big = np.zeros(a.shape + (2,), dtype=a.dtype)
    big[..., 0] = a
    t = torch.from_numpy(big)[..., 0]
    assert a.size <= 1 or not t.is_contiguous()
    return t


def check(t, want, what=""):
    got = t.numpy()
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype}, expected {want.dtype}"
    assert got.shape == want.shape, f"{what}: shape {got.shape}, expected {want.shape}"
    assert np.array_equal(got, want), f"{what}: got {got.ravel()[:8]}, expected {want.ravel()[:8]}"
    if t._base is not None:                      # the strided view: the other half stays zero
        base = t._base.numpy()
        assert not base[..., 1].any(), f"{what}: wrote outside the view"


def reduce_np(arrays, op, dtype):
    s = np.stack(arrays)
    if dtype == "bool":
        return {"sum": s.any(0), "max": s.any(0), "product": s.all(0), "min": s.all(0),
                "band": s.all(0), "bor": s.any(0), "bxor": np.logical_xor.reduce(s, 0)}[op]
    if op == "sum":
        return s.sum(0, dtype=dtype)
    if op == "avg":
        return (s.sum(0, dtype=dtype) / s.shape[0]).astype(dtype)
    if op == "product":
        return s.prod(0, dtype=dtype)
    return {"min": np.min, "max": np.max, "band": np.bitwise_and.reduce, "bor": np.bitwise_or.reduce,
            "bxor": np.bitwise_xor.reduce}[op](s, 0).astype(dtype)


KIND = {"sum": "sum", "avg": "sum", "product": "prod", "min": "minmax", "max": "minmax",
        "band": "bit", "bor": "bit", "bxor": "bit"}


# -- all_reduce ------------------------------------------------------------------------------------
def all_reduce(op, dtype, shape, nc=False, async_op=False):
    kind = KIND[op]
    t = make(values(R, dtype, shape, kind), nc)
    w = dist.all_reduce(t, op=ReduceOp[op.upper()], async_op=async_op)
    if async_op:
        assert w.wait() is True and w.is_completed()
    else:
        assert w is None
    check(t, reduce_np([values(r, dtype, shape, kind) for r in range(N)], op, dtype))


for dtype in DTYPES:
    for shape in SHAPES:
        C.run(f"all_reduce.sum.{dtype}.{shape}", all_reduce, "sum", dtype, shape)
    for op in ["product", "min", "max"] + (["band", "bor", "bxor"] if dtype in INTS else ["avg"]):
        C.run(f"all_reduce.{op}.{dtype}.(3, 4)", all_reduce, op, dtype, (3, 4))
        C.run(f"all_reduce.{op}.{dtype}.()", all_reduce, op, dtype, ())
    C.run(f"all_reduce.sum.{dtype}.noncontig", all_reduce, "sum", dtype, (3, 4), True)
    C.run(f"all_reduce.max.{dtype}.noncontig", all_reduce, "max", dtype, (2, 3, 5), True)
    C.run(f"all_reduce.sum.{dtype}.async", all_reduce, "sum", dtype, (3, 4), False, True)
C.run("all_reduce.sum.float32.noncontig_async", all_reduce, "sum", "float32", (5, 6), True, True)
C.run("all_reduce.sum.float32.chunked_6MB", all_reduce, "sum", "float32", (1536, 1024))
C.run("all_reduce.sum.float32.chunked_6MB_async", all_reduce, "sum", "float32", (1536, 1024), False, True)
C.run("all_reduce.max.float64.chunked_9MB_noncontig", all_reduce, "max", "float64", (1200, 960), True)
C.run("all_reduce.avg.float32.chunked_async", all_reduce, "avg", "float32", (1100, 1000), False, True)


def chunked_async_interleaved():
    """Several large async all-reduces in flight (pieces started as progress is polled, at moments
    that differ between ranks), small collectives in between, waits in reverse order."""
    import time
    big = [torch.from_numpy(values(R + i, "float32", (1536, 1024))) for i in range(3)]
    works = []
    for i, t in enumerate(big):
        works.append(dist.all_reduce(t, async_op=True))
        end = time.perf_counter() + 0.02 * (R % 2)
        while time.perf_counter() < end:        # odd ranks poll (moving pieces on), even ones don't
            works[-1].is_completed()
        small = torch.tensor([float(R)])
        dist.all_reduce(small)
        assert small.item() == N * (N - 1) / 2
    for w in reversed(works):
        w.wait()
    for i, t in enumerate(big):
        check(t, reduce_np([values(r + i, "float32", (1536, 1024)) for r in range(N)], "sum", "float32"))


C.run("all_reduce.chunked_async_interleaved", chunked_async_interleaved)


class DeviceLike:
    """A stand-in for a device array (CuPy-like: .get() to the host, .set() from it)."""

    def __init__(self, a):
        self.a = a
        self.shape, self.dtype, self.flags = a.shape, a.dtype, a.flags

    def get(self):
        return self.a.copy()

    def set(self, host):
        self.a[...] = host


def staging_through_host():
    from tensorplug.dispatch import registry
    b = registry.communication["mpi"]
    g = dist.process_group._world().handle
    x = DeviceLike(values(R, "float32", (3, 4)))
    b.all_reduce(x, "sum", g)
    check(torch.from_numpy(x.a), reduce_np([values(r, "float32", (3, 4)) for r in range(N)], "sum", "float32"))
    y = DeviceLike(values(R, "int64", (5,)))
    b.broadcast(y, N - 1, g)
    check(torch.from_numpy(y.a), values(N - 1, "int64", (5,)))
    outs = [DeviceLike(np.zeros(2, "float64")) for _ in range(N)]
    b.all_gather(outs, DeviceLike(values(R, "float64", (2,))), g)
    for r, o in enumerate(outs):
        check(torch.from_numpy(o.a), values(r, "float64", (2,)))


C.run("staging.device_like_arrays", staging_through_host)


def all_reduce_by_name():
    t = torch.tensor([R + 1.0])
    dist.all_reduce(t, op="max")
    dist.all_reduce(t, dist.reduce_op.SUM)          # PyTorch 0.2's name
    assert t.item() == N * N, t


C.run("all_reduce.op_names", all_reduce_by_name)


def requires_grad_leaf():
    t = torch.tensor([1.0, 2.0], requires_grad=True)
    v = t._version
    dist.all_reduce(t)
    assert t.detach().tolist() == [N * 1.0, N * 2.0] and t._version > v and t.requires_grad


C.run("all_reduce.version_bump", requires_grad_leaf)


# -- broadcast / reduce ----------------------------------------------------------------------------
def broadcast(dtype, shape, nc=False, async_op=False):
    src = N - 1
    t = make(values(R, dtype, shape), nc)
    w = dist.broadcast(t, src=src, async_op=async_op)
    if async_op:
        w.wait()
    check(t, values(src, dtype, shape))


def reduce(op, dtype, shape, nc=False, async_op=False):
    dst = 1 % N
    kind = KIND[op]
    t = make(values(R, dtype, shape, kind), nc)
    w = dist.reduce(t, dst=dst, op=ReduceOp[op.upper()], async_op=async_op)
    if async_op:
        w.wait()
    if R == dst:
        check(t, reduce_np([values(r, dtype, shape, kind) for r in range(N)], op, dtype))
    else:
        check(t, values(R, dtype, shape, kind), "non-destination unchanged")


for dtype in DTYPES:
    for shape in [(), (3, 4), (0,)]:
        C.run(f"broadcast.{dtype}.{shape}", broadcast, dtype, shape)
    C.run(f"broadcast.{dtype}.noncontig", broadcast, dtype, (2, 3, 5), True)
    C.run(f"reduce.sum.{dtype}.(3, 4)", reduce, "sum", dtype, (3, 4))
    C.run(f"reduce.max.{dtype}.()", reduce, "max", dtype, ())
    C.run(f"reduce.sum.{dtype}.noncontig", reduce, "sum", dtype, (3, 4), True)
C.run("broadcast.float32.async", broadcast, "float32", (4, 5), False, True)
C.run("broadcast.float64.chunk_size_5MB", broadcast, "float64", (800, 800))
C.run("reduce.avg.float32.async", reduce, "avg", "float32", (6,), False, True)
C.run("reduce.sum.float32.large_noncontig", reduce, "sum", "float32", (1200, 1000), True)


# -- gathers and scatters --------------------------------------------------------------------------
def all_gather(dtype, shape, nc=False, async_op=False):
    outs = [make(np.zeros(shape, dtype), nc) for _ in range(N)]
    w = dist.all_gather(outs, make(values(R, dtype, shape), nc), async_op=async_op)
    if async_op:
        w.wait()
    for r, o in enumerate(outs):
        check(o, values(r, dtype, shape), f"from rank {r}")


def all_gather_into(dtype, stacked):
    x = values(R, dtype, (2, 3))
    out = torch.from_numpy(np.zeros((N, 2, 3) if stacked else (N * 2, 3), dtype))
    dist.all_gather_into_tensor(out, torch.from_numpy(x))
    want = np.stack([values(r, dtype, (2, 3)) for r in range(N)]).reshape(out.shape)
    check(out, want)


def gather(dtype, shape, nc=False, async_op=False):
    dst = N - 1
    outs = [make(np.zeros(shape, dtype), nc) for _ in range(N)] if R == dst else None
    w = dist.gather(make(values(R, dtype, shape), nc), outs, dst=dst, async_op=async_op)
    if async_op:
        w.wait()
    if R == dst:
        for r, o in enumerate(outs):
            check(o, values(r, dtype, shape), f"from rank {r}")


def scatter(dtype, shape, nc=False, async_op=False):
    src = 0
    ins = [make(values(100 + r, dtype, shape), nc) for r in range(N)] if R == src else None
    t = make(np.zeros(shape, dtype), nc)
    w = dist.scatter(t, ins, src=src, async_op=async_op)
    if async_op:
        w.wait()
    check(t, values(100 + R, dtype, shape))


def reduce_scatter(op, dtype, shape, nc=False, async_op=False):
    kind = KIND[op]
    ins = [make(values(R + 10 * i, dtype, shape, kind), nc) for i in range(N)]
    out = make(np.zeros(shape, dtype), nc)
    w = dist.reduce_scatter(out, ins, op=ReduceOp[op.upper()], async_op=async_op)
    if async_op:
        w.wait()
    check(out, reduce_np([values(r + 10 * R, dtype, shape, kind) for r in range(N)], op, dtype))


def reduce_scatter_tensor(dtype):
    inp = np.concatenate([values(R + 10 * i, dtype, (2, 3)) for i in range(N)])
    out = torch.from_numpy(np.zeros((2, 3), dtype))
    dist.reduce_scatter_tensor(out, torch.from_numpy(inp))
    check(out, reduce_np([values(r + 10 * R, dtype, (2, 3)) for r in range(N)], "sum", dtype))


for dtype in DTYPES:
    for shape in [(), (2, 3), (0,)]:
        C.run(f"all_gather.{dtype}.{shape}", all_gather, dtype, shape)
        C.run(f"gather.{dtype}.{shape}", gather, dtype, shape)
        C.run(f"scatter.{dtype}.{shape}", scatter, dtype, shape)
        C.run(f"reduce_scatter.sum.{dtype}.{shape}", reduce_scatter, "sum", dtype, shape)
    C.run(f"all_gather.{dtype}.noncontig", all_gather, dtype, (3, 4), True)
    C.run(f"gather.{dtype}.noncontig", gather, dtype, (3, 4), True)
    C.run(f"scatter.{dtype}.noncontig", scatter, dtype, (3, 4), True)
    C.run(f"reduce_scatter.max.{dtype}.noncontig", reduce_scatter, "max", dtype, (3, 4), True)
    C.run(f"all_gather.into_stacked.{dtype}", all_gather_into, dtype, True)
    C.run(f"all_gather.into_concat.{dtype}", all_gather_into, dtype, False)
    C.run(f"reduce_scatter.tensor.{dtype}", reduce_scatter_tensor, dtype)
for fam, fn, args in [("all_gather", all_gather, ("float32", (4,))), ("gather", gather, ("int64", (4,))),
                      ("scatter", scatter, ("float64", (4,))),
                      ("reduce_scatter", reduce_scatter, ("sum", "int32", (4,)))]:
    C.run(f"{fam}.async", fn, *args, False, True)


def barrier():
    assert dist.barrier() is None
    w = dist.barrier(async_op=True)
    w.wait()
    assert w.is_completed()


C.run("barrier.sync_async", barrier)


# -- point to point --------------------------------------------------------------------------------
def send_recv(dtype, shape, nc=False):
    if R == 0:
        dist.send(make(values(0, dtype, shape), nc), dst=1)
    elif R == 1:
        t = make(np.zeros(shape, dtype), nc)
        assert dist.recv(t, src=0) == 0
        check(t, values(0, dtype, shape))


def ring(dtype, shape, nc=False):
    send = make(values(R, dtype, shape), nc)
    got = make(np.zeros(shape, dtype), nc)
    ws = dist.isend(send, dst=(R + 1) % N)
    wr = dist.irecv(got, src=(R - 1) % N)
    wr.wait()
    ws.wait()
    assert ws.is_completed() and wr.is_completed()
    assert wr.source_rank() == (R - 1) % N
    check(got, values((R - 1) % N, dtype, shape))


def any_source_and_tags():
    if R == 1:
        w1 = dist.isend(torch.tensor([1.0, 1.0]), dst=0, tag=7)
        w2 = dist.isend(torch.tensor([2.0, 2.0]), dst=0, tag=9)
        w1.wait()
        w2.wait()
    elif R == 0:
        t = torch.zeros(2)
        assert dist.recv(t, src=None, tag=9) == 1 and t.tolist() == [2.0, 2.0], t
        w = dist.irecv(t, tag=7)
        w.wait()
        assert w.source_rank() == 1 and t.tolist() == [1.0, 1.0], t


def seed_example():
    # the seed's point-to-point snippet, verbatim apart from the names
    x = torch.Tensor(10)
    if dist.get_rank() == 0:
        x.normal_()
        dist.send(x, dst=1)
        sent = x.tolist()
    elif dist.get_rank() == 1:
        dist.recv(x, src=0)
    back = [torch.zeros(10) for _ in range(N)]
    dist.all_gather(back, x)
    if dist.get_rank() == 1:
        assert back[1].tolist() == back[0].tolist()
    # the seed's all_reduce snippet
    x = torch.Tensor([dist.get_rank()])
    dist.all_reduce(x)
    assert x.item() == N * (N - 1) / 2, x
    _ = sent if dist.get_rank() == 0 else None


for dtype in DTYPES:
    for shape in SHAPES:
        C.run(f"p2p.send_recv.{dtype}.{shape}", send_recv, dtype, shape)
    C.run(f"p2p.send_recv.{dtype}.noncontig", send_recv, dtype, (3, 4), True)
    C.run(f"p2p.isend_irecv.{dtype}.(2, 3)", ring, dtype, (2, 3))
    C.run(f"p2p.isend_irecv.{dtype}.noncontig", ring, dtype, (3, 4), True)
C.run("p2p.isend_irecv.float32.()", ring, "float32", ())
C.run("p2p.send_recv.float32.large", send_recv, "float32", (1024, 1024))
C.run("p2p.any_source_and_tags", any_source_and_tags)
C.run("p2p.seed_example", seed_example)


# -- groups ----------------------------------------------------------------------------------------
def groups():
    members = [0, N - 1]
    g = dist.new_group(list(reversed(members)))
    if R in members:
        assert isinstance(g, dist.ProcessGroup)
        assert dist.get_world_size(g) == 2 and dist.get_rank(g) == members.index(R)
        assert dist.get_process_group_ranks(g) == members
        assert dist.get_global_rank(g, 1) == N - 1 and dist.get_group_rank(g, N - 1) == 1
        t = torch.tensor([R + 1.0])
        dist.all_reduce(t, group=g)
        assert t.item() == 1 + N, t
        t = torch.tensor([float(R)])
        dist.broadcast(t, src=N - 1, group=g)          # src is a global rank
        assert t.item() == N - 1
        if R == 0:
            dist.send(torch.tensor([5.0]), dst=N - 1, group=g)
        else:
            t = torch.zeros(1)
            assert dist.recv(t, src=0, group=g) == 0 and t.item() == 5.0
        if N > 2:
            assert "not part of the group" in expect_raises(ValueError, dist.broadcast, t, src=1, group=g)
        outs = [torch.zeros(1) for _ in range(2)]
        dist.all_gather(outs, torch.tensor([float(R)]), group=g)
        assert [o.item() for o in outs] == [0.0, N - 1.0]
    else:
        assert g is dist.GroupMember.NON_GROUP_MEMBER
        assert dist.get_rank(g) == -1 and dist.get_world_size(g) == -1
        t = torch.tensor([R + 1.0])
        assert dist.all_reduce(t, group=g) is None and t.item() == R + 1.0
    everyone = dist.new_group()
    t = torch.tensor([1])
    dist.all_reduce(t, group=everyone)
    assert t.item() == N and dist.get_process_group_ranks(everyone) == list(range(N))
    dist.destroy_process_group(g)
    dist.destroy_process_group(everyone)
    assert "duplicates" in expect_raises(ValueError, dist.new_group, [0, 0])
    assert "invalid rank" in expect_raises(ValueError, dist.new_group, [N])


C.run("groups.new_group", groups)


# -- differentiable collectives --------------------------------------------------------------------
def autograd_all_reduce():
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = dfn.all_reduce(x * (R + 1))
    S = N * (N + 1) / 2
    assert y.tolist() == [S, 2 * S, 3 * S], y
    (y * (R + 1)).sum().backward()
    assert x.grad.tolist() == [S * (R + 1)] * 3, x.grad


def autograd_all_gather():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    parts = dfn.all_gather(x * (R + 1))
    assert [p.tolist() for p in parts] == [[r + 1.0, 2 * (r + 1.0)] for r in range(N)]
    sum((i + 1) * p.sum() for i, p in enumerate(parts)).backward()
    assert x.grad.tolist() == [N * (R + 1.0) * (R + 1)] * 2, x.grad


def autograd_broadcast():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = dfn.broadcast(x * (R + 1), src=0)
    assert y.tolist() == [1.0, 2.0]
    (y * (R + 1)).sum().backward()
    S = N * (N + 1) / 2
    assert x.grad.tolist() == ([S, S] if R == 0 else [0.0, 0.0]), x.grad


C.run("autograd.all_reduce", autograd_all_reduce)
C.run("autograd.all_gather", autograd_all_gather)
C.run("autograd.broadcast", autograd_broadcast)


# -- errors (raised the same way on every rank, before any communication) ---------------------------
def errors():
    t = torch.ones(3)
    assert "this process" in expect_raises(ValueError, dist.send, t, dst=R)
    assert "invalid" in expect_raises(ValueError, dist.recv, t, src=N + 3)
    assert "integer or bool" in expect_raises(RuntimeError, dist.all_reduce, t, dist.ReduceOp.BAND)
    assert "floating-point" in expect_raises(RuntimeError, dist.all_reduce, torch.ones(3, dtype=torch.int64),
                                             dist.ReduceOp.AVG)
    assert "unknown reduce op" in expect_raises(ValueError, dist.all_reduce, t, "nonsense")
    assert "one tensor per process" in expect_raises(ValueError, dist.all_gather, [t] * (N + 1), t)
    assert "expected float32" in expect_raises(RuntimeError, dist.all_gather,
                                               [torch.ones(3, dtype=torch.float64)] * N, t)
    assert "Tensor" in expect_raises(TypeError, dist.all_reduce, [1.0, 2.0])
    if R != 0:
        assert "non-destination" in expect_raises(ValueError, dist.gather, t, [t] * N, dst=0)
    else:
        assert "required" in expect_raises(ValueError, dist.gather, t, None, dst=0)
    t = torch.tensor([1.0])
    dist.all_reduce(t)                     # still in step after the errors
    assert t.item() == N


C.run("errors.validation", errors)


def sampler():
    s = DistributedSampler(list(range(10)), shuffle=True, seed=3)
    s.set_epoch(2)
    mine = list(s)
    outs = [torch.zeros(len(mine), dtype=torch.int64) for _ in range(N)]
    dist.all_gather(outs, torch.tensor(mine, dtype=torch.int64))
    every = sorted(v for o in outs for v in o.tolist())
    assert set(every) == set(range(10)) and len(every) == len(mine) * N, every
    assert s.num_replicas == N and s.rank == R


C.run("lifecycle.distributed_sampler", sampler)


def destroy_and_reinit():
    dist.destroy_process_group()
    assert not dist.is_initialized()
    assert "init_process_group" in expect_raises(RuntimeError, dist.all_reduce, torch.ones(1))
    dist.init_process_group()
    t = torch.ones(1)
    dist.all_reduce(t)
    assert t.item() == N


C.run("lifecycle.destroy_and_reinit", destroy_and_reinit)
C.report()
