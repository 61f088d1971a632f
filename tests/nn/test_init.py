"""nn.init: gains, fans, bounds and spreads of every initialiser (statistically), and the default
initialisation of Linear and Bilinear."""
import math
import warnings

import numpy as np
import pytest

import tensorplug as torch
from tensorplug import nn
from tensorplug.nn import init


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(1234)


def test_calculate_gain():
    assert init.calculate_gain("linear") == 1 and init.calculate_gain("conv2d") == 1
    assert init.calculate_gain("sigmoid") == 1
    assert init.calculate_gain("tanh") == pytest.approx(5 / 3)
    assert init.calculate_gain("relu") == pytest.approx(math.sqrt(2))
    assert init.calculate_gain("leaky_relu") == pytest.approx(math.sqrt(2 / (1 + 0.01 ** 2)))
    assert init.calculate_gain("leaky_relu", 0.2) == pytest.approx(math.sqrt(2 / 1.04))
    assert init.calculate_gain("leaky_relu", math.sqrt(5)) == pytest.approx(math.sqrt(1 / 3))
    assert init.calculate_gain("selu") == 0.75
    with pytest.raises(ValueError, match="Unsupported nonlinearity"):
        init.calculate_gain("swish")
    with pytest.raises(ValueError, match="not a valid number"):
        init.calculate_gain("leaky_relu", "x")


def test_fans():
    assert init._calculate_fan_in_and_fan_out(torch.empty(5, 3)) == (3, 5)
    assert init._calculate_fan_in_and_fan_out(torch.empty(8, 4, 3, 3)) == (36, 72)
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        init.xavier_uniform_(torch.empty(3))


def _np(t):
    return t.detach().numpy().astype(np.float64)


def test_uniform_normal_constant():
    w = init.uniform_(torch.empty(100, 100), -0.5, 2.0)
    a = _np(w)
    assert a.min() >= -0.5 and a.max() < 2.0
    assert abs(a.mean() - 0.75) < 0.03 and abs(a.std() - 2.5 / math.sqrt(12)) < 0.02
    a = _np(init.normal_(torch.empty(100, 100), 1.0, 3.0))
    assert abs(a.mean() - 1.0) < 0.1 and abs(a.std() - 3.0) < 0.1
    assert np.all(_np(init.constant_(torch.empty(2, 3), 0.25)) == 0.25)
    assert np.all(_np(init.ones_(torch.empty(4))) == 1)
    assert np.all(_np(init.zeros_(torch.empty(4))) == 0)


def test_init_in_place_on_parameter_without_graph():
    p = nn.Parameter(torch.empty(3, 3))
    out = init.normal_(p)
    assert out is p and p.is_leaf and p.requires_grad and p.grad_fn is None
    init.kaiming_uniform_(p)
    init.orthogonal_(p)
    init.trunc_normal_(p)
    init.eye_(p)
    assert p.is_leaf and p.grad_fn is None


def test_eye_and_dirac():
    assert np.array_equal(_np(init.eye_(torch.empty(2, 3))), np.eye(2, 3))
    with pytest.raises(ValueError, match="2 dimensions"):
        init.eye_(torch.empty(2, 2, 2))
    w = _np(init.dirac_(torch.empty(4, 2, 3)))
    expected = np.zeros((4, 2, 3))
    expected[0, 0, 1] = expected[1, 1, 1] = 1
    assert np.array_equal(w, expected)
    w = _np(init.dirac_(torch.empty(4, 2, 3, 3), groups=2))
    assert w.sum() == 4 and w[2, 0, 1, 1] == 1 and w[3, 1, 1, 1] == 1


def test_xavier():
    w = torch.empty(200, 300)
    bound = 1.5 * math.sqrt(6 / 500)
    a = _np(init.xavier_uniform_(w, gain=1.5))
    assert a.min() >= -bound and a.max() <= bound and a.max() > 0.98 * bound
    assert abs(a.std() - bound / math.sqrt(3)) < 0.02 * bound
    a = _np(init.xavier_normal_(torch.empty(200, 300), gain=2.0))
    std = 2.0 * math.sqrt(2 / 500)
    assert abs(a.std() - std) < 0.02 * std and abs(a.mean()) < 0.05 * std


@pytest.mark.parametrize("mode,nonlinearity,a", [("fan_in", "leaky_relu", 0), ("fan_out", "relu", 0),
                                                 ("fan_in", "leaky_relu", math.sqrt(5)), ("fan_in", "tanh", 0)])
