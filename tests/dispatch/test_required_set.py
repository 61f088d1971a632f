"""API version 2's required set: 40 primitives, every other kernel decomposed; a backend written for
version 1 keeps its extra kernels as native optional ones; a backend of the 40 alone trains the demo."""
import numpy as np

import tensorplug as torch
from tensorplug.dispatch import API_VERSION, OPTIONAL, REQUIRED, Backend, hookimpl, registry
from tensorplug.dispatch import backend_api
from tensorplug.dispatch.decompositions import DECOMPOSITIONS


def _numpy_kernels():
    return registry.compute["numpy"].kernels


def _register(backend):
    class Plugin:
        @hookimpl
        def tensorplug_register_backends(self, registry):
            registry.add(backend)
    registry.register_plugin(Plugin(), name=f"test-plugin-{backend.name}")   # conftest unregisters it
    return backend


class RequiredOnly(Backend):
    """The required primitives alone, each NumPy's kernel; device type "minimal"."""
    name, device_type, indexed, version = "required-only", "minimal", False, "0"
    dtypes = backend_api.Backend.dtypes | {"complex64", "complex128"}

    def native_kernels(self):
        return {n: _numpy_kernels()[n] for n in REQUIRED}


class Version1(Backend):
    """A backend written for API version 1: the 82 kernels it required, counted when called."""
    name, device_type, indexed, version, api_version = "written-for-v1", "v1dev", False, "0", 1

    def native_kernels(self):
        self.calls = {}

        def counted(n, fn):
            def kernel(*a, **kw):
                self.calls[n] = self.calls.get(n, 0) + 1
                return fn(*a, **kw)
            return kernel
        return {n: counted(n, _numpy_kernels()[n]) for n in backend_api.REQUIRED_V1}


def test_api_version_2_requires_40_primitives():
    """REQUIRED_NAMES is the 40 of version 2; REQUIRED adds only structural kernels still waiting for a
    decomposition in decompositions_structural.py."""
    assert API_VERSION == 2
    assert len(backend_api.REQUIRED_NAMES) == len(set(backend_api.REQUIRED_NAMES)) == 40
    pending = set(REQUIRED) - set(backend_api.REQUIRED_NAMES)
    assert pending == set(backend_api._structural_pending()) <= set(backend_api.STRUCTURAL)
    assert set(backend_api.REQUIRED_NAMES) <= set(backend_api.REQUIRED_V1)
    assert len(backend_api.REQUIRED_V1) == 82


def test_every_demoted_kernel_is_optional_with_a_decomposition():
    """The 42 kernels version 1 required beyond the 40 are optional, each with a decomposition (the
    structural ones once decompositions_structural.py provides them)."""
    demoted = [n for n in backend_api.REQUIRED_V1 if n not in REQUIRED]
    assert len(demoted) + len(REQUIRED) == 82
    assert [n for n in demoted if n not in OPTIONAL or n not in DECOMPOSITIONS] == []
    assert not set(REQUIRED) & set(OPTIONAL)


def test_a_version_1_backend_keeps_working():
    """api_version 1 is accepted; its 82 kernels are all native (none replaced by a decomposition),
    the ops it runs call its own kernels, and `backends show` counts them native."""
    b = _register(Version1())
    status = b.kernel_status()
    assert {status[n] for n in backend_api.REQUIRED_V1} == {"native"}
    assert b.missing_required() == []
    x = torch.tensor([[3.0, -1.5], [0.25, 8.0]], device="v1dev")
    y = torch.tensor([1.0, 2.0], device="v1dev")
    got = [torch.sub(x, y), torch.abs(x), torch.maximum(x, y), torch.atan2(x, y), x.sqrt(), x > y]
    a, c = x.to("cpu").numpy().astype(np.float64), y.to("cpu").numpy().astype(np.float64)
    with np.errstate(invalid="ignore"):
        want = [a - c, np.abs(a), np.maximum(a, c), np.arctan2(a, c), np.sqrt(a), a > c]
    for g, w in zip(got, want):
        assert g.device.type == "v1dev"
        np.testing.assert_allclose(g.to("cpu").numpy(), w, rtol=1e-6)
    assert all(b.calls.get(n, 0) >= 1 for n in ("sub", "abs", "maximum", "atan2", "sqrt", "gt"))
    from typer.testing import CliRunner

    from tensorplug.cli.app import app
    r = CliRunner().invoke(app, ["backends", "show", "written-for-v1"])
    assert r.exit_code == 0, r.output
    assert "SPI version 1 (tensorplug provides 2)" in r.output
    assert f"{len(REQUIRED) + len(OPTIONAL)} kernels: 82 native" in r.output


