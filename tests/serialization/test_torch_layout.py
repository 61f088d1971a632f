"""What tensorplug.save writes is PyTorch's format: the records, their order, contents and alignment,
the pickle's names, persistent ids and rebuild calls — checked against files PyTorch 2.13 wrote."""
import hashlib
import io
import pickle
import pickletools
import struct
import zipfile

import numpy as np
import pytest
from serialization_helpers import fixture_path

import tensorplug as tp
from tensorplug import nn
from tensorplug.serialization import load, save
from tensorplug.serialization.pickling import export_name, find_tensorplug


def records(data):
    z = zipfile.ZipFile(io.BytesIO(data))
    prefix = z.namelist()[0].split("/")[0]
    return {n[len(prefix) + 1:]: z.read(n) for n in z.namelist()}, z


def resave(name, **kw):
    buf = io.BytesIO()
    save(load(fixture_path(name)), buf, **kw)
    return buf.getvalue()


@pytest.mark.parametrize("name", ["cnn_state_dict", "adam_state"])
def test_resaved_pytorch_file_is_record_for_record_identical(name):
    """A state dict and an Adam state PyTorch wrote, loaded and saved again: every record (pickle and
    storages; all but the random serialization id) is byte-identical to PyTorch's, in PyTorch's order."""
    theirs, _ = records(open(fixture_path(name), "rb").read())
    ours, _ = records(resave(name))
    assert list(ours) == list(theirs)
    for rec in theirs:
        if rec != ".data/serialization_id":
            assert ours[rec] == theirs[rec], rec


class _Node:
    """What the skeleton unpickler builds for a call: the callable's name, args, state, items."""

    def __init__(self, name, args):
        self.name, self.args, self.state, self.items = name, args, None, []

    def __setstate__(self, state):
        self.state = state

    def __setitem__(self, k, v):
        self.items.append((k, v))

    def append(self, v):
        self.items.append(v)

    def key(self):
        return ("call", self.name, _key(self.args), _key(self.state), _key(self.items))


class _Global:
    def __init__(self, name):
        self.name = name

    def __call__(self, *args):
        return _Node(self.name, args)


def _key(o):
    if isinstance(o, _Node):
        return o.key()
    if isinstance(o, _Global):
        return ("global", o.name)
    if isinstance(o, (list, tuple)):
        return (type(o).__name__,) + tuple(_key(v) for v in o)
    if isinstance(o, dict):
        return ("dict",) + tuple((_key(k), _key(v)) for k, v in o.items())
    if isinstance(o, float) and o != o:
        return ("nan",)
    return o


def skeleton(pkl):
    """The pickle as a comparable structure: globals by name, calls with their arguments, persistent
    ids as tuples; memoisation does not show."""
    class U(pickle.Unpickler):
        def find_class(self, module, name):
            return _Global(f"{module}.{name}")

        def persistent_load(self, pid):
            return ("persistent",) + tuple(_key(v) for v in pid)
    return _key(U(io.BytesIO(pkl)).load())


@pytest.mark.parametrize("name", ["views", "dtypes", "misc", "protocol4"])
def test_pickle_and_storages_as_pytorch_writes_them(name):
    """Views sharing storage (offsets, strides), every dtype, containers, Size, device, dtypes, NumPy data:
    the same rebuild calls and persistent ids as PyTorch's file, and byte-identical storage records."""
    kw = {"pickle_protocol": 4} if name == "protocol4" else {}
    theirs, _ = records(open(fixture_path(name), "rb").read())
    ours, _ = records(resave(name, **kw))
    assert skeleton(ours["data.pkl"]) == skeleton(theirs["data.pkl"])
    assert sorted(ours) == sorted(theirs)
    for rec in theirs:
        if rec.startswith("data/"):
            assert ours[rec] == theirs[rec], rec


def test_records_and_alignment():
    base = tp.arange(10.0)
    data = io.BytesIO()
    save({"a": base, "b": base[3:], "c": tp.ones(3, dtype=tp.int8), "d": tp.zeros(2, 2, dtype=tp.float64)}, data)
    recs, z = records(data.getvalue())
    assert list(recs) == ["data.pkl", ".format_version", ".storage_alignment", "byteorder", "data/0", "data/1",
                          "data/2", "version", ".data/serialization_id"]
    assert recs[".format_version"] == b"1" and recs[".storage_alignment"] == b"64" and recs["version"] == b"3\n"
    assert recs["byteorder"] == b"little" and len(recs[".data/serialization_id"]) == 40
    assert recs[".data/serialization_id"].isdigit()
    assert recs["data/0"] == np.arange(10, dtype=np.float32).tobytes()
    raw = data.getvalue()
    for info in z.infolist():
        assert info.compress_type == zipfile.ZIP_STORED
        name_len, extra_len = struct.unpack_from("<2H", raw, info.header_offset + 26)
        start = info.header_offset + 30 + name_len + extra_len
        assert start % 64 == 0, info.filename                  # PyTorch's alignment (mmap-able)
    assert z.testzip() is None


def test_integrity_comment():
    data = io.BytesIO()
    save({"w": tp.ones(3)}, data)
    raw = data.getvalue()
    comment = zipfile.ZipFile(io.BytesIO(raw)).comment
    assert comment.startswith(b"tensorplug-sha256:")
    assert comment[len(b"tensorplug-sha256:"):].decode() == hashlib.sha256(raw[:-len(comment)]).hexdigest()


