"""Higher-order gradients: Hessian-vector products, gradient-norm penalties (seed 000), unrolled
optimisation steps and third derivatives, against closed forms and finite differences."""
import numpy as np
import pytest

import tensorplug as torch
from tensorplug import autograd
from tensorplug.autograd import gradgradcheck


def r64(*shape, seed=0, low=-1.0, high=1.0, requires_grad=True):
    rng = np.random.default_rng(seed)
    return torch.tensor(rng.uniform(low, high, size=shape), dtype=torch.float64,
                        requires_grad=requires_grad)


def npy(t):
    return t.detach().numpy()


def test_hessian_vector_product_of_a_quadratic_form():
    """f(x) = 0.5 x^T A x + b.x: Hv = (A + A^T)/2 v, whatever x is."""
    rng = np.random.default_rng(1)
    A = rng.normal(size=(4, 4))
    At, b = torch.tensor(A), torch.tensor(rng.normal(size=4))
    x = r64(4)
    v = torch.tensor(rng.normal(size=4))
    f = 0.5 * (x * (At @ x)).sum() + (b * x).sum()
    g, = autograd.grad(f, x, create_graph=True)
    np.testing.assert_allclose(npy(g), 0.5 * (A + A.T) @ npy(x) + npy(b), rtol=1e-12)
    hv, = autograd.grad(g, x, grad_outputs=v)
    np.testing.assert_allclose(npy(hv), 0.5 * (A + A.T) @ npy(v), rtol=1e-12)


def test_gradient_norm_penalty_closed_form_tanh():
    """L(w) = sum tanh(w * x): g = x (1 - t^2); P = |g|; dP/dw = g * (-2 x^2 t (1 - t^2)) / P."""
    xs = np.array([0.5, -1.2, 2.0, 0.1])
    x = torch.tensor(xs)
    w = r64(4, seed=3)
    loss = (w * x).tanh().sum()
    grads = autograd.grad(loss, [w], create_graph=True)
    grad_norm = 0
    for grad in grads:
        grad_norm += grad.pow(2).sum()
    grad_norm = grad_norm.sqrt()
    grad_norm.backward()
    t = np.tanh(npy(w) * xs)
    g = xs * (1 - t ** 2)
    P = np.linalg.norm(g)
    assert grad_norm.item() == pytest.approx(P, rel=1e-12)
    np.testing.assert_allclose(w.grad.numpy(), g * (-2 * xs ** 2 * t * (1 - t ** 2)) / P, rtol=1e-10)


def _mlp_loss(W1, b1, W2, X, Y):
    h = (X @ W1 + b1).tanh()
    return ((h @ W2 - Y) ** 2).sum() / Y.shape[0]


def test_gradient_norm_penalty_of_a_tanh_mlp_against_finite_differences():
    """The seed's grad_norm pattern on a 3-4-1 tanh MLP; d(grad_norm)/d(params) compared with
    central differences of grad_norm itself."""
    rng = np.random.default_rng(7)
    X, Y = torch.tensor(rng.normal(size=(5, 3))), torch.tensor(rng.normal(size=5))
    vals = [rng.normal(size=(3, 4)) * 0.7, rng.normal(size=4) * 0.3, rng.normal(size=4)]
    params = [torch.tensor(v, requires_grad=True) for v in vals]

    def penalty(ps):
        grads = autograd.grad(_mlp_loss(*ps, X, Y), ps, create_graph=True)
        n = 0
        for g in grads:
            n += g.pow(2).sum()
        return n.sqrt()

    pen = penalty(params)
    pen.backward()
    eps = 1e-6
    for k, v in enumerate(vals):
        num = np.zeros(v.size)
        for j in range(v.size):
            vals_p = [u.copy() for u in vals]
            vals_m = [u.copy() for u in vals]
            vals_p[k].reshape(-1)[j] += eps
            vals_m[k].reshape(-1)[j] -= eps
            fp = penalty([torch.tensor(u, requires_grad=True) for u in vals_p]).item()
            fm = penalty([torch.tensor(u, requires_grad=True) for u in vals_m]).item()
            num[j] = (fp - fm) / (2 * eps)
        np.testing.assert_allclose(params[k].grad.numpy().reshape(-1), num, rtol=1e-5, atol=1e-8)


def test_unrolled_gradient_step_meta_gradient():
    """L(w) = w^4 / 4; one step w1 = w - lr L'(w) kept in the graph:
    d L(w1) / dw = L'(w1) (1 - lr L''(w)) = w1^3 (1 - 3 lr w^2)."""
    w = torch.tensor([0.8], dtype=torch.float64, requires_grad=True)
    lr = 0.1
    g, = autograd.grad((w ** 4 / 4).sum(), w, create_graph=True)
    w1 = w - lr * g
    (w1 ** 4 / 4).sum().backward()
    w0 = 0.8
    w1v = w0 - lr * w0 ** 3
    assert w.grad.item() == pytest.approx(w1v ** 3 * (1 - 3 * lr * w0 ** 2), rel=1e-12)


def test_third_and_fourth_derivatives():
    x = torch.tensor([1.5], dtype=torch.float64, requires_grad=True)
    y = x ** 4
    d1, = autograd.grad(y, x, create_graph=True)
    d2, = autograd.grad(d1, x, create_graph=True)
    d3, = autograd.grad(d2, x, create_graph=True)
    d4, = autograd.grad(d3, x)
    assert [d1.item(), d2.item(), d3.item(), d4.item()] == pytest.approx([4 * 1.5 ** 3, 12 * 1.5 ** 2,
                                                                           24 * 1.5, 24])


def test_mixed_partials_through_shape_ops():
    """gradgradcheck through sum / reshape / expand / permute mixed with pointwise ops."""
    def f(a, b):
        m = (a.reshape(2, 3).permute(1, 0) * b.expand(3, 2)).tanh()
        return (m * m).sum(dim=0)

    assert gradgradcheck(f, (r64(6), r64(1, 2, seed=1).reshape(2)))


def test_grad_of_grad_accumulates_into_leaves_with_backward():
    """Mixing autograd.grad(create_graph=True) and backward: the gradient of a gradient lands in
    .grad, the first gradient does not."""
    x = torch.tensor([2.0], dtype=torch.float64, requires_grad=True)
    y = torch.tensor([3.0], dtype=torch.float64, requires_grad=True)
    f = x * x * y
    gx, = autograd.grad(f, x, create_graph=True)       # 2 x y
    assert x.grad is None and y.grad is None
    gx.backward()
    assert x.grad.tolist() == [6.0] and y.grad.tolist() == [4.0]
