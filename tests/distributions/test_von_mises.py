"""VonMises against scipy.stats.vonmises."""
import math

import numpy as np
import pytest
from scipy import stats

import tensorplug as tp
from tensorplug.distributions import VonMises

from ._helpers import close, req, t64

LOC, K = np.array([0.5, -2.0, 3.0]), np.array([0.01, 1.5, 40.0])
REF = stats.vonmises(K, loc=LOC)


def test_values_against_scipy():
    """log_prob (large κ too), mean, mode, circular variance 1 - I1(κ)/I0(κ)."""
    d = VonMises(t64(LOC), t64(K))
    x = np.array([0.1, -2.5, 3.1])
    close(d.log_prob(t64(x)), REF.logpdf(x), rtol=1e-9)
    close(d.mean, LOC); close(d.mode, LOC)
    from scipy.special import i0e, i1e
    close(d.variance, 1 - i1e(K) / i0e(K), rtol=1e-9)
    assert tp.autograd.gradgradcheck(lambda l, k: VonMises(l, k).log_prob(t64(x)), (req(LOC), req(K)))


def test_sampling_circular_moments():
    """20000 samples lie in [-π, π); E[cos(x - μ)] = I1(κ)/I0(κ) and E[sin(x - μ)] = 0 within 5 SEs."""
    tp.manual_seed(20)
    d = VonMises(t64(LOC), t64(K))
    s = d.sample((20000,)).numpy()
    assert s.shape == (20000, 3) and (s >= -math.pi).all() and (s < math.pi).all()
    from scipy.special import i0e, i1e
    r = i1e(K) / i0e(K)
    c, sn = np.cos(s - LOC), np.sin(s - LOC)
    assert np.all(np.abs(c.mean(0) - r) <= 5 * c.std(0) / np.sqrt(20000) + 1e-12)
    assert np.all(np.abs(sn.mean(0)) <= 5 * sn.std(0) / np.sqrt(20000) + 1e-12)
    assert VonMises(tp.zeros(2), 1.0).sample().dtype == tp.float32
    assert VonMises(t64(LOC), t64(K)).expand((2, 3)).sample().shape == (2, 3)
    with pytest.raises(ValueError, match="Expected parameter concentration"):
        VonMises(0.0, -1.0)
