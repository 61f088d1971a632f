"""Custom autograd.Function (new style): forward/backward, ctx API, double backward, several
outputs, non-tensor arguments, in-place forward, once_differentiable, error cases."""
import gc
import weakref

import numpy as np
import pytest

import tensorplug as torch
from tensorplug import autograd
from tensorplug.autograd import Function, gradcheck, gradgradcheck


def r64(*shape, seed=0, low=-1.0, high=1.0, requires_grad=True):
    rng = np.random.default_rng(seed)
    return torch.tensor(rng.uniform(low, high, size=shape), dtype=torch.float64,
                        requires_grad=requires_grad)


class Exp(Function):
    @staticmethod
    def forward(ctx, x):
        y = x.exp()
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        y, = ctx.saved_tensors
        return g * y


class ScaledMul(Function):
    """scale * x * w, with a Python number argument and a record of what forward saw."""
    seen = {}

    @staticmethod
    def forward(ctx, x, w, scale):
        ScaledMul.seen = {"grad_enabled": torch.is_grad_enabled(),
                          "needs_input_grad": ctx.needs_input_grad}
        ctx.save_for_backward(x, w)
        ctx.scale = scale
        return x * w * scale

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        gx = g * w * ctx.scale if ctx.needs_input_grad[0] else None
        gw = g * x * ctx.scale if ctx.needs_input_grad[1] else None
        return gx, gw, None


def test_forward_backward_and_node_name():
    x = r64(3)
    y = Exp.apply(x)
    assert y.requires_grad and not y.is_leaf
    assert y.grad_fn.name() == "ExpBackward"
    assert y.grad_fn.next_functions[0][0].variable is x
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.exp(x.detach().numpy()))


def test_forward_runs_without_grad_and_sees_needs_input_grad():
    x, w = r64(2), r64(2, seed=1, requires_grad=False)
    y = ScaledMul.apply(x, w, 3.0)
    assert ScaledMul.seen == {"grad_enabled": False, "needs_input_grad": (True, False, False)}
    assert torch.is_grad_enabled()
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 3 * w.numpy())
    assert w.grad is None


def test_no_input_requires_grad_means_no_graph():
    y = ScaledMul.apply(r64(2, requires_grad=False), r64(2, requires_grad=False), 2.0)
    assert not y.requires_grad and y.grad_fn is None
    with torch.no_grad():
        y = Exp.apply(r64(2))
    assert not y.requires_grad and ScaledMul.seen["needs_input_grad"] == (False, False, False)


def test_gradcheck_and_gradgradcheck_through_custom_functions():
    """backward written with Tensor ops: differentiable twice."""
    x, w = r64(3), r64(3, seed=1)
    assert gradcheck(Exp.apply, (x,))
    assert gradgradcheck(Exp.apply, (x,))
    assert gradcheck(lambda a, b: ScaledMul.apply(a, b, 1.5), (x, w))
    assert gradgradcheck(lambda a, b: ScaledMul.apply(a, b, 1.5), (x, w))


def test_second_derivative_through_saved_output():
    x = torch.tensor([0.7], dtype=torch.float64, requires_grad=True)
    g, = autograd.grad(Exp.apply(x), x, create_graph=True)
    g2, = autograd.grad(g, x)
    assert g2.item() == pytest.approx(np.exp(0.7))


