"""Dirichlet against scipy.stats.dirichlet."""
import json
import pathlib

import numpy as np
import pytest
from scipy import stats

import tensorplug as tp
from tensorplug.distributions import Dirichlet

from ._helpers import check_moments, close, req, t64

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


def test_sampling_moments():
    """Moments of 20000 samples per coordinate (Beta marginals)."""
    tp.manual_seed(10)
    s = Dirichlet(t64(ALPHA)).rsample((20000,))
    a0 = ALPHA.sum()
    marg = stats.beta(ALPHA, a0 - ALPHA)
    check_moments(s, marg.mean(), marg.var(), marg.stats(moments="k"))


def _jacobian(alpha, x):
    """Rows i: d x_i / d alpha of rsample's output x, for a batch of samples (one alpha row each)."""
    return np.stack([tp.autograd.grad(x[..., i].sum(), alpha, retain_graph=True)[0].numpy()
                     for i in range(x.shape[-1])], -2)


def test_rsample_jacobian_matches_pytorch_at_fixed_samples(monkeypatch):
    """With the sampler returning fixed points, d x_i / d alpha_j equals PyTorch's (which approximates
    _dirichlet_grad, to ~6e-4 here); the diagonal equals the derivative of the Beta(alpha_j, total -
    alpha_j) marginal's ppf, and each column sums to 0 (x stays on the simplex)."""
    ref = json.loads((pathlib.Path(__file__).parent / "fixtures" / "reparam_grads.json").read_text())
    for case in ref["dirichlet"]:
        a, x = np.array(case["alpha"]), np.array(case["x"])
        monkeypatch.setattr(tp, "_sample_dirichlet", lambda c, x=x: t64(x))
        alpha = req(a)
        jac = _jacobian(alpha, Dirichlet(alpha).rsample())
        close(jac, case["jacobian"], rtol=1e-3, atol=1e-9)
        b, h = a.sum() - a, 1e-6 * a
        u = stats.beta.cdf(x, a, b)
        close(np.diag(jac), (stats.beta.ppf(u, a + h, b) - stats.beta.ppf(u, a - h, b)) / (2 * h), rtol=1e-7, atol=0)
        close(jac.sum(0), 0.0, rtol=0, atol=1e-15)


def test_rsample_gradient_is_unbiased_and_differentiable_twice():
    """The mean of d x_i / d alpha_j over 4000 samples is d E[x_i] / d alpha_j = (delta_ij a0 - alpha_i) /
    a0^2 within 5 standard errors; d^2 x_j / d alpha_j^2 equals the second derivative of the marginal's ppf."""
    tp.manual_seed(5)
    n = 4000
    alpha = req(np.broadcast_to(ALPHA, (n, 3)))
    x = Dirichlet(alpha).rsample()
    jac = _jacobian(alpha, x)                                  # (n, i, j)
    a0 = ALPHA.sum()
    expected = (np.eye(3) * a0 - ALPHA[:, None]) / a0 ** 2
    se = jac.std(0) / np.sqrt(n)
    assert np.all(np.abs(jac.mean(0) - expected) <= 5 * se + 1e-12), (jac.mean(0), expected)
    m = 5                                                         # second order on a few of them
    al = req(np.broadcast_to(ALPHA, (m, 3)))
    xs = Dirichlet(al).rsample()
    g, = tp.autograd.grad((xs * t64(np.eye(3)[0])).sum(), al, create_graph=True)     # d x_0 / d alpha
    g2, = tp.autograd.grad(g[:, 0].sum(), al)                                           # d^2 x_0 / d alpha_0^2
    a, b, xv = ALPHA[0], a0 - ALPHA[0], xs.detach().numpy()[:, 0]
    u, h = stats.beta.cdf(xv, a, b), 1e-4 * a
    fd = (stats.beta.ppf(u, a + h, b) - 2 * stats.beta.ppf(u, a, b) + stats.beta.ppf(u, a - h, b)) / h ** 2
    close(g2[:, 0], fd, rtol=1e-4, atol=1e-7)
