"""In-place ops and autograd: version counters, modified saved tensors, leaves, non-leaves."""
import numpy as np
import pytest

import tensorplug as torch
from tensorplug import autograd


def t64(values, requires_grad=True):
    return torch.tensor(np.asarray(values, dtype=np.float64), requires_grad=requires_grad)


def test_in_place_ops_bump_the_version_shared_with_views_and_detach():
    x = torch.zeros(3)
    v0 = x._version
    x.add_(1)
    assert x._version == v0 + 1
    d = x.detach()
    d.mul_(2)
    assert x._version == v0 + 2 and x.tolist() == [2., 2., 2.]


def test_modified_saved_tensor_raises_naming_the_node():
    """y = x.exp() saves y; y.add_(1) changes it; backward refuses and names ExpBackward0."""
    x = t64([1., 2.])
    y = x.exp()
    y.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation.*ExpBackward0"):
        y.sum().backward()


def test_modified_saved_input_raises():
    x = t64([1., 2.])
    a = x * 1                       # a non-leaf, so in-place is allowed
    y = a * a                       # MulBackward0 saves a
    a.mul_(3)
    with pytest.raises(RuntimeError, match="MulBackward0.*version 1; expected version 0|"
                                           "modified by an inplace operation"):
        y.sum().backward()


def test_modified_saved_tensor_through_detach_raises():
    x = t64([1., 2.])
    y = x.sigmoid()
    y.detach().zero_()              # same storage, same version counter
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_in_place_on_leaf_requiring_grad_raises():
    x = t64([1., 2.])
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an "
                                           "in-place operation"):
        x.add_(1)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        x.mul_(2)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        x += 1
    assert x.tolist() == [1., 2.]


def test_in_place_on_leaf_allowed_under_no_grad_and_on_data():
    x = t64([1., 2.])
    with torch.no_grad():
        x.add_(1)
    assert x.tolist() == [2., 3.] and x.requires_grad and x.is_leaf
    x.data.mul_(2)
    assert x.tolist() == [4., 6.]
    (x * x).sum().backward()
    assert x.grad.tolist() == [8., 12.]


def test_in_place_on_non_leaf_is_recorded():
    """y = x * 2; y.add_(1); y.sum().backward() gives 2; y's grad_fn becomes the in-place op's."""
    x = t64([1., 2.])
    y = x * 2
    y.add_(1)
    assert y.grad_fn.name() == "AddBackward0" and not y.is_leaf
    y.sum().backward()
    assert x.grad.tolist() == [2., 2.]


def test_chain_of_in_place_ops_on_non_leaf():
    x = t64([1., 2.])
    y = x * 1
    y.mul_(3)
    y.add_(x)                       # y = 3x + x
    y.pow_(2)                       # y = 16 x^2
    y.sum().backward()
    assert x.grad.tolist() == [32., 64.]


def test_augmented_assignment_on_non_leaf_accumulates_graph():
    x = t64([1., 2.])
    total = 0
    for k in range(3):
        total += (x * (k + 1)).sum()        # int + tensor, then tensor += tensor (in place)
    total.backward()
    assert x.grad.tolist() == [6., 6.]


def test_in_place_unary_on_non_leaf():
    x = t64([0.5, -0.5])
    y = x * 1
    y.tanh_()
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 1 - np.tanh([0.5, -0.5]) ** 2)


def test_in_place_result_differentiates_twice():
    x = t64([2.])
    y = x * 1
    y.mul_(x)                       # y = x^2
    g, = autograd.grad(y.sum(), x, create_graph=True)
    assert g.tolist() == [4.]
    g2, = autograd.grad(g.sum(), x)
    assert g2.tolist() == [2.]


def test_zero_and_fill_cut_the_gradient():
    x = t64([1., 2.])
    y = x * 3
    y.zero_()
    z = (y + x).sum()
    z.backward()
    assert x.grad.tolist() == [1., 1.]
