"""Dirichlet against scipy.stats.dirichlet."""
import numpy as np
import pytest
from scipy import stats

import tensorplug as tp
from tensorplug.distributions import Dirichlet

from ._helpers import check_moments, close, needs, req, seeded, t64

ALPHA = np.array([0.7, 2.0, 4.5])
REF = stats.dirichlet(ALPHA)


def test_values_against_scipy():
    """log_prob, entropy, mean, variance, mode; batch and event shapes."""
    d = Dirichlet(t64(ALPHA))
    x = np.array([0.2, 0.3, 0.5])
    assert d.batch_shape == () and d.event_shape == (3,)
    close(d.log_prob(t64(x)), REF.logpdf(x)); close(d.entropy(), REF.entropy())
    close(d.mean, REF.mean()); close(d.variance, REF.var())
    close(Dirichlet(t64([2.0, 3.0, 5.0])).mode, (np.array([2.0, 3.0, 5.0]) - 1) / 7)
    close(Dirichlet(t64([0.5, 0.9, 0.2])).mode, [1.0, 0.0, 0.0], rtol=0)  # all < 1: a vertex, as PyTorch
    b = Dirichlet(t64(np.stack([ALPHA, ALPHA[::-1]])))
    assert b.batch_shape == (2,) and b.log_prob(t64(x)).shape == (2,)
    assert b.expand((4, 2)).concentration.shape == (4, 2, 3)


def test_gradients_and_validation():
    """log_prob differentiable twice; off-simplex values and 0-d concentration rejected."""
    x = t64([0.2, 0.3, 0.5])
    assert tp.autograd.gradgradcheck(lambda a: Dirichlet(a).log_prob(x), (req(ALPHA),))
    assert tp.autograd.gradcheck(lambda a: Dirichlet(a).entropy(), (req(ALPHA),))
    with pytest.raises(ValueError, match="to be within the support"):
        Dirichlet(t64(ALPHA)).log_prob(t64([0.2, 0.3, 0.6]))
    with pytest.raises(ValueError, match="`concentration` parameter must be at least one-dimensional."):
        Dirichlet(tp.tensor(1.0))


@needs("_sample_dirichlet")
def test_sampling_and_reparameterised_gradient():
    """Moments of 20000 samples per coordinate (Beta marginals); rsample differentiable."""
    tp.manual_seed(10)
    s = Dirichlet(t64(ALPHA)).rsample((20000,))
    a0 = ALPHA.sum()
    marg = stats.beta(ALPHA, a0 - ALPHA)
    check_moments(s, marg.mean(), marg.var(), marg.stats(moments="k"))
    f = seeded(lambda a: Dirichlet(a).rsample((2,)))
    assert tp.autograd.gradcheck(f, (req(ALPHA),), atol=1e-4, rtol=1e-3)
