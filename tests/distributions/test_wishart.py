"""Wishart against scipy.stats.wishart (float64): log_prob, entropy, mean, variance, mode in all
three parameterisations and batched; Bartlett sampling by exact laws (X_00 / S_00 ~ Chi2(df),
E log det(S^-1 X) = sum digamma((df - i)/2) + p log 2) and moments; the singular-sample redraw."""
import warnings

import numpy as np
import pytest
import scipy.special as sp
import scipy.stats as st

import tensorplug as tp
from tensorplug.distributions import Wishart

from ._helpers import seeded, t64

rng = np.random.default_rng(1)
A = rng.normal(size=(3, 3))
S = A @ A.T + np.eye(3)
DF = 4.5


@pytest.mark.parametrize("kind", ["covariance_matrix", "precision_matrix", "scale_tril"])
def test_against_scipy(kind):
    mat = {"covariance_matrix": S, "precision_matrix": np.linalg.inv(S), "scale_tril": np.linalg.cholesky(S)}[kind]
    d = Wishart(t64(DF), **{kind: t64(mat)})
    ref = st.wishart(DF, S)
    X = ref.rvs(4, random_state=2)
    np.testing.assert_allclose(d.log_prob(t64(X)).numpy(), ref.logpdf(X.transpose(1, 2, 0)), rtol=1e-12)
    assert np.isclose(d.entropy().item(), ref.entropy(), rtol=1e-12)
    np.testing.assert_allclose(d.mean.numpy(), ref.mean(), rtol=1e-12)
    np.testing.assert_allclose(d.variance.numpy(), ref.var(), rtol=1e-12)
    np.testing.assert_allclose(d.mode.numpy(), ref.mode(), rtol=1e-12)
    for name, want in (("covariance_matrix", S), ("precision_matrix", np.linalg.inv(S)),
                       ("scale_tril", np.linalg.cholesky(S))):
        np.testing.assert_allclose(getattr(d, name).numpy(), want, rtol=1e-10, atol=1e-12)


def test_batched_df_and_scale():
    dfs = np.array([3.5, 6.0])
    d = Wishart(t64(dfs), covariance_matrix=t64(S))
    assert d.batch_shape == (2,) and d.event_shape == (3, 3)
    X = st.wishart(5, S).rvs(3, random_state=3)                      # (3, 3, 3): a sample dim
    got = d.log_prob(t64(X[:, None])).numpy()
    want = np.stack([st.wishart(v, S).logpdf(X.transpose(1, 2, 0)) for v in dfs], 1)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    np.testing.assert_allclose(d.entropy().numpy(), [st.wishart(v, S).entropy() for v in dfs], rtol=1e-12)
    # mode is undefined (nan) for df <= p + 1, as in PyTorch
    m = d.mode.numpy()
    assert np.isnan(m[0]).all() and np.allclose(m[1], (6.0 - 4) * S)
    e = d.expand((4, 2))
    assert e.batch_shape == (4, 2) and e.sample((5,)).shape == (5, 4, 2, 3, 3)
    np.testing.assert_allclose(e.log_prob(t64(X[0])).numpy(), np.broadcast_to(d.log_prob(t64(X[0])).numpy(), (4, 2)))


def test_errors_and_warnings():
    with pytest.raises(AssertionError, match="Exactly one of"):
        Wishart(t64(4.0), covariance_matrix=t64(S), scale_tril=t64(S))
    with pytest.raises(ValueError, match="at least two-dimensional"):
        Wishart(t64(4.0), covariance_matrix=t64([1.0, 2.0]))
    with pytest.raises(ValueError, match=r"Value of df=2.0 expected to be greater than ndim - 1 = 2"):
        Wishart(2.0, covariance_matrix=t64(S))
    with pytest.warns(UserWarning, match="Low df values detected"):
        Wishart(2.5, covariance_matrix=t64(S))
    with pytest.raises(ValueError, match="covariance_matrix"):
        Wishart(t64(4.0), covariance_matrix=t64(-S), validate_args=True)
    with pytest.raises(ValueError, match="support"):
        Wishart(t64(4.0), covariance_matrix=t64(S), validate_args=True).log_prob(t64(-S))


