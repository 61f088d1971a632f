"""The backward engine: backward / autograd.grad semantics, accumulation, graph freeing,
hooks, error messages, and graphs deeper than Python's recursion limit."""
import gc
import sys
import weakref

import numpy as np
import pytest

import tensorplug as torch
from tensorplug import autograd


def t64(values, requires_grad=True):
    return torch.tensor(np.asarray(values, dtype=np.float64), requires_grad=requires_grad)


# -- backward and grad --------------------------------------------------------------------------
def test_backward_accumulates_into_leaves_only():
    """Leaves get .grad (summed over every path); non-leaves keep .grad None."""
    x = t64([1., 2., 3.])
    y = x * x + x          # two paths to x
    y.sum().backward()
    assert x.grad.tolist() == [3., 5., 7.]
    with pytest.warns(UserWarning, match="not a leaf Tensor"):          # as PyTorch
        assert y.grad is None
    assert x.grad.grad_fn is None and not x.grad.requires_grad


def test_backward_with_gradient_weights_a_non_scalar_output():
    x = t64([1., 2.])
    (x * 3).backward(torch.tensor([1., 10.], dtype=torch.float64))
    assert x.grad.tolist() == [3., 30.]


def test_backward_gradient_shape_mismatch_raises():
    x = t64([1., 2.])
    with pytest.raises(RuntimeError, match="Mismatch in shape"):
        (x * 3).backward(torch.ones(3, dtype=torch.float64))


def test_grad_returns_tuple_and_leaves_dot_grad_untouched():
    x, w = t64([1., 2.]), t64([3., 4.])
    out = (x * w).sum()
    gx, gw = autograd.grad(out, (x, w))
    assert gx.tolist() == [3., 4.] and gw.tolist() == [1., 2.]
    assert x.grad is None and w.grad is None


def test_grad_of_several_outputs_with_grad_outputs():
    x = t64([1., 2.])
    y1, y2 = x * 2, x * x
    g, = autograd.grad([y1, y2], x, grad_outputs=[t64([1., 1.], False), t64([1., 0.5], False)])
    assert g.tolist() == [2 + 2 * 1 * 1, 2 + 2 * 2 * 0.5]


def test_grad_with_respect_to_an_intermediate_does_not_run_its_node():
    """autograd.grad(out, h) stops at h: h's own node (and what is below it) is not run, and its
    saved tensors are not freed, so a later backward through it still works."""
    x = t64([1., 2.])
    h = x.exp()
    out = (h * 3).sum()
    g, = autograd.grad(out, h)
    assert g.tolist() == [3., 3.]
    h.sum().backward()                       # h's graph was neither run nor freed
    np.testing.assert_allclose(x.grad.numpy(), np.exp([1., 2.]))


def test_grad_of_input_with_itself_is_ones():
    x = t64([1., 2.])
    g, = autograd.grad(x, x, grad_outputs=torch.ones(2, dtype=torch.float64))
    assert g.tolist() == [1., 1.]


def test_create_graph_gradients_have_grad_fn_and_differentiate_again():
    x = t64([0.5, -1.0])
    y = (x ** 3).sum()
    g, = autograd.grad(y, x, create_graph=True)
    assert g.grad_fn is not None and g.requires_grad
    np.testing.assert_allclose(g.detach().numpy(), 3 * np.array([0.5, -1.0]) ** 2)
    h, = autograd.grad(g.sum(), x, create_graph=True)
    np.testing.assert_allclose(h.detach().numpy(), 6 * np.array([0.5, -1.0]))
    k, = autograd.grad(h.sum(), x)
    assert k.tolist() == [6., 6.]


def test_backward_create_graph_gives_grad_with_graph():
    x = t64([2.])
    (x ** 3).backward(create_graph=True)
    assert x.grad.tolist() == [12.] and x.grad.requires_grad
    g = x.grad
    x.grad = None
    g.backward()
    assert x.grad.tolist() == [12.]           # d(3x^2)/dx = 6x


def test_backward_inputs_accumulates_only_there():
    x, w = t64([1.]), t64([2.])
    h = x * w
    (h * h).backward(inputs=[w, h])
    assert x.grad is None
    assert w.grad.tolist() == [2 * 2 * 1 * 1]  # d(x^2 w^2)/dw = 2 x^2 w
    assert h.grad.tolist() == [4.]


def test_retain_graph_allows_repeated_backward():
    x = t64([1., 2.])
    y = (x.exp() * x).sum()
    for k in range(1, 4):
        y.backward(retain_graph=True)
        np.testing.assert_allclose(x.grad.numpy(), k * np.exp([1., 2.]) * (1 + np.array([1., 2.])))


