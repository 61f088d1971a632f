"""Uniform against scipy.stats.uniform."""
import numpy as np
import pytest
from scipy import stats

import tensorplug as tp
from tensorplug.distributions import Uniform

from ._helpers import check_scipy_moments, close, req, seeded, t64

LO, HI = np.array([0.0, -2.0]), np.array([1.0, 3.0])
REF = stats.uniform(LO, HI - LO)


def test_values_against_scipy():
    """log_prob, cdf (clamped), icdf, entropy, moments."""
    d = Uniform(t64(LO), t64(HI))
    x = np.array([0.3, 2.5])
    close(d.log_prob(t64(x)), REF.logpdf(x)); close(d.cdf(t64(x)), REF.cdf(x))
    close(d.icdf(t64([0.25, 0.9])), REF.ppf([0.25, 0.9]))
    close(d.entropy(), REF.entropy()); close(d.mean, REF.mean()); close(d.variance, REF.var())
    close(d.stddev, REF.std()); assert np.isnan(d.mode.numpy()).all()


def test_sampling_and_gradient():
    """20000 samples in [low, high) with the right moments; rsample differentiable to both ends."""
    tp.manual_seed(3)
    s = Uniform(t64(LO), t64(HI)).rsample((20000,))
    assert (s.numpy() >= LO).all() and (s.numpy() < HI).all()
    check_scipy_moments(s, REF)
    f = seeded(lambda a, b: Uniform(a, b).rsample((3,)))
    assert tp.autograd.gradcheck(f, (req(LO), req(HI))) and tp.autograd.gradgradcheck(f, (req(LO), req(HI)))


def test_validation():
    """low >= high and values outside the support are rejected with PyTorch's messages."""
    with pytest.raises(ValueError, match="^Uniform is not defined when low>= high$"):
        Uniform(tp.tensor([1.0]), tp.tensor([1.0]))
    with pytest.raises(ValueError, match="to be within the support"):
        Uniform(0.0, 1.0).log_prob(tp.tensor(1.5))
    assert Uniform(0.0, 1.0, validate_args=False).log_prob(tp.tensor(1.5)).item() == float("-inf")
    assert Uniform(tp.zeros(2), 1.0).expand((3, 2)).sample().shape == (3, 2)
