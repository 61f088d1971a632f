"""save / load through the public API: round trips of tensors, containers and state dicts in PyTorch's
format, map_location, mmap, paths and file objects, atomic writes, and clear errors for truncated,
corrupted and foreign files. (tests/serialization/ checks the format against files PyTorch wrote, the
weights-only unpickler, hostile files and whole objects.)"""
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
from tensorplug.serialization import CheckpointError, load, save

ALL_DTYPES = [tp.float16, tp.float32, tp.float64, tp.int8, tp.int16, tp.int32, tp.int64, tp.uint8, tp.bool,
              tp.bfloat16, tp.complex64, tp.complex128]


def roundtrip(obj, **load_kw):
    buf = io.BytesIO()
    save(obj, buf)
    buf.seek(0)
    return load(buf, **load_kw)


def same(a, b):
    assert type(a) is type(b)
    assert a.dtype == b.dtype and tuple(a.shape) == tuple(b.shape) and a.device == b.device
    ha, hb = a.detach()._host(), b.detach()._host()
    if a.dtype is tp.bfloat16:
        ha, hb = ha.view(np.uint16), hb.view(np.uint16)        # bit patterns (NaN payloads included)
    assert np.array_equal(ha, hb, equal_nan=ha.dtype.kind in "fc")


@pytest.mark.parametrize("dt", ALL_DTYPES, ids=lambda d: d.name)
def test_roundtrip_every_dtype(dt, tmp_path):
    rng = np.random.default_rng(0)
    if dt is tp.bool:
        host = rng.random((3, 4)) > 0.5
    elif dt is tp.bfloat16:
        host = rng.standard_normal((3, 4)).astype(tp.dtypes.numpy_bfloat16())
        host[0, 0], host[0, 1], host[0, 2] = np.nan, np.inf, -0.0
    elif dt.is_complex:
        host = (rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))).astype(dt.name)
        host[0, 0], host[0, 1] = complex(np.nan, 1), complex(-0.0, np.inf)
    elif dt.is_floating_point:
        host = rng.standard_normal((3, 4)).astype(dt.name)
        host[0, 0], host[0, 1], host[0, 2] = np.nan, np.inf, -0.0
    else:
        info = np.iinfo(dt.name)
        host = rng.integers(info.min, info.max, (3, 4), endpoint=True, dtype=dt.name)
        host[0, 0], host[0, 1] = info.min, info.max
    t = tp.from_numpy(host) if dt is not tp.bfloat16 else tp.tensor(host.astype(np.float32), dtype=tp.bfloat16)
    path = tmp_path / "t.pt"
    save(t, path)
    r = load(path)
    same(t, r)
    assert r.stride() == (4, 1) and r._data.flags.writeable
    if dt.is_floating_point:
        assert np.array_equal(np.signbit(r._host().astype(np.float32)), np.signbit(host.astype(np.float32)))


def test_roundtrip_0d_empty_and_non_contiguous():
    base = tp.arange(24, dtype=tp.float32).reshape(2, 3, 4)
    objs = [tp.tensor(3.5), tp.tensor(7), tp.zeros(0), tp.zeros(2, 0, 3, dtype=tp.int16),
            base.transpose(0, 2), base[:, 1], base[..., ::2], base.permute(2, 0, 1)[1:], tp.ones(3).expand(2, 3)]
    out = roundtrip(objs)
    assert isinstance(out, list) and len(out) == len(objs)
    for a, b in zip(objs, out):
        same(a, b)
        assert a.stride() == b.stride() or not a.numel()              # strides are kept, as PyTorch
    assert out[0].ndim == 0 and out[0].item() == 3.5


def test_views_keep_sharing_storage():
    base = tp.arange(12.0).reshape(3, 4)
    out = roundtrip({"base": base, "t": base.t(), "row": base[1], "cols": base[:, 1::2], "other": tp.ones(2)})
    assert [out[k].storage_offset() if k == "base" else out[k].stride() for k in ("base", "t", "cols")] == \
        [0, (1, 4), (4, 2)]
    for k in ("t", "row", "cols"):
        assert np.shares_memory(out[k]._data, out["base"]._data)
    assert not np.shares_memory(out["other"]._data, out["base"]._data)
    out["base"][1, 1] = -5.0                                          # a write through one is seen by all
    assert out["row"][1].item() == -5.0 and out["t"][1, 1].item() == -5.0 and out["cols"][1, 0].item() == -5.0


