"""Identity, Linear, Bilinear, Flatten, Unflatten and F.linear / F.bilinear: values against float64
NumPy, shapes, errors, and first and second order gradients."""
import numpy as np
import pytest

import tensorplug as torch
import tensorplug.nn.functional as F
from tensorplug import nn
from tensorplug.autograd import gradcheck, gradgradcheck


def r64(*shape, seed=0, requires_grad=True):
    rng = np.random.default_rng(seed)
    return torch.tensor(rng.uniform(-1, 1, size=shape), dtype=torch.float64, requires_grad=requires_grad)


def test_functional_names_exported():
    assert "linear" in F.__all__ and "bilinear" in F.__all__


@pytest.mark.parametrize("shape", [(5, 3), (2, 4, 3), (3,)])
def test_linear_forward_matches_numpy(shape):
    torch.manual_seed(0)
    lin = nn.Linear(3, 4).double()
    x = r64(*shape, requires_grad=False)
    W, b = lin.weight.detach().numpy(), lin.bias.detach().numpy()
    y = lin(x)
    assert y.shape == shape[:-1] + (4,) and y.dtype == torch.float64
    assert np.allclose(y.detach().numpy(), x.numpy() @ W.T + b, rtol=1e-12, atol=1e-12)


def test_linear_float32_and_no_bias():
    lin = nn.Linear(6, 2, bias=False)
    assert lin.bias is None and [n for n, _ in lin.named_parameters()] == ["weight"]
    x = torch.randn(7, 6)
    ref = x.numpy().astype(np.float64) @ lin.weight.detach().numpy().astype(np.float64).T
    assert np.allclose(lin(x).detach().numpy(), ref, atol=1e-5)
    assert repr(lin) == "Linear(in_features=6, out_features=2, bias=False)"


def test_linear_gradcheck_and_gradgradcheck():
    torch.manual_seed(0)
    lin = nn.Linear(3, 2).double()
    x = r64(4, 3)
    assert gradcheck(lambda x, w, b: F.linear(x, w, b), (x, lin.weight, lin.bias))
    assert gradgradcheck(lambda x, w, b: F.linear(x, w, b), (x, lin.weight, lin.bias))
    assert gradcheck(lambda x: lin(x), (r64(2, 5, 3, seed=1),))
    assert gradgradcheck(lambda x: lin(x).tanh(), (x,))
    assert gradcheck(lambda x, w: F.linear(x, w), (r64(3, seed=2), r64(4, 3, seed=3)))


def test_linear_module_gradients_manual():
    lin = nn.Linear(3, 2).double()
    x = r64(5, 3)
    gy = r64(5, 2, seed=1, requires_grad=False)
    lin(x).backward(gy)
    W = lin.weight.detach().numpy()
    assert np.allclose(lin.weight.grad.numpy(), gy.numpy().T @ x.detach().numpy())
    assert np.allclose(lin.bias.grad.numpy(), gy.numpy().sum(0))
    assert np.allclose(x.grad.numpy(), gy.numpy() @ W)


def test_linear_errors():
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(2x3 and 5x4\)"):
        F.linear(torch.zeros(2, 3), torch.zeros(4, 5))
    with pytest.raises(TypeError, match="must be Tensor"):
        F.linear([1.0], torch.zeros(1, 1))
    with pytest.raises(RuntimeError):
        F.linear(torch.zeros(2, 3), torch.zeros(4, 3), torch.zeros(5))


def test_bilinear_forward_matches_numpy():
    torch.manual_seed(0)
    bil = nn.Bilinear(3, 4, 2).double()
    x1 = r64(2, 5, 3, requires_grad=False)
    x2 = r64(2, 5, 4, seed=1, requires_grad=False)
    A, b = bil.weight.detach().numpy(), bil.bias.detach().numpy()
    ref = np.einsum("...i,oij,...j->...o", x1.numpy(), A, x2.numpy()) + b
    y = bil(x1, x2)
    assert y.shape == (2, 5, 2)
    assert np.allclose(y.detach().numpy(), ref, rtol=1e-12, atol=1e-12)
    assert F.bilinear(torch.zeros(3), torch.zeros(4), torch.zeros(5, 3, 4)).shape == (5,)
    assert repr(bil) == "Bilinear(in1_features=3, in2_features=4, out_features=2, bias=True)"
    nb = nn.Bilinear(3, 4, 2, bias=False).double()
    assert nb.bias is None
    assert np.allclose(nb(x1, x2).detach().numpy(),
                       np.einsum("...i,oij,...j->...o", x1.numpy(), nb.weight.detach().numpy(), x2.numpy()))


def test_bilinear_gradcheck_and_gradgradcheck():
    torch.manual_seed(0)
    bil = nn.Bilinear(2, 3, 2).double()
    x1, x2 = r64(4, 2), r64(4, 3, seed=1)
    f = lambda a, b, w, c: F.bilinear(a, b, w, c)  # noqa: E731
    assert gradcheck(f, (x1, x2, bil.weight, bil.bias))
    assert gradgradcheck(f, (x1, x2, bil.weight, bil.bias))
    assert gradcheck(lambda a, b: bil(a, b), (x1, x2))


