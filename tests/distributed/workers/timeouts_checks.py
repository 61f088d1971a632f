"""What must pass while nothing fails: DETAIL fingerprint checks (matching calls give NumPy's results,
mismatched ones raise on every rank naming each rank's call and leave the group usable),
monitored_barrier with late but timely ranks, timeouts that must not fire. Run with
TENSORPLUG_DISTRIBUTED_DEBUG=DETAIL."""
import os
import sys
import time
from datetime import timedelta

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import Checks, dist  # noqa: E402

import numpy as np  # noqa: E402

import tensorplug as torch  # noqa: E402

C = Checks()
dist.init_process_group()
R, N = dist.get_rank(), dist.get_world_size()


def raises_on_every_rank(fn, *needles):
    try:
        fn()
    except dist.DistBackendError as e:
        msg = str(e)
        assert msg.startswith(f"Detected mismatch between collectives on ranks. Rank {R} is running "
                              "collective: CollectiveFingerPrint("), msg
        for n in needles:
            assert n in msg, (n, msg)
        return msg
    raise AssertionError("no DistBackendError")


def env_read():
    assert dist.get_debug_level() is dist.DebugLevel.DETAIL


def detail_matching_calls():
    base = np.arange(6, dtype=np.float64).reshape(2, 3)
    t = torch.from_numpy(base * (R + 1))
    dist.all_reduce(t)
    np.testing.assert_array_equal(t.numpy(), base * sum(range(1, N + 1)))
    b = torch.from_numpy(np.full(5, float(R)))
    dist.broadcast(b, src=N - 1)
    np.testing.assert_array_equal(b.numpy(), np.full(5, N - 1.0))
    outs = [torch.zeros(3) for _ in range(N)]
    dist.all_gather(outs, torch.full((3,), float(R)))
    assert [o.tolist() for o in outs] == [[float(i)] * 3 for i in range(N)]
    o = torch.zeros(2)
    dist.reduce_scatter(o, [torch.full((2,), float(R * N + i)) for i in range(N)])
    assert o.tolist() == [float(sum(r * N + R for r in range(N)))] * 2
    dist.barrier()
    dist.monitored_barrier(timeout=timedelta(seconds=20))


def detail_shape_mismatch():
    msg = raises_on_every_rank(lambda: dist.all_reduce(torch.ones(4 + R)),
                               *[f"Rank {r} is running collective: CollectiveFingerPrint(OpType=ALLREDUCE, "
                                 f"TensorShape=[{4 + r}], TensorDtypes=Float)" for r in range(N)])
    assert msg.count(f"Rank {R} is running") == 1, msg      # this rank's call first, then each other one


def detail_ndim_mismatch():
    shape = (2, 2) if R == 0 else (4,)
    raises_on_every_rank(lambda: dist.all_reduce(torch.ones(*shape)), "TensorShape=[2, 2]", "TensorShape=[4]")


def detail_dtype_mismatch():
    dt = torch.float32 if R == 0 else torch.float64
    msg = raises_on_every_rank(lambda: dist.all_reduce(torch.ones(3, dtype=dt)),
                               "Rank 0 is running collective: CollectiveFingerPrint(OpType=ALLREDUCE, "
                               "TensorShape=[3], TensorDtypes=Float)",
                               f"Rank {R or N - 1} is running collective: CollectiveFingerPrint(OpType=ALLREDUCE, "
                               "TensorShape=[3], TensorDtypes=Double)")
    # ranks that run the same as this one are not listed
    assert msg.count("TensorDtypes=Double") == (N - 1 if R == 0 else 1), msg


def detail_op_mismatch():
    t = torch.ones(2)
    raises_on_every_rank(lambda: dist.all_reduce(t) if R == 0 else dist.broadcast(t, src=0),
                         "OpType=ALLREDUCE", "OpType=BROADCAST")


def detail_root_mismatch():
    t = torch.ones(2)
    raises_on_every_rank(lambda: dist.broadcast(t, src=0 if R == 0 else 1), "Root=0", "Root=1")


def group_usable_after_mismatches():
    t = torch.full((4,), float(R))
    dist.all_reduce(t)
    assert t.tolist() == [float(sum(range(N)))] * 4


def debug_off_checks_nothing():
    dist.set_debug_level("OFF")
    try:
        t = torch.full((3,), 2.0)
        dist.all_reduce(t)
        assert t.tolist() == [2.0 * N] * 3
    finally:
        dist.set_debug_level(dist.DebugLevel.DETAIL)


def monitored_late_ranks_pass():
    time.sleep(0.15 * R)
    dist.monitored_barrier(timeout=timedelta(seconds=20), wait_all_ranks=True)
    dist.monitored_barrier(timeout=20.0)


def monitored_subgroup():
    g = dist.new_group([0, N - 1])
    t0 = time.perf_counter()
    assert dist.monitored_barrier(group=g, timeout=timedelta(seconds=20)) is None
    assert time.perf_counter() - t0 < 10


