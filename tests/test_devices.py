"""Devices: device objects, and a device type introduced by a plugin ("fakedev") that works like any
other — creation with device=, .to() both ways, results staying on the device, clear mixing errors."""
import numpy as np
import pytest

import tensorplug as torch


@pytest.fixture
def fakedev(add_backend):
    """A runtime plugin backend serving the new, indexed device type "fakedev" with 2 devices."""
    return add_backend("fake", device_type="fakedev", indexed=True, count=2, counting=True)


# -- device objects --------------------------------------------------------------------------------
def test_device_parsing_and_interning():
    """device("cuda:1") == device("cuda", 1), interned; type and index; compares with strings."""
    d = torch.device("cuda:1")
    assert (d.type, d.index) == ("cuda", 1)
    assert torch.device("cuda", 1) is d
    assert d == "cuda:1" and d != "cuda:0" and str(d) == "cuda:1"
    assert repr(d) == "device(type='cuda', index=1)"
    assert repr(torch.device("cpu")) == "device(type='cpu')"
    assert torch.device(torch.device("cpu")) is torch.device("cpu")
    assert hash(torch.device("cpu")) == hash(torch.device("cpu"))


@pytest.mark.parametrize("bad", ["cuda:x", "", "cu da", "cpu:-1", "cuda:0:1"])
def test_invalid_device_strings(bad):
    """Malformed device strings raise RuntimeError naming the string."""
    with pytest.raises(RuntimeError, match="Invalid device string"):
        torch.device(bad)


def test_device_argument_errors():
    """An index alone needs an accelerator (PyTorch 2's error without one; tests/test_accelerator.py has
    the case with one); a bool is no device; cpu has a single device."""
    if torch.accelerator.is_available():
        pytest.skip("this machine has an accelerator")
    for bad in (lambda: torch.device(3), lambda: torch.zeros(1, device=0), lambda: torch.ones(2).to(0)):
        with pytest.raises(RuntimeError, match="^Cannot access accelerator device when none is available.$"):
            bad()
    with pytest.raises(RuntimeError, match="^Device index must not be negative$"):
        torch.device(-1)
    with pytest.raises(TypeError):
        torch.device(True)
    with pytest.raises(RuntimeError, match="single device"):
        torch.zeros(1, device="cpu:1")
    assert torch.zeros(1, device="cpu:0").device == torch.device("cpu")


def test_cpu_tensor_device():
    """CPU tensors report device cpu, is_cpu, not is_cuda."""
    x = torch.ones(2)
    assert x.device is torch.device("cpu") and x.is_cpu and not x.is_cuda
    assert x.cpu() is x and x.to("cpu") is x
    assert x.is_xpu is False and x.is_mps is False          # as PyTorch's CPU tensors report


# -- a device type introduced by a plugin ----------------------------------------------------------
def test_creation_on_plugin_device(fakedev):
    """torch.zeros(3, device="fakedev") lands on fakedev:0 and uses the plugin's kernels."""
    x = torch.zeros(3, device="fakedev")
    assert x.device == torch.device("fakedev", 0) and str(x.device) == "fakedev:0"
    assert x.backend is fakedev
    assert x.tolist() == [0.0, 0.0, 0.0]
    assert repr(x) == "tensor([0., 0., 0.], device='fakedev:0')"
    for t in (torch.ones(2, device="fakedev:1"), torch.tensor([1, 2], device="fakedev"),
              torch.arange(3, device="fakedev"), torch.rand(2, device="fakedev"),
              torch.full((2,), 1.5, device=torch.device("fakedev", 1)), torch.eye(2, device="fakedev")):
        assert t.device.type == "fakedev" and t.backend is fakedev


def test_results_stay_on_the_plugin_device(fakedev):
    """Ops on fakedev tensors run the plugin's kernels and return fakedev tensors."""
    x = torch.tensor([1.0, 2.0, 3.0], device="fakedev", requires_grad=True)
    y = (x * x + 1).sum()
    assert y.device.type == "fakedev" and y.item() == 17.0
    assert fakedev.calls["mul"] >= 1 and fakedev.calls["sum"] >= 1
    y.backward()
    assert x.grad.device == x.device and x.grad.tolist() == [2.0, 4.0, 6.0]
    assert torch.zeros_like(x).device == x.device


def test_to_plugin_device_and_back(fakedev):
    """.to("fakedev") and .to("cpu") move values (copies: no memory shared across devices)."""
    cpu = torch.tensor([1.0, 2.0])
    dev = cpu.to("fakedev")
    assert dev.device == torch.device("fakedev:0") and dev.tolist() == [1.0, 2.0]
    cpu.add_(10)                                # the fakedev copy must not see this
    assert dev.tolist() == [1.0, 2.0]
    back = dev.to("cpu")
    assert back.device.type == "cpu" and back.backend.name == "numpy"
    dev.mul_(3)
    assert back.tolist() == [1.0, 2.0]
    assert dev.to("fakedev") is dev
    other = dev.to("fakedev:1")
    assert other.device == torch.device("fakedev", 1) and other.tolist() == [3.0, 6.0]
    assert dev.to("fakedev", torch.float64).dtype is torch.float64
    assert torch.ones(2).to(device="fakedev", dtype=torch.int32).dtype is torch.int32


def test_gradient_flows_back_across_devices(fakedev):
    """.to() between devices is differentiable; the gradient comes back to the source device."""
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    (x.to("fakedev") * 3).sum().backward()
    assert x.grad.device.type == "cpu" and x.grad.tolist() == [3.0, 3.0]