def test_kaiming(mode, nonlinearity, a):
    shape = (64, 32, 3)
    fan = 32 * 3 if mode == "fan_in" else 64 * 3
    gain = init.calculate_gain(nonlinearity, a)
    std = gain / math.sqrt(fan)
    u = _np(init.kaiming_uniform_(torch.empty(*shape), a=a, mode=mode, nonlinearity=nonlinearity))
    bound = math.sqrt(3) * std
    assert u.min() >= -bound and u.max() <= bound and u.max() > 0.98 * bound
    assert abs(u.std() - std) < 0.03 * std
    n = _np(init.kaiming_normal_(torch.empty(*shape), a=a, mode=mode, nonlinearity=nonlinearity))
    assert abs(n.std() - std) < 0.03 * std and abs(n.mean()) < 0.05 * std


def test_kaiming_errors_and_zero_element():
    with pytest.raises(ValueError, match="Mode fan_avg not supported"):
        init.kaiming_uniform_(torch.empty(2, 2), mode="fan_avg")
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        init.kaiming_uniform_(torch.empty(0, 3))
    assert any("zero-element" in str(x.message) for x in w)


@pytest.mark.parametrize("shape", [(30, 30), (40, 10), (10, 40), (6, 4, 2, 2)])
def test_orthogonal(shape):
    w = _np(init.orthogonal_(torch.empty(*shape), gain=2.0)).reshape(shape[0], -1)
    rows, cols = w.shape
    if rows >= cols:
        assert np.allclose(w.T @ w, 4 * np.eye(cols), atol=1e-5)
    else:
        assert np.allclose(w @ w.T, 4 * np.eye(rows), atol=1e-5)
    with pytest.raises(ValueError, match="2 or more dimensions"):
        init.orthogonal_(torch.empty(3))


def test_orthogonal_is_random_and_seeded():
    torch.manual_seed(0)
    a = _np(init.orthogonal_(torch.empty(5, 5)))
    torch.manual_seed(0)
    b = _np(init.orthogonal_(torch.empty(5, 5)))
    c = _np(init.orthogonal_(torch.empty(5, 5)))
    assert np.array_equal(a, b) and not np.allclose(a, c)


def test_trunc_normal():
    a = _np(init.trunc_normal_(torch.empty(200000), mean=1.0, std=2.0, a=-1.0, b=4.0))
    assert a.min() >= -1.0 and a.max() <= 4.0
    # moments of N(1, 4) truncated to [-1, 4]: alpha = -1, beta = 1.5
    phi = lambda x: math.exp(-x * x / 2) / math.sqrt(2 * math.pi)  # noqa: E731
    Phi = lambda x: (1 + math.erf(x / math.sqrt(2))) / 2              # noqa: E731
    al, be = -1.0, 1.5
    Z = Phi(be) - Phi(al)
    mean = 1 + 2 * (phi(al) - phi(be)) / Z
    var = 4 * (1 + (al * phi(al) - be * phi(be)) / Z - ((phi(al) - phi(be)) / Z) ** 2)
    assert abs(a.mean() - mean) < 0.01 and abs(a.std() - math.sqrt(var)) < 0.01
    d = _np(init.trunc_normal_(torch.empty(50000)))               # default [-2, 2], N(0, 1)
    assert d.min() >= -2 and d.max() <= 2 and abs(d.std() - 0.8796) < 0.01
    with pytest.warns(UserWarning, match="more than 2 std"):                        # far tail
        t = _np(init.trunc_normal_(torch.empty(10000, dtype=torch.float64), a=3.0, b=3.5))
    assert t.min() >= 3.0 and t.max() <= 3.5 and 3.0 < t.mean() < 3.25


def test_sparse():
    w = _np(init.sparse_(torch.empty(10, 6), sparsity=0.3, std=0.5))
    assert np.all((w == 0).sum(axis=0) >= 3)


def test_deprecated_aliases_warn():
    with pytest.warns(FutureWarning):
        init.uniform(torch.empty(2))


def test_linear_default_init():
    lin = nn.Linear(400, 300)
    bound = 1 / math.sqrt(400)         # kaiming_uniform_(a=sqrt(5)) gives the same bound
    w, b = _np(lin.weight), _np(lin.bias)
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.99 * bound
    assert abs(w.std() - bound / math.sqrt(3)) < 0.02 * bound
    assert np.abs(b).max() <= bound and b.std() > 0.4 * bound
    assert lin.weight.dtype == torch.float32
    assert nn.Linear(3, 2, dtype=torch.float64).weight.dtype == torch.float64


def test_bilinear_default_init():
    bil = nn.Bilinear(100, 20, 50)
    bound = 1 / math.sqrt(100)
    w, b = _np(bil.weight), _np(bil.bias)
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.99 * bound
    assert abs(w.std() - bound / math.sqrt(3)) < 0.03 * bound
    assert np.abs(b).max() <= bound
