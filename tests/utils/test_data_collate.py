"""default_collate and default_convert (outputs checked against PyTorch 2.x by hand)."""
import collections

import numpy as np
import pytest

import tensorplug as tp
from tensorplug.utils.data import default_collate, default_convert


def test_numbers():
    out = default_collate([(1, 2.0), (3, 4.0)])
    assert isinstance(out, list)                       # tuples collate to a list, like PyTorch
    assert out[0].dtype == tp.int64 and out[0].tolist() == [1, 3]
    assert out[1].dtype == tp.float64 and out[1].tolist() == [2.0, 4.0]
    b = default_collate([True, False])
    assert b.dtype == tp.bool and b.tolist() == [True, False]


def test_tensors_stack():
    out = default_collate([tp.ones(2, 3), tp.zeros(2, 3)])
    assert out.shape == (2, 2, 3) and out[0].sum().item() == 6
    with pytest.raises(RuntimeError, match="stack expects each tensor to be equal size"):
        default_collate([tp.zeros(2), tp.zeros(3)])


def test_numpy():
    out = default_collate([np.arange(3), np.arange(3) + 1])
    assert out.dtype == tp.int64 and out.tolist() == [[0, 1, 2], [1, 2, 3]]
    s = default_collate([np.float32(1), np.float32(2)])
    assert s.dtype == tp.float32 and s.tolist() == [1.0, 2.0]
    with pytest.raises(TypeError, match="default_collate: batch must contain"):
        default_collate([np.array(["a"])])
    with pytest.raises(RuntimeError, match="equal size"):
        default_collate([np.zeros(2), np.zeros(3)])


def test_nested_dicts_lists_and_strings():
    out = default_collate([{"a": 1, "b": [1, 2], "s": "x"}, {"a": 2, "b": [3, 4], "s": "y"}])
    assert out["a"].tolist() == [1, 2]
    assert [t.tolist() for t in out["b"]] == [[1, 3], [2, 4]]
    assert out["s"] == ["x", "y"]
    od = default_collate([collections.OrderedDict(a=1)])
    assert isinstance(od, collections.OrderedDict) and od["a"].tolist() == [1]
    nested = default_collate([((tp.tensor([1.0]), {"k": (5, 6)}),), ((tp.tensor([2.0]), {"k": (7, 8)}),)])
    (t, d), = nested
    assert t.tolist() == [[1.0], [2.0]]
    assert [x.tolist() for x in d["k"]] == [[5, 7], [6, 8]]


def test_namedtuple():
    P = collections.namedtuple("P", "x y")
    out = default_collate([P(1, 2), P(3, 4)])
    assert isinstance(out, P) and out.x.tolist() == [1, 3] and out.y.tolist() == [2, 4]


def test_errors():
    with pytest.raises(TypeError, match="found <class 'NoneType'>"):
        default_collate([None, None])
    with pytest.raises(RuntimeError, match="each element in list of batch should be of equal size"):
        default_collate([[1, 2], [1]])


def test_default_convert():
    out = default_convert([np.arange(3), (np.float64(2),), "s", 4])
    assert out[0].tolist() == [0, 1, 2] and out[0].dtype == tp.int64
    assert isinstance(out[1], list) and out[1][0].dtype == tp.float64 and out[1][0].item() == 2.0
    assert out[2] == "s" and out[3] == 4
    d = default_convert({"a": np.ones(2, dtype=np.float32)})
    assert d["a"].dtype == tp.float32
    t = tp.ones(2)
    assert default_convert(t) is t
