"""The safetensors package's torch module, unchanged, on tensorplug (through the torch alias): round
trips of every dtype both file formats hold, shared-memory refusal and save_model / load_model,
safe_open slices and metadata, and files checked against safetensors' NumPy module."""
import sys

import numpy as np
import pytest

import tensorplug

pytest.importorskip("safetensors", reason="the safetensors extra is not installed")
ml_dtypes = pytest.importorskip("ml_dtypes")
import safetensors.numpy as stnp  # noqa: E402  (NumPy only: the independent reference)


@pytest.fixture(scope="module")
def st():
    """safetensors.torch imported with `torch` = tensorplug; the alias is undone afterwards."""
    from tensorplug.compat import alias_torch, unalias_torch
    if "torch" in sys.modules and sys.modules["torch"] is not tensorplug:
        pytest.skip("real PyTorch is imported in this process")
    sys.modules.pop("safetensors.torch", None)
    alias_torch(inherit=False)
    import safetensors.torch as mod
    yield mod
    sys.modules.pop("safetensors.torch", None)
    unalias_torch()


@pytest.fixture(params=["0.1.0", "2.13.0"], ids=["frombuffer-path", "storage-path"])
def version(request, monkeypatch):
    """safetensors reads files through torch.frombuffer for old torch versions and through
    UntypedStorage.from_file + torch.asarray + view(dtype) for 2.x: both paths run."""
    monkeypatch.setattr(tensorplug, "__version__", request.param)
    return request.param


def _arrays():
    rng = np.random.default_rng(0)
    out = {f: rng.standard_normal((3, 4)).astype(f) for f in ("float16", "float32", "float64")}
    out.update({i: rng.integers(np.iinfo(i).min, np.iinfo(i).max, (2, 5), dtype=i)
                for i in ("int8", "int16", "int32", "int64", "uint8")})
    out["bool"] = rng.integers(0, 2, (7,)).astype(bool)
    out["complex64"] = (rng.standard_normal(4) + 1j * rng.standard_normal(4)).astype(np.complex64)
    out["bfloat16"] = rng.standard_normal((2, 3)).astype(ml_dtypes.bfloat16)
    out["scalar"] = np.array(2.5, np.float32)
    out["empty"] = np.zeros((0, 3), np.float32)
    return out


def _tensors(arrays):
    return {k: tensorplug.from_numpy(a.copy()) if a.dtype != ml_dtypes.bfloat16 else
            tensorplug.tensor(a.astype(np.float32)).to(tensorplug.bfloat16) for k, a in arrays.items()}


def _bits(a):
    return np.ascontiguousarray(a).reshape(-1).view(np.uint8)


def _same(t, a):
    """t holds exactly a's bits, with its dtype and shape."""
    h = t.float().numpy().astype(ml_dtypes.bfloat16) if t.dtype is tensorplug.bfloat16 else t.numpy()
    assert h.dtype == a.dtype and h.shape == a.shape
    np.testing.assert_array_equal(_bits(h), _bits(a))


def test_save_file_load_file_every_dtype(st, version, tmp_path):
    """save_file / load_file keep every dtype's bits, shapes (0-d and empty too) and names."""
    arrays = _arrays()
    st.save_file(_tensors(arrays), tmp_path / "m.safetensors")
    loaded = st.load_file(tmp_path / "m.safetensors")
    assert sorted(loaded) == sorted(arrays)
    for k, a in arrays.items():
        assert isinstance(loaded[k], tensorplug.Tensor)
        _same(loaded[k], a)


def test_save_load_bytes(st):
    """save() gives the bytes safetensors.numpy reads; load() reads them back."""
    arrays = _arrays()
    data = st.save(_tensors(arrays), metadata={"format": "pt"})
    loaded = st.load(data)
    for k, a in arrays.items():
        _same(loaded[k], a)
    ref = stnp.load(st.save({k: t for k, t in _tensors(arrays).items() if k != "bfloat16"}))
    for k, a in arrays.items():
        if k == "bfloat16":         # (safetensors.numpy.load has no bfloat16)
            continue
        np.testing.assert_array_equal(_bits(ref[k]), _bits(a))


