"""In-place writes through views under autograd (PyTorch's view rebase): the values of gradients
(checked by hand and by finite differences in test_op_gradients.py) and the errors PyTorch raises for
the writes autograd cannot track."""
import pytest

import tensorplug as torch


def leaf(*values):
    return torch.tensor(values, dtype=torch.float64, requires_grad=True)


def test_writing_a_column_through_a_view():
    x = torch.tensor([[1., 2.], [3., 4.]], dtype=torch.float64, requires_grad=True)
    h = x.clone()
    h[:, 0] *= 2                                        # h = [[2x00, x01], [2x10, x11]]
    (h * h).sum().backward()
    assert x.grad.tolist() == [[8., 4.], [24., 8.]]     # d(sum h^2) = 2h * dh/dx


def test_a_view_written_in_place_sees_its_own_and_its_base_history():
    x = torch.tensor([[1., 2.], [3., 4.]], dtype=torch.float64, requires_grad=True)
    h = x * 1
    v = h[0]
    v.add_(x[1])                                        # h[0] = x[0] + x[1]
    (h * h).sum().backward()
    assert x.grad.tolist() == [[8., 12.], [14., 20.]]
    assert v.grad_fn.name() == "AsStridedBackward0" and h.grad_fn.name() == "CopySlices"


def test_transposed_and_diagonal_views():
    x = torch.tensor([[1., 2.], [3., 4.]], dtype=torch.float64, requires_grad=True)
    h = x.clone()
    h.t().mul_(torch.tensor([1., 10.], dtype=torch.float64))   # scales h's rows
    h.sum().backward()
    assert h.tolist() == [[1., 2.], [30., 40.]] and x.grad.tolist() == [[1., 1.], [10., 10.]]
    x.grad = None
    d = x * 1
    d.diagonal().mul_(3)
    d.sum().backward()
    assert x.grad.tolist() == [[3., 1.], [1., 3.]]


def test_a_buffer_filled_through_views_carries_the_gradients():
    w = leaf(1., 2.)
    buf = torch.zeros(2, 2, dtype=torch.float64)
    buf[0].copy_(w)
    buf[1] = w * w
    assert buf.requires_grad
    buf.sum().backward()
    assert w.grad.tolist() == [3., 5.]                  # 1 + 2w


def test_a_view_made_before_a_write_to_its_base_sees_the_write():
    b = leaf(1., 2., 3.)
    buf = torch.zeros(2, 3, dtype=torch.float64)
    buf[0].copy_(b)
    row = buf[1]
    buf[1] = b * b                                      # row now holds b*b
    s = row.sum()
    (buf * s).sum().backward()
    # sum(buf) * s with s = sum(b^2): d/db = (1 + 2b) * s + sum(buf) * 2b
    total = sum(v + v * v for v in (1., 2., 3.))
    assert b.grad.tolist() == [(1 + 2 * v) * 14 + total * 2 * v for v in (1., 2., 3.)]


def test_relu_in_place_on_a_reshaped_view():
    x = leaf(-1., 2., -3.)
    y = x * 2
    y.view(3, 1).relu_()
    y.sum().backward()
    assert x.grad.tolist() == [0., 2., 0.]


def test_writes_autograd_cannot_track_raise_as_in_pytorch():
    w = leaf(1., 2., 3.)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad is being used in an "
                                           "in-place operation"):
        w[0].add_(1)
    h = w * 1
    with torch.no_grad():
        v = h[1:]
    with pytest.raises(RuntimeError, match="A view was created in no_grad mode"):
        v.mul_(2)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor refers to a single "
                                           "memory location"):
        (w * 1).expand(2, 3).add_(1)
    x = leaf(1., 2., 3.)
    y = x.exp()
    y[1:].zero_()                                       # exp's saved output was overwritten
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_writing_into_an_expanded_tensor_is_refused_without_autograd_too():
    for write in (lambda e: e.add_(1), lambda e: e.fill_(2.0), lambda e: e.__setitem__(0, 1.0),
                  lambda e: e.masked_fill_(torch.ones(2, 3, dtype=torch.bool), 0.0)):
        e = torch.zeros(3).expand(2, 3)
        with pytest.raises(RuntimeError, match="more than one element of the written-to tensor refers to a single "
                                               "memory location"):
            write(e)


def test_reading_grad_of_a_non_leaf_warns_as_pytorch():
    import warnings
    x = leaf(1.0, 2.0)
    y = x * 2
    with pytest.warns(UserWarning, match="is not a leaf Tensor is being accessed"):
        assert y.grad is None
    y.retain_grad()
    (y * y).sum().backward()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert y.grad.tolist() == [4.0, 8.0] and x.grad.tolist() == [8.0, 16.0]
        assert torch.ones(2).grad is None          # a leaf without grad: no warning
