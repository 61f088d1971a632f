"""The NumPy backend's fast conv paths (issue #15): the conv_weight kernel (one GEMM), 1x1 convs as plain
GEMMs, unit-stride conv_transpose as a conv; each against the float64 loop references of the conformance
records, and the weight gradient of a plain backward against the recorded (create_graph) one."""
from __future__ import annotations

import functools

import numpy as np
import pytest

import tensorplug as torch
import tensorplug.nn.functional as F
from tensorplug.autograd import gradcheck, gradgradcheck
from tensorplug.backends.numpy_backend import conv as npconv
from tensorplug.dispatch import optional_conv
from tensorplug.testing.conformance.opdb.nn import conv_ref, conv_transpose_ref, conv_weight_ref


def rnd(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def _table():
    return torch.zeros(1)._k


# (x shape, ks, stride, padding pairs, dilation, groups, O)
WEIGHT_CASES = [
    ((2, 3, 9), (3,), (1,), ((1, 1),), (1,), 1, 4),
    ((2, 4, 8), (2,), (2,), ((1, 2),), (2,), 2, 6),
    ((2, 4, 7, 6), (3, 3), (1, 2), ((1, 1), (0, 1)), (1, 1), 2, 4),
    ((3, 4, 7, 7), (1, 1), (2, 2), ((0, 0), (0, 0)), (1, 1), 2, 6),       # 1x1 stride 2: no im2col
    ((2, 3, 6, 6), (3, 3), (2, 2), ((1, 1), (1, 1)), (1, 1), 1, 5),       # stride 2 leaves the last row unread
    ((1, 2, 4, 5, 5), (2, 2, 2), (2, 1, 1), ((0, 0), (1, 0), (0, 1)), (1, 2, 1), 2, 2),
]


@pytest.mark.parametrize("case", WEIGHT_CASES)
def test_conv_weight_native_and_decomposed_match_reference(case):
    """conv_weight (native and decomposition) equals the float64 definition sum gy * xpad."""
    shape, ks, stride, pads, dil, G, O = case
    x = rnd(*shape, seed=1)
    out = tuple((n + lo + hi - d * (k - 1) - 1) // s + 1
                for n, (lo, hi), d, k, s in zip(shape[2:], pads, dil, ks, stride))
    gy = rnd(shape[0], O, *out, seed=2)
    want = conv_weight_ref(x, gy, ks, stride, pads, dil, G)
    got = npconv.conv_weight(x, gy, ks, stride, pads, dil, G)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    dec = optional_conv.conv_weight(_table(), x, gy, ks, stride, pads, dil, G)
    np.testing.assert_allclose(dec, want, rtol=1e-12, atol=1e-12)


def test_conv_weight_float32_and_bfloat16():
    """float32 keeps its dtype; bfloat16 is computed in float32 and rounded back, as the other conv kernels."""
    x, gy = rnd(2, 3, 6, 6, seed=3), rnd(2, 4, 4, 4, seed=4)
    want = conv_weight_ref(x, gy, (3, 3), (1, 1), ((0, 0), (0, 0)), (1, 1), 1)
    xt, gt = torch.tensor(x, dtype=torch.float32), torch.tensor(gy, dtype=torch.float32)
    k = xt._k
    r = k["conv_weight"](xt._data, gt._data, (3, 3), (1, 1), ((0, 0), (0, 0)), (1, 1), 1)
    assert r.dtype == np.float32
    np.testing.assert_allclose(r, want, rtol=1e-5, atol=1e-4)
    xb, gb = xt.to(torch.bfloat16), gt.to(torch.bfloat16)
    rb = k["conv_weight"](xb._data, gb._data, (3, 3), (1, 1), ((0, 0), (0, 0)), (1, 1), 1)
    assert str(rb.dtype) == "bfloat16"
    np.testing.assert_allclose(np.asarray(rb, dtype=np.float64), want, rtol=3e-2, atol=0.3)


@pytest.mark.parametrize("stride, groups", [((1, 1), 1), ((2, 2), 2), ((2, 1), 4)])
def test_pointwise_conv_is_a_plain_gemm_with_reference_values(stride, groups):
    """1x1 kernels skip im2col (strided samples times the weight) and match the definition."""
    x, w = rnd(3, 8, 5, 7, seed=5), rnd(4 * groups, 8 // groups, 1, 1, seed=6)
    pads = ((0, 0), (0, 0))
    got = npconv.conv(x, w, stride, pads, (1, 1), groups)
    np.testing.assert_allclose(got, conv_ref(x, w, stride, pads, (1, 1), groups), rtol=1e-12, atol=1e-12)
    assert got.flags.c_contiguous


# (x shape, w shape, padding, dilation, groups, output_padding)
TRANSPOSE_CASES = [
    ((2, 4, 6, 6), (4, 3, 3, 3), (1, 1), (1, 1), 1, (0, 0)),
    ((2, 4, 6, 5), (4, 2, 3, 2), (0, 1), (1, 2), 2, (0, 1)),     # output padding beyond padding: a crop
    ((1, 2, 7), (2, 3, 3), (2,), (1,), 1, (0,)),                  # padding = k - 1: no border at all
    ((2, 2, 4, 4, 4), (2, 2, 2, 2, 2), (0, 1, 0), (1, 1, 2), 2, (0, 0, 1)),
]


@pytest.mark.parametrize("case", TRANSPOSE_CASES)
def test_unit_stride_conv_transpose_as_conv_matches_reference(case):
    """The flipped-kernel conv that unit-stride conv_transpose runs equals the col2im definition."""
    xs, ws, pad, dil, G, op = case
    x, w = rnd(*xs, seed=7), rnd(*ws, seed=8)
    nd = len(pad)
    out = tuple(n - 1 - 2 * p + d * (k - 1) + o + 1 for n, p, d, k, o in zip(xs[2:], pad, dil, ws[2:], op))
    want = conv_transpose_ref(x, w, (1,) * nd, pad, dil, G, out)
    np.testing.assert_allclose(npconv._conv_transpose_as_conv(x, w, pad, dil, G, out), want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(npconv.conv_transpose(x, w, (1,) * nd, pad, dil, G, out), want,
                               rtol=1e-12, atol=1e-12)


def test_weight_gradient_plain_and_recorded_backward_agree():
    """The fused conv_weight of a plain backward and the conv formula of create_graph give one gradient."""
    x = torch.tensor(rnd(2, 4, 7, 6, seed=9), requires_grad=True)
    w = torch.tensor(rnd(6, 2, 3, 2, seed=10), requires_grad=True)
    g = torch.tensor(rnd(2, 6, 4, 3, seed=11))
    conv = functools.partial(F.conv2d, stride=(2, 2), padding=1, dilation=(1, 2), groups=2)
    conv(x, w).backward(g)
    plain = w.grad.numpy().copy()
    (rec,) = torch.autograd.grad(conv(x, w), (w,), g, create_graph=True)
    assert rec.requires_grad
    np.testing.assert_allclose(plain, rec.detach().numpy(), rtol=1e-12, atol=1e-12)
    want = conv_weight_ref(x.detach().numpy(), g.numpy(), (3, 2), (2, 2), ((1, 1), (1, 1)), (1, 2), 2)
    np.testing.assert_allclose(plain, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("kw", [dict(stride=2, groups=2), dict(padding=1), dict(padding=2, dilation=2)])
def test_fast_paths_gradcheck_and_gradgradcheck(kw):
    """1x1 / unit-stride convs and conv_transposes keep first and second derivatives (finite differences)."""
    x = torch.tensor(rnd(2, 4, 5, 5, seed=12), requires_grad=True)
    w1 = torch.tensor(rnd(4, 4 // kw.get("groups", 1), 1, 1, seed=13), requires_grad=True)
    w3 = torch.tensor(rnd(4, 4 // kw.get("groups", 1), 3, 3, seed=14), requires_grad=True)
    for w in (w1, w3):
        assert gradcheck(lambda x, w: F.conv2d(x, w, **kw), (x, w))
        assert gradgradcheck(lambda x, w: F.conv2d(x, w, **kw), (x, w))
    tkw = {k: v for k, v in kw.items() if k != "stride"}
    assert gradcheck(lambda x, w: F.conv_transpose2d(x, w, **tkw), (x, w3))
    assert gradgradcheck(lambda x, w: F.conv_transpose2d(x, w, **tkw), (x, w3))
