"""gradcheck / gradgradcheck themselves: they pass on correct gradients, catch wrong ones (first
and second order), handle several outputs and pass non-differentiable inputs through."""
import numpy as np
import pytest

import tensorplug as torch
from tensorplug.autograd import Function, GradcheckError, gradcheck, gradgradcheck


def r64(*shape, seed=0, requires_grad=True):
    rng = np.random.default_rng(seed)
    return torch.tensor(rng.uniform(-1, 1, size=shape), dtype=torch.float64, requires_grad=requires_grad)


class WrongSin(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.sin()

    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        return g * x.cos() * 1.01                     # 1% off


class SinFirstOrderOnly(Function):
    """Correct first derivative, but its backward uses a constant cos(x): second order is wrong."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.sin()

    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        return g * x.detach().cos()


def test_gradcheck_passes_on_correct_gradients():
    x, y = r64(3), r64(3, seed=1)
    assert gradcheck(lambda a, b: (a * b).sin() + a / (b + 3), (x, y))
    assert gradcheck(torch.tanh, x)                   # a single tensor instead of a tuple


def test_gradcheck_catches_a_wrong_backward():
    x = r64(3)
    with pytest.raises(GradcheckError, match="Jacobian mismatch for output 0 with respect to input 0"):
        gradcheck(WrongSin.apply, (x,))
    assert gradcheck(WrongSin.apply, (x,), raise_exception=False) is False


def test_gradgradcheck_catches_a_wrong_double_backward():
    x = r64(3)
    assert gradcheck(SinFirstOrderOnly.apply, (x,))
    with pytest.raises(GradcheckError):
        gradgradcheck(SinFirstOrderOnly.apply, (x,))
    assert gradgradcheck(SinFirstOrderOnly.apply, (x,), raise_exception=False) is False
    assert gradgradcheck(torch.sin, (x,))


def test_multiple_outputs_report_the_failing_output():
    x = r64(2)
    assert gradcheck(lambda a: (a.exp(), a * a), (x,))
    assert gradgradcheck(lambda a: (a.exp(), a * a), (x,))
    with pytest.raises(GradcheckError, match="output 1 with respect to input 0"):
        gradcheck(lambda a: (a.exp(), WrongSin.apply(a)), (x,))


def test_non_differentiable_inputs_are_passed_through():
    x = r64(3)
    const = r64(3, seed=2, requires_grad=False)
    ints = torch.tensor([1, 2, 3])
    assert gradcheck(lambda a, c, n, k: a * c + a ** k * n.to(torch.float64), (x, const, ints, 2))
    assert gradgradcheck(lambda a, c, n, k: a * c + a ** k * n.to(torch.float64), (x, const, ints, 2))


def test_integer_outputs_are_ignored():
    x = r64(3)
    assert gradcheck(lambda a: (a * 2, (a > 0).to(torch.int64)), (x,))


def test_explicit_grad_outputs_for_gradgradcheck():
    x = r64(2)
    go = r64(2, seed=5)
    assert gradgradcheck(lambda a: a ** 3, (x,), (go,))


def test_needs_an_input_requiring_grad_and_warns_for_float32():
    with pytest.raises(ValueError, match="at least one input"):
        gradcheck(torch.sin, (r64(2, requires_grad=False),))
    with pytest.warns(UserWarning, match="float64"):
        gradcheck(lambda a: a * 2, (torch.ones(2, requires_grad=True),), eps=1e-2, atol=1e-3)


def test_gradcheck_does_not_touch_dot_grad():
    x = r64(2)
    gradcheck(torch.exp, (x,))
    gradgradcheck(torch.exp, (x,))
    assert x.grad is None
