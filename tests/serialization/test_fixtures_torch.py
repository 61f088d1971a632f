"""Files written by PyTorch 2.13 (fixtures/make_fixtures.py) load exactly: values, dtypes, shapes,
strides, storage sharing, requires_grad and classes, as the script recorded them; whole pickled
modules load as tensorplug's modules and compute what PyTorch's computed."""
import json
import os

import numpy as np
import pytest
from serialization_helpers import FIXTURES, check_fixture, expectations, fixture_path, host

import tensorplug as tp
from tensorplug import nn
from tensorplug.serialization import CheckpointError, load, safe_globals

DATA = ["cnn_state_dict", "adam_state", "views", "dtypes", "misc", "protocol4", "legacy"]


@pytest.mark.parametrize("name", DATA)
def test_data_fixture_loads_exactly(name):
    """weights_only=True (the default) reads every data fixture, equal to what PyTorch saved."""
    check_fixture(load(fixture_path(name)), name)


@pytest.mark.parametrize("name", [n for n in DATA if n != "legacy"])
def test_mmap_loads_the_same(name):
    check_fixture(load(fixture_path(name), mmap=True), name)


def test_numpy_array_file():
    """torch.save of a NumPy array (pytorch/examples time_sequence_prediction) loads as that array."""
    meta, arrays = expectations("numpy_array")
    out = load(fixture_path("numpy_array"))
    assert type(out) is np.ndarray and out.dtype == np.float64
    assert np.array_equal(out, arrays[meta["root"]["id"]])


def test_views_share_storage_and_offsets():
    out = load(fixture_path("views"))
    meta, _ = expectations("views")
    by_path = {e["path"]: e for e in meta["tensors"].values()}
    for key, t in out.items():
        e = by_path[f"root[{key!r}]"] if f"root[{key!r}]" in by_path else None
        if e is not None and t.numel() and key not in ("param",):
            assert t.storage_offset() == e["storage_offset"]
    assert out["again"] is out["base"]
    out["base"][0, 5] = 100.0                       # a write through the base reaches every view
    assert out["t"][5, 0].item() == 100.0 and out["flat"][0].item() == 100.0 and out["diag"][0].item() == 0.0
    assert type(out["param"]) is nn.Parameter and out["param"].requires_grad
    assert np.shares_memory(out["param_view"]._data, out["param"]._data)


