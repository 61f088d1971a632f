"""The nccl communication backend's code through tensorplug.distributed, in a one-process job over
the NumPy-based CuPy stand-in and a one-rank NCCL stand-in (fake_nccl). Checks staging (non-contiguous
arrays, int16, bool), dtype and reduce-op mapping and errors; no NCCL and no GPU took part."""
import numpy as np
import pytest

import fake_nccl
import tensorplug as torch
import tensorplug.distributed as dist
from tensorplug.backends.cuda_backend.nccl import NcclBackend
from tensorplug.dispatch import hookimpl, registry


@pytest.fixture
def nccl_job(cuda_standin):
    """A one-process job on the "nccl_standin" backend (cuda tensors come from the stand-in)."""
    b = NcclBackend(modules=fake_nccl.modules)
    b.name = "nccl_standin"

    class Plugin:
        @hookimpl
        def tensorplug_register_backends(self, registry):
            registry.add_communication(b)
    registry.register_plugin(Plugin(), name="test-plugin-nccl-standin")
    fake_nccl.calls.clear()
    dist.init_process_group("nccl_standin")
    yield b
    if dist.is_initialized():
        dist.destroy_process_group()


def test_one_process_job(nccl_job):
    assert dist.get_rank() == 0 and dist.get_world_size() == 1 and dist.get_backend() == "nccl_standin"
    assert nccl_job.is_available() == (True, "") and nccl_job.version == "2.21.5"


def test_collectives_on_cuda_tensors(nccl_job):
    t = torch.arange(6.0, device="cuda").reshape(2, 3)
    dist.all_reduce(t)
    dist.broadcast(t, 0)
    dist.reduce(t, 0, op=dist.ReduceOp.MAX)
    assert t.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    outs = [torch.zeros(2, 3, device="cuda")]
    dist.all_gather(outs, t)
    assert outs[0].tolist() == t.tolist()
    g = [torch.zeros(2, 3, device="cuda")]
    dist.gather(t, g, dst=0)
    assert g[0].tolist() == t.tolist()
    s = torch.zeros(2, 3, device="cuda")
    dist.scatter(s, [t], src=0)
    assert s.tolist() == t.tolist()
    r = torch.zeros(2, 3, device="cuda")
    dist.reduce_scatter(r, [t])
    assert r.tolist() == t.tolist()
    work = dist.all_reduce(t, async_op=True)
    assert work.wait() and t.tolist()[1] == [3.0, 4.0, 5.0]
    dist.barrier()
    names = [c[0] for c in fake_nccl.calls]
    assert {"allReduce", "broadcast", "reduce", "allGather", "reduceScatter"} <= set(names)


def test_staging_keeps_values(nccl_job):
    """A non-contiguous tensor goes through a contiguous copy that is written back; int16 travels as
    int32; bool as uint8 with sum as max (logical or)."""
    base = torch.arange(12.0, device="cuda").reshape(3, 4)
    view = base[:, ::2]
    dist.all_reduce(view)
    assert base.tolist() == np.arange(12.0).reshape(3, 4).tolist()
    i16 = torch.tensor([1, -2, 300], dtype=torch.int16, device="cuda")
    dist.all_reduce(i16)
    assert i16.tolist() == [1, -2, 300] and fake_nccl.calls[-1] == ("allReduce", 3, fake_nccl.NCCL_INT32)
    b = torch.tensor([True, False], device="cuda")
    dist.all_reduce(b)
    assert b.tolist() == [True, False]
    assert ("op", fake_nccl.NCCL_MAX) in fake_nccl.calls


def test_errors(nccl_job):
    with pytest.raises(ValueError, match="not supported by NCCL"):
        dist.all_reduce(torch.tensor([1, 2], device="cuda"), op=dist.ReduceOp.BAND)
    with pytest.raises(TypeError, match="use the mpi backend for cpu tensors"):
        dist.all_reduce(torch.ones(2))
    with pytest.raises(ValueError, match="any source"):
        dist.recv(torch.ones(2, device="cuda"))


def test_the_stand_in_has_the_shape_of_cupy_nccl():
    """Every NCCL function, constant and communicator method the backend uses exists in the installed
    cupy.cuda.nccl with the stand-in's parameters (needs CuPy and the NCCL library, no GPU)."""
    import inspect
    import re
    from pathlib import Path

    from _real_cupy import real_cupy, unavailable
    real_cupy()
    try:
        from cupy.cuda import nccl
    except ImportError as e:
        unavailable(f"cupy.cuda.nccl does not import here: {e}")
    if not getattr(nccl, "available", False):
        unavailable("the NCCL library is not installed (pip install nvidia-nccl-cu13)")
    backend_source = Path(inspect.getsourcefile(NcclBackend)).read_text()
    used = set(re.findall(r"\bNCCL_[A-Z0-9]+\b", backend_source))
    assert used >= {"NCCL_SUM", "NCCL_FLOAT32"}
    missing = [n for n in sorted(used) + ["get_unique_id", "groupStart", "groupEnd", "get_version"]
               if not hasattr(nccl, n)]
    assert missing == []

    def arity(doc_line):        # "NcclCommunicator.send(self, intptr_t sendbuf, ...)" -> parameters after self
        params = doc_line[doc_line.index("(") + 1:doc_line.rindex(")")].split(",")
        return len([p for p in params if p.strip() and p.strip() != "self" and "=" not in p])
    for name, fn in vars(fake_nccl.NcclCommunicator).items():
        if name.startswith("_"):
            continue
        real = getattr(nccl.NcclCommunicator, name)
        assert arity(real.__doc__.strip().splitlines()[0]) == len(inspect.signature(fn).parameters) - 1, name
    assert arity(nccl.NcclCommunicator.__doc__.strip().splitlines()[0]) == len(
        inspect.signature(fake_nccl.NcclCommunicator.__init__).parameters) - 1
