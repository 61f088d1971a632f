"""The per-op fast paths (operators recording their node directly, prep_binary's Python-scalar
case, loss.backward() straight to the engine, sum's 0-d gradient expansion, taking an exclusive
gradient as .grad) do what the general paths do: same nodes, same gradients of any order."""
import numpy as np
import pytest

import tensorplug as torch
from tensorplug import autograd
from tensorplug import dtypes as _dt
from tensorplug.ops import _core

OPS = {"add": (lambda a, b: a + b, torch.add, "AddBackward0"),
       "sub": (lambda a, b: a - b, torch.sub, "SubBackward0"),
       "mul": (lambda a, b: a * b, torch.mul, "MulBackward0"),
       "div": (lambda a, b: a / b, torch.div, "DivBackward0")}
# d/da, d/db of each op at float64 values, the NumPy reference
DERIV = {"add": (lambda a, b: np.ones_like(a + b), lambda a, b: np.ones_like(a + b)),
         "sub": (lambda a, b: np.ones_like(a + b), lambda a, b: -np.ones_like(a + b)),
         "mul": (lambda a, b: b + 0 * a, lambda a, b: a + 0 * b),
         "div": (lambda a, b: 1 / b + 0 * a, lambda a, b: -a / (b * b))}


def _leaf(values):
    return torch.tensor(np.asarray(values, dtype=np.float64), requires_grad=True)


def _reduce_to(g, shape):
    while g.ndim > len(shape):
        g = g.sum(0)
    for i, s in enumerate(shape):
        if s == 1 and g.shape[i] != 1:
            g = g.sum(i, keepdims=True)
    return g


@pytest.mark.parametrize("name", list(OPS))
@pytest.mark.parametrize("shapes", [((3,), (3,)), ((2, 3), (3,)), ((2, 1), (1, 4))])
def test_operator_between_tensors_records_the_op_and_its_gradients(name, shapes):
    """a <op> b with both requiring grad: the node name, and both gradients (with broadcasting)."""
    rng = np.random.default_rng(0)
    an, bn = rng.uniform(0.5, 2.0, shapes[0]), rng.uniform(0.5, 2.0, shapes[1])
    a, b = _leaf(an), _leaf(bn)
    op, fn, node = OPS[name]
    r = op(a, b)
    assert r.grad_fn.name() == node == fn(a, b).grad_fn.name()
    r.sum().backward()
    da, db = DERIV[name]
    np.testing.assert_allclose(a.grad.numpy(), _reduce_to(da(an, bn), an.shape), rtol=1e-12)
    np.testing.assert_allclose(b.grad.numpy(), _reduce_to(db(an, bn), bn.shape), rtol=1e-12)
    assert autograd.gradcheck(op, (_leaf(an), _leaf(bn)))
    assert autograd.gradgradcheck(op, (_leaf(an), _leaf(bn)))


@pytest.mark.parametrize("name", list(OPS))
@pytest.mark.parametrize("scalar", [1.5, 3])
@pytest.mark.parametrize("reflected", [False, True])
def test_operator_with_a_python_scalar_records_the_op_and_its_gradients(name, scalar, reflected):
    """tensor <op> scalar and scalar <op> tensor: one input edge, the gradient of the tensor."""
    xn = np.array([0.5, 1.25, 2.0])
    x = _leaf(xn)
    op, fn, node = OPS[name]
    f = (lambda t: op(scalar, t)) if reflected else (lambda t: op(t, scalar))
    r = f(x)
    assert r.grad_fn.name() == node
    assert len(r.grad_fn.next_functions) == 1 and r.grad_fn.next_functions[0][0].name() == "AccumulateGrad"
    assert r.dtype is torch.float64
    r.sum().backward()
    s = np.full_like(xn, float(scalar))
    want = DERIV[name][1](s, xn) if reflected else DERIV[name][0](xn, s)
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-12)
    assert autograd.gradcheck(f, (_leaf(xn),))
    assert autograd.gradgradcheck(f, (_leaf(xn),))


def test_scalar_operator_on_a_non_leaf_chains_nodes():
    """((x + 1) * 2 - 3) / 4 on a non-leaf: a chain of four nodes, gradient 2 / 4."""
    x = _leaf([1., 2.])
    y = ((x.exp() + 1) * 2 - 3) / 4
    names = []
    fn = y.grad_fn
    while fn is not None and fn.name() != "AccumulateGrad":
        names.append(fn.name())
        fn = fn.next_functions[0][0]
    assert names == ["DivBackward0", "SubBackward0", "MulBackward0", "AddBackward0", "ExpBackward0"]
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.exp([1., 2.]) * 0.5, rtol=1e-12)


def test_complex_scalar_product_conjugates_the_scalar():
    """z * s for a complex z: the gradient is grad_output * conj(s) (PyTorch's convention)."""
    zn = np.array([1 + 2j, -0.5 + 1j])
    z = torch.tensor(zn, requires_grad=True)
    s = 2 - 3j
    gn = np.array([1 - 1j, 0.5 + 2j])
    (z * s).backward(torch.tensor(gn))
    np.testing.assert_allclose(z.grad.numpy(), gn * np.conj(s), rtol=1e-12)
    z.grad = None
    (s * z).backward(torch.tensor(gn))
    np.testing.assert_allclose(z.grad.numpy(), gn * np.conj(s), rtol=1e-12)


