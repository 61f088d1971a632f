"""The per-op path is a dict lookup: once a device type's backend is selected, no op calls pluggy,
reads entry points or configuration, or selects again."""
import importlib.metadata

import pytest

import tensorplug as torch
from tensorplug.dispatch import config, registry


class _Forbidden:
    def __getattr__(self, name):
        raise AssertionError(f"pluggy was called on the hot path (hook {name!r})")


def _forbid(*args, **kwargs):
    raise AssertionError("selection, configuration or discovery ran on the hot path")


def test_ops_never_call_pluggy_or_reselect(monkeypatch):
    """After the first tensor, creation, arithmetic, reductions, autograd and printing run with
    pluggy, entry points, the config reader and selection all disabled."""
    torch.zeros(1)                               # selects the cpu backend
    monkeypatch.setattr(registry.pm, "hook", _Forbidden())
    monkeypatch.setattr(registry, "_select", _forbid)
    monkeypatch.setattr(registry, "ensure_loaded", _forbid)
    monkeypatch.setattr(config, "backend_settings", _forbid)
    monkeypatch.setattr(importlib.metadata, "entry_points", _forbid)

    x = torch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    y = torch.ones(2, 2) * 2 + torch.arange(4.0).reshape(2, 2)
    z = (x * y).exp().sum() + torch.full((1,), 0.5).sum()
    z.backward()
    assert x.grad.shape == (2, 2)
    assert torch.rand(3).shape == (3,) and torch.randn(2, generator=torch.Generator().manual_seed(0)).numel() == 2
    assert torch.eye(2).to(torch.float64).double().long().tolist() == [[1, 0], [0, 1]]
    assert "tensor(" in repr(z) and torch.linspace(0, 1, 3).tolist() == [0.0, 0.5, 1.0]
    assert torch.from_numpy(x.detach().numpy()).sum().item() == pytest.approx(10.0)
    assert torch.zeros_like(x).to("cpu").device.type == "cpu"


def test_tensor_holds_the_selected_kernel_table():
    """A tensor's `_k` is its backend's kernel table, built once per backend."""
    backend = registry.backend_for("cpu")
    a, b = torch.ones(2), torch.zeros(3)
    assert a._k is b._k is backend.kernels
    assert a._k["__backend__"] is backend
