"""save / load: a data-only checkpoint format (never unpickles), atomic writes, map_location, and
clear errors for truncated, corrupted, foreign and pickle files."""
import io
import os
import pickle
import subprocess
import sys
import textwrap
from collections import OrderedDict

import numpy as np
import pytest

import tensorplug as tp
import tensorplug.serialization as ser
from tensorplug.serialization import CheckpointError, load, save

ALL_DTYPES = [tp.float16, tp.float32, tp.float64, tp.int8, tp.int16, tp.int32, tp.int64, tp.uint8, tp.bool]


def roundtrip(obj, **load_kw):
    buf = io.BytesIO()
    save(obj, buf)
    buf.seek(0)
    return load(buf, **load_kw)


def same(a, b):
    assert type(a) is type(b)
    assert a.dtype == b.dtype and tuple(a.shape) == tuple(b.shape) and a.device == b.device
    assert np.array_equal(a.detach()._host(), b.detach()._host(), equal_nan=True)


@pytest.mark.parametrize("dt", ALL_DTYPES, ids=lambda d: d.name)
def test_roundtrip_every_dtype(dt, tmp_path):
    rng = np.random.default_rng(0)
    if dt is tp.bool:
        host = rng.random((3, 4)) > 0.5
    elif dt.is_floating_point:
        host = rng.standard_normal((3, 4)).astype(dt.name)
        host[0, 0], host[0, 1], host[0, 2] = np.nan, np.inf, -0.0
    else:
        info = np.iinfo(dt.name)
        host = rng.integers(info.min, info.max, (3, 4), endpoint=True, dtype=dt.name)
        host[0, 0], host[0, 1] = info.min, info.max
    t = tp.from_numpy(host)
    path = tmp_path / "t.tpl"
    save(t, path)
    r = load(path)
    same(t, r)
    assert np.array_equal(np.signbit(r._host()), np.signbit(host)) if dt.is_floating_point else True


def test_roundtrip_0d_empty_and_non_contiguous():
    base = tp.arange(24, dtype=tp.float32).reshape(2, 3, 4)
    objs = [tp.tensor(3.5), tp.tensor(7), tp.zeros(0), tp.zeros(2, 0, 3, dtype=tp.int16),
            base.transpose(0, 2), base[:, 1], base[..., ::2], base.permute(2, 0, 1)[1:]]
    out = roundtrip(objs)
    assert isinstance(out, list) and len(out) == len(objs)
    for a, b in zip(objs, out):
        same(a, b)
    assert out[0].ndim == 0 and out[0].item() == 3.5


def test_roundtrip_nested_state_dict():
    state = OrderedDict([("layer.weight", tp.randn(4, 3)), ("layer.bias", tp.zeros(4)),
                         ("bn.num_batches_tracked", tp.tensor(5))])
    ckpt = {"model": state,
            "optimizer": {"state": {0: {"step": tp.tensor(3.0), "exp_avg": tp.ones(4, 3)}},
                          "param_groups": [{"lr": 1e-3, "betas": (0.9, 0.999), "params": [0, 1],
                                            "amsgrad": False, "foreach": None}]},
            "epoch": 7, "loss": float("nan"), "big": 2**80, "name": "run-1 ✓", "raw": b"\x00\xff",
            "flags": {True: "yes", 3: [None, (1, [2.5])]}, "shape": tp.Size([2, 3]),
            "dtype": tp.float16, "device": tp.device("cpu")}
    out = roundtrip(ckpt)
    assert type(out["model"]) is OrderedDict and list(out["model"]) == list(state)
    for k in state:
        same(state[k], out["model"][k])
    opt = out["optimizer"]
    assert list(opt["state"]) == [0] and type(list(opt["state"])[0]) is int
    same(opt["state"][0]["exp_avg"], ckpt["optimizer"]["state"][0]["exp_avg"])
    assert opt["param_groups"] == [{"lr": 1e-3, "betas": (0.9, 0.999), "params": [0, 1], "amsgrad": False,
                                     "foreach": None}]
    assert out["epoch"] == 7 and out["big"] == 2**80 and np.isnan(out["loss"])
    assert out["name"] == "run-1 ✓" and out["raw"] == b"\x00\xff"
    assert out["flags"] == {True: "yes", 3: [None, (1, [2.5])]}
    assert type(out["shape"]) is tp.Size and out["shape"] == (2, 3)
    assert out["dtype"] is tp.float16 and out["device"] == tp.device("cpu")


