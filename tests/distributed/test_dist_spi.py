"""Single process, no MPI job: the mpi backend's registration and availability reasons, and
tensorplug.distributed choosing a communication backend by name through the registry (a third-party
style in-process backend of world size 1 runs the frontend and DistributedDataParallel here)."""
import sys
import types

import numpy as np
import pytest
from typer.testing import CliRunner

import tensorplug as torch
import tensorplug.distributed as dist
import tensorplug.nn as nn
from tensorplug.cli.app import app
from tensorplug.dispatch import CommunicationBackend, hookimpl, registry
from tensorplug.nn.parallel import DistributedDataParallel as DDP
from tensorplug.nn.parallel.reducer import assign_buckets

SPI = ("init", "new_group", "destroy", "send", "recv", "isend", "irecv", "all_reduce", "broadcast", "reduce",
       "all_gather", "all_gather_into", "gather", "scatter", "reduce_scatter", "barrier")


def test_mpi_backend_comes_from_the_plugin_hook():
    registry.ensure_loaded()
    b = registry.communication["mpi"]
    rec = [p for p in registry.plugins if p.name == "mpi"][0]
    assert rec.error is None and rec.backends == ["mpi"] and b.kind == "communication"
    for name in (*CommunicationBackend.COLLECTIVES, *SPI):
        assert callable(getattr(b, name, None)), name
    assert set(b.OPS) == {"sum", "product", "min", "max", "band", "bor", "bxor"}


def test_backends_show_lists_every_collective_as_provided():
    r = CliRunner().invoke(app, ["backends", "show", "mpi", "--json"])
    assert r.exit_code == 0, r.output
    import json
    info = json.loads(r.output)
    assert all(info["collectives"].values()), info["collectives"]


def test_unavailable_reasons(monkeypatch):
    from tensorplug.backends.mpi_dist import backend as mod
    b = mod.MpiBackend()
    monkeypatch.delitem(sys.modules, "mpi4py.MPI", raising=False)
    monkeypatch.setattr(mod.importlib.util, "find_spec", lambda name: None)
    ok, reason = b.is_available()
    assert not ok and "mpi4py is not installed" in reason and "tensorplug[mpi]" in reason
    monkeypatch.undo()
    monkeypatch.delitem(sys.modules, "mpi4py.MPI", raising=False)
    monkeypatch.setattr(mod.importlib.util, "find_spec",
                        lambda name: types.SimpleNamespace(origin="/x/mpi4py/__init__.py"))
    monkeypatch.setattr(mod, "_mpi4py_needs_libmpi", lambda spec: True)
    monkeypatch.setattr(mod, "_find_libmpi", lambda: None)
    ok, reason = b.is_available()
    assert not ok and "no MPI library was found" in reason


def test_is_available_does_not_initialize_mpi():
    registry.communication["mpi"].is_available()
    assert "mpi4py.MPI" not in sys.modules or sys.modules["mpi4py.MPI"].Is_initialized() is False


def test_before_init():
    assert dist.is_available() and not dist.is_initialized()
    for fn in (dist.get_rank, dist.get_world_size, dist.barrier):
        with pytest.raises(RuntimeError, match="init_process_group"):
            fn()
    with pytest.raises(RuntimeError, match="init_process_group"):
        dist.all_reduce(torch.ones(1))


def test_reduce_op_names():
    assert dist.ReduceOp.SUM is dist.reduce_op.SUM
    assert [o.name for o in dist.ReduceOp] == ["SUM", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR", "AVG"]


def test_bucket_assignment():
    ps = [nn.Parameter(torch.zeros(n)) for n in (10, 10, 10, 30)] + [nn.Parameter(torch.zeros(5, dtype=torch.float64))]
    # reverse order, one dtype per bucket, 80 bytes (20 float32) at most unless one parameter is larger
    assert assign_buckets(ps, 80) == [[4], [3], [2, 1], [0]]
    assert assign_buckets(ps, 10 ** 6) == [[4], [3, 2, 1, 0]]


# -- an in-process backend registered like a third party's ---------------------------------------------
class _Group:
    rank, size, world = 0, 1, True


class _Done:
    source = 0

    def wait(self, timeout=None):
        return True

    def is_completed(self):
        return True


class LoopbackBackend(CommunicationBackend):
    """World size 1: every collective is the identity."""
    name = "loopback"

    def __init__(self, available=(True, "")):
        self.available = available
        self.calls = []

    def is_available(self):
        return self.available

    def init(self, world_size=-1, rank=-1):
        return _Group()

    def new_group(self, group, ranks):
        return _Group()

    def destroy(self, group):
        self.calls.append("destroy")

    def abort(self, code=1):
        raise AssertionError("abort")

    def all_reduce(self, array, op, group, async_op=False):
        self.calls.append(("all_reduce", op, array.shape))
        return _Done() if async_op else None

    def broadcast(self, array, src, group, async_op=False):
        self.calls.append(("broadcast", array.shape))
        return _Done() if async_op else None

    def all_gather(self, outs, array, group, async_op=False):
        np.copyto(outs[0], array)
        return _Done() if async_op else None

    def barrier(self, group, async_op=False):
        return _Done() if async_op else None


@pytest.fixture
def loopback():
    backend = LoopbackBackend()

    class Plugin:
        @hookimpl
        def tensorplug_register_backends(self, registry):
            registry.add_communication(backend)
    registry.register_plugin(Plugin(), name="loopback-plugin")
    yield backend
    if dist.is_initialized():
        dist.destroy_process_group()


def test_init_selects_the_backend_by_name(loopback):
    excepthook = sys.excepthook
    dist.init_process_group(backend="loopback", world_size=1, rank=0)
    assert dist.get_backend() == "loopback" and (dist.get_rank(), dist.get_world_size()) == (0, 1)
    assert sys.excepthook is excepthook            # one process: nothing to abort
    t = torch.arange(6.0).reshape(2, 3).t()        # non-contiguous
    dist.all_reduce(t, dist.ReduceOp.AVG)
    assert t.tolist() == [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]]
    w = dist.all_reduce(t, async_op=True)
    assert w.wait() and w.is_completed()
    outs = [torch.zeros(3)]
    dist.all_gather(outs, torch.tensor([1.0, 2.0, 3.0]))
    assert outs[0].tolist() == [1.0, 2.0, 3.0]
    with pytest.raises(ValueError, match="does not match the launcher"):
        _init_again("loopback", 2)
    dist.destroy_process_group()
    assert not dist.is_initialized() and "destroy" in loopback.calls


