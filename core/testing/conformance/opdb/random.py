"""Records of the random kernels, checked statistically: shapes and dtypes, ranges, mean and variance
within 5 standard errors, every value of a small range drawn, seeded reproducibility (same seed, same
numbers; another seed or the next draw, other numbers) and independence of generator states."""
from __future__ import annotations

import math

import numpy as np

from ._base import FLOAT, INT, OpRecord, register

N = 20000


def _np(K, x):
    return np.array(K["to_numpy"](x), copy=True)


def _dtname(x):
    d = x.dtype
    return getattr(d, "name", str(d))


def _expect(cond, msg):
    if not cond:
        raise AssertionError(msg)


def _shape_dtype(x, shape, dt, what):
    _expect(tuple(x.shape) == tuple(shape), f"{what}: shape {tuple(x.shape)}, expected {tuple(shape)}")
    _expect(_dtname(x) == dt, f"{what}: dtype {_dtname(x)}, expected {dt}")


def _within(value, expected, se, what):
    _expect(abs(value - expected) <= 5 * se,
            f"{what} is {value:.6g}, expected {expected:.6g} +- {5 * se:.3g} (5 standard errors)")


def _reproducible(K, draw, what):
    """draw(state) -> numpy values; same seed twice equal, other seed and next draw different."""
    a = draw(K["rng_new"](1234))
    b = draw(K["rng_new"](1234))
    _expect(np.array_equal(a, b, equal_nan=True), f"{what}: two generators seeded 1234 drew different numbers")
    c = draw(K["rng_new"](4321))
    _expect(not np.array_equal(a, c), f"{what}: seeds 1234 and 4321 drew the same numbers")
    s = K["rng_new"](1234)
    first, second = draw(s), draw(s)
    _expect(not np.array_equal(first, second), f"{what}: two successive draws from one state are equal")


def _uniform(K, dt):
    s = K["rng_new"](0)
    x = K["uniform"](s, (N,), dt)
    _shape_dtype(x, (N,), dt, "uniform")
    v = _np(K, x).astype(np.float64)
    _expect(v.min() >= 0 and v.max() < 1, f"uniform: values outside [0, 1): min {v.min()}, max {v.max()} "
                                          f"({int((v >= 1).sum())} values >= 1)")
    _within(v.mean(), 0.5, math.sqrt(1 / 12 / N), "uniform: mean")
    _within(v.var(), 1 / 12, math.sqrt(1 / 80 - 1 / 144) / math.sqrt(N), "uniform: variance")
    counts = np.histogram(v, bins=10, range=(0, 1))[0]
    worst = int(np.argmax(np.abs(counts - N / 10)))
    _within(counts[worst], N / 10, math.sqrt(N * 0.09), f"uniform: count in bin [{worst / 10}, {(worst + 1) / 10})")
    for shape in ((), (0,), (3, 4)):
        _shape_dtype(K["uniform"](s, shape, dt), shape, dt, f"uniform of shape {shape}")
    _reproducible(K, lambda st: _np(K, K["uniform"](st, (64,), dt)), "uniform")


def _normal(K, dt):
    s = K["rng_new"](0)
    x = K["normal"](s, (N,), dt)
    _shape_dtype(x, (N,), dt, "normal")
    v = _np(K, x).astype(np.float64)
    _expect(np.isfinite(v).all(), "normal: non-finite values")
    _within(v.mean(), 0.0, 1 / math.sqrt(N), "normal: mean")
    _within(v.var(), 1.0, math.sqrt(2 / N), "normal: variance")
    p = 0.682689492
    _within(float((np.abs(v) < 1).mean()), p, math.sqrt(p * (1 - p) / N), "normal: fraction within 1 sd")
    for shape in ((), (0,), (2, 3)):
        _shape_dtype(K["normal"](s, shape, dt), shape, dt, f"normal of shape {shape}")
    _reproducible(K, lambda st: _np(K, K["normal"](st, (64,), dt)), "normal")


def _rng_new(K, dt):
    draw = lambda st: _np(K, K["uniform"](st, (16,), dt))  # noqa: E731
    a, b = K["rng_new"](7), K["rng_new"](7)
    a1 = draw(a)
    draw(a)                                    # advancing a must not advance b
    _expect(np.array_equal(a1, draw(b)), "rng_new: drawing from one state changed another state's numbers")
    for seed in (0, 1, 2**32 + 5, 2**63 - 1):
        draw(K["rng_new"](seed))
    _expect(not np.array_equal(draw(K["rng_new"](0)), draw(K["rng_new"](1))), "rng_new: seeds 0 and 1 agree")


def _randint(K, dt):
    info = np.iinfo(dt)
    lo, hi = (-3, 4) if info.min < 0 else (2, 9)
    s = K["rng_new"](0)
    x = K["randint"](s, lo, hi, (N,), dt)
    _shape_dtype(x, (N,), dt, f"randint({lo}, {hi})")
    v = _np(K, x).astype(np.int64)
    _expect(v.min() >= lo and v.max() < hi, f"randint({lo}, {hi}): values outside [{lo}, {hi}): "
                                            f"min {v.min()}, max {v.max()}")
    _expect(set(np.unique(v).tolist()) == set(range(lo, hi)), f"randint({lo}, {hi}): not every value drawn")
    m = hi - lo
    _within(v.mean(), (lo + hi - 1) / 2, math.sqrt((m * m - 1) / 12 / N), f"randint({lo}, {hi}): mean")
    if dt in ("int8", "uint8"):
        full = _np(K, K["randint"](s, int(info.min), int(info.max) + 1, (N,), dt)).astype(np.int64)
        _expect(full.min() == info.min and full.max() == info.max,
                f"randint over the whole {dt} range: min {full.min()}, max {full.max()}")
    for shape in ((), (0,), (2, 3)):
        _shape_dtype(K["randint"](s, lo, hi, shape, dt), shape, dt, f"randint of shape {shape}")
    _reproducible(K, lambda st: _np(K, K["randint"](st, 0, 100, (64,), dt)), "randint")


