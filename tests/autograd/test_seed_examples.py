"""The autograd examples of the seed documents (004 §2.2-2.3, 000 "higher-order gradients",
retain_grad), with the numbers the documents give."""
import numpy as np
import pytest

import tensorplug as torch
from tensorplug.autograd import Variable


def _graph():
    w = torch.tensor([1.], requires_grad=True)
    x = torch.tensor([2.], requires_grad=True)
    a = torch.add(w, x)
    b = torch.add(w, 1)
    return w, x, a, b


def test_computation_graph_w_grad_is_5():
    """y = (x + w) * (w + 1) at w=1, x=2: dy/dw = 5, dy/dx = 2; only leaves keep .grad."""
    w, x, a, b = _graph()
    y = torch.mul(a, b)
    y.backward()
    assert w.grad.tolist() == [5.0]
    assert x.grad.tolist() == [2.0]
    assert w.is_leaf and x.is_leaf and not a.is_leaf and not y.is_leaf
    with pytest.warns(UserWarning, match="not a leaf Tensor"):
        assert a.grad is None and y.grad is None
    assert y.grad_fn.name() == "MulBackward0"
    assert a.grad_fn.name() == "AddBackward0"
    assert w.grad_fn is None


def test_second_backward_raises_then_retain_graph_works():
    """A second backward through a freed graph raises; retain_graph=True keeps it."""
    w, x, a, b = _graph()
    y = torch.mul(a, b)
    y.backward()
    assert w.grad.tolist() == [5.0]
    with pytest.raises(RuntimeError, match="retain_graph=True"):
        y.backward()

    w, x, a, b = _graph()
    y = torch.mul(a, b)
    y.backward(retain_graph=True)
    assert w.grad.tolist() == [5.0]
    y.backward()
    assert w.grad.tolist() == [10.0]


def test_grad_tensors_weights_give_9():
    """loss = cat([y0, y1]) with gradient=[1., 2.]: 5 * 1 + 2 * 2 = 9 (needs torch.cat)."""
    w, x, a, b = _graph()
    y0 = torch.mul(a, b)
    y1 = torch.add(a, b)
    loss = torch.cat([y0, y1], dim=0)
    grad_tensors = torch.tensor([1., 2.])
    loss.backward(gradient=grad_tensors)
    assert w.grad.tolist() == [9.0]


def test_grad_tensors_weights_without_cat():
    """The same weighting through autograd.backward with one grad tensor per loss."""
    w, x, a, b = _graph()
    y0 = torch.mul(a, b)
    y1 = torch.add(a, b)
    torch.autograd.backward([y0, y1], grad_tensors=[torch.tensor([1.]), torch.tensor([2.])])
    assert w.grad.tolist() == [9.0]


def test_second_derivative_of_square_is_6_then_2():
    """grad_1 = dy/dx = 2x = 6 (with a graph of its own); grad_2 = d(2x)/dx = 2."""
    x = torch.tensor([3.], requires_grad=True)
    y = torch.pow(x, 2)
    grad_1 = torch.autograd.grad(y, x, create_graph=True)
    assert isinstance(grad_1, tuple) and len(grad_1) == 1
    assert grad_1[0].tolist() == [6.0]
    assert grad_1[0].grad_fn is not None and grad_1[0].requires_grad
    grad_2 = torch.autograd.grad(grad_1[0], x)
    assert grad_2[0].tolist() == [2.0]
    assert x.grad is None                      # autograd.grad leaves .grad untouched


def test_gradients_accumulate_5_10_15_20_then_zero():
    """Four backward calls without zeroing: 5, 10, 15, 20; w.grad.zero_() resets."""
    w = torch.tensor([1.], requires_grad=True)
    x = torch.tensor([2.], requires_grad=True)
    seen = []
    for _ in range(4):
        a = torch.add(w, x)
        b = torch.add(w, 1)
        y = torch.mul(a, b)
        y.backward()
        seen.append(w.grad.item())
    assert seen == [5.0, 10.0, 15.0, 20.0]
    w.grad.zero_()
    assert w.grad.tolist() == [0.0]
    y = torch.mul(torch.add(w, x), torch.add(w, 1))
    y.backward()
    assert w.grad.tolist() == [5.0]


def test_autograd_backward_signature_of_the_seed():
    """torch.autograd.backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False,
    grad_variables=None)."""
    w, x, a, b = _graph()
    y = torch.mul(a, b)
    torch.autograd.backward(y, grad_tensors=None, retain_graph=None, create_graph=False,
                            grad_variables=None)
    assert w.grad.tolist() == [5.0]


def test_retain_grad_on_h1():
    """Seed 000: h1 = input * 3; out = (h1 * h1).sum(); h1.retain_grad() keeps h1.grad == 2 * h1."""
    input = Variable(torch.rand(1, 3), requires_grad=True)
    h1 = input * 3
    out = (h1 * h1).sum()
    h1.retain_grad()
    out.backward()
    assert h1.grad is not None and h1.retains_grad
    np.testing.assert_allclose(h1.grad.numpy(), 2 * h1.detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(input.grad.numpy(), 18 * input.detach().numpy(), rtol=1e-6)
    # without retain_grad a non-leaf's .grad stays None
    h2 = input * 3
    (h2 * h2).sum().backward()
    with pytest.warns(UserWarning, match="not a leaf Tensor"):
        assert h2.grad is None


def test_grad_norm_penalty_pattern_of_the_seed():
    """grad_params = autograd.grad(loss, params, create_graph=True); grad_norm = sqrt(sum g^2);
    grad_norm.backward() accumulates d(grad_norm)/d(param) into .grad (closed form)."""
    rng = np.random.default_rng(0)
    a = rng.uniform(0.5, 2.0, size=4)
    w0, b0 = rng.normal(size=4), 0.7
    w = torch.tensor(w0, requires_grad=True)
    b = torch.tensor(b0, dtype=torch.float64, requires_grad=True)
    A = torch.tensor(a)
    # loss = 0.5 * sum(a * w^2) + b^3 / 3  ->  grads a * w, b^2
    loss = 0.5 * (A * w * w).sum() + b ** 3 / 3
    grad_params = torch.autograd.grad(loss, [w, b], create_graph=True)
    grad_norm = 0
    for grad in grad_params:
        grad_norm += grad.pow(2).sum()
    grad_norm = grad_norm.sqrt()
    grad_norm.backward()
    n = np.sqrt(np.sum((a * w0) ** 2) + b0 ** 4)
    assert grad_norm.item() == pytest.approx(n)
    np.testing.assert_allclose(w.grad.numpy(), a * a * w0 / n, rtol=1e-12)
    np.testing.assert_allclose(b.grad.item(), 2 * b0 ** 3 / n, rtol=1e-12)
