"""Records of creation and transfer kernels: from_numpy, to_numpy, full, arange, astype, copy, assign."""
from __future__ import annotations

import math

import numpy as np

from ._base import ALL, COMPLEX, FLOAT, INT, NUMERIC, A, ErrorCase, OpRecord, Raw, Sample, edges, register, values


def _torch():
    import tensorplug
    return tensorplug


def _from_numpy_samples(dt, rng):
    v = lambda *s: values(rng, dt, s)  # noqa: E731
    big = v(4, 6)
    ro = v(3)
    ro.flags.writeable = False
    return [Sample((Raw(v(3, 4)),)), Sample((Raw(v()),)), Sample((Raw(v(0, 2)),)),
            Sample((Raw(big[:, ::2]),), desc="numpy (4, 3) non-contiguous (every other column)"),
            Sample((Raw(big.T),), desc="numpy (6, 4) transposed"),
            Sample((Raw(big[::-1]),), desc="numpy (4, 6) with a negative stride"),
            Sample((Raw(ro),), desc="numpy (3,) read-only"),
            Sample((Raw(edges(dt)),), desc="edge values")]


register(OpRecord("from_numpy", "creation", ALL + COMPLEX, _from_numpy_samples, ref=lambda a: a,
                  doc="from_numpy(a) has a's values and dtype; read back with to_numpy"))


def _to_numpy_samples(dt, rng):
    v = lambda *s: values(rng, dt, s)  # noqa: E731
    return [Sample((A(v(3, 4)),)), Sample((A(v()),)), Sample((A(v(0, 3)),)), Sample((A(v(3, 4), "T"),)),
            Sample((A(v(2, 5), "S"),)), Sample((A(v(6), "R"),)), Sample((A(np.repeat(v(1, 3), 2, 0), "B"),)),
            Sample((A(edges(dt)),))]


register(OpRecord("to_numpy", "creation", ALL + COMPLEX, _to_numpy_samples, ref=lambda x: x,
                  doc="to_numpy(x) returns a numpy.ndarray (checked with isinstance) with x's values"))


def _full_samples(dt, rng):
    if dt == "bool":
        vals = [True, False]
    elif dt in COMPLEX:
        vals = [complex(1.5, -2.0), complex(math.nan, 1.0), complex(math.inf, -math.inf), complex(-0.0, 0.0), 2.25]
    elif dt in FLOAT:
        vals = [1.5, -0.0, math.nan, math.inf, -math.inf, -2.25]
    else:
        info = np.iinfo(dt)
        vals = [7, int(info.max), int(info.min), 0] + ([-3] if info.min < 0 else [])
    shapes = [(3, 2), (), (0, 4), (2, 1, 3)]
    return [Sample((shapes[i % len(shapes)], v, dt)) for i, v in enumerate(vals)]


register(OpRecord("full", "creation", ALL + COMPLEX, _full_samples, ref=lambda shape, value, dtype: np.full(shape, value),
                  errors=[ErrorCase("full with a negative size", lambda T: _torch().full((-1, 2), 1.0),
                                    (RuntimeError, ValueError))]))


def _arange_samples(dt, rng):
    if dt in FLOAT:
        specs = [(0, 5, 1), (1.0, 2.0, 0.25), (5.0, 0.0, -1.5), (0, 0, 1), (-3.0, 3.0, 0.5), (0.5, 1.0, 2.0)]
    elif dt == "uint8":
        specs = [(0, 10, 3), (10, 0, -2), (3, 3, 1), (200, 255, 7)]
    else:
        specs = [(0, 10, 3), (10, 0, -2), (-5, 5, 1), (3, 3, 1), (-7, -20, -4)]
    return [Sample((a, b, s, dt)) for a, b, s in specs]


register(OpRecord("arange", "creation", NUMERIC, _arange_samples,
                  ref=lambda start, stop, step, dtype: np.arange(start, stop, step, dtype=np.float64),
                  errors=[ErrorCase("arange with step 0", lambda T: _torch().arange(0, 5, 0),
                                    (RuntimeError, ValueError, ZeroDivisionError))]))