def test_second_backward_through_freed_graph_names_retain_graph():
    x = t64([1., 2.])
    y = (x.exp() * x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time.*retain_graph=True"):
        y.backward()
    with pytest.raises(RuntimeError, match="retain_graph=True"):
        autograd.grad(y, x)


def test_grad_outputs_of_other_dtype_are_cast():
    x = torch.tensor([1., 2.], requires_grad=True)
    (x * 2).backward(torch.tensor([1., 1.], dtype=torch.float64))
    assert x.grad.dtype == torch.float32 and x.grad.tolist() == [2., 2.]


def test_gradient_accumulation_does_not_write_into_user_tensors():
    """The first accumulated .grad is a fresh tensor; later ones add into it in place."""
    x = t64([1., 2.])
    gout = torch.ones(2, dtype=torch.float64)
    x.backward(gout)
    first = x.grad
    first_id = id(first)
    x.backward(gout)
    assert gout.tolist() == [1., 1.]
    assert id(x.grad) == first_id and x.grad.tolist() == [2., 2.]


# -- errors --------------------------------------------------------------------------------------
def test_backward_on_non_scalar_without_gradient_raises():
    x = t64([1., 2.])
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
        (x * 2).backward()


def test_backward_on_tensor_without_grad_raises():
    with pytest.raises(RuntimeError, match="does not require grad and does not have a grad_fn"):
        torch.ones(2).sum().backward()


def test_grad_wrt_tensor_not_requiring_grad_raises():
    x = t64([1., 2.])
    z = torch.ones(2, dtype=torch.float64)
    with pytest.raises(RuntimeError, match="does not require grad"):
        autograd.grad((x * 2).sum(), [x, z])


def test_allow_unused():
    """An input the output does not depend on: error, None with allow_unused, zeros with
    materialize_grads."""
    x, unused = t64([1., 2.]), t64([5.])
    with pytest.raises(RuntimeError, match="allow_unused=True"):
        autograd.grad((x * 2).sum(), [x, unused])
    gx, gu = autograd.grad((x * 2).sum(), [x, unused], allow_unused=True)
    assert gx.tolist() == [2., 2.] and gu is None
    gx, gu = autograd.grad((x * 2).sum(), [x, unused], materialize_grads=True)
    assert gu.tolist() == [0.]


def test_bool_of_multi_element_tensor_raises():
    b = torch.zeros(2)
    with pytest.raises(RuntimeError, match="ambiguous"):
        bool(b)
    with pytest.raises(RuntimeError, match="ambiguous"):
        if b > 0:
            pass
    assert bool(torch.zeros(1)) is False


def test_requires_grad_only_for_float_tensors_and_leaves():
    with pytest.raises(RuntimeError, match="floating point"):
        torch.tensor([1, 2]).requires_grad_()
    x = t64([1.])
    y = x * 2
    with pytest.raises(RuntimeError, match="leaf"):
        y.requires_grad = False


# -- hooks ---------------------------------------------------------------------------------------
def test_leaf_hook_modifies_gradient_in_backward_and_grad():
    x = t64([1., 2.])
    handle = x.register_hook(lambda g: g * 10)
    (x * 3).sum().backward()
    assert x.grad.tolist() == [30., 30.]
    g, = autograd.grad((x * 3).sum(), x)
    assert g.tolist() == [30., 30.]
    handle.remove()
    x.grad = None
    (x * 3).sum().backward()
    assert x.grad.tolist() == [3., 3.]


def test_non_leaf_hook_modifies_gradient_flowing_down():
    x = t64([1., 2.])
    h = x * 3
    seen = []
    h.register_hook(lambda g: seen.append(g.tolist()))        # returning None keeps g
    h.register_hook(lambda g: g * 0.5)
    (h * h).sum().backward()
    assert seen == [[6., 12.]]
    assert x.grad.tolist() == [9., 18.]                        # 2 h * 0.5 * 3


def test_retain_grad_sees_the_hooked_gradient_and_accumulates():
    x = t64([1., 2.])
    h = x * 3
    h.retain_grad()
    h.register_hook(lambda g: g * 10)                           # registered after retain_grad
    y = (h * h).sum()
    y.backward(retain_graph=True)
    assert h.grad.tolist() == [60., 120.]
    y.backward()
    assert h.grad.tolist() == [120., 240.]


def test_hook_on_tensor_not_requiring_grad_raises():
    with pytest.raises(RuntimeError):
        torch.ones(2).register_hook(lambda g: g)


def test_node_hooks_and_prehooks():
    """Node.register_hook(fn(grad_inputs, grad_outputs)) may replace grad_inputs;
    register_prehook(fn(grad_outputs)) may replace grad_outputs."""
    x, w = t64([2.]), t64([3.])
    y = x * w
    calls = []

    def hook(grad_inputs, grad_outputs):
        calls.append(([g.tolist() for g in grad_inputs], [g.tolist() for g in grad_outputs]))
        return tuple(g * 2 for g in grad_inputs)

    y.grad_fn.register_hook(hook)
    y.grad_fn.register_prehook(lambda gos: tuple(g * 10 for g in gos))
    y.backward(torch.ones(1, dtype=torch.float64))
    assert calls == [([[30.], [20.]], [[10.]])]
    assert x.grad.tolist() == [60.] and w.grad.tolist() == [40.]


def test_grad_fn_graph_is_inspectable():
    x = t64([1.])
    y = (x * 2).exp()
    assert y.grad_fn.name() == "ExpBackward0"
    (mul, nr), = y.grad_fn.next_functions
    assert mul.name() == "MulBackward0" and nr == 0
    acc = mul.next_functions[0][0]
    assert acc.name() == "AccumulateGrad" and acc.variable is x
    assert "ExpBackward0" in repr(y.grad_fn) and "grad_fn=<ExpBackward0>" in repr(y)


# -- memory and depth ----------------------------------------------------------------------------
def test_saved_tensors_are_freed_as_soon_as_used():
    """After backward (without retain_graph) every node's vjp and saved tensors are dropped, so
    an intermediate held only by the graph is released without waiting for the gc."""
    x = t64(np.linspace(0, 1, 10))
    h = x.exp()
    out = (h * 2).tanh().sum()
    ref = weakref.ref(h)
    del h
    gc.collect()
    assert ref() is not None                  # kept alive by the graph until backward
    gc.disable()
    try:
        out.backward()
        assert ref() is None                  # freed by reference counting alone
    finally:
        gc.enable()
    node = out.grad_fn
    while node is not None and node.name() != "AccumulateGrad":
        assert node.vjp is None and node.saved is None
        node = node.next_functions[0][0]


def test_retain_graph_keeps_saved_tensors():
    x = t64([1., 2.])
    out = x.exp().sum()
    out.backward(retain_graph=True)
    assert out.grad_fn.next_functions[0][0].vjp is not None


def _chain(x, n):
    y = x
    for i in range(n):
        if i % 3 == 0:
            y = y * 1.0001
        elif i % 3 == 1:
            y = y + 0.001
        else:
            y = y - 0.001
    return y


def test_ten_thousand_op_chain_backward_without_recursion():
    assert sys.getrecursionlimit() < 10_000 * 2
    x = t64([1., 2.])
    y = x
    for _ in range(10_000):
        y = y * 1.0001
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [1.0001 ** 10_000] * 2, rtol=1e-9)
    x.grad = None
    _chain(x, 10_000).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [1.0001 ** 3334] * 2, rtol=1e-9)


