"""all_to_all, all_to_all_single, batch_isend_irecv, the object collectives and ReduceOp.PREMUL_SUM on 2
and 4 (oversubscribed) processes (workers/more_collectives.py: one mpiexec job per world size, every
result compared with NumPy); plus, in this process with a world of one, argument errors, the object
collectives' round trip, get_node_local_rank, barrier's device_ids check and the backend SPI."""
import numpy as np
import pytest

import _launch
from _launch import requires_mpi

import tensorplug as torch
import tensorplug.distributed as dist
from tensorplug.backends.mpi_dist.all_to_all import _splits
from tensorplug.dispatch import CommunicationBackend, hookimpl, registry
from tensorplug.distributed import collectives
from tensorplug.distributed.node import check_device_ids
from tensorplug.distributed.reduce_op import premul

FAMILIES = ["all_to_all", "all_to_all_single", "p2p_batch", "objects", "errors"]
# PREMUL_SUM reaches the collectives once collectives.py applies `premul` (see reduce_op.py)
PREMUL_WIRED = hasattr(collectives, "premul")
job = _launch.WorkerJobs("more_collectives.py")


def family_checks(n, family):
    return job.family(n, family)


@requires_mpi
@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("n", [2, 4])
def test_family(n, family):
    """Every check of the family passes on every rank."""
    checks = family_checks(n, family)
    failed = {k: [e for e in v if e] for k, v in checks.items() if any(v)}
    report = "\n".join(f"{k}: {errs[0]}" for k, errs in list(failed.items())[:10])
    assert not failed, f"{len(failed)} of {len(checks)} {family} checks failed on some rank:\n{report}"


@requires_mpi
@pytest.mark.parametrize("n", [2, 4])
def test_premul_sum(n):
    """PREMUL_SUM's results match NumPy once wired into collectives.py; until then every use of it
    raises a clear error (never a plain, unscaled sum)."""
    checks = family_checks(n, "premul")
    if PREMUL_WIRED:
        failed = {k: [e for e in v if e][0] for k, v in checks.items() if any(v)}
        assert not failed, failed
        return
    for name, errs in checks.items():
        if name == "premul.errors":
            continue
        assert all(e and "PREMUL_SUM is only supported by" in e for e in errs), (name, errs)


@requires_mpi
@pytest.mark.parametrize("n", [2, 4])
def test_job_ends_cleanly(n):
    j = job(n)
    assert j.returncode == 0 and not j.timed_out, j.describe()
    assert len(j.result["checks"]) >= 68


# -- one process ----------------------------------------------------------------------------------------
class _Group:
    rank, size, world = 0, 1, True


class _Done:
    def wait(self, timeout=None):
        return True

    def is_completed(self):
        return True


class WorldOfOne(CommunicationBackend):
    """An in-process backend of one process: what a collective moves, it copies."""
    name = "world-of-one"

    def __init__(self, with_all_to_all=True):
        if not with_all_to_all:
            self.name = "no-all-to-all"
        self.has = with_all_to_all

    def init(self, world_size=-1, rank=-1):
        return _Group()

    def new_group(self, group, ranks):
        return _Group()

    def destroy(self, group):
        pass

    def _done(self, async_op):
        return _Done() if async_op else None

    def broadcast(self, array, src, group, async_op=False):
        return self._done(async_op)

    def all_gather_into(self, out, array, group, async_op=False):
        np.copyto(out, array.reshape(out.shape))
        return self._done(async_op)

    def gather(self, array, outs, dst, group, async_op=False):
        np.copyto(outs[0], array)
        return self._done(async_op)

    def scatter(self, out, ins, src, group, async_op=False):
        np.copyto(out, ins[0])
        return self._done(async_op)

    def send(self, array, dst, tag, group):
        raise AssertionError("a world of one has nobody to send to")

    def __getattr__(self, name):
        if name in ("all_to_all", "all_to_all_single") and self.__dict__.get("has"):
            return getattr(self, "_" + name)
        raise AttributeError(name)

    def _all_to_all(self, outs, ins, group, async_op=False):
        np.copyto(outs[0], ins[0].reshape(outs[0].shape))
        return self._done(async_op)

    def _all_to_all_single(self, out, inp, out_splits, in_splits, group, async_op=False):
        assert _splits(in_splits, inp.shape, 1, "input") == _splits(out_splits, out.shape, 1, "output")
        np.copyto(out, inp.reshape(out.shape))
        return self._done(async_op)


@pytest.fixture(scope="module")
def world_of_one():
    backends = [WorldOfOne(), WorldOfOne(with_all_to_all=False)]

    class Plugin:
        @hookimpl
        def tensorplug_register_backends(self, registry):
            for b in backends:
                registry.add_communication(b)
    registry.register_plugin(Plugin(), name="more-collectives-world-of-one")
    yield backends
    if dist.is_initialized():
        dist.destroy_process_group()
    registry.unregister_plugin("more-collectives-world-of-one")