class SinCos(Function):
    """Two differentiable outputs."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.sin(), x.cos()

    @staticmethod
    def backward(ctx, gs, gc_):
        x, = ctx.saved_tensors
        return gs * x.cos() - gc_ * x.sin()


def test_multiple_outputs():
    x = r64(4)
    s, c = SinCos.apply(x)
    assert s.grad_fn is c.grad_fn
    (s * 2 + c * 3).sum().backward()
    xv = x.detach().numpy()
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.cos(xv) - 3 * np.sin(xv))
    assert gradcheck(SinCos.apply, (x,))
    assert gradgradcheck(SinCos.apply, (x,))


def test_multiple_outputs_only_one_used_gets_zeros():
    x = r64(2)
    s, c = SinCos.apply(x)
    c.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), -np.sin(x.detach().numpy()))


class SinCosNoMaterialize(Function):
    received = None

    @staticmethod
    def forward(ctx, x):
        ctx.set_materialize_grads(False)
        ctx.save_for_backward(x)
        return x.sin(), x.cos()

    @staticmethod
    def backward(ctx, gs, gc_):
        SinCosNoMaterialize.received = (gs is None, gc_ is None)
        x, = ctx.saved_tensors
        return -gc_ * x.sin() if gs is None else gs * x.cos()


def test_set_materialize_grads_false_passes_none():
    x = r64(2)
    s, c = SinCosNoMaterialize.apply(x)
    c.sum().backward()
    assert SinCosNoMaterialize.received == (True, False)
    np.testing.assert_allclose(x.grad.numpy(), -np.sin(x.detach().numpy()))


class ClampWithMask(Function):
    """Returns the clamped values and a mask marked non-differentiable."""
    received = None

    @staticmethod
    def forward(ctx, x):
        mask = (x > 0).to(x.dtype)
        ctx.mark_non_differentiable(mask)
        ctx.save_for_backward(mask)
        return x * mask, mask

    @staticmethod
    def backward(ctx, g, gmask):
        ClampWithMask.received = gmask.tolist()
        mask, = ctx.saved_tensors
        return g * mask


def test_mark_non_differentiable():
    x = torch.tensor([-1., 2., 3.], dtype=torch.float64, requires_grad=True)
    y, mask = ClampWithMask.apply(x)
    assert y.requires_grad and not mask.requires_grad and mask.grad_fn is None
    y.sum().backward()
    assert x.grad.tolist() == [0., 1., 1.]
    assert ClampWithMask.received == [0., 0., 0.]        # zeros for the non-differentiable output


class WithNonTensorOutputs(Function):
    @staticmethod
    def forward(ctx, x, k):
        return x * k, k, x.argmax() if hasattr(x, "argmax") else x.sum().to(torch.int64)

    @staticmethod
    def backward(ctx, g, gk, gidx):
        assert gk is None
        return g * 2, None


def test_non_tensor_and_integer_outputs():
    x = r64(3)
    y, k, idx = WithNonTensorOutputs.apply(x, 2)
    assert k == 2 and not idx.requires_grad and idx.dtype == torch.int64
    y.sum().backward()
    assert x.grad.tolist() == [2., 2., 2.]


class Identity(Function):
    @staticmethod
    def forward(ctx, x):
        return x

    @staticmethod
    def backward(ctx, g):
        return g * 5


def test_returning_an_input_does_not_reparent_it():
    x = r64(2)
    y = Identity.apply(x)
    assert y is not x and x.is_leaf and x.grad_fn is None
    assert y.grad_fn.name() == "IdentityBackward"
    y.sum().backward()
    assert x.grad.tolist() == [5., 5.]


class AddOneInPlace(Function):
    @staticmethod
    def forward(ctx, x):
        x.add_(1)
        ctx.mark_dirty(x)
        return x

    @staticmethod
    def backward(ctx, g):
        return g


def test_mark_dirty_in_place_forward():
    base = r64(2)
    x = base * 2
    v = x._version
    y = AddOneInPlace.apply(x)
    assert y is x and x._version == v + 1
    assert x.grad_fn.name() == "AddOneInPlaceBackward"
    (x * 3).sum().backward()
    assert base.grad.tolist() == [6., 6.]
    with pytest.raises(RuntimeError, match="leaf Variable"):
        AddOneInPlace.apply(r64(2))


def test_saved_tensor_modified_in_place_raises():
    x = r64(2)
    a = x * 1
    y = ScaledMul.apply(a, x, 1.0)
    a.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation.*ScaledMulBackward"):
        y.sum().backward()


def test_saved_tensors_freed_after_backward():
    holder = {}

    class Keep(Function):
        @staticmethod
        def forward(ctx, x):
            holder["ctx"] = ctx
            ctx.save_for_backward(x)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    x = r64(2)
    y = Keep.apply(x)
    y.sum().backward(retain_graph=True)
    assert holder["ctx"].saved_tensors[0] is x
    y.sum().backward()
    with pytest.raises(RuntimeError, match="retain_graph=True"):
        holder["ctx"].saved_tensors


def test_ctx_is_released_after_backward():
    refs = []

    class Track(Function):
        @staticmethod
        def forward(ctx, x):
            refs.append(weakref.ref(ctx))
            y = x * 2
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            return g * 2

    x = r64(2)
    Track.apply(x).sum().backward()
    gc.collect()
    assert refs[0]() is None


def test_backward_returning_wrong_number_of_gradients_raises():
    class Bad(Function):
        @staticmethod
        def forward(ctx, x, y):
            return x * y

        @staticmethod
        def backward(ctx, g):
            return g

    with pytest.raises(RuntimeError, match="incorrect number of gradients"):
        Bad.apply(r64(2), r64(2)).sum().backward()


def test_backward_may_return_extra_nones_and_broadcastable_gradients():
    class SumRows(Function):
        @staticmethod
        def forward(ctx, x):
            return x.sum()

        @staticmethod
        def backward(ctx, g):
            return g.expand(1, 3), None, None        # broadcastable to (3,), trailing Nones ignored

    x = r64(3)
    SumRows.apply(x).backward()
    assert x.grad.tolist() == [1., 1., 1.]


def test_gradient_for_a_non_tensor_input_raises():
    class Bad(Function):
        @staticmethod
        def forward(ctx, x, k):
            return x * k

        @staticmethod
        def backward(ctx, g):
            return g, g

    with pytest.raises(RuntimeError, match="not a Variable"):
        Bad.apply(r64(2), 3).sum().backward()


def test_once_differentiable_refuses_double_backward():
    class Square(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @autograd.once_differentiable
        def backward(ctx, g):
            assert not torch.is_grad_enabled()
            x, = ctx.saved_tensors
            return 2 * x * g

    x = r64(2)
    g, = autograd.grad(Square.apply(x).sum(), x)
    np.testing.assert_allclose(g.numpy(), 2 * x.detach().numpy())
    g, = autograd.grad(Square.apply(x).sum(), x, create_graph=True)
    assert not g.requires_grad              # constant grad_output: nothing to differentiate
    v = torch.ones(2, dtype=torch.float64, requires_grad=True)
    g, = autograd.grad(Square.apply(x), x, grad_outputs=v, create_graph=True)
    assert g.requires_grad
    with pytest.raises(RuntimeError, match="once_differentiable"):
        g.sum().backward()


def test_setup_context_style():
    class Cube(Function):
        @staticmethod
        def forward(x):
            return x ** 3

        @staticmethod
        def setup_context(ctx, inputs, output):
            x, = inputs
            ctx.save_for_backward(x)

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return 3 * x * x * g

    x = r64(3)
    assert gradcheck(Cube.apply, (x,)) and gradgradcheck(Cube.apply, (x,))


def test_legacy_non_static_forward_is_rejected():
    class Legacy(Function):
        def forward(self, x):
            return x

    with pytest.raises(RuntimeError, match="Legacy autograd function"):
        Legacy()(r64(2))


def test_variable_is_the_old_wrapper():
    from tensorplug.autograd import Variable
    x = Variable(torch.ones(2), requires_grad=True)
    assert isinstance(x, torch.Tensor) and x.requires_grad and x.is_leaf
    y = Exp.apply(Variable(x))
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.e, rtol=1e-6)
