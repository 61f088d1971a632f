"""Beta against scipy.stats.beta."""
import numpy as np
import pytest
from scipy import stats

import tensorplug as tp
from tensorplug.distributions import Beta

from ._helpers import check_scipy_moments, close, needs, req, seeded, t64

A, B = np.array([0.5, 2.0, 5.0]), np.array([0.5, 3.0, 1.5])
REF = stats.beta(A, B)


def test_values_against_scipy():
    """log_prob, entropy, moments, mode (for a, b > 1)."""
    d = Beta(t64(A), t64(B))
    x = np.array([0.1, 0.4, 0.95])
    close(d.log_prob(t64(x)), REF.logpdf(x)); close(d.entropy(), REF.entropy())
    close(d.mean, REF.mean()); close(d.variance, REF.var())
    close(d.mode[1], (A[1] - 1) / (A[1] + B[1] - 2))
    close(d.concentration1, A); close(d.concentration0, B)
    assert Beta(2.0, 3.0).batch_shape == () and Beta(t64(A), t64(B)).expand((2, 3)).batch_shape == (2, 3)


def test_gradients_and_validation():
    """log_prob and entropy differentiable in both concentrations; out-of-support rejected."""
    x = t64([0.1, 0.4, 0.95])
    assert tp.autograd.gradgradcheck(lambda a, b: Beta(a, b).log_prob(x), (req(A), req(B)))
    assert tp.autograd.gradcheck(lambda a, b: Beta(a, b).entropy(), (req(A), req(B)))
    with pytest.raises(ValueError, match="to be within the support"):
        Beta(2.0, 2.0).log_prob(tp.tensor(1.5))


@needs("_sample_dirichlet")
def test_sampling_and_reparameterised_gradient():
    """Moments of 20000 samples; rsample differentiable to both concentrations."""
    tp.manual_seed(9)
    check_scipy_moments(Beta(t64(A), t64(B)).rsample((20000,)), REF)
    f = seeded(lambda a, b: Beta(a, b).rsample((2,)))
    assert tp.autograd.gradcheck(f, (req(A), req(B)), atol=1e-4, rtol=1e-3)
