"""tensorplug.distributions.transforms: inverse round trips, log|det J| against a finite-difference
Jacobian (float64), shapes, caching, and biject_to / transform_to."""
import numpy as np
import pytest

import tensorplug as tp
from tensorplug.distributions import constraints as C
from tensorplug.distributions import transforms as T
from tensorplug.distributions import biject_to, transform_to


def _t(a):
    return tp.tensor(np.asarray(a, dtype=np.float64))


def _fd_logdet(f, x, out_index=None):
    """log|det| of the finite-difference Jacobian of f at the flat point x (float64)."""
    x = np.asarray(x, dtype=np.float64)
    eps = 1e-6
    cols = []
    for i in range(x.size):
        d = np.zeros_like(x).ravel(); d[i] = eps; d = d.reshape(x.shape)
        yp = f(_t(x + d)).numpy().ravel(); ym = f(_t(x - d)).numpy().ravel()
        if out_index is not None:
            yp, ym = yp[out_index], ym[out_index]
        cols.append((yp - ym) / (2 * eps))
    return np.linalg.slogdet(np.stack(cols, 1))[1]


SCALAR = [T.ExpTransform(), T.SigmoidTransform(), T.TanhTransform(), T.SoftplusTransform(),
          T.AffineTransform(0.5, -2.0), T.AffineTransform(_t([1., 2., 3.]), _t([0.5, -1., 3.])),
          T.PowerTransform(_t(2.5)), T.ComposeTransform([T.AffineTransform(0., 2.), T.ExpTransform()])]


@pytest.mark.parametrize("t", SCALAR, ids=lambda t: type(t).__name__)
def test_elementwise_roundtrip_and_logdet(t):
    x = _t([0.3, 0.9, 1.7])
    y = t(x)
    assert np.allclose(t.inv(y).numpy(), x.numpy(), atol=1e-10)
    h = 1e-6
    fd = (t(x + h).numpy() - t(x - h).numpy()) / (2 * h)
    assert np.allclose(t.log_abs_det_jacobian(x, y).numpy(), np.log(np.abs(fd)), atol=1e-6)
    assert np.allclose(t.inv.log_abs_det_jacobian(y, x).numpy(), -np.log(np.abs(fd)), atol=1e-6)
    assert t.inv.inv is t and bool(t.codomain.check(y).all())


def test_stick_breaking_and_softmax():
    t = T.StickBreakingTransform()
    x = _t([0.3, -1.2, 0.8])
    y = t(x)
    assert y.shape == (4,) and abs(y.sum().item() - 1) < 1e-12 and bool(C.simplex.check(y))
    assert np.allclose(t.inv(y).numpy(), x.numpy(), atol=1e-10)
    # Jacobian of x -> first K coordinates of y
    assert np.isclose(t.log_abs_det_jacobian(x, y).item(), _fd_logdet(t, x.numpy(), slice(0, 3)), atol=1e-6)
    assert t(tp.zeros(3)).numpy().tolist() == pytest.approx([0.25] * 4)
    assert t.forward_shape((2, 3)) == (2, 4) and t.inverse_shape((2, 4)) == (2, 3)
    s = T.SoftmaxTransform()
    ys = s(x)
    assert np.allclose(ys.numpy(), np.exp(x.numpy()) / np.exp(x.numpy()).sum())
    assert np.allclose(s(s.inv(ys)).numpy(), ys.numpy())


def test_corr_cholesky():
    t = T.CorrCholeskyTransform()
    x = _t([0.3, -0.5, 1.1, 0.2, -0.7, 0.4])
    y = t(x)
    assert y.shape == (4, 4) and bool(C.corr_cholesky.check(y))
    assert np.allclose(t.inv(y).numpy(), x.numpy(), atol=1e-10)
    tril = np.tril_indices(4, -1)
    assert np.isclose(t.log_abs_det_jacobian(x, y).item(), _fd_logdet(t, x.numpy(), np.ravel_multi_index(tril, (4, 4))),
                      atol=1e-6)
    assert t.forward_shape((6,)) == (4, 4) and t.inverse_shape((4, 4)) == (6,)
    with pytest.raises(ValueError):
        t.forward_shape((5,))


def test_lower_cholesky_and_positive_definite():
    x = _t([[0.3, 2.0], [-0.5, 0.1]])
    L = T.LowerCholeskyTransform()(x)
    assert np.allclose(L.numpy(), [[np.exp(0.3), 0], [-0.5, np.exp(0.1)]])
    P = T.PositiveDefiniteTransform()
    S = P(x)
    assert np.allclose(S.numpy(), L.numpy() @ L.numpy().T) and bool(C.positive_definite.check(S))
    assert np.allclose(P.inv(S).numpy(), [[0.3, 0.0], [-0.5, 0.1]])