def _init_again(name, world_size):
    """init_process_group as if this process had none yet (the real one is put back)."""
    w = dist.process_group._state.world
    dist.process_group._state.world = None
    try:
        dist.init_process_group(backend=name, world_size=world_size)
    finally:
        dist.process_group._state.world = w


def test_unknown_and_unavailable_backends(loopback):
    with pytest.raises(ValueError, match=r"unknown communication backend 'nope'.*loopback.*mpi"):
        dist.init_process_group(backend="nope")
    loopback.available = (False, "the network is unplugged")
    with pytest.raises(RuntimeError, match="'loopback' is not available: the network is unplugged"):
        dist.init_process_group(backend="loopback")
    assert not dist.is_initialized()


def test_ddp_in_one_process_matches_plain_training(loopback):
    dist.init_process_group(backend="loopback")
    torch.manual_seed(0)
    ref = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))
    ddp = DDP(model, bucket_cap_mb=1e-5)
    assert len(ddp.reducer.buckets) == 4
    x, y = torch.randn(5, 3), torch.randn(5, 2)
    o1 = torch.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)
    o2 = torch.optim.SGD(ddp.parameters(), lr=0.1, momentum=0.9)
    for _ in range(3):
        for m, o in ((ref, o1), (ddp, o2)):
            o.zero_grad()
            ((m(x) - y) ** 2).mean().backward()
            o.step()
    for p, q in zip(ref.parameters(), model.parameters()):
        assert float((p - q).abs().max()) < 1e-6
    stats = ddp.comm_stats()
    assert stats["reductions"] == 3 and stats["buckets"] == 4
    assert stats["buckets_started_during_backward"] == 12     # every bucket, from the hooks
    n = len([c for c in loopback.calls if c[0] == "all_reduce"])
    with ddp.no_sync():
        ((ddp(x) - y) ** 2).mean().backward()
    assert len([c for c in loopback.calls if c[0] == "all_reduce"]) == n and ddp.comm_stats()["reductions"] == 3
    ((ddp(x) - y) ** 2).mean().backward()
    assert ddp.comm_stats()["reductions"] == 4
    assert list(ddp.state_dict())[0] == "module.0.weight"


def test_ddp_needs_an_initialized_group_and_parameters(loopback):
    with pytest.raises(RuntimeError, match="init_process_group"):
        DDP(nn.Linear(2, 2))
    dist.init_process_group(backend="loopback")
    with pytest.raises(RuntimeError, match="doesn't have any parameter"):
        DDP(nn.ReLU())
    with pytest.raises(ValueError, match="bucket_cap_mb"):
        DDP(nn.Linear(2, 2), bucket_cap_mb=0)


def test_ddp_recovers_from_a_backward_that_raised(loopback):
    dist.init_process_group(backend="loopback")
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))
    ddp = DDP(model, bucket_cap_mb=1e-5)
    x = torch.randn(5, 3, requires_grad=True)
    x.register_hook(lambda g: (_ for _ in ()).throw(ValueError("boom")))
    with pytest.raises(ValueError, match="boom"):
        ddp(x).sum().backward()                 # the last layer's buckets had started
    assert ddp.reducer._next > 0
    model.zero_grad()
    ddp(x.detach()).sum().backward()
    grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    model(x.detach()).sum().backward()
    assert all(float((g - p.grad).abs().max()) == 0 for g, p in zip(grads, model.parameters()))
    assert ddp.comm_stats()["reductions"] == 1
