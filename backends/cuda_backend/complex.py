"""CuPy kernels of complex dtypes (core/dispatch/optional_complex.py). `real` / `imag` are CuPy's
views; view_as_real is a strided view over the real parts; view_as_complex reinterprets the pairs
(CuPy's `view` to a wider dtype needs a C-contiguous array: otherwise the complex array is made
over the same memory with the input's strides)."""
from __future__ import annotations

import numpy as np

_COMPLEX_OF = {"float32": np.complex64, "float64": np.complex128}


def build(xp) -> dict:
    def view_as_real(x):
        re = x.real
        return xp.lib.stride_tricks.as_strided(re, shape=x.shape + (2,), strides=x.strides + (re.itemsize,))

    def view_as_complex(x):
        cdt = _COMPLEX_OF[x.dtype.name]
        try:
            return x.view(cdt)[..., 0]
        except ValueError:          # not C-contiguous (the frontend checked the last axis and the strides)
            return xp.ndarray(x.shape[:-1], dtype=cdt, memptr=x.data, strides=x.strides[:-1])

    def complex_(re, im):
        out = xp.empty(re.shape, dtype=_COMPLEX_OF[re.dtype.name])
        xp.copyto(out.real, re)
        xp.copyto(out.imag, im)
        return out

    return {
        "real": lambda x: x.real,
        "imag": lambda x: x.imag,
        "conj": lambda x: xp.conj(x),
        "view_as_real": view_as_real,
        "view_as_complex": view_as_complex,
        "complex": complex_,
    }