def test_shared_storage_written_once():
    base = tp.arange(1000, dtype=tp.float64)
    buf = io.BytesIO()
    save([base[:10], base[500:], base], buf)
    import zipfile
    z = zipfile.ZipFile(io.BytesIO(buf.getvalue()))
    assert [i.file_size for i in z.infolist() if "/data/" in i.filename] == [8000]


def test_roundtrip_nested_state_dict():
    state = OrderedDict([("layer.weight", tp.randn(4, 3)), ("layer.bias", tp.zeros(4)),
                         ("bn.num_batches_tracked", tp.tensor(5))])
    ckpt = {"model": state,
            "optimizer": {"state": {0: {"step": tp.tensor(3.0), "exp_avg": tp.ones(4, 3)}},
                          "param_groups": [{"lr": 1e-3, "betas": (0.9, 0.999), "params": [0, 1],
                                            "amsgrad": False, "foreach": None}]},
            "epoch": 7, "loss": float("nan"), "big": 2**80, "name": "run-1 ✓", "raw": b"\x00\xff",
            "flags": {True: "yes", 3: [None, (1, [2.5])]}, "shape": tp.Size([2, 3]),
            "dtype": tp.float16, "device": tp.device("cpu"), "set": {1, 2}, "complex": 1 - 2j,
            "array": np.arange(4, dtype=np.int16), "np_scalar": np.float32(1.5)}
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
    assert out["set"] == {1, 2} and out["complex"] == 1 - 2j
    assert out["array"].dtype == np.int16 and out["array"].tolist() == [0, 1, 2, 3]
    assert type(out["np_scalar"]) is np.float32 and out["np_scalar"] == 1.5


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
    nonleaf = leaf * 2                                                  # saved as a leaf that requires grad
    r = roundtrip(nonleaf)
    assert r.requires_grad and r.is_leaf and r.tolist() == nonleaf.tolist()


def test_buffer_and_tensor_attributes():
    from tensorplug.nn import Buffer
    t = tp.ones(2)
    t.note = "calibrated"
    b = Buffer(tp.zeros(3), persistent=False)
    out = roundtrip({"t": t, "b": b})
    assert out["t"].note == "calibrated" and type(out["t"]) is tp.Tensor
    assert type(out["b"]) is Buffer and out["b"].__dict__["persistent"] is False


def test_shared_tensor_saved_once():
    t = tp.arange(1000)
    buf = io.BytesIO()
    save({"a": t, "b": t, "c": [t]}, buf)
    assert len(buf.getvalue()) < 8000 + 2000                        # one copy of the 8000 data bytes
    buf.seek(0)
    out = load(buf)
    assert out["a"] is out["b"] is out["c"][0]
    out["a"][0] = 5                                                  # loaded tensors are writable
    assert out["b"][0].item() == 5


def test_model_state_dict_roundtrip(tmp_path):
    nn = tp.nn
    model = nn.Linear(3, 2)
    save(model.state_dict(), tmp_path / "m.pt")
    other = nn.Linear(3, 2)
    other.load_state_dict(load(tmp_path / "m.pt"))
    for (k, a), (_, b) in zip(model.state_dict().items(), other.state_dict().items()):
        same(a.detach(), b.detach())


def test_objects_pickle_can_not_save_raise():
    with pytest.raises(pickle.PicklingError):
        save(lambda: 0, io.BytesIO())


def test_reference_cycle_round_trips():
    a = [1]
    a.append(a)
    out = roundtrip(a)
    assert out[0] == 1 and out[1] is out


def test_path_and_file_object_and_str(tmp_path):
    import pathlib
    import zipfile
    t = tp.arange(5)
    save(t, str(tmp_path / "a.pt"))
    save(t, pathlib.Path(tmp_path / "c.pt"))
    with open(tmp_path / "b.pt", "wb") as fh:
        save(t, fh)
    assert (tmp_path / "a.pt").read_bytes() != (tmp_path / "c.pt").read_bytes()      # archive names a/ and c/
    assert zipfile.ZipFile(tmp_path / "a.pt").namelist()[0] == "a/data.pkl"
    assert zipfile.ZipFile(tmp_path / "b.pt").namelist()[0] == "archive/data.pkl"    # as PyTorch
    with open(tmp_path / "b.pt", "rb") as fh:
        same(load(fh), t)
    same(load(str(tmp_path / "a.pt")), t)
    same(load(tmp_path / "c.pt"), t)
    assert sorted(os.listdir(tmp_path)) == ["a.pt", "b.pt", "c.pt"]                  # no temporary files left


