"""The autograd surface of Tensor: requires_grad, is_leaf, grad_fn, detach, detach_,
requires_grad_, .data, .grad."""
import numpy as np
import pytest

import tensorplug as torch


def test_requires_grad_flags_and_leaves():
    x = torch.ones(2)
    assert not x.requires_grad and x.is_leaf and x.grad_fn is None and x.grad is None
    assert x.requires_grad_() is x and x.requires_grad and x.is_leaf
    x.requires_grad = False
    assert not x.requires_grad
    w = torch.zeros(2, requires_grad=True)
    y = w * 2 + x
    assert y.requires_grad and not y.is_leaf and y.grad_fn.name() == "AddBackward0"
    z = x * 2                                     # nothing requires grad: no graph
    assert not z.requires_grad and z.is_leaf


def test_detach_shares_data_and_leaves_the_graph():
    w = torch.ones(2, requires_grad=True)
    y = w * 3
    d = y.detach()
    assert not d.requires_grad and d.is_leaf and d.grad_fn is None
    d.add_(1)                                      # shares storage with y
    assert y.tolist() == [4., 4.]
    (d * w).sum().backward()
    assert w.grad.tolist() == [4., 4.]             # d is a constant for the graph


def test_detach_in_place():
    w = torch.ones(2, requires_grad=True)
    y = w * 3
    assert y.detach_() is y
    assert not y.requires_grad and y.grad_fn is None and y.is_leaf


def test_data_is_a_detached_alias():
    w = torch.tensor([1., 2.], requires_grad=True)
    d = w.data
    assert not d.requires_grad
    d.mul_(10)
    assert w.tolist() == [10., 20.] and w.requires_grad and w.is_leaf
    w.data = torch.tensor([5., 6.])
    assert w.tolist() == [5., 6.] and w.requires_grad


def test_grad_can_be_set_and_cleared():
    w = torch.tensor([1., 2.], requires_grad=True)
    (w * w).sum().backward()
    assert w.grad.tolist() == [2., 4.]
    w.grad = None
    (w * 3).sum().backward()
    assert w.grad.tolist() == [3., 3.]


def test_numpy_of_tensor_requiring_grad_asks_for_detach():
    w = torch.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="detach"):
        w.numpy()
    np.testing.assert_array_equal(w.detach().numpy(), [1., 1.])


def test_grad_fn_repr_in_tensor_repr():
    w = torch.ones(2, requires_grad=True)
    assert "requires_grad=True" in repr(w)
    assert "grad_fn=<MulBackward0>" in repr(w * 2)