def _astype_samples(dt, rng):
    if dt in COMPLEX:
        return _astype_complex_samples(dt, rng)
    out = []
    for target in ALL:
        if dt in FLOAT and target in INT:
            info = np.iinfo(target)
            lo, hi = max(info.min, -1000), min(info.max, 1000)
            x = rng.uniform(lo, hi, 12).astype(dt)
            x[:4] = [0.0, -0.0, 0.5 if lo >= 0 else -0.5, 2.75]
            x = np.clip(x, lo, hi).astype(dt)
            # values must stay inside the target's range after rounding to dt (float16 near 255 / 1000)
            x = x[(x.astype(np.float64) >= lo) & (x.astype(np.float64) < hi)]
            desc = f"to {target}: floats in range, truncated toward zero"
        elif dt in FLOAT and target == "bool":
            x = np.array([0.0, -0.0, 0.5, -3.0, math.nan, math.inf], dtype=dt)
            desc = "to bool: zero is False, everything else (NaN too) True"
        elif dt in FLOAT:
            x = edges(dt)
            desc = f"to {target}: edge values"
        else:
            x = np.concatenate([values(rng, dt, (6,)), edges(dt)])
            desc = f"to {target}: random and edge values" + (" (integers wrap)" if target in INT else "")
        out.append(Sample((A(x), target), desc=desc, needs=(target,)))
    v = lambda *s: values(rng, dt, s)  # noqa: E731
    other = "float32" if dt != "float32" else "int64"
    out += [Sample((A(v(3, 4), "T"), other), needs=(other,)), Sample((A(v()), other), needs=(other,)),
            Sample((A(v(0, 2)), other), needs=(other,)), Sample((A(v(3, 4), "S"), dt))]
    for target in COMPLEX:      # real values become complex with a zero imaginary part
        x = edges(dt) if dt in FLOAT else np.concatenate([values(rng, dt, (6,)), edges(dt)])
        out.append(Sample((A(x), target), desc=f"to {target}: edge values", needs=(target,)))
    return out


def _astype_complex_samples(dt, rng):
    """Complex to complex keeps both parts; to a real dtype keeps the real part (C++'s cast, as
    PyTorch's kernels: the frontend warns); to bool: nonzero in either part."""
    out = [Sample((A(edges(dt)), target), desc=f"to {target}: edge values", needs=(target,))
           for target in COMPLEX + ("float32", "float64", "bool")]
    x = values(rng, dt, (12,), -100, 100)
    for target in ("int64", "int32", "int16", "uint8"):
        if target == "uint8":
            x = values(rng, dt, (12,), 0, 200)
        out.append(Sample((A(x), target), desc=f"to {target}: real parts in range, truncated", needs=(target,)))
    v = lambda *s: values(rng, dt, s)  # noqa: E731
    other = "complex128" if dt == "complex64" else "complex64"
    out += [Sample((A(v(3, 4), "T"), other), needs=(other,)), Sample((A(v()), "float32"), needs=("float32",)),
            Sample((A(v(0, 2)), other), needs=(other,)), Sample((A(v(3, 4), "S"), dt))]
    return out


def _astype_dtype(dt, sample):
    return sample.args[1]


def _astype_ref(x, dtype):
    with np.errstate(all="ignore"):
        return np.asarray(x).astype(dtype)


register(OpRecord("astype", "creation", ALL + COMPLEX, _astype_samples, ref=_astype_ref, out_dtype=_astype_dtype,
                  view="copy", doc="C casts: floats truncate toward zero, integers wrap, nonzero is True"))


def _copy_samples(dt, rng):
    v = lambda *s: values(rng, dt, s)  # noqa: E731
    return [Sample((A(v(3, 4)),)), Sample((A(v(3, 4), "T"),)), Sample((A(v(2, 6), "S"),)),
            Sample((A(v(5), "R"),)), Sample((A(np.repeat(v(1, 4), 3, 0), "B"),)), Sample((A(v()),)),
            Sample((A(v(0, 3)),)), Sample((A(edges(dt)),))]


register(OpRecord("copy", "creation", ALL + COMPLEX, _copy_samples, ref=lambda x: np.array(x, copy=True), view="copy"))


def _assign_samples(dt, rng):
    v = lambda *s: values(rng, dt, s)  # noqa: E731
    from ._base import scalar
    return [
        Sample((A(v(3, 4)), A(v(3, 4)))),
        Sample((A(v(3, 4), "T"), A(v(4))), desc="transposed destination, (4,) source broadcast"),
        Sample((A(v(2, 6), "S"), scalar(dt)), desc="strided destination, a Python scalar"),
        Sample((A(v()), A(v()))),
        Sample((A(v(4, 3)), A(v(4, 3), "T")), desc="transposed source"),
        Sample((A(v(5), "R"), A(np.repeat(v(1), 5), "B")), desc="reversed destination, broadcast source"),
        Sample((A(v(0, 3)), A(v(3)))),
        Sample((A(v(len(edges(dt)))), A(edges(dt))), desc="edge values"),
    ]


register(OpRecord("assign", "creation", ALL + COMPLEX, _assign_samples,
                  ref=lambda dst, src: np.broadcast_to(np.asarray(src), np.shape(dst)).copy(), inplace=0,
                  doc="assign(dst, src) writes src (broadcast) into dst, which may be a view"))
