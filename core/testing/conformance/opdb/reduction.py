"""Records of the reductions, scans and argsort."""
from __future__ import annotations

import numpy as np

from ._base import (ALL, COMPLEX, FLOAT, NUMERIC, A, ErrorCase, OpRecord, Sample, edges, reduction_samples,
                    register, values)


def _torch():
    import tensorplug
    return tensorplug


def _dim_error(fname, *extra):
    return ErrorCase(f"{fname} over dim 2 of a 2-d tensor (IndexError)",
                     lambda T: getattr(_torch(), fname)(T([[1., 2.], [3., 4.]]), 2, *extra), IndexError)


SUM_TOL = {"float16": (1e-2, 5e-2), "bfloat16": (2e-2, 5e-2), "float32": (1e-5, 1e-5), "float64": (1e-12, 1e-12)}


def _sum_samples(dt, rng, lo=None, hi=None):
    if dt == "bool":
        v = lambda *s: values(rng, dt, s)  # noqa: E731
        return [Sample((A(v(3, 4)), (1,), False), {"dtype": "int64"}),
                Sample((A(v(2, 3, 4), "T"), None, False), {"dtype": "int64"}),
                Sample((A(v(0, 2)), (0,), True), {"dtype": "int64"})]
    out = reduction_samples(dt, rng, lo, hi)
    wider = "complex128" if dt in COMPLEX else "float64" if dt in FLOAT else "int64"
    out.append(Sample((A(values(rng, dt, (3, 5), lo, hi), "T"), (0,), False), {"dtype": wider}))
    return out


def _dtype_kw(dtype, sample):
    return sample.kwargs.get("dtype", dtype)


def _sum_ref(fn):
    def ref(x, axes, keepdims, dtype=None):
        x = np.asarray(x)
        if x.dtype == np.bool_:
            x = x.astype(np.int64)
        return fn(x, axis=axes, keepdims=keepdims)
    return ref


register(OpRecord("sum", "reduction", ALL + COMPLEX, _sum_samples, ref=_sum_ref(np.sum), out_dtype=_dtype_kw,
                  tol=SUM_TOL, errors=[_dim_error("sum")],
                  doc="sums in `dtype` when given, else in x's dtype (integers wrap)"))
register(OpRecord("prod", "reduction", ALL + COMPLEX, lambda dt, rng: _sum_samples(dt, rng, -2, 2),
                  ref=_sum_ref(np.prod), out_dtype=_dtype_kw, tol=SUM_TOL, errors=[_dim_error("prod")]))


def _minmax_samples(dt, rng):
    out = reduction_samples(dt, rng, empty=False)
    out.append(Sample((A(values(rng, dt, (0, 3))), (1,), False), desc="empty input, non-empty axis"))
    return out


def _minmax_error(fname):
    return ErrorCase(f"{fname} over an empty dimension",
                     lambda T: getattr(_torch(), fname)(T([[1.0, 2.0]])[:0], 0), (RuntimeError, IndexError))


register(OpRecord("max", "reduction", ALL, _minmax_samples, ref=lambda x, axes, k: np.max(x, axis=axes, keepdims=k),
                  errors=[_minmax_error("amax")], doc="NaN propagates"))
register(OpRecord("min", "reduction", ALL, _minmax_samples, ref=lambda x, axes, k: np.min(x, axis=axes, keepdims=k),
                  errors=[_minmax_error("amin")], doc="NaN propagates"))
register(OpRecord("any", "reduction", ALL + COMPLEX, lambda dt, rng: reduction_samples(dt, rng),
                  ref=lambda x, axes, k: np.any(x, axis=axes, keepdims=k), out_dtype="bool"))
register(OpRecord("all", "reduction", ALL + COMPLEX, lambda dt, rng: reduction_samples(dt, rng),
                  ref=lambda x, axes, k: np.all(x, axis=axes, keepdims=k), out_dtype="bool"))


def _arg_samples(dt, rng):
    v = lambda *s: values(rng, dt, s, -3, 3)  # noqa: E731   (few distinct values: ties)
    e = edges(dt)
    return [
        Sample((A(v(9)), None, False)),
        Sample((A(v()), None, False)),
        Sample((A(v(3, 4)), 0, False)),
        Sample((A(v(3, 4), "T"), 1, True)),
        Sample((A(v(2, 3, 4), "S"), 2, False)),
        Sample((A(v(4, 5), "R"), None, False)),
        Sample((A(v(0, 3)), 1, False), desc="empty input, non-empty axis"),
        Sample((A(e.reshape(2, -1)), 1, False), desc="edge values (NaN counts as the extreme)"),
        Sample((A(e), None, False), desc="edge values, flat"),
    ]


