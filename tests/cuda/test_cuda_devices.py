"""The frontend's device plumbing on the CUDA backend's code, over the NumPy-based CuPy stand-in (two
fake devices; arrays remember their device and kernels refuse arrays of a non-current device, as
CuPy does). Validates the backend's device binding and tensorplug.cuda on the CPU; nothing here ran
on a GPU."""
import copy

import numpy as np
import pytest

import fake_cupy
import tensorplug as torch
import tensorplug.cuda
import tensorplug.nn as nn
import tensorplug.nn.functional as F


def _dev(t):
    """The stand-in device index holding tensor t's data."""
    return t._data._dev


# -- device binding ------------------------------------------------------------------------------------
def test_creation_allocates_on_the_named_device(fakecuda):
    """Every creation function with device="fakecuda:1" allocates on device 1 (device 0 stays current)."""
    made = [torch.zeros(3, device="fakecuda:1"), torch.ones(2, 2, device="fakecuda:1"),
            torch.full((2,), 1.5, device="fakecuda:1"), torch.arange(5, device="fakecuda:1"),
            torch.eye(3, device="fakecuda:1"), torch.tensor([[1, 2]], device="fakecuda:1"),
            torch.rand(4, device="fakecuda:1"), torch.randn(4, device="fakecuda:1"),
            torch.randint(0, 9, (3,), device="fakecuda:1"), torch.randperm(6, device="fakecuda:1"),
            torch.linspace(0, 1, 4, device="fakecuda:1")]
    assert [_dev(t) for t in made] == [1] * len(made)
    assert all(t.device == torch.device("fakecuda", 1) for t in made)
    assert fake_cupy.state().current == 0
    assert [_dev(t) for t in (torch.zeros(1, device="fakecuda"), torch.ones(1, device="fakecuda:0"))] == [0, 0]


def test_ops_on_device_1_run_on_device_1(fakecuda, standin_state):
    """Kernels of fakecuda:1 tensors run inside Device(1): an unbound kernel would hit the stand-in's
    "Array device must be same as the current device" error."""
    x = torch.randn(2, 3, 8, 8, device="fakecuda:1", requires_grad=True)
    w = torch.randn(4, 3, 3, 3, device="fakecuda:1", requires_grad=True)
    y = F.max_pool2d(F.relu(F.conv2d(x, w, padding=1)), 2)
    loss = (torch.softmax(y.flatten(1), 1) * torch.arange(64.0, device="fakecuda:1")).sum()
    loss.backward()
    assert standin_state.device_errors == 0
    assert {_dev(t) for t in (y, loss, x.grad, w.grad)} == {1}
    assert standin_state.current == 0


def test_current_device_does_not_move_device_0_work(fakecuda, standin_state):
    """With device 1 current (set_device), fakecuda:0 tensors are still made and computed on device 0."""
    fake_cupy.cuda.runtime.setDevice(1)
    a = torch.ones(3, device="fakecuda:0")
    b = (a * 2 + torch.arange(3.0, device="fakecuda:0")).sum()
    assert _dev(a) == 0 and _dev(b) == 0 and b.item() == 9.0
    assert standin_state.current == 1 and standin_state.device_errors == 0


def test_unbound_kernels_would_fail(fakecuda, standin_state):
    """The stand-in really refuses a kernel on another device's arrays (so the tests above mean something)."""
    x = torch.ones(2, device="fakecuda:1")
    with pytest.raises(ValueError, match="Array device must be same as the current device"):
        fakecuda.kernels["add"](x._data, x._data)          # the unbound table of the current device 0


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8",
                                   "bool"])
def test_transfers_cpu_and_between_devices(fakecuda, dtype):
    """cpu -> fakecuda:0 -> fakecuda:1 -> cpu keeps values and dtype; each step is an independent copy."""
    dt = getattr(torch, dtype)
    vals = np.arange(6).reshape(2, 3) % (2 if dtype == "bool" else 6)
    cpu = torch.tensor(vals, dtype=dt)
    d0 = cpu.to("fakecuda")
    d1 = d0.to("fakecuda:1")
    back = d1.cpu()
    assert (_dev(d0), _dev(d1)) == (0, 1)
    assert back.dtype is dt and back.tolist() == cpu.tolist() and back.device.type == "cpu"
    d0.zero_()
    assert d1.tolist() == cpu.tolist()
    assert torch.ones(2, 3).t().to("fakecuda:1").tolist() == [[1.0, 1.0]] * 3      # non-contiguous source


def test_gradients_flow_back_across_transfers(fakecuda):
    """cpu -> fakecuda:1 -> fakecuda:0 -> loss: the gradient comes back to cpu; and a fakecuda:0
    parameter gets its gradient through a cpu computation."""
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = (x.to("fakecuda:1") * 3).to("fakecuda:0")
    (y * y).sum().backward()
    assert x.grad.device.type == "cpu" and x.grad.tolist() == [18.0, 36.0, 54.0]
    w = torch.tensor([0.5, -1.0], device="fakecuda", requires_grad=True)
    (w.cpu() ** 2).sum().backward()
    assert w.grad.device == torch.device("fakecuda:0") and _dev(w.grad) == 0 and w.grad.tolist() == [1.0, -2.0]


