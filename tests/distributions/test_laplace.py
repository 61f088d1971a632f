"""Laplace against scipy.stats.laplace."""
import numpy as np
from scipy import stats

import tensorplug as tp
from tensorplug.distributions import Laplace

from ._helpers import check_scipy_moments, close, req, seeded, t64

LOC, SCALE = np.array([0.0, 2.0]), np.array([1.0, 0.3])
REF = stats.laplace(LOC, SCALE)


def test_values_against_scipy():
    """log_prob, cdf, icdf, entropy, moments."""
    d = Laplace(t64(LOC), t64(SCALE))
    x = np.array([-0.5, 2.2])
    close(d.log_prob(t64(x)), REF.logpdf(x)); close(d.cdf(t64(x)), REF.cdf(x))
    close(d.icdf(t64([0.1, 0.8])), REF.ppf([0.1, 0.8]))
    close(d.entropy(), REF.entropy()); close(d.mean, REF.mean()); close(d.variance, REF.var())
    close(d.stddev, REF.std()); close(d.mode, LOC)


def test_sampling_and_gradient():
    """Moments of 40000 samples; rsample differentiable to loc and scale."""
    tp.manual_seed(5)
    check_scipy_moments(Laplace(t64(LOC), t64(SCALE)).rsample((40000,)), REF)
    f = seeded(lambda l, s: Laplace(l, s).rsample((2,)))
    assert tp.autograd.gradcheck(f, (req(LOC), req(SCALE)))
    assert tp.autograd.gradgradcheck(f, (req(LOC), req(SCALE)))
