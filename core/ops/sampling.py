"""Resampling ops of nn.functional: interpolate / upsample, grid_sample, affine_grid, pixel_shuffle.

Nothing loops over pixels or the batch. interpolate is separable: for each spatial dimension the
source indices and weights of every output position are computed once (small host arrays, the same
formulas as PyTorch's CPU kernels) and applied with `index_select` and broadcast arithmetic, so the
gradient is a scatter-add through the indexing ops and every order of it works. grid_sample gathers
the corner values of all sample points at once from the flattened spatial dims; its weights are
Tensor arithmetic on the grid, so gradients flow to the grid as well as to the input.
"""
from __future__ import annotations

import itertools
import math
import warnings

import numpy as np

from .. import dtypes as _dt
from ..amp.state import state as _amp
from ._core import Tensor
from ._float32 import in_float32

_MODES = ("nearest", "linear", "bilinear", "bicubic", "trilinear", "area", "nearest-exact")
_LINEAR_NEEDS = {"linear": 3, "bilinear": 4, "bicubic": 4, "trilinear": 5}


def _itensor(arr, like):
    from .creation import tensor
    return tensor(np.ascontiguousarray(arr, dtype=np.int64), dtype=_dt.int64, device=like.device)


def _wtensor(arr, like, d, nd):
    """A weight vector shaped to broadcast along dim d of an nd-dim tensor."""
    from .creation import tensor
    shape = [1] * nd
    shape[d] = len(arr)
    return tensor(np.asarray(arr, dtype=np.float64).reshape(shape), dtype=like.dtype, device=like.device)


def _taps(x, d, taps):
    """sum_k x.index_select(d, idx_k) * w_k over taps [(idx_k, w_k or None)]."""
    out = None
    nd = x.ndim
    for idx, w in taps:
        v = x.index_select(d, _itensor(idx, x))
        if w is not None:
            v = v * _wtensor(w, x, d, nd)
        out = v if out is None else out + v
    return out


# -- source index computation (PyTorch's CPU formulas) ----------------------------------------------
def _scales_value(scale, n_in, n_out):
    """compute_scales_value: 1/scale when a scale factor was given, else in/out."""
    return 1.0 / scale if scale is not None and scale > 0 else n_in / n_out


