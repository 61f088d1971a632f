"""Records of the optional kernels of backend_api.OPTIONAL (pointwise math, clip, softmax). Each is
checked on the backend's table (native or decomposed) and, when the backend has it natively, also
through its decomposition into the backend's required primitives."""
from __future__ import annotations

import numpy as np

from ._base import (COMPLEX, FLOAT, LOOSE, NUMERIC, A, OpRecord, Sample, edges, register, scalar, unary_samples,
                    values)


def _small(dt, rng):
    """Magnitudes where log1p / expm1 / sinh differ from their naive formulas."""
    tiny = {"float16": [1e-3, -2e-3, 4e-4], "bfloat16": [1e-3, -2e-3, 4e-4, 1e-6],
            "float32": [1e-5, -3e-6, 1e-7, -1e-9],
            "float64": [1e-8, -3e-10, 1e-15, -1e-17]}[dt]
    return Sample((A(np.array(tiny + [0.0, -0.0], dtype=dt)),), desc="small magnitudes")


def _unary(name, ref, lo=None, hi=None, small=False, out_dtype=None, tol=None, dtypes=FLOAT):
    def samples(dt, rng):
        out = unary_samples(dt, rng, lo, hi)
        return out + [_small(dt, rng)] if small and dt not in COMPLEX else out
    register(OpRecord(name, "optional", dtypes, samples, ref=ref, out_dtype=out_dtype, tol=tol))


def _sigmoid(x):
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + np.exp(-x))


_unary("sigmoid", _sigmoid)
_unary("log1p", np.log1p, lo=-0.9, hi=5, small=True)
_unary("expm1", np.expm1, small=True)
_unary("sinh", np.sinh, tol={"bfloat16": LOOSE["bfloat16"]})    # the decomposition's exp(x) - exp(-x) cancels
_unary("cosh", np.cosh)
_unary("asin", np.arcsin, lo=-1, hi=1)
_unary("acos", np.arccos, lo=-1, hi=1)
_unary("atan", np.arctan)
# (complex: inf / finite in either part; the other kernels' decompositions are for real values)
_unary("isinf", np.isinf, out_dtype="bool", dtypes=FLOAT + COMPLEX)
_unary("isfinite", np.isfinite, out_dtype="bool", dtypes=FLOAT + COMPLEX)


# -- clip ------------------------------------------------------------------------------------------
def _clip_samples(dt, rng):
    v = lambda *s: values(rng, dt, s)  # noqa: E731
    s = lambda x: scalar(dt, x)  # noqa: E731
    lo, hi = (s(3), s(12)) if dt == "uint8" else (s(-2), s(3))
    e = edges(dt)
    return [
        Sample((A(v(3, 4)), lo, hi)), Sample((A(v(3, 4), "T"), None, hi)), Sample((A(v(2, 5), "S"), lo, None)),
        Sample((A(v(5)), None, None), desc="no bounds: a copy"), Sample((A(v()), lo, hi)),
        Sample((A(v(0, 2)), lo, hi)), Sample((A(v(6), "R"), hi, lo), desc="lo > hi: every value is hi"),
        Sample((A(e), lo, hi), desc="edge values (NaN stays NaN)"),
    ]


def _clip_ref(x, lo, hi):
    r = np.array(x, copy=True)
    if lo is not None:
        r = np.maximum(r, lo)            # NaN propagates
    if hi is not None:
        r = np.minimum(r, hi)
    return r


register(OpRecord("clip", "optional", NUMERIC, _clip_samples, ref=_clip_ref,
                  doc="clip(x, lo, hi) = min(max(x, lo), hi) with None skipping a bound; NaN stays NaN"))


# -- softmax ---------------------------------------------------------------------------------------
SOFTMAX_TOL = {"float16": (5e-3, 1e-3), "bfloat16": (2e-2, 4e-3), "float32": (1e-5, 1e-6), "float64": (1e-10, 1e-12)}


def _softmax_samples(dt, rng):
    v = lambda *s: values(rng, dt, s)  # noqa: E731
    big = 100.0 if dt == "float16" else 1000.0
    inf = float("inf")
    return [
        Sample((A(v(3, 4)), 1)), Sample((A(v(3, 4), "T"), 0)), Sample((A(v(2, 3, 4), "S"), 1)),
        Sample((A(v(7)), 0)), Sample((A(v(2, 5), "R"), 1)), Sample((A(v(0, 3)), 1)),
        Sample((A(np.array([[big, big + 1, big - 1], [-big, -big - 2, -big + 3]], dtype=dt)), 1),
               desc=f"large magnitudes (+-{big}): shifted by the maximum"),
        Sample((A(np.array([[0.0, -inf, 1.0], [-inf, -inf, 2.0]], dtype=dt)), 1), desc="-inf entries"),
    ]


def _softmax_ref(log):
    def ref(x, axis):
        m = np.max(x, axis=axis, keepdims=True) if x.shape[axis] else 0.0
        with np.errstate(invalid="ignore", divide="ignore"):
            z = x - m
            s = np.sum(np.exp(z), axis=axis, keepdims=True)
            return z - np.log(s) if log else np.exp(z) / s
    return ref


register(OpRecord("softmax", "optional", FLOAT, _softmax_samples, ref=_softmax_ref(False), tol=SOFTMAX_TOL))
register(OpRecord("log_softmax", "optional", FLOAT, _softmax_samples, ref=_softmax_ref(True), tol=SOFTMAX_TOL))
