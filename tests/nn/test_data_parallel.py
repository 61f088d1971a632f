"""nn.DataParallel and torch.nn.parallel's scatter / gather / replicate / parallel_apply / data_parallel,
on a plugin device type with two devices ("fakedev", NumPy kernels) and on a CPU-only machine."""
import collections
import threading
import warnings

import numpy as np
import pytest

import tensorplug as torch
import tensorplug.nn as nn
from tensorplug.nn.parallel import data_parallel, gather, parallel_apply, replicate, scatter
from tensorplug.nn.parallel.scatter_gather import scatter_kwargs

Pair = collections.namedtuple("Pair", ["left", "right"])


@pytest.fixture
def fakedev(add_backend):
    """The accelerator of these tests: an indexed plugin device type with 2 devices."""
    return add_backend("fake", device_type="fakedev", indexed=True, count=2)


def host(t):
    return t.detach().cpu().numpy()


def mlp_and_reference(seed=0):
    """A float64 MLP on fakedev:0 and its NumPy weights."""
    torch.manual_seed(seed)
    m = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2)).double()
    w = [host(p) for p in m.parameters()]
    return m.to("fakedev:0"), w


def numpy_mlp(w, X, G):
    """Output and parameter gradients of loss sum(out * G) of tanh(X W1^T + b1) W2^T + b2, in float64."""
    W1, b1, W2, b2 = w
    h = np.tanh(X @ W1.T + b1)
    out = h @ W2.T + b2
    dh = (G @ W2) * (1 - h * h)
    return out, [dh.T @ X, dh.sum(0), G.T @ h, G.sum(0)]


def test_forward_backward_equal_the_module_on_the_whole_batch(fakedev):
    """5 rows on 2 devices (3 + 2): outputs on fakedev:0 and the original parameters' gradients equal
    one NumPy float64 pass over the whole batch; every replica's gradient adds into the original."""
    m, w = mlp_and_reference()
    dp = nn.DataParallel(m)
    assert dp.device_ids == [0, 1] and dp.output_device == 0
    rng = np.random.default_rng(1)
    X, G = rng.standard_normal((5, 3)), rng.standard_normal((5, 2))
    y = dp(torch.from_numpy(X).to("fakedev:0"))
    assert y.device == torch.device("fakedev:0")
    (y * torch.from_numpy(G).to("fakedev:0")).sum().backward()
    out, grads = numpy_mlp(w, X, G)
    np.testing.assert_allclose(host(y), out, rtol=1e-12, atol=1e-12)
    for p, g in zip(m.parameters(), grads):
        assert p.grad.device == torch.device("fakedev:0")
        np.testing.assert_allclose(host(p.grad), g, rtol=1e-12, atol=1e-12)
    # a second backward accumulates, as for the plain module
    (dp(torch.from_numpy(X).to("fakedev:0")) * torch.from_numpy(G).to("fakedev:0")).sum().backward()
    np.testing.assert_allclose(host(m[0].weight.grad), 2 * grads[0], rtol=1e-12)


class ShapeProbe(nn.Module):
    """Reports how many rows, on which device and thread, each replica got."""

    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(torch.ones(1, dtype=torch.float64))
        self.seen = []

    def forward(self, x):
        self.seen.append((x.shape[0], str(x.device), threading.get_ident()))
        return {"rows": torch.tensor([float(x.shape[0])], dtype=torch.float64, device=x.device),
                "x": x * self.scale}


def test_uneven_batch_split_like_chunk(fakedev):
    """5 rows -> 3 on fakedev:0 and 2 on fakedev:1 (Tensor.chunk's sizes), in two threads; 1 row
    uses one replica only."""
    probe = ShapeProbe().to("fakedev:0")
    dp = nn.DataParallel(probe)
    x = torch.arange(10, dtype=torch.float64).reshape(5, 2).to("fakedev:0")
    out = dp(x)
    assert sorted(s[:2] for s in probe.seen) == [(2, "fakedev:1"), (3, "fakedev:0")]
    assert threading.get_ident() not in {s[2] for s in probe.seen}      # worker threads ran them
    np.testing.assert_array_equal(host(out["rows"]), [3.0, 2.0])
    np.testing.assert_array_equal(host(out["x"]), np.arange(10.0).reshape(5, 2))
    probe.seen.clear()
    dp(x[:1])
    assert [s[:2] for s in probe.seen] == [(1, "fakedev:0")]