def _area_pixel_scale(n_in, n_out, align_corners, scale):
    if align_corners:
        return (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
    return _scales_value(scale, n_in, n_out)


def _source_coords(n_in, n_out, align_corners, scale, cubic):
    s = _area_pixel_scale(n_in, n_out, align_corners, scale)
    dst = np.arange(n_out, dtype=np.float64)
    if align_corners:
        return s * dst
    src = s * (dst + 0.5) - 0.5
    return src if cubic else np.maximum(src, 0.0)


def _nearest_index(n_in, n_out, scale, exact):
    dst = np.arange(n_out, dtype=np.int64)
    if not exact:
        if n_out == n_in:
            return dst
        if n_out == 2 * n_in:
            return dst >> 1
    # float32 arithmetic, as PyTorch's nearest kernels
    s = np.float32(1.0 / scale) if scale is not None and scale > 0 else np.float32(n_in) / np.float32(n_out)
    if exact:
        src = np.floor(((dst + 0.5) * np.float64(s)).astype(np.float32))
    else:
        src = np.floor(dst.astype(np.float32) * s)
    return np.minimum(src.astype(np.int64), n_in - 1)


def _linear_taps(n_in, n_out, align_corners, scale):
    src = _source_coords(n_in, n_out, align_corners, scale, False)
    i0 = np.minimum(src.astype(np.int64), n_in - 1)
    lam = src - i0
    i1 = i0 + (i0 < n_in - 1).astype(np.int64)
    return [(i0, 1.0 - lam), (i1, lam)]


def _cubic_coeffs(t, a=-0.75):
    def c1(x):
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def c2(x):
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return [c2(t + 1.0), c1(t), c1(1.0 - t), c2(2.0 - t)]


def _cubic_taps(n_in, n_out, align_corners, scale):
    src = _source_coords(n_in, n_out, align_corners, scale, True)
    i = np.floor(src).astype(np.int64)
    t = src - i
    ws = _cubic_coeffs(t)
    return [(np.clip(i + k - 1, 0, n_in - 1), ws[k]) for k in range(4)]


def _area_taps(n_in, n_out):
    o = np.arange(n_out, dtype=np.int64)
    start = (o * n_in) // n_out
    end = ((o + 1) * n_in + n_out - 1) // n_out
    length = end - start
    kmax = int(length.max()) if n_out else 0
    taps = []
    for k in range(kmax):
        inside = k < length
        taps.append((np.minimum(start + k, n_in - 1), np.where(inside, 1.0 / length, 0.0)))
    return taps


# -- interpolate ------------------------------------------------------------------------------------------
def _spatial_names(n):
    return ("D", "H", "W")[3 - n:] if n <= 3 else tuple(f"d{i}" for i in range(n))


@in_float32         # bfloat16: weights and sums in float32, rounded once, as PyTorch's kernels
def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """Resize the spatial dims of an (N, C, d1[, d2[, d3]]) input to `size`, or by `scale_factor`.

    modes: 'nearest' (PyTorch's legacy floor rule), 'nearest-exact', 'linear' (3-D input),
    'bilinear' / 'bicubic' (4-D), 'trilinear' (5-D) with `align_corners`, and 'area' (adaptive
    average pooling). With a scale factor the kernel uses 1/scale_factor as the step between
    samples unless recompute_scale_factor=True (then in/out, like an explicit size)."""
    if _amp.on:           # the upsample kernels are listed; 'area' is adaptive average pooling
        return _amp.run("interpolate" if mode != "area" else "adaptive_avg_pool", interpolate,
                        (input, size, scale_factor, mode, align_corners, recompute_scale_factor, antialias))
    if not isinstance(input, Tensor):
        raise TypeError(f"interpolate(): argument 'input' must be Tensor, not {type(input).__name__}")
    if mode not in _MODES:
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.ndim}D) "
                                  f"for the modes: nearest | linear | bilinear | bicubic | trilinear | area | "
                                  f"nearest-exact (got {mode})")
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating modes: "
                             "linear | bilinear | bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    nd = input.ndim
    dim = nd - 2
    if dim < 1:
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {nd}D) for "
                                  f"the modes: nearest | linear | bilinear | bicubic | trilinear | area | "
                                  f"nearest-exact (got {mode})")
    in_sp = list(input.shape[2:])
    scale_factors = None
    output_size = None
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        if isinstance(size, (list, tuple)):
            if len(size) != dim:
                raise ValueError(f"Input and output must have the same number of spatial dimensions, but got "
                                 f"input with spatial dimensions of {in_sp} and output size of {list(size)}. "
                                 f"Please provide input tensor in (N, C, d1, d2, ...,dK) format and output size "
                                 f"in (o1, o2, ...,oK) format.")
            output_size = [int(s) for s in size]
        else:
            output_size = [int(size)] * dim
    elif scale_factor is not None:
        if isinstance(scale_factor, (list, tuple)):
            if len(scale_factor) != dim:
                raise ValueError(f"Input and scale_factor must have the same number of spatial dimensions, but "
                                 f"got input with spatial dimensions of {in_sp} and scale_factor of shape "
                                 f"{list(scale_factor)}. Please provide input tensor in (N, C, d1, d2, ...,dK) "
                                 f"format and scale_factor in (s1, s2, ...,sK) format.")
            scale_factors = [float(s) for s in scale_factor]
        else:
            scale_factors = [float(scale_factor)] * dim
    else:
        raise ValueError("either size or scale_factor should be defined")
    if recompute_scale_factor and size is not None:
        raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
    if mode == "area" and output_size is None:
        recompute_scale_factor = True
    if output_size is None:
        output_size = [int(math.floor(float(n) * s)) for n, s in zip(in_sp, scale_factors)]
    if recompute_scale_factor:
        scale_factors = None
    if antialias:
        raise NotImplementedError("interpolate(antialias=True) is not supported by tensorplug")
    if mode in _LINEAR_NEEDS and nd != _LINEAR_NEEDS[mode]:
        raise NotImplementedError(f"Got {nd}D input, but {mode} mode needs {_LINEAR_NEEDS[mode]}D input")
    if nd > 5:
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {nd}D) for "
                                  f"the modes: nearest | linear | bilinear | bicubic | trilinear | area | "
                                  f"nearest-exact (got {mode})")
    if any(n <= 0 for n in in_sp) or any(o <= 0 for o in output_size):
        names = _spatial_names(dim)
        ins = ", ".join(f"{a}: {b}" for a, b in zip(names, in_sp))
        outs = ", ".join(f"{a}: {b}" for a, b in zip(names, output_size))
        raise RuntimeError(f"Input and output sizes should be greater than 0, but got input ({ins}) output "
                           f"({outs})")
    if mode not in ("nearest", "nearest-exact") and input._dtype.category != 2:
        raise RuntimeError(f"\"upsample_{mode}\" not implemented for '{input._dtype.name}'")
    x = input
    for i in range(dim):
        d = i + 2
        n_in, n_out = in_sp[i], output_size[i]
        sc = scale_factors[i] if scale_factors is not None else None
        if mode in ("nearest", "nearest-exact"):
            idx = _nearest_index(n_in, n_out, sc, mode == "nearest-exact")
            if n_in == n_out and np.array_equal(idx, np.arange(n_in)):
                continue
            x = x.index_select(d, _itensor(idx, x))
        elif mode == "area":
            if n_in == n_out:
                continue
            x = _taps(x, d, _area_taps(n_in, n_out))
        elif mode == "bicubic":
            x = _taps(x, d, _cubic_taps(n_in, n_out, align_corners, sc))
        else:
            if n_in == n_out and (align_corners or sc is None or sc == 1.0):
                continue
            x = _taps(x, d, _linear_taps(n_in, n_out, align_corners, sc))
    if x is input:
        x = x.clone()
    return x


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """Deprecated alias of interpolate."""
    warnings.warn("nn.functional.upsample is deprecated. Use nn.functional.interpolate instead.",
                  UserWarning, stacklevel=2)
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    """Deprecated: interpolate(..., mode='nearest')."""
    warnings.warn("nn.functional.upsample_nearest is deprecated. Use nn.functional.interpolate instead.",
                  UserWarning, stacklevel=2)
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    """Deprecated: interpolate(..., mode='bilinear', align_corners=True)."""
    warnings.warn("nn.functional.upsample_bilinear is deprecated. Use nn.functional.interpolate instead.",
                  UserWarning, stacklevel=2)
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