def timeout_does_not_fire_on_late_ranks():
    g = dist.new_group(list(range(N)), timeout=timedelta(seconds=1.5))
    assert g.timeout == 1.5
    for late in (0.0, 0.6):                             # the last rank arrives `late` s after rank 0
        delay = late / max(1, N - 1)
        time.sleep(delay * R)
        t = torch.full((2,), 1.0)
        dist.all_reduce(t, group=g)                     # blocking: under the watchdog
        assert t.tolist() == [float(N)] * 2
        time.sleep(delay * (N - 1 - R))
        dist.barrier(group=g)                           # waited for here
    w = dist.all_reduce(torch.ones(1), async_op=True, group=g)
    assert w.wait(timeout=timedelta(seconds=20)) is True
    if R == 0:
        time.sleep(0.7)
        dist.send(torch.ones(2), dst=N - 1, group=g)
    elif R == N - 1:
        r = torch.zeros(2)
        assert dist.recv(r, src=0, group=g) == 0 and r.tolist() == [1.0, 1.0]


def recv_size_mismatch():
    """A receive buffer smaller than the message: DistBackendError naming recv and the buffer."""
    if R == 0:
        dist.send(torch.ones(8), dst=N - 1)
    elif R == N - 1:
        small = torch.zeros(4)
        try:
            dist.recv(small, src=0)
        except dist.DistBackendError as e:
            assert str(e).startswith("recv: message size mismatch between ranks — this rank contributed "
                                     "16 bytes (float32 [4])"), str(e)
        else:
            raise AssertionError("no DistBackendError")
    dist.barrier()


def size_check_without_detail():
    """Without DETAIL the backend's size check still names the mismatch, on every rank, and the
    group stays usable."""
    dist.set_debug_level("OFF")
    try:
        for call in (lambda t: dist.all_reduce(t), lambda t: dist.broadcast(t, src=0),
                     lambda t: dist.all_gather([torch.zeros_like(t) for _ in range(N)], t)):
            t = torch.ones(2 + (R == N - 1))
            try:
                call(t)
            except dist.DistBackendError as e:
                assert "message size mismatch between ranks — this rank contributed " \
                       f"{4 * t.numel()} bytes (float32 [{t.numel()}]), the group's ranks between 8 and 12 bytes" \
                       in str(e), str(e)
            else:
                raise AssertionError("no DistBackendError")
        t = torch.ones(3)
        dist.all_reduce(t)
        assert t.tolist() == [float(N)] * 3
    finally:
        dist.set_debug_level(dist.DebugLevel.DETAIL)


def async_size_mismatch():
    """Async collectives check sizes too: Work.wait() raises on every rank (the tensor's contents are
    then undefined) and the group stays usable."""
    dist.set_debug_level("OFF")
    try:
        t = torch.ones(2 + (R == N - 1))
        w = dist.all_reduce(t, async_op=True)
        try:
            w.wait()
        except dist.DistBackendError as e:
            assert "all_reduce: message size mismatch between ranks — this rank contributed " \
                   f"{4 * t.numel()} bytes" in str(e), str(e)
        else:
            raise AssertionError("no DistBackendError")
        for size in (3, (5 << 20) // 4):                 # one piece, and several (a lane of its own)
            t = torch.from_numpy(np.full(size, R + 1.0, np.float32))
            dist.all_reduce(t, async_op=True).wait()
            assert np.array_equal(t.numpy(), np.full(size, N * (N + 1) / 2, np.float32)), size
    finally:
        dist.set_debug_level(dist.DebugLevel.DETAIL)


def mixed_forms_pair():
    """Rank 0 calls all_reduce blocking, the others with async_op=True: they pair (one piece, and
    pieces on a lane), and so do broadcast and barrier."""
    for size in (3, (5 << 20) // 4):
        t = torch.from_numpy(np.full(size, R + 1.0, np.float32))
        if R == 0:
            dist.all_reduce(t)
        else:
            dist.all_reduce(t, async_op=True).wait()
        assert np.array_equal(t.numpy(), np.full(size, N * (N + 1) / 2, np.float32)), size
    t = torch.full((4,), float(R))
    dist.broadcast(t, src=N - 1) if R % 2 else dist.broadcast(t, src=N - 1, async_op=True).wait()
    assert t.tolist() == [N - 1.0] * 4
    dist.barrier() if R == 0 else dist.barrier(async_op=True).wait()


for name, fn in [
        ("sizes.mixed_forms_pair", mixed_forms_pair),
        ("sizes.async_mismatch", async_size_mismatch),
        ("p2p.recv_size_mismatch", recv_size_mismatch),
        ("sizes.check_without_detail", size_check_without_detail),
        ("debug.env_read", env_read),
        ("detail.matching_calls", detail_matching_calls),
        ("detail.shape_mismatch", detail_shape_mismatch),
        ("detail.ndim_mismatch", detail_ndim_mismatch),
        ("detail.dtype_mismatch", detail_dtype_mismatch),
        ("detail.op_mismatch", detail_op_mismatch),
        ("detail.root_mismatch", detail_root_mismatch),
        ("detail.group_usable_after_mismatches", group_usable_after_mismatches),
        ("debug.off_checks_nothing", debug_off_checks_nothing),
        ("monitored.late_ranks_pass", monitored_late_ranks_pass),
        ("monitored.subgroup", monitored_subgroup),
        ("timeout.does_not_fire_on_late_ranks", timeout_does_not_fire_on_late_ranks),
]:
    C.run(name, fn)
C.report()
dist.destroy_process_group()
