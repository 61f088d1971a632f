"""The memory-level APIs interchange libraries use (safetensors, ctypes users): torch.frombuffer,
Tensor.view(dtype), data_ptr / untyped_storage / storage / nbytes / layout, UntypedStorage slicing and
from_file, torch.asarray(storage). Values are checked against NumPy's own views of the same bytes."""
import ctypes

import numpy as np
import pytest

import tensorplug as tp


# -- frombuffer -----------------------------------------------------------------------------------
def test_frombuffer_shares_a_writable_buffer():
    """A bytearray's bytes are the tensor's: writes go both ways."""
    buf = bytearray(np.array([1.0, 2.0, 3.0], np.float32).tobytes())
    t = tp.frombuffer(buf, dtype=tp.float32)
    np.testing.assert_array_equal(t.numpy(), [1.0, 2.0, 3.0])
    t[0] = 5.0
    assert np.frombuffer(buf, np.float32)[0] == 5.0
    buf[4:8] = np.float32(7.0).tobytes()
    assert t[1].item() == 7.0


def test_frombuffer_count_offset_and_dtypes():
    """count and offset select elements as NumPy's frombuffer does, for every dtype."""
    raw = bytes(range(64))
    for dt in (tp.uint8, tp.int8, tp.int16, tp.int32, tp.int64, tp.float16, tp.float32, tp.float64, tp.bool):
        ref = np.frombuffer(raw, dt.name, 3, 8)
        got = tp.frombuffer(raw, dtype=dt, count=3, offset=8)
        assert got.dtype is dt
        np.testing.assert_array_equal(got.numpy(), ref)
    bf = tp.frombuffer(np.array([1.0, -2.5], np.float32).astype(tp.dtypes.numpy_bfloat16()).tobytes(),
                       dtype=tp.bfloat16)
    np.testing.assert_array_equal(bf.float().numpy(), [1.0, -2.5])


def test_frombuffer_read_only_buffer_is_copied():
    """bytes are read-only: the tensor gets a copy it can write."""
    raw = np.array([1, 2], np.int32).tobytes()
    t = tp.frombuffer(raw, dtype=tp.int32, requires_grad=False)
    t += 1
    np.testing.assert_array_equal(t.numpy(), [2, 3])
    assert raw == np.array([1, 2], np.int32).tobytes()


def test_frombuffer_requires_grad():
    t = tp.frombuffer(bytearray(8), dtype=tp.float32, requires_grad=True)
    assert t.requires_grad and t.is_leaf


@pytest.mark.parametrize("kwargs,msg", [
    (dict(dtype=tp.float32, count=5), r"requested buffer length \(5 \* 4 bytes\) after offset \(0 bytes\) must not "
                                      r"be greater than actual buffer length \(8 bytes\)"),
    (dict(dtype=tp.float32, offset=9), r"offset \(9 bytes\) must be non-negative and no greater than buffer length "
                                       r"\(8 bytes\) minus 1"),
    (dict(dtype=tp.int64, offset=1), r"buffer length \(7 bytes\) after offset \(1 bytes\) must be a multiple of "
                                     r"element size \(8\)"),
    (dict(dtype=tp.float32, count=0), r"both buffer length \(8\) and count \(0\) must not be 0"),
])
def test_frombuffer_bad_arguments(kwargs, msg):
    """PyTorch's ValueErrors and messages."""
    with pytest.raises(ValueError, match=msg):
        tp.frombuffer(bytearray(8), **kwargs)


def test_frombuffer_not_a_buffer():
    with pytest.raises(ValueError, match="does not implement Python buffer protocol"):
        tp.frombuffer([1, 2], dtype=tp.float32)
    with pytest.raises(TypeError, match="argument 'dtype' must be"):
        tp.frombuffer(bytearray(8), dtype="float32")


# -- view(dtype) ----------------------------------------------------------------------------------
@pytest.mark.parametrize("src,dst", [("float32", "int32"), ("float32", "uint8"), ("float32", "int16"),
                                     ("uint8", "float32"), ("int64", "float64"), ("int16", "float16"),
                                     ("float64", "int8"), ("uint8", "bool"), ("int32", "float64")])
