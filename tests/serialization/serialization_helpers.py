"""Helpers of the serialization tests: the fixtures PyTorch 2.13 wrote (fixtures/make_fixtures.py), the
comparison of a loaded object with the expectations the script recorded next to each file, and a
builder of zip checkpoints around a given pickle."""
from __future__ import annotations

import json
import math
import os
from collections import Counter, OrderedDict

import numpy as np

import tensorplug as tp

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures")


def zip_checkpoint(pkl, storages=(), name="archive"):
    """A zip checkpoint holding the pickle bytes `pkl` and storage records [(key, bytes)], with valid
    CRCs: what a test feeds in reaches the unpickler."""
    import io
    from tensorplug.serialization.zip_archive import ZipWriter
    buf = io.BytesIO()
    w = ZipWriter(buf)
    w.add(f"{name}/data.pkl", pkl)
    for key, data in storages:
        w.add(f"{name}/data/{key}", data)
    w.add(f"{name}/version", b"3\n")
    w.close()
    buf.seek(0)
    return buf


def fixture_path(name):
    return os.path.join(FIXTURES, f"{name}.pt")


def expectations(name):
    with open(os.path.join(FIXTURES, f"{name}.json")) as f:
        meta = json.load(f)
    return meta, dict(np.load(os.path.join(FIXTURES, f"{name}.npz")))


def host(t):
    """t's values as NumPy (bfloat16 as its 16-bit patterns, as the fixtures store them)."""
    a = np.array(t.detach()._host(), order="C")
    return a.view(np.uint16) if t.dtype is tp.bfloat16 else a


class Checker:
    """Compares a loaded object with a fixture's JSON structure and arrays, exactly."""

    def __init__(self, meta, arrays):
        self.meta, self.arrays, self.seen, self.groups = meta, arrays, {}, {}

    def tensor(self, t, key):
        e = self.meta["tensors"][key]
        assert isinstance(t, tp.Tensor), (e["path"], type(t))
        if key in self.seen:
            assert t is self.seen[key], f"{e['path']}: saved as one tensor, loaded as two"
            return
        self.seen[key] = t
        assert type(t).__name__ == e["class"], (e["path"], type(t))
        assert t.dtype.name == e["dtype"] and list(t.shape) == e["shape"], (e["path"], t.dtype, t.shape)
        assert list(t.stride()) == e["stride"], (e["path"], t.stride(), e["stride"])
        assert t.requires_grad == e["requires_grad"], e["path"]
        ref = self.arrays[key]
        got = host(t)
        assert got.dtype == ref.dtype and got.shape == ref.shape, (e["path"], got.dtype, ref.dtype)
        assert np.array_equal(got, ref, equal_nan=got.dtype.kind in "fc"), e["path"]
        if got.dtype.kind in "fc":
            assert np.array_equal(np.signbit(got.real), np.signbit(ref.real)), e["path"]
        self.groups.setdefault(e["storage_group"], []).append(t)

    def check_sharing(self):
        """Tensors of one storage share memory after loading; tensors of different storages do not."""
        reps = []
        for group, ts in self.groups.items():
            ts = [t for t in ts if t.numel()]
            for t in ts[1:]:
                assert np.shares_memory(t._data, ts[0]._data), f"storage group {group} lost its sharing"
            if ts:
                reps.append(ts[0])
        for i, a in enumerate(reps):
            for b in reps[i + 1:]:
                assert not np.shares_memory(a._data, b._data)

    def __call__(self, obj, node):
        t = node["t"]
        if t == "tensor":
            return self.tensor(obj, node["id"])
        if t == "none":
            assert obj is None
        elif t == "bool":
            assert obj is node["v"]
        elif t == "int":
            assert type(obj) is int and obj == int(node["v"])
        elif t == "float":
            ref = float(node["v"])
            assert type(obj) is float and (obj == ref or math.isnan(obj) and math.isnan(ref))
        elif t == "complex":
            assert type(obj) is complex and obj == complex(float(node["v"][0]), float(node["v"][1]))
        elif t == "str":
            assert obj == node["v"] and type(obj) is str
        elif t in ("bytes", "bytearray"):
            assert type(obj).__name__ == t and bytes(obj).hex() == node["v"]
        elif t == "size":
            assert type(obj) is tp.Size and list(obj) == node["v"]
        elif t == "device":
            assert type(obj) is tp.device and str(obj) == node["v"]
        elif t == "dtype":
            assert obj is getattr(tp, node["v"])
        elif t == "ndarray":
            assert type(obj) is np.ndarray and str(obj.dtype) == node["dtype"]
            assert np.array_equal(obj, self.arrays[node["id"]])
        elif t == "npscalar":
            assert isinstance(obj, np.generic) and str(obj.dtype) == node["dtype"] and repr(obj.item()) == node["v"]
        elif t in ("list", "tuple"):
            assert type(obj).__name__ == t and len(obj) == len(node["items"])
            for o, n in zip(obj, node["items"]):
                self(o, n)
        elif t in ("set", "frozenset"):
            assert type(obj).__name__ == t and len(obj) == len(node["items"])
            for o, n in zip(sorted(obj, key=repr), node["items"]):
                self(o, n)
        elif t in ("dict", "odict", "counter", "defaultdict"):
            cls = {"dict": dict, "odict": OrderedDict, "counter": Counter}.get(t)
            if cls is not None:
                assert type(obj) is cls, (t, type(obj))
            assert len(obj) == len(node["items"])
            for (k, v), (nk, nv) in zip(obj.items(), node["items"]):
                self(k, nk)
                self(v, nv)
        else:
            raise AssertionError(f"unknown node {t}")


def check_fixture(obj, name, node=None):
    """Assert that obj equals what fixture `name` recorded (its root, or meta[node])."""
    meta, arrays = expectations(name)
    c = Checker(meta, arrays)
    c(obj, meta["root"] if node is None else meta[node])
    c.check_sharing()
    return c