def test_zip64_records(monkeypatch):
    """Sizes and offsets past 4 GiB use ZIP64 fields (the limit is lowered here to exercise them)."""
    from tensorplug.serialization import zip_archive
    monkeypatch.setattr(zip_archive, "_ZIP64_LIMIT", 16)
    data = io.BytesIO()
    obj = {"w": tp.arange(40.0), "n": list(range(5))}
    save(obj, data)
    raw = data.getvalue()
    assert b"PK\x06\x06" in raw and b"PK\x06\x07" in raw
    assert zipfile.ZipFile(io.BytesIO(raw)).testzip() is None
    assert any(i.file_size >= 16 for i in zipfile.ZipFile(io.BytesIO(raw)).infolist())
    out = load(io.BytesIO(raw))
    assert out["w"].tolist() == list(map(float, range(40))) and out["n"] == list(range(5))


def _globals(data):
    recs, _ = records(data)
    return {arg.replace(" ", ".") for op, arg, _ in pickletools.genops(recs["data.pkl"]) if op.name == "GLOBAL"}


def test_whole_model_names_pytorch_paths():
    model = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2), nn.InstanceNorm2d(2), nn.Flatten(),
                          nn.Unflatten(1, (2, 2)), nn.Fold((4, 4), 2), nn.Unfold(2), nn.ChannelShuffle(2),
                          nn.TransformerEncoderLayer(4, 2, 8), nn.LSTM(2, 3), nn.Embedding(3, 2))
    buf = io.BytesIO()
    save(model, buf)
    names = _globals(buf.getvalue())
    assert {"torch.nn.modules.container.Sequential", "torch.nn.modules.conv.Conv2d",
            "torch.nn.modules.batchnorm.BatchNorm2d", "torch.nn.modules.instancenorm.InstanceNorm2d",
            "torch.nn.modules.flatten.Flatten", "torch.nn.modules.flatten.Unflatten", "torch.nn.modules.fold.Fold",
            "torch.nn.modules.fold.Unfold", "torch.nn.modules.channelshuffle.ChannelShuffle",
            "torch.nn.modules.transformer.TransformerEncoderLayer",
            "torch.nn.modules.activation.MultiheadAttention",
            "torch.nn.modules.linear.NonDynamicallyQuantizableLinear", "torch.nn.functional.relu",
            "torch.nn.modules.rnn.LSTM", "torch.nn.modules.sparse.Embedding", "torch._utils._rebuild_parameter",
            "torch._utils._rebuild_tensor_v2", "torch.FloatStorage", "collections.OrderedDict"} <= names
    assert not [n for n in names if n.startswith("tensorplug")]


# PyTorch's torch/nn/modules file names
_TORCH_FILES = {"activation", "adaptive", "batchnorm", "channelshuffle", "container", "conv", "distance", "dropout",
                "flatten", "fold", "instancenorm", "lazy", "linear", "loss", "module", "normalization", "padding",
                "pixelshuffle", "pooling", "rnn", "sparse", "transformer", "upsampling", "utils"}


def test_every_layer_pickles_under_a_pytorch_module_path():
    classes = [getattr(nn, n) for n in dir(nn) if isinstance(getattr(nn, n), type) and
               issubclass(getattr(nn, n), nn.Module)]
    assert len(classes) > 100
    for cls in classes:
        module, name = export_name(cls, cls.__module__, cls.__qualname__)
        if cls is nn.DataParallel:                 # PyTorch's torch/nn/parallel/data_parallel.py
            assert module == "torch.nn.parallel.data_parallel", module
        else:
            assert module.startswith("torch.nn.modules.") and module.rsplit(".", 1)[1] in _TORCH_FILES, (cls, module)
        assert find_tensorplug(module, name) is cls                 # and reads back as itself
    where = {nn.BatchNorm1d: "batchnorm", nn.Flatten: "flatten", nn.Fold: "fold", nn.ChannelShuffle: "channelshuffle",
             nn.InstanceNorm3d: "instancenorm", nn.MultiheadAttention: "activation", nn.LSTM: "rnn",
             nn.Embedding: "sparse", nn.TransformerDecoder: "transformer", nn.LayerNorm: "normalization"}
    for cls, file in where.items():
        assert export_name(cls, cls.__module__, cls.__qualname__) == (f"torch.nn.modules.{file}", cls.__name__)


def test_top_level_names():
    buf = io.BytesIO()
    save([tp.float32, tp.bool, tp.bfloat16, tp.complex128, tp.Size([1]), tp.device("cpu"), tp.add, tp.relu,
          tp.nn.functional.gelu], buf)
    assert _globals(buf.getvalue()) == {"torch.float32", "torch.bool", "torch.bfloat16", "torch.complex128",
                                        "torch.Size", "torch.device", "torch.add", "torch.relu",
                                        "torch.nn.functional.gelu"}


def test_tensorplug_only_objects_keep_their_names():
    from tensorplug.backends.numpy_backend import NumpyBackend
    buf = io.BytesIO()
    save(NumpyBackend, buf)
    assert _globals(buf.getvalue()) == {f"{NumpyBackend.__module__}.NumpyBackend"}
    assert load(io.BytesIO(buf.getvalue()), weights_only=False) is NumpyBackend