@pytest.fixture
def world(world_of_one):
    dist.init_process_group(backend="world-of-one")
    yield
    dist.destroy_process_group()


def test_object_collectives_round_trip(world):
    """Objects (dicts, tensors inside, None) come back equal through every object collective."""
    obj = {"a": [1, 2, {"b": None}], "t": torch.arange(4.0) * 3, "s": "x" * 5000}
    lst = [obj, None, 7]
    dist.broadcast_object_list(lst, src=0)
    assert lst[1:] == [None, 7] and lst[0]["a"] == obj["a"] and lst[0]["s"] == obj["s"]
    assert np.array_equal(lst[0]["t"].numpy(), np.arange(4.0, dtype=np.float32) * 3)
    out = [None]
    dist.all_gather_object(out, obj)
    assert out[0]["a"] == obj["a"] and np.array_equal(out[0]["t"].numpy(), obj["t"].numpy())
    got = ["old"]
    dist.gather_object({"x": 1}, got, dst=0)
    assert got == [{"x": 1}]
    res = [None, "kept"]
    dist.scatter_object_list(res, [("tuple", 2)], src=0)
    assert res == [("tuple", 2), "kept"]
    dist.scatter_object_list(res, [None], group_src=0)
    assert res == [None, "kept"]


def test_object_collective_argument_errors(world):
    with pytest.raises(ValueError, match="one per process of the group"):
        dist.all_gather_object([None, None], 1)
    with pytest.raises(TypeError, match="object_list must be a list"):
        dist.broadcast_object_list((1,), src=0)
    with pytest.raises(ValueError, match="required on the destination rank"):
        dist.gather_object(1, None, dst=0)
    with pytest.raises(ValueError, match="at least one element"):
        dist.scatter_object_list([], [1])
    with pytest.raises(ValueError, match="source rank 0 must be a list with one object per process"):
        dist.scatter_object_list([None], [1, 2])
    with pytest.raises(ValueError, match="give src or group_src, not both"):
        dist.broadcast_object_list([1], src=0, group_src=0)
    with pytest.raises(ValueError, match="invalid group_src 3"):
        dist.broadcast_object_list([1], group_src=3)
    with pytest.raises(ValueError, match="invalid src 2"):
        dist.broadcast_object_list([1], src=2)
    with pytest.raises(ValueError, match="dst .* or group_dst .* is required"):
        dist.send_object_list([1])
    with pytest.raises(ValueError, match="rank of this process"):
        dist.send_object_list([1], dst=0)


def test_all_to_all_in_one_process(world):
    out = [torch.zeros(2, 3)]
    dist.all_to_all(out, [torch.arange(6.0).reshape(2, 3)])
    assert out[0].tolist() == [[0, 1, 2], [3, 4, 5]]
    o = torch.zeros(4, dtype=torch.int64)
    w = dist.all_to_all_single(o, torch.tensor([4, 3, 2, 1]), [4], [4], async_op=True)
    assert w.wait() and o.tolist() == [4, 3, 2, 1]
    with pytest.raises(RuntimeError, match="output_tensor_list has 2 tensors; the group has 1"):
        dist.all_to_all([torch.zeros(1)] * 2, [torch.zeros(1)])
    with pytest.raises(ValueError, match="output_tensor_list\\[0\\] is int32, input_tensor_list\\[0\\] float32"):
        dist.all_to_all([torch.zeros(1, dtype=torch.int32)], [torch.zeros(1)])
    with pytest.raises(TypeError, match="input_tensor_list\\[0\\] must be a tensorplug.Tensor"):
        dist.all_to_all([torch.zeros(1)], [np.zeros(1)])
    with pytest.raises(TypeError, match="input_split_sizes must be a list of ints or None"):
        dist.all_to_all_single(torch.zeros(2), torch.zeros(2), None, 2)
    with pytest.raises(ValueError, match="output is int64, input float32"):
        dist.all_to_all_single(torch.zeros(2, dtype=torch.int64), torch.zeros(2))


def test_a_backend_without_all_to_all_says_so(world_of_one):
    dist.init_process_group(backend="no-all-to-all")
    try:
        with pytest.raises(NotImplementedError, match="'no-all-to-all' does not provide all_to_all_single"):
            dist.all_to_all_single(torch.zeros(2), torch.zeros(2))
        with pytest.raises(NotImplementedError, match="'no-all-to-all' does not provide all_to_all"):
            dist.all_to_all([torch.zeros(1)], [torch.zeros(1)])
    finally:
        dist.destroy_process_group()