def test_ten_thousand_op_chain_autograd_grad_and_double_backward():
    x = t64([0.3])
    y = x
    for _ in range(5_000):
        y = (y * 0.5).tanh() * 2          # 10,000+ ops, two per step plus the tanh
    g, = autograd.grad(y.sum(), x, create_graph=True)
    assert g.grad_fn is not None
    g2, = autograd.grad(g.sum(), x)
    assert np.isfinite(g2.item())


def test_deleting_a_deep_graph_does_not_recurse():
    """Dropping the last reference to a 20,000-node graph (with and without saved outputs)
    frees it without hitting the recursion limit."""
    x = t64([0.1])
    y = x
    for _ in range(20_000):
        y = y * 1.0
    ref = weakref.ref(y.grad_fn)
    del y
    assert ref() is None
    y = x
    for _ in range(10_000):
        y = y.tanh()                          # tanh saves its output: graph <-> tensor cycles
    ref = weakref.ref(y.grad_fn)
    del y
    gc.collect()
    assert ref() is None


def test_engine_runs_diamond_graph_in_dependency_order():
    """A node runs once, after all the gradients for it have arrived."""
    x = t64([1.])
    a = x * 2
    b = a * 3
    c = a * 4
    calls = []
    a.grad_fn.register_hook(lambda gi, go: calls.append(go[0].item()))
    (b + c).backward()
    assert calls == [7.0]
    assert x.grad.tolist() == [14.]


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_anomaly_mode_names_the_node_returning_nan():
    x = t64([0.])
    y = (x.sqrt() * 0).sum()                  # d sqrt / dx at 0 is inf; * 0 gives nan
    with autograd.detect_anomaly():
        with pytest.raises(RuntimeError, match="SqrtBackward0.*nan"):
            y.backward()
    assert not autograd.is_anomaly_enabled()


def test_is_grads_batched_gives_one_vjp_per_row():
    x = t64([1., 2., 3.])
    g, = autograd.grad(x * x, x, torch.eye(3, dtype=torch.float64), is_grads_batched=True)
    np.testing.assert_allclose(g.numpy(), np.diag([2., 4., 6.]))