def test_parameters_and_requires_grad():
    from tensorplug.nn import Parameter
    p = Parameter(tp.randn(3, 2))
    frozen = Parameter(tp.ones(2), requires_grad=False)
    leaf = tp.randn(2, requires_grad=True)
    out = roundtrip({"p": p, "frozen": frozen, "leaf": leaf, "plain": tp.ones(1)})
    assert type(out["p"]) is Parameter and out["p"].requires_grad and out["p"].is_leaf
    same(p, out["p"])
    assert type(out["frozen"]) is Parameter and not out["frozen"].requires_grad
    assert type(out["leaf"]) is tp.Tensor and out["leaf"].requires_grad and out["leaf"].is_leaf
    assert not out["plain"].requires_grad


def test_shared_tensor_saved_once():
    t = tp.arange(1000)
    buf = io.BytesIO()
    save({"a": t, "b": t, "c": [t]}, buf)
    assert len(buf.getvalue()) < 8000 + 1000                        # one copy of the 8000 data bytes
    buf.seek(0)
    out = load(buf)
    assert out["a"] is out["b"] is out["c"][0]
    out["a"][0] = 5                                                  # loaded tensors are writable
    assert out["b"][0].item() == 5


def test_model_state_dict_roundtrip(tmp_path):
    nn = tp.nn
    model = nn.Linear(3, 2)
    save(model.state_dict(), tmp_path / "m.tpl")
    other = nn.Linear(3, 2)
    other.load_state_dict(load(tmp_path / "m.tpl"))
    for (k, a), (_, b) in zip(model.state_dict().items(), other.state_dict().items()):
        same(a.detach(), b.detach())


@pytest.mark.parametrize("bad,name", [(object(), "object"), (np.zeros(2), "ndarray"), ({1.5: 1}, "float"),
                                      ({(1, 2): 1}, "tuple"), ([{1, 2}], "set"), (np.float32(1), "float32"),
                                      (lambda: 0, "function")])
def test_unsupported_types_raise_type_error(bad, name):
    with pytest.raises(TypeError, match=name):
        save(bad, io.BytesIO())


def test_reference_cycle_rejected():
    a = []
    a.append(a)
    with pytest.raises(ValueError, match="cycle"):
        save(a, io.BytesIO())


def test_path_and_file_object_and_str(tmp_path):
    t = tp.arange(5)
    save(t, str(tmp_path / "a.tpl"))
    with open(tmp_path / "b.tpl", "wb") as fh:
        save(t, fh)
    assert (tmp_path / "a.tpl").read_bytes() == (tmp_path / "b.tpl").read_bytes()
    with open(tmp_path / "b.tpl", "rb") as fh:
        same(load(fh), t)
    same(load(str(tmp_path / "a.tpl")), t)
    assert sorted(os.listdir(tmp_path)) == ["a.tpl", "b.tpl"]          # no temporary files left


# -- map_location -----------------------------------------------------------------------------------------
@pytest.fixture
def fake_cuda(add_backend):
    """A second device type served by NumPy kernels, with two devices (cuda:0, cuda:1)."""
    return add_backend("fakecuda", device_type="cuda", count=2, priority=100, indexed=True)


def test_map_location(fake_cuda):
    obj = {"a": tp.arange(3).to("cuda:1"), "b": tp.ones(2), "c": tp.zeros(1).to("cuda:0")}
    assert obj["a"].device == tp.device("cuda", 1)
    out = roundtrip(obj)                                               # saved devices
    assert [str(out[k].device) for k in "abc"] == ["cuda:1", "cpu", "cuda:0"]
    same(out["a"], obj["a"])
    out = roundtrip(obj, map_location="cpu")
    assert {str(v.device) for v in out.values()} == {"cpu"}
    assert out["a"].tolist() == [0, 1, 2]
    out = roundtrip(obj, map_location=tp.device("cuda", 0))
    assert {str(v.device) for v in out.values()} == {"cuda:0"}
    out = roundtrip(obj, map_location={"cuda:1": "cuda:0", "cpu": "cuda:1"})
    assert [str(out[k].device) for k in "abc"] == ["cuda:0", "cuda:1", "cuda:0"]
    seen = []
    out = roundtrip(obj, map_location=lambda t, loc: seen.append(loc) or (t if loc == "cuda:1" else None))
    assert sorted(seen) == ["cpu", "cuda:0", "cuda:1"]
    assert [str(out[k].device) for k in "abc"] == ["cpu", "cpu", "cuda:0"]


