"""NumPy kernels of complex dtypes (core/dispatch/optional_complex.py): the parts and the
real <-> complex reinterpretations are views, as PyTorch's."""
from __future__ import annotations

import numpy as np

_COMPLEX_OF = {"float32": np.complex64, "float64": np.complex128}


def view_as_real(x):
    # a trailing axis of size 1 makes the itemsize change legal for any strides
    return x[..., None].view(x.real.dtype)


def view_as_complex(x):
    return x.view(_COMPLEX_OF[x.dtype.name])[..., 0]


def complex_(re, im):
    out = np.empty(re.shape, dtype=_COMPLEX_OF[re.dtype.name])
    out.real, out.imag = re, im
    return out


def build() -> dict:
    return {
        "real": lambda x: x.real,
        "imag": lambda x: x.imag,
        "conj": lambda x: np.asarray(np.conjugate(x)),
        "view_as_real": view_as_real,
        "view_as_complex": view_as_complex,
        "complex": complex_,
    }
