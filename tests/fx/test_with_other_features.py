"""Importing tensorplug.fx replaces public functions by stand-ins (core/fx/_dispatch.py); what other
parts of tensorplug do with those functions must not change: layers recognise F.relu / F.gelu, and
tensorplug.save names them by PyTorch's path."""
import io
import pickletools
import zipfile

import numpy as np

import tensorplug as tp
import tensorplug.nn.functional as F
from tensorplug import nn
from tensorplug.fx import _dispatch


def _globals(data):
    z = zipfile.ZipFile(io.BytesIO(data))
    pkl = z.read([n for n in z.namelist() if n.endswith("data.pkl")][0])
    return {arg.replace(" ", ".") for op, arg, _ in pickletools.genops(pkl) if op.name == "GLOBAL"}


def test_stand_ins_are_installed_here():
    assert isinstance(F.relu, _dispatch.Recorder) and isinstance(tp.add, _dispatch.Recorder)


def test_transformer_layers_recognise_relu_and_gelu():
    assert nn.TransformerEncoderLayer(4, 2).activation_relu_or_gelu == 1
    assert nn.TransformerEncoderLayer(4, 2, activation="gelu").activation_relu_or_gelu == 2
    assert nn.TransformerEncoderLayer(4, 2, activation=F.gelu).activation_relu_or_gelu == 2
    assert nn.TransformerEncoderLayer(4, 2, activation=tp.tanh).activation_relu_or_gelu == 0


def test_save_names_functions_by_pytorch_path():
    buf = io.BytesIO()
    tp.save({"act": F.relu, "add": tp.add, "layer": nn.TransformerEncoderLayer(4, 2, 8)}, buf)
    names = _globals(buf.getvalue())
    assert {"torch.nn.functional.relu", "torch.add"} <= names
    assert not any(n.startswith("torch.fx") or n.startswith("tensorplug") for n in names), names
    buf.seek(0)
    back = tp.load(buf, weights_only=False)
    assert back["act"](tp.tensor([-1.0, 2.0])).tolist() == [0.0, 2.0]
    assert back["add"](tp.tensor([1.0]), tp.tensor([2.0])).tolist() == [3.0]
    assert back["layer"].activation_relu_or_gelu == 1


def test_sync_batchnorm_is_one_leaf_module():
    """fx keeps SyncBatchNorm as one call_module, and the traced module gives the module's result."""
    m = nn.Sequential(nn.Conv2d(1, 2, 1), nn.SyncBatchNorm(2)).eval()
    with tp.no_grad():
        m[1].running_mean.copy_(tp.tensor([0.5, -0.5]))
    gm = tp.fx.symbolic_trace(m)
    assert [n.target for n in gm.graph.nodes if n.op == "call_module"] == ["0", "1"]
    x = tp.randn(2, 1, 3, 3)
    np.testing.assert_array_equal(gm(x).detach().numpy(), m(x).detach().numpy())