class Structured(nn.Module):
    """Takes and returns nested dicts / lists / tuples / namedtuples with non-tensors inside."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.tensor([2.0, -1.0], dtype=torch.float64))
        self.tags = []

    def forward(self, batch, pair, scale=None, offset=0.0, note="none"):
        self.tags.append((batch["tag"], batch["items"][1], pair.right, offset, note))
        a = batch["a"] * self.w + offset
        z = batch["items"][0]
        if scale is not None:
            z = z * scale
        return {"a": a, "nested": [z, (pair.left.sum(1),)], "pair": Pair(a.sum(1), None)}


def test_nested_inputs_outputs_and_kwargs(fakedev):
    """dict / list / tuple / namedtuple inputs and outputs, tensor and non-tensor kwargs: tensors split
    along dim 0 and gathered back, everything else handed to every replica unchanged."""
    mod = Structured().to("fakedev:0")
    dp = nn.DataParallel(mod)
    rng = np.random.default_rng(2)
    A, Z, L, S = (rng.standard_normal(s) for s in ((4, 2), (4, 3), (4, 5), (4, 1)))

    def dev(a):
        return torch.from_numpy(a).to("fakedev:0")
    out = dp({"a": dev(A), "items": [dev(Z), 7], "tag": "t"}, Pair(dev(L), "right"),
             scale=dev(S), offset=0.5, note="kw")
    assert sorted(mod.tags) == [("t", 7, "right", 0.5, "kw")] * 2
    assert isinstance(out, dict) and isinstance(out["nested"], list) and isinstance(out["nested"][1], tuple)
    assert isinstance(out["pair"], Pair) and out["pair"].right is None
    np.testing.assert_allclose(host(out["a"]), A * [2.0, -1.0] + 0.5, rtol=1e-14)
    np.testing.assert_allclose(host(out["nested"][0]), Z * S, rtol=1e-14)
    np.testing.assert_allclose(host(out["nested"][1][0]), L.sum(1), rtol=1e-14)
    np.testing.assert_allclose(host(out["pair"].left), (A * [2.0, -1.0] + 0.5).sum(1), rtol=1e-14)
    out["a"].sum().backward()
    np.testing.assert_allclose(host(mod.w.grad), A.sum(0), rtol=1e-14)


class Scale(nn.Module):
    def __init__(self):
        super().__init__()
        self.s = nn.Parameter(torch.tensor(3.0, dtype=torch.float64))
        self.shapes = []

    def forward(self, x):
        self.shapes.append(tuple(x.shape))
        return x * self.s


def test_dim_and_output_device(fakedev):
    """dim=1 splits columns (6 -> 3 + 3); output_device=-1 gathers on the cpu, differentiably."""
    mod = Scale().to("fakedev:0")
    dp = nn.DataParallel(mod, dim=1, output_device=-1)
    X = np.arange(12, dtype=np.float64).reshape(2, 6)
    out = dp(torch.from_numpy(X).to("fakedev:0"))
    assert mod.shapes == [(2, 3), (2, 3)] and out.device.type == "cpu"
    np.testing.assert_array_equal(out.detach().numpy(), 3 * X)
    out.sum().backward()
    assert mod.s.grad.device == torch.device("fakedev:0") and float(mod.s.grad.cpu()) == X.sum()


def test_module_on_the_wrong_device(fakedev):
    """Parameters not on device_ids[0]: PyTorch's RuntimeError (ValueError from data_parallel)."""
    m = nn.Linear(2, 2)                                   # on the cpu
    with pytest.raises(RuntimeError, match=r"on device fakedev:0 \(device_ids\[0\]\) but found one of "
                                           r"them on device: cpu"):
        nn.DataParallel(m)(torch.ones(4, 2, device="fakedev:0"))
    m1 = nn.Linear(2, 2).to("fakedev:1")
    with pytest.raises(ValueError, match="found one of them on device: fakedev:1"):
        data_parallel(m1, torch.ones(4, 2, device="fakedev:0"))
    with pytest.raises(ValueError, match="Expected a non cpu device, but got: cpu"):
        nn.DataParallel(m, device_ids=["cpu", 1])
    with pytest.raises(ValueError, match="not a device of the accelerator"):
        nn.DataParallel(m, device_ids=["other:0", 1])