def test_loaded_tensors_are_writable_and_independent_of_the_file(st, version, tmp_path):
    """Tensors from load_file can be written in place; the file keeps its contents."""
    p = tmp_path / "w.safetensors"
    st.save_file({"w": tensorplug.arange(6.0).reshape(2, 3)}, p)
    w = st.load_file(p)["w"]
    w.add_(1.0)
    np.testing.assert_array_equal(w.numpy(), np.arange(1.0, 7.0).reshape(2, 3))
    np.testing.assert_array_equal(st.load_file(p)["w"].numpy(), np.arange(6.0).reshape(2, 3))


def test_tensorplug_file_read_by_numpy_module(st, tmp_path):
    """A file written by tensorplug is what safetensors.numpy reads (the NumPy reference)."""
    arrays = _arrays()
    st.save_file(_tensors(arrays), tmp_path / "a.safetensors", metadata={"who": "tensorplug"})
    ref = stnp.load_file(tmp_path / "a.safetensors")
    for k, a in arrays.items():
        assert ref[k].shape == a.shape
        np.testing.assert_array_equal(_bits(ref[k]), _bits(a))


def test_numpy_module_file_read_by_tensorplug(st, version, tmp_path):
    """A file written by safetensors.numpy loads into tensorplug with the same bits."""
    arrays = {k: a for k, a in _arrays().items() if a.dtype != ml_dtypes.bfloat16}
    stnp.save_file(arrays, tmp_path / "n.safetensors")
    loaded = st.load_file(tmp_path / "n.safetensors")
    for k, a in arrays.items():
        _same(loaded[k], a)


def test_safe_open_metadata_keys_and_slices(st, version, tmp_path):
    """safe_open(framework="pt"): metadata, keys, get_tensor, and get_slice slices equal NumPy's."""
    a = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    p = tmp_path / "s.safetensors"
    st.save_file({"a": tensorplug.from_numpy(a.copy()), "b": tensorplug.ones(2, dtype=tensorplug.int64)}, p,
                 metadata={"epoch": "3", "name": "demo"})
    from safetensors import safe_open
    with safe_open(p, framework="pt") as f:
        assert f.metadata() == {"epoch": "3", "name": "demo"}
        assert sorted(f.keys()) == ["a", "b"]
        np.testing.assert_array_equal(f.get_tensor("b").numpy(), [1, 1])
        sl = f.get_slice("a")
        assert sl.get_shape() == [3, 4, 5] and sl.get_dtype() == "F32"
        for key in [(slice(None), slice(1, 3)), (1,), (slice(0, 2), 2, slice(None, None, 2)), (Ellipsis, 4)]:
            got = sl[key]
            assert isinstance(got, tensorplug.Tensor)
            np.testing.assert_array_equal(got.numpy(), a[key])


def test_shared_tensors_refused(st, tmp_path):
    """Tensors sharing memory (views, tied weights) are refused with safetensors' RuntimeError;
    distinct tensors with equal values are not."""
    x = tensorplug.arange(4.0)
    with pytest.raises(RuntimeError, match=r"Some tensors share memory.*\{'x', 'y'\}|Some tensors share memory.*"
                                           r"\{'y', 'x'\}"):
        st.save_file({"x": x, "y": x[:2]}, tmp_path / "v.safetensors")
    lin = tensorplug.nn.Linear(3, 3)
    tied = tensorplug.nn.Sequential(lin, lin)
    with pytest.raises(RuntimeError, match="Some tensors share memory"):
        st.save_file(dict(tied.state_dict()), tmp_path / "t.safetensors")
    st.save_file({"x": x, "y": x.clone()}, tmp_path / "ok.safetensors")
    np.testing.assert_array_equal(st.load_file(tmp_path / "ok.safetensors")["y"].numpy(), np.arange(4.0))


