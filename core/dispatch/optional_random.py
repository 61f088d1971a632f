"""Optional kernels of the random-distribution family (specs and decompositions written in required
primitives): the samplers torch.distributions rests on that uniform/normal transforms cannot give.

Each kernel named in OPTIONAL has a decomposition: a function of the same name here taking the
kernel table K first. A backend may provide the kernel natively instead (NumPy's Generator and
CuPy's RandomState have all three).

The frontend (core/ops/random_distributions.py) hands these kernels only valid parameters, in
float32 or float64 arrays of one shape, and maps the edge cases (alpha <= 0, NaN, inf, huge rates)
itself. The decompositions are rejection samplers over whole arrays in float64: every round draws
for every element, keeps the first accepted draw of each, and stops when all are accepted (one
host sync per round; rounds are few because each algorithm accepts with probability > 0.8).
"""
from __future__ import annotations

import math

import numpy as np

OPTIONAL: dict[str, str] = {
    "standard_gamma": "standard_gamma(state, alpha) -> Gamma(alpha, 1) samples in alpha's dtype (float32 or "
                      "float64); every alpha > 0 and finite",
    "poisson": "poisson(state, rate) -> Poisson(rate) counts as floats in rate's dtype (float32 or float64); "
               "every rate in [0, 2**62]",
    "binomial": "binomial(state, count, prob) -> Binomial(count, prob) counts as floats in count's dtype "
                "(float32 or float64); count and prob of one shape and dtype, count integral in [0, 2**62], "
                "prob in [0, 1]",
}

# log(k!) for k < 10 exactly; Stirling's series beyond (error below 1e-12 there)
_LOG_FACT = np.array([math.lgamma(k + 1.0) for k in range(10)])
_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


def _dt(x):
    return x.dtype.name if hasattr(x.dtype, "name") else str(x.dtype)


def _done(K, pending):
    return not bool(K["to_numpy"](K["any"](pending, None, False)))


def _log_factorial(K, k):
    """log(k!) of a float64 array of non-negative integers."""
    small = K["lt"](k, 10.0)
    idx = K["astype"](K["minimum"](k, 9.0), "int64")
    table = K["index"](K["from_numpy"](_LOG_FACT.copy()), (idx,))
    x = K["add"](K["maximum"](k, 10.0), 1.0)                          # lgamma(x), x = k + 1 >= 11
    inv = K["div"](1.0, x)
    inv2 = K["mul"](inv, inv)
    series = K["mul"](inv, K["sub"](1 / 12, K["mul"](inv2, K["sub"](1 / 360, K["mul"](inv2, 1 / 1260)))))
    big = K["add"](K["sub"](K["mul"](K["sub"](x, 0.5), K["log"](x)), x), _HALF_LOG_2PI + 0.0)
    return K["where"](small, table, K["add"](big, series))


def standard_gamma(K, state, alpha):
    """Marsaglia and Tsang's squeeze method; alpha < 1 boosted: Gamma(alpha + 1) * U**(1 / alpha)."""
    dt, shape = _dt(alpha), tuple(alpha.shape)
    a = K["astype"](alpha, "float64")
    boost = K["lt"](a, 1.0)
    d = K["sub"](K["where"](boost, K["add"](a, 1.0), a), 1 / 3)
    c = K["div"](1.0, K["sqrt"](K["mul"](d, 9.0)))
    out = K["full"](shape, 1.0, "float64")
    pending = K["full"](shape, True, "bool")
    while not _done(K, pending):
        z = K["normal"](state, shape, "float64")
        u = K["uniform"](state, shape, "float64")
        t = K["add"](K["mul"](c, z), 1.0)
        v = K["mul"](K["mul"](t, t), t)
        pos = K["gt"](v, 0.0)
        safe_v = K["where"](pos, v, 1.0)
        # log(u) < z^2 / 2 + d - d v + d log(v)
        bound = K["add"](K["mul"](K["mul"](z, z), 0.5), K["mul"](d, K["add"](K["sub"](1.0, safe_v), K["log"](safe_v))))
        ok = K["logical_and"](pos, K["lt"](K["log"](u), bound))
        take = K["logical_and"](pending, ok)
        out = K["where"](take, K["mul"](d, safe_v), out)
        pending = K["logical_and"](pending, K["logical_not"](ok))
    u = K["uniform"](state, shape, "float64")
    # U**(1/alpha) in logs: tiny alphas underflow to 0 (the frontend clamps), never to NaN
    scale = K["exp"](K["div"](K["log"](u), K["where"](boost, a, 1.0)))
    return K["astype"](K["where"](boost, K["mul"](out, scale), out), dt)


