"""The NumPy backend's numba im2col / col2im (backends/numpy_backend/conv_loops.py): float32 2-D conv,
conv_weight and conv_transpose through both paths (NumPy strided copies, numba loops) against the
float64 definitions of the conformance records; the loops' column matrix equal, bit for bit, to
NumPy's strided copy; and gradients through the frontend with the loops on."""
from __future__ import annotations

import numpy as np
import pytest

import tensorplug as torch
import tensorplug.nn.functional as F
from tensorplug.autograd import gradcheck
from tensorplug.backends.numpy_backend import conv as npconv
from tensorplug.backends.numpy_backend import conv_loops
from tensorplug.testing.conformance.opdb.nn import conv_ref, conv_transpose_ref, conv_weight_ref

from _numba_paths import loops_fixture

conv_path = loops_fixture(conv_loops, "numpy strided copies")


def rnd(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


# (x shape, w shape, stride, padding pairs, dilation, groups)
CASES = [
    ((3, 2, 9, 8), (4, 2, 3, 3), (1, 1), ((0, 0), (0, 0)), (1, 1), 1),
    ((2, 3, 8, 7), (5, 3, 3, 2), (1, 1), ((1, 2), (2, 0)), (1, 1), 1),        # asymmetric padding
    ((2, 4, 11, 10), (6, 2, 3, 3), (2, 3), ((1, 1), (1, 1)), (1, 1), 2),      # strides, groups
    ((2, 2, 12, 12), (3, 2, 3, 3), (1, 2), ((2, 2), (0, 3)), (2, 3), 1),      # dilation
    ((1, 1, 4, 4), (2, 1, 2, 2), (1, 1), ((3, 3), (3, 3)), (1, 1), 1),        # windows wholly in the padding
    ((4, 1, 28, 28), (6, 1, 5, 5), (1, 1), ((0, 0), (0, 0)), (1, 1), 1),      # LeNet's first conv
    ((2, 2, 20, 20), (4, 1, 3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 2),      # groups, per-image weight grad
]


def _out(xs, ws, stride, pads, dil):
    return tuple((n + lo + hi - d * (k - 1) - 1) // s + 1
                 for n, (lo, hi), k, s, d in zip(xs[2:], pads, ws[2:], stride, dil))


@pytest.mark.parametrize("case", CASES)
def test_conv_and_weight_gradient_float32(case, conv_path):
    xs, ws, stride, pads, dil, G = case
    x, w = rnd(*xs, seed=1), rnd(*ws, seed=2)
    gy = rnd(xs[0], ws[0], *_out(xs, ws, stride, pads, dil), seed=3)
    x32, w32, g32 = (a.astype(np.float32) for a in (x, w, gy))
    y = npconv.conv(x32, w32, stride, pads, dil, G)
    assert y.dtype == np.float32
    np.testing.assert_allclose(y, conv_ref(x32.astype(np.float64), w32.astype(np.float64), stride, pads, dil, G),
                               rtol=2e-5, atol=2e-5)
    gw = npconv.conv_weight(x32, g32, ws[2:], stride, pads, dil, G)
    assert gw.dtype == np.float32 and gw.shape == ws
    want = conv_weight_ref(x32.astype(np.float64), g32.astype(np.float64), ws[2:], stride, pads, dil, G)
    np.testing.assert_allclose(gw, want, rtol=2e-5, atol=1e-4)


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("per_image", [False, True])
def test_conv_forward_both_product_layouts(case, per_image, conv_path, monkeypatch):
    """conv's product per image (each image's columns, the result already (N, O, P)) and as one GEMM over
    all images (then transposed): the same values, float32 and float64 (the NumPy windows for float64)."""
    monkeypatch.setattr(npconv, "_per_image", lambda Og, P: per_image)
    xs, ws, stride, pads, dil, G = case
    x, w = rnd(*xs, seed=1), rnd(*ws, seed=2)
    want = conv_ref(x, w, stride, pads, dil, G)
    for dt, tol in ((np.float32, 2e-5), (np.float64, 1e-12)):
        y = npconv.conv(x.astype(dt), w.astype(dt), stride, pads, dil, G)
        assert y.dtype == dt and y.flags.c_contiguous
        np.testing.assert_allclose(y, want, rtol=tol, atol=tol)


def test_batch_columns_are_the_columns_per_image(conv_path):
    """The per-image column matrices, regrouped, are the all-images matrix (bit for bit)."""
    xs, ws, stride, pads, dil, G = CASES[2]
    x = rnd(*xs, seed=1).astype(np.float32)
    out = _out(xs, ws, stride, pads, dil)
    cols, _ = npconv._columns(x, ws[2:], stride, pads, dil, G)                # (G, CgK, N*P)
    per = npconv._batch_columns(x, ws[2:], stride, pads, dil, G, out)          # (N, G, CgK, P)
    np.testing.assert_array_equal(per.transpose(1, 2, 0, 3).reshape(cols.shape), cols)


# conv_transpose takes one padding per dim
TRANSPOSE_CASES = [c for c in CASES if all(lo == hi for lo, hi in c[3])]


@pytest.mark.parametrize("case", TRANSPOSE_CASES)
def test_conv_transpose_float32(case, conv_path):
    """conv_transpose = the input gradient of conv: x of conv's output shape back to conv's input shape."""
    xs, ws, stride, pads, dil, G = case
    pad = tuple(lo for lo, _ in pads)
    out = _out(xs, ws, stride, pads, dil)
    g = rnd(xs[0], ws[0], *out, seed=4).astype(np.float32)
    # conv_transpose's weight is (C_in, C_out / G, *k): conv's weight read the other way round
    w = rnd(*ws, seed=5).astype(np.float32)
    got = npconv.conv_transpose(g, w, stride, pad, dil, G, xs[2:])
    assert got.dtype == np.float32 and got.shape == xs
    want = conv_transpose_ref(g.astype(np.float64), w.astype(np.float64), stride, pad, dil, G, xs[2:])
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("case", CASES)
def test_loop_columns_equal_numpy_columns_bit_for_bit(case):
    loops = conv_loops.kernels()
    if loops is None:
        pytest.skip("numba is not installed (the fast extra) or TENSORPLUG_NUMBA=0: the loops are not used")
    xs, ws, stride, pads, dil, G = case
    x = rnd(*xs, seed=6).astype(np.float32)
    out = _out(xs, ws, stride, pads, dil)
    got = loops["im2col"](x, ws[2:], stride, pads, dil, out)
    # NumPy's strided copy: the padded input's windows, rows (channel, offset), columns (batch, pixel)
    xp = np.pad(x, ((0, 0), (0, 0)) + pads)
    win = np.lib.stride_tricks.sliding_window_view(xp, ws[2:], axis=(2, 3))[:, :, ::stride[0], ::stride[1]]
    win = win[:, :, :out[0], :out[1]] if dil == (1, 1) else None
    if win is None:                              # dilation: index the padded input directly
        i = (np.arange(out[0])[:, None] * stride[0] + np.arange(ws[2])[None, :] * dil[0])       # (oh, kh)
        j = (np.arange(out[1])[:, None] * stride[1] + np.arange(ws[3])[None, :] * dil[1])       # (ow, kw)
        win = xp[:, :, i[:, None, :, None], j[None, :, None, :]]                                # (N, C, oh, ow, kh, kw)
    want = win.transpose(1, 4, 5, 0, 2, 3).reshape(xs[1] * ws[2] * ws[3], -1)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, want)


def test_noncontiguous_input_and_gradcheck_through_the_frontend(conv_path):
    """A transposed (non-contiguous) float32 input gives the float64 reference values; gradients of a
    float32 conv against finite differences in float64 of the same computation."""
    x = rnd(2, 3, 7, 6, seed=7).astype(np.float32)
    w = rnd(4, 3, 3, 3, seed=8).astype(np.float32)
    xt = torch.tensor(x.transpose(0, 1, 3, 2).copy()).transpose(2, 3)          # a view, not contiguous
    assert not xt.is_contiguous()
    y = F.conv2d(xt, torch.tensor(w), stride=2, padding=1)
    want = conv_ref(x.astype(np.float64), w.astype(np.float64), (2, 2), ((1, 1), (1, 1)), (1, 1), 1)
    np.testing.assert_allclose(y.numpy(), want, rtol=2e-5, atol=2e-5)
    # float32 gradients against the float64 analytic gradient of the same loss (gradcheck runs in float64,
    # where these kernels are not used; so compare float32 autograd with a float64 run)
    xs = torch.tensor(x, requires_grad=True)
    ws = torch.tensor(w, requires_grad=True)
    F.conv2d(xs, ws, stride=(1, 2), padding=(2, 1), dilation=(2, 1)).square().sum().backward()
    xd = torch.tensor(x.astype(np.float64), requires_grad=True)
    wd = torch.tensor(w.astype(np.float64), requires_grad=True)
    assert gradcheck(lambda a, b: F.conv2d(a, b, stride=(1, 2), padding=(2, 1), dilation=(2, 1)).square().sum(),
                     (xd, wd))
    F.conv2d(xd, wd, stride=(1, 2), padding=(2, 1), dilation=(2, 1)).square().sum().backward()
    np.testing.assert_allclose(xs.grad.numpy(), xd.grad.numpy(), rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(ws.grad.numpy(), wd.grad.numpy(), rtol=1e-4, atol=1e-3)