def test_p2p_op_argument_errors(world):
    with pytest.raises(ValueError, match="op must be tensorplug.distributed.isend or"):
        dist.P2POp(dist.send, torch.zeros(1), 0)
    with pytest.raises(ValueError, match="rank of this process"):
        dist.P2POp(dist.isend, torch.zeros(1), 0)
    with pytest.raises(ValueError, match="invalid peer 1"):
        dist.P2POp(dist.irecv, torch.zeros(1), 1)
    with pytest.raises(ValueError, match="must be a list of tensorplug.distributed.P2POp"):
        dist.batch_isend_irecv([object()])
    with pytest.raises(ValueError, match="p2p_op_list is empty"):
        dist.batch_isend_irecv([])


def test_p2p_op_before_init():
    with pytest.raises(RuntimeError, match="init_process_group"):
        dist.P2POp(dist.isend, torch.zeros(1), 1)
    with pytest.raises(RuntimeError, match="init_process_group"):
        dist.all_gather_object([None], 1)


def test_all_to_all_split_rules():
    """Element counts per rank from split sizes (rows of dim 0), and their errors."""
    assert _splits(None, (6, 2), 3, "input") == [4, 4, 4]
    assert _splits([1, 0, 5], (6, 2, 2), 3, "output") == [4, 0, 20]
    assert _splits(None, (0,), 2, "input") == [0, 0]
    for bad, match in [([1, 2, 0], "sum to 3, but the input's dim 0 is 6"), ([6], "1 entries; the group has 3"),
                       ([7, -1, 0], "non-negative ints"), ([2.0, 2, 2], "non-negative ints")]:
        with pytest.raises(RuntimeError, match=match):
            _splits(bad, (6,), 3, "input")
    with pytest.raises(RuntimeError, match="dim 0 \\(5\\) is not divisible by the group size \\(3\\)"):
        _splits(None, (5,), 3, "input")
    with pytest.raises(RuntimeError, match="0-d"):
        _splits(None, (), 3, "input")


def test_premul_scales_like_numpy():
    """premul: PREMUL_SUM becomes a sum of factor * data (floating dtypes), other ops pass through."""
    x = np.array([[1.5, -2.0], [0.25, 8.0]], np.float32)
    t = torch.from_numpy(x.copy())
    op, scaled = premul(dist._make_nccl_premul_sum(0.5), t)
    assert op == "sum" and scaled.dtype == np.float32 and np.array_equal(scaled, x * np.float32(0.5))
    assert np.array_equal(t.numpy(), x)                       # a new array: t is untouched
    op, same = premul(dist._make_nccl_premul_sum(torch.tensor([3.0])), t, out=t._data)
    assert same is t._data and np.array_equal(t.numpy(), x * 3)
    op, many = premul(dist._make_nccl_premul_sum(2), [t, torch.ones(2, dtype=torch.float64)])
    assert op == "sum" and np.array_equal(many[1], np.full(2, 2.0)) and many[1].dtype == np.float64
    assert premul(dist.ReduceOp.MAX, t) == (dist.ReduceOp.MAX, None)
    with pytest.raises(RuntimeError, match="needs a floating-point tensor, got int64"):
        premul(dist._make_nccl_premul_sum(2.0), torch.ones(2, dtype=torch.int64))
    with pytest.raises(RuntimeError, match="needs a factor"):
        premul(dist.ReduceOp.PREMUL_SUM, t)
    with pytest.raises(ValueError, match="one element"):
        dist._make_nccl_premul_sum(torch.ones(2))
    with pytest.raises(TypeError, match="a number or a one-element tensor"):
        dist._make_nccl_premul_sum("2")
    assert dist._make_nccl_premul_sum(2.0) == dist.ReduceOp.PREMUL_SUM
    assert repr(dist._make_nccl_premul_sum(2.0)) == "<ReduceOp.PREMUL_SUM(2.0)>"
    assert "PREMUL_SUM" not in [o.name for o in dist.ReduceOp]   # not an enum member (see reduce_op.py)


def test_get_node_local_rank(monkeypatch):
    monkeypatch.delenv("LOCAL_RANK", raising=False)
    with pytest.raises(RuntimeError, match="LOCAL_RANK is not set.*fallback_rank"):
        dist.get_node_local_rank()
    assert dist.get_node_local_rank(fallback_rank=3) == 3
    monkeypatch.setenv("LOCAL_RANK", "5")
    assert dist.get_node_local_rank() == 5 and dist.get_node_local_rank(fallback_rank=3) == 5
    monkeypatch.setenv("LOCAL_RANK", "five")
    with pytest.raises(RuntimeError, match="not an integer"):
        dist.get_node_local_rank()


def test_barrier_device_ids_check():
    assert check_device_ids(None) is None and check_device_ids([0, 3]) == [0, 3]
    for bad in (0, (0,), [0.0], [True], "0"):
        with pytest.raises(TypeError, match="device_ids must be a list of ints"):
            check_device_ids(bad)


def test_all_to_all_is_a_listed_collective():
    assert CommunicationBackend.COLLECTIVES[-2:] == ("all_to_all", "all_to_all_single")
    b = registry.communication["mpi"]
    assert callable(b.all_to_all) and callable(b.all_to_all_single)