def test_the_required_set_alone_runs_ops_through_decompositions():
    """On the required-only backend the demoted kernels are decomposed and give NumPy's values."""
    b = _register(RequiredOnly())
    status = b.kernel_status()
    assert {status[n] for n in REQUIRED} == {"native"}
    assert {status[n] for n in OPTIONAL} == {"decomposed"}
    x = torch.tensor([[-2.5, 0.5, 3.0], [1.5, -0.5, 7.0]], device="minimal")
    a = x.to("cpu").numpy().astype(np.float64)
    np.testing.assert_array_equal(torch.round(x).to("cpu").numpy(), np.rint(a))
    np.testing.assert_allclose(torch.tanh(x).to("cpu").numpy(), np.tanh(a), rtol=1e-6)
    i = torch.tensor([-7, 5, 9, -128], dtype=torch.int16, device="minimal")
    j = torch.tensor([3, -2, 4, 5], dtype=torch.int16, device="minimal")
    iv, jv = i.to("cpu").numpy().astype(np.int64), j.to("cpu").numpy().astype(np.int64)
    assert torch.fmod(i, j).tolist() == np.fmod(iv, jv).tolist()
    assert (i | j).tolist() == (iv | jv).tolist() and (i ^ j).tolist() == (iv ^ jv).tolist()
    assert (i << 3).tolist() == ((iv << 3).astype(np.int16)).tolist() and (i >> 2).tolist() == (iv >> 2).tolist()
    y = x.clone()
    y.sub_(1.0)                                     # in place: out= aliases the input
    np.testing.assert_array_equal(y.to("cpu").numpy(), a - 1)


def _demo_losses(device, steps, batch=64):
    from tensorplug import nn
    from tensorplug.cli.demo import build_model
    from tensorplug.vision.datasets import Digits

    digits = Digits(train=None)
    images, labels = (digits.data.float() / 16).unsqueeze(1), digits.targets
    torch.manual_seed(0)
    model = build_model(nn).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=5e-3)
    criterion = nn.CrossEntropyLoss()
    losses = []
    for s in range(steps):
        xb = images[s * batch:(s + 1) * batch].to(device)
        yb = labels[s * batch:(s + 1) * batch].to(device)
        opt.zero_grad()
        loss = criterion(model(xb), yb)
        loss.backward()
        opt.step()
        assert loss.device.type == device and model[0].weight.grad.device.type == device
        losses.append(loss.item())
    # the loss on the first batch again, after training
    with torch.no_grad():
        losses.append(criterion(model(images[:batch].to(device)), labels[:batch].to(device)).item())
    return np.array(losses)


def test_the_required_set_alone_trains_the_digits_demo():
    """The demo's CNN (conv, max-pool, linear, cross entropy, Adam) trained for 12 steps on the
    required-only backend: the loss drops, and matches the NumPy backend's to float32 rounding."""
    _register(RequiredOnly())
    minimal = _demo_losses("minimal", 12)
    cpu = _demo_losses("cpu", 12)
    assert minimal[-1] < 0.7 * minimal[0]
    np.testing.assert_allclose(minimal, cpu, rtol=1e-5)
