"""The legacy format (torch.save(..., _use_new_zipfile_serialization=False)): tensorplug writes it and
reads it, with storages shared between views, and several objects written one after another in one
file load one after another, as in PyTorch."""
import io
import pickle

import numpy as np
from serialization_helpers import fixture_path

import tensorplug as tp
from tensorplug.serialization import load, save


def test_round_trip_with_views_parameters_and_containers():
    base = tp.arange(12.0).reshape(3, 4)
    obj = {"base": base, "t": base.t(), "row": base[2], "p": tp.nn.Parameter(tp.ones(2)),
           "i": tp.tensor([1, -2], dtype=tp.int16), "meta": {"epoch": 5, "size": tp.Size([3])}}
    buf = io.BytesIO()
    save(obj, buf, _use_new_zipfile_serialization=False)
    raw = buf.getvalue()
    assert pickle.loads(raw) == 0x1950a86a20f9469cfc6c       # the stream starts with PyTorch's magic number
    out = load(io.BytesIO(raw))
    assert out["t"].stride() == (1, 4) and out["row"].tolist() == [8.0, 9.0, 10.0, 11.0]
    assert np.shares_memory(out["t"]._data, out["base"]._data) and np.shares_memory(out["row"]._data,
                                                                                      out["base"]._data)
    assert type(out["p"]) is tp.nn.Parameter and out["p"].requires_grad
    assert out["i"].dtype is tp.int16 and out["meta"] == {"epoch": 5, "size": (3,)}


def test_objects_one_after_another_in_one_file():
    buf = io.BytesIO()
    save({"a": tp.ones(2)}, buf, _use_new_zipfile_serialization=False)
    save([tp.zeros(3, dtype=tp.int64)], buf, _use_new_zipfile_serialization=False)
    buf.seek(0)
    first = load(buf)
    second = load(buf)
    assert first["a"].tolist() == [1.0, 1.0] and second[0].tolist() == [0, 0, 0]


def test_pytorch_legacy_file_resaved_in_both_formats():
    obj = load(fixture_path("legacy"))
    for zip_format in (True, False):
        buf = io.BytesIO()
        save(obj, buf, _use_new_zipfile_serialization=zip_format)
        again = load(io.BytesIO(buf.getvalue()))
        assert again["w"].tolist() == obj["w"].tolist() and again["meta"] == obj["meta"]
        assert np.shares_memory(again["row"]._data, again["w"]._data)
