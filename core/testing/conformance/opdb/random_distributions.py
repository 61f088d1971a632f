"""Records of the random-distribution kernels (dispatch/optional_random.py), checked statistically: shape
and dtype, support, mean and variance within 5 standard errors for several parameter regimes (each
sampler switches algorithm with the parameter), a chi-square test of the counts, seeded
reproducibility, and independence of generator states."""
from __future__ import annotations

import math

import numpy as np

from ._base import OpRecord, register
from .random import _expect, _np, _reproducible, _shape_dtype, _within

N = 20000
FLOATS = ("float32", "float64")


def _arr(K, value, dt):
    return K["from_numpy"](np.array(value, dtype=dt))


def _moments(v, mean, var, what):
    """Mean and variance within 5 standard errors (the variance's from the fourth central moment)."""
    n = v.size
    _within(float(v.mean()), mean, math.sqrt(var / n), f"{what}: mean")
    return float(v.var())


def _chi2_counts(v, pmf, what):
    """Pearson's chi-square of integer samples against pmf(k) over bins with expected count >= 20 (the
    rest pooled): the statistic must stay below its mean + 5 standard deviations."""
    n = v.size
    ks = np.arange(int(v.max()) + 2)
    expected = n * pmf(ks)
    keep = expected >= 20
    obs = np.bincount(v.astype(np.int64), minlength=ks.size)[:ks.size]
    o = np.append(obs[keep], n - obs[keep].sum())
    e = np.append(expected[keep], n - expected[keep].sum())
    if e[-1] < 20:
        o, e = o[:-1], e[:-1]
    stat = float(((o - e) ** 2 / e).sum())
    df = o.size - 1
    _expect(stat <= df + 5 * math.sqrt(2 * df), f"{what}: chi-square {stat:.1f} over {df} degrees of freedom")


def _standard_gamma(K, dt):
    s = K["rng_new"](0)
    for a in (0.2, 1.0, 4.5):
        x = K["standard_gamma"](s, _arr(K, np.full(N, a), dt))
        _shape_dtype(x, (N,), dt, f"standard_gamma({a})")
        v = _np(K, x).astype(np.float64)
        _expect(np.isfinite(v).all() and (v >= 0).all(), f"standard_gamma({a}): values outside [0, inf)")
        var = _moments(v, a, a, f"standard_gamma({a})")
        # the sample variance's variance: (mu4 - sigma^4) / N, mu4 = (3 + 6 / a) a^2
        _within(var, a, math.sqrt((2 * a * a + 6 * a) / N), f"standard_gamma({a}): variance")
        if a == 1.0:                                   # Exponential(1): P(x < 1) = 1 - 1/e
            p = 1 - math.exp(-1.0)
            _within(float((v < 1.0).mean()), p, math.sqrt(p * (1 - p) / N), "standard_gamma(1): P(x < 1)")
    mixed = K["standard_gamma"](s, _arr(K, [[0.5, 2.0, 30.0]] * 4, dt))
    _shape_dtype(mixed, (4, 3), dt, "standard_gamma of a (4, 3) alpha")
    for shape in ((), (0,)):
        _shape_dtype(K["standard_gamma"](s, _arr(K, np.full(shape, 2.0), dt)), shape, dt,
                     f"standard_gamma of shape {shape}")
    _reproducible(K, lambda st: _np(K, K["standard_gamma"](st, _arr(K, np.full(64, 1.5), dt))), "standard_gamma")


def _poisson(K, dt):
    s = K["rng_new"](0)
    for lam in (0.0, 0.7, 6.0, 40.0):
        x = K["poisson"](s, _arr(K, np.full(N, lam), dt))
        _shape_dtype(x, (N,), dt, f"poisson({lam})")
        v = _np(K, x).astype(np.float64)
        _expect((v >= 0).all() and (v == np.floor(v)).all(), f"poisson({lam}): values that are not counts")
        if lam == 0:
            _expect((v == 0).all(), "poisson(0): non-zero counts")
            continue
        _moments(v, lam, lam, f"poisson({lam})")
        logf = np.array([math.lgamma(k + 1.0) for k in range(int(v.max()) + 2)])
        _chi2_counts(v, lambda ks, lam=lam: np.exp(ks * math.log(lam) - lam - logf[ks]), f"poisson({lam})")
    big = _np(K, K["poisson"](s, _arr(K, np.full(N, 1e6), dt))).astype(np.float64)
    _moments(big, 1e6, 1e6, "poisson(1e6)")
    _shape_dtype(K["poisson"](s, _arr(K, np.full((2, 3), 3.0), dt)), (2, 3), dt, "poisson of a (2, 3) rate")
    _reproducible(K, lambda st: _np(K, K["poisson"](st, _arr(K, np.full(64, 5.0), dt))), "poisson")


def _binomial(K, dt):
    s = K["rng_new"](0)
    for n, p in ((0, 0.5), (12, 0.0), (12, 1.0), (12, 0.3), (40, 0.8), (200, 0.45), (10 ** 6, 0.3)):
        x = K["binomial"](s, _arr(K, np.full(N, n), dt), _arr(K, np.full(N, p), dt))
        _shape_dtype(x, (N,), dt, f"binomial({n}, {p})")
        v = _np(K, x).astype(np.float64)
        _expect((v >= 0).all() and (v <= n).all() and (v == np.floor(v)).all(),
                f"binomial({n}, {p}): values outside 0..{n}")
        if p in (0.0, 1.0) or n == 0:
            _expect((v == n * p).all(), f"binomial({n}, {p}): not always {n * p}")
            continue
        _moments(v, n * p, n * p * (1 - p), f"binomial({n}, {p})")
        if n <= 200:
            _chi2_counts(v, lambda ks, n=n, p=p: _binomial_pmf(ks, n, p), f"binomial({n}, {p})")
    _shape_dtype(K["binomial"](s, _arr(K, np.full((2, 3), 5.0), dt), _arr(K, np.full((2, 3), 0.5), dt)), (2, 3), dt,
                 "binomial of (2, 3) parameters")
    n30, p04 = np.full(64, 30.0), np.full(64, 0.4)
    _reproducible(K, lambda st: _np(K, K["binomial"](st, _arr(K, n30, dt), _arr(K, p04, dt))), "binomial")


def _binomial_pmf(ks, n, p):
    k = np.minimum(ks, n)
    logf = np.array([math.lgamma(i + 1.0) for i in range(n + 1)])
    logp = logf[n] - logf[k] - logf[n - k] + k * math.log(p) + (n - k) * math.log1p(-p)
    return np.where(ks <= n, np.exp(logp), 0.0)


def _none(dt, rng):
    return []


for _name, _fn, _doc in (
        ("standard_gamma", _standard_gamma, "Gamma(alpha, 1) samples in alpha's dtype"),
        ("poisson", _poisson, "Poisson(rate) counts as floats in rate's dtype"),
        ("binomial", _binomial, "Binomial(count, prob) counts as floats in count's dtype")):
    register(OpRecord(_name, "random", FLOATS, _none, random=_fn, doc=_doc))
