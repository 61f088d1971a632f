"""Whole objects: tensorplug.save of a model, optimizer, scheduler or user class pickles it by reference to
its class (PyTorch's paths for tensorplug's classes), and load(weights_only=False) brings back a
working object."""
import copy
import io
import pickletools
import zipfile

import numpy as np
import pytest

import tensorplug as tp
from tensorplug import nn
from tensorplug.serialization import load, save


def roundtrip(obj):
    buf = io.BytesIO()
    save(obj, buf)
    return load(io.BytesIO(buf.getvalue()), weights_only=False), buf.getvalue()


def globals_of(data):
    z = zipfile.ZipFile(io.BytesIO(data))
    pkl = z.read([n for n in z.namelist() if n.endswith("data.pkl")][0])
    return {arg.replace(" ", ".") for op, arg, _ in pickletools.genops(pkl) if op.name == "GLOBAL"}


class Net(nn.Module):
    """A user model: layers, a buffer, a non-tensor attribute."""

    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(1, 3, 3, padding=1), nn.BatchNorm2d(3), nn.ReLU(), nn.Flatten())
        self.rnn = nn.GRU(3, 4, batch_first=True)
        self.head = nn.Linear(4, 2)
        self.register_buffer("scale", tp.tensor(0.5))
        self.tag = "v1"

    def forward(self, x):
        h = self.body(x).reshape(x.shape[0], -1, 3)
        out, _ = self.rnn(h)
        return self.head(out[:, -1]) * self.scale


class Config:
    def __init__(self, lr, layers):
        self.lr, self.layers = lr, layers


def test_user_model_round_trip():
    tp.manual_seed(0)
    net = Net()
    net.eval()
    x = tp.randn(2, 1, 2, 2)
    with tp.no_grad():
        ref = net(x)
    out, data = roundtrip(net)
    assert type(out) is Net and out.tag == "v1" and not out.training
    with tp.no_grad():
        assert np.array_equal(out(x).numpy(), ref.numpy())
    for (k, a), (k2, b) in zip(net.state_dict().items(), out.state_dict().items()):
        assert k == k2 and np.array_equal(a.numpy(), b.numpy())
    names = globals_of(data)
    assert f"{__name__}.Net" in names and "torch.nn.modules.rnn.GRU" in names and \
        "torch.nn.modules.batchnorm.BatchNorm2d" in names
    assert not [n for n in names if n.startswith("tensorplug")]


def test_parameters_shared_between_modules_stay_shared():
    a = nn.Linear(3, 3)
    b = nn.Linear(3, 3)
    b.weight = a.weight                                  # tied weights
    out, _ = roundtrip(nn.ModuleList([a, b]))
    assert out[0].weight is out[1].weight


def test_optimizer_and_scheduler_continue_as_the_originals():
    tp.manual_seed(1)
    model = nn.Linear(3, 2)
    opt = tp.optim.Adam(model.parameters(), lr=0.1)
    sched = tp.optim.lr_scheduler.StepLR(opt, 1, gamma=0.5)
    x = tp.ones(4, 3)

    def step(m, o, s):
        o.zero_grad()
        m(x).pow(2).sum().backward()
        o.step()
        s.step()
    step(model, opt, sched)
    ref = copy.deepcopy({"m": model, "o": opt, "s": sched})
    out, data = roundtrip({"m": model, "o": opt, "s": sched})
    assert type(out["o"]) is tp.optim.Adam and out["o"].param_groups[0]["params"][0] is out["m"].weight
    assert out["s"].optimizer is out["o"]
    for d in (ref, out):
        step(d["m"], d["o"], d["s"])
    assert np.array_equal(out["m"].weight.detach().numpy(), ref["m"].weight.detach().numpy())
    assert out["s"].get_last_lr() == ref["s"].get_last_lr() == [0.025]
    assert {"torch.optim.adam.Adam", "torch.optim.lr_scheduler.StepLR"} <= globals_of(data)


def test_user_class_with_tensors():
    cfg = Config(1e-3, [tp.ones(2), tp.zeros(1, dtype=tp.int64)])
    out, _ = roundtrip(cfg)
    assert type(out) is Config and out.lr == 1e-3 and out.layers[0].tolist() == [1.0, 1.0]


def test_rnn_state_has_pytorchs_flat_weights():
    lstm = nn.LSTM(2, 3)
    state = lstm.__getstate__()
    assert [id(w) for w in state["_flat_weights"]] == [id(getattr(lstm, n)) for n in lstm._flat_weights_names]
    out, _ = roundtrip(lstm)
    assert "_flat_weights" not in out.__dict__ and out._flat_weights[0] is out.weight_ih_l0
    c = copy.deepcopy(lstm)
    assert c._flat_weights[0] is c.weight_ih_l0 and c._flat_weights[0] is not lstm.weight_ih_l0


def test_functions_by_pytorch_name():
    layer = nn.TransformerEncoderLayer(4, 2, 8)            # holds F.relu as its activation
    out, data = roundtrip(layer)
    assert "torch.nn.functional.relu" in globals_of(data)
    assert out.activation(tp.tensor([-1.0, 2.0])).tolist() == [0.0, 2.0]


def test_unpicklable_objects_raise_pickling_error():
    import pickle
    with pytest.raises(pickle.PicklingError):
        save({"f": lambda x: x}, io.BytesIO())
