"""NumPy kernels of the FFT family (core/dispatch/optional_fft.py) on numpy.fft (pocketfft).

numpy.fft computes float32 / complex64 inputs in single precision; results are cast to the
SPI's dtype anyway (complex64 for single precision, complex128 for double)."""
from __future__ import annotations

import numpy as np

_COMPLEX = {"float32": np.complex64, "float64": np.complex128, "complex64": np.complex64,
            "complex128": np.complex128}
_SWAP = {"backward": "forward", "forward": "backward", "ortho": "ortho"}


def _as(r, dtype):
    return np.asarray(r).astype(dtype, copy=False)


def fft_c2c(x, axes, norm, forward):
    f = np.fft.fftn if forward else np.fft.ifftn
    return _as(f(x, axes=axes, norm=norm), x.dtype)


def fft_r2c(x, axes, norm, forward):
    cdt = _COMPLEX[x.dtype.name]
    if forward:
        return _as(np.fft.rfftn(x, axes=axes, norm=norm), cdt)
    # the inverse direction (ihfftn): the conjugate of a forward transform, scaled as an inverse
    return _as(np.conj(np.fft.rfftn(x, axes=axes, norm=_SWAP[norm])), cdt)


def fft_c2r(x, axes, n_last, norm, forward):
    rdt = x.real.dtype
    s = tuple(x.shape[a] for a in axes[:-1]) + (n_last,)
    if forward:         # hfftn: an inverse transform of the conjugate, scaled as a forward one
        return _as(np.fft.irfftn(np.conj(x), s=s, axes=axes, norm=_SWAP[norm]), rdt)
    return _as(np.fft.irfftn(x, s=s, axes=axes, norm=norm), rdt)


def build() -> dict:
    return {"fft_c2c": fft_c2c, "fft_r2c": fft_r2c, "fft_c2r": fft_c2r}