def _argref(fn):
    def ref(x, axis, keepdims):
        return fn(np.asarray(x), axis=axis, keepdims=keepdims)
    return ref


register(OpRecord("argmax", "reduction", ALL, _arg_samples, ref=_argref(np.argmax), out_dtype="int64",
                  errors=[_dim_error("argmax")], doc="first maximum; NaN is the maximum"))
register(OpRecord("argmin", "reduction", ALL, _arg_samples, ref=_argref(np.argmin), out_dtype="int64",
                  errors=[_dim_error("argmin")], doc="first minimum; NaN is the minimum"))


def _scan_samples(dt, rng, lo=None, hi=None):
    v = lambda *s: values(rng, dt, s, lo, hi)  # noqa: E731
    e = edges(dt)
    return [
        Sample((A(v(9)), 0)),
        Sample((A(v(3, 4)), 0)),
        Sample((A(v(3, 4), "T"), 1)),
        Sample((A(v(2, 3, 4), "S"), 2)),
        Sample((A(v(2, 3, 4), "R"), 1)),
        Sample((A(v(0, 3)), 0)),
        Sample((A(v(2, 0)), 1)),
        Sample((A(e), 0), desc="edge values"),
    ]


register(OpRecord("cumsum", "reduction", NUMERIC + COMPLEX, _scan_samples,
                  ref=lambda x, axis: np.cumsum(x, axis=axis), tol=SUM_TOL, errors=[_dim_error("cumsum")]))
register(OpRecord("cumprod", "reduction", NUMERIC + COMPLEX, lambda dt, rng: _scan_samples(dt, rng, -2, 2),
                  ref=lambda x, axis: np.cumprod(x, axis=axis), tol=SUM_TOL, errors=[_dim_error("cumprod")]))


# -- argsort ---------------------------------------------------------------------------------------
def _argsort_ref(x, axis, descending, stable):
    """Stable sort order with NaN as the largest value (last ascending, first descending)."""
    x = np.asarray(x)
    if x.dtype == np.bool_:
        x = x.astype(np.int64)
    if not descending:
        return np.argsort(x, axis=axis, kind="stable")
    xm = np.moveaxis(x, axis, -1)
    flat = xm.reshape(-1, xm.shape[-1]) if xm.size else xm.reshape(0, xm.shape[-1])
    out = np.empty(flat.shape, dtype=np.int64)
    for i, row in enumerate(flat):
        nan = np.isnan(row) if row.dtype.kind == "f" else np.zeros(row.shape, bool)
        # descending: ascending order of -x (floats) or ~x (integers: no overflow at the minimum)
        key = np.where(nan, 0, -row) if row.dtype.kind == "f" else np.invert(row)
        out[i] = np.lexsort((key, ~nan))
    return np.moveaxis(out.reshape(xm.shape), -1, axis)


def _argsort_compare(actual, expected, sample, dtype):
    """Unstable sorts: the order must sort the values (any order among ties) and be a permutation."""
    from ..checks import compare_arrays
    stable = sample.args[3]
    got, want = actual[0], expected[0]
    if stable or got.shape != want.shape:
        return compare_arrays(got, want, (0, 0), "int64")
    x = sample.args[0].value
    axis = sample.args[1]
    if not np.array_equal(np.sort(got, axis=axis), np.broadcast_to(
            np.arange(x.shape[axis]).reshape([-1 if i == axis else 1 for i in range(x.ndim)]), x.shape)):
        return "the indices are not a permutation along the axis"
    return compare_arrays(np.take_along_axis(x, got, axis), np.take_along_axis(x, want, axis), (0, 0), dtype)


def _argsort_samples(dt, rng):
    v = lambda *s: values(rng, dt, s, -4, 4)  # noqa: E731
    e = edges(dt)
    out = []
    for desc in (False, True):
        for stable in (True, False):
            out += [Sample((A(v(11)), 0, desc, stable)),
                    Sample((A(v(3, 5), "T"), 1, desc, stable)),
                    Sample((A(v(4, 3), "S"), 0, desc, stable)),
                    Sample((A(e), 0, desc, stable), desc=f"edge values, descending={desc}, stable={stable}")]
        out += [Sample((A(v(0, 3)), 0, desc, True)), Sample((A(v(2, 3, 4), "R"), 1, desc, True))]
    return out


register(OpRecord("argsort", "reduction", ALL, _argsort_samples, ref=_argsort_ref, out_dtype="int64",
                  compare=_argsort_compare, errors=[_dim_error("argsort")],
                  doc="stable: ties keep their order; NaN sorts as the largest value"))
