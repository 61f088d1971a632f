"""Optional kernels of the FFT family (what tensorplug.fft runs), and their decompositions.

Conventions shared by the three kernels:
- `axes` is a non-empty tuple of distinct non-negative ints; the frontend has already cut or
  zero-padded the input to the transform's lengths (for `fft_c2r` the last axis holds
  n_last // 2 + 1 entries), and no length is 0;
- `forward` picks the sign of the exponent: True sums x_j exp(-2 pi i j k / n), False exp(+2 pi i j k / n);
- `norm` is PyTorch's / NumPy's name for the scaling of a transform in that direction: for a
  forward transform "backward" = 1, "ortho" = 1/sqrt(N), "forward" = 1/N; for an inverse one
  "backward" = 1/N, "ortho" = 1/sqrt(N), "forward" = 1 (N = product of the lengths over `axes`);
- complex results have the complex dtype of the input's precision (float32/complex64 -> complex64,
  float64/complex128 -> complex128), real results the matching float dtype.

`fft_r2c` / `fft_c2r` are the one-sided (Hermitian) transforms along the last of `axes`
(full transforms along the others): rfftn / ihfftn and irfftn / hfftn. The frontend owns every
gradient (each kernel's vjp is another of these kernels).

The decompositions are DFTs by matmul with a complex exponential matrix (built on the host, moved
with `from_numpy`), one axis at a time: O(n^2) per axis, exact to rounding.
"""
from __future__ import annotations

import math

import numpy as np

OPTIONAL: dict[str, str] = {
    "fft_c2c": "fft_c2c(x, axes, norm, forward) -> complex array: the complex DFT of complex x over axes",
    "fft_r2c": "fft_r2c(x, axes, norm, forward) -> complex array: the DFT of real x over axes, keeping "
               "n // 2 + 1 entries along the last axis (rfftn when forward, ihfftn = its conjugate "
               "direction when not)",
    "fft_c2r": "fft_c2r(x, axes, n_last, norm, forward) -> real array: the DFT over axes of the Hermitian "
               "sequence whose first n_last // 2 + 1 entries along the last axis are x's (irfftn when not "
               "forward, hfftn when forward); the last axis of the result has n_last entries; the imaginary "
               "parts of the entries that must be real (index 0, and n_last / 2 when even) are ignored",
}

_COMPLEX = {"float16": "complex64", "float32": "complex64", "float64": "complex128",
            "complex64": "complex64", "complex128": "complex128"}
_REAL = {"complex64": "float32", "complex128": "float64"}


def _dt(x):
    return x.dtype.name if hasattr(x.dtype, "name") else str(x.dtype)


def _scale(norm, forward, n):
    if norm == "ortho":
        return 1.0 / math.sqrt(n)
    return 1.0 / n if (norm == "forward") == forward else 1.0


def _moved_last(K, x, axis, fn):
    """fn applied to x with `axis` moved last, moved back."""
    nd = len(x.shape)
    if axis == nd - 1:
        return fn(x)
    perm = tuple(i for i in range(nd) if i != axis) + (axis,)
    inv = tuple(perm.index(i) for i in range(nd))
    return K["permute"](fn(K["permute"](x, perm)), inv)


def _matrix(K, rows, cols, n, forward, dtype, weights=None):
    """(rows, cols) matrix exp(-+2 pi i j k / n) (times weights[j]) as a backend array of dtype."""
    j = np.arange(rows).reshape(-1, 1)
    k = np.arange(cols).reshape(1, -1)
    m = np.exp((-2j if forward else 2j) * np.pi * ((j * k) % n) / n)
    if weights is not None:
        m = m * weights.reshape(-1, 1)
    return K["from_numpy"](np.ascontiguousarray(m.astype(dtype)))


def _dft_axis(K, x, axis, forward, out_len=None):
    n = x.shape[axis]
    out_len = n if out_len is None else out_len
    w = _matrix(K, n, out_len, n, forward, _dt(x))
    return _moved_last(K, x, axis, lambda v: K["matmul"](v, w))


def _scaled(K, x, norm, forward, n):
    s = _scale(norm, forward, n)
    return x if s == 1.0 else K["mul"](x, s)


def fft_c2c(K, x, axes, norm, forward):
    n = 1
    for a in axes:
        n *= x.shape[a]
        x = _dft_axis(K, x, a, forward)
    return _scaled(K, x, norm, forward, n)


def fft_r2c(K, x, axes, norm, forward):
    cdt = _COMPLEX[_dt(x)]
    x = K["astype"](x, cdt)
    last = axes[-1]
    n = x.shape[last]
    x = _dft_axis(K, x, last, forward, n // 2 + 1)
    for a in axes[:-1]:
        n *= x.shape[a]
        x = _dft_axis(K, x, a, forward)
    return _scaled(K, x, norm, forward, n)


def fft_c2r(K, x, axes, n_last, norm, forward):
    n = n_last
    for a in axes[:-1]:
        n *= x.shape[a]
        x = _dft_axis(K, x, a, forward)
    last = axes[-1]
    m = x.shape[last]
    # the Hermitian extension folded into the matrix: entries 1 .. (n-1)//2 count twice
    weights = np.ones(m)
    weights[1:(n_last + 1) // 2] = 2.0
    w = _matrix(K, m, n_last, n_last, forward, _dt(x), weights)
    y = _moved_last(K, x, last, lambda v: K["matmul"](v, w))
    y = K["astype"](y, _REAL[_dt(y)])          # the real part (the cast drops the imaginary one)
    return _scaled(K, y, norm, forward, n)
