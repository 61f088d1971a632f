"""Activation checkpointing: same values and gradients as without it (dropout masks repeat), the
segment's activations are freed after the forward, parameters inside the segment get gradients, and
PyTorch's use_reentrant rules (warning, keyword arguments)."""
import gc
import weakref

import pytest

import tensorplug as torch
import tensorplug.nn as nn
from tensorplug.autograd import gradcheck, gradgradcheck
from tensorplug.utils.checkpoint import checkpoint, checkpoint_sequential


def _model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Dropout(0.3), nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 2))


def _grads(model):
    return [p.grad.clone() for p in model.parameters()]


@pytest.mark.parametrize("reentrant", [True, False])
def test_gradients_equal_the_plain_run_with_dropout(reentrant):
    x = torch.randn(5, 4, generator=torch.Generator().manual_seed(1)).requires_grad_()
    plain = _model()
    torch.manual_seed(7)
    plain(x).square().sum().backward()
    want, want_x = _grads(plain), x.grad.clone()
    x.grad = None
    ck = _model()
    torch.manual_seed(7)
    torch.randn(3)                       # draws between forward and backward must not change the masks
    torch.manual_seed(7)
    y = checkpoint(ck, x, use_reentrant=reentrant)
    torch.rand(10)
    y.square().sum().backward()
    for g, w in zip(_grads(ck), want):
        assert torch.allclose(g, w, atol=1e-6)
    assert torch.allclose(x.grad, want_x, atol=1e-6)


def test_the_segment_runs_twice_and_its_activations_are_freed():
    calls, inner = [], []

    def segment(t):
        calls.append(1)
        h = (t * 3).exp()
        inner.append(weakref.ref(h))
        return h.sin()
    x = torch.tensor([0.1, 0.2], dtype=torch.float64, requires_grad=True)
    y = checkpoint(segment, x, use_reentrant=False)
    gc.collect()
    assert inner[0]() is None            # nothing of the first run is kept
    y.sum().backward()
    assert len(calls) == 2
    assert torch.allclose(x.grad, (3 * (3 * x).exp() * ((3 * x).exp()).cos()).detach())


def test_parameters_inside_get_gradients_when_no_input_requires_grad():
    lin = nn.Linear(3, 1)
    x = torch.ones(2, 3)
    checkpoint(lin, x, use_reentrant=False).sum().backward()
    assert lin.weight.grad.tolist() == [[2.0, 2.0, 2.0]] and lin.bias.grad.tolist() == [2.0]
    lin.zero_grad()
    with pytest.warns(UserWarning, match="None of the inputs have requires_grad=True"):
        y = checkpoint(lin, x, use_reentrant=True)
    assert not y.requires_grad             # PyTorch's reentrant pitfall, reproduced


def test_structure_keyword_arguments_and_flags():
    x = torch.tensor([1.0, 2.0], requires_grad=True)

    def fn(t, scale=1.0):
        return t * scale, "tag", t.sum()
    a, tag, s = checkpoint(fn, x, use_reentrant=False, scale=3.0)
    assert tag == "tag" and a.tolist() == [3.0, 6.0] and s.item() == 3.0
    (a.sum() + s).backward()
    assert x.grad.tolist() == [4.0, 4.0]
    with pytest.raises(ValueError, match="Unexpected keyword arguments: scale"):
        checkpoint(fn, x, use_reentrant=True, scale=3.0)
    with pytest.warns(UserWarning, match="use_reentrant parameter should be passed explicitly"):
        checkpoint(lambda t: t * 2, x)
    with torch.no_grad():
        assert not checkpoint(lambda t: t * 2, x, use_reentrant=False).requires_grad


def test_gradcheck_and_double_backward_through_a_checkpoint():
    w = torch.tensor([[0.3, -0.2], [0.1, 0.4]], dtype=torch.float64, requires_grad=True)

    def f(x):
        return checkpoint(lambda t: (t @ w).tanh() * t, x, use_reentrant=False)
    x = torch.tensor([[0.5, -1.0], [0.2, 0.7]], dtype=torch.float64, requires_grad=True)
    assert gradcheck(f, (x,))
    assert gradgradcheck(f, (x,))


def test_checkpoint_sequential_matches_the_plain_model():
    x = torch.randn(5, 4, generator=torch.Generator().manual_seed(2)).requires_grad_()
    plain = _model()
    torch.manual_seed(3)
    plain(x).sum().backward()
    want = _grads(plain)
    ck = _model()
    torch.manual_seed(3)
    checkpoint_sequential(ck, 3, x, use_reentrant=False).sum().backward()
    for g, w in zip(_grads(ck), want):
        assert torch.allclose(g, w, atol=1e-6)
    with pytest.raises(ValueError, match="segments must be positive"):
        checkpoint_sequential(ck, 0, x, use_reentrant=False)
