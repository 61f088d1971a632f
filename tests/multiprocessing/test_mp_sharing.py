"""Tensor.share_memory_ / is_shared, storages, Module.share_memory, the sharing strategies, the API."""
import multiprocessing
import subprocess
import sys

import numpy as np
import pytest

import tensorplug as tp
import tensorplug.multiprocessing as mp
from tensorplug import nn


def test_reexports_the_standard_module():
    """Everything of multiprocessing is there, as the very same objects."""
    for name in multiprocessing.__all__:
        assert getattr(mp, name) is getattr(multiprocessing, name), name
    for name in ("spawn", "start_processes", "ProcessContext", "SpawnContext", "ProcessRaisedException",
                 "ProcessExitedException", "get_sharing_strategy", "set_sharing_strategy",
                 "get_all_sharing_strategies"):
        assert name in mp.__all__


def test_sharing_strategies():
    """file_descriptor by default on Linux; both settable; a bad name is an AssertionError naming it."""
    assert mp.get_all_sharing_strategies() == {"file_descriptor", "file_system"}
    assert mp.get_sharing_strategy() == "file_descriptor"
    try:
        mp.set_sharing_strategy("file_system")
        assert mp.get_sharing_strategy() == "file_system"
        t = tp.arange(4.).share_memory_()
        assert t.is_shared() and t.tolist() == [0., 1., 2., 3.]
    finally:
        mp.set_sharing_strategy("file_descriptor")
    with pytest.raises(AssertionError, match="invalid sharing strategy 'bogus'"):
        mp.set_sharing_strategy("bogus")


def _values(t):
    return (t.to(tp.complex128) if t.is_complex() else t.to(tp.float64)).numpy()


@pytest.mark.parametrize("dtype", [tp.float32, tp.float64, tp.int64, tp.bool, tp.bfloat16, tp.complex64])
def test_share_memory_keeps_values_and_layout(dtype):
    """The data moves, values and strides stay; a no-op the second time."""
    ref = np.arange(24).reshape(4, 6) % 3
    t = tp.tensor(ref).to(dtype).t()
    assert not t.is_shared()
    stride, before = t.stride(), _values(t)
    assert t.share_memory_() is t
    assert t.is_shared() and t.stride() == stride
    np.testing.assert_array_equal(_values(t), before)
    ptr = t.data_ptr()
    t.share_memory_()
    assert t.data_ptr() == ptr


def test_share_memory_of_a_view_moves_its_base():
    """A view keeps its offset and strides; its base moves with it and still aliases it."""
    base = tp.arange(12.)
    v = base[2:].reshape(2, 5)[:, 1:4]
    off, stride = v.storage_offset(), v.stride()
    v.share_memory_()
    assert v.is_shared() and base.is_shared()
    assert (v.storage_offset(), v.stride()) == (off, stride)
    v[0, 0] = 100.
    assert base[3].item() == 100.
    w = v[1:]                                  # views made afterwards are shared too
    assert w.is_shared() and w.untyped_storage().is_shared()


def test_empty_and_zero_dim():
    a, b = tp.zeros(0, 3).share_memory_(), tp.tensor(5.).share_memory_()
    assert a.is_shared() and a.shape == (0, 3)
    assert b.is_shared() and b.item() == 5.


def test_storage_share_memory():
    s = tp.FloatStorage([1, 2, 3])
    assert not s.is_shared()
    assert s.share_memory_() is s and s.is_shared() and s.tolist() == [1., 2., 3.]


def test_module_share_memory():
    """Parameters (and existing grads) and buffers move; the Parameter objects stay the same."""
    m = nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2))
    m(tp.randn(4, 3)).sum().backward()
    params = list(m.parameters())
    values = [p.detach().numpy().copy() for p in params]
    assert m.share_memory() is m
    assert list(m.parameters()) == params
    for p, v in zip(params, values):
        assert p.is_shared() and p.grad.is_shared() and p.requires_grad
        np.testing.assert_array_equal(p.detach().numpy(), v)
    assert all(b.is_shared() for b in m.buffers())


def test_cuda_rule():
    """CUDA tensors: share_memory_ is a no-op and is_shared() is True (PyTorch's rule)."""
    if not tp.cuda.is_available():
        pytest.skip("no CUDA device")
    t = tp.ones(3, device="cuda")
    assert t.share_memory_() is t and t.is_shared()


def test_import_stays_lean():
    """import tensorplug does not load tensorplug.multiprocessing."""
    code = "import sys, tensorplug; print('tensorplug.multiprocessing' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "False", out.stderr
