"""Binomial against scipy.stats.binom."""
import numpy as np
import pytest
from scipy import stats

import tensorplug as tp
from tensorplug.distributions import Binomial

from ._helpers import check_scipy_moments, close, req, t64

N, P = np.array([10.0, 10.0, 25.0]), np.array([0.2, 0.5, 0.9])
REF = stats.binom(N, P)


def test_values_against_scipy():
    """log_prob (probs and logits), entropy, moments, mode, enumerate_support."""
    for d in (Binomial(t64(N), t64(P)), Binomial(t64(N), logits=t64(np.log(P / (1 - P))))):
        for k in (0.0, 3.0, 10.0):
            close(d.log_prob(t64([k] * 3)), REF.logpmf(k), rtol=1e-9)
        close(d.mean, REF.mean()); close(d.variance, REF.var())
    d = Binomial(10, t64(P))
    close(d.entropy(), stats.binom(10, P).entropy(), rtol=1e-9)
    close(d.mode, np.minimum(np.floor(11 * P), 10))
    assert d.enumerate_support().shape == (11, 3)
    with pytest.raises(NotImplementedError, match="Inhomogeneous total count not supported by `enumerate_support`."):
        Binomial(t64(N), t64(P)).enumerate_support()


def test_gradient_and_validation():
    """log_prob differentiable in probs; values above total_count rejected."""
    # (not at p = 1/2: there the second derivative of the stable log-normaliser has the kink of abs,
    # in PyTorch too)
    assert tp.autograd.gradgradcheck(lambda p: Binomial(10, p).log_prob(t64([2.0, 5.0, 9.0])), (req([0.2, 0.45, 0.9]),))
    with pytest.raises(ValueError, match="to be within the support"):
        Binomial(10, t64(P)).log_prob(t64([11.0, 0.0, 0.0]))
    with pytest.raises(ValueError, match="Expected parameter total_count"):
        Binomial(t64([-1.0]), t64([0.5]))
    assert Binomial(10, t64(P)).expand((2, 3)).total_count.shape == (2, 3)


def test_sampling():
    """Moments of 20000 samples."""
    tp.manual_seed(14)
    check_scipy_moments(Binomial(t64(N), t64(P)).sample((20000,)), REF)
