"""ContinuousBernoulli (no SciPy counterpart): against its closed-form density and numerical
integration of it."""
import numpy as np
import pytest
from scipy import integrate

import tensorplug as tp
from tensorplug.distributions import ContinuousBernoulli

from ._helpers import check_moments, close, req, seeded, t64

LAMS = np.array([0.1, 0.3, 0.4995, 0.5, 0.7, 0.95])  # includes the Taylor region around 1/2


def pdf(x, lam):
    c = 2.0 if abs(lam - 0.5) < 1e-12 else 2 * np.arctanh(1 - 2 * lam) / (1 - 2 * lam)
    return c * lam ** x * (1 - lam) ** (1 - x)


def ref_stats(lam):
    mean = integrate.quad(lambda x: x * pdf(x, lam), 0, 1)[0]
    var = integrate.quad(lambda x: (x - mean) ** 2 * pdf(x, lam), 0, 1)[0]
    ent = -integrate.quad(lambda x: pdf(x, lam) * np.log(pdf(x, lam)), 0, 1)[0]
    return mean, var, ent


def test_density_normalises_and_matches_closed_form():
    """exp(log_prob) integrates to 1 and equals the closed-form density."""
    for lam in LAMS:
        d = ContinuousBernoulli(t64([lam]))
        x = np.array([0.0, 0.2, 0.75, 1.0])
        close(d.log_prob(t64(x)), np.log(pdf(x, lam)), rtol=1e-6)
        total = integrate.quad(lambda v: np.exp(d.log_prob(t64([v])).item()), 0, 1)[0]
        assert abs(total - 1) < 1e-6


def test_moments_entropy_cdf_icdf():
    """mean, variance, entropy by quadrature; cdf = integral of the density; icdf inverts cdf."""
    d = ContinuousBernoulli(t64(LAMS))
    refs = np.array([ref_stats(lam) for lam in LAMS])
    close(d.mean, refs[:, 0], rtol=1e-6); close(d.variance, refs[:, 1], rtol=1e-5)
    close(d.entropy(), refs[:, 2], rtol=1e-5, atol=1e-7)
    x = 0.35
    cdf_ref = [integrate.quad(lambda v: pdf(v, lam), 0, x)[0] for lam in LAMS]
    cdf = d.cdf(t64([x] * len(LAMS))).numpy()
    stable = np.abs(LAMS - 0.5) > 0.001
    close(cdf[stable], np.array(cdf_ref)[stable], rtol=1e-6)
    # inside lims PyTorch's cdf is the uniform one, exact to first order in |λ - 1/2|
    close(cdf[~stable], np.array(cdf_ref)[~stable], rtol=0, atol=1e-3)
    u = t64([0.3] * len(LAMS))
    close(d.cdf(d.icdf(u)), u.numpy(), rtol=1e-8)


def test_sampling_gradients_validation():
    """Moments of 20000 samples; rsample and log_prob differentiable; probs outside [0, 1] rejected."""
    tp.manual_seed(19)
    lams = np.array([0.2, 0.8])
    refs = np.array([ref_stats(lam) for lam in lams])
    s = ContinuousBernoulli(t64(lams)).rsample((20000,))
    # |x - mean| <= 1 on [0, 1], so excess kurtosis <= 1 / var^2 - 3: a safe bound for the variance check
    check_moments(s, refs[:, 0], refs[:, 1], 1 / refs[:, 1] ** 2)
    f = seeded(lambda p: ContinuousBernoulli(p).rsample((2,)))
    assert tp.autograd.gradcheck(f, (req(lams),))
    assert tp.autograd.gradgradcheck(lambda p: ContinuousBernoulli(p).log_prob(t64([0.3, 0.9])), (req(lams),))
    with pytest.raises(ValueError):
        ContinuousBernoulli(tp.tensor([1.5]), validate_args=True)
    lg = ContinuousBernoulli(logits=t64([0.0, 1.0]))
    close(lg.mean, [0.5, np.array(ref_stats(1 / (1 + np.exp(-1.0)))[0])], rtol=1e-6)
