"""LKJCholesky: log_prob against the closed-form normaliser (row by row, each row a point of a unit
ball) and by numerical integration, the 2 x 2 case against SciPy's Beta, sampling statistics (every
off-diagonal correlation is a Beta(eta - 1 + d/2, eta - 1 + d/2) on (-1, 1)), and the corr_cholesky
bijection."""
import numpy as np
import pytest
import scipy.special as sp
import scipy.stats as st

import tensorplug as tp
from tensorplug.distributions import LKJCholesky, biject_to, constraints, transform_to, transforms

from ._helpers import check_moments, t64


def _log_normaliser(d, eta):
    # row i (1..d-1) holds w in the i-ball with density (1 - |w|^2)^b, b = eta - 1 + (d - 1 - i)/2:
    # its integral is pi^(i/2) Gamma(b + 1) / Gamma(b + 1 + i/2)
    total = 0.0
    for i in range(1, d):
        b = eta - 1 + (d - 1 - i) / 2
        total += i / 2 * np.log(np.pi) + sp.gammaln(b + 1) - sp.gammaln(b + 1 + i / 2)
    return total


@pytest.mark.parametrize("d", [2, 3, 5])
def test_normaliser_closed_form(d):
    etas = np.array([0.5, 1.0, 2.5])
    dist = LKJCholesky(d, t64(etas))
    eye = t64(np.broadcast_to(np.eye(d), (3, d, d)).copy())
    np.testing.assert_allclose(dist.log_prob(eye).numpy(), [-_log_normaliser(d, e) for e in etas], rtol=1e-12)


def test_2x2_is_scaled_beta():
    # L = [[1, 0], [r, sqrt(1 - r^2)]]: r has density Beta(eta, eta) on (-1, 1)
    r = np.array([-0.9, -0.3, 0.0, 0.45, 0.8])
    L = np.zeros((5, 2, 2))
    L[:, 0, 0], L[:, 1, 0], L[:, 1, 1] = 1.0, r, np.sqrt(1 - r ** 2)
    for eta in (0.7, 1.0, 3.0):
        want = st.beta(eta, eta, loc=-1, scale=2).logpdf(r)
        np.testing.assert_allclose(LKJCholesky(2, t64(eta)).log_prob(t64(L)).numpy(), want, rtol=1e-12)


def test_3x3_density_integrates_to_one():
    # free coordinates L10 = sin(a) and (L20, L21) = sin(f)(cos t, sin t): smooth integrands for
    # Gauss-Legendre in a, f and the (exact) trapezoid rule in t
    x, w = np.polynomial.legendre.leggauss(48)
    a, wa = x * np.pi / 2, w * np.pi / 2
    f, wf = (x + 1) * np.pi / 4, w * np.pi / 4
    t = np.linspace(0, 2 * np.pi, 8, endpoint=False)
    A, F, T = np.meshgrid(a, f, t, indexing="ij")
    L = np.zeros(A.shape + (3, 3))
    L[..., 0, 0] = 1
    L[..., 1, 0], L[..., 1, 1] = np.sin(A), np.cos(A)
    L[..., 2, 0], L[..., 2, 1], L[..., 2, 2] = np.sin(F) * np.cos(T), np.sin(F) * np.sin(T), np.cos(F)
    # Jacobians: dL10 = cos a da; dL20 dL21 = sin f cos f df dt
    jac = np.cos(A) * np.sin(F) * np.cos(F)
    weights = wa[:, None, None] * wf[None, :, None] * (2 * np.pi / 8)
    # integer 2 eta makes the integrands analytic (exponential convergence); 0.8 leaves an endpoint power
    for eta, tol in ((0.8, 1e-5), (1.0, 1e-10), (1.5, 1e-10), (2.0, 1e-10)):
        dens = np.exp(LKJCholesky(3, t64(eta), validate_args=False).log_prob(t64(L)).numpy())
        assert abs((dens * jac * weights).sum() - 1) < tol, eta


def test_sampling_marginals():
    tp.manual_seed(0)
    n = 20000
    for d, eta in ((3, 1.0), (4, 2.0), (5, 0.5)):
        L = LKJCholesky(d, t64(eta)).sample((n,))
        assert L.shape == (n, d, d) and bool(constraints.corr_cholesky.check(L).all())
        M = (L @ L.mT).numpy()
        np.testing.assert_allclose(np.diagonal(M, axis1=-2, axis2=-1), 1.0, atol=1e-12)
        b = eta - 1 + d / 2
        marg = st.beta(b, b, loc=-1, scale=2)
        i, j = np.tril_indices(d, -1)
        corr = M[:, i, j]
        mean, var, kurt = marg.stats(moments="mvk")
        check_moments(corr, mean, var, kurt)
        for k in range(corr.shape[1]):   # the whole law, not only two moments
            assert st.kstest(corr[:, k], marg.cdf).pvalue > 1e-4, (d, eta, k)


def test_batch_expand_and_errors():
    dist = LKJCholesky(3, t64([0.5, 2.0]))
    assert dist.batch_shape == (2,) and dist.event_shape == (3, 3)
    assert dist.sample((4,)).shape == (4, 2, 3, 3)
    e = dist.expand((5, 2))
    assert e.batch_shape == (5, 2) and e.sample().shape == (5, 2, 3, 3)
    x = dist.sample()
    np.testing.assert_allclose(e.log_prob(x).numpy(), np.broadcast_to(dist.log_prob(x).numpy(), (5, 2)))
    with pytest.raises(ValueError, match="greater than or equal to 2"):
        LKJCholesky(1)
    with pytest.raises(ValueError, match="concentration"):
        LKJCholesky(3, t64(-1.0), validate_args=True)
    with pytest.raises(ValueError, match="support"):
        LKJCholesky(2, validate_args=True).log_prob(t64([[1.0, 0.0], [0.5, 0.5]]))


def test_log_prob_gradient():
    L = LKJCholesky(3, t64(1.0)).sample()

    def f(eta):
        return LKJCholesky(3, eta).log_prob(L)
    args = (t64([0.7, 1.8]).requires_grad_(),)
    assert tp.autograd.gradcheck(f, args) and tp.autograd.gradgradcheck(f, args)


def test_corr_cholesky_bijection_pushes_lkj_forward():
    t = biject_to(constraints.corr_cholesky)
    assert isinstance(t, transforms.CorrCholeskyTransform)
    assert isinstance(transform_to(constraints.corr_cholesky), transforms.CorrCholeskyTransform)
    # 2 x 2: density of the unconstrained x is p(T(x)) |dT/dx|, which must integrate to one
    x = np.linspace(-20, 20, 4001)
    xs = t64(x[:, None])
    y = t(xs)
    log_q = LKJCholesky(2, t64(1.7)).log_prob(y) + t.log_abs_det_jacobian(xs, y)
    assert abs(np.trapezoid(np.exp(log_q.numpy()), x) - 1) < 1e-9
    inner = np.abs(x) <= 5       # beyond, tanh saturates in float64 and the inverse loses digits
    np.testing.assert_allclose(t.inv(y).numpy()[inner], x[inner, None], atol=1e-8)