def test_equal_objects_give_equal_files():
    a, b = io.BytesIO(), io.BytesIO()
    save({"w": tp.arange(6.0)}, a)
    save({"w": tp.arange(6.0)}, b)
    assert a.getvalue() == b.getvalue()


def test_mmap(tmp_path):
    path = tmp_path / "m.pt"
    w = tp.arange(8.0)
    save({"w": w, "v": w[2:]}, path)
    before = path.read_bytes()
    out = load(path, mmap=True)
    assert out["w"].tolist() == list(map(float, range(8))) and np.shares_memory(out["v"]._data, out["w"]._data)
    out["w"][0] = 42.0                                             # copy-on-write: the file is not changed
    assert out["v"][0].item() == 2.0 and out["w"][0].item() == 42.0
    assert path.read_bytes() == before
    with open(path, "rb") as fh:
        assert load(fh, mmap=True)["w"][1].item() == 1.0
    with pytest.raises(ValueError, match="f must be a file path in order to use the mmap argument"):
        load(io.BytesIO(before), mmap=True)
    save({"w": tp.ones(1)}, tmp_path / "legacy.pt", _use_new_zipfile_serialization=False)
    with pytest.raises(RuntimeError, match="mmap can only be used with files saved with"):
        load(tmp_path / "legacy.pt", mmap=True)


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
    out = roundtrip(obj, map_location=lambda s, loc: seen.append(loc) or (s if loc == "cuda:1" else None))
    assert sorted(seen) == ["cpu", "cuda:0", "cuda:1"]                  # the storage stays on the CPU
    assert [str(out[k].device) for k in "abc"] == ["cpu", "cpu", "cuda:0"]
    out = roundtrip(obj, map_location=lambda s, loc: s.cuda(1))       # PyTorch's idiom
    assert {str(v.device) for v in out.values()} == {"cuda:1"} and out["a"].tolist() == [0, 1, 2]
    with pytest.raises(TypeError, match="map_location"):
        roundtrip(obj, map_location=lambda s, loc: "cpu")


def test_missing_device_error_suggests_map_location(fake_cuda, tmp_path):
    save({"w": tp.ones(2).to("cuda:1")}, tmp_path / "g.pt")
    with pytest.raises(RuntimeError, match="map_location"):
        load(tmp_path / "g.pt", map_location="cuda:7")
    assert load(tmp_path / "g.pt", map_location="cpu")["w"].device == tp.device("cpu")


# -- foreign files ----------------------------------------------------------------------------------------
class _Payload:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        # what a malicious checkpoint does: unpickling runs code (here: creates a marker file)
        return (open, (self.marker, "w"))


@pytest.mark.parametrize("protocol", [0, 2, pickle.HIGHEST_PROTOCOL])
def test_bare_pickle_file_refused_without_running_it(tmp_path, protocol):
    marker = tmp_path / "pwned"
    path = tmp_path / "evil.pt"
    path.write_bytes(pickle.dumps({"w": _Payload(str(marker))}, protocol=protocol))
    with pytest.raises(CheckpointError, match="not a checkpoint"):
        load(path)
    with pytest.raises(CheckpointError, match="not a checkpoint"):
        load(io.BytesIO(path.read_bytes()), weights_only=False)
    assert not marker.exists()


def test_checkpoint_with_code_refused_by_default(tmp_path):
    marker = tmp_path / "pwned"
    path = tmp_path / "evil.pt"
    save({"w": _Payload(str(marker))}, path)
    with pytest.raises(pickle.UnpicklingError, match="Unsupported global: GLOBAL builtins.open|GLOBAL io.open"):
        load(path)
    assert not marker.exists()
    load(path, weights_only=False)               # the user's explicit choice: runs the file's code
    assert marker.exists()


def test_minimal_zip_checkpoint_loads(tmp_path):
    import zipfile
    path = tmp_path / "torch.pt"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("archive/data.pkl", pickle.dumps({"a": 1}, protocol=2))
    assert load(path) == {"a": 1}