def test_bilinear_errors():
    with pytest.raises(RuntimeError, match="input2 size does not match weight size: got 4 but expected 3"):
        F.bilinear(torch.zeros(2, 3), torch.zeros(2, 4), torch.zeros(5, 3, 3))
    with pytest.raises(RuntimeError, match="batch dimensions do not match at dim 0: got 2 and 3"):
        F.bilinear(torch.zeros(2, 3), torch.zeros(3, 4), torch.zeros(5, 3, 4))
    with pytest.raises(RuntimeError, match="bias size does not match weight size: got 4 but expected 5"):
        F.bilinear(torch.zeros(2, 3), torch.zeros(2, 4), torch.zeros(5, 3, 4), torch.zeros(4))
    with pytest.raises(RuntimeError, match="input dimensions do not match"):
        F.bilinear(torch.zeros(2, 3), torch.zeros(4), torch.zeros(5, 3, 4))


def test_identity_flatten_unflatten():
    x = torch.randn(2, 3, 4, 5)
    assert nn.Identity(1, key=2)(x) is x
    assert nn.Flatten()(x).shape == (2, 60)
    assert nn.Flatten(0, 2)(x).shape == (24, 5)
    assert nn.Unflatten(1, (3, 1))(torch.randn(2, 3)).shape == (2, 3, 1)
    assert nn.Unflatten(-1, [2, -1])(torch.randn(2, 6)).shape == (2, 2, 3)
    assert repr(nn.Flatten()) == "Flatten(start_dim=1, end_dim=-1)"
    assert repr(nn.Unflatten(1, (2, 3))) == "Unflatten(dim=1, unflattened_size=(2, 3))"
    assert repr(nn.Identity()) == "Identity()"
    with pytest.raises(TypeError, match="unflattened_size must be tuple of ints"):
        nn.Unflatten(1, (2, 3.0))
    y = r64(2, 3, 2)
    assert gradcheck(lambda t: nn.Unflatten(1, (2, 3))(nn.Flatten()(t)), (y,))


def test_linear_inside_sequential_trains():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(2, 8), nn.Flatten(), nn.Linear(8, 1))
    x = torch.randn(32, 2)
    target = x.sum(1, keepdim=True)
    first = None
    for _ in range(100):
        loss = ((model(x) - target) ** 2).mean()
        first = loss.item() if first is None else first
        model.zero_grad()
        loss.backward()
        with torch.no_grad():
            for p in model.parameters():
                p.sub_(0.05 * p.grad)
    assert loss.item() < 0.05 * first


def test_lazy_linear_infers_in_features_and_becomes_a_linear():
    import tensorplug as torch
    import tensorplug.nn as nn
    lazy = nn.LazyLinear(3)
    assert repr(lazy) == "LazyLinear(in_features=0, out_features=3, bias=True)"
    assert repr(lazy.weight) == "<UninitializedParameter>"
    opt = torch.optim.SGD(lazy.parameters(), lr=0.1)          # built before the shapes are known
    x = torch.arange(10.0).reshape(2, 5)
    torch.manual_seed(0)
    y = lazy(x)
    torch.manual_seed(0)
    ref = nn.Linear(5, 3)                                     # the same draws: the same initial weights
    assert type(lazy) is nn.Linear and repr(lazy) == "Linear(in_features=5, out_features=3, bias=True)"
    assert torch.equal(lazy.weight, ref.weight) and torch.equal(lazy.bias, ref.bias)
    assert torch.allclose(y, ref(x)) and list(lazy.state_dict()) == ["weight", "bias"]
    y.sum().backward()
    before = lazy.weight.detach().clone()
    opt.step()
    assert torch.allclose(lazy.weight.detach(), before - 0.1 * x.sum(0).expand(3, 5))
    nobias = nn.LazyLinear(2, bias=False)
    assert nobias.bias is None and nobias(torch.ones(4)).shape == (2,)


def test_linear_of_a_3d_input_is_one_2d_gemm_with_pytorchs_grad_fn():
    """(*, in) inputs fold into one (rows, in) GEMM: values, gradients to any order, UnsafeViewBackward0."""
    import tensorplug as tp
    from tensorplug.autograd import gradcheck, gradgradcheck
    rng = np.random.default_rng(0)
    xn, wn, bn = rng.standard_normal((3, 2, 4)), rng.standard_normal((5, 4)), rng.standard_normal(5)
    x, w, b = (tp.tensor(a, requires_grad=True) for a in (xn, wn, bn))
    y = tp.nn.functional.linear(x, w, b)
    assert y.shape == (3, 2, 5) and y.grad_fn.name() == "UnsafeViewBackward0"
    np.testing.assert_allclose(y.detach().numpy(), xn @ wn.T + bn, rtol=1e-12, atol=1e-12)
    assert gradcheck(tp.nn.functional.linear, (x, w, b))
    assert gradgradcheck(tp.nn.functional.linear, (x, w, b))
    xt = tp.tensor(rng.standard_normal((4, 2, 3))).transpose(0, 2).requires_grad_()   # non-contiguous
    assert gradcheck(tp.nn.functional.linear, (xt, w, None))
