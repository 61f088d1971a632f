"""CuPy kernels of the FFT family (core/dispatch/optional_fft.py) on cupy.fft (cuFFT plans).

cupy.fft keeps single precision (complex64 for float32 / complex64 inputs) and takes NumPy's
`norm` names; results are cast to the SPI's dtype in case a CuPy version widens them."""
from __future__ import annotations

import numpy as np

_COMPLEX = {"float32": np.complex64, "float64": np.complex128, "complex64": np.complex64,
            "complex128": np.complex128}
_REAL = {"complex64": np.float32, "complex128": np.float64}
_SWAP = {"backward": "forward", "forward": "backward", "ortho": "ortho"}


def build(xp) -> dict:
    fft = xp.fft

    def cast(r, dtype):
        return r if r.dtype == dtype else r.astype(dtype)

    def fft_c2c(x, axes, norm, forward):
        f = fft.fftn if forward else fft.ifftn
        return cast(f(x, axes=axes, norm=norm), x.dtype)

    def fft_r2c(x, axes, norm, forward):
        cdt = _COMPLEX[x.dtype.name]
        if forward:
            return cast(fft.rfftn(x, axes=axes, norm=norm), cdt)
        # ihfftn: the conjugate of a forward transform, scaled as an inverse one
        return cast(xp.conj(fft.rfftn(x, axes=axes, norm=_SWAP[norm])), cdt)

    def fft_c2r(x, axes, n_last, norm, forward):
        rdt = _REAL[x.dtype.name]
        s = tuple(x.shape[a] for a in axes[:-1]) + (n_last,)
        if forward:         # hfftn: an inverse transform of the conjugate, scaled as a forward one
            return cast(fft.irfftn(xp.conj(x), s=s, axes=axes, norm=_SWAP[norm]), rdt)
        return cast(fft.irfftn(x, s=s, axes=axes, norm=norm), rdt)

    return {"fft_c2c": fft_c2c, "fft_r2c": fft_r2c, "fft_c2r": fft_c2r}
