"""Gamma against scipy.stats.gamma."""
import json
import pathlib

import numpy as np
import pytest
from scipy import stats

import tensorplug as tp
from tensorplug.distributions import Gamma

from ._helpers import check_scipy_moments, close, req, t64

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


def test_sampling_moments():
    """Moments of 20000 samples."""
    tp.manual_seed(7)
    check_scipy_moments(Gamma(t64(C), t64(R)).rsample((20000,)), REF)


def test_rsample_gradients_are_those_of_the_inverse_cdf():
    """d sample / d concentration (first and second order) equals the derivative of SciPy's gamma.ppf at
    the sample's fixed u = F(sample); d / d rate is -sample / rate (second: 2 sample / rate^2)."""
    tp.manual_seed(3)
    c, r = req(np.broadcast_to(C, (6, 3))), req(np.broadcast_to(R, (6, 3)))
    x = Gamma(c, r).rsample()
    gc, gr = tp.autograd.grad(x.sum(), (c, r), create_graph=True)
    gcc, = tp.autograd.grad(gc.sum(), c)
    grr, = tp.autograd.grad(gr.sum(), r)
    xv, cv, rv = x.detach().numpy(), c.detach().numpy(), r.detach().numpy()
    u = stats.gamma.cdf(xv * rv, cv)
    h1, h2 = 1e-6 * cv, 1e-4 * cv
    ppf = lambda cc: stats.gamma.ppf(u, cc) / rv
    close(gc, (ppf(cv + h1) - ppf(cv - h1)) / (2 * h1), rtol=1e-7, atol=0)
    close(gcc, (ppf(cv + h2) - 2 * ppf(cv) + ppf(cv - h2)) / h2 ** 2, rtol=1e-4, atol=1e-9)
    close(gr, -xv / rv, rtol=1e-12); close(grr, 2 * xv / rv ** 2, rtol=1e-12)


def test_standard_gamma_grad_matches_pytorch():
    """_standard_gamma_grad at fixed (alpha, x) agrees with PyTorch's values (PyTorch approximates it, to
    ~6e-5 here) and with central differences of gamma.ppf (exact here)."""
    ref = json.loads((pathlib.Path(__file__).parent / "fixtures" / "reparam_grads.json").read_text())["gamma"]
    a, x = np.array(ref["alpha"]), np.array(ref["x"])
    g = tp._standard_gamma_grad(t64(a), t64(x))
    close(g, ref["grad"], rtol=1e-4, atol=0)
    u, h = stats.gamma.cdf(x, a), 1e-6 * a
    close(g, (stats.gamma.ppf(u, a + h) - stats.gamma.ppf(u, a - h)) / (2 * h), rtol=1e-8, atol=0)


def test_cdf_against_scipy():
    """cdf is gammainc(concentration, rate x), differentiable in value and rate; Chi2 inherits it."""
    d = Gamma(t64(C), t64(R))
    x = np.array([0.2, 3.0, 2.5])
    close(d.cdf(t64(x)), REF.cdf(x), rtol=1e-12)
    assert tp.autograd.gradcheck(lambda v, r: Gamma(t64(C), r).cdf(v), (req(x), req(R)))
    with pytest.raises(ValueError, match="to be within the support"):
        d.cdf(t64([-1.0, 1.0, 1.0]))
    assert np.isnan(Gamma(t64([2.0]), t64([3.0]), validate_args=False).cdf(t64([-1.0])).item())
