"""Convolutions: conv1d/2d/3d, conv_transpose1d/2d/3d, unfold/fold and the Conv modules, against
float64 NumPy references written from the definitions; the conv kernels natively and through their
decompositions; first and second gradients against finite differences."""
import math

import numpy as np
import pytest

import tensorplug as torch
import tensorplug.nn as nn
import tensorplug.nn.functional as F
from tensorplug.autograd import gradcheck, gradgradcheck
from tensorplug.dispatch.decompositions import DECOMPOSITIONS

CONV_KERNELS = ("conv", "conv_weight", "conv_transpose", "max_pool", "avg_pool")


def f64(t):
    return np.asarray(t.detach().cpu().numpy(), dtype=np.float64)


def rnd(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def T(a, requires_grad=False, device=None):
    return torch.tensor(a, dtype=torch.float64, requires_grad=requires_grad, device=device)


# -- references, straight from the definitions (loops over every output position) ------------------
def ref_conv(x, w, stride, pads, dilation, groups):
    """y[n, o, i] = sum_{c, k} xpad[n, group(o) c, i*stride + k*dilation] * w[o, c, k]; pads (lo, hi) per dim."""
    N, C = x.shape[:2]
    O, ks = w.shape[0], w.shape[2:]
    nd = len(ks)
    xp = np.pad(x, [(0, 0), (0, 0)] + [tuple(p) for p in pads])
    out = [(xp.shape[2 + i] - dilation[i] * (ks[i] - 1) - 1) // stride[i] + 1 for i in range(nd)]
    Cg, Og = C // groups, O // groups
    y = np.zeros((N, O, *out))
    for o in range(O):
        g = o // Og
        for pos in np.ndindex(*out):
            acc = np.zeros(N)
            for kk in np.ndindex(*ks):
                src = tuple(pos[i] * stride[i] + kk[i] * dilation[i] for i in range(nd))
                for c in range(Cg):
                    acc += xp[(slice(None), g * Cg + c) + src] * w[(o, c) + kk]
            y[(slice(None), o) + pos] = acc
    return y


def ref_conv_transpose(x, w, stride, padding, output_padding, dilation, groups):
    """full[n, o, i*stride + k*dilation] += x[n, c, i] * w[c, o, k]; output cropped by padding."""
    N, C = x.shape[:2]
    S, ks = x.shape[2:], w.shape[2:]
    nd = len(ks)
    Cg, Og = C // groups, w.shape[1]
    out = [(S[i] - 1) * stride[i] - 2 * padding[i] + dilation[i] * (ks[i] - 1) + output_padding[i] + 1
           for i in range(nd)]
    full = np.zeros((N, Og * groups) + tuple(out[i] + 2 * padding[i] + stride[i] + dilation[i] * ks[i]
                                             for i in range(nd)))
    for c in range(C):
        g = c // Cg
        for o in range(Og):
            for pos in np.ndindex(*S):
                for kk in np.ndindex(*ks):
                    dst = tuple(pos[i] * stride[i] + kk[i] * dilation[i] for i in range(nd))
                    full[(slice(None), g * Og + o) + dst] += x[(slice(None), c) + pos] * w[(c, o) + kk]
    return full[(slice(None), slice(None)) + tuple(slice(padding[i], padding[i] + out[i]) for i in range(nd))]


def tup(v, n):
    return tuple(v) if isinstance(v, (tuple, list)) else (v,) * n


def same_pads(ks, dilation):
    return [(d * (k - 1) // 2, d * (k - 1) - d * (k - 1) // 2) for k, d in zip(ks, dilation)]


CONV_CASES = [
    # nd, N, C, O, spatial, kernel, stride, padding, dilation, groups
    (1, 2, 4, 6, (9,), (3,), 2, 1, 1, 2),
    (1, 1, 3, 2, (8,), (4,), 1, "same", 2, 1),
    (1, 2, 2, 2, (7,), (3,), 1, "valid", 1, 1),
    (1, 1, 2, 4, (5,), (5,), 3, (2,), 1, 2),
    (2, 2, 3, 4, (7, 6), (3, 2), (2, 1), (1, 0), (1, 2), 1),
    (2, 1, 4, 4, (6, 6), (3, 3), 1, 1, 1, 4),
    (2, 2, 4, 6, (5, 7), (2, 3), (1, 2), (0, 2), (2, 1), 2),
    (2, 1, 2, 3, (6, 5), (4, 3), 1, "same", (1, 2), 1),
    (2, 1, 2, 2, (5, 5), (3, 3), 1, "valid", 1, 1),
    (3, 1, 2, 2, (4, 5, 4), (2, 3, 2), (1, 2, 1), (1, 0, 1), (2, 1, 1), 1),
    (3, 2, 2, 4, (3, 4, 4), (2, 2, 2), 1, "same", 1, 2),
]


def _resolve_pads(padding, ks, dilation, nd):
    if padding == "valid":
        return [(0, 0)] * nd
    if padding == "same":
        return same_pads(ks, dilation)
    return [(p, p) for p in tup(padding, nd)]


@pytest.mark.parametrize("case", CONV_CASES)
def test_conv_forward_matches_reference(case):
    """convNd over stride / padding (int, tuple, 'same', 'valid') / dilation / groups vs the nested-sum reference."""
    nd, N, C, O, S, ks, stride, padding, dilation, groups = case
    x, w, b = rnd(N, C, *S, seed=1), rnd(O, C // groups, *ks, seed=2), rnd(O, seed=3)
    fn = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[nd]
    y = fn(T(x), T(w), T(b), stride=stride, padding=padding, dilation=dilation, groups=groups)
    pads = _resolve_pads(padding, ks, tup(dilation, nd), nd)
    ref = ref_conv(x, w, tup(stride, nd), pads, tup(dilation, nd), groups) + b.reshape((O,) + (1,) * nd)
    assert y.shape == ref.shape
    np.testing.assert_allclose(f64(y), ref, rtol=1e-12, atol=1e-12)
    if padding == "same":
        assert tuple(y.shape[2:]) == S


@pytest.mark.parametrize("case", CONV_CASES)
def test_conv_kernel_native_and_decomposed_agree(case):
    """The NumPy backend's native `conv` kernel and the decomposition into required primitives give the reference."""
    nd, N, C, O, S, ks, stride, padding, dilation, groups = case
    x, w = rnd(N, C, *S, seed=4), rnd(O, C // groups, *ks, seed=5)
    K = torch.zeros(1)._k
    args = (tup(stride, nd), tuple(tuple(p) for p in _resolve_pads(padding, ks, tup(dilation, nd), nd)),
            tup(dilation, nd), groups)
    native = K["conv"](x, w, *args)
    decomposed = DECOMPOSITIONS["conv"](K, x, w, *args)
    ref = ref_conv(x, w, args[0], args[1], args[2], groups)
    np.testing.assert_allclose(native, ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(decomposed, ref, rtol=1e-12, atol=1e-12)
    assert native.dtype == decomposed.dtype == x.dtype


def test_conv_kernel_large_kernel_small_output():
    """Kernels larger than their output (the weight-gradient shape) take the other im2col loop; same result."""
    K = torch.zeros(1)._k
    x, w = rnd(2, 3, 9, 8, seed=6), rnd(2, 3, 7, 6, seed=7)
    args = ((1, 1), ((0, 1), (1, 0)), (1, 1), 1)
    ref = ref_conv(x, w, *args)
    np.testing.assert_allclose(K["conv"](x, w, *args), ref, atol=1e-12)
    np.testing.assert_allclose(DECOMPOSITIONS["conv"](K, x, w, *args), ref, atol=1e-12)


CONVT_CASES = [
    # nd, N, C, O, spatial, kernel, stride, padding, output_padding, dilation, groups
    (1, 2, 4, 6, (5,), (3,), 2, 1, 1, 1, 2),
    (1, 1, 2, 3, (4,), (2,), 1, 0, 0, 2, 1),
    (2, 2, 2, 3, (3, 4), (3, 2), (2, 1), (1, 0), (1, 0), (1, 2), 1),
    (2, 1, 4, 4, (3, 3), (3, 3), 2, 1, 0, 1, 2),
    (2, 1, 2, 2, (2, 3), (3, 3), (3, 2), (0, 1), (2, 1), (1, 1), 1),
    (3, 1, 2, 2, (2, 3, 2), (2, 2, 3), (2, 1, 1), (0, 1, 1), (1, 0, 0), 1, 1),
]


@pytest.mark.parametrize("case", CONVT_CASES)
def test_conv_transpose_forward_matches_reference(case):
    """conv_transposeNd (stride, padding, output_padding, dilation, groups) vs the scatter-add reference."""
    nd, N, C, O, S, ks, stride, padding, output_padding, dilation, groups = case
    x, w, b = rnd(N, C, *S, seed=8), rnd(C, O // groups, *ks, seed=9), rnd(O, seed=10)
    fn = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}[nd]
    y = fn(T(x), T(w), T(b), stride, padding, output_padding, groups, dilation)
    ref = ref_conv_transpose(x, w, tup(stride, nd), tup(padding, nd), tup(output_padding, nd), tup(dilation, nd),
                             groups) + b.reshape((O,) + (1,) * nd)
    assert y.shape == ref.shape
    np.testing.assert_allclose(f64(y), ref, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("case", CONVT_CASES + [(2, 1, 2, 2, (2, 2), (4, 4), 1, 0, 0, 1, 1)])
def test_conv_transpose_kernel_native_and_decomposed_agree(case):
    """`conv_transpose` natively and decomposed (col2im by kernel offset, or by input position when the
    kernel is larger than the input) give the reference."""
    nd, N, C, O, S, ks, stride, padding, output_padding, dilation, groups = case
    x, w = rnd(N, C, *S, seed=11), rnd(C, O // groups, *ks, seed=12)
    st, pd, op, dl = tup(stride, nd), tup(padding, nd), tup(output_padding, nd), tup(dilation, nd)
    ref = ref_conv_transpose(x, w, st, pd, op, dl, groups)
    out = tuple(ref.shape[2:])
    K = torch.zeros(1)._k
    np.testing.assert_allclose(K["conv_transpose"](x, w, st, pd, dl, groups, out), ref, atol=1e-12)
    np.testing.assert_allclose(DECOMPOSITIONS["conv_transpose"](K, x, w, st, pd, dl, groups, out), ref, atol=1e-12)


def test_conv_float32_dtype_and_unbatched_input():
    """float32 in, float32 out; an unbatched (C, *spatial) input gives an unbatched output."""
    x, w = rnd(3, 6, 6, seed=13), rnd(4, 3, 3, 3, seed=14)
    y = F.conv2d(torch.tensor(x, dtype=torch.float32), torch.tensor(w, dtype=torch.float32), padding=1)
    assert y.dtype == torch.float32 and y.shape == (4, 6, 6)
    np.testing.assert_allclose(f64(y), ref_conv(x[None], w, (1, 1), [(1, 1)] * 2, (1, 1), 1)[0], rtol=1e-5, atol=1e-5)
    y1 = F.conv_transpose1d(T(x[:, 0]), T(rnd(3, 2, 2)))
    assert y1.shape == (2, 7)


def test_conv_empty_batch():
    """A zero-size batch gives a zero-size output of the right shape, and a zero gradient."""
    x = torch.zeros(0, 2, 5, 5, dtype=torch.float64, requires_grad=True)
    w = T(rnd(3, 2, 3, 3), requires_grad=True)
    y = F.conv2d(x, w)
    assert y.shape == (0, 3, 3, 3)
    y.sum().backward()
    assert x.grad.shape == x.shape and float(w.grad.abs().sum()) == 0.0


# -- gradients ------------------------------------------------------------------------------------
GRAD_CASES = [
    (F.conv1d, (2, 4, 7), (4, 2, 3), dict(stride=2, padding=1, dilation=1, groups=2)),
    (F.conv1d, (1, 2, 6), (3, 2, 2), dict(padding="same", dilation=2)),
    (F.conv2d, (1, 2, 5, 4), (3, 2, 3, 2), dict(stride=(2, 1), padding=(1, 0), dilation=(1, 2))),
    (F.conv2d, (2, 4, 4, 4), (4, 2, 2, 2), dict(stride=1, padding=1, groups=2)),
    (F.conv2d, (1, 2, 4, 4), (2, 1, 3, 3), dict(padding="same", groups=2)),
    (F.conv3d, (1, 2, 3, 4, 3), (2, 1, 2, 2, 2), dict(stride=(1, 2, 1), padding=(1, 0, 1), dilation=(1, 1, 2),
                                                      groups=2)),
]


@pytest.mark.parametrize("fn,xs,ws,kw", GRAD_CASES)
def test_conv_gradcheck_and_gradgradcheck(fn, xs, ws, kw):
    """First and second derivatives wrt input, weight and bias match finite differences."""
    x = T(rnd(*xs, seed=15), requires_grad=True)
    w = T(rnd(*ws, seed=16), requires_grad=True)
    b = T(rnd(ws[0], seed=17), requires_grad=True)
    f = lambda x, w, b: fn(x, w, b, **kw)  # noqa: E731
    assert gradcheck(f, (x, w, b))
    assert gradgradcheck(f, (x, w, b))


@pytest.mark.parametrize("fn,xs,ws,kw", [
    (F.conv_transpose1d, (2, 4, 3), (4, 1, 3), dict(stride=2, padding=1, output_padding=1, groups=2)),
    (F.conv_transpose2d, (1, 2, 3, 2), (2, 2, 2, 3), dict(stride=(2, 1), padding=(0, 1), dilation=(1, 2))),
    (F.conv_transpose2d, (1, 2, 2, 3), (2, 1, 3, 2), dict(stride=(3, 2), padding=(1, 0), output_padding=(2, 1))),
])
def test_conv_transpose_gradcheck_and_gradgradcheck(fn, xs, ws, kw):
    """conv_transpose's first and second derivatives (its backward is a conv, and a conv's a conv_transpose)."""
    x = T(rnd(*xs, seed=18), requires_grad=True)
    w = T(rnd(*ws, seed=19), requires_grad=True)
    b = T(rnd(ws[1] * kw.get("groups", 1), seed=20), requires_grad=True)
    f = lambda x, w, b: fn(x, w, b, **kw)  # noqa: E731
    assert gradcheck(f, (x, w, b))
    assert gradgradcheck(f, (x, w, b))


def test_conv_double_backward_gradient_penalty():
    """A gradient penalty through conv2d: d/dw of ||dL/dx||^2 matches a finite difference."""
    x = T(rnd(1, 2, 5, 5, seed=21), requires_grad=True)
    w0 = rnd(3, 2, 3, 3, seed=22)

    def penalty(wv):
        w = T(wv, requires_grad=True)
        y = F.conv2d(x, w, stride=2, padding=1)
        (gx,) = torch.autograd.grad((y.tanh()).sum(), x, create_graph=True)
        return (gx * gx).sum(), w
    p, w = penalty(w0)
    p.backward()
    eps, (i, j, k, m) = 1e-6, (1, 0, 2, 1)
    wp, wm = w0.copy(), w0.copy()
    wp[i, j, k, m] += eps
    wm[i, j, k, m] -= eps
    num = (penalty(wp)[0].item() - penalty(wm)[0].item()) / (2 * eps)
    assert abs(w.grad[i, j, k, m].item() - num) < 1e-6


# -- the whole ops through a backend without native conv kernels ------------------------------------
@pytest.fixture
def noconv(add_backend):
    """A backend for device 'noconv' whose kernel table has none of the conv family natively."""
    backend = add_backend("numpy_noconv", device_type="noconv", drop=CONV_KERNELS)
    status = backend.kernel_status()
    assert all(status[k] == "decomposed" for k in CONV_KERNELS)
    return "noconv"


def test_conv_ops_through_decompositions(noconv):
    """conv2d and conv_transpose2d with gradients of both orders on the decomposed backend."""
    x = T(rnd(1, 2, 5, 4, seed=23), requires_grad=True, device=noconv)
    w = T(rnd(2, 1, 3, 2, seed=24), requires_grad=True, device=noconv)
    y = F.conv2d(x, w, stride=(2, 1), padding=1, groups=2)
    assert y.device.type == "noconv"
    ref = ref_conv(f64(x), f64(w), (2, 1), [(1, 1), (1, 1)], (1, 1), 2)
    np.testing.assert_allclose(f64(y), ref, atol=1e-12)
    assert gradcheck(lambda x, w: F.conv2d(x, w, stride=(2, 1), padding=1, groups=2), (x, w))
    assert gradgradcheck(lambda x, w: F.conv2d(x, w, stride=(2, 1), padding=1, groups=2), (x, w))
    assert gradgradcheck(lambda x, w: F.conv_transpose2d(x, w, stride=2, output_padding=1, groups=2), (x, w))


# -- unfold / fold --------------------------------------------------------------------------------
def test_unfold_fold_values_and_gradients():
    """unfold gives the im2col columns (channel-major, then kernel offset); fold sums them back."""
    x = rnd(2, 3, 5, 4, seed=25)
    cols = F.unfold(T(x), (2, 3), dilation=1, padding=1, stride=(2, 1))
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    oh, ow = (7 - 2) // 2 + 1, (6 - 3) // 1 + 1
    ref = np.zeros((2, 3 * 6, oh * ow))
    for c in range(3):
        for i in range(2):
            for j in range(3):
                ref[:, c * 6 + i * 3 + j] = xp[:, c, i:i + 2 * oh:2, j:j + ow].reshape(2, -1)
    np.testing.assert_allclose(f64(cols), ref)
    back = F.fold(cols, (5, 4), (2, 3), padding=1, stride=(2, 1))
    # fold(unfold(x)) multiplies each pixel by the number of blocks covering it
    ones = F.fold(F.unfold(T(np.ones_like(x)), (2, 3), padding=1, stride=(2, 1)), (5, 4), (2, 3), padding=1,
                  stride=(2, 1))
    np.testing.assert_allclose(f64(back), x * f64(ones))
    xt = T(rnd(1, 2, 4, 3, seed=26), requires_grad=True)
    assert gradgradcheck(lambda t: F.unfold(t, 2, padding=1), (xt,))
    c = T(rnd(1, 2 * 4, 6, seed=27), requires_grad=True)
    assert gradgradcheck(lambda t: F.fold(t, (3, 4), 2), (c,))
    assert nn.Unfold(2, padding=1)(xt).shape == (1, 8, 20)
    assert repr(nn.Fold((4, 5), 2)) == "Fold(output_size=(4, 5), kernel_size=2, dilation=1, padding=0, stride=1)"


# -- errors ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("call,msg", [
    (lambda: F.conv2d(torch.randn(1, 2, 32, 32), torch.randn(6, 3, 5, 5)),
     "Given groups=1, weight of size [6, 3, 5, 5], expected input[1, 2, 32, 32] to have 3 channels, but got 2 "
     "channels instead"),
    (lambda: F.conv2d(torch.randn(1, 3, 2, 2), torch.randn(6, 3, 5, 5)),
     "Calculated padded input size per channel: (2 x 2). Kernel size: (5 x 5). Kernel size can't be greater "
     "than actual input size"),
    (lambda: F.conv2d(torch.randn(1, 3, 8, 8), torch.randn(6, 3, 5, 5), stride=0),
     "non-positive stride is not supported"),
    (lambda: F.conv2d(torch.randn(1, 3, 8, 8), torch.randn(6, 3, 5, 5), padding=-1),
     "negative padding is not supported"),
    (lambda: F.conv2d(torch.randn(3, 8), torch.randn(6, 3, 5, 5)),
     "Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size: [3, 8]"),
    (lambda: F.conv2d(torch.randn(1, 4, 8, 8), torch.randn(3, 2, 3, 3), groups=2),
     "Given groups=2, expected weight to be divisible by 2 at dimension 0"),
    (lambda: F.conv2d(torch.randn(1, 4, 8, 8), torch.randn(4, 4, 3, 3), stride=2, padding="same"),
     "padding='same' is not supported for strided convolutions"),
    (lambda: F.conv2d(torch.randn(1, 4, 8, 8), torch.randn(4, 4, 3, 3), padding="foo"),
     "Invalid padding string: 'foo'"),
    (lambda: F.conv2d(torch.randn(1, 4, 8, 8), torch.randn(4, 4, 3, 3, dtype=torch.float64)),
     "Input type (float32) and weight type (float64) should be the same"),
    (lambda: F.conv2d(torch.randn(1, 4, 8, 8), torch.randn(4, 4, 3, 3), torch.randn(3)),
     "Given weight of size [4, 4, 3, 3], expected bias to be 1-dimensional with 4 elements, but got bias of size [3] "
     "instead"),
    (lambda: F.conv2d(torch.randn(1, 4, 8, 8), torch.randn(4, 4, 3, 3), stride=(1, 2, 3)),
     "expected stride to be a single integer value or a list of 2 values to match the convolution dimensions, but "
     "got stride=[1, 2, 3]"),
    (lambda: F.conv2d(torch.randn(1, 4, 8, 8), torch.randn(4, 4, 3, 3), dilation=0),
     "dilation should be greater than zero"),
    (lambda: F.conv_transpose2d(torch.randn(1, 4, 8, 8), torch.randn(4, 4, 3, 3), stride=2, output_padding=2),
     "output padding must be smaller than either stride or dilation"),
    (lambda: F.conv_transpose2d(torch.randn(1, 3, 8, 8), torch.randn(4, 4, 3, 3)),
     "Given transposed=1, weight of size [4, 4, 3, 3], expected input[1, 3, 8, 8] to have 4 channels, but got 3 "
     "channels instead"),
])
def test_conv_errors_name_the_shapes(call, msg):
    """Invalid arguments raise RuntimeError with PyTorch's message."""
    with pytest.raises(RuntimeError) as e:
        call()
    assert msg in str(e.value)


# -- modules ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("make,text,shapes", [
    (lambda: nn.Conv2d(1, 6, 5), "Conv2d(1, 6, kernel_size=(5, 5), stride=(1, 1))", [(6, 1, 5, 5), (6,)]),
    (lambda: nn.Conv1d(2, 4, 3, stride=2, padding=1, bias=False),
     "Conv1d(2, 4, kernel_size=(3,), stride=(2,), padding=(1,), bias=False)", [(4, 2, 3)]),
    (lambda: nn.Conv2d(4, 4, 3, padding="same", padding_mode="reflect", groups=2, dilation=2),
     "Conv2d(4, 4, kernel_size=(3, 3), stride=(1, 1), padding=same, dilation=(2, 2), groups=2, padding_mode=reflect)",
     [(4, 2, 3, 3), (4,)]),
    (lambda: nn.Conv3d(2, 2, (1, 2, 3)), "Conv3d(2, 2, kernel_size=(1, 2, 3), stride=(1, 1, 1))",
     [(2, 2, 1, 2, 3), (2,)]),
    (lambda: nn.ConvTranspose2d(3, 4, 3, stride=2, output_padding=1),
     "ConvTranspose2d(3, 4, kernel_size=(3, 3), stride=(2, 2), output_padding=(1, 1))", [(3, 4, 3, 3), (4,)]),
    (lambda: nn.ConvTranspose1d(4, 6, 3, groups=2), "ConvTranspose1d(4, 6, kernel_size=(3,), stride=(1,), groups=2)",
     [(4, 3, 3), (6,)]),
])
def test_conv_module_repr_and_parameters(make, text, shapes):
    """Reprs like PyTorch's; weight (and bias) shapes; init within +-1/sqrt(fan_in)."""
    m = make()
    assert repr(m) == text
    params = list(m.parameters())
    assert [tuple(p.shape) for p in params] == shapes
    w = m.weight
    fan_in = w.shape[1] * math.prod(w.shape[2:])
    bound = 1 / math.sqrt(fan_in)
    for p in params:
        assert p.requires_grad and float(p.abs().max()) <= bound + 1e-7
    assert float(w.std()) > bound / 4      # actually random, not constant


def test_conv_module_constructor_errors():
    """Invalid module arguments raise ValueError like PyTorch's."""
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        nn.Conv2d(3, 4, 3, groups=2)
    with pytest.raises(ValueError, match="out_channels must be divisible by groups"):
        nn.Conv2d(4, 3, 3, groups=2)
    with pytest.raises(ValueError, match="padding_mode must be one of"):
        nn.Conv2d(4, 4, 3, padding_mode="foo")
    with pytest.raises(ValueError, match="Invalid padding string 'foo'"):
        nn.Conv2d(4, 4, 3, padding="foo")
    with pytest.raises(ValueError, match="not supported for strided convolutions"):
        nn.Conv2d(4, 4, 3, stride=2, padding="same")
    with pytest.raises(ValueError, match='Only "zeros" padding mode is supported for ConvTranspose2d'):
        nn.ConvTranspose2d(4, 4, 3, padding_mode="reflect")


@pytest.mark.parametrize("mode,np_mode", [("zeros", "constant"), ("reflect", "reflect"), ("replicate", "edge"),
                                          ("circular", "wrap")])
def test_conv_module_padding_modes(mode, np_mode):
    """padding_mode pads with the given mode, then convolves without padding."""
    m = nn.Conv2d(2, 3, (3, 2), padding=(1, 2), padding_mode=mode).double()
    x = rnd(2, 2, 4, 5, seed=28)
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (2, 2)), mode=np_mode)
    ref = ref_conv(xp, f64(m.weight), (1, 1), [(0, 0), (0, 0)], (1, 1), 1) + f64(m.bias).reshape(3, 1, 1)
    np.testing.assert_allclose(f64(m(T(x))), ref, atol=1e-12)
    xt = T(x[:1, :, :3, :3], requires_grad=True)
    assert gradgradcheck(lambda t: m(t), (xt,))


def test_conv_module_same_padding_with_mode_and_gradcheck():
    """'same' with an even kernel pads asymmetrically (more after) for every padding mode."""
    m = nn.Conv1d(1, 1, 4, padding="same", padding_mode="circular", bias=False).double()
    x = rnd(1, 1, 6, seed=29)
    ref = ref_conv(np.pad(x, ((0, 0), (0, 0), (1, 2)), mode="wrap"), f64(m.weight), (1,), [(0, 0)], (1,), 1)
    np.testing.assert_allclose(f64(m(T(x))), ref, atol=1e-12)
    conv = nn.Conv2d(2, 2, 3, stride=2, padding=1, groups=2).double()
    assert gradcheck(lambda t, w, b: F.conv2d(t, w, b, 2, 1, 1, 2),
                     (T(rnd(1, 2, 4, 4), requires_grad=True), conv.weight, conv.bias))
    assert gradgradcheck(lambda t: conv(t), (T(rnd(1, 2, 4, 4), requires_grad=True),))


def test_conv_transpose_module_output_size():
    """ConvTranspose2d(output_size=...) picks the output_padding; out-of-range sizes raise ValueError."""
    m = nn.ConvTranspose2d(2, 3, 3, stride=2, padding=1)
    x = torch.randn(1, 2, 4, 4)
    assert m(x).shape == (1, 3, 7, 7)
    assert m(x, output_size=[8, 8]).shape == (1, 3, 8, 8)
    assert m(x, output_size=(1, 3, 8, 7)).shape == (1, 3, 8, 7)
    with pytest.raises(ValueError, match="requested an output size"):
        m(x, output_size=(9, 9))


def test_lenet_like_conv_layer_trains_a_step():
    """Conv2d -> max_pool2d -> sum on a 28x28 batch: gradients reach weight and bias with the right shapes."""
    conv = nn.Conv2d(1, 6, 5, padding=2)
    x = torch.randn(4, 1, 28, 28)
    y = F.max_pool2d(conv(x).relu(), 2)
    assert y.shape == (4, 6, 14, 14)
    y.sum().backward()
    assert conv.weight.grad.shape == (6, 1, 5, 5) and conv.bias.grad.shape == (6,)
