"""autograd.functional: jacobian, hessian, vjp, jvp, hvp, vhp against closed forms."""
import numpy as np
import pytest

import tensorplug as torch
from tensorplug.autograd import functional as F


def r64(*shape, seed=0, low=-1.0, high=1.0, requires_grad=False):
    rng = np.random.default_rng(seed)
    return torch.tensor(rng.uniform(low, high, size=shape), dtype=torch.float64,
                        requires_grad=requires_grad)


def npy(t):
    return t.detach().numpy()


A = np.array([0.5, -1.5, 2.0])


def cubic(x):
    """f(x) = sum(a * x^3) + (sum x)^2: grad 3 a x^2 + 2 sum x, Hessian diag(6 a x) + 2."""
    return (torch.tensor(A) * x ** 3).sum() + x.sum() ** 2


def cubic_hessian(x):
    return np.diag(6 * A * x) + 2.0


def test_vjp_closed_form_and_detached_results():
    x = r64(3)
    v = r64(3, seed=1)
    out, g = F.vjp(lambda t: t.exp() * 2, x, v)
    np.testing.assert_allclose(npy(out), 2 * np.exp(npy(x)))
    np.testing.assert_allclose(npy(g), npy(v) * 2 * np.exp(npy(x)))
    assert not out.requires_grad and not g.requires_grad
    out, g = F.vjp(cubic, x)                         # scalar output: v may be omitted
    np.testing.assert_allclose(npy(g), 3 * A * npy(x) ** 2 + 2 * npy(x).sum())


def test_vjp_tuple_inputs_and_outputs():
    x, y = r64(2), r64(2, seed=1)
    outs, (gx, gy) = F.vjp(lambda a, b: (a * b, a + b), (x, y),
                           (torch.ones(2, dtype=torch.float64), torch.full((2,), 2.0, dtype=torch.float64)))
    assert isinstance(outs, tuple) and len(outs) == 2
    np.testing.assert_allclose(npy(gx), npy(y) + 2)
    np.testing.assert_allclose(npy(gy), npy(x) + 2)


def test_jvp_by_double_vjp_closed_form():
    x, v = r64(3), r64(3, seed=2)
    out, jv = F.jvp(lambda t: t.sin() * t, x, v)
    xv = npy(x)
    np.testing.assert_allclose(npy(jv), (np.cos(xv) * xv + np.sin(xv)) * npy(v), rtol=1e-12)
    # a linear map and a non-square Jacobian: f(x) = (x0 + x1 + x2, 2 x0) as a 2-vector
    out, jv = F.jvp(lambda t: torch.stack([t.sum(), 2 * t[0]]), x, v)
    np.testing.assert_allclose(npy(jv), [npy(v).sum(), 2 * npy(v)[0]], rtol=1e-12)


def test_jvp_scalar_input_default_v():
    x = torch.tensor(0.3, dtype=torch.float64)
    out, jv = F.jvp(lambda t: t ** 3, x)
    assert jv.item() == pytest.approx(3 * 0.09)


def test_hvp_and_vhp_closed_form():
    x, v = r64(3), r64(3, seed=3)
    H = cubic_hessian(npy(x))
    val, hv = F.hvp(cubic, x, v)
    assert val.item() == pytest.approx(float((A * npy(x) ** 3).sum() + npy(x).sum() ** 2))
    np.testing.assert_allclose(npy(hv), H @ npy(v), rtol=1e-12)
    _, vh = F.vhp(cubic, x, v)
    np.testing.assert_allclose(npy(vh), npy(v) @ H, rtol=1e-12)


def test_hvp_matches_manual_double_backward():
    """The classic Hessian-vector product: g = grad(f, x, create_graph); grad(g . v, x)."""
    x = r64(3, requires_grad=True)
    v = r64(3, seed=4)
    g, = torch.autograd.grad(cubic(x), x, create_graph=True)
    hv, = torch.autograd.grad((g * v).sum(), x)
    np.testing.assert_allclose(npy(hv), cubic_hessian(npy(x)) @ npy(v), rtol=1e-12)
    _, hv2 = F.hvp(cubic, x, v)
    np.testing.assert_allclose(npy(hv2), npy(hv), rtol=1e-12)


