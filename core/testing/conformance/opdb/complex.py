"""Records of the complex-dtype kernels (dispatch/optional_complex.py): real, imag, conj, view_as_real,
view_as_complex, complex. References take the parts with NumPy on complex128 / float64 values; the
view kernels are checked for aliasing where the backend has them natively."""
from __future__ import annotations

import numpy as np

from ._base import (COMPLEX, REAL_OF, A, ErrorCase, OpRecord, Sample, _make_complex, edges, register,
                    unary_samples, values)

_COMPLEX_OF = {"float32": "complex64", "float64": "complex128"}


def _torch():
    import tensorplug
    return tensorplug


def _real_out(dt, sample):
    return REAL_OF[dt]


register(OpRecord("real", "optional", COMPLEX, unary_samples, ref=lambda x: np.real(x), out_dtype=_real_out,
                  view="write", doc="the real parts, a view where the backend can alias"))
register(OpRecord("imag", "optional", COMPLEX, unary_samples, ref=lambda x: np.imag(x), out_dtype=_real_out,
                  view="write", errors=[ErrorCase("imag of a real tensor", lambda T: T([1.0, 2.0]).imag)]))
register(OpRecord("conj", "optional", COMPLEX, unary_samples, ref=np.conj, view="copy"))


def _pairs_view(x):
    """(..., 2) real view of complex x (a NumPy view, so the aliasing check can write through it)."""
    return x[..., None].view(x.real.dtype)


register(OpRecord("view_as_real", "optional", COMPLEX, unary_samples, ref=_pairs_view, out_dtype=_real_out,
                  view="write", errors=[ErrorCase("view_as_real of a real tensor",
                                                  lambda T: _torch().view_as_real(T([1.0, 2.0])))],
                  doc="(real, imag) pairs along a new last axis"))


def _as_complex_samples(dt, rng):
    v = lambda *s: values(rng, dt, s)  # noqa: E731
    need = (_COMPLEX_OF[dt],)
    e = edges(dt)
    e = e[: e.size // 2 * 2].reshape(-1, 2)
    return [Sample((A(v(3, 2)),), needs=need), Sample((A(v(2)),), needs=need, desc="(2,): a 0-d result"),
            Sample((A(v(2, 3, 2)),), needs=need), Sample((A(v(0, 2)),), needs=need),
            Sample((A(v(4, 2), "R"),), needs=need, desc="rows reversed (a negative stride)"),
            Sample((A(np.repeat(v(1, 2), 3, 0), "B"),), needs=need, desc="rows broadcast (a zero stride)"),
            Sample((A(e),), needs=need, desc="edge values")]


def _as_complex_ref(x):
    x = np.asarray(x)
    return x.view(_COMPLEX_OF[x.dtype.name])[..., 0]


def _as_complex_dtype(dt, sample):
    return _COMPLEX_OF[dt]


register(OpRecord("view_as_complex", "optional", ("float32", "float64"), _as_complex_samples, ref=_as_complex_ref,
                  out_dtype=_as_complex_dtype, view="write",
                  errors=[ErrorCase("view_as_complex of a (3, 3) tensor",
                                    lambda T: _torch().view_as_complex(T([[1.0] * 3] * 3))),
                          ErrorCase("view_as_complex of a transposed (2, 3) tensor",
                                    lambda T: _torch().view_as_complex(T([[1.0] * 3] * 2).t())),
                          ErrorCase("view_as_complex of an int64 tensor",
                                    lambda T: _torch().view_as_complex(T([[1, 2]])))],
                  doc="pairs along the last axis (size 2, element stride 1) as complex numbers"))


def _complex_samples(dt, rng):
    v = lambda *s: values(rng, dt, s)  # noqa: E731
    need = (_COMPLEX_OF[dt],)
    e = edges(dt)
    return [Sample((A(v(3, 4)), A(v(3, 4))), needs=need), Sample((A(v()), A(v())), needs=need),
            Sample((A(v(0, 3)), A(v(0, 3))), needs=need), Sample((A(v(3, 4), "T"), A(v(3, 4), "S")), needs=need),
            Sample((A(np.repeat(v(1, 3), 2, 0), "B"), A(v(2, 3), "R")), needs=need),
            Sample((A(e), A(e[::-1].copy())), needs=need, desc="edge values (inf and nan parts kept apart)")]


def _complex_ref(re, im):
    return _make_complex(np.asarray(re), np.asarray(im), "complex128")


register(OpRecord("complex", "optional", ("float32", "float64"), _complex_samples, ref=_complex_ref,
                  out_dtype=_as_complex_dtype,
                  errors=[ErrorCase("complex of int64 parts", lambda T: _torch().complex(T([1]), T([2]))),
                          ErrorCase("complex of float32 and float64 parts",
                                    lambda T: _torch().complex(T([1.0]), T([2.0], dtype=_torch().float64)))],
                  doc="re + 1j * im, exact for infinite and NaN parts"))