def test_single_device_moves_the_module(fakedev):
    """device_ids=[1]: the module is moved to fakedev:1 and simply called there."""
    m = nn.Linear(2, 3).double()
    dp = nn.DataParallel(m, device_ids=[1])
    assert m.weight.device == torch.device("fakedev:1")
    x = np.ones((4, 2))
    want = x @ host(m.weight).T + host(m.bias)
    np.testing.assert_allclose(host(dp(torch.from_numpy(x).to("fakedev:1"))), want, rtol=1e-14)


def test_data_parallel_function(fakedev):
    m, w = mlp_and_reference(3)
    X = np.random.default_rng(4).standard_normal((7, 3))
    out = data_parallel(m, torch.from_numpy(X).to("fakedev:0"))
    np.testing.assert_allclose(host(out), numpy_mlp(w, X, np.zeros((7, 2)))[0], rtol=1e-12)


def test_state_dict_has_module_prefix(fakedev):
    m, _ = mlp_and_reference()
    dp = nn.DataParallel(m)
    assert list(dp.state_dict()) == ["module." + k for k in m.state_dict()]
    fresh = nn.DataParallel(nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2)).double().to("fakedev:0"))
    fresh.load_state_dict(dp.state_dict())
    np.testing.assert_array_equal(host(fresh.module[2].weight), host(m[2].weight))


def test_batchnorm_running_stats_come_from_the_first_device(fakedev):
    """Buffers on device_ids[0] are the originals in replica 0: BatchNorm's running mean is updated
    from the first device's share only (PyTorch's documented behaviour)."""
    bn = nn.BatchNorm1d(2).double().to("fakedev:0")
    X = np.arange(12, dtype=np.float64).reshape(6, 2) ** 1.5
    nn.DataParallel(bn)(torch.from_numpy(X).to("fakedev:0"))
    np.testing.assert_allclose(host(bn.running_mean), 0.1 * X[:3].mean(0), rtol=1e-14)
    assert int(bn.num_batches_tracked.item()) == 1


def test_replicate_gives_differentiable_copies(fakedev):
    m = nn.Linear(2, 2).to("fakedev:0")
    r0, r1 = replicate(m, [0, 1])
    assert list(r1.parameters()) == [] and r1.weight.device == torch.device("fakedev:1")
    assert r1.weight.grad_fn is not None and r0.weight.grad_fn is not None
    np.testing.assert_array_equal(host(r1.weight), host(m.weight))
    r1(torch.ones(1, 2, device="fakedev:1")).sum().backward()
    r0(torch.ones(1, 2, device="fakedev:0")).sum().backward()
    np.testing.assert_array_equal(host(m.bias.grad), [2.0, 2.0])
    d0, d1 = replicate(m, [0, 1], detach=True)
    assert d1.weight.grad_fn is None and not d1.weight.requires_grad
    with torch.no_grad():
        out = nn.DataParallel(m)(torch.ones(4, 2, device="fakedev:0"))
    assert out.grad_fn is None