def test_jacobian_single_input_output():
    x = r64(3)
    J = F.jacobian(lambda t: t ** 2 * torch.tensor(A), x)
    assert J.shape == (3, 3)
    np.testing.assert_allclose(npy(J), np.diag(2 * A * npy(x)))


def test_jacobian_shapes_for_tuples_and_matrices():
    x, w = r64(2, 3), r64(3, seed=1)
    jx, jw = F.jacobian(lambda a, b: (a * b).sum(dim=1), (x, w))
    assert jx.shape == (2, 2, 3) and jw.shape == (2, 3)
    expect_x = np.zeros((2, 2, 3))
    for i in range(2):
        expect_x[i, i] = npy(w)
    np.testing.assert_allclose(npy(jx), expect_x)
    np.testing.assert_allclose(npy(jw), npy(x))
    (j00, j01), (j10, j11) = F.jacobian(lambda a, b: (a.exp(), b * 2), (x, w))
    assert j00.shape == (2, 3, 2, 3) and j01.shape == (2, 3, 3) and j10.shape == (3, 2, 3)
    assert not j01.detach().numpy().any() and not j10.detach().numpy().any()
    np.testing.assert_allclose(npy(j11), 2 * np.eye(3))


def test_jacobian_strict_and_create_graph():
    x, w = r64(2), r64(2, seed=1)
    with pytest.raises(RuntimeError, match="independent of input 1"):
        F.jacobian(lambda a, b: a * 2, (x, w), strict=True)
    xg = r64(2, requires_grad=True)
    J = F.jacobian(lambda t: t ** 3, xg, create_graph=True)
    assert J.requires_grad
    g, = torch.autograd.grad(J.sum(), xg)
    np.testing.assert_allclose(npy(g), 6 * npy(xg))
    assert not F.jacobian(lambda t: t ** 3, xg).requires_grad


def test_hessian_closed_form():
    x = r64(3)
    H = F.hessian(cubic, x)
    assert H.shape == (3, 3)
    np.testing.assert_allclose(npy(H), cubic_hessian(npy(x)), rtol=1e-12)


def test_hessian_tuple_inputs_of_a_tanh_layer():
    """f(w, b) = sum(tanh(w * x + b)) for fixed x: d2f/dw2 = diag(x^2 t''), d2f/dwdb = x t'',
    d2f/db2 = sum t'' with t'' = -2 tanh (1 - tanh^2)."""
    xs = np.array([0.3, -0.8, 1.1])
    xt = torch.tensor(xs)
    w, b = r64(3), torch.tensor(0.2, dtype=torch.float64)
    (hww, hwb), (hbw, hbb) = F.hessian(lambda w_, b_: (w_ * xt + b_).tanh().sum(), (w, b))
    th = np.tanh(npy(w) * xs + 0.2)
    t2 = -2 * th * (1 - th ** 2)
    np.testing.assert_allclose(npy(hww), np.diag(xs ** 2 * t2), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(npy(hwb), xs * t2, rtol=1e-12)
    np.testing.assert_allclose(npy(hbw), xs * t2, rtol=1e-12)
    assert hbb.shape == () and hbb.item() == pytest.approx(t2.sum())


def test_hessian_requires_single_element_output():
    with pytest.raises(RuntimeError, match="single element"):
        F.hessian(lambda t: t * 2, r64(2))


def test_v_shape_is_validated():
    with pytest.raises(RuntimeError, match="invalid size"):
        F.vjp(lambda t: t * 2, r64(3), torch.ones(2, dtype=torch.float64))
    with pytest.raises(RuntimeError, match="can only be None"):
        F.jvp(lambda t: t * 2, r64(3))
    with pytest.raises(TypeError, match="Tensor or a tuple of Tensors"):
        F.vjp(lambda t: t, 3.0)


def test_functional_works_under_no_grad_and_leaves_inputs_alone():
    x = r64(3, requires_grad=True)
    with torch.no_grad():
        _, hv = F.hvp(cubic, x, torch.ones(3, dtype=torch.float64))
    np.testing.assert_allclose(npy(hv), cubic_hessian(npy(x)) @ np.ones(3), rtol=1e-12)
    assert x.grad is None