def test_missing_device_error_suggests_map_location(fake_cuda, tmp_path):
    save({"w": tp.ones(2).to("cuda:1")}, tmp_path / "g.tpl")
    with pytest.raises(RuntimeError, match="map_location"):
        load(tmp_path / "g.tpl", map_location="cuda:7")
    assert load(tmp_path / "g.tpl", map_location="cpu")["w"].device == tp.device("cpu")


# -- refusing pickles and foreign files -------------------------------------------------------------------
class _Payload:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        # what a malicious checkpoint does: unpickling runs code (here: creates a marker file)
        return (open, (self.marker, "w"))


@pytest.mark.parametrize("protocol", [0, 2, pickle.HIGHEST_PROTOCOL])
def test_pickle_file_refused_without_running_it(tmp_path, protocol):
    marker = tmp_path / "pwned"
    path = tmp_path / "evil.pt"
    path.write_bytes(pickle.dumps({"w": _Payload(str(marker))}, protocol=protocol))
    with pytest.raises(CheckpointError, match="looks like a pickle file; tensorplug.load never unpickles"):
        load(path)
    with pytest.raises(RuntimeError, match="pickle"):
        load(io.BytesIO(path.read_bytes()), weights_only=False)
    assert not marker.exists()


def test_torch_zip_checkpoint_refused(tmp_path):
    import zipfile
    path = tmp_path / "torch.pt"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("archive/data.pkl", pickle.dumps({"a": 1}))
    with pytest.raises(CheckpointError, match="zip archive.*never unpickles"):
        load(path)


@pytest.mark.parametrize("content", [b"", b"hello world, not a checkpoint", b"TPLG"])
def test_unknown_or_tiny_files(tmp_path, content):
    path = tmp_path / "x.bin"
    path.write_bytes(content)
    with pytest.raises(CheckpointError, match="not a tensorplug checkpoint|empty|truncated"):
        load(path)


def test_pickle_module_arguments_rejected():
    with pytest.raises(ValueError, match="never"):
        save(1, io.BytesIO(), pickle_module=pickle)
    with pytest.raises(ValueError, match="never"):
        load(io.BytesIO(), pickle_module=pickle)


# -- corruption -------------------------------------------------------------------------------------------
@pytest.fixture
def good_file(tmp_path):
    path = tmp_path / "good.tpl"
    save({"w": tp.randn(50, 20), "b": tp.arange(7), "meta": {"epoch": 3}}, path)
    return path


