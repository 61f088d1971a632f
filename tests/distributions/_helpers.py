"""Shared checks for the distribution tests: values against SciPy in float64, sample statistics
with bounds from the sample size, gradients by finite differences."""
from __future__ import annotations

import numpy as np

import tensorplug as tp

F64 = tp.float64


def t64(x):
    return tp.tensor(np.asarray(x, dtype=np.float64), dtype=F64)


def np_(x):
    return x.detach().numpy() if hasattr(x, "detach") else np.asarray(x)


def close(actual, expected, rtol=1e-9, atol=1e-10):
    np.testing.assert_allclose(np_(actual), np.asarray(expected, dtype=np.float64), rtol=rtol, atol=atol)


def check_moments(samples, mean, var, kurt_excess, sigmas=5.0):
    """Sample mean and variance over axis 0 within `sigmas` standard errors of the true values:
    SE(mean) = sqrt(var / N), SE(var) = var * sqrt((kurtosis_excess + 2) / N)."""
    s = np_(samples).astype(np.float64)
    n = s.shape[0]
    mean, var, kurt = (np.broadcast_to(np.asarray(a, np.float64), s.shape[1:]) for a in (mean, var, kurt_excess))
    assert np.all(np.abs(s.mean(0) - mean) <= sigmas * np.sqrt(var / n)), (s.mean(0), mean)
    assert np.all(np.abs(s.var(0) - var) <= sigmas * var * np.sqrt((kurt + 2) / n) + 1e-12), (s.var(0), var)


def check_scipy_moments(samples, frozen, sigmas=5.0):
    m, v, k = frozen.stats(moments="mvk")
    check_moments(samples, m, v, k, sigmas)


def check_frequencies(samples, probs, sigmas=5.0):
    """Frequencies of each value k = 0..K-1 of integer samples (axis 0) within `sigmas` binomial
    standard errors of probs[..., k]."""
    s = np_(samples)
    n = s.shape[0]
    probs = np.asarray(probs, np.float64)
    for k in range(probs.shape[-1]):
        freq = (s == k).mean(0)
        p = probs[..., k]
        assert np.all(np.abs(freq - p) <= sigmas * np.sqrt(p * (1 - p) / n) + 1e-12), (k, freq, p)


def seeded(fn, seed=0):
    """fn made deterministic (same random numbers on every call), for gradcheck of rsample."""
    def run(*args):
        tp.manual_seed(seed)
        return fn(*args)
    return run


def req(x):
    return t64(x).requires_grad_()