def test_view_dtype_reinterprets_bytes(src, dst):
    """The same bits as NumPy's .view, sharing memory with the source."""
    a = (np.arange(48) * 37 % 251).astype(np.uint8).view(src).reshape(2, -1).copy()
    if src == "uint8" and dst == "bool":
        a = (a % 2).astype(np.uint8)
    t = tp.from_numpy(a.copy())
    v = t.view(getattr(tp, dst))
    assert v.dtype is getattr(tp, dst)
    np.testing.assert_array_equal(v.numpy().view(np.uint8), a.view(dst).view(np.uint8))
    assert v.shape == a.view(dst).shape
    assert v.data_ptr() == t.data_ptr()


def test_view_dtype_keyword_bfloat16_and_writes():
    """view(dtype=...) (as safetensors calls it), bfloat16, and writes through the view."""
    t = tp.tensor([1.0, -2.0], dtype=tp.bfloat16)
    bits = t.view(dtype=tp.int16)
    np.testing.assert_array_equal(bits.numpy(), np.array([1.0, -2.0], np.float32).view(np.int32) >> 16)
    u = tp.zeros(4, dtype=tp.uint8)
    u.view(tp.float32).fill_(1.0)
    np.testing.assert_array_equal(u.numpy(), np.frombuffer(np.float32(1.0).tobytes(), np.uint8))


def test_view_dtype_not_differentiable():
    x = tp.ones(4, requires_grad=True)
    v = x.view(tp.int32)
    assert not v.requires_grad and v.grad_fn is None
    np.testing.assert_array_equal(v.numpy(), np.ones(4, np.float32).view(np.int32))


@pytest.mark.parametrize("make,dt,msg", [
    (lambda: tp.arange(6.0).reshape(2, 3), tp.float64,
     r"self.size\(-1\) must be divisible by 2 to view Float as Double \(different element sizes\), but got 3"),
    (lambda: tp.arange(6.0).reshape(3, 2).t(), tp.int16,
     r"self.stride\(-1\) must be 1 to view Float as Short \(different element sizes\), but got 2"),
    (lambda: tp.tensor(5.0), tp.int16, r"self.dim\(\) cannot be 0 to view Float as Short \(different element sizes\)"),
])
def test_view_dtype_errors(make, dt, msg):
    """PyTorch's RuntimeErrors for layouts that cannot be reinterpreted."""
    with pytest.raises(RuntimeError, match=msg):
        make().view(dt)


def test_view_dtype_0d_same_size():
    np.testing.assert_array_equal(tp.tensor(5.0).view(tp.int32).numpy(), np.float32(5.0).view(np.int32))


# -- data_ptr, storages, layout -------------------------------------------------------------------
def test_data_ptr_and_untyped_storage_of_views():
    """Views share one storage (same data_ptr and nbytes); data_ptr moves by the byte offset; a
    clone has a storage of its own."""
    x = tp.arange(12.0).reshape(3, 4)
    s = x.untyped_storage()
    assert s.nbytes() == 48 and s.data_ptr() == x.data_ptr()
    for v in (x[1:], x[:, 2], x.t(), x.reshape(-1)[3:7]):
        assert v.untyped_storage().data_ptr() == s.data_ptr()
        assert v.untyped_storage().nbytes() == 48
    assert x[1:, 1].data_ptr() - x.data_ptr() == 5 * 4
    assert x.clone().untyped_storage().data_ptr() != s.data_ptr()
    assert ctypes.c_float.from_address(x[2, 3].data_ptr()).value == 11.0


def test_untyped_storage_shares_bytes():
    """Writing the storage's bytes changes the tensor."""
    x = tp.zeros(2, dtype=tp.int32)
    s = x.untyped_storage()
    s[4] = 7
    np.testing.assert_array_equal(x.numpy(), [0, 7])
    assert s.tolist()[:4] == [0, 0, 0, 0] and s[4] == 7 and len(s) == 8


def test_empty_tensor_has_null_pointer():
    assert tp.empty(0).data_ptr() == 0 and tp.empty(0).untyped_storage().data_ptr() == 0
    assert tp.empty(0).untyped_storage().nbytes() == 0


