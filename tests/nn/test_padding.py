"""F.pad (constant / reflect / replicate / circular, negative widths) and the padding layers, against
NumPy references written from the definitions, with first and second order gradient checks."""
import numpy as np
import pytest

import tensorplug as torch
import tensorplug.nn as nn
import tensorplug.nn.functional as F
from tensorplug.autograd import gradcheck, gradgradcheck


def f64(t):
    return np.asarray(t.detach().numpy(), dtype=np.float64)


def rand(*shape, seed=0, requires_grad=False):
    rng = np.random.default_rng(seed)
    return torch.tensor(rng.standard_normal(shape), dtype=torch.float64, requires_grad=requires_grad)


def ref_pad(a, pad, mode, value=0.0):
    """Reference: output position j of a padded dim (widths b, e) reads source j - b, mapped into
    [0, n) by the mode (constant: outside -> value); negative widths crop. Circular crops first."""
    a = np.asarray(a, dtype=np.float64)
    widths = {a.ndim - 1 - i: (pad[2 * i], pad[2 * i + 1]) for i in range(len(pad) // 2)}
    if mode == "circular":
        key = tuple(slice(max(-widths[d][0], 0), a.shape[d] - max(-widths[d][1], 0)) if d in widths
                    else slice(None) for d in range(a.ndim))
        a = a[key]
        widths = {d: (max(b, 0), max(e, 0)) for d, (b, e) in widths.items()}
    for d, (b, e) in sorted(widths.items()):
        n = a.shape[d]
        m = n + b + e
        out_shape = list(a.shape)
        out_shape[d] = m
        out = np.empty(out_shape)
        for j in range(m):
            s = j - b
            if mode == "constant":
                src = None if (s < 0 or s >= n) else s
            elif mode == "reflect":
                src = -s if s < 0 else (2 * (n - 1) - s if s >= n else s)
            elif mode == "replicate":
                src = min(max(s, 0), n - 1)
            else:
                src = s % n
            dst = [slice(None)] * a.ndim
            dst[d] = j
            if src is None:
                out[tuple(dst)] = value
            else:
                sk = [slice(None)] * a.ndim
                sk[d] = src
                out[tuple(dst)] = a[tuple(sk)]
        a = out
    return a


MODES = ["constant", "reflect", "replicate", "circular"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shape,pad", [((2, 3, 5), (2, 1)), ((2, 3, 5), (0, 3)), ((1, 2, 4, 5), (1, 2, 3, 0)),
                                       ((1, 2, 3, 4, 5), (1, 1, 2, 0, 0, 2)), ((3, 4, 5), (1, 2, 2, 1)),
                                       ((2, 3, 5), (-1, 2)), ((1, 2, 4, 5), (-2, 1, 2, -1)),
                                       ((2, 6), (3, 2))])
def test_pad_forward(mode, shape, pad):
    x = rand(*shape)
    np.testing.assert_allclose(f64(F.pad(x, pad, mode=mode)), ref_pad(f64(x), pad, mode), atol=1e-12)


def test_pad_against_numpy_pad():
    a = np.arange(60.).reshape(3, 4, 5)
    x = torch.tensor(a)
    for mode, np_mode in [("reflect", "reflect"), ("replicate", "edge"), ("circular", "wrap")]:
        np.testing.assert_array_equal(F.pad(x, (2, 3, 1, 2), mode=mode).numpy(),
                                      np.pad(a, ((0, 0), (1, 2), (2, 3)), mode=np_mode))
    np.testing.assert_array_equal(F.pad(x, (1, 1, 0, 0, 2, 1), value=2.5).numpy(),
                                  np.pad(a, ((2, 1), (0, 0), (1, 1)), constant_values=2.5))


def test_pad_constant_any_dims_and_dtypes():
    x = torch.arange(6).reshape(2, 3)
    r = F.pad(x, (1, 1), value=2.7)
    assert r.dtype == torch.int64 and r.tolist() == [[2, 0, 1, 2, 2], [2, 3, 4, 5, 2]]
    r = F.pad(torch.tensor([1.0, 2.0]), (0, 0))
    assert r.tolist() == [1.0, 2.0]
    # constant padding works for any rank, including every dim
    x = rand(2, 3)
    np.testing.assert_allclose(f64(F.pad(x, (1, 0, 0, 2), value=-1.0)), ref_pad(f64(x), (1, 0, 0, 2), "constant", -1))
    assert F.pad(torch.zeros(1, 3, 4), (-2, -2)).shape == (1, 3, 0)


def test_pad_returns_new_tensor():
    x = torch.ones(2, 3)
    y = F.pad(x, (0, 0))
    y[0, 0] = 5
    assert x[0, 0].item() == 1
    y = F.pad(x, (-1, 0))
    y[0, 0] = 5
    assert x[0, 1].item() == 1


def test_pad_errors():
    x = torch.zeros(1, 3, 4)
    with pytest.raises(RuntimeError, match="divisible by 2"):
        F.pad(x, (1, 2, 3))
    with pytest.raises(RuntimeError, match="less than or equal to two times the input dimension"):
        F.pad(x, (1,) * 8)
    with pytest.raises(NotImplementedError, match="Padding size 6 is not supported for 3D input"):
        F.pad(x, (1,) * 6, mode="reflect")
    with pytest.raises(NotImplementedError, match="Padding size 2 is not supported for 1D"):
        F.pad(torch.zeros(4), (1, 1), mode="replicate")
    with pytest.raises(RuntimeError, match="Padding size should be less than the corresponding input dimension"):
        F.pad(x, (4, 0), mode="reflect")
    with pytest.raises(RuntimeError, match="wrapping around more than once"):
        F.pad(x, (0, 5), mode="circular")
    with pytest.raises(RuntimeError, match="doesn't take in value argument"):
        F.pad(x, (1, 1), mode="reflect", value=1.0)
    with pytest.raises(NotImplementedError, match="Unrecognised padding mode"):
        F.pad(x, (1, 1), mode="foo")
    with pytest.raises(RuntimeError, match="too small"):
        F.pad(x, (-2, -2), mode="replicate")
    with pytest.raises(RuntimeError, match="negative output size"):
        F.pad(x, (-3, -2))


@pytest.mark.parametrize("mode", MODES)
def test_pad_gradients(mode):
    x = rand(1, 2, 3, 3, requires_grad=True)
    f = lambda t: F.pad(t, (2, 1, -1, 2), mode=mode)  # noqa: E731
    assert gradcheck(f, (x,))
    assert gradgradcheck(f, (x,))


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
def test_pad_gradient_is_scatter_add(mode):
    # each input position receives the sum of the gradient over the outputs that read it
    a = np.arange(5.)
    x = torch.tensor(a.reshape(1, 1, 5), requires_grad=True)
    w = np.random.default_rng(3).standard_normal(9)
    (F.pad(x, (2, 2), mode=mode) * torch.tensor(w.reshape(1, 1, 9))).sum().backward()
    src = ref_pad(np.arange(5.).reshape(1, 1, 5), (2, 2), mode).reshape(-1).astype(int)
    expect = np.zeros(5)
    np.add.at(expect, src, w)
    np.testing.assert_allclose(f64(x.grad).reshape(-1), expect, atol=1e-12)


def test_constant_and_zero_pad_modules_gradients():
    x = rand(1, 2, 3, requires_grad=True)
    for m in (nn.ConstantPad1d((1, 2), 1.5), nn.ZeroPad1d(2)):
        assert gradcheck(m, (x,)) and gradgradcheck(m, (x,))
    x = rand(1, 2, 2, requires_grad=True)
    for m in (nn.ConstantPad2d((1, 0, 2, 1), -0.5), nn.ZeroPad2d((1, 1, 0, 1))):
        assert gradcheck(m, (x,)) and gradgradcheck(m, (x,))
    x = rand(1, 2, 2, 2, requires_grad=True)
    assert gradcheck(nn.ConstantPad3d(1, 2.0), (x,))


def test_padding_modules():
    x = rand(2, 3, 4, 5)
    x5 = rand(1, 2, 3, 3, 4)
    cases = [
        (nn.ConstantPad1d(2, 3.5), x, (2, 2), "constant", 3.5, "ConstantPad1d(padding=(2, 2), value=3.5)"),
        (nn.ConstantPad2d((1, 2, 3, 4), 0.0), x, (1, 2, 3, 4), "constant", 0.0,
         "ConstantPad2d(padding=(1, 2, 3, 4), value=0.0)"),
        (nn.ConstantPad3d(1, 1), x5, (1,) * 6, "constant", 1, "ConstantPad3d(padding=(1, 1, 1, 1, 1, 1), value=1)"),
        (nn.ZeroPad1d(2), x, (2, 2), "constant", 0, "ZeroPad1d((2, 2))"),
        (nn.ZeroPad2d((1, 1, 2, 0)), x, (1, 1, 2, 0), "constant", 0, "ZeroPad2d((1, 1, 2, 0))"),
        (nn.ZeroPad3d(1), x5, (1,) * 6, "constant", 0, "ZeroPad3d((1, 1, 1, 1, 1, 1))"),
        (nn.ReflectionPad1d(2), x[0], (2, 2), "reflect", 0, "ReflectionPad1d((2, 2))"),
        (nn.ReflectionPad2d((1, 0, 2, 1)), x, (1, 0, 2, 1), "reflect", 0, "ReflectionPad2d((1, 0, 2, 1))"),
        (nn.ReflectionPad3d(1), x5, (1,) * 6, "reflect", 0, "ReflectionPad3d((1, 1, 1, 1, 1, 1))"),
        (nn.ReplicationPad1d(1), x[0], (1, 1), "replicate", 0, "ReplicationPad1d((1, 1))"),
        (nn.ReplicationPad2d((1, 0, 1, 0)), x, (1, 0, 1, 0), "replicate", 0, "ReplicationPad2d((1, 0, 1, 0))"),
        (nn.ReplicationPad3d(2), x5, (2,) * 6, "replicate", 0, "ReplicationPad3d((2, 2, 2, 2, 2, 2))"),
        (nn.CircularPad1d(1), x[0], (1, 1), "circular", 0, "CircularPad1d((1, 1))"),
        (nn.CircularPad2d(1), x, (1,) * 4, "circular", 0, "CircularPad2d((1, 1, 1, 1))"),
        (nn.CircularPad3d(1), x5, (1,) * 6, "circular", 0, "CircularPad3d((1, 1, 1, 1, 1, 1))"),
    ]
    for m, inp, pad, mode, value, text in cases:
        assert repr(m) == text
        assert m.padding == pad
        np.testing.assert_allclose(f64(m(inp)), ref_pad(f64(inp), pad, mode, value), atol=1e-12)
        assert list(m.parameters()) == []
