"""Records of the FFT kernels (dispatch/optional_fft.py): fft_c2c, fft_r2c, fft_c2r. The references
are explicit DFT sums in complex128 (a matrix of exp(-+2 pi i j k / n) per axis), independent of any
FFT library; samples cover every norm, both directions, several axes (in any order), odd and even
lengths, length 1 and non-contiguous layouts."""
from __future__ import annotations

import math

import numpy as np

from ._base import COMPLEX, A, ErrorCase, OpRecord, Sample, register, values

_COMPLEX_OF = {"float32": "complex64", "float64": "complex128"}
_REAL_OF = {"complex64": "float32", "complex128": "float64"}
# a DFT sums n terms: single precision loses a few more digits than one elementwise op
FFT_TOL = {"complex64": (1e-4, 1e-4), "float32": (1e-4, 1e-4), "complex128": (1e-10, 1e-10),
           "float64": (1e-10, 1e-10)}


def _torch():
    import tensorplug
    return tensorplug


def _scale(norm, forward, n):
    if norm == "ortho":
        return 1.0 / math.sqrt(n)
    return 1.0 / n if (norm == "forward") == forward else 1.0


def _dft(x, axis, forward, out_len=None):
    """The DFT of complex128 x along axis (the first out_len frequencies)."""
    n = x.shape[axis]
    out_len = n if out_len is None else out_len
    j, k = np.arange(n).reshape(-1, 1), np.arange(out_len).reshape(1, -1)
    w = np.exp((-2j if forward else 2j) * np.pi * (j * k % n) / n)
    return np.moveaxis(np.tensordot(np.moveaxis(x, axis, -1), w, axes=(-1, 0)), -1, axis)


def _c2c_ref(x, axes, norm, forward):
    x = np.asarray(x, dtype=np.complex128)
    n = 1
    for a in axes:
        n *= x.shape[a]
        x = _dft(x, a, forward)
    return x * _scale(norm, forward, n)


def _r2c_ref(x, axes, norm, forward):
    x = np.asarray(x, dtype=np.complex128)
    n = x.shape[axes[-1]]
    x = _dft(x, axes[-1], forward, n // 2 + 1)
    for a in axes[:-1]:
        n *= x.shape[a]
        x = _dft(x, a, forward)
    return x * _scale(norm, forward, n)


def _c2r_ref(x, axes, n_last, norm, forward):
    """The transform of the Hermitian sequence of n_last entries whose first half is x's (entries that
    must be real, index 0 and n_last / 2, keep only their real parts)."""
    x = np.asarray(x, dtype=np.complex128)
    n = n_last
    for a in axes[:-1]:
        n *= x.shape[a]
        x = _dft(x, a, forward)
    last = axes[-1]
    x = np.moveaxis(x, last, -1).copy()
    x[..., 0] = x[..., 0].real
    if n_last % 2 == 0:
        x[..., n_last // 2] = x[..., n_last // 2].real
    tail = np.conj(x[..., 1:(n_last + 1) // 2][..., ::-1])          # entries n-1 .. n//2+1
    full = np.concatenate([x, tail], axis=-1)
    y = np.moveaxis(_dft(full, full.ndim - 1, forward), -1, last)
    return y.real * _scale(norm, forward, n)


_NORMS = ("backward", "ortho", "forward")


def _layout_samples(dt, rng, make_args, need=()):
    """The transform samples: (array, axes) for each layout and axes choice, every norm / direction."""
    v = lambda *s: values(rng, dt, s, -2, 2)  # noqa: E731
    specs = [(A(v(8)), (0,)), (A(v(7)), (0,)), (A(v(1)), (0,)), (A(v(3, 5)), (1,)), (A(v(3, 5)), (0,)),
             (A(v(2, 3, 4)), (0, 2)), (A(v(2, 3, 4)), (2, 0)), (A(v(3, 4), "T"), (0, 1)),
             (A(v(2, 6), "S"), (1,)), (A(v(6, 2), "R"), (0,)), (A(np.repeat(v(1, 5), 3, 0), "B"), (0, 1)),
             (A(v(0, 4)), (1,))]
    out = []
    for i, (a, axes) in enumerate(specs):
        norm = _NORMS[i % 3]
        for forward in (True, False):
            out.append(Sample(make_args(a, axes, norm, forward), needs=need))
    return out


def _c2c_samples(dt, rng):
    return _layout_samples(dt, rng, lambda a, axes, norm, fwd: (a, axes, norm, fwd))


register(OpRecord("fft_c2c", "optional", COMPLEX, _c2c_samples, ref=_c2c_ref, tol=FFT_TOL,
                  errors=[ErrorCase("fft with norm='bad'", lambda T: _torch().fft.fft(T([1.0, 2.0]), norm="bad")),
                          ErrorCase("fft of 0 points", lambda T: _torch().fft.fft(T([1.0, 2.0]), n=0)),
                          ErrorCase("fftn over a repeated dim",
                                    lambda T: _torch().fft.fftn(T([[1.0, 2.0]]), dim=(0, 0)))],
                  doc="complex DFT over axes; norm is the scaling of a transform in that direction"))


def _r2c_samples(dt, rng):
    return _layout_samples(dt, rng, lambda a, axes, norm, fwd: (a, axes, norm, fwd), (_COMPLEX_OF[dt],))


def _r2c_dtype(dt, sample):
    return _COMPLEX_OF[dt]


register(OpRecord("fft_r2c", "optional", ("float32", "float64"), _r2c_samples, ref=_r2c_ref, out_dtype=_r2c_dtype,
                  tol=FFT_TOL,
                  errors=[ErrorCase("rfft of a complex tensor",
                                    lambda T: _torch().fft.rfft(T([1.0, 2.0]).to(_torch().complex64)))],
                  doc="one-sided along the last of axes: n // 2 + 1 entries"))


def _c2r_samples(dt, rng):
    v = lambda *s: values(rng, dt, s, -2, 2)  # noqa: E731
    out = []
    specs = [((5,), (0,), 8), ((4,), (0,), 7), ((1,), (0,), 1), ((2,), (0,), 2), ((3, 4), (1,), 6),
             ((4, 3), (0,), 7), ((2, 3, 4), (0, 2), 6), ((3, 4), (1, 0), 5)]
    for i, (shape, axes, n_last) in enumerate(specs):
        norm = _NORMS[i % 3]
        layout = ("C", "T", "S", "R")[i % 4]
        for forward in (False, True):
            out.append(Sample((A(v(*shape), layout), axes, n_last, norm, forward)))
    return out


def _c2r_dtype(dt, sample):
    return _REAL_OF[dt]


register(OpRecord("fft_c2r", "optional", COMPLEX, _c2r_samples, ref=_c2r_ref, out_dtype=_c2r_dtype, tol=FFT_TOL,
                  errors=[ErrorCase("irfft to 0 points", lambda T: _torch().fft.irfft(T([1.0, 2.0]), n=0))],
                  doc="the imaginary parts of entries that must be real are ignored"))
