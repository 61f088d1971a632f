"""Exponential against scipy.stats.expon."""
import numpy as np
import pytest
from scipy import stats

import tensorplug as tp
from tensorplug.distributions import Exponential

from ._helpers import check_scipy_moments, close, req, seeded, t64

RATE = np.array([0.5, 2.0, 10.0])
REF = stats.expon(scale=1 / RATE)


def test_values_against_scipy():
    """log_prob, cdf, icdf, entropy, moments."""
    d = Exponential(t64(RATE))
    x = np.array([0.1, 1.0, 0.05])
    close(d.log_prob(t64(x)), REF.logpdf(x)); close(d.cdf(t64(x)), REF.cdf(x))
    close(d.icdf(t64([0.1, 0.5, 0.99])), REF.ppf([0.1, 0.5, 0.99]))
    close(d.entropy(), REF.entropy()); close(d.mean, REF.mean()); close(d.variance, REF.var())
    close(d.stddev, REF.std()); close(d.mode, 0.0)


def test_sampling_and_gradient():
    """Moments of 20000 samples; rsample and log_prob differentiable in the rate, twice."""
    tp.manual_seed(4)
    check_scipy_moments(Exponential(t64(RATE)).rsample((20000,)), REF)
    f = seeded(lambda r: Exponential(r).rsample((2,)))
    assert tp.autograd.gradcheck(f, (req(RATE),)) and tp.autograd.gradgradcheck(f, (req(RATE),))


def test_validation():
    """Negative values and non-positive rates are rejected."""
    with pytest.raises(ValueError, match="to be within the support"):
        Exponential(1.0).log_prob(tp.tensor(-1.0))
    with pytest.raises(ValueError, match="Expected parameter rate"):
        Exponential(tp.tensor([0.0]))