def test_mixing_devices_is_a_clear_error(fakecuda):
    a, b, c = torch.ones(2, device="fakecuda:0"), torch.ones(2, device="fakecuda:1"), torch.ones(2)
    with pytest.raises(RuntimeError, match="fakecuda:0.*fakecuda:1|fakecuda:1.*fakecuda:0"):
        a + b
    with pytest.raises(RuntimeError) as info:
        torch.matmul(c, a)
    assert "fakecuda:0" in str(info.value) and "cpu" in str(info.value)


def test_reductions_stay_on_the_device_until_item(fakecuda, standin_state):
    """A full reduction is a 0-d device array; only .item() copies to the host."""
    x = torch.arange(12.0, device="fakecuda").reshape(3, 4)
    before = standin_state.d2h
    s = (x * x).sum()
    m = x.amax()
    a = x.argmax()
    assert isinstance(s._data, fake_cupy.ndarray) and s._data.ndim == 0 and m._data.ndim == 0
    assert standin_state.d2h == before
    assert s.item() == float((np.arange(12.0) ** 2).sum()) and a.item() == 11
    assert standin_state.d2h == before + 2


def test_kernels_never_copy_to_the_host_in_a_training_step(fakecuda, standin_state, monkeypatch):
    """In a CNN training step (conv, batch norm, relu, max pool, linear, cross entropy, SGD), every
    device-to-host copy is one the frontend asked for through the to_numpy kernel (.item(), index
    checks): no kernel synchronises behind its back."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Linear(8 * 4 * 4, 10)).to("fakecuda")
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x = torch.randn(4, 3, 8, 8, device="fakecuda")
    y = torch.randint(0, 10, (4,), device="fakecuda")
    table = x._k
    calls = {"n": 0}
    real = table["to_numpy"]

    def counted(a):
        calls["n"] += 1
        return real(a)
    monkeypatch.setitem(table, "to_numpy", counted)

    def step():
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss.item()
    first = step()
    calls["n"], before = 0, standin_state.d2h
    for _ in range(5):
        last = step()
    assert standin_state.d2h - before == calls["n"]
    assert last < first and standin_state.device_errors == 0


# -- random numbers ------------------------------------------------------------------------------------
def test_each_device_is_seeded_and_draws_on_its_own_memory(fakecuda):
    """manual_seed seeds every device's generator alike; draws land on the device; streams of the
    two devices advance independently."""
    torch.manual_seed(7)
    a0 = torch.rand(5, device="fakecuda:0")
    a1 = torch.rand(5, device="fakecuda:1")
    assert (_dev(a0), _dev(a1)) == (0, 1) and a0.tolist() == a1.tolist()
    b0 = torch.rand(5, device="fakecuda:0")
    assert b0.tolist() != a0.tolist()
    torch.manual_seed(7)
    torch.rand(5, device="fakecuda:1")
    torch.rand(5, device="fakecuda:1")
    assert torch.rand(5, device="fakecuda:0").tolist() == a0.tolist()


def test_generator_state_snapshots(fakecuda):
    """get_state / set_state (a deep copy of the counter-based state) replays the same numbers."""
    g = torch.Generator(device="fakecuda").manual_seed(3)
    torch.randn(4, generator=g, device="fakecuda")
    state = g.get_state()
    a = torch.randn(6, generator=g, device="fakecuda").tolist()
    g.set_state(state)
    assert torch.randn(6, generator=g, device="fakecuda").tolist() == a
    assert copy.deepcopy(state) is not state


# -- tensorplug.cuda and x.cuda() with a backend serving "cuda" ----------------------------------------
def test_cuda_module_reports_the_devices(cuda_standin, standin_state):
    cu = tensorplug.cuda
    assert cu.is_available() and cu.device_count() == 2 and cu.current_device() == 0
    assert cu.get_device_name() == "Fake CUDA Device (NumPy stand-in)" and cu.get_device_capability(1) == (9, 0)
    cu.set_device(1)
    assert cu.current_device() == 1 and standin_state.current == 1
    with cu.device(0):
        assert cu.current_device() == 0
    assert cu.current_device() == 1
    cu.set_device("cuda:0")
    syncs = standin_state.syncs
    cu.synchronize()
    cu.synchronize("cuda:1")
    assert standin_state.syncs == syncs + 2
    cu.empty_cache()
    assert standin_state.freed == 1 and isinstance(cu.memory_allocated(), int)
    with pytest.raises(RuntimeError, match="invalid device ordinal 2"):
        cu.set_device(2)
    with pytest.raises(ValueError, match="expected a cuda device"):
        cu.synchronize("cpu")


def test_tensor_and_module_cuda_methods(cuda_standin):
    """x.cuda(), x.cuda(1), x.to("cuda"), device="cuda" creation, Module.cuda() and a training step."""
    x = torch.arange(4.0)
    assert x.cuda().device == torch.device("cuda", 0) and x.cuda(1).device == torch.device("cuda", 1)
    assert x.to("cuda").is_cuda and torch.ones(2, device="cuda").device == torch.device("cuda:0")
    assert _dev(x.cuda(1)) == 1
    model = nn.Linear(4, 2).cuda()
    assert all(p.device == torch.device("cuda:0") for p in model.parameters())
    loss = model(x.cuda().unsqueeze(0)).pow(2).sum()
    loss.backward()
    assert model.weight.grad.is_cuda and loss.cpu().device.type == "cpu"
    assert model.cpu().weight.device.type == "cpu"


def test_cuda_seeding_functions(cuda_standin):
    """manual_seed seeds the current device only; manual_seed_all every device."""
    cu = tensorplug.cuda
    cu.manual_seed_all(11)
    a0, a1 = torch.rand(4, device="cuda:0").tolist(), torch.rand(4, device="cuda:1").tolist()
    assert a0 == a1
    cu.manual_seed_all(11)
    cu.set_device(1)
    cu.manual_seed(11)                                  # reseeds cuda:1 only
    assert torch.rand(4, device="cuda:1").tolist() == a1
    assert torch.rand(4, device="cuda:0").tolist() == a0     # cuda:0 was reseeded by manual_seed_all
    assert torch.rand(4, device="cuda:0").tolist() != a0     # ... and then advanced
    assert cu.initial_seed() == 11
    cu.set_device(0)


def test_cuda_rng_state_round_trips_and_saves(cuda_standin, tmp_path):
    """tensorplug.cuda.get_rng_state is a uint8 cpu tensor (the backend's SplitMix64 key and counter);
    set_rng_state restores the stream, also after save/load, and per device."""
    cu = tensorplug.cuda
    cu.manual_seed_all(5)
    torch.rand(3, device="cuda:1")
    s = cu.get_rng_state("cuda:1")
    assert s.dtype == torch.uint8 and s.device.type == "cpu"
    torch.save(s, tmp_path / "cuda_rng.pt")
    a = torch.rand(6, device="cuda:1").tolist()
    cu.set_rng_state(s, "cuda:1")
    assert torch.rand(6, device="cuda:1").tolist() == a
    cu.set_rng_state(torch.load(tmp_path / "cuda_rng.pt"), "cuda:1")
    assert torch.rand(6, device="cuda:1").tolist() == a
    with pytest.raises(RuntimeError, match="cannot be restored"):
        cu.set_rng_state(torch.get_rng_state(), "cuda:0")     # a numpy (cpu) state on the cuda backend
    with pytest.raises(TypeError, match="tuple form"):
        cu.set_rng_state((5, None))


def test_tf32_is_off_unless_asked(cuda_standin, standin_state, monkeypatch):
    """Building the kernels sets CuPy's float32 compute type to DEFAULT (no TF32); set_allow_tf32 and
    TENSORPLUG_CUDA_TF32=1 turn TF32 on."""
    standin_state.compute_type["float32"] = 7          # as if CUPY_TF32=1 had been set
    torch.ones(1, device="cuda")                       # builds the table
    assert standin_state.compute_type["float32"] == 1 and not tensorplug.cuda.is_tf32_enabled()
    tensorplug.cuda.set_allow_tf32(True)
    assert standin_state.compute_type["float32"] == 7 and tensorplug.cuda.is_tf32_enabled()
    tensorplug.cuda.set_allow_tf32(False)
    assert standin_state.compute_type["float32"] == 1
    monkeypatch.setenv("TENSORPLUG_CUDA_TF32", "1")
    from _standin import make_standin
    b = make_standin()
    b.kernels
    assert b.allow_tf32 and standin_state.compute_type["float32"] == 7


def test_cuda_module_without_a_cuda_backend():
    """Without a usable backend for "cuda": False / 0, seeding and empty_cache do nothing, the rest
    raises with the registry's reason."""
    cu = tensorplug.cuda
    if cu.is_available():
        pytest.skip("a usable CUDA backend is present on this machine")
    assert cu.device_count() == 0
    cu.manual_seed(1)
    cu.manual_seed_all(1)
    cu.empty_cache()
    for fn in (cu.current_device, cu.synchronize, lambda: cu.set_device(0)):
        with pytest.raises(RuntimeError, match="no available backend for device type 'cuda'"):
            fn()
    with pytest.raises(RuntimeError, match="no available backend for device type 'cuda'"):
        torch.ones(1).cuda()
