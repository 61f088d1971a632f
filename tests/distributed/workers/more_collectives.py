"""all_to_all, all_to_all_single, batch_isend_irecv, the object collectives and ReduceOp.PREMUL_SUM,
checked on every rank against the same exchange computed in one process with NumPy (every rank can
compute what every other rank sends); plus their argument errors, raised on every rank so that no
process is left waiting. Check names are "<family>.<details>"."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import Checks, dist  # noqa: E402

import numpy as np  # noqa: E402

import tensorplug as torch  # noqa: E402

C = Checks()
dist.init_process_group(backend="mpi")
R, N = dist.get_rank(), dist.get_world_size()
DTYPES = ["int64", "float32", "float64", "float16", "bool", "uint8"]


def expect_raises(exc, fn, *args, **kwargs):
    try:
        fn(*args, **kwargs)
    except exc as e:
        return str(e)
    raise AssertionError(f"{getattr(fn, '__name__', fn)} did not raise {exc.__name__}")


def values(src, dst, dtype, shape, salt=0):
    """What rank `src` sends to rank `dst` (any rank can compute it)."""
    n = int(np.prod(shape, dtype=np.int64))
    v = np.arange(n) * 7 + src * 100 + dst * 10 + salt
    if dtype == "bool":
        return (v % 3 == 0).reshape(shape)
    if dtype == "uint8":
        v = v % 251
    if dtype.startswith("float"):
        v = v * 0.25
    return v.astype(dtype).reshape(shape)


def make(a, noncontig=False):
    if not noncontig:
        return torch.from_numpy(np.array(a))
    big = np.zeros(a.shape + (2,), dtype=a.dtype)
    big[..., 0] = a
    return torch.from_numpy(big)[..., 0]


def check(t, want, what=""):
    got = t.numpy()
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype}, expected {want.dtype}"
    assert got.shape == want.shape, f"{what}: shape {got.shape}, expected {want.shape}"
    assert np.array_equal(got, want), f"{what}: got {got.ravel()[:8]}, expected {want.ravel()[:8]}"


# -- all_to_all ------------------------------------------------------------------------------------
def uneven(i, j):
    """Rows rank i sends to rank j in the uneven cases (0 included)."""
    return (i + 2 * j) % 3


def a2a(dtype, shape_of, async_op=False, noncontig=False):
    ins = [make(values(R, j, dtype, shape_of(R, j)), noncontig) for j in range(N)]
    outs = [make(np.zeros(shape_of(i, R), dtype), noncontig) for i in range(N)]
    w = dist.all_to_all(outs, ins, async_op=async_op)
    if async_op:
        assert w.wait() is True and w.is_completed()
    else:
        assert w is None
    for i in range(N):
        check(outs[i], values(i, R, dtype, shape_of(i, R)), f"output_tensor_list[{i}]")
    for j in range(N):                            # the inputs are not touched
        check(ins[j], values(R, j, dtype, shape_of(R, j)), f"input_tensor_list[{j}]")


for dt in DTYPES:
    C.run(f"all_to_all.even.{dt}", a2a, dt, lambda i, j: (3, 2))
    C.run(f"all_to_all.uneven.{dt}", a2a, dt, lambda i, j: (uneven(i, j), 2))
C.run("all_to_all.0d", a2a, "float64", lambda i, j: ())
C.run("all_to_all.async_even", a2a, "float32", lambda i, j: (4,), True)
C.run("all_to_all.async_uneven", a2a, "int64", lambda i, j: (uneven(i, j) + 1, 3), True)
C.run("all_to_all.noncontig", a2a, "float32", lambda i, j: (2, 3), False, True)
C.run("all_to_all.large_uneven", a2a, "float64", lambda i, j: (20000 * (uneven(i, j) + 1),))


def a2a_subgroup():
    members = list(range(0, N, 2)) if N > 2 else [1]
    g = dist.new_group(members)
    if R not in members:
        assert dist.all_to_all([torch.zeros(1)], [torch.zeros(1)], group=g) is None
        return
    m = len(members)
    me = members.index(R)
    ins = [torch.from_numpy(values(me, j, "float32", (2,))) for j in range(m)]
    outs = [torch.zeros(2) for _ in range(m)]
    dist.all_to_all(outs, ins, group=g)
    for i in range(m):
        check(outs[i], values(i, me, "float32", (2,)))


C.run("all_to_all.subgroup", a2a_subgroup)


# -- all_to_all_single -----------------------------------------------------------------------------
def row_block(src, dst, dtype, rows, cols):
    return values(src, dst, dtype, (rows, cols))


def a2as(dtype, splits=None, async_op=False, cols=3, noncontig=False):
    """splits(i, j): rows i sends to j (None: 2 rows each, split sizes not passed)."""
    s = splits or (lambda i, j: 2)
    inp = np.concatenate([row_block(R, j, dtype, s(R, j), cols) for j in range(N)])
    want = np.concatenate([row_block(i, R, dtype, s(i, R), cols) for i in range(N)])
    out = make(np.zeros_like(want), noncontig)
    args = (None, None) if splits is None else ([s(i, R) for i in range(N)], [s(R, j) for j in range(N)])
    t_in = make(inp, noncontig)
    w = dist.all_to_all_single(out, t_in, *args, async_op=async_op)
    if async_op:
        assert w.wait() is True
    check(out, want, "output")
    check(t_in, inp, "input")


for dt in DTYPES:
    C.run(f"all_to_all_single.even.{dt}", a2as, dt)
    C.run(f"all_to_all_single.uneven.{dt}", a2as, dt, uneven)
C.run("all_to_all_single.async_even", a2as, "float32", None, True)
C.run("all_to_all_single.async_uneven", a2as, "int64", uneven, True)
C.run("all_to_all_single.noncontig_uneven", a2as, "float64", uneven, False, 4, True)
C.run("all_to_all_single.1d", a2as, "float32", uneven, False, 1)


def a2as_docstring_example():
    inp = torch.arange(4 * N, dtype=torch.float32) + R * 4 * N
    out = torch.empty(4 * N)
    dist.all_to_all_single(out, inp)
    want = np.concatenate([np.arange(4 * N, dtype=np.float32)[4 * R:4 * R + 4] + i * 4 * N for i in range(N)])
    check(out, want)


C.run("all_to_all_single.equal_rows_1d", a2as_docstring_example)


# -- batch_isend_irecv -------------------------------------------------------------------------------
def ring(dtype, shape, recv_first):
    nxt, prv = (R + 1) % N, (R - 1) % N
    send = make(values(R, nxt, dtype, shape))
    back = make(values(R, prv, dtype, shape, salt=5))
    got_prev = make(np.zeros(shape, dtype))
    got_next = make(np.zeros(shape, dtype))
    ops = [dist.P2POp(dist.isend, send, nxt), dist.P2POp(dist.irecv, got_prev, prv),
           dist.P2POp(dist.isend, back, prv, tag=1), dist.P2POp(dist.irecv, got_next, nxt, tag=1)]
    if recv_first:
        ops = ops[1::2] + ops[0::2]
    works = dist.batch_isend_irecv(ops)
    assert len(works) == 4 and all(isinstance(w, dist.Work) for w in works)
    for w in works:
        w.wait()
    assert all(w.is_completed() for w in works)
    check(got_prev, values(prv, R, dtype, shape), "from the previous rank")
    check(got_next, values(nxt, R, dtype, shape, salt=5), "from the next rank (tag 1)")


for dt in ["float32", "int64", "bool"]:
    C.run(f"p2p_batch.ring.{dt}", ring, dt, (3, 4), False)
# 4 MiB messages go by rendezvous: blocking sends would deadlock; the batch must start every op first
C.run("p2p_batch.ring_large_recv_listed_first", ring, "float64", (512, 1024), True)
C.run("p2p_batch.ring_large", ring, "float64", (512, 1024), False)


def batch_group_peer():
    g = dist.new_group(list(range(N))[::-1][:2])    # the last two ranks
    members = sorted(list(range(N))[::-1][:2])
    if R not in members:
        assert dist.batch_isend_irecv([dist.P2POp(dist.isend, torch.zeros(1), 0, group=g)]) == []
        return
    me, other = members.index(R), 1 - members.index(R)
    x = torch.tensor([float(R)])
    y = torch.zeros(1)
    op = dist.P2POp(dist.isend, x, group=g, group_peer=other)
    assert op.peer == members[other] and op.group_peer == other
    for w in dist.batch_isend_irecv([op, dist.P2POp(dist.irecv, y, group=g, group_peer=other)]):
        w.wait()
    assert y.item() == float(members[other]), (y.item(), members, me)


C.run("p2p_batch.group_peer", batch_group_peer)


# -- object collectives -------------------------------------------------------------------------------
def obj_of(r, salt=0):
    """An object of rank r: dicts, a tensor inside, None, pickles of different sizes per rank."""
    return {"rank": r, "salt": salt, "data": list(range(r * 300 + salt)), "t": torch.arange(float(r + 2)) * 2,
            "none": None, "nested": ("x" * (r + 1), {r: [r] * r})}


def same_obj(got, want, what=""):
    assert isinstance(got, dict), f"{what}: got {type(got).__name__}"
    t_got, t_want = got.pop("t"), want.pop("t")
    assert got == want, f"{what}: {str(got)[:200]} != {str(want)[:200]}"
    assert isinstance(t_got, torch.Tensor) and np.array_equal(t_got.numpy(), t_want.numpy()), what


def broadcast_objects(src):
    want = [obj_of(src), None, "s" * 1000 * (src + 1), torch.tensor([1, 2, 3]) + src, 42]
    lst = [obj_of(src), None, "s" * 1000 * (src + 1), torch.tensor([1, 2, 3]) + src, 42] if R == src \
        else [None, "junk", 0, 0, 0]
    assert dist.broadcast_object_list(lst, src=src) is None
    same_obj(lst[0], want[0])
    assert lst[1] is None and lst[2] == want[2] and lst[4] == 42
    assert np.array_equal(lst[3].numpy(), want[3].numpy())


C.run("objects.broadcast_src0", broadcast_objects, 0)
C.run("objects.broadcast_src_last", broadcast_objects, N - 1)


def broadcast_default_src():
    lst = [R * 10 + 1] if R == 0 else [None]
    dist.broadcast_object_list(lst)
    assert lst == [1], lst


C.run("objects.broadcast_default_src", broadcast_default_src)


def broadcast_group_src():
    members = list(range(1, N))
    g = dist.new_group(members)
    if R == 0:
        lst = ["untouched"]
        assert dist.broadcast_object_list(lst, group=g, group_src=len(members) - 1) is None
        assert lst == ["untouched"]
        return
    lst = [{"from": R}] if R == members[-1] else [None]
    dist.broadcast_object_list(lst, group=g, group_src=len(members) - 1)
    assert lst == [{"from": members[-1]}], lst


C.run("objects.broadcast_group_src", broadcast_group_src)


def all_gather_objects():
    lst = [None] * N
    assert dist.all_gather_object(lst, obj_of(R, 1)) is None
    for i in range(N):
        same_obj(lst[i], obj_of(i, 1), f"object_list[{i}]")


C.run("objects.all_gather", all_gather_objects)


def all_gather_none():
    lst = ["x"] * N
    dist.all_gather_object(lst, None if R % 2 else [R])
    assert lst == [None if i % 2 else [i] for i in range(N)], lst


C.run("objects.all_gather_none", all_gather_none)


def gather_objects(dst):
    lst = [None] * N if R == dst else None
    assert dist.gather_object(obj_of(R, 2), lst, dst=dst) is None
    if R == dst:
        for i in range(N):
            same_obj(lst[i], obj_of(i, 2), f"object_gather_list[{i}]")
    else:
        assert lst is None


C.run("objects.gather_dst0", gather_objects, 0)
C.run("objects.gather_dst1", gather_objects, 1)


def scatter_objects(src):
    ins = [obj_of(i, 3) for i in range(N)] if R == src else None
    out = [None, "kept"]
    assert dist.scatter_object_list(out, ins, src=src) is None
    same_obj(out[0], obj_of(R, 3))
    assert out[1] == "kept"


C.run("objects.scatter_src0", scatter_objects, 0)
C.run("objects.scatter_src_last", scatter_objects, N - 1)


def scatter_input_ignored_off_source():
    ins = [i * i for i in range(N)] if R == 0 else ["ignored"]
    out = [None]
    dist.scatter_object_list(out, ins)
    assert out == [R * R], out


C.run("objects.scatter_input_ignored_off_source", scatter_input_ignored_off_source)


def send_recv_objects():
    nxt, prv = (R + 1) % N, (R - 1) % N
    sent = [obj_of(R, 4), None, R]
    got = [None, "x", -1]
    if R % 2 == 0:
        dist.send_object_list(sent, dst=nxt)
        src = dist.recv_object_list(got, src=prv)
    else:
        src = dist.recv_object_list(got)                    # from any process
        dist.send_object_list(sent, dst=nxt)
    assert src == prv, (src, prv)
    same_obj(got[0], obj_of(prv, 4))
    assert got[1] is None and got[2] == prv


C.run("objects.send_recv_ring", send_recv_objects)


# -- ReduceOp.PREMUL_SUM -------------------------------------------------------------------------------
def factor(r):
    return (r + 1) * 0.5


def premul_all_reduce(dtype, tensor_factor, async_op=False):
    x = values(R, 0, dtype, (3, 4))
    t = torch.from_numpy(x.copy())
    f = torch.tensor([factor(R)]) if tensor_factor else factor(R)
    w = dist.all_reduce(t, op=dist._make_nccl_premul_sum(f), async_op=async_op)
    if async_op:
        w.wait()
    want = sum(factor(r) * values(r, 0, dtype, (3, 4)).astype(np.float64) for r in range(N))
    tol = 1e-2 if dtype == "float16" else 1e-6
    assert np.allclose(t.numpy().astype(np.float64), want, rtol=tol), (t.numpy().ravel()[:4], want.ravel()[:4])
    assert t.numpy().dtype == np.dtype(dtype)


for dt in ["float32", "float64", "float16"]:
    C.run(f"premul.all_reduce.{dt}", premul_all_reduce, dt, False)
C.run("premul.all_reduce.tensor_factor", premul_all_reduce, "float32", True)
C.run("premul.all_reduce.async", premul_all_reduce, "float64", False, True)


def premul_reduce(dst):
    x = values(R, 0, "float64", (5,))
    t = torch.from_numpy(x.copy())
    dist.reduce(t, dst, op=dist._make_nccl_premul_sum(factor(R)))
    if R == dst:
        want = sum(factor(r) * values(r, 0, "float64", (5,)) for r in range(N))
        assert np.allclose(t.numpy(), want)
    else:
        check(t, x, "a non-destination rank's tensor stays as it was")


C.run("premul.reduce_dst0", premul_reduce, 0)
C.run("premul.reduce_dst_last", premul_reduce, N - 1)


def premul_reduce_scatter(single_tensor):
    f = dist._make_nccl_premul_sum(factor(R))
    out = torch.zeros(3)
    pieces = [values(R, j, "float32", (3,)) for j in range(N)]
    if single_tensor:
        inp = torch.from_numpy(np.concatenate(pieces))
        dist.reduce_scatter_tensor(out, inp, op=f)
        check(inp, np.concatenate(pieces), "input")
    else:
        ins = [torch.from_numpy(p.copy()) for p in pieces]
        dist.reduce_scatter(out, ins, op=f)
        for j in range(N):
            check(ins[j], pieces[j], f"input_list[{j}]")
    want = sum(factor(r) * values(r, R, "float32", (3,)).astype(np.float64) for r in range(N))
    assert np.allclose(out.numpy(), want, rtol=1e-6), (out.numpy(), want)


C.run("premul.reduce_scatter", premul_reduce_scatter, False)
C.run("premul.reduce_scatter_tensor", premul_reduce_scatter, True)


def premul_errors():
    msg = expect_raises(RuntimeError, dist.all_reduce, torch.ones(2, dtype=torch.int64),
                        op=dist._make_nccl_premul_sum(2.0))
    assert "floating-point" in msg, msg
    msg = expect_raises(RuntimeError, dist.all_reduce, torch.ones(2), op=dist.ReduceOp.PREMUL_SUM)
    assert "_make_nccl_premul_sum" in msg, msg


C.run("premul.errors", premul_errors)


# -- errors (every rank passes the same bad arguments, or the check spans the ranks) ---------------------
def errors_all_to_all():
    msg = expect_raises(RuntimeError, dist.all_to_all, [torch.zeros(1)] * (N + 1), [torch.zeros(1)] * N)
    assert f"{N + 1} tensors" in msg and "output_tensor_list" in msg, msg
    msg = expect_raises(ValueError, dist.all_to_all, [torch.zeros(1, dtype=torch.int64)] * N, [torch.zeros(1)] * N)
    assert "int64" in msg and "float32" in msg, msg
    msg = expect_raises(TypeError, dist.all_to_all, torch.zeros(N), [torch.zeros(1)] * N)
    assert "list" in msg, msg
    # rank 0 expects 2 elements from every rank, the others send it 1: every rank raises
    outs = [torch.zeros(2 if R == 0 else 1) for _ in range(N)]
    msg = expect_raises(RuntimeError, dist.all_to_all, outs, [torch.zeros(1) for _ in range(N)])
    assert ("expects 2 float32 elements" in msg) if R == 0 else "do not match" in msg, msg
    # and the group still works afterwards
    a2a("float32", lambda i, j: (2,))


def errors_all_to_all_single():
    x = torch.zeros(2 * N, 3)
    msg = expect_raises(RuntimeError, dist.all_to_all_single, torch.zeros(2 * N, 3), x, None, [1] * N)
    assert "sum to" in msg and f"dim 0 is {2 * N}" in msg, msg
    msg = expect_raises(RuntimeError, dist.all_to_all_single, torch.zeros(2 * N, 3), x, [2] * (N + 1), None)
    assert "output_split_sizes" in msg and f"{N + 1} entries" in msg, msg
    msg = expect_raises(RuntimeError, dist.all_to_all_single, torch.zeros(2 * N + 1), torch.zeros(2 * N + 1))
    assert "not divisible" in msg, msg
    msg = expect_raises(ValueError, dist.all_to_all_single, torch.zeros(2 * N, dtype=torch.int64), torch.zeros(2 * N))
    assert "dtype" in msg, msg
    msg = expect_raises(RuntimeError, dist.all_to_all_single, torch.zeros(N), torch.tensor(1.0))
    assert "0-d" in msg, msg
    msg = expect_raises(RuntimeError, dist.all_to_all_single, torch.zeros(N), torch.zeros(N), None,
                        [-1] + [1] * (N - 1))
    assert "non-negative" in msg, msg
    # consistent locally, inconsistent across ranks: rank 0 wants 2 rows from rank 1, none from rank 0
    outs = [0, 2] + [1] * (N - 2) if R == 0 else None
    msg = expect_raises(RuntimeError, dist.all_to_all_single, torch.zeros(N), torch.zeros(N), outs, None)
    want = "expects 0 float32 elements from group rank 0, which sends 1" if R == 0 else "do not match"
    assert want in msg, msg
    # dtypes that differ between ranks
    dt = torch.float64 if R == N - 1 else torch.float32
    msg = expect_raises(RuntimeError, dist.all_to_all_single, torch.zeros(N, dtype=dt), torch.zeros(N, dtype=dt))
    assert "float64" in msg and "float32" in msg and "which sends 1" in msg, msg
    a2as("float32", uneven)


def errors_p2p_batch():
    msg = expect_raises(ValueError, dist.P2POp, dist.send, torch.zeros(1), (R + 1) % N)
    assert "isend" in msg and "irecv" in msg, msg
    assert "required" in expect_raises(ValueError, dist.P2POp, dist.isend, torch.zeros(1))
    assert "rank of this process" in expect_raises(ValueError, dist.P2POp, dist.isend, torch.zeros(1), R)
    assert "not both" in expect_raises(ValueError, dist.P2POp, dist.isend, torch.zeros(1), 0, group_peer=1)
    assert "invalid peer" in expect_raises(ValueError, dist.P2POp, dist.irecv, torch.zeros(1), N + 3)
    assert "Tensor" in expect_raises(TypeError, dist.P2POp, dist.isend, [1.0], (R + 1) % N)
    assert "empty" in expect_raises(ValueError, dist.batch_isend_irecv, [])
    one = dist.P2POp(dist.isend, torch.zeros(1), (R + 1) % N)
    assert "P2POp" in expect_raises(ValueError, dist.batch_isend_irecv, (one,))
    g = dist.new_group(list(range(N)))
    ops = [one, dist.P2POp(dist.irecv, torch.zeros(1), (R - 1) % N, group=g)]
    assert "same group" in expect_raises(ValueError, dist.batch_isend_irecv, ops)


def errors_objects():
    msg = expect_raises(ValueError, dist.all_gather_object, [None] * (N + 1), R)
    assert f"{N + 1} elements" in msg, msg
    assert "list" in expect_raises(TypeError, dist.all_gather_object, None, R)
    # gather_object: no list on the destination, a list elsewhere
    bad = None if R == 0 else [None] * N
    msg = expect_raises(ValueError, dist.gather_object, R, bad, dst=0)
    assert ("required on the destination" in msg) if R == 0 else "must be None" in msg, msg
    assert "at least one" in expect_raises(ValueError, dist.scatter_object_list, [], [1] * N)
    # a bad input list on the source: every rank raises
    msg = expect_raises(ValueError, dist.scatter_object_list, [None], [1] * (N + 1) if R == 0 else None)
    assert "scatter_object_input_list" in msg and "source rank 0" in msg, msg
    # broadcast: a list of another length than the source's (the others raise, the source does not)
    lst = [1, 2, 3] if R == 0 else [None]
    if R == 0:
        dist.broadcast_object_list(lst)
    else:
        msg = expect_raises(ValueError, dist.broadcast_object_list, lst)
        assert "sent 3 objects" in msg, msg
    # recv_object_list with a shorter list: the receiver raises, having taken the whole message
    if R == 0:
        dist.send_object_list([1, 2], dst=1)
        dist.send_object_list(["after"], dst=1)
    elif R == 1:
        msg = expect_raises(ValueError, dist.recv_object_list, [None], src=0)
        assert "sent 2 objects" in msg, msg
        after = [None]
        assert dist.recv_object_list(after, src=0) == 0 and after == ["after"]
    assert "dst (a global rank) or group_dst" in expect_raises(ValueError, dist.send_object_list, [1])
    assert "not both" in expect_raises(ValueError, dist.gather_object, 1, None, dst=0, group_dst=0)


C.run("errors.all_to_all", errors_all_to_all)
C.run("errors.all_to_all_single", errors_all_to_all_single)
C.run("errors.p2p_batch", errors_p2p_batch)
C.run("errors.objects", errors_objects)


def still_in_step():
    """After every check (including the failed ones), the ranks still agree on what comes next."""
    t = torch.tensor([float(R)])
    dist.all_reduce(t)
    assert t.item() == N * (N - 1) / 2


C.run("errors.still_in_step", still_in_step)
C.report()
dist.destroy_process_group()