@pytest.mark.parametrize("content,match", [(b"", "empty"), (b"hello world, not a checkpoint", "unknown format"),
                                           (b"TPLG", "truncated"), (b"PK\x03", "truncated")])
def test_unknown_or_tiny_files(tmp_path, content, match):
    path = tmp_path / "x.bin"
    path.write_bytes(content)
    with pytest.raises(CheckpointError, match=match):
        load(path)


def test_pickle_module_arguments():
    buf = io.BytesIO()
    save({"a": tp.ones(2)}, buf, pickle_module=pickle, pickle_protocol=4)
    with pytest.raises(RuntimeError, match="Can not safely load weights when explicit pickle_module is specified"):
        load(io.BytesIO(buf.getvalue()), pickle_module=pickle, weights_only=True)
    assert load(io.BytesIO(buf.getvalue()), pickle_module=pickle)["a"].tolist() == [1.0, 1.0]   # weights_only=False
    assert load(io.BytesIO(buf.getvalue()))["a"].tolist() == [1.0, 1.0]


# -- corruption -------------------------------------------------------------------------------------------
@pytest.fixture
def good_file(tmp_path):
    path = tmp_path / "good.pt"
    save({"w": tp.randn(50, 20), "b": tp.arange(7), "meta": {"epoch": 3}}, path)
    return path


def test_truncated_files_fail_clearly(good_file, tmp_path):
    data = good_file.read_bytes()
    for cut in sorted({1, 8, 20, 31, 100, len(data) // 2, len(data) - 41, len(data) - 8, len(data) - 1}):
        p = tmp_path / f"cut{cut}.pt"
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


# -- atomic writes ----------------------------------------------------------------------------------------
def _crash_after(monkeypatch, nbytes, error=OSError("disk full (simulated)")):
    """Make the archive writer fail once `nbytes` bytes are written."""
    from tensorplug.serialization import zip_archive
    real = zip_archive.ZipWriter._write

    def write(self, b):
        if self._pos + len(b) > nbytes:
            raise error
        real(self, b)
    monkeypatch.setattr(zip_archive.ZipWriter, "_write", write)


def test_failed_write_keeps_old_checkpoint(good_file, monkeypatch):
    old = good_file.read_bytes()
    _crash_after(monkeypatch, 100)
    with pytest.raises(OSError, match="simulated"):
        save({"w": tp.zeros(1000)}, good_file)
    assert good_file.read_bytes() == old
    assert os.listdir(good_file.parent) == [good_file.name]          # the temporary file is removed
    monkeypatch.undo()
    assert load(good_file)["meta"] == {"epoch": 3}


def test_killed_process_mid_write_keeps_old_checkpoint(good_file):
    """A process that dies mid-write (no cleanup at all) leaves the old file intact, and the next save to
    the same path removes what it left."""
    old = good_file.read_bytes()
    script = textwrap.dedent(f"""
        import os, tensorplug as tp
        from tensorplug.serialization import zip_archive
        real = zip_archive.ZipWriter._write
        def write(self, b):
            if self._pos > 64:
                self._f.flush(); os._exit(9)
            real(self, b)
        zip_archive.ZipWriter._write = write
        tp.save({{"w": tp.zeros(1000)}}, {str(good_file)!r})
    """)
    r = subprocess.run([sys.executable, "-c", script], timeout=60)
    assert r.returncode == 9
    assert good_file.read_bytes() == old
    assert load(good_file)["meta"] == {"epoch": 3}
    left = [n for n in os.listdir(good_file.parent) if n != good_file.name]
    assert len(left) == 1 and left[0].startswith(".good.pt.") and left[0].endswith(".tmp")
    save({"meta": {"epoch": 4}}, good_file)
    assert os.listdir(good_file.parent) == [good_file.name]
    assert load(good_file)["meta"] == {"epoch": 4}


def test_save_replaces_existing_file(good_file):
    save([1, 2, 3], good_file)
    assert load(good_file) == [1, 2, 3]


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions and symlinks")
def test_overwrite_keeps_mode_and_symlink(tmp_path):
    target = tmp_path / "real.pt"
    save(1, target)
    os.chmod(target, 0o600)
    link = tmp_path / "link.pt"
    link.symlink_to(target)
    save(2, link)
    assert link.is_symlink() and load(link) == 2 and load(target) == 2
    assert (target.stat().st_mode & 0o777) == 0o600
