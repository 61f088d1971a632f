"""nn.SyncBatchNorm in one process without a process group (plain batch norm, as PyTorch), its
conversion of BatchNorm layers, its errors, and saving under PyTorch's module path. The
multi-process synchronization is tests/distributed/test_dist_sync_batchnorm.py."""
import io
import pickletools
import re
import zipfile

import numpy as np
import pytest

import tensorplug as torch
import tensorplug.nn as nn


def ref_bn(x, w, b, g, eps=1e-5):
    axes = (0,) + tuple(range(2, x.ndim))
    bs = (1, x.shape[1]) + (1,) * (x.ndim - 2)
    n = x.size // x.shape[1]
    mean, var = x.mean(axes), x.var(axes)
    inv = 1 / np.sqrt(var + eps)
    xhat = (x - mean.reshape(bs)) * inv.reshape(bs)
    dx = (w * inv).reshape(bs) * (g - g.mean(axes, keepdims=True) - xhat * ((g * xhat).sum(axes) / n).reshape(bs))
    return xhat * w.reshape(bs) + b.reshape(bs), mean, var * n / (n - 1), dx, (g * xhat).sum(axes), g.sum(axes)


def test_module_path_and_exports():
    """PyTorch's path: torch.nn.modules.batchnorm.SyncBatchNorm, also nn.SyncBatchNorm."""
    from tensorplug.nn.modules.batchnorm import SyncBatchNorm
    assert nn.SyncBatchNorm is SyncBatchNorm
    assert SyncBatchNorm.__module__ == "tensorplug.nn.modules.batchnorm"
    assert issubclass(SyncBatchNorm, nn.modules.batchnorm._BatchNorm)


