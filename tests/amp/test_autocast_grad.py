"""Gradients through autocast regions: float32 leaves get float32 gradients, whose values are those
of the low-precision computation (checked against float64 NumPy references)."""
from __future__ import annotations

import ml_dtypes
import numpy as np

import tensorplug as torch
import tensorplug.nn.functional as F


def _bf16(a):
    return np.asarray(a, dtype=np.float64).astype(np.float32).astype(ml_dtypes.bfloat16).astype(np.float64)


def _data(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def test_matmul_gradients_reach_float32_leaves_in_float32():
    a_np, b_np = _data(3, 4), _data(4, 5, seed=1)
    a = torch.tensor(a_np, requires_grad=True)
    b = torch.tensor(b_np, requires_grad=True)
    with torch.autocast("cpu"):
        y = a @ b
        assert y.dtype is torch.bfloat16
    y.float().sum().backward()
    assert a.grad.dtype is torch.float32 and b.grad.dtype is torch.float32
    # d sum(a b) / da = 1 b^T, from bfloat16 copies of the operands, rounded to bfloat16
    ga = _bf16(np.ones((3, 5)) @ _bf16(b_np).T)
    gb = _bf16(_bf16(a_np).T @ np.ones((3, 5)))
    np.testing.assert_allclose(a.grad.numpy(), ga, rtol=2 ** -7)
    np.testing.assert_allclose(b.grad.numpy(), gb, rtol=2 ** -7)


def test_fp32_op_gradient_returns_to_the_low_precision_leaf():
    """mse_loss runs in float32 on a bfloat16 leaf: the loss is float32, the leaf's gradient bfloat16
    and equal to 2 (h - t) / n."""
    h_np, t_np = _bf16(_data(6)), _bf16(_data(6, seed=2))
    h = torch.tensor(h_np, dtype=torch.float32).to(torch.bfloat16).requires_grad_()
    t = torch.tensor(t_np, dtype=torch.float32).to(torch.bfloat16)
    with torch.autocast("cpu"):
        loss = F.mse_loss(h, t)
    assert loss.dtype is torch.float32
    np.testing.assert_allclose(loss.item(), np.mean((h_np - t_np) ** 2), rtol=1e-6)
    loss.backward()
    assert h.grad.dtype is torch.bfloat16
    np.testing.assert_allclose(h.grad.float().numpy(), _bf16(2 * (h_np - t_np) / 6), rtol=2 ** -7)


def test_linear_module_gradients():
    """nn.Linear under autocast: float32 parameter gradients equal the bfloat16 computation's."""
    torch.manual_seed(0)
    lin = torch.nn.Linear(4, 3)
    x_np = _data(5, 4)
    with torch.autocast("cpu"):
        y = lin(torch.tensor(x_np))
    assert y.dtype is torch.bfloat16
    y.float().sum().backward()
    assert lin.weight.grad.dtype is torch.float32 and lin.bias.grad.dtype is torch.float32
    np.testing.assert_allclose(lin.weight.grad.numpy(), _bf16(np.ones((3, 5)) @ _bf16(x_np)), rtol=2 ** -7)
    np.testing.assert_allclose(lin.bias.grad.numpy(), np.full(3, 5.0))


def test_conv2d_module_gradients():
    """nn.Conv2d under float16 autocast: d sum(conv(x)) / dW[o, c, i, j] is the sum of the float16
    input over the window positions (no padding, stride 1)."""
    torch.manual_seed(0)
    conv = torch.nn.Conv2d(2, 3, 2, bias=False)
    x_np = _data(1, 2, 4, 4)
    with torch.autocast("cpu", dtype=torch.float16):
        y = conv(torch.tensor(x_np))
    assert y.dtype is torch.float16
    y.float().sum().backward()
    xh = x_np.astype(np.float16).astype(np.float64)
    ref = np.zeros((3, 2, 2, 2))
    for i in range(2):
        for j in range(2):
            ref[:, :, i, j] = xh[0, :, i:i + 3, j:j + 3].sum(axis=(1, 2))
    assert conv.weight.grad.dtype is torch.float32
    np.testing.assert_allclose(conv.weight.grad.numpy(), ref, rtol=2e-3, atol=2e-3)


def test_backward_outside_the_region_of_a_mixed_graph():
    """A float32 loss over a bfloat16 activation: the graph mixes dtypes and backward (outside the
    region) gives the float32 input its float32 gradient: d/dx sum(softmax(x W)) = 0."""
    x = torch.tensor(_data(2, 3), requires_grad=True)
    w = torch.tensor(_data(3, 4, seed=3))
    with torch.autocast("cpu"):
        z = x @ w
        p = F.cross_entropy(z, torch.tensor([1, 3]))
    assert z.dtype is torch.bfloat16 and p.dtype is torch.float32
    p.backward()
    assert x.grad.dtype is torch.float32
    zf = _bf16(_data(2, 3) @ _data(3, 4, seed=3))
    sm = np.exp(zf - zf.max(1, keepdims=True))
    sm /= sm.sum(1, keepdims=True)
    sm[[0, 1], [1, 3]] -= 1
    ref = _bf16(_bf16(sm / 2) @ _bf16(_data(3, 4, seed=3)).T)
    np.testing.assert_allclose(x.grad.numpy(), ref, rtol=2e-2, atol=2e-3)
