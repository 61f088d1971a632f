"""tensorplug.accelerator, and device indices as ints (device(0), x.to(0), device=0): the accelerator is
found through the registry (here a plugin backend serving an indexed device type "npu")."""
import numpy as np
import pytest

import tensorplug as torch
from tensorplug import accelerator as acc

NONE = "^Cannot access accelerator device when none is available.$"


@pytest.fixture(autouse=True)
def _no_current_index(monkeypatch):
    monkeypatch.setattr(acc, "_current", {})


@pytest.fixture
def npu(add_backend):
    """An accelerator: two "npu" devices served by a plugin backend with NumPy's kernels."""
    return add_backend("npu_backend", device_type="npu", indexed=True, count=2)


def test_without_an_accelerator():
    """PyTorch's answers on a machine without one (skips where this machine has one)."""
    if acc.is_available():
        pytest.skip("this machine has an accelerator")
    assert acc.current_accelerator() is None and acc.current_accelerator(check_available=True) is None
    assert acc.device_count() == 0
    for call in (acc.current_device_index, lambda: acc.set_device_index(0), acc.synchronize,
                 lambda: acc.synchronize(0), lambda: acc.set_device_index("npu:0")):
        with pytest.raises(RuntimeError, match=NONE):
            call()
    assert acc.set_device_index(-1) is None                 # a negative index is a no-op
    with acc.device_index(None):
        pass
    with pytest.warns(FutureWarning, match="^Use `current_device_index` instead.$"):
        with pytest.raises(RuntimeError, match=NONE):
            acc.current_device_idx()


def test_plugin_accelerator(npu):
    """A registered, available, indexed device type is the accelerator."""
    assert acc.is_available() and acc.device_count() == 2
    assert acc.current_accelerator() is torch.device("npu") and acc.current_accelerator().index is None
    assert torch.accelerator.current_device_index() == 0


def test_current_device_index(npu):
    """set_device_index takes an int, "npu:1" or a device; it checks the range and the device type;
    device_index() restores the previous device; the deprecated aliases warn and still work."""
    acc.set_device_index(1)
    assert acc.current_device_index() == 1
    acc.set_device_index("npu:0")
    assert acc.current_device_index() == 0
    acc.set_device_index(torch.device("npu", 1))
    with acc.device_index(0):
        assert acc.current_device_index() == 0
    assert acc.current_device_index() == 1
    with pytest.raises(RuntimeError, match="invalid device ordinal 2: 2 npu device"):
        acc.set_device_index(2)
    with pytest.raises(RuntimeError, match="Accelerator expected"):
        acc.set_device_index("cpu")
    with pytest.raises(ValueError, match="Expected a torch.device with a specified index or an integer"):
        acc.set_device_index(None)
    with pytest.warns(FutureWarning, match="^Use `set_device_index` instead.$"):
        acc.set_device_idx(0)
    with pytest.warns(FutureWarning, match="^Use `current_device_index` instead.$"):
        assert acc.current_device_idx() == 0
    acc.synchronize()
    acc.synchronize("npu:1")
    with pytest.raises(RuntimeError, match="invalid device ordinal 5"):
        acc.synchronize(5)


def test_backend_current_device_is_used(npu, monkeypatch):
    """A backend with set_device / current_device / synchronize gets the calls."""
    calls = []
    monkeypatch.setattr(npu, "set_device", lambda i: calls.append(("set", i)), raising=False)
    monkeypatch.setattr(npu, "current_device", lambda: 1, raising=False)
    monkeypatch.setattr(npu, "synchronize", lambda i: calls.append(("sync", i)), raising=False)
    acc.set_device_index(0)
    acc.synchronize()
    assert acc.current_device_index() == 1 and calls == [("set", 0), ("sync", 1)]


def test_int_devices_name_the_accelerator(npu):
    """device(1) is device('npu', 1); int devices work in factories and .to(), as in PyTorch."""
    assert torch.device(1) is torch.device("npu", 1) and repr(torch.device(0)) == "device(type='npu', index=0)"
    x = torch.tensor([1.0, 2.0])
    for moved in (x.to(1), x.to(device=1), x.to(1, torch.float64), torch.zeros(2, device=1) + x.to(1)):
        assert moved.device == torch.device("npu:1") and moved.backend is npu
        assert moved.cpu().tolist() == [1.0, 2.0]
    assert torch.ones(2, 2, device=0).device == torch.device("npu:0")
    model = torch.nn.Linear(2, 1).to(1)
    assert {str(p.device) for p in model.parameters()} == {"npu:1"}
    np.testing.assert_array_equal(torch.arange(3, device=1).cpu().numpy(), np.arange(3))
    with pytest.raises(RuntimeError, match="npu:2 is out of range"):
        torch.zeros(1, device=2)
    with pytest.raises(RuntimeError, match="^Device index must not be negative$"):
        x.to(-1)


def test_which_backends_are_accelerators(add_backend):
    """Not an accelerator: a single-device type (like the "trace" example's), an unavailable backend, or
    one without devices. Among several, the highest priority wins."""
    add_backend("single", device_type="single_dev")                          # unindexed
    add_backend("off", device_type="off_dev", indexed=True, available=(False, "no device"))
    add_backend("empty", device_type="empty_dev", indexed=True, count=0)
    if not acc.is_available():
        assert acc.current_accelerator() is None
    add_backend("low", device_type="low_dev", indexed=True, priority=1)
    add_backend("high", device_type="high_dev", indexed=True, priority=7)
    assert acc.current_accelerator() is torch.device("high_dev") and acc.device_count() == 1
    assert torch.device(0) is torch.device("high_dev", 0)