def test_abs_reshape_independent_cat_stack():
    assert T.AbsTransform()(_t([-2., 3.])).numpy().tolist() == [2., 3.]
    r = T.ReshapeTransform((2, 3), (6,))
    x = tp.arange(12.).reshape(2, 2, 3)
    assert r(x).shape == (2, 6) and r.inv(r(x)).shape == (2, 2, 3)
    assert r.log_abs_det_jacobian(x, r(x)).numpy().tolist() == [0., 0.]
    assert r.forward_shape((5, 2, 3)) == (5, 6)
    with pytest.raises(ValueError, match="different numbers of elements"):
        T.ReshapeTransform((2,), (3,))
    ind = T.IndependentTransform(T.ExpTransform(), 1)
    x = _t([[0.1, 0.2], [0.3, 0.4]])
    assert np.allclose(ind.log_abs_det_jacobian(x, ind(x)).numpy(), [0.3, 0.7]) and ind.domain.event_dim == 1
    cat = T.CatTransform([T.ExpTransform(), T.AffineTransform(1., 3.)], dim=0, lengths=[1, 2])
    v = _t([0.5, 1., 2.])
    assert np.allclose(cat(v).numpy(), [np.exp(0.5), 4., 7.])
    assert np.allclose(cat.inv(cat(v)).numpy(), v.numpy())
    assert np.allclose(cat.log_abs_det_jacobian(v, cat(v)).numpy(), [0.5, np.log(3), np.log(3)])
    st = T.StackTransform([T.ExpTransform(), T.AffineTransform(0., 2.)], dim=1)
    m = _t([[0.5, 1.], [1., 2.]])
    assert np.allclose(st(m).numpy(), [[np.exp(.5), 2.], [np.e, 4.]])
    assert np.allclose(st.log_abs_det_jacobian(m, st(m)).numpy(), [[0.5, np.log(2)], [1., np.log(2)]])


def test_compose_event_dims_and_logdet():
    t = T.ComposeTransform([T.ExpTransform(), T.StickBreakingTransform()])
    assert t.domain.event_dim == 1 and t.codomain.event_dim == 1
    x = _t([0.2, -0.4])
    y = t(x)
    want = _fd_logdet(t, x.numpy(), slice(0, 2))
    assert np.isclose(t.log_abs_det_jacobian(x, y).item(), want, atol=1e-6)
    assert T.identity_transform(x) is x and repr(T.ExpTransform()) == "ExpTransform()"


def test_cache_sign_and_errors():
    t = T.ExpTransform().with_cache(1)
    x = _t([1.0])
    y = t(x)
    assert t.inv(y) is x and t(x) is y
    with pytest.raises(ValueError, match="cache_size must be 0 or 1"):
        T.ExpTransform(cache_size=2)
    assert T.AffineTransform(0., -2.).sign == -1 and T.ExpTransform().sign == 1
    assert T.AffineTransform(0., _t([-1., 2.])).sign.numpy().tolist() == [-1., 1.]
    assert T.ExpTransform() == T.ExpTransform() and T.AffineTransform(1., 2.) != T.AffineTransform(1., 3.)
    with pytest.raises(ValueError, match="Please use either"):
        T.CorrCholeskyTransform().event_dim


def test_logdet_gradients_second_order():
    x = _t([0.3, -0.8]).requires_grad_()
    t = T.TanhTransform()

    def f(v):
        return t.log_abs_det_jacobian(v, t(v)).sum()
    assert tp.autograd.gradcheck(f, (x,)) and tp.autograd.gradgradcheck(f, (x,))


@pytest.mark.parametrize("c", [C.real, C.positive, C.greater_than(2.), C.less_than(-1.), C.interval(-2., 3.),
                               C.unit_interval, C.simplex, C.corr_cholesky, C.real_vector],
                         ids=repr)
def test_biject_to_lands_in_support_and_inverts(c):
    t = biject_to(c)
    assert t.bijective
    n = 6 if c is C.corr_cholesky else 3
    x = _t(np.linspace(-1.5, 1.2, n))
    y = t(x)
    assert bool(c.check(y).all())
    assert np.allclose(t.inv(y).numpy(), x.numpy(), atol=1e-8)


def test_transform_to_registrations():
    assert isinstance(transform_to(C.simplex), T.SoftmaxTransform)
    assert isinstance(biject_to(C.simplex), T.StickBreakingTransform)
    assert isinstance(transform_to(C.lower_cholesky), T.LowerCholeskyTransform)
    assert isinstance(transform_to(C.positive_definite), T.PositiveDefiniteTransform)
    assert isinstance(transform_to(C.unit_interval), T.SigmoidTransform)
    y = transform_to(C.independent(C.positive, 1))(_t([0., 1.]))
    assert np.allclose(y.numpy(), [1., np.e])
    with pytest.raises(NotImplementedError, match="Cannot transform _LowerCholesky constraints"):
        biject_to(C.lower_cholesky)
    with pytest.raises(NotImplementedError):
        transform_to(C.boolean)