def test_mixing_devices_names_both(fakedev):
    """An op mixing a fakedev tensor and a cpu tensor raises RuntimeError naming both devices."""
    a = torch.ones(2, device="fakedev")
    b = torch.ones(2)
    for op in (lambda: a + b, lambda: b * a, lambda: torch.add(a, b)):
        with pytest.raises(RuntimeError) as info:
            op()
        msg = str(info.value)
        assert "fakedev:0" in msg and "cpu" in msg


def test_mixing_device_indices_names_both(fakedev):
    """fakedev:0 with fakedev:1 (one backend, two devices) is refused like any device mix."""
    with pytest.raises(RuntimeError, match="fakedev:0.*fakedev:1|fakedev:1.*fakedev:0"):
        torch.ones(2, device="fakedev:0") + torch.ones(2, device="fakedev:1")


def test_plugin_device_index_out_of_range(fakedev):
    """Asking for a device index the backend does not have is an error naming the count."""
    with pytest.raises(RuntimeError, match=r"fakedev:2 is out of range.*2 fakedev device"):
        torch.zeros(1, device="fakedev:2")


def test_generator_belongs_to_a_device(fakedev):
    """Generators are per device type: a cpu generator cannot sample on fakedev."""
    g = torch.Generator(device="fakedev").manual_seed(1)
    a = torch.rand(4, generator=g, device="fakedev")
    g.manual_seed(1)
    assert torch.rand(4, generator=g, device="fakedev").tolist() == a.tolist()
    with pytest.raises(RuntimeError, match="'fakedev' device type for generator"):
        torch.rand(2, device="fakedev", generator=torch.Generator())


def test_numpy_of_a_plugin_device_tensor_needs_cpu(fakedev):
    """.numpy() of a non-cpu tensor asks for .cpu() first, as PyTorch does."""
    x = torch.ones(2, device="fakedev")
    with pytest.raises(TypeError, match="cpu"):
        x.numpy()
    assert isinstance(x.cpu().numpy(), np.ndarray)


def test_cuda_method_without_gpu_is_a_clear_error():
    """x.cuda() on a machine without a usable CUDA backend raises RuntimeError with the reason."""
    import tensorplug.backends
    ok, reason = tensorplug.backends.get("cuda").is_available()
    if ok:
        pytest.skip("a usable CUDA backend is present")
    with pytest.raises(RuntimeError, match="no available backend for device type 'cuda'"):
        torch.ones(1).cuda()


def test_each_device_has_its_own_default_generator(fakedev):
    """Default generators are per device: drawing on fakedev:1 does not restart fakedev:0's stream,
    and manual_seed reseeds them all."""
    torch.manual_seed(11)
    a0 = torch.rand(3, device="fakedev:0").tolist()
    torch.rand(3, device="fakedev:1")
    a1 = torch.rand(3, device="fakedev:0").tolist()
    assert a1 != a0
    torch.manual_seed(11)
    assert torch.rand(3, device="fakedev:0").tolist() == a0
    assert torch.rand(3, device="fakedev:0").tolist() == a1
    g = torch.Generator(device="fakedev").manual_seed(2)
    assert torch.rand(2, device="fakedev:1", generator=g).device == torch.device("fakedev:1")


# -- the default device of the factory functions ------------------------------------------------------
@pytest.fixture
def default_cpu():
    yield
    torch.set_default_device(None)


def test_default_device_of_the_factories(fakedev, default_cpu):
    """set_default_device moves every factory call without a device argument; explicit devices, tensors
    made from other tensors' devices and from_numpy keep theirs; None restores cpu."""
    assert torch.get_default_device() is torch.device("cpu")
    torch.set_default_device("fakedev:1")
    assert torch.get_default_device() is torch.device("fakedev", 1)
    made = [torch.zeros(2), torch.ones(2, 2), torch.empty(3), torch.full((2,), 1.5), torch.tensor([1.0, 2.0]),
            torch.arange(4), torch.linspace(0, 1, 3), torch.eye(2), torch.rand(2), torch.randn(2),
            torch.randint(0, 5, (3,)), torch.randperm(4)]
    assert {str(t.device) for t in made} == {"fakedev:1"}
    np.testing.assert_array_equal(made[5].cpu().numpy(), np.arange(4))
    cpu = torch.zeros(2, device="cpu")
    assert cpu.device.type == "cpu" and torch.zeros_like(cpu).device.type == "cpu"
    assert torch.from_numpy(np.ones(2)).device.type == "cpu"
    torch.set_default_device("fakedev")
    assert torch.get_default_device() is torch.device("fakedev", 0)
    torch.set_default_device(None)
    assert torch.zeros(1).device is torch.device("cpu")


def test_device_as_a_context_manager(fakedev, default_cpu):
    """`with torch.device(...)` sets the default inside, nests, and restores it on exit and on errors."""
    with torch.device("fakedev") as d:
        assert d is torch.device("fakedev") and torch.zeros(1).device == torch.device("fakedev:0")
        with torch.device("cpu"):
            assert torch.ones(1).device.type == "cpu" and torch.get_default_device().type == "cpu"
        assert torch.randn(2).device == torch.device("fakedev:0")
    assert torch.zeros(1).device.type == "cpu"
    with pytest.raises(ValueError):
        with torch.device("fakedev:1"):
            raise ValueError
    assert torch.get_default_device() is torch.device("cpu")


def test_default_device_errors(default_cpu):
    """A malformed device is refused at once; an unavailable one when a tensor is made (as in PyTorch)."""
    with pytest.raises(RuntimeError, match="Invalid device string"):
        torch.set_default_device("cu da")
    torch.set_default_device("nosuchdevice")
    with pytest.raises(RuntimeError, match="no available backend for device type 'nosuchdevice'"):
        torch.zeros(1)
    with pytest.raises(RuntimeError, match="no available backend"):
        torch.get_default_device()
