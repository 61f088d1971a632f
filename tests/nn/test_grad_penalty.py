"""The gradient-penalty program of seed 000 ("higher-order gradients") on a ResNet-18:

    grad_params = autograd.grad(loss, model.parameters(), create_graph=True)
    grad_norm = sqrt(sum(g.pow(2).sum()));  grad_norm.backward()

The .grad it leaves (second derivatives through conv, batch norm, ReLU, max pool, adaptive average
pool, linear, log_softmax and nll_loss) is compared with central finite differences of grad_norm,
each of which recomputes the gradient norm with autograd.grad at perturbed parameters.

The model stays in training mode (as in the seed: a fresh `resnet18()`), so batch norm normalises
with the batch statistics and its second derivatives through the mean and variance are exercised;
the running statistics it updates on every forward do not affect the output in training mode.
"""
from __future__ import annotations

import importlib.util
import math
import pathlib

import numpy as np
import pytest

import tensorplug as tp

_EXAMPLE = pathlib.Path(__file__).resolve().parents[2] / "examples" / "resnet.py"


def _load_example():
    spec = importlib.util.spec_from_file_location("tensorplug_example_resnet", _EXAMPLE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


resnet = _load_example()


def test_resnet18_layout():
    tp.manual_seed(0)
    model = resnet.resnet18()
    names = [n for n, _ in model.named_parameters()]
    assert names[:3] == ["conv1.weight", "bn1.weight", "bn1.bias"]
    assert names[-2:] == ["fc.weight", "fc.bias"]
    for n in ("layer1.0.conv1.weight", "layer1.1.bn2.bias", "layer2.0.downsample.0.weight",
              "layer2.0.downsample.1.weight", "layer4.1.conv2.weight"):
        assert n in names
    assert "layer1.0.downsample.0.weight" not in names
    assert len(names) == 62
    assert sum(p.numel() for p in model.parameters()) == 11689512      # torchvision's resnet18()
    assert "bn1.running_mean" in model.state_dict() and "layer3.0.bn1.num_batches_tracked" in model.state_dict()
    shapes = dict((n, tuple(p.shape)) for n, p in model.named_parameters())
    assert shapes["conv1.weight"] == (64, 3, 7, 7)
    assert shapes["layer3.0.conv1.weight"] == (256, 128, 3, 3)
    assert shapes["layer4.0.downsample.0.weight"] == (512, 256, 1, 1)
    assert shapes["fc.weight"] == (1000, 512)
    assert resnet.resnet18(num_classes=7).fc.weight.shape == (7, 512)


def test_resnet18_forward_shape_and_eval():
    tp.manual_seed(0)
    model = resnet.resnet18(num_classes=5)
    x = tp.randn(2, 3, 32, 32)
    out = model(x)
    assert tuple(out.shape) == (2, 5) and out.dtype == tp.float32
    model.eval()
    with tp.no_grad():
        a, b = model(x), model(x)
    np.testing.assert_array_equal(a.numpy(), b.numpy())


def _entry(t, idx):
    return float(t.detach()[idx].item())


def test_gradient_penalty_matches_finite_differences():
    tp.manual_seed(0)
    model = resnet.resnet18(num_classes=10).double()
    model.train()
    x = tp.randn(2, 3, 64, 64, dtype=tp.float64, requires_grad=True)
    target = tp.tensor([3, 7])

    # the seed's program
    output = model(x)
    loss = tp.nn.functional.nll_loss(tp.nn.functional.log_softmax(output, dim=1), target)
    params = list(model.parameters())
    grad_params = tp.autograd.grad(loss, params, create_graph=True)
    assert all(g.requires_grad for g in grad_params)
    grad_norm = 0
    for g in grad_params:
        grad_norm = grad_norm + g.pow(2).sum()
    grad_norm = grad_norm.sqrt()
    grad_norm.backward()
    assert all(p.grad is not None and p.grad.shape == p.shape for p in params)
    assert x.grad is not None

    def norm_at():
        _, gn = resnet.gradient_norm(model, x.detach(), target, create_graph=False)
        return gn.item()

    base = norm_at()
    assert base == pytest.approx(grad_norm.item(), rel=1e-12)

    eps = 1e-5
    checks = [(model.fc.weight, (0, 0)), (model.layer1[0].conv1.weight, (0, 0, 0, 0)), (model.bn1.weight, (0,)),
              (model.layer4[0].downsample[1].bias, (5,)), (x, (0, 1, 5, 7))]
    for t, idx in checks:
        orig = _entry(t, idx)
        vals = []
        for v in (orig + eps, orig - eps):
            with tp.no_grad():
                t[idx] = v
            vals.append(norm_at())
        with tp.no_grad():
            t[idx] = orig
        fd = (vals[0] - vals[1]) / (2 * eps)
        got = _entry(t.grad, idx)
        assert math.isfinite(got) and abs(fd) > 1e-8
        assert got == pytest.approx(fd, rel=1e-6, abs=1e-9), (idx, got, fd)
    assert norm_at() == pytest.approx(base, rel=1e-12)      # the parameters are restored
