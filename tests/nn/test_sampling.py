"""interpolate / upsample (every mode), grid_sample, affine_grid, pixel_shuffle / unshuffle and their
modules, against float64 NumPy references written per output point from the definitions, with
gradcheck + gradgradcheck (including gradients w.r.t. the grid and theta)."""
import itertools
import math
import warnings

import numpy as np
import pytest

import tensorplug as torch
import tensorplug.nn as nn
import tensorplug.nn.functional as F
from tensorplug.autograd import gradcheck, gradgradcheck

RNG = np.random.default_rng(0)


def t(a, requires_grad=False):
    return torch.tensor(np.asarray(a, dtype=np.float64), requires_grad=requires_grad)


def f64(x):
    return np.asarray(x.detach().numpy(), dtype=np.float64)


# -- references ------------------------------------------------------------------------------------------
def src_linear(dst, n_in, n_out, align_corners, scale=None, cubic=False):
    """The source coordinate of output position dst (PyTorch's area_pixel_compute_source_index)."""
    if align_corners:
        return dst * (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
    step = 1.0 / scale if scale else n_in / n_out
    s = (dst + 0.5) * step - 0.5
    return s if cubic else max(s, 0.0)


def lin_weights(dst, n_in, n_out, align_corners, scale=None):
    s = src_linear(dst, n_in, n_out, align_corners, scale)
    i0 = int(math.floor(s))
    i1 = min(i0 + 1, n_in - 1)
    lam = s - i0
    return [(i0, 1 - lam), (i1, lam)]


def keys(x, a=-0.75):
    """The Keys cubic convolution kernel W(x)."""
    x = abs(x)
    if x <= 1:
        return (a + 2) * x ** 3 - (a + 3) * x ** 2 + 1
    if x < 2:
        return a * x ** 3 - 5 * a * x ** 2 + 8 * a * x - 4 * a
    return 0.0


def cubic_weights(dst, n_in, n_out, align_corners, scale=None):
    s = src_linear(dst, n_in, n_out, align_corners, scale, cubic=True)
    f = math.floor(s)
    return [(min(max(f + k, 0), n_in - 1), keys(s - (f + k))) for k in (-1, 0, 1, 2)]


def ref_interp(x, out_size, weights_fn):
    """Direct per-output-point evaluation: out[n, c, o...] = sum over the tap products."""
    sp_in = x.shape[2:]
    out = np.zeros(x.shape[:2] + tuple(out_size))
    for o in itertools.product(*[range(s) for s in out_size]):
        taps = [weights_fn(o[a], sp_in[a], out_size[a]) for a in range(len(out_size))]
        acc = 0.0
        for combo in itertools.product(*taps):
            w = np.prod([cw for _, cw in combo])
            idx = tuple(ci for ci, _ in combo)
            acc = acc + w * x[(slice(None), slice(None)) + idx]
        out[(slice(None), slice(None)) + o] = acc
    return out


def nearest_fn(exact=False):
    def fn(dst, n_in, n_out):
        scale = n_in / n_out
        s = math.floor(((dst + 0.5) if exact else dst) * scale)
        return [(min(s, n_in - 1), 1.0)]
    return fn


def area_fn(dst, n_in, n_out):
    lo = (dst * n_in) // n_out
    hi = -((-(dst + 1) * n_in) // n_out)
    return [(i, 1.0 / (hi - lo)) for i in range(lo, hi)]


X3 = RNG.standard_normal((2, 3, 7))
X4 = RNG.standard_normal((2, 3, 5, 4))
X5 = RNG.standard_normal((1, 2, 3, 4, 5))


@pytest.mark.parametrize("size", [(7, 9), (3, 2), (5, 4), (10, 3), (1, 1)])
def test_interpolate_2d(size):
    x = t(X4)
    np.testing.assert_allclose(f64(F.interpolate(x, size=size)), ref_interp(X4, size, nearest_fn()), atol=1e-12)
    np.testing.assert_allclose(f64(F.interpolate(x, size=size, mode="nearest-exact")),
                               ref_interp(X4, size, nearest_fn(exact=True)), atol=1e-12)
    np.testing.assert_allclose(f64(F.interpolate(x, size=size, mode="area")), ref_interp(X4, size, area_fn),
                               atol=1e-12)
    for ac in (False, True):
        np.testing.assert_allclose(
            f64(F.interpolate(x, size=size, mode="bilinear", align_corners=ac)),
            ref_interp(X4, size, lambda d, i, o: lin_weights(d, i, o, ac)), atol=1e-12)
        np.testing.assert_allclose(
            f64(F.interpolate(x, size=size, mode="bicubic", align_corners=ac)),
            ref_interp(X4, size, lambda d, i, o: cubic_weights(d, i, o, ac)), atol=1e-12)


@pytest.mark.parametrize("size", [11, 3, 7, 1])
def test_interpolate_1d(size):
    x = t(X3)
    np.testing.assert_allclose(f64(F.interpolate(x, size=size)), ref_interp(X3, (size,), nearest_fn()), atol=1e-12)
    np.testing.assert_allclose(f64(F.interpolate(x, size=size, mode="area")), ref_interp(X3, (size,), area_fn),
                               atol=1e-12)
    for ac in (False, True):
        np.testing.assert_allclose(f64(F.interpolate(x, size=size, mode="linear", align_corners=ac)),
                                   ref_interp(X3, (size,), lambda d, i, o: lin_weights(d, i, o, ac)), atol=1e-12)


def test_interpolate_3d():
    x = t(X5)
    size = (4, 3, 7)
    np.testing.assert_allclose(f64(F.interpolate(x, size=size)), ref_interp(X5, size, nearest_fn()), atol=1e-12)
    np.testing.assert_allclose(f64(F.interpolate(x, size=size, mode="area")), ref_interp(X5, size, area_fn),
                               atol=1e-12)
    for ac in (False, True):
        np.testing.assert_allclose(f64(F.interpolate(x, size=size, mode="trilinear", align_corners=ac)),
                                   ref_interp(X5, size, lambda d, i, o: lin_weights(d, i, o, ac)), atol=1e-12)


def test_interpolate_scale_factor():
    x = t(X4)
    # out size = floor(in * s); the kernel's step is 1/s unless recompute_scale_factor
    r = F.interpolate(x, scale_factor=1.7, mode="bilinear")
    assert r.shape == (2, 3, 8, 6)
    np.testing.assert_allclose(f64(r), ref_interp(X4, (8, 6), lambda d, i, o: lin_weights(d, i, o, False, 1.7)),
                               atol=1e-12)
    r = F.interpolate(x, scale_factor=1.7, mode="bilinear", recompute_scale_factor=True)
    np.testing.assert_allclose(f64(r), ref_interp(X4, (8, 6), lambda d, i, o: lin_weights(d, i, o, False)),
                               atol=1e-12)
    r = F.interpolate(x, scale_factor=(2, 0.5), mode="bicubic")
    assert r.shape == (2, 3, 10, 2)
    sc = {10: 2.0, 2: 0.5}
    np.testing.assert_allclose(f64(r), ref_interp(X4, (10, 2), lambda d, i, o: cubic_weights(d, i, o, False, sc[o])),
                               atol=1e-12)
    r = F.interpolate(x, scale_factor=2)
    np.testing.assert_array_equal(f64(r), X4.repeat(2, axis=2).repeat(2, axis=3))
    assert F.interpolate(x, scale_factor=0.5, mode="area").shape == (2, 3, 2, 2)


def test_interpolate_float32_and_integers():
    x = torch.tensor(X4, dtype=torch.float32)
    r = F.interpolate(x, size=(7, 6), mode="bilinear")
    assert r.dtype == torch.float32
    np.testing.assert_allclose(r.numpy(), ref_interp(X4, (7, 6), lambda d, i, o: lin_weights(d, i, o, False)),
                               rtol=1e-5, atol=1e-5)
    xi = torch.arange(6, dtype=torch.uint8).reshape(1, 1, 6)
    r = F.interpolate(xi, size=3)
    assert r.dtype == torch.uint8 and r.tolist() == [[[0, 2, 4]]]


def test_interpolate_errors():
    x = t(X4)
    with pytest.raises(ValueError, match="align_corners option can only be set with the interpolating modes"):
        F.interpolate(x, size=3, align_corners=True)
    with pytest.raises(ValueError, match="only one of size or scale_factor should be defined"):
        F.interpolate(x, size=3, scale_factor=2)
    with pytest.raises(ValueError, match="either size or scale_factor should be defined"):
        F.interpolate(x)
    with pytest.raises(ValueError, match="same number of spatial dimensions"):
        F.interpolate(x, size=(3, 4, 5))
    with pytest.raises(NotImplementedError, match="Got 3D input, but bilinear mode needs 4D input"):
        F.interpolate(t(X3), size=3, mode="bilinear")
    with pytest.raises(NotImplementedError, match="Got 4D input, but trilinear mode needs 5D input"):
        F.interpolate(x, size=3, mode="trilinear")
    with pytest.raises(ValueError, match="recompute_scale_factor is not meaningful with an explicit size"):
        F.interpolate(x, size=3, recompute_scale_factor=True)
    with pytest.raises(RuntimeError, match="should be greater than 0"):
        F.interpolate(x, scale_factor=0.1)


def test_upsample_aliases():
    x = t(X4)
    with pytest.warns(UserWarning, match="deprecated"):
        r = F.upsample(x, scale_factor=2, mode="bilinear")
    np.testing.assert_allclose(f64(r), f64(F.interpolate(x, scale_factor=2, mode="bilinear")))
    with pytest.warns(UserWarning):
        r = F.upsample_bilinear(x, size=(6, 5))
    np.testing.assert_allclose(f64(r), ref_interp(X4, (6, 5), lambda d, i, o: lin_weights(d, i, o, True)),
                               atol=1e-12)
    with pytest.warns(UserWarning):
        r = F.upsample_nearest(x, scale_factor=3)
    assert r.shape == (2, 3, 15, 12)


# -- grid_sample -------------------------------------------------------------------------------------------
def reflect_ref(c, lo, hi):
    """Fold c into [lo, hi] by mirroring at the ends (periodic with period 2 (hi - lo))."""
    span = hi - lo
    if span <= 0:
        return 0.0
    m = (c - lo) % (2 * span)
    return lo + (m if m <= span else 2 * span - m)


def ref_grid_sample(x, grid, mode, padding_mode, align_corners):
    """Per output point: unnormalize, apply the padding mode, then bilinear (or nearest) read with
    zeros outside for padding_mode='zeros'. x (N, C, *S), grid (N, *P, k)."""
    n, c = x.shape[:2]
    sp = x.shape[2:]
    k = len(sp)
    out = np.zeros((n, c) + grid.shape[1:-1])
    for b in range(n):
        for p in itertools.product(*[range(s) for s in grid.shape[1:-1]]):
            coords = []
            for a in range(k):
                g = grid[(b,) + p + (k - 1 - a,)]          # x is the last spatial dim
                size = sp[a]
                u = (g + 1) / 2 * (size - 1) if align_corners else ((g + 1) * size - 1) / 2
                if padding_mode == "border":
                    u = min(max(u, 0), size - 1)
                elif padding_mode == "reflection":
                    u = reflect_ref(u, 0, size - 1) if align_corners else reflect_ref(u, -0.5, size - 0.5)
                    u = min(max(u, 0), size - 1)
                coords.append(u)
            if mode == "nearest":
                corners = [[(int(np.rint(u)), 1.0)] for u in coords]
            else:
                corners = [[(math.floor(u), 1 - (u - math.floor(u))), (math.floor(u) + 1, u - math.floor(u))]
                           for u in coords]
            acc = np.zeros(c)
            for combo in itertools.product(*corners):
                idx = tuple(i for i, _ in combo)
                if all(0 <= i < s for i, s in zip(idx, sp)):
                    acc += np.prod([w for _, w in combo]) * x[(b, slice(None)) + idx]
            out[(b, slice(None)) + p] = acc
    return out


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample_2d(mode, padding_mode, align_corners):
    x = RNG.standard_normal((2, 3, 4, 5))
    grid = RNG.uniform(-1.6, 1.6, (2, 3, 4, 2))
    r = F.grid_sample(t(x), t(grid), mode=mode, padding_mode=padding_mode, align_corners=align_corners)
    assert r.shape == (2, 3, 3, 4)
    np.testing.assert_allclose(f64(r), ref_grid_sample(x, grid, mode, padding_mode, align_corners), atol=1e-12)


@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
def test_grid_sample_3d(padding_mode):
    x = RNG.standard_normal((1, 2, 3, 4, 3))
    grid = RNG.uniform(-1.4, 1.4, (1, 2, 3, 2, 3))
    for mode in ("bilinear", "nearest"):
        for ac in (False, True):
            r = F.grid_sample(t(x), t(grid), mode=mode, padding_mode=padding_mode, align_corners=ac)
            np.testing.assert_allclose(f64(r), ref_grid_sample(x, grid, mode, padding_mode, ac), atol=1e-12)


def test_grid_sample_identity_and_errors():
    x = RNG.standard_normal((2, 3, 4, 5))
    theta = np.tile(np.array([[1.0, 0, 0], [0, 1, 0]]), (2, 1, 1))
    for ac in (False, True):
        grid = F.affine_grid(t(theta), (2, 3, 4, 5), align_corners=ac)
        np.testing.assert_allclose(f64(F.grid_sample(t(x), grid, align_corners=ac)), x, atol=1e-12)
    with pytest.raises(ValueError, match="expected padding_mode"):
        F.grid_sample(t(x), t(np.zeros((2, 1, 1, 2))), padding_mode="wrap")
    with pytest.raises(RuntimeError, match="expected grid to have size 2 in last dimension"):
        F.grid_sample(t(x), t(np.zeros((2, 1, 1, 3))))
    with pytest.raises(RuntimeError, match="same batch size"):
        F.grid_sample(t(x), t(np.zeros((1, 1, 1, 2))))


# -- affine_grid -----------------------------------------------------------------------------------------------
def base_coords(n, align_corners):
    if n == 1:
        return np.zeros(1)
    if align_corners:
        return np.array([-1 + 2 * j / (n - 1) for j in range(n)])
    return np.array([(2 * j + 1) / n - 1 for j in range(n)])


@pytest.mark.parametrize("align_corners", [False, True])
def test_affine_grid(align_corners):
    eye = np.tile(np.array([[1.0, 0, 0], [0, 1, 0]]), (2, 1, 1))
    grid = f64(F.affine_grid(t(eye), (2, 3, 4, 5), align_corners=align_corners))
    assert grid.shape == (2, 4, 5, 2)
    xs, ys = base_coords(5, align_corners), base_coords(4, align_corners)
    for i in range(4):
        for j in range(5):
            np.testing.assert_allclose(grid[:, i, j], [[xs[j], ys[i]]] * 2, atol=1e-12)
    theta = RNG.standard_normal((2, 2, 3))
    grid = f64(F.affine_grid(t(theta), (2, 1, 4, 5), align_corners=align_corners))
    for b, i, j in itertools.product(range(2), range(4), range(5)):
        np.testing.assert_allclose(grid[b, i, j], theta[b] @ np.array([xs[j], ys[i], 1.0]), atol=1e-12)
    theta3 = RNG.standard_normal((1, 3, 4))
    grid = f64(F.affine_grid(t(theta3), (1, 1, 2, 3, 4), align_corners=align_corners))
    zs, ys, xs = base_coords(2, align_corners), base_coords(3, align_corners), base_coords(4, align_corners)
    for d, i, j in itertools.product(range(2), range(3), range(4)):
        np.testing.assert_allclose(grid[0, d, i, j], theta3[0] @ np.array([xs[j], ys[i], zs[d], 1.0]), atol=1e-12)


def test_affine_grid_errors():
    with pytest.raises(ValueError, match="Expected a batch of 2D affine matrices of shape Nx2x3"):
        F.affine_grid(t(np.zeros((1, 3, 3))), (1, 1, 2, 2))
    with pytest.raises(ValueError, match="Nx3x4"):
        F.affine_grid(t(np.zeros((1, 2, 3))), (1, 1, 2, 2, 2))
    with pytest.raises(NotImplementedError, match="affine_grid only supports 4D and 5D sizes"):
        F.affine_grid(t(np.zeros((1, 2, 3))), (1, 1, 2))


# -- pixel shuffle -------------------------------------------------------------------------------------------
def test_pixel_shuffle():
    r = 2
    x = RNG.standard_normal((2, 8, 3, 2))
    out = f64(F.pixel_shuffle(t(x), r))
    assert out.shape == (2, 2, 6, 4)
    for n, c, h, w, i, j in itertools.product(range(2), range(2), range(3), range(2), range(r), range(r)):
        assert out[n, c, h * r + i, w * r + j] == x[n, c * r * r + i * r + j, h, w]
    np.testing.assert_array_equal(f64(F.pixel_unshuffle(t(out), r)), x)
    # extra leading dims and the unbatched form
    x5 = RNG.standard_normal((2, 3, 9, 1, 2))
    np.testing.assert_array_equal(f64(F.pixel_unshuffle(F.pixel_shuffle(t(x5), 3), 3)), x5)
    assert F.pixel_shuffle(t(x[0]), 2).shape == (2, 6, 4)
    with pytest.raises(RuntimeError, match="divisible by the square of upscale_factor"):
        F.pixel_shuffle(t(RNG.standard_normal((1, 5, 2, 2))), 2)
    with pytest.raises(RuntimeError, match="at least 3 dimensions"):
        F.pixel_shuffle(t(np.zeros((4, 2))), 2)
    with pytest.raises(RuntimeError, match="height to be divisible by downscale_factor"):
        F.pixel_unshuffle(t(np.zeros((1, 1, 3, 4))), 2)


# -- gradients ---------------------------------------------------------------------------------------------
def g(*shape, lo=-1.0, hi=1.0, seed=1):
    return t(np.random.default_rng(seed).uniform(lo, hi, shape), requires_grad=True)


GRAD_CASES = {
    "nearest": (lambda a: F.interpolate(a, size=(3, 5)), lambda: (g(1, 1, 2, 3),)),
    "nearest_exact": (lambda a: F.interpolate(a, size=(3,), mode="nearest-exact"), lambda: (g(1, 2, 2),)),
    "linear": (lambda a: F.interpolate(a, size=5, mode="linear", align_corners=True), lambda: (g(1, 2, 3),)),
    "bilinear": (lambda a: F.interpolate(a, size=(3, 5), mode="bilinear"), lambda: (g(1, 1, 2, 3),)),
    "bilinear_scale": (lambda a: F.interpolate(a, scale_factor=1.5, mode="bilinear", align_corners=True),
                       lambda: (g(1, 1, 2, 3),)),
    "bicubic": (lambda a: F.interpolate(a, size=(3, 4), mode="bicubic"), lambda: (g(1, 1, 2, 3),)),
    "trilinear": (lambda a: F.interpolate(a, size=(2, 3, 2), mode="trilinear"), lambda: (g(1, 1, 2, 2, 2),)),
    "area": (lambda a: F.interpolate(a, size=(2,), mode="area"), lambda: (g(1, 2, 5),)),
    "grid_sample_zeros": (lambda a, gr: F.grid_sample(a, gr, align_corners=False),
                          lambda: (g(1, 2, 3, 3), g(1, 2, 2, 2, lo=-1.2, hi=1.2, seed=2))),
    "grid_sample_border": (lambda a, gr: F.grid_sample(a, gr, padding_mode="border", align_corners=True),
                           lambda: (g(1, 1, 3, 3), g(1, 2, 2, 2, lo=-1.2, hi=1.2, seed=3))),
    "grid_sample_reflection": (lambda a, gr: F.grid_sample(a, gr, padding_mode="reflection"),
                               lambda: (g(1, 1, 3, 3), g(1, 2, 2, 2, lo=-1.5, hi=1.5, seed=4))),
    "grid_sample_3d": (lambda a, gr: F.grid_sample(a, gr),
                       lambda: (g(1, 1, 2, 2, 2), g(1, 1, 2, 1, 3, lo=-1.2, hi=1.2, seed=5))),
    "affine_grid": (lambda th: F.affine_grid(th, (1, 1, 2, 3)), lambda: (g(1, 2, 3),)),
    "affine_grid_3d": (lambda th: F.affine_grid(th, (1, 1, 2, 2, 2), align_corners=True), lambda: (g(1, 3, 4),)),
    "affine_then_sample": (lambda a, th: F.grid_sample(a, F.affine_grid(th, (1, 1, 2, 2))),
                           lambda: (g(1, 1, 3, 3), g(1, 2, 3, lo=-0.8, hi=0.8, seed=6))),
    "pixel_shuffle": (lambda a: F.pixel_shuffle(a, 2), lambda: (g(1, 4, 2, 1),)),
    "pixel_unshuffle": (lambda a: F.pixel_unshuffle(a, 2), lambda: (g(1, 1, 2, 4),)),
}


@pytest.mark.parametrize("name", list(GRAD_CASES))
def test_sampling_gradients(name):
    fn, make = GRAD_CASES[name]
    args = make()
    assert gradcheck(fn, args)
    assert gradgradcheck(fn, args)


def test_grid_sample_nearest_grid_gradient_is_zero():
    x = g(1, 1, 3, 3)
    grid = g(1, 2, 2, 2, seed=7)
    gx, gg = torch.autograd.grad(F.grid_sample(x, grid, mode="nearest").sum(), [x, grid])
    assert np.all(f64(gg) == 0) and f64(gx).sum() > 0


# -- modules -----------------------------------------------------------------------------------------------
def test_sampling_modules():
    x = t(X4)
    m = nn.Upsample(scale_factor=2)
    assert repr(m) == "Upsample(scale_factor=2.0, mode='nearest')"
    np.testing.assert_array_equal(f64(m(x)), X4.repeat(2, axis=2).repeat(2, axis=3))
    m = nn.Upsample(size=(3, 4), mode="bilinear", align_corners=True)
    assert repr(m) == "Upsample(size=(3, 4), mode='bilinear')" and m.align_corners
    np.testing.assert_allclose(f64(m(x)), ref_interp(X4, (3, 4), lambda d, i, o: lin_weights(d, i, o, True)),
                               atol=1e-12)
    m = nn.Upsample(scale_factor=(2, 3), mode="bicubic")
    assert repr(m) == "Upsample(scale_factor=(2.0, 3.0), mode='bicubic')"
    assert m(x).shape == (2, 3, 10, 12)
    m = nn.UpsamplingNearest2d(scale_factor=2)
    assert repr(m) == "UpsamplingNearest2d(scale_factor=2.0, mode='nearest')"
    m = nn.UpsamplingBilinear2d(size=4)
    assert repr(m) == "UpsamplingBilinear2d(size=4, mode='bilinear')"
    np.testing.assert_allclose(f64(m(x)), ref_interp(X4, (4, 4), lambda d, i, o: lin_weights(d, i, o, True)),
                               atol=1e-12)
    m = nn.PixelShuffle(2)
    assert repr(m) == "PixelShuffle(upscale_factor=2)"
    y = m(t(RNG.standard_normal((1, 8, 2, 3))))
    assert y.shape == (1, 2, 4, 6)
    m2 = nn.PixelUnshuffle(2)
    assert repr(m2) == "PixelUnshuffle(downscale_factor=2)"
    np.testing.assert_array_equal(f64(m2(y)), f64(F.pixel_unshuffle(y, 2)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        nn.Upsample(scale_factor=2, mode="trilinear")(t(X5))


# -- another device, without the optional kernels -----------------------------------------------------------
def test_ops_on_another_device_with_decomposed_kernels(add_backend):
    """Every index/weight tensor is made on the input's device, and nothing needs an optional kernel."""
    add_backend("numpy_alt_sampling", device_type="altdev",
                drop=("sigmoid", "log1p", "expm1", "clip", "softmax", "log_softmax", "isinf", "isfinite"))
    x = RNG.standard_normal((1, 2, 3, 4))
    grid = RNG.uniform(-1.2, 1.2, (1, 2, 2, 2))
    logits = RNG.standard_normal((3, 4))
    target = np.array([0, 3, -100])

    def run(dev):
        xt = torch.tensor(x, device=dev, requires_grad=True)
        gt = torch.tensor(grid, device=dev, requires_grad=True)
        lt = torch.tensor(logits, device=dev, requires_grad=True)
        tt = torch.tensor(target, device=dev)
        outs = [F.interpolate(xt, size=(5, 3), mode="bicubic"), F.interpolate(xt, scale_factor=2),
                F.interpolate(xt, size=(2, 2), mode="area"),
                F.grid_sample(xt, gt, padding_mode="reflection"), F.pad(xt, (1, 2, 2, 1), mode="reflect"),
                F.pad(xt, (1, -1), value=3.0), F.pixel_shuffle(xt.reshape(1, 4, 2, 3), 2),
                F.affine_grid(gt.reshape(1, 2, 4)[:, :, :3], (1, 1, 2, 3)),
                F.cross_entropy(lt, tt, label_smoothing=0.1), F.nll_loss(lt, tt),
                F.binary_cross_entropy_with_logits(lt, lt.detach().sigmoid()),
                F.binary_cross_entropy(lt.sigmoid(), lt.detach().sigmoid()),
                F.normalize(lt), F.cosine_similarity(lt, lt * 2 + 1), F.pairwise_distance(lt, lt + 1),
                F.one_hot(tt.clamp(min=0), 4)]
        for o in outs:
            assert o.device.type == dev
        loss = sum((o.to(torch.float64) ** 2).sum() for o in outs)
        grads = torch.autograd.grad(loss, [xt, gt, lt])
        return [f64(o.to("cpu")) for o in outs] + [f64(gr.to("cpu")) for gr in grads]

    for a, b in zip(run("altdev"), run("cpu")):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_channel_shuffle_matches_numpy():
    x = np.arange(2 * 6 * 3 * 2, dtype=np.float64).reshape(2, 6, 3, 2)
    want = x.reshape(2, 3, 2, 3, 2).swapaxes(1, 2).reshape(2, 6, 3, 2)
    got = F.channel_shuffle(torch.tensor(x), 3)
    np.testing.assert_array_equal(got.numpy(), want)
    m = torch.nn.ChannelShuffle(3)
    assert repr(m) == "ChannelShuffle(groups=3)" and torch.equal(m(torch.tensor(x)), got)
    with pytest.raises(RuntimeError, match="Number of channels must be divisible by groups. Got 3 channels and 2"):
        F.channel_shuffle(torch.ones(1, 3, 2), 2)
    with pytest.raises(RuntimeError, match="at least 3 dimensions"):
        F.channel_shuffle(torch.ones(2, 4), 2)
