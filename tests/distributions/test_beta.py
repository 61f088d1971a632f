"""Beta against scipy.stats.beta."""
import numpy as np
import pytest
from scipy import stats

import tensorplug as tp
from tensorplug.distributions import Beta

from ._helpers import check_scipy_moments, close, req, t64

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


def test_sampling_moments():
    """Moments of 20000 samples."""
    tp.manual_seed(9)
    check_scipy_moments(Beta(t64(A), t64(B)).rsample((20000,)), REF)


def test_rsample_gradients_are_those_of_the_inverse_cdf():
    """d sample / d concentration1 and concentration0 (first and second order, through Dirichlet's
    reparameterised gradient) equal the derivatives of SciPy's beta.ppf at the sample's fixed u."""
    tp.manual_seed(4)
    a, b = req(np.broadcast_to(A, (6, 3))), req(np.broadcast_to(B, (6, 3)))
    x = Beta(a, b).rsample()
    ga, gb = tp.autograd.grad(x.sum(), (a, b), create_graph=True)
    gaa, = tp.autograd.grad(ga.sum(), a, retain_graph=True)
    gbb, = tp.autograd.grad(gb.sum(), b)
    xv, av, bv = x.detach().numpy(), a.detach().numpy(), b.detach().numpy()
    u = stats.beta.cdf(xv, av, bv)
    for g, gg, p, shift in ((ga, gaa, av, lambda h: (av + h, bv)), (gb, gbb, bv, lambda h: (av, bv + h))):
        ppf = lambda h: stats.beta.ppf(u, *shift(h))
        h1, h2 = 1e-6 * p, 1e-4 * p
        close(g, (ppf(h1) - ppf(-h1)) / (2 * h1), rtol=1e-6, atol=1e-12)
        close(gg, (ppf(h2) - 2 * ppf(0) + ppf(-h2)) / h2 ** 2, rtol=1e-4, atol=1e-7)