def test_cnn_state_dict_into_tensorplug_model():
    model = nn.Sequential(nn.Conv2d(1, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Conv2d(4, 8, 3, stride=2),
                          nn.BatchNorm2d(8), nn.ReLU(), nn.Flatten(), nn.Linear(8 * 2 * 2, 3))
    state = load(fixture_path("cnn_state_dict"))
    assert repr(model.load_state_dict(state)) == "<All keys matched successfully>"
    meta, arrays = expectations("cnn_state_dict")
    for e_key, e in meta["tensors"].items():
        name = e["path"][len("root['"):-2]
        assert np.array_equal(host(model.state_dict()[name]), arrays[e_key])
    assert state._metadata[""]["version"] == 1          # PyTorch's state-dict metadata comes along


def test_adam_state_into_tensorplug_optimizer():
    model = nn.Sequential(nn.Conv2d(1, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Conv2d(4, 8, 3, stride=2),
                          nn.BatchNorm2d(8), nn.ReLU(), nn.Flatten(), nn.Linear(8 * 2 * 2, 3))
    opt = tp.optim.Adam(model.parameters(), lr=0.5)
    sd = load(fixture_path("adam_state"))
    opt.load_state_dict(sd)
    assert opt.param_groups[0]["lr"] == 1e-2 and sd["param_groups"][0]["params"] == list(range(10))
    assert opt.state[model[0].weight]["step"].item() == 2.0


def test_dtypes_fixture_every_dtype():
    out = load(fixture_path("dtypes"))
    assert {k: v.dtype.name for k, v in out.items()} == {
        "bool": "bool", "uint8": "uint8", "int8": "int8", "int16": "int16", "int32": "int32", "int64": "int64",
        "float16": "float16", "float32": "float32", "float64": "float64", "bfloat16": "bfloat16",
        "complex64": "complex64", "complex128": "complex128", "float32_nc": "float32"}
    assert out["float32_nc"].stride() == (1, 4) and np.shares_memory(out["float32_nc"]._data, out["float32"]._data)


def test_legacy_fixture_is_the_legacy_format():
    with open(fixture_path("legacy"), "rb") as f:
        assert f.read(2) == b"\x80\x02"                # a pickle stream, not a zip archive
    out = load(fixture_path("legacy"))
    assert np.shares_memory(out["row"]._data, out["w"]._data) and out["row"].storage_offset() == 12


# -- whole objects (weights_only=False: the user trusts the file) ------------------------------------------
def _tensor(meta, arrays, name):
    return arrays[meta[name]["id"]]


def test_whole_sequential():
    meta, arrays = expectations("sequential")
    model = load(fixture_path("sequential"), weights_only=False)
    assert type(model) is nn.Sequential and [type(m).__name__ for m in model] == \
        ["Conv2d", "BatchNorm2d", "ReLU", "Conv2d", "BatchNorm2d", "ReLU", "Flatten", "Linear"]
    assert type(model[1]) is nn.BatchNorm2d and not model.training
    x = tp.from_numpy(_tensor(meta, arrays, "input"))
    with tp.no_grad():
        y = model(x)
    np.testing.assert_allclose(host(y), _tensor(meta, arrays, "output"), rtol=1e-5, atol=1e-6)
    c = check_fixture(model.state_dict(), "sequential", "state")
    assert len(c.seen) == 16


def test_whole_module_refused_by_default():
    with pytest.raises(Exception) as e:
        load(fixture_path("sequential"))
    assert type(e.value).__name__ == "UnpicklingError"
    assert "GLOBAL torch.nn.modules.container.Sequential was not an allowed global by default" in str(e.value)


def test_whole_module_with_safe_globals():
    layers = [nn.Sequential, nn.Conv2d, nn.BatchNorm2d, nn.ReLU, nn.Flatten, nn.Linear]
    with safe_globals(layers):
        model = load(fixture_path("sequential"))
    assert type(model[0]) is nn.Conv2d and model[0].weight.shape == (4, 1, 3, 3)


def test_whole_module_in_the_legacy_format():
    meta, arrays = expectations("legacy_module")
    model = load(fixture_path("legacy_module"), weights_only=False)
    assert [type(m) for m in model] == [nn.Linear, nn.ReLU]
    with tp.no_grad():
        y = model(tp.from_numpy(_tensor(meta, arrays, "input")))
    np.testing.assert_allclose(host(y), _tensor(meta, arrays, "output"), rtol=1e-6, atol=1e-7)


def test_whole_lstm():
    meta, arrays = expectations("lstm")
    lstm = load(fixture_path("lstm"), weights_only=False)
    assert type(lstm) is nn.LSTM and lstm.batch_first and lstm.num_layers == 2
    with tp.no_grad():
        out, (h, c) = lstm(tp.from_numpy(_tensor(meta, arrays, "input")))
    for got, name in ((out, "output"), (h, "h"), (c, "c")):
        np.testing.assert_allclose(host(got), _tensor(meta, arrays, name), rtol=1e-5, atol=1e-6)


def test_whole_transformer_layer():
    meta, arrays = expectations("transformer_layer")
    layer = load(fixture_path("transformer_layer"), weights_only=False)
    assert type(layer) is nn.TransformerEncoderLayer and type(layer.self_attn) is nn.MultiheadAttention
    assert type(layer.self_attn.out_proj).__name__ == "NonDynamicallyQuantizableLinear"
    assert isinstance(layer.self_attn.out_proj, nn.Linear)
    with tp.no_grad():
        y = layer(tp.from_numpy(_tensor(meta, arrays, "input")))
    np.testing.assert_allclose(host(y), _tensor(meta, arrays, "output"), rtol=1e-5, atol=1e-5)


def test_whole_model_optimizer_scheduler_continue_training():
    """A PyTorch Linear, Adam and StepLR after 2 steps: one more step in tensorplug gives PyTorch's result."""
    d = load(fixture_path("trainer"), weights_only=False)
    model, opt, sched = d["model"], d["optimizer"], d["scheduler"]
    assert type(opt) is tp.optim.Adam and type(sched) is tp.optim.lr_scheduler.StepLR
    assert opt.param_groups[0]["params"][0] is model.weight and sched.optimizer is opt
    opt.zero_grad()
    model(tp.ones(1, 3)).sum().backward()
    opt.step()
    sched.step()
    with open(os.path.join(FIXTURES, "trainer_next.json")) as f:
        nxt = json.load(f)
    arrays = dict(np.load(os.path.join(FIXTURES, "trainer_next.npz")))
    np.testing.assert_allclose(host(model.weight), arrays[nxt["weight"]["id"]], rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(host(model.bias), arrays[nxt["bias"]["id"]], rtol=1e-6, atol=1e-7)
    assert sched.get_last_lr() == [float(x["v"]) for x in nxt["last_lr"]["items"]]


def test_fixtures_are_small():
    for n in os.listdir(FIXTURES):
        assert os.path.getsize(os.path.join(FIXTURES, n)) < 100_000, n


def test_corrupted_fixture_detected(tmp_path):
    """A torch-written file (no SHA-256): a flipped bit in a storage record fails its CRC-32."""
    import struct
    import zipfile
    data = bytearray(open(fixture_path("cnn_state_dict"), "rb").read())
    at = zipfile.ZipFile(fixture_path("cnn_state_dict")).getinfo("cnn_state_dict/data/0").header_offset
    name_len, extra_len = struct.unpack_from("<2H", data, at + 26)
    data[at + 30 + name_len + extra_len + 5] ^= 0x10          # a bit of the first storage's data
    p = tmp_path / "bad.pt"
    p.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match="'cnn_state_dict/data/0' fails its CRC-32 check"):
        load(p)