# -- pixel shuffle -----------------------------------------------------------------------------------------
def pixel_shuffle(input, upscale_factor):
    """(*, C r^2, H, W) -> (*, C, H r, W r): depth to space."""
    r = int(upscale_factor)
    if input.ndim < 3:
        raise RuntimeError(f"pixel_shuffle expects input to have at least 3 dimensions, but got input with "
                           f"{input.ndim} dimension(s)")
    if r <= 0:
        raise RuntimeError(f"pixel_shuffle expects a positive upscale_factor, but got {r}")
    *batch, c, h, w = input.shape
    if c % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be divisible by the square "
                           f"of upscale_factor, but input.size(-3)={c} is not divisible by {r * r}")
    oc = c // (r * r)
    nb = len(batch)
    x = input.reshape(*batch, oc, r, r, h, w)
    perm = list(range(nb)) + [nb, nb + 3, nb + 1, nb + 4, nb + 2]
    return x.permute(*perm).reshape(*batch, oc, h * r, w * r)


def pixel_unshuffle(input, downscale_factor):
    """(*, C, H r, W r) -> (*, C r^2, H, W): space to depth."""
    r = int(downscale_factor)
    if input.ndim < 3:
        raise RuntimeError(f"pixel_unshuffle expects input to have at least 3 dimensions, but got input with "
                           f"{input.ndim} dimension(s)")
    if r <= 0:
        raise RuntimeError(f"pixel_unshuffle expects a positive downscale_factor, but got {r}")
    *batch, c, h, w = input.shape
    if h % r:
        raise RuntimeError(f"pixel_unshuffle expects height to be divisible by downscale_factor, but "
                           f"input.size(-2)={h} is not divisible by {r}")
    if w % r:
        raise RuntimeError(f"pixel_unshuffle expects width to be divisible by downscale_factor, but "
                           f"input.size(-1)={w} is not divisible by {r}")
    nb = len(batch)
    x = input.reshape(*batch, c, h // r, r, w // r, r)
    perm = list(range(nb)) + [nb, nb + 2, nb + 4, nb + 1, nb + 3]
    return x.permute(*perm).reshape(*batch, c * r * r, h // r, w // r)


def channel_shuffle(input, groups):
    """(N, C, *) with the channels regrouped: C = groups x k read as k x groups (ShuffleNet)."""
    g = int(groups)
    if input.ndim < 3:
        raise RuntimeError(f"channel_shuffle expects input to have at least 3 dimensions, but got input with "
                           f"{input.ndim} dimension(s)")
    if g <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of groups:{g}")
    n, c, *rest = input.shape
    if c % g:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels and {g} groups.")
    return input.reshape(n, g, c // g, *rest).transpose(1, 2).reshape(n, c, *rest)


# -- affine_grid / grid_sample -----------------------------------------------------------------------------
def _linspace_from_neg_one(n, align_corners):
    if n <= 1:
        return np.zeros(n)
    r = np.linspace(-1.0, 1.0, n)
    if not align_corners:
        r = r * (n - 1) / n
    return r


def affine_grid(theta, size, align_corners=None):
    """The sampling grid (N, H, W, 2) (or (N, D, H, W, 3)) of the affine maps theta (N, 2, 3)
    (or (N, 3, 4)) for an output of `size` (N, C, H, W) (or (N, C, D, H, W)); coordinates in
    [-1, 1], x first. Differentiable w.r.t. theta."""
    if align_corners is None:
        align_corners = False
    if not isinstance(theta, Tensor):
        raise TypeError(f"affine_grid(): argument 'theta' must be Tensor, not {type(theta).__name__}")
    if not theta.dtype.is_floating_point:
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    size = [int(s) for s in size]
    if len(size) == 4:
        if theta.ndim != 3 or tuple(theta.shape[-2:]) != (2, 3):
            raise ValueError(f"Expected a batch of 2D affine matrices of shape Nx2x3 for size {_size_str(size)}. "
                             f"Got {theta.shape}.")
        spatial = size[-2:]
    elif len(size) == 5:
        if theta.ndim != 3 or tuple(theta.shape[-2:]) != (3, 4):
            raise ValueError(f"Expected a batch of 3D affine matrices of shape Nx3x4 for size {_size_str(size)}. "
                             f"Got {theta.shape}.")
        spatial = size[-3:]
    else:
        raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
                                  f"respectively. Got size {_size_str(size)}.")
    if min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {_size_str(size)}")
    if theta.shape[0] != size[0]:
        raise ValueError(f"Expected theta batch size {theta.shape[0]} to match size[0] = {size[0]}")
    k = len(spatial)
    axes = [_linspace_from_neg_one(n, align_corners) for n in reversed(spatial)]    # x, y[, z]
    mesh = np.meshgrid(*[axes[k - 1 - i] for i in range(k)], indexing="ij")          # (D,) H, W
    base = np.stack([mesh[k - 1 - i] for i in range(k)] + [np.ones(tuple(spatial))], axis=-1)
    from .creation import tensor
    b = tensor(base.reshape((1,) + tuple(spatial) + (1, k + 1)), dtype=theta.dtype, device=theta.device)
    th = theta.reshape((size[0],) + (1,) * k + (k, k + 1))
    return (b * th).sum(-1)


def _size_str(size):
    return f"[{', '.join(str(s) for s in size)}]"


def _unnormalize(coord, n, align_corners):
    if align_corners:
        return (coord + 1) / 2 * (n - 1)
    return ((coord + 1) * n - 1) / 2


def _reflect(coord, twice_low, twice_high):
    from .pointwise import where
    if twice_low == twice_high:
        return coord * 0
    lo = twice_low / 2
    span = (twice_high - twice_low) / 2
    c = (coord - lo).abs()
    extra = c.fmod(span)
    flips = (c / span).floor()
    even = flips.remainder(2) == 0
    return where(even, extra + lo, span - extra + lo)


def _source_coord(coord, n, padding_mode, align_corners):
    c = _unnormalize(coord, n, align_corners)
    if padding_mode == "border":
        c = c.clamp(0, n - 1)
    elif padding_mode == "reflection":
        if align_corners:
            c = _reflect(c, 0, 2 * (n - 1))
        else:
            c = _reflect(c, -1, 2 * n - 1)
        c = c.clamp(0, n - 1)
    return c


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """Sample input (N, C, H, W) at the points of grid (N, Ho, Wo, 2) (x, y in [-1, 1]), or
    input (N, C, D, H, W) at grid (N, Do, Ho, Wo, 3). mode: 'bilinear' (trilinear for 5-D) or
    'nearest'; padding_mode: 'zeros', 'border' or 'reflection'. Differentiable w.r.t. input and
    grid (bilinear)."""
    if _amp.on:
        return _amp.run("grid_sample", grid_sample, (input, grid, mode, padding_mode, align_corners))
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', "
                         f"but got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
                         f"'reflection', but got: '{padding_mode}'")
    if align_corners is None:
        align_corners = False
    nd = input.ndim
    if nd not in (4, 5):
        raise RuntimeError(f"grid_sampler(): expected 4D or 5D input and grid with same number of dimensions, but "
                           f"got input with sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    if grid.ndim != nd:
        raise RuntimeError(f"grid_sampler(): expected grid to have same number of dimensions as input, but got "
                           f"input with sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    k = nd - 2
    if input.shape[0] != grid.shape[0]:
        raise RuntimeError(f"grid_sampler(): expected grid and input to have same batch size, but got input with "
                           f"sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    if grid.shape[-1] != k:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {k} in last dimension, but got grid with "
                           f"sizes {list(grid.shape)}")
    if mode == "bicubic" and nd != 4:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    if input.dtype != grid.dtype:
        raise RuntimeError(f"grid_sampler(): expected input and grid to have same dtype, but input has "
                           f"{input.dtype} and grid has {grid.dtype}")
    n, c = input.shape[0], input.shape[1]
    sizes = list(input.shape[2:])                 # (D,) H, W
    out_sp = list(grid.shape[1:-1])
    p = 1
    for s in out_sp:
        p *= s
    flat = input.reshape(n, c, -1)
    g = grid.reshape(n, p, k)
    # coordinate along each input spatial dim: grid[..., 0] is x (the last dim)
    coords = [g[:, :, k - 1 - a] for a in range(k)]        # per spatial dim a (0 = first spatial dim)
    strides = [1] * k
    for a in range(k - 2, -1, -1):
        strides[a] = strides[a + 1] * sizes[a + 1]
    if mode == "bicubic":
        out = _grid_bicubic(flat, coords, sizes, strides, padding_mode, align_corners)
    else:
        src = [_source_coord(coords[a], sizes[a], padding_mode, align_corners) for a in range(k)]
        if mode == "nearest":
            idx = [s.detach().round() for s in src]
            # the weight 1 keeps the grid in the graph: its gradient is zero (as in PyTorch)
            one = src[0].round() * 0.0 + 1.0 if grid.requires_grad else None
            out = _gather_corner(flat, idx, sizes, strides, one)
        else:
            lo = [s.detach().floor() for s in src]
            frac = [s - f for s, f in zip(src, lo)]          # differentiable in the grid
            out = None
            for corner in itertools.product((0, 1), repeat=k):
                idx = [lo[a] + corner[a] for a in range(k)]
                w = None
                for a in range(k):
                    wa = frac[a] if corner[a] else 1 - frac[a]
                    w = wa if w is None else w * wa
                v = _gather_corner(flat, idx, sizes, strides, w)
                out = v if out is None else out + v
    return out.reshape(n, c, *out_sp)


def _gather_corner(flat, idx, sizes, strides, w):
    """flat (N, C, L) read at the integer-valued float coordinates idx (per dim (N, P)), zero where
    out of bounds, times the weight w (N, P) when given -> (N, C, P)."""
    from .pointwise import where
    n, c = flat.shape[0], flat.shape[1]
    valid = None
    lin = None
    for a, ia in enumerate(idx):
        ok = (ia >= 0) & (ia <= sizes[a] - 1)
        valid = ok if valid is None else valid & ok
        part = ia.clamp(0, sizes[a] - 1).to(_dt.int64) * strides[a]
        lin = part if lin is None else lin + part
    pnum = lin.shape[1]
    v = flat.gather(2, lin.unsqueeze(1).expand(n, c, pnum))
    m = valid.to(flat.dtype)
    ww = m if w is None else where(valid, w, 0.0)
    return v * ww.unsqueeze(1)


def _grid_bicubic(flat, coords, sizes, strides, padding_mode, align_corners):
    """PyTorch's bicubic grid sampling: 4x4 taps around the unnormalized point, each tap's coordinate
    put through the padding mode, weights the cubic convolution coefficients (A = -0.75)."""
    from .pointwise import where
    src = [_unnormalize(coords[a], sizes[a], align_corners) for a in range(2)]
    base = [s.detach().floor() for s in src]
    t = [s - b for s, b in zip(src, base)]
    a_ = -0.75

    def c1(x):
        return ((a_ + 2) * x - (a_ + 3)) * x * x + 1

    def c2(x):
        return ((a_ * x - 5 * a_) * x + 8 * a_) * x - 4 * a_
    coeffs = [[c2(ti + 1.0), c1(ti), c1(1.0 - ti), c2(2.0 - ti)] for ti in t]
    out = None
    for i in range(4):          # along dim 0 (y)
        for j in range(4):      # along dim 1 (x)
            iy = base[0] + (i - 1)
            ix = base[1] + (j - 1)
            if padding_mode != "zeros":
                iy = _tap_coord(iy, sizes[0], padding_mode, align_corners)
                ix = _tap_coord(ix, sizes[1], padding_mode, align_corners)
            w = coeffs[0][i] * coeffs[1][j]
            v = _gather_corner(flat, [iy, ix], sizes, strides, w)
            out = v if out is None else out + v
    return out


def _tap_coord(c, n, padding_mode, align_corners):
    if padding_mode == "border":
        return c.clamp(0, n - 1)
    if align_corners:
        c = _reflect(c, 0, 2 * (n - 1))
    else:
        c = _reflect(c, -1, 2 * n - 1)
    return c.clamp(0, n - 1)


FUNCTIONAL = ["interpolate", "upsample", "upsample_nearest", "upsample_bilinear", "grid_sample", "affine_grid",
              "pixel_shuffle", "pixel_unshuffle", "channel_shuffle"]
