"""Gradients through sparse COO tensors, against finite differences (gradcheck / gradgradcheck) and
PyTorch's gradient layouts (sparse with the operand's coalesced pattern where PyTorch gives one)."""
import numpy as np
import pytest

import tensorplug as torch
from tensorplug.autograd import gradcheck, gradgradcheck

I = [[0, 1, 1, 0, 2], [2, 0, 2, 2, 1]]             # (0, 2) twice
SHAPE = (3, 3)


def _v():
    return torch.tensor([3.0, 4.0, 5.0, 1.0, -2.0], dtype=torch.float64, requires_grad=True)


def _d(*shape, seed=0):
    return torch.tensor(np.random.default_rng(seed).standard_normal(shape), requires_grad=True)


def _sp(v):
    return torch.sparse_coo_tensor(I, v, SHAPE)


def _check(f, *inputs):
    assert gradcheck(f, inputs)
    assert gradgradcheck(f, inputs)


@pytest.mark.parametrize("mm", [torch.mm, torch.sparse.mm, torch.spmm, lambda a, b: a @ b])
def test_sparse_dense_product(mm):
    """sparse @ dense: gradients to the values and to the dense operand, to second order."""
    _check(lambda v, d: mm(_sp(v), d), _v(), _d(3, 2))


def test_dense_sparse_product_and_vector():
    """dense @ sparse and sparse @ vector."""
    _check(lambda v, d: d @ _sp(v), _v(), _d(2, 3))
    _check(lambda v, d: _sp(v) @ d, _v(), _d(3))


def test_coalesced_operand():
    """A coalesced operand (the common case: to_sparse) takes the direct path."""
    _check(lambda v, d: torch.mm(_sp(v).coalesce(), d), _v(), _d(3, 4))
    _check(lambda x, d: torch.mm((x * (x > 0.3)).to_sparse(), d), _d(3, 3, seed=1), _d(3, 2))


def test_to_dense_and_elementwise():
    """to_dense, t, neg, mul / div by a scalar, sparse + sparse and dense + sparse."""
    _check(lambda v: _sp(v).to_dense(), _v())
    _check(lambda v: _sp(v).t().to_dense(), _v())
    _check(lambda v: (-_sp(v) * 2.5 / 2).to_dense(), _v())
    _check(lambda v, w: (_sp(v) + _sp(w).t()).to_dense(), _v(), _v())
    _check(lambda v, d: d + _sp(v), _v(), _d(3, 3))


def test_sum_and_softmax():
    """sparse.sum (all dims, a sparse dim) and sparse.softmax / log_softmax."""
    _check(lambda v: torch.sparse.sum(_sp(v)), _v())
    _check(lambda v: torch.sparse.sum(_sp(v), 0).to_dense(), _v())
    _check(lambda v: torch.sparse.softmax(_sp(v), 1).to_dense(), _v())
    _check(lambda v: torch.sparse.log_softmax(_sp(v), 0).to_dense(), _v())


def test_values_and_dense_dims():
    """values() of a coalesced tensor, and products' gradients with dense value dims through to_dense."""
    _check(lambda v: _sp(v).coalesce().values() * 3, _v())
    h = torch.tensor(np.arange(10.0).reshape(5, 2) / 7, requires_grad=True)
    _check(lambda h: torch.sparse.sum(torch.sparse_coo_tensor(I, h, (3, 3, 2)), 2).to_dense(), h)


def test_leaf_gradient_layouts():
    """A sparse leaf's .grad: sparse on its coalesced pattern through sparse.mm and to_dense (PyTorch's),
    dense G @ D^T through mm; values agree with the dense computation."""
    v = _v().detach()
    d = _d(3, 2)
    dense = torch.sparse_coo_tensor(I, v, SHAPE).to_dense().numpy()
    s = torch.sparse_coo_tensor(I, v, SHAPE, requires_grad=True)
    torch.sparse.mm(s, d).sum().backward()
    g = s.grad
    assert g.is_sparse and g.is_coalesced() and g._nnz() == 4
    full = np.ones((3, 2)) @ d.detach().numpy().T
    np.testing.assert_allclose(g.to_dense().numpy(), np.where(dense != 0, full, 0), rtol=1e-12)
    np.testing.assert_allclose(d.grad.numpy(), dense.T @ np.ones((3, 2)), rtol=1e-12)
    s.grad = None
    torch.mm(s, d).sum().backward()
    assert not s.grad.is_sparse
    np.testing.assert_allclose(s.grad.numpy(), full, rtol=1e-12)
    s.grad = None
    w = np.arange(9.0).reshape(3, 3)
    (s.to_dense() * torch.tensor(w)).sum().backward()
    assert s.grad.is_sparse and s.grad.is_coalesced()
    np.testing.assert_allclose(s.grad.to_dense().numpy(), np.where(dense != 0, w, 0), rtol=1e-12)


def test_sparse_grad_accumulates():
    """Two backward passes into a sparse leaf add up."""
    s = torch.sparse_coo_tensor(I, _v().detach(), SHAPE, requires_grad=True)
    for _ in range(2):
        torch.sparse.sum(s * 2).backward()
    np.testing.assert_allclose(s.grad.to_dense().numpy(),
                               4 * (torch.sparse_coo_tensor(I, torch.ones(5), SHAPE).to_dense().numpy() > 0))


def test_grad_fn_names():
    """grad_fn names as PyTorch's for the primitives."""
    v, d = _v(), _d(3, 2)
    s = _sp(v)
    assert s.grad_fn.name() == "SparseCooTensorWithDimsAndTensorsBackward0"
    assert torch.mm(s, d).grad_fn.name() == "MmBackward0"
    assert torch.sparse.mm(s, d).grad_fn.name() == "SparseAddmmBackward0"
    assert s.to_dense().grad_fn.name() == "ToDenseBackward0"
    assert s.coalesce().grad_fn.name() == "CoalesceBackward0"
    assert torch.sparse.softmax(s, 1).grad_fn.name() == "SparseSoftmaxBackward0"