def poisson(K, state, rate):
    """Knuth's product of uniforms below rate 10; Hoermann's transformed rejection (PTRS) above."""
    dt, shape = _dt(rate), tuple(rate.shape)
    lam = K["astype"](rate, "float64")
    large = K["ge"](lam, 10.0)
    # small rates: count the uniforms whose running product stays above exp(-rate)
    limit = K["exp"](K["neg"](K["where"](large, 0.0, lam)))
    prod = K["full"](shape, 1.0, "float64")
    count = K["full"](shape, 0.0, "float64")
    pending = K["logical_not"](large)
    while not _done(K, pending):
        prod = K["mul"](prod, K["uniform"](state, shape, "float64"))
        pending = K["logical_and"](pending, K["gt"](prod, limit))
        count = K["add"](count, K["astype"](pending, "float64"))
    # large rates: PTRS (Hoermann 1993) with constants from the rate
    lam_l = K["where"](large, lam, 10.0)
    slam, loglam = K["sqrt"](lam_l), K["log"](lam_l)
    b = K["add"](K["mul"](slam, 2.53), 0.931)
    a = K["add"](K["mul"](b, 0.02483), -0.059)
    log_inv_alpha = K["log"](K["add"](K["div"](1.1328, K["sub"](b, 3.4)), 1.1239))
    vr = K["sub"](0.9277, K["div"](3.6224, K["sub"](b, 2.0)))
    out = count
    pending = large
    while not _done(K, pending):
        u = K["sub"](K["uniform"](state, shape, "float64"), 0.5)
        v = K["uniform"](state, shape, "float64")
        us = K["sub"](0.5, K["abs"](u))
        k = K["floor"](K["add"](K["mul"](K["add"](K["div"](K["mul"](a, 2.0), us), b), u), K["add"](lam_l, 0.43)))
        quick = K["logical_and"](K["ge"](us, 0.07), K["le"](v, vr))
        reject = K["logical_or"](K["lt"](k, 0.0), K["logical_and"](K["lt"](us, 0.013), K["gt"](v, us)))
        ks = K["maximum"](k, 0.0)
        lhs = K["sub"](K["add"](K["log"](v), log_inv_alpha), K["log"](K["add"](K["div"](a, K["mul"](us, us)), b)))
        rhs = K["sub"](K["sub"](K["mul"](ks, loglam), lam_l), _log_factorial(K, ks))
        ok = K["logical_or"](quick, K["logical_and"](K["logical_not"](reject), K["le"](lhs, rhs)))
        out = K["where"](K["logical_and"](pending, ok), ks, out)
        pending = K["logical_and"](pending, K["logical_not"](ok))
    return K["astype"](out, dt)


def binomial(K, state, count, prob):
    """For p <= 1/2 (else n - Binomial(n, 1 - p)): inversion where n p < 10, Hoermann's BTRS above."""
    dt, shape = _dt(count), tuple(count.shape)
    n = K["astype"](count, "float64")
    p0 = K["astype"](prob, "float64")
    flip = K["gt"](p0, 0.5)
    p = K["where"](flip, K["sub"](1.0, p0), p0)
    q = K["sub"](1.0, p)
    large = K["ge"](K["mul"](n, p), 10.0)
    # inversion: walk the pmf from 0 until the cumulative sum passes u (never beyond n)
    p_s = K["where"](large, 0.0, p)
    ratio = K["div"](p_s, K["sub"](1.0, p_s))
    pmf = K["exp"](K["mul"](n, K["log1p"](K["neg"](p_s))))
    cdf = pmf
    u = K["uniform"](state, shape, "float64")
    x = K["full"](shape, 0.0, "float64")
    pending = K["logical_and"](K["logical_not"](large), K["gt"](u, cdf))
    pending = K["logical_and"](pending, K["gt"](n, 0.0))
    while not _done(K, pending):
        x = K["add"](x, K["astype"](pending, "float64"))
        pmf = K["mul"](pmf, K["mul"](K["div"](K["add"](K["sub"](n, x), 1.0), K["maximum"](x, 1.0)), ratio))
        cdf = K["add"](cdf, pmf)
        pending = K["logical_and"](pending, K["logical_and"](K["gt"](u, cdf), K["lt"](x, n)))
    out = x
    # BTRS (Hoermann 1993): accept k when log(v * alpha / (a / us^2 + b)) <= log(f(k) / f(m))
    n_l, p_l = K["where"](large, n, 100.0), K["where"](large, p, 0.5)
    q_l = K["sub"](1.0, p_l)
    spq = K["sqrt"](K["mul"](K["mul"](n_l, p_l), q_l))
    b = K["add"](K["mul"](spq, 2.53), 1.15)
    a = K["add"](K["add"](K["mul"](b, 0.0248), K["mul"](p_l, 0.01)), -0.0873)
    c = K["add"](K["mul"](n_l, p_l), 0.5)
    alpha = K["mul"](K["add"](K["div"](5.1, b), 2.83), spq)
    vr = K["sub"](0.92, K["div"](4.2, b))
    m = K["floor"](K["mul"](K["add"](n_l, 1.0), p_l))
    log_r = K["sub"](K["log"](p_l), K["log"](q_l))
    log_fm = K["add"](_log_factorial(K, m), _log_factorial(K, K["sub"](n_l, m)))
    pending = large
    while not _done(K, pending):
        u = K["sub"](K["uniform"](state, shape, "float64"), 0.5)
        v = K["uniform"](state, shape, "float64")
        us = K["sub"](0.5, K["abs"](u))
        k = K["floor"](K["add"](K["mul"](K["add"](K["div"](K["mul"](a, 2.0), us), b), u), c))
        inside = K["logical_and"](K["ge"](k, 0.0), K["le"](k, n_l))
        quick = K["logical_and"](K["ge"](us, 0.07), K["le"](v, vr))
        ks = K["minimum"](K["maximum"](k, 0.0), n_l)
        lhs = K["log"](K["div"](K["mul"](v, alpha), K["add"](K["div"](a, K["mul"](us, us)), b)))
        rhs = K["add"](K["sub"](log_fm, K["add"](_log_factorial(K, ks), _log_factorial(K, K["sub"](n_l, ks)))),
                       K["mul"](K["sub"](ks, m), log_r))
        ok = K["logical_and"](inside, K["logical_or"](quick, K["le"](lhs, rhs)))
        out = K["where"](K["logical_and"](pending, ok), ks, out)
        pending = K["logical_and"](pending, K["logical_not"](ok))
    out = K["where"](flip, K["sub"](n, out), out)
    return K["astype"](out, dt)