def test_product_with_a_scalar_still_checks_the_saved_tensor_version():
    """A tensor multiplied by a scalar is saved: changing it in place afterwards is an error."""
    x = _leaf([1., 2.])
    y = x.exp()
    z = y * 2.0
    y.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()


def test_no_grad_operator_records_nothing():
    x = _leaf([1., 2.])
    with torch.no_grad():
        r = x * 2.0 + x
    assert r.grad_fn is None and not r.requires_grad


# -- prep_binary's Python-scalar case ------------------------------------------------------------------
def _general(t, s, float_result):
    """The general rule: the scalar's kind combined with the tensor's dtype, then converted."""
    dt = _core._combine_scalar(t._dtype, s)
    if float_result and dt.category < 2:
        dt = _dt._default[0]
    return dt, _core._scalar_as(s, dt)


@pytest.mark.parametrize("dtype", ["bool", "uint8", "int8", "int32", "int64", "float16", "bfloat16",
                                   "float32", "float64", "complex64", "complex128"])
@pytest.mark.parametrize("scalar", [2, -3, 300, 2**31, -2**31, 2**40, 0.5, -1e300])
@pytest.mark.parametrize("float_result", [False, True])
def test_prep_binary_with_a_python_scalar_follows_the_general_rule(dtype, scalar, float_result):
    t = torch.tensor([1, 0], dtype=getattr(torch, dtype))
    dt, sv = _general(t, scalar, float_result)
    for a, b, si in ((t, scalar, 1), (scalar, t, 0)):
        r = _core.prep_binary(a, b, float_result)
        assert r[2] is dt and r[5] is None
        assert type(r[si]) is type(sv) and r[si] == sv
        assert r[1 - si].dtype == t._k["astype"](t._data, dt.name).dtype


# -- loss.backward() and the engine --------------------------------------------------------------------
def test_sum_gradient_is_expanded_to_the_input_shape():
    """SumBackward0 hands every element the output's gradient (seen by a hook on the input)."""
    x = _leaf(np.arange(6.).reshape(2, 3))
    y = x * 2
    seen = []
    y.register_hook(lambda g: seen.append(g.numpy().copy()))
    y.sum().backward()
    np.testing.assert_array_equal(seen[0], np.ones((2, 3)))
    np.testing.assert_array_equal(x.grad.numpy(), np.full((2, 3), 2.))
    x.grad = None
    y = x * 2
    y.sum().backward(torch.tensor(3., dtype=torch.float64))          # an explicit 0-d gradient
    np.testing.assert_array_equal(x.grad.numpy(), np.full((2, 3), 6.))


def test_sum_backward_of_any_order():
    """d/dx sum(x^3) = 3x^2 with create_graph, then d/dx sum(3x^2) = 6x."""
    xn = np.array([0.5, -1.0, 2.0])
    x = _leaf(xn)
    g, = autograd.grad((x ** 3).sum(), x, create_graph=True)
    assert g.grad_fn is not None
    np.testing.assert_allclose(g.detach().numpy(), 3 * xn ** 2, rtol=1e-12)
    g2, = autograd.grad(g.sum(), x)
    np.testing.assert_allclose(g2.numpy(), 6 * xn, rtol=1e-12)
    assert autograd.gradgradcheck(lambda t: (t * t).sum(), (_leaf(xn),))


def test_tensor_backward_retain_graph_and_create_graph_defaults():
    """retain_graph defaults to create_graph: a second backward needs one of them."""
    x = _leaf([1., 2.])
    y = (x * x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="retain_graph=True"):
        y.backward()
    x.grad = None
    y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_array_equal(x.grad.numpy(), [4., 8.])
    x.grad = None
    (x * x * x).sum().backward(create_graph=True)
    assert x.grad.grad_fn is not None
    np.testing.assert_array_equal(x.grad.detach().numpy(), [3., 12.])


def test_leaf_grad_from_a_hook_that_requires_grad_is_detached():
    """A leaf hook returning a tensor with history: .grad gets its value, not its history."""
    x = _leaf([1., 2.])
    w = _leaf([3., 4.])
    x.register_hook(lambda g: g * w)
    (x * 1.0).sum().backward()
    assert not x.grad.requires_grad and x.grad.grad_fn is None
    np.testing.assert_array_equal(x.grad.numpy(), [3., 4.])
    assert w.grad is None


def test_taken_gradient_accumulates_in_place_afterwards():
    """The first gradient becomes .grad; later backward passes add into that tensor."""
    x = _leaf([1., 2.])
    (x * 3.0).sum().backward()
    g = x.grad
    assert g._version == 0
    (x * 2.0).sum().backward()
    assert x.grad is g and g._version == 1
    np.testing.assert_array_equal(g.numpy(), [5., 5.])


def test_backward_seed_is_a_fresh_tensor_each_time():
    """A 0-d leaf's .grad is backward()'s seed itself: changing it never changes a later seed."""
    x = torch.tensor(2., requires_grad=True)
    x.backward()
    assert x.grad.item() == 1.
    x.grad.mul_(5)
    x.grad = None
    x.backward()
    assert x.grad.item() == 1.
    y = torch.tensor(2., dtype=torch.float64, requires_grad=True)
    (y * 3).backward()
    assert y.grad.item() == 3. and y.grad.dtype is torch.float64