def test_truncated_files_fail_clearly(good_file, tmp_path):
    data = good_file.read_bytes()
    for cut in sorted({1, 8, 20, 31, 100, len(data) // 2, len(data) - 41, len(data) - 8, len(data) - 1}):
        p = tmp_path / f"cut{cut}.tpl"
        p.write_bytes(data[:cut])
        with pytest.raises(CheckpointError, match="truncated|corrupted"):
            load(p)


def test_bit_flips_fail_clearly(good_file, tmp_path):
    data = good_file.read_bytes()
    rng = np.random.default_rng(0)
    positions = sorted(set(rng.integers(0, len(data), 60).tolist()) | {0, 8, 12, 16, 24, 40, 100,
                                                                      len(data) - 1, len(data) - 20})
    for pos in positions:
        flipped = bytearray(data)
        flipped[pos] ^= 1 << int(rng.integers(0, 8))
        with pytest.raises(CheckpointError):
            load(io.BytesIO(bytes(flipped)))


def test_extra_trailing_bytes_fail(good_file):
    with pytest.raises(CheckpointError):
        load(io.BytesIO(good_file.read_bytes() + b"junk"))


def test_forged_header_is_validated(tmp_path):
    """A file with a correct checksum but a hostile header still fails with CheckpointError."""
    import hashlib
    import json
    import struct

    def forge(header_obj, payload=b""):
        header = json.dumps(header_obj).encode()
        body = struct.pack("<8sIIQQ", b"TPLGCKPT", 1, 0, len(header), len(payload)) + header + payload
        return io.BytesIO(body + hashlib.sha256(body).digest() + b"TPLGEND\0")

    base = {"format": "tensorplug.save", "version": 1}
    entry = {"dtype": "float32", "shape": [2], "device": "cpu", "offset": 0, "nbytes": 8, "crc32": 0,
             "requires_grad": False, "kind": "tensor"}
    bad = [
        {**base, "root": {"t": "pickle", "v": "cos\nsystem\n"}, "tensors": []},
        {**base, "root": {"t": "tensor", "id": 3}, "tensors": []},
        {**base, "root": {"t": "tensor", "id": 0}, "tensors": [{**entry, "dtype": "object"}]},
        {**base, "root": {"t": "tensor", "id": 0}, "tensors": [{**entry, "nbytes": 4}]},
        {**base, "root": {"t": "tensor", "id": 0}, "tensors": [{**entry, "offset": 4}]},
        {**base, "root": {"t": "tensor", "id": 0}, "tensors": [entry]},         # CRC mismatch
        {**base, "root": {"t": "dict", "items": [[{"t": "list", "items": []}, {"t": "none"}]]}, "tensors": []},
        {**base, "root": {"t": "int", "v": "__import__('os')"}, "tensors": []},
        {**base, "tensors": []},
        {"format": "other", "version": 1, "root": {"t": "none"}, "tensors": []},
    ]
    for h in bad:
        with pytest.raises(CheckpointError):
            load(forge(h, b"\x01" * 8))
    ok = forge({**base, "root": {"t": "none"}, "tensors": []})
    assert load(ok) is None


def test_newer_version_reported(tmp_path):
    import hashlib
    import struct
    body = struct.pack("<8sIIQQ", b"TPLGCKPT", 99, 0, 2, 0) + b"{}"
    with pytest.raises(CheckpointError, match="version 99"):
        load(io.BytesIO(body + hashlib.sha256(body).digest() + b"TPLGEND\0"))


# -- atomic writes ----------------------------------------------------------------------------------------
def test_failed_write_keeps_old_checkpoint(good_file, monkeypatch):
    old = good_file.read_bytes()
    real = ser._write_payload

    def crash_half_way(f, chunks):
        chunks = list(chunks)
        f.write(chunks[0][:50])
        raise OSError("disk full (simulated)")

    monkeypatch.setattr(ser, "_write_payload", crash_half_way)
    with pytest.raises(OSError, match="simulated"):
        save({"w": tp.zeros(1000)}, good_file)
    assert good_file.read_bytes() == old
    assert os.listdir(good_file.parent) == [good_file.name]          # the temporary file is removed
    monkeypatch.setattr(ser, "_write_payload", real)
    assert load(good_file)["meta"] == {"epoch": 3}


def test_killed_process_mid_write_keeps_old_checkpoint(good_file):
    """A process that dies mid-write (no cleanup at all) leaves the old file intact."""
    old = good_file.read_bytes()
    script = textwrap.dedent(f"""
        import os, tensorplug.serialization as ser, tensorplug as tp
        def die(f, chunks):
            f.write(next(iter(chunks))[:64]); f.flush(); os._exit(9)
        ser._write_payload = die
        ser.save({{"w": tp.zeros(10)}}, {str(good_file)!r})
    """)
    r = subprocess.run([sys.executable, "-c", script], timeout=60)
    assert r.returncode == 9
    assert good_file.read_bytes() == old
    assert load(good_file)["meta"] == {"epoch": 3}


def test_save_replaces_existing_file(good_file):
    save([1, 2, 3], good_file)
    assert load(good_file) == [1, 2, 3]


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions and symlinks")
def test_overwrite_keeps_mode_and_symlink(tmp_path):
    target = tmp_path / "real.tpl"
    save(1, target)
    os.chmod(target, 0o600)
    link = tmp_path / "link.tpl"
    link.symlink_to(target)
    save(2, link)
    assert link.is_symlink() and load(link) == 2 and load(target) == 2
    assert (target.stat().st_mode & 0o777) == 0o600
