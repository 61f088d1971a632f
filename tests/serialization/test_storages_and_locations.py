"""Storages at the file boundary (torch.FloatStorage ..., what map_location callables receive) and where
loaded tensors go: saved locations, PyTorch's error for CUDA storages on a machine without CUDA, and
names PyTorch admits that tensorplug cannot represent."""
import io
import pickle

import numpy as np
import pytest
from serialization_helpers import zip_checkpoint

import tensorplug as tp
from tensorplug.serialization import CheckpointError, load, save


def test_legacy_storage_classes():
    s = tp.FloatStorage([1, 2, 3])
    assert s.dtype is tp.float32 and s.size() == len(s) == 3 and s.tolist() == [1.0, 2.0, 3.0]
    assert tp.FloatStorage.dtype is tp.float32 and tp.BFloat16Storage.dtype is tp.bfloat16
    assert tp.LongStorage(2).tolist() == [0, 0] and tp.LongStorage(2).element_size() == 8
    assert tp.UntypedStorage(b"ab").nbytes() == 2 and s.untyped().nbytes() == 12
    assert tp.FloatStorage.__module__ == "tensorplug" and tp.storage.TypedStorage.__module__ == "tensorplug.storage"
    with pytest.raises(RuntimeError, match="qint8"):
        tp.QInt8Storage.dtype


def test_saving_a_storage():
    s = tp.DoubleStorage([0.5, 1.5])
    out = load(_saved(s))
    assert type(out) is tp.DoubleStorage and out.tolist() == [0.5, 1.5]


def _saved(obj, **kw):
    buf = io.BytesIO()
    save(obj, buf, **kw)
    buf.seek(0)
    return buf


def _with_location(location):
    """A checkpoint of one tensor whose storage says it was saved on `location`."""
    pkl = _saved(tp.arange(3.0))
    import zipfile
    z = zipfile.ZipFile(pkl)
    data = z.read("archive/data.pkl").replace(b"X\x03\x00\x00\x00cpu", b"X" + len(location).to_bytes(4, "little")
                                                 + location.encode())
    return zip_checkpoint(data, [("0", z.read("archive/data/0"))])


def test_cuda_storage_without_cuda_has_pytorchs_message():
    with pytest.raises(RuntimeError, match=r"Attempting to deserialize object on a CUDA device but "
                                           r"torch.cuda.is_available\(\) is False"):
        load(_with_location("cuda:0"))
    assert load(_with_location("cuda:0"), map_location="cpu").tolist() == [0.0, 1.0, 2.0]
    assert load(_with_location("cuda:0"), map_location={"cuda:0": "cpu"}).device == tp.device("cpu")
    seen = []
    assert load(_with_location("cuda:0"), map_location=lambda s, loc: seen.append(loc) or s.cpu()).tolist() == \
        [0.0, 1.0, 2.0]
    assert seen == ["cuda:0"]


def test_unknown_device_type():
    with pytest.raises(RuntimeError, match="map_location"):
        load(_with_location("xla:3"))


def test_pytorch_dtypes_tensorplug_lacks():
    with pytest.raises(CheckpointError, match="uses torch.uint16, which tensorplug does not have"):
        load(zip_checkpoint(b"\x80\x02ctorch\nuint16\n."))
    with pytest.raises(CheckpointError, match="needs torch.uint16"):
        load(zip_checkpoint(b"\x80\x02ctorch\nuint16\n."), weights_only=False)
    with pytest.raises(CheckpointError, match="needs torch.nn.modules.adaptive.AdaptiveLogSoftmaxWithLoss"):
        load(zip_checkpoint(b"\x80\x02ctorch.nn.modules.adaptive\nAdaptiveLogSoftmaxWithLoss\n."),
             weights_only=False)


def test_default_load_endianness():
    from tensorplug.serialization import LoadEndianness, get_default_load_endianness, set_default_load_endianness
    assert get_default_load_endianness() is None
    buf = _saved({"w": tp.tensor([1, 256], dtype=tp.int32)}, _disable_byteorder_record=True)
    import zipfile
    assert not [n for n in zipfile.ZipFile(buf).namelist() if n.endswith("byteorder")]
    try:
        set_default_load_endianness(LoadEndianness.BIG)        # a file without byteorder record: read as big
        assert load(io.BytesIO(buf.getvalue()))["w"].tolist() == [2 ** 24, 2 ** 16]
    finally:
        set_default_load_endianness(None)
    assert load(io.BytesIO(buf.getvalue()))["w"].tolist() == [1, 256]
    with pytest.raises(TypeError):
        set_default_load_endianness("big")


def test_big_endian_file():
    """A file whose byteorder record says big: every dtype is byte-swapped on load."""
    import zipfile
    src = _saved({"i": tp.tensor([1, -2], dtype=tp.int64), "f": tp.tensor([1.5], dtype=tp.float16),
                  "c": tp.tensor([1 + 2j], dtype=tp.complex64), "b": tp.tensor([1.0, -2.0], dtype=tp.bfloat16),
                  "o": tp.tensor([True])})
    z = zipfile.ZipFile(src)
    recs = [(n.split("/data/")[1], z.read(n)) for n in z.namelist() if "/data/" in n]
    sizes = {"0": 8, "1": 2, "2": 4, "3": 2, "4": 1}        # element (or complex part) sizes, in save order
    swapped = [(k, np.frombuffer(v, f"u{sizes[k]}").byteswap().tobytes()) for k, v in recs]
    buf = io.BytesIO()
    from tensorplug.serialization.zip_archive import ZipWriter
    w = ZipWriter(buf)
    w.add("archive/data.pkl", z.read("archive/data.pkl"))
    w.add("archive/byteorder", b"big")
    for k, v in swapped:
        w.add(f"archive/data/{k}", v)
    w.close()
    out = load(io.BytesIO(buf.getvalue()))
    assert out["i"].tolist() == [1, -2] and out["f"].tolist() == [1.5] and out["c"].tolist() == [1 + 2j]
    assert out["b"].tolist() == [1.0, -2.0] and out["o"].tolist() == [True]


def test_bool_bytes_normalised():
    """Bytes other than 0 and 1 in a bool storage load as True (as 1)."""
    pkl = _saved(tp.tensor([True, False, True]))
    import zipfile
    z = zipfile.ZipFile(pkl)
    out = load(zip_checkpoint(z.read("archive/data.pkl"), [("0", b"\x07\x00\xff")]))
    assert out.tolist() == [True, False, True] and out._data.view(np.uint8).tolist() == [1, 0, 1]


def test_refused_global_is_unpickling_error_not_checkpoint_error():
    with pytest.raises(pickle.UnpicklingError):
        load(zip_checkpoint(b"\x80\x02cbuiltins\neval\n."))
