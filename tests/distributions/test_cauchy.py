"""Cauchy against scipy.stats.cauchy."""
import numpy as np
import pytest
from scipy import stats

import tensorplug as tp
from tensorplug.distributions import Cauchy

from ._helpers import close, req, seeded, t64

LOC, SCALE = np.array([0.0, 2.0]), np.array([1.0, 0.3])
REF = stats.cauchy(LOC, SCALE)


def test_values_against_scipy():
    """log_prob, cdf, icdf, entropy; mean nan and variance inf as PyTorch."""
    d = Cauchy(t64(LOC), t64(SCALE))
    x = np.array([-0.5, 2.2])
    close(d.log_prob(t64(x)), REF.logpdf(x)); close(d.cdf(t64(x)), REF.cdf(x))
    close(d.icdf(t64([0.1, 0.8])), REF.ppf([0.1, 0.8])); close(d.entropy(), REF.entropy())
    assert np.isnan(d.mean.numpy()).all() and np.isinf(d.variance.numpy()).all()
    close(d.mode, LOC)
    assert tp.autograd.gradgradcheck(lambda l, s: Cauchy(l, s).log_prob(t64(x)), (req(LOC), req(SCALE)))


def test_sampling_quantiles_and_gradient():
    """The quartiles of 20000 samples within 5 SEs (the moments do not exist); rsample differentiable."""
    tp.manual_seed(6)
    s = Cauchy(t64(LOC), t64(SCALE)).rsample((20000,)).numpy()
    for q in (0.25, 0.5, 0.75):
        frac = (s <= REF.ppf(q)).mean(0)
        assert np.all(np.abs(frac - q) <= 5 * np.sqrt(q * (1 - q) / 20000))
    f = seeded(lambda l, sc: Cauchy(l, sc).rsample((2,)))
    assert tp.autograd.gradcheck(f, (req(LOC), req(SCALE)))
