"""Normal against scipy.stats.norm; sampling statistics; gradients."""
import numpy as np
import pytest
from scipy import stats

import tensorplug as tp
from tensorplug.distributions import Normal

from ._helpers import check_moments, close, req, seeded, t64

LOC, SCALE = np.array([0.5, -1.0, 3.0]), np.array([0.7, 2.0, 0.1])
X = np.array([0.1, -3.0, 3.05])


def test_values_against_scipy():
    """log_prob, cdf, icdf, entropy, moments as scipy.stats.norm."""
    d, ref = Normal(t64(LOC), t64(SCALE)), stats.norm(LOC, SCALE)
    close(d.log_prob(t64(X)), ref.logpdf(X))
    close(d.cdf(t64(X)), ref.cdf(X))
    close(d.icdf(t64([0.1, 0.5, 0.99])), ref.ppf([0.1, 0.5, 0.99]), rtol=1e-8)
    close(d.entropy(), ref.entropy())
    close(d.mean, ref.mean()); close(d.mode, LOC); close(d.variance, ref.var()); close(d.stddev, ref.std())


def test_sampling_statistics():
    """Mean and variance of 20000 samples within 5 standard errors."""
    tp.manual_seed(0)
    d = Normal(t64(LOC), t64(SCALE))
    for s in (d.sample((20000,)), d.rsample((20000,))):
        assert s.shape == (20000, 3) and s.dtype == tp.float64
        check_moments(s, LOC, SCALE ** 2, 0.0)


def test_rsample_and_log_prob_gradients():
    """rsample and log_prob are differentiable to both parameters, twice."""
    loc, scale = req(LOC), req(SCALE)
    f = seeded(lambda l, s: Normal(l, s).rsample((2,)))
    assert tp.autograd.gradcheck(f, (loc, scale)) and tp.autograd.gradgradcheck(f, (loc, scale))
    g = lambda l, s: Normal(l, s).log_prob(t64(X))
    assert tp.autograd.gradcheck(g, (loc, scale)) and tp.autograd.gradgradcheck(g, (loc, scale))


def test_float32_default_and_expand():
    """float32 parameters by default; expand broadcasts the parameters."""
    d = Normal(tp.zeros(3), 1.0)
    assert d.sample().dtype == tp.float32 and d.scale.shape == (3,)
    e = d.expand((2, 3))
    assert e.sample().shape == (2, 3)
    close(e.log_prob(tp.zeros(2, 3)), np.full((2, 3), stats.norm.logpdf(0.0)), rtol=1e-6)


def test_invalid_arguments():
    """A non-positive scale is rejected; any real value is in the support."""
    with pytest.raises(ValueError, match="Expected parameter scale"):
        Normal(0.0, 0.0)
    assert np.isfinite(Normal(0.0, 1.0).log_prob(tp.tensor(1e3)).item())