def test_scatter_and_gather_directly(fakedev):
    x = torch.arange(5.0, device="fakedev:0")
    parts = scatter({"x": x, "k": 3}, [0, 1])
    assert [p["k"] for p in parts] == [3, 3]
    assert [str(p["x"].device) for p in parts] == ["fakedev:0", "fakedev:1"]
    assert [host(p["x"]).tolist() for p in parts] == [[0.0, 1.0, 2.0], [3.0, 4.0]]
    ins, kws = scatter_kwargs((x,), {"flag": True}, [0, 1])
    assert len(ins) == len(kws) == 2 and kws[1] == {"flag": True}
    ins, kws = scatter_kwargs((), {"y": x}, [0, 1])
    assert ins == ((), ()) and host(kws[1]["y"]).tolist() == [3.0, 4.0]
    back = gather([{"v": torch.ones(2, device="fakedev:0")}, {"v": torch.zeros(1, device="fakedev:1")}], -1)
    assert back["v"].device.type == "cpu" and back["v"].tolist() == [1.0, 1.0, 0.0]
    with pytest.raises(ValueError, match="same number of keys"):
        gather([{"a": torch.ones(1)}, {"a": torch.ones(1), "b": torch.ones(1)}], "cpu")
    with pytest.warns(UserWarning, match="scalar"):
        v = gather([torch.tensor(1.0, device="fakedev:1"), torch.tensor(2.0, device="fakedev:0")], 0)
    assert v.device == torch.device("fakedev:0") and host(v).tolist() == [1.0, 2.0]


def test_parallel_apply_reraises_with_the_replica(fakedev):
    class Fails(nn.Module):
        def forward(self, x):
            if x.device.index == 1:
                raise KeyError("bad row")
            return x
    with pytest.raises(KeyError, match="Caught KeyError in replica 1 on device fakedev:1"):
        parallel_apply([Fails(), Fails()], [torch.ones(1, device="fakedev:0"), torch.ones(1, device="fakedev:1")])
    with pytest.raises(AssertionError, match="number of modules 2 is not equal to the number of inputs 1"):
        parallel_apply([Fails(), Fails()], [torch.ones(1)])
    outs = parallel_apply([nn.Identity(), nn.Identity()], [torch.ones(1), (torch.zeros(2),)])
    assert outs[0].tolist() == [1.0] and outs[1].tolist() == [0.0, 0.0]


def test_cpu_only_machine_just_calls_the_module():
    """Without an accelerator: device_ids == [] and forward is module(*inputs, **kwargs)."""
    if torch.accelerator.is_available():
        pytest.skip("this machine has an accelerator")
    mod = Structured()
    dp = nn.DataParallel(mod, device_ids=[0, 1])
    assert dp.device_ids == []
    A = torch.ones(3, 2, dtype=torch.float64)
    out = dp({"a": A, "items": [A, 1], "tag": "c"}, Pair(A, 2), offset=1.0)
    assert mod.tags == [("c", 1, 2, 1.0, "none")]
    np.testing.assert_array_equal(out["a"].detach().numpy(), np.tile([3.0, 0.0], (3, 1)))
    assert list(dp.state_dict()) == ["module.w"]
    with pytest.raises(RuntimeError, match="device type could not be determined"):
        data_parallel(mod, A)


def test_scatter_on_cpu_devices_without_an_accelerator():
    """Devices may be given as devices: scatter/gather work on the cpu too."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        parts = scatter((torch.arange(4.0), "s"), ["cpu", "cpu"])
    assert [p[0].tolist() for p in parts] == [[0.0, 1.0], [2.0, 3.0]] and parts[1][1] == "s"
    assert gather([p[0] for p in parts], "cpu").tolist() == [0.0, 1.0, 2.0, 3.0]


def test_parallel_apply_needs_a_device_or_a_tensor():
    with pytest.raises(RuntimeError, match="in replica 1, no device was provided and no tensor input"):
        parallel_apply([nn.Identity(), nn.Identity()], [(torch.ones(1),), ("text",)])


def test_parallel_apply_keeps_the_callers_grad_mode():
    """Worker threads start with grad mode on: parallel_apply hands them the caller's."""
    mods = [Scale(), Scale()]
    with torch.no_grad():
        outs = parallel_apply(mods, [(torch.ones(2),), (torch.ones(3),)])
    assert [o.requires_grad for o in outs] == [False, False]
    outs = parallel_apply(mods, [(torch.ones(2),), (torch.ones(3),)])
    assert [o.requires_grad for o in outs] == [True, True]
