"""Gamma against scipy.stats.gamma."""
import numpy as np
import pytest
from scipy import stats

import tensorplug as tp
from tensorplug.distributions import Gamma

from ._helpers import check_scipy_moments, close, needs, req, seeded, t64

C, R = np.array([0.5, 2.0, 7.5]), np.array([1.0, 0.5, 3.0])
REF = stats.gamma(C, scale=1 / R)


def test_values_against_scipy():
    """log_prob, entropy, moments, mode."""
    d = Gamma(t64(C), t64(R))
    x = np.array([0.2, 3.0, 2.5])
    close(d.log_prob(t64(x)), REF.logpdf(x)); close(d.entropy(), REF.entropy())
    close(d.mean, REF.mean()); close(d.variance, REF.var()); close(d.mode, np.maximum((C - 1) / R, 0))


def test_log_prob_and_entropy_gradients():
    """log_prob and entropy differentiable in both parameters, twice."""
    x = t64([0.2, 3.0, 2.5])
    f = lambda c, r: Gamma(c, r).log_prob(x)
    assert tp.autograd.gradcheck(f, (req(C), req(R))) and tp.autograd.gradgradcheck(f, (req(C), req(R)))
    assert tp.autograd.gradcheck(lambda c, r: Gamma(c, r).entropy(), (req(C), req(R)))


def test_validation():
    """Negative values and non-positive parameters are rejected."""
    with pytest.raises(ValueError, match="to be within the support"):
        Gamma(1.0, 1.0).log_prob(tp.tensor(-1.0))
    with pytest.raises(ValueError, match="Expected parameter concentration"):
        Gamma(tp.tensor([-1.0]), tp.tensor([1.0]))
    assert Gamma(tp.ones(2), 1.0).expand((3, 2)).batch_shape == (3, 2)


@needs("_standard_gamma")
def test_sampling_and_reparameterised_gradient():
    """Moments of 20000 samples; rsample differentiable to concentration and rate."""
    tp.manual_seed(7)
    check_scipy_moments(Gamma(t64(C), t64(R)).rsample((20000,)), REF)
    f = seeded(lambda c, r: Gamma(c, r).rsample((2,)))
    assert tp.autograd.gradcheck(f, (req(C), req(R)), atol=1e-4, rtol=1e-3)