@pytest.mark.parametrize("shape", [(6, 3), (4, 3, 5), (3, 3, 2, 2), (2, 3, 2, 2, 2)])
def test_without_process_group_is_batch_norm(shape):
    """Training without a process group: outputs, running stats, gradients of batch norm (float64)."""
    rng = np.random.default_rng(0)
    m = nn.SyncBatchNorm(3).double()
    w, b = rng.uniform(0.5, 1.5, 3), rng.standard_normal(3)
    with torch.no_grad():
        m.weight.copy_(torch.from_numpy(w))
        m.bias.copy_(torch.from_numpy(b))
    X, G = rng.standard_normal(shape) * 2 + 1, rng.standard_normal(shape)
    x = torch.from_numpy(X).requires_grad_(True)
    y = m(x)
    (y * torch.from_numpy(G)).sum().backward()
    ry, mean, uvar, dx, dw, db = ref_bn(X, w, b, G)
    np.testing.assert_allclose(y.detach().numpy(), ry, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(m.running_mean.numpy(), 0.1 * mean, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(m.running_var.numpy(), 0.9 + 0.1 * uvar, rtol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), dx, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(m.weight.grad.numpy(), dw, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(m.bias.grad.numpy(), db, rtol=1e-10, atol=1e-12)
    assert int(m.num_batches_tracked.item()) == 1


def test_eval_uses_running_stats():
    m = nn.SyncBatchNorm(2).double().eval()
    with torch.no_grad():
        m.running_mean.copy_(torch.tensor([1.0, -2.0], dtype=torch.float64))
        m.running_var.copy_(torch.tensor([4.0, 0.5], dtype=torch.float64))
    X = np.arange(8, dtype=np.float64).reshape(4, 2)
    want = (X - [1.0, -2.0]) / np.sqrt(np.array([4.0, 0.5]) + 1e-5)
    np.testing.assert_allclose(m(torch.from_numpy(X)).detach().numpy(), want, rtol=1e-12)
    assert int(m.num_batches_tracked.item()) == 0


def test_momentum_none_and_untracked():
    """momentum=None: the cumulative average; track_running_stats=False: batch stats in eval too."""
    rng = np.random.default_rng(1)
    m = nn.SyncBatchNorm(2, momentum=None, affine=False).double()
    X1, X2 = rng.standard_normal((5, 2)), rng.standard_normal((7, 2))
    m(torch.from_numpy(X1))
    m(torch.from_numpy(X2))
    np.testing.assert_allclose(m.running_mean.numpy(), (X1.mean(0) + X2.mean(0)) / 2, rtol=1e-12)
    np.testing.assert_allclose(m.running_var.numpy(), (X1.var(0, ddof=1) + X2.var(0, ddof=1)) / 2, rtol=1e-12)
    u = nn.SyncBatchNorm(2, track_running_stats=False).double().eval()
    assert u.running_mean is None
    np.testing.assert_allclose(u(torch.from_numpy(X1)).detach().numpy(),
                               (X1 - X1.mean(0)) / np.sqrt(X1.var(0) + 1e-5), rtol=1e-12)


def test_repr_and_bias_flag():
    """PyTorch 2.13's repr (with bias=) and its keyword-only `bias`."""
    assert repr(nn.SyncBatchNorm(3)) == ("SyncBatchNorm(3, eps=1e-05, momentum=0.1, affine=True, bias=True, "
                                         "track_running_stats=True)")
    m = nn.SyncBatchNorm(3, bias=False)
    assert m.bias is None and list(m.state_dict()) == ["weight", "running_mean", "running_var",
                                                       "num_batches_tracked"]
    assert "bias=False" in repr(m)


@pytest.mark.parametrize("shape, message", [((3,), "expected at least 2D input (got 1D input)"),
                                            ((2, 0), "number of input channels should be non-zero"),
                                            ((1, 3), "more than 1 value per channel")])
def test_bad_input(shape, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        nn.SyncBatchNorm(3)(torch.ones(*shape))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 2, 1)
        self.bn = nn.BatchNorm2d(2, momentum=0.3, eps=1e-3)
        self.block = nn.Sequential(nn.Linear(2, 4), nn.BatchNorm1d(4, affine=False), nn.ReLU())


def test_convert_sync_batchnorm():
    """Every BatchNorm*d (nested too) becomes a SyncBatchNorm sharing its parameters and buffers,
    with its hyper-parameters, requires_grad, training flag and the process group."""
    net = Net()
    with torch.no_grad():
        net.bn.weight.fill_(2.0)
        net.bn.running_mean.fill_(0.5)
    net.bn.bias.requires_grad_(False)
    net.block[1].eval()
    old_w, old_rm = net.bn.weight, net.bn.running_mean
    keys = list(net.state_dict())
    group = object()
    out = nn.SyncBatchNorm.convert_sync_batchnorm(net, process_group=group)
    assert out is net                                   # a non-BatchNorm root is kept, children swapped
    assert type(out.bn) is nn.SyncBatchNorm and type(out.block[1]) is nn.SyncBatchNorm
    assert type(out.block[0]) is nn.Linear and type(out.conv) is nn.Conv2d
    assert out.bn.weight is old_w and out.bn.running_mean is old_rm
    assert float(out.bn.weight[0]) == 2.0 and out.bn.bias.requires_grad is False
    assert (out.bn.momentum, out.bn.eps, out.bn.num_features) == (0.3, 1e-3, 2)
    assert out.block[1].affine is False and out.block[1].weight is None
    assert out.block[1].training is False and out.bn.training is True
    assert out.bn.process_group is group
    assert list(out.state_dict()) == keys
    root = nn.SyncBatchNorm.convert_sync_batchnorm(nn.BatchNorm3d(5))
    assert type(root) is nn.SyncBatchNorm and root.num_features == 5


def test_save_names_pytorch_path_and_loads_back():
    m = nn.Sequential(nn.Linear(2, 3), nn.SyncBatchNorm(3))
    with torch.no_grad():
        m[1].running_mean.copy_(torch.tensor([1.0, 2.0, 3.0]))
    buf = io.BytesIO()
    torch.save(m, buf)
    with zipfile.ZipFile(io.BytesIO(buf.getvalue())) as z:
        pkl = z.read(next(n for n in z.namelist() if n.endswith("data.pkl")))
    globals_named = {arg for op, arg, _ in pickletools.genops(pkl) if op.name == "GLOBAL"}
    assert "torch.nn.modules.batchnorm SyncBatchNorm" in globals_named
    back = torch.load(io.BytesIO(buf.getvalue()), weights_only=False)
    assert type(back[1]) is nn.SyncBatchNorm
    np.testing.assert_array_equal(back[1].running_mean.numpy(), [1.0, 2.0, 3.0])


def test_onnx_export_in_eval():
    """ONNX export (eval) writes a BatchNormalization node (the fx check is in tests/fx)."""
    m = nn.Sequential(nn.Conv2d(1, 2, 1), nn.SyncBatchNorm(2)).eval()
    x = torch.randn(2, 1, 3, 3)
    buf = io.BytesIO()
    torch.onnx.export(m, (x,), buf)
    assert b"BatchNormalization" in buf.getvalue()
