"""Tensors through queues arrive as views of the sender's shared memory (fork and spawn), with their
metadata, and leave no shared-memory segment behind."""
import gc
import os

import numpy as np
import pytest

import tensorplug as tp
import tensorplug.multiprocessing as mp
from tensorplug import nn

pytestmark = pytest.mark.timeout(60)


def _echo_and_write(inq, outq):
    """Child: write into what arrives, report its metadata, send back a new tensor, wait for 'done'."""
    x, view, p, s = inq.get()
    x.data.add_(1)
    p.data.mul_(2)
    outq.put(dict(dtype=str(x.dtype), shape=tuple(x.shape), stride=x.stride(), offset=x.storage_offset(),
                  rg=x.requires_grad, shared=x.is_shared(), same_block=view.untyped_storage().data_ptr()
                  == x.untyped_storage().data_ptr(), ptype=type(p).__name__, prg=p.requires_grad,
                  grad=p.grad.tolist(), storage=s.tolist()))
    y = tp.full((3,), 7.)                    # not shared: moved into shared memory when sent
    outq.put(y)
    inq.get()                                # the sender must live until its tensors are received
    y.fill_(9.)
    outq.put("written")
    inq.get()


def _segments():
    """(names in /dev/shm, mappings of anonymous segments) that are tensorplug's."""
    names = sorted(n for n in os.listdir("/dev/shm") if n.startswith("tensorplug_"))
    with open("/proc/self/maps") as f:
        maps = sum("memfd:tensorplug" in line or "/dev/shm/tensorplug_" in line for line in f)
    return names, maps


# (a spawn child starts with the default strategy, as in PyTorch: file_system is checked with fork)
@pytest.mark.parametrize("method,strategy", [("fork", "file_descriptor"), ("spawn", "file_descriptor"),
                                             ("fork", "file_system")])
def test_round_trip_shares_memory(method, strategy):
    gc.collect()
    before = _segments()
    mp.set_sharing_strategy(strategy)
    try:
        ctx = mp.get_context(method)
        inq, outq = ctx.Queue(), ctx.Queue()
        proc = ctx.Process(target=_echo_and_write, args=(inq, outq))
        proc.start()
        base = tp.zeros(4, 6, dtype=tp.float64).share_memory_()
        x = base[1:, ::2].requires_grad_()                   # strided, offset, a leaf requiring grad
        view = base[1:]                                      # another view of the same block
        p = nn.Parameter(tp.ones(3))
        p.grad = tp.tensor([1., 2., 3.])
        s = tp.FloatStorage([4, 5])
        inq.put((x, view, p, s))
        meta = outq.get(timeout=30)
        y = outq.get(timeout=30)
        assert meta == dict(dtype="tensorplug.float64", shape=(3, 3), stride=(6, 2), offset=6, rg=True, shared=True,
                            same_block=True, ptype="Parameter", prg=True, grad=[1., 2., 3.], storage=[4., 5.])
        assert p.is_shared() and s.is_shared()       # moved into shared memory by sending them
        np.testing.assert_array_equal(x.detach().numpy(), np.ones((3, 3)))     # the child's writes
        np.testing.assert_array_equal(view.numpy()[:, 1::2], np.zeros((3, 3)))
        np.testing.assert_array_equal(p.detach().numpy(), [2., 2., 2.])
        assert y.is_shared() and y.tolist() == [7., 7., 7.]
        inq.put("go")
        assert outq.get(timeout=30) == "written"
        assert y.tolist() == [9., 9., 9.]            # written by the child after it was sent
        inq.put("exit")
        proc.join(30)
        assert proc.exitcode == 0
        del x, view, p, s, y, base, meta
    finally:
        mp.set_sharing_strategy("file_descriptor")
    gc.collect()
    assert _segments() == before


def test_non_leaf_requiring_grad_is_refused():
    from multiprocessing.reduction import ForkingPickler
    y = tp.ones(2, requires_grad=True) * 2
    with pytest.raises(RuntimeError, match="non-leaf tensor which requires_grad"):
        ForkingPickler.dumps(y)
    assert len(ForkingPickler.dumps(y.detach())) < 400      # a handle, not the data


def _square_into(args):
    t, i = args
    t[i] = t[i] * t[i]
    return i


def test_pool_workers_write_into_a_shared_tensor():
    t = tp.arange(6.).share_memory_()
    with mp.get_context("fork").Pool(2) as pool:
        assert sorted(pool.map(_square_into, [(t, i) for i in range(6)])) == list(range(6))
    np.testing.assert_array_equal(t.numpy(), np.arange(6.) ** 2)