def test_bartlett_sampling_laws():
    tp.manual_seed(0)
    n = 20000
    d = Wishart(t64(DF), covariance_matrix=t64(S))
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # no spurious "Singular sample detected." (PyTorch 2.13 warns)
        X = d.sample((n,)).numpy()
    assert X.shape == (n, 3, 3) and np.allclose(X, X.transpose(0, 2, 1))
    # exact marginal law of a diagonal entry
    assert st.kstest(X[:, 0, 0] / S[0, 0], st.chi2(DF).cdf).pvalue > 1e-4
    assert st.kstest(X[:, 2, 2] / S[2, 2], st.chi2(DF).cdf).pvalue > 1e-4
    # the determinant factorises into independent chi-squares: log det(S^-1 X) = sum_i log Chi2(df - i)
    logdet = np.linalg.slogdet(np.linalg.solve(S, X))[1]
    mean = sum(sp.digamma((DF - i) / 2) for i in range(3)) + 3 * np.log(2)
    var = sum(sp.polygamma(1, (DF - i) / 2) for i in range(3))
    assert abs(logdet.mean() - mean) < 5 * np.sqrt(var / n)
    # entry means within 5 standard errors
    ref = st.wishart(DF, S)
    assert np.all(np.abs(X.mean(0) - ref.mean()) < 5 * np.sqrt(ref.var() / n))


def test_rsample_gradients():
    L = np.linalg.cholesky(S)
    # the scale enters the Bartlett construction linearly: pathwise gradients match finite differences
    f = seeded(lambda tril: Wishart(t64(DF), scale_tril=tril.tril()).rsample((2,)))
    assert tp.autograd.gradcheck(f, (t64(L).requires_grad_(),))
    # df enters through the Chi2 draws (implicit reparameterisation, not a fixed-seed path), so check
    # the estimator: d/d df E[tr X] = tr S and d/d df E[X_00^2] = 2 (df + 1) S_00^2, per-sample gradients
    tp.manual_seed(1)
    n = 20000
    df = t64(np.full(n, DF)).requires_grad_()
    X = Wishart(df, scale_tril=t64(L)).rsample()
    g_tr, = tp.autograd.grad(X.diagonal(dim1=-2, dim2=-1).sum(), df, retain_graph=True)
    g_sq, = tp.autograd.grad(X[:, 0, 0].pow(2).sum(), df)
    for g, want in ((g_tr.numpy(), np.trace(S)), (g_sq.numpy(), 2 * (DF + 1) * S[0, 0] ** 2)):
        assert abs(g.mean() - want) < 5 * g.std() / np.sqrt(n), (g.mean(), want)
    args = (t64(DF).requires_grad_(), t64(L).requires_grad_())

    def g(df, tril):
        X = t64(st.wishart(5, S).rvs(2, random_state=4))
        return Wishart(df, scale_tril=tril.tril()).log_prob(X)
    assert tp.autograd.gradcheck(g, args) and tp.autograd.gradgradcheck(g, args)
    assert tp.autograd.gradcheck(lambda df, tril: Wishart(df, scale_tril=tril.tril()).entropy(), args)


def test_singular_samples_are_redrawn():
    d = Wishart(t64([4.0, 5.0]), covariance_matrix=t64(np.eye(2)))
    good = t64(np.broadcast_to(np.eye(2), (3, 2, 2, 2)).copy())
    bad = good.clone()
    bad[1, 0] = t64(np.zeros((2, 2)))                   # sample index 1: one singular matrix in its batch
    draws = []

    def fake(sample_shape=()):
        draws.append(tuple(sample_shape))
        return bad if len(draws) == 1 else 2 * good
    d._bartlett_sampling = fake
    with pytest.warns(UserWarning, match="Singular sample detected."):
        out = d.rsample((3,)).numpy()
    # only sample index 1 (its whole batch) is replaced, after one redraw
    assert len(draws) == 2
    np.testing.assert_array_equal(out[1], 2 * np.broadcast_to(np.eye(2), (2, 2, 2)))
    np.testing.assert_array_equal(out[[0, 2]], np.broadcast_to(np.eye(2), (2, 2, 2, 2)))
    # a sample that stays singular is returned after max_try_correction redraws
    draws.clear()
    d._bartlett_sampling = lambda sample_shape=(): draws.append(1) or bad
    with pytest.warns(UserWarning, match="Singular sample detected."):
        out = d.rsample((3,), max_try_correction=4).numpy()
    assert len(draws) == 5 and np.array_equal(out[1, 0], np.zeros((2, 2)))