def test_typed_storage_warns_and_has_the_dtype():
    x = tp.arange(4, dtype=tp.int64)
    with pytest.warns(UserWarning, match="TypedStorage is deprecated"):
        s = x.storage()
    assert s.dtype is tp.int64 and s.size() == 4 and s.tolist() == [0, 1, 2, 3]
    assert s.data_ptr() == x.data_ptr()


def test_layout_and_nbytes():
    x = tp.ones(3, 5, dtype=tp.float64)
    assert x.layout is tp.strided and x.layout != tp.sparse_coo and isinstance(tp.strided, tp.layout)
    assert repr(tp.strided) == "tensorplug.strided"
    assert x.nbytes == 120 and x[:, 1].nbytes == 24


# -- UntypedStorage: slices, from_file, asarray ---------------------------------------------------
def test_untyped_storage_slices_share_memory():
    s = tp.UntypedStorage(bytes(range(10)))
    v = s[2:5]
    assert v.nbytes() == 3 and v.tolist() == [2, 3, 4] and v.data_ptr() - s.data_ptr() == 2
    v[0] = 99
    assert s[2] == 99 and s[-1] == 9
    with pytest.raises(RuntimeError, match="Trying to slice with a step of 2, but only a step of 1 is supported"):
        s[0:4:2]
    with pytest.raises(IndexError, match="index 10 out of range for storage of size 10"):
        s[10]
    assert s.untyped() is s


def test_from_file_private_and_shared(tmp_path):
    """shared=False maps copy-on-write (the file is unchanged); shared=True writes through."""
    p = tmp_path / "f.bin"
    p.write_bytes(bytes(range(16)))
    s = tp.UntypedStorage.from_file(str(p), shared=False, nbytes=16)
    assert s.tolist() == list(range(16))
    s[0] = 200
    assert p.read_bytes()[0] == 0
    w = tp.UntypedStorage.from_file(str(p), shared=True, nbytes=16)
    w[1] = 77
    del w
    assert p.read_bytes()[1] == 77
    q = tmp_path / "new.bin"
    assert tp.UntypedStorage.from_file(str(q), shared=True, nbytes=8).nbytes() == 8 and q.stat().st_size == 8
    assert tp.UntypedStorage.from_file(str(p), shared=False).nbytes() == 0


def test_from_file_errors(tmp_path):
    p = tmp_path / "f.bin"
    p.write_bytes(bytes(10))
    with pytest.raises(RuntimeError, match=r"size <10> is smaller than the required mapping size <20>"):
        tp.UntypedStorage.from_file(str(p), shared=False, nbytes=20)
    with pytest.raises(RuntimeError, match="unable to open file .* in read-only mode"):
        tp.UntypedStorage.from_file(str(tmp_path / "missing.bin"), shared=False, nbytes=4)


def test_asarray_of_a_storage():
    """torch.asarray(storage, dtype=...) views the storage's bytes (int64 when no dtype is given)."""
    raw = np.arange(4, dtype=np.float32).tobytes()
    s = tp.UntypedStorage(raw)
    f = tp.asarray(s, dtype=tp.float32)
    np.testing.assert_array_equal(f.numpy(), [0.0, 1.0, 2.0, 3.0])
    f[0] = 9.0
    assert np.frombuffer(bytes(s.tolist()), np.float32)[0] == 9.0
    u = tp.asarray(s[4:8], dtype=tp.uint8)
    np.testing.assert_array_equal(u.numpy(), np.frombuffer(np.float32(1.0).tobytes(), np.uint8))
    np.testing.assert_array_equal(tp.asarray(s).numpy(), np.frombuffer(bytes(s.tolist()), np.int64))
    assert tp.asarray(s, dtype=tp.float32, copy=True).data_ptr() != s.data_ptr()
    with pytest.raises(RuntimeError, match="not a whole number of float64 elements"):
        tp.asarray(s[0:12], dtype=tp.float64)


def test_asarray_keywords_for_other_objects():
    a = np.arange(3.0)
    t = tp.asarray(a)
    t[0] = 5.0
    assert a[0] == 5.0
    c = tp.asarray(a, copy=True, requires_grad=True)
    assert c.requires_grad and c.data_ptr() != t.data_ptr()
    np.testing.assert_array_equal(tp.asarray([1, 2], dtype=tp.float64).numpy(), [1.0, 2.0])