def test_non_contiguous_refused(st, tmp_path):
    """A non-contiguous tensor is refused with safetensors' ValueError."""
    with pytest.raises(ValueError, match="non contiguous tensor: `t`"):
        st.save_file({"t": tensorplug.arange(6.0).reshape(2, 3).t()}, tmp_path / "nc.safetensors")


def test_save_model_load_model_tied(st, tmp_path):
    """save_model drops the duplicate names of tied weights (noted in the metadata); load_model
    restores a tied model exactly and reports the keys an untied one misses."""
    tensorplug.manual_seed(0)
    lin = tensorplug.nn.Linear(3, 3)
    tied = tensorplug.nn.Sequential(lin, tensorplug.nn.ReLU(), lin)
    p = tmp_path / "tied.safetensors"
    st.save_model(tied, p)
    from safetensors import safe_open
    with safe_open(p, framework="pt") as f:
        assert sorted(f.keys()) == ["0.bias", "0.weight"]
        assert f.metadata() == {"2.bias": "0.bias", "2.weight": "0.weight"}
    lin2 = tensorplug.nn.Linear(3, 3)
    fresh = tensorplug.nn.Sequential(lin2, tensorplug.nn.ReLU(), lin2)
    missing, unexpected = st.load_model(fresh, p)
    assert not missing and not unexpected
    np.testing.assert_array_equal(lin2.weight.detach().numpy(), lin.weight.detach().numpy())
    np.testing.assert_array_equal(lin2.bias.detach().numpy(), lin.bias.detach().numpy())
    x = tensorplug.randn(4, 3)
    np.testing.assert_array_equal(fresh(x).detach().numpy(), tied(x).detach().numpy())
    untied = tensorplug.nn.Sequential(tensorplug.nn.Linear(3, 3), tensorplug.nn.ReLU(), tensorplug.nn.Linear(3, 3))
    with pytest.raises(RuntimeError, match=r'Missing key\(s\) in state_dict: "2.bias", "2.weight"'):
        st.load_model(untied, p)


def test_complex128_not_in_the_format(st, tmp_path):
    """A dtype safetensors has no code for fails in safetensors itself, as with PyTorch (KeyError)."""
    with pytest.raises(KeyError):
        st.save_file({"z": tensorplug.zeros(2, dtype=tensorplug.complex128)}, tmp_path / "z.safetensors")


_SCRIPT = '''
import numpy as np
import torch
from safetensors import safe_open
from safetensors.torch import load_file, save_file

torch.manual_seed(0)
model = torch.nn.Linear(4, 3)
save_file(model.state_dict(), "m.safetensors", metadata={"arch": "linear"})
state = load_file("m.safetensors")
fresh = torch.nn.Linear(4, 3)
fresh.load_state_dict(state)
x = torch.randn(2, 4)
assert torch.equal(fresh(x), model(x))
with safe_open("m.safetensors", framework="pt") as f:
    print(type(torch).__name__, torch.__name__, f.metadata()["arch"], sorted(f.keys()), f.get_slice("weight")[1:].shape)
np.save("w.npy", model.weight.detach().numpy())
'''


def test_unchanged_script_through_tensorplug_exec(tmp_path):
    """A PyTorch script using safetensors runs unchanged under `tensorplug exec`."""
    import subprocess
    (tmp_path / "use_safetensors.py").write_text(_SCRIPT)
    p = subprocess.run([sys.executable, "-m", "tensorplug", "exec", "use_safetensors.py"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split("\n")[0] == "module tensorplug linear ['bias', 'weight'] tensorplug.Size([2, 4])"
    ref = stnp.load_file(tmp_path / "m.safetensors")
    np.testing.assert_array_equal(ref["weight"], np.load(tmp_path / "w.npy"))
