"""Optional kernels of complex dtypes (complex64, complex128): parts, conjugate, and the
real <-> complex reinterpretations. Only a backend that declares complex dtypes is asked for them.

The kernels handle complex arrays like real ones where the math carries over (required: add, mul,
div, pow, exp, log, sin, cos, sum, matmul, eq, where, movement and indexing; optional: sqrt, tanh,
prod, cumsum, ...), and `abs` of a complex array returns its magnitudes in the matching float dtype.

Decompositions: `real` is `astype` to the float dtype (exact: the cast drops the imaginary part);
the others go through the host (`to_numpy`, NumPy, `from_numpy`): exact, but copies, so a backend
without the native kernels gives `real`/`imag`/`view_as_real`/`view_as_complex` results that do
not alias their input (the conformance suite checks aliasing of native kernels only).
"""
from __future__ import annotations

import numpy as np

OPTIONAL: dict[str, str] = {
    "real": "real(x) -> the real parts of complex x in the matching float dtype (complex64 -> float32); "
            "a view of x where the backend can alias",
    "imag": "imag(x) -> the imaginary parts of complex x in the matching float dtype; a view where possible",
    "conj": "conj(x) -> new array of the complex conjugates of complex x",
    "view_as_real": "view_as_real(x) -> float array of shape x.shape + (2,) holding (real, imag) pairs of "
                    "complex x; a view of x where the backend can alias",
    "view_as_complex": "view_as_complex(x) -> complex array of shape x.shape[:-1] from the (real, imag) pairs "
                       "along x's last axis (float32/float64, size 2, element stride 1, other element strides "
                       "even: the frontend checks); a view of x where the backend can alias",
    "complex": "complex(re, im) -> new complex array re + 1j * im; re and im have one float dtype and one shape",
}

REAL_OF = {"complex64": "float32", "complex128": "float64"}
COMPLEX_OF = {"float32": "complex64", "float64": "complex128"}


def _dt(x):
    return x.dtype.name if hasattr(x.dtype, "name") else str(x.dtype)


def _host(K, x):
    return np.asarray(K["to_numpy"](x))


def real(K, x):
    return K["astype"](x, REAL_OF[_dt(x)])


def imag(K, x):
    return K["from_numpy"](np.array(_host(K, x).imag, copy=True))       # (ascontiguousarray makes 0-d 1-d)


def conj(K, x):
    return K["from_numpy"](np.asarray(np.conj(_host(K, x))))


def view_as_real(K, x):
    h = _host(K, x)
    return K["from_numpy"](np.stack([h.real, h.imag], axis=-1))


def view_as_complex(K, x):
    h = _host(K, x)
    out = np.empty(h.shape[:-1], dtype=COMPLEX_OF[h.dtype.name])
    out.real, out.imag = h[..., 0], h[..., 1]
    return K["from_numpy"](out)


def complex(K, re, im):
    r, i = _host(K, re), _host(K, im)
    out = np.empty(r.shape, dtype=COMPLEX_OF[r.dtype.name])
    out.real, out.imag = r, i
    return K["from_numpy"](out)
