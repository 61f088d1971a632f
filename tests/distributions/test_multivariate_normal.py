"""MultivariateNormal against scipy.stats.multivariate_normal (float64), its three
parameterisations, gradients through the Cholesky factorisation, and sampling moments."""
import numpy as np
import pytest
import scipy.stats as st

import tensorplug as tp
from tensorplug.distributions import MultivariateNormal

rng = np.random.default_rng(0)
A = rng.normal(size=(3, 3))
COV = A @ A.T + np.eye(3)
MU = rng.normal(size=3)


def _t(a):
    return tp.tensor(np.asarray(a, dtype=np.float64))


@pytest.mark.parametrize("kind", ["covariance_matrix", "precision_matrix", "scale_tril"])
def test_log_prob_entropy_and_matrices(kind):
    mat = {"covariance_matrix": COV, "precision_matrix": np.linalg.inv(COV),
           "scale_tril": np.linalg.cholesky(COV)}[kind]
    d = MultivariateNormal(_t(MU), **{kind: _t(mat)})
    x = rng.normal(size=(4, 3))
    ref = st.multivariate_normal(MU, COV)
    assert np.allclose(d.log_prob(_t(x)).numpy(), ref.logpdf(x), rtol=1e-12)
    assert np.isclose(d.entropy().item(), ref.entropy(), rtol=1e-12)
    assert np.allclose(d.covariance_matrix.numpy(), COV, atol=1e-12)
    assert np.allclose(d.precision_matrix.numpy(), np.linalg.inv(COV), atol=1e-12)
    assert np.allclose(d.scale_tril.numpy(), np.linalg.cholesky(COV), atol=1e-12)
    assert np.allclose(d.variance.numpy(), np.diag(COV)) and np.allclose(d.mean.numpy(), MU)


def test_batching_and_errors():
    covs = _t(np.stack([COV, 2 * COV]))
    d = MultivariateNormal(_t(MU), covariance_matrix=covs)
    assert d.batch_shape == (2,) and d.event_shape == (3,)
    x = rng.normal(size=(5, 1, 3))
    want = np.stack([st.multivariate_normal(MU, COV).logpdf(x[:, 0]),
                     st.multivariate_normal(MU, 2 * COV).logpdf(x[:, 0])], 1)
    assert np.allclose(d.log_prob(_t(x)).numpy(), want)
    e = d.expand((4, 2))
    assert e.batch_shape == (4, 2) and e.sample((6,)).shape == (6, 4, 2, 3)
    with pytest.raises(ValueError, match="Exactly one of"):
        MultivariateNormal(_t(MU), _t(COV), scale_tril=_t(COV))
    with pytest.raises(ValueError, match="at least one-dimensional"):
        MultivariateNormal(_t(1.0), _t(COV))
    with pytest.raises(ValueError, match="covariance_matrix"):
        MultivariateNormal(_t(MU), _t(-COV), validate_args=True)


def test_gradients_first_and_second_order():
    x = _t(rng.normal(size=(2, 3)))

    def f(loc, cov):
        sym = 0.5 * (cov + cov.mT)
        return MultivariateNormal(loc, covariance_matrix=sym).log_prob(x)
    args = (_t(MU).requires_grad_(), _t(COV).requires_grad_())
    assert tp.autograd.gradcheck(f, args) and tp.autograd.gradgradcheck(f, args)

    def g(loc, L):
        tp.manual_seed(0)
        return MultivariateNormal(loc, scale_tril=L.tril()).rsample((2,))
    assert tp.autograd.gradcheck(g, (_t(MU).requires_grad_(), _t(np.linalg.cholesky(COV)).requires_grad_()))


def test_sampling_moments():
    tp.manual_seed(0)
    n = 40000
    s = MultivariateNormal(_t(MU), _t(COV)).sample((n,)).numpy()
    # mean error is N(0, COV/n); 5 standard errors
    assert np.all(np.abs(s.mean(0) - MU) < 5 * np.sqrt(np.diag(COV) / n))
    assert np.allclose(np.cov(s.T), COV, atol=6 * np.sqrt(2 * np.max(np.diag(COV)) ** 2 / n))