def _randperm(K, dt):
    s = K["rng_new"](0)
    for n in (0, 1, 2, 50):
        x = K["randperm"](s, n, dt)
        _shape_dtype(x, (n,), dt, f"randperm({n})")
        v = _np(K, x).astype(np.int64)
        _expect(np.array_equal(np.sort(v), np.arange(n)), f"randperm({n}) is not a permutation: {v.tolist()}")
    first = np.array([_np(K, K["randperm"](s, 5, dt))[0] for _ in range(1000)])
    counts = np.bincount(first, minlength=5)
    worst = int(np.argmax(np.abs(counts - 200)))
    _within(counts[worst], 200, math.sqrt(1000 * 0.2 * 0.8), f"randperm(5): times {worst} came first in 1000")
    _reproducible(K, lambda st: _np(K, K["randperm"](st, 30, dt)), "randperm")


def _bernoulli(K, dt):
    s = K["rng_new"](0)
    n = N // 4
    probs = np.repeat(np.array([0.0, 1.0, 0.3, 0.75])[:, None], n, axis=1).astype(dt)
    p = K["from_numpy"](probs)
    x = K["bernoulli"](s, p)
    _shape_dtype(x, probs.shape, dt, "bernoulli")
    v = _np(K, x).astype(np.float64)
    _expect(set(np.unique(v).tolist()) <= {0.0, 1.0}, "bernoulli: values other than 0 and 1")
    _expect((v[0] == 0).all(), "bernoulli: p = 0 drew ones")
    _expect((v[1] == 1).all(), "bernoulli: p = 1 drew zeros")
    for row, q in ((2, 0.3), (3, 0.75)):
        _within(v[row].mean(), q, math.sqrt(q * (1 - q) / n), f"bernoulli: mean for p = {q}")
    pt = K["permute"](K["from_numpy"](np.full((5, 3), 0.5, dtype=dt)), (1, 0))
    _shape_dtype(K["bernoulli"](s, pt), (3, 5), dt, "bernoulli of a transposed p")
    _shape_dtype(K["bernoulli"](s, K["from_numpy"](np.array(0.5, dtype=dt))), (), dt, "bernoulli of a 0-d p")
    half = np.full(64, 0.5, dtype=dt)
    _reproducible(K, lambda st: _np(K, K["bernoulli"](st, K["from_numpy"](half.copy()))), "bernoulli")


def _rng_state(K, dt):
    """rng_get_state / rng_set_state: bytes that restore the stream (get -> draw -> set -> draw again)."""
    draw = lambda st: _np(K, K["uniform"](st, (32,), dt))  # noqa: E731
    s = K["rng_new"](2024)
    draw(s)
    data = K["rng_get_state"](s)
    _expect(isinstance(data, bytes), f"rng_get_state returned {type(data).__name__}, not bytes")
    _expect(K["rng_get_state"](s) == data, "rng_get_state: a second export of an unchanged state differs")
    a = draw(s)
    _expect(K["rng_get_state"](s) != data, "rng_get_state: drawing did not change the exported state")
    r = K["rng_set_state"](data)
    _expect(np.array_equal(draw(r), a), "rng_set_state: the restored state drew other numbers than the original "
                                        "did after rng_get_state")
    r1, r2 = K["rng_set_state"](data), K["rng_set_state"](bytes(bytearray(data)))
    draw(r1)                                   # states restored from the same bytes are independent
    _expect(np.array_equal(draw(r2), a), "rng_set_state: drawing from one restored state changed another")
    _expect(K["rng_get_state"](K["rng_set_state"](data)) == data, "rng_set_state then rng_get_state: other bytes")
    try:
        K["rng_set_state"](b"\x00 not a generator state")
    except ValueError:
        pass
    else:
        raise AssertionError("rng_set_state accepted bytes that are not a generator state (expected ValueError)")


def _none(dt, rng):
    return []


for _name, _dtypes, _fn, _doc in (
        ("rng_new", ("float32",), _rng_new, "independent generator states from integer seeds (0 to 2**63 - 1)"),
        ("uniform", FLOAT, _uniform, "floats in [0, 1)"),
        ("normal", FLOAT, _normal, "standard normal"),
        ("randint", INT, _randint, "integers uniform in [low, high)"),
        ("randperm", ("int64", "int32", "int16", "int8", "uint8"), _randperm, "a uniform random permutation"),
        ("bernoulli", FLOAT, _bernoulli, "0/1 in p's dtype")):
    register(OpRecord(_name, "random", _dtypes, _none, random=_fn, doc=_doc))

register(OpRecord("rng_get_state", "random", ("float32",), _none, random=_rng_state,
                  fallback_raises=lambda K: K["rng_get_state"](K["rng_new"](0)),
                  doc="bytes serialising a generator state; rng_set_state restores it (no decomposition)"))
register(OpRecord("rng_set_state", "random", ("float32",), _none, random=_rng_state,
                  fallback_raises=lambda K: K["rng_set_state"](b"{}"),
                  doc="a generator state from rng_get_state's bytes (no decomposition)"))
