"""LowRankMultivariateNormal against scipy.stats.multivariate_normal with the full covariance
W W^T + diag(D) (float64), its derived matrices, broadcasting, gradients of log_prob and rsample,
and sampling moments."""
import numpy as np
import pytest
import scipy.stats as st

import tensorplug as tp
from tensorplug.distributions import LowRankMultivariateNormal

from ._helpers import seeded, t64

rng = np.random.default_rng(0)
W = rng.normal(size=(4, 2))
D = rng.uniform(0.5, 2.0, size=4)
MU = rng.normal(size=4)
COV = W @ W.T + np.diag(D)


def test_log_prob_entropy_and_matrices():
    d = LowRankMultivariateNormal(t64(MU), t64(W), t64(D))
    x = rng.normal(size=(5, 4))
    ref = st.multivariate_normal(MU, COV)
    np.testing.assert_allclose(d.log_prob(t64(x)).numpy(), ref.logpdf(x), rtol=1e-12)
    assert np.isclose(d.entropy().item(), ref.entropy(), rtol=1e-12)
    np.testing.assert_allclose(d.covariance_matrix.numpy(), COV, atol=1e-13)
    np.testing.assert_allclose(d.precision_matrix.numpy(), np.linalg.inv(COV), atol=1e-12)
    np.testing.assert_allclose(d.scale_tril.numpy(), np.linalg.cholesky(COV), atol=1e-12)
    np.testing.assert_allclose(d.variance.numpy(), np.diag(COV), rtol=1e-13)
    np.testing.assert_allclose(d.stddev.numpy(), np.sqrt(np.diag(COV)), rtol=1e-13)
    assert np.array_equal(d.mean.numpy(), MU) and np.array_equal(d.mode.numpy(), MU)
    assert d.batch_shape == () and d.event_shape == (4,) and d.has_rsample


def test_broadcasting_and_expand():
    Ws = np.stack([W, 0.5 * W, -W])                        # batch (3,)
    d = LowRankMultivariateNormal(t64(MU), t64(Ws), t64(D))
    assert d.batch_shape == (3,) and d.loc.shape == (3, 4) and d.cov_diag.shape == (3, 4)
    x = rng.normal(size=(2, 1, 4))
    want = np.stack([st.multivariate_normal(MU, w @ w.T + np.diag(D)).logpdf(x[:, 0]) for w in Ws], 1)
    np.testing.assert_allclose(d.log_prob(t64(x)).numpy(), want, rtol=1e-12)
    np.testing.assert_allclose(d.entropy().numpy(),
                               [st.multivariate_normal(MU, w @ w.T + np.diag(D)).entropy() for w in Ws], rtol=1e-12)
    e = d.expand((2, 3))
    assert e.batch_shape == (2, 3) and e.rsample((5,)).shape == (5, 2, 3, 4)
    np.testing.assert_allclose(e.log_prob(t64(x)).numpy(), np.broadcast_to(want, (2, 3)), rtol=1e-12)


def test_errors():
    with pytest.raises(ValueError, match="loc must be at least one-dimensional"):
        LowRankMultivariateNormal(t64(1.0), t64(W), t64(D))
    with pytest.raises(ValueError, match="cov_factor must be at least two-dimensional"):
        LowRankMultivariateNormal(t64(MU), t64(D), t64(D))
    with pytest.raises(ValueError, match="cov_factor must be a batch of matrices with shape 4 x m"):
        LowRankMultivariateNormal(t64(MU), t64(W[:3]), t64(D))
    with pytest.raises(ValueError, match="cov_diag must be a batch of vectors"):
        LowRankMultivariateNormal(t64(MU), t64(W), t64(D[:3]))
    with pytest.raises(ValueError, match="Incompatible batch shapes"):
        LowRankMultivariateNormal(t64(np.zeros((2, 4))), t64(np.zeros((3, 4, 2))), t64(D))
    with pytest.raises(ValueError, match="cov_diag"):
        LowRankMultivariateNormal(t64(MU), t64(W), t64(-D), validate_args=True)


def test_gradients():
    x = t64(rng.normal(size=(3, 4)))

    def f(loc, w, diag):
        return LowRankMultivariateNormal(loc, w, diag).log_prob(x)
    args = (t64(MU).requires_grad_(), t64(W).requires_grad_(), t64(D).requires_grad_())
    assert tp.autograd.gradcheck(f, args) and tp.autograd.gradgradcheck(f, args)

    def g(loc, w, diag):
        return LowRankMultivariateNormal(loc, w, diag).rsample((2,))
    assert tp.autograd.gradcheck(seeded(g), args)

    def h(loc, w, diag):
        return LowRankMultivariateNormal(loc, w, diag).entropy()
    assert tp.autograd.gradcheck(h, args) and tp.autograd.gradgradcheck(h, args)


def test_sampling_moments():
    tp.manual_seed(0)
    n = 40000
    s = LowRankMultivariateNormal(t64(MU), t64(W), t64(D)).sample((n,)).numpy()
    # mean error ~ N(0, COV / n); covariance entries have SD sqrt((S_ij^2 + S_ii S_jj) / n)
    assert np.all(np.abs(s.mean(0) - MU) < 5 * np.sqrt(np.diag(COV) / n))
    se = np.sqrt((COV ** 2 + np.outer(np.diag(COV), np.diag(COV))) / n)
    assert np.all(np.abs(np.cov(s.T) - COV) < 5 * se)
