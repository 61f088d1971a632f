"""Activation functions and layers: values against float64 NumPy formulas written from the
definitions, first and second gradients against finite differences, in-place variants, stability
at large inputs, module arguments and reprs."""
import math

import numpy as np
import pytest

import tensorplug as torch
import tensorplug.nn as nn
import tensorplug.nn.functional as F
from tensorplug.autograd import gradcheck, gradgradcheck

SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946
_erf = np.vectorize(math.erf)


def f64(t):
    return np.asarray(t.detach().numpy(), dtype=np.float64)


KINKS = np.array([0.0, 0.1, 0.3, 0.5, 1.0, 1.5, 2.0, 3.0, 6.0])
KINKS = np.concatenate([KINKS, -KINKS])


def sample(*shape, seed=0, requires_grad=False, scale=2.0):
    """float64 values in [-1.5 * scale, 1.5 * scale], none within 0.02 of a kink of the functions
    tested here (0, +-0.1, +-0.3, +-0.5, +-1, +-1.5, +-2, +-3, +-6)."""
    rng = np.random.default_rng(seed)
    v = rng.uniform(-1.5, 1.5, size=shape) * scale
    while True:
        close = np.abs(v[..., None] - KINKS).min(-1) < 0.02
        if not close.any():
            break
        v[close] += 0.045
    return torch.tensor(v, dtype=torch.float64, requires_grad=requires_grad)


def _softplus(x, beta=1.0, threshold=20.0):
    return np.where(x * beta > threshold, x, np.log1p(np.exp(x * beta)) / beta)


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


# name -> (functional call, NumPy reference)
REFS = {
    "relu": (lambda x: F.relu(x), lambda a: np.maximum(a, 0)),
    "relu6": (lambda x: F.relu6(x), lambda a: np.minimum(np.maximum(a, 0), 6)),
    "leaky_relu": (lambda x: F.leaky_relu(x, 0.2), lambda a: np.where(a > 0, a, 0.2 * a)),
    "elu": (lambda x: F.elu(x, 0.7), lambda a: np.where(a > 0, a, 0.7 * (np.exp(a) - 1))),
    "selu": (lambda x: F.selu(x), lambda a: SELU_SCALE * np.where(a > 0, a, SELU_ALPHA * (np.exp(a) - 1))),
    "celu": (lambda x: F.celu(x, 1.5),
             lambda a: np.maximum(a, 0) + np.minimum(0, 1.5 * (np.exp(a / 1.5) - 1))),
    "gelu": (lambda x: F.gelu(x), lambda a: a * 0.5 * (1 + _erf(a / math.sqrt(2)))),
    "gelu_tanh": (lambda x: F.gelu(x, approximate="tanh"),
                  lambda a: 0.5 * a * (1 + np.tanh(math.sqrt(2 / math.pi) * (a + 0.044715 * a ** 3)))),
    "silu": (lambda x: F.silu(x), lambda a: a * _sigmoid(a)),
    "mish": (lambda x: F.mish(x), lambda a: a * np.tanh(np.log1p(np.exp(a)))),
    "softplus": (lambda x: F.softplus(x, beta=2.0, threshold=3.0), lambda a: _softplus(a, 2.0, 3.0)),
    "softsign": (lambda x: F.softsign(x), lambda a: a / (1 + np.abs(a))),
    "tanhshrink": (lambda x: F.tanhshrink(x), lambda a: a - np.tanh(a)),
    "hardtanh": (lambda x: F.hardtanh(x, -2.0, 1.0), lambda a: np.clip(a, -2, 1)),
    "threshold": (lambda x: F.threshold(x, 0.5, -7.0), lambda a: np.where(a > 0.5, a, -7.0)),
    "hardsigmoid": (lambda x: F.hardsigmoid(x), lambda a: np.clip(a + 3, 0, 6) / 6),
    "hardswish": (lambda x: F.hardswish(x), lambda a: a * np.clip(a + 3, 0, 6) / 6),
    "hardshrink": (lambda x: F.hardshrink(x, 0.5), lambda a: np.where(np.abs(a) > 0.5, a, 0)),
    "softshrink": (lambda x: F.softshrink(x, 0.5),
                   lambda a: np.where(a > 0.5, a - 0.5, np.where(a < -0.5, a + 0.5, 0))),
    "logsigmoid": (lambda x: F.logsigmoid(x), lambda a: np.log(_sigmoid(a))),
    "sigmoid": (lambda x: F.sigmoid(x), _sigmoid),
    "tanh": (lambda x: F.tanh(x), np.tanh),
    "glu": (lambda x: F.glu(x, 1), lambda a: a[:, :2] * _sigmoid(a[:, 2:])),
    "glu_last": (lambda x: F.glu(x), lambda a: a[..., :2] * _sigmoid(a[..., 2:])),
    "softmax": (lambda x: F.softmax(x, 1), lambda a: np.exp(a) / np.exp(a).sum(1, keepdims=True)),
    "log_softmax": (lambda x: F.log_softmax(x, 0), lambda a: a - np.log(np.exp(a).sum(0, keepdims=True))),
    "softmin": (lambda x: F.softmin(x, 1), lambda a: np.exp(-a) / np.exp(-a).sum(1, keepdims=True)),
    "rrelu_eval": (lambda x: F.rrelu(x, 0.1, 0.3), lambda a: np.where(a > 0, a, 0.2 * a)),
}


@pytest.mark.parametrize("name", sorted(REFS))
def test_forward_matches_numpy(name):
    """Each activation equals its definition computed in float64 NumPy (float32 and float64 input)."""
    fn, ref = REFS[name]
    x = sample(3, 4, seed=1, scale=3.0)
    np.testing.assert_allclose(f64(fn(x)), ref(f64(x)), rtol=1e-10, atol=1e-12)
    y32 = fn(x.float())
    assert y32.dtype == torch.float32
    np.testing.assert_allclose(f64(y32), ref(f64(x)), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", sorted(REFS))
def test_gradcheck_and_gradgradcheck(name):
    """First and second derivatives agree with finite differences."""
    fn, _ = REFS[name]
    x = sample(2, 4, seed=2, requires_grad=True)
    assert gradcheck(fn, (x,))
    assert gradgradcheck(fn, (x,))


def test_prelu_forward_and_gradients():
    """PReLU: per-channel slopes along dim 1 (or one shared), gradients for input and weight."""
    x = sample(2, 3, 2, seed=3, requires_grad=True)
    w = torch.tensor([0.1, 0.25, -0.5], dtype=torch.float64, requires_grad=True)
    a, wa = f64(x), f64(w)
    np.testing.assert_allclose(f64(F.prelu(x, w)), np.where(a > 0, a, wa[None, :, None] * a))
    assert gradcheck(F.prelu, (x, w))
    assert gradgradcheck(F.prelu, (x, w))
    w1 = torch.tensor([0.3], dtype=torch.float64, requires_grad=True)
    np.testing.assert_allclose(f64(F.prelu(x, w1)), np.where(a > 0, a, 0.3 * a))
    assert gradcheck(F.prelu, (x, w1)) and gradgradcheck(F.prelu, (x, w1))
    with pytest.raises(RuntimeError, match="Mismatch of parameter numbers"):
        F.prelu(x, torch.ones(4, dtype=torch.float64))


def test_softmax2d_over_channels():
    """Softmax2d normalizes over the channel dim of (N, C, H, W) and (C, H, W); differentiable twice."""
    m = nn.Softmax2d()
    x = sample(2, 3, 2, 2, seed=4, requires_grad=True)
    a = f64(x)
    e = np.exp(a)
    np.testing.assert_allclose(f64(m(x)), e / e.sum(1, keepdims=True), rtol=1e-12)
    x3 = sample(3, 2, 2, seed=5, requires_grad=True)
    e3 = np.exp(f64(x3))
    np.testing.assert_allclose(f64(m(x3)), e3 / e3.sum(0, keepdims=True), rtol=1e-12)
    assert gradcheck(m, (x3,)) and gradgradcheck(m, (x3,))
    with pytest.raises(ValueError):
        m(torch.randn(2, 3))


def test_log_softmax_second_order():
    """log_softmax's gradient is itself differentiable (Hessian-vector products)."""
    x = sample(2, 3, seed=6, requires_grad=True)
    assert gradgradcheck(lambda t: F.log_softmax(t, dim=1), (x,))
    assert gradgradcheck(lambda t: F.softmax(t, dim=0), (x,))


def test_softmax_dtype_argument():
    """dtype= converts before the computation."""
    x = torch.tensor([[1.0, 2.0, 3.0]])
    assert F.softmax(x, 1, dtype=torch.float64).dtype == torch.float64
    assert F.log_softmax(x, 1, dtype=torch.float64).dtype == torch.float64
    assert F.softmin(x, 1, dtype=torch.float64).dtype == torch.float64


@pytest.mark.parametrize("fn", [F.elu, F.selu, F.celu, F.softplus, F.logsigmoid, F.mish, F.silu])
def test_no_overflow_at_large_inputs(fn):
    """Large positive and negative inputs give finite values and finite gradients."""
    x = torch.tensor([-800.0, -50.0, 0.5, 50.0, 800.0], dtype=torch.float64, requires_grad=True)
    y = fn(x)
    y.sum().backward()
    assert np.isfinite(f64(y)).all()
    assert np.isfinite(f64(x.grad)).all()


def test_gradient_values_at_kinks_follow_pytorch():
    """ReLU and hardtanh pass no gradient exactly at their kinks; leaky_relu passes the slope at 0."""
    x = torch.tensor([-1.0, 0.0, 1.0, 6.0], requires_grad=True)
    F.relu(x).sum().backward()
    assert x.grad.tolist() == [0.0, 0.0, 1.0, 1.0]
    x.grad = None
    F.relu6(x).sum().backward()
    assert x.grad.tolist() == [0.0, 0.0, 1.0, 0.0]
    x.grad = None
    F.leaky_relu(x, 0.5).sum().backward()
    assert x.grad.tolist() == [0.5, 0.5, 1.0, 1.0]


@pytest.mark.parametrize("call", [
    lambda x: F.relu(x, inplace=True), lambda x: F.relu_(x), lambda x: F.leaky_relu(x, 0.1, True),
    lambda x: F.elu(x, inplace=True), lambda x: F.hardtanh(x, inplace=True), lambda x: F.relu6(x, True),
    lambda x: F.threshold(x, 0.0, 5.0, True), lambda x: F.selu(x, True), lambda x: F.celu(x, inplace=True),
    lambda x: F.silu(x, True), lambda x: F.hardswish(x, True), lambda x: F.hardsigmoid(x, True),
    lambda x: F.mish(x, True), lambda x: F.elu_(x), lambda x: F.threshold_(x, 0.0, 5.0)])
def test_inplace_variants(call):
    """inplace=True writes into the input (same object) with the out-of-place values, and the
    gradient flows through the in-place result of a non-leaf."""
    base = sample(3, 4, seed=7)
    expected = call(base.clone())
    x = base.clone()
    out = call(x)
    assert out is x
    np.testing.assert_allclose(f64(x), f64(expected))
    leaf = sample(3, 4, seed=7, requires_grad=True)
    y = leaf * 1
    call(y)
    y.sum().backward()
    z = sample(3, 4, seed=7, requires_grad=True)
    call(z.clone() * 1).sum().backward()
    np.testing.assert_allclose(f64(leaf.grad), f64(z.grad))


def test_inplace_on_leaf_requiring_grad_raises():
    x = torch.randn(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf"):
        F.relu(x, inplace=True)


def test_rrelu_training_slopes_in_range():
    """In training, RReLU's negative slopes lie in [lower, upper]; positives pass unchanged."""
    torch.manual_seed(0)
    x = torch.full((1000,), -1.0)
    y = F.rrelu(x, 0.1, 0.3, training=True)
    slopes = -f64(y)
    assert slopes.min() >= 0.1 and slopes.max() <= 0.3 and slopes.std() > 0.03
    assert F.rrelu(torch.ones(5), training=True).tolist() == [1.0] * 5


def test_glu_odd_dimension_raises():
    with pytest.raises(RuntimeError, match="Halving dimension must be even"):
        F.glu(torch.randn(2, 3))


# -- modules -------------------------------------------------------------------------------------------
MODULES = [
    (nn.ReLU(), lambda x: F.relu(x)), (nn.ReLU6(), F.relu6), (nn.LeakyReLU(0.2), lambda x: F.leaky_relu(x, 0.2)),
    (nn.ELU(0.5), lambda x: F.elu(x, 0.5)), (nn.SELU(), F.selu), (nn.CELU(2.0), lambda x: F.celu(x, 2.0)),
    (nn.GELU(), F.gelu), (nn.GELU("tanh"), lambda x: F.gelu(x, approximate="tanh")), (nn.SiLU(), F.silu),
    (nn.Mish(), F.mish), (nn.GLU(0), lambda x: F.glu(x, 0)), (nn.Tanh(), F.tanh),
    (nn.Tanhshrink(), F.tanhshrink), (nn.Threshold(0.1, 2.0), lambda x: F.threshold(x, 0.1, 2.0)),
    (nn.Sigmoid(), F.sigmoid), (nn.Hardtanh(-0.5, 0.5), lambda x: F.hardtanh(x, -0.5, 0.5)),
    (nn.Hardsigmoid(), F.hardsigmoid), (nn.Hardswish(), F.hardswish), (nn.Softsign(), F.softsign),
    (nn.Softplus(2.0, 5.0), lambda x: F.softplus(x, 2.0, 5.0)), (nn.LogSigmoid(), F.logsigmoid),
    (nn.Softmax(1), lambda x: F.softmax(x, 1)), (nn.LogSoftmax(1), lambda x: F.log_softmax(x, 1)),
    (nn.Softmin(0), lambda x: F.softmin(x, 0)), (nn.Hardshrink(0.3), lambda x: F.hardshrink(x, 0.3)),
    (nn.Softshrink(0.3), lambda x: F.softshrink(x, 0.3)),
]


@pytest.mark.parametrize("i", range(len(MODULES)))
def test_module_matches_functional_and_gradchecks(i):
    """Each layer computes its functional form; gradients of first and second order check out."""
    m, fn = MODULES[i]
    x = sample(2, 4, seed=8, requires_grad=True)
    np.testing.assert_allclose(f64(m(x)), f64(fn(x)))
    assert gradcheck(m, (x,)) and gradgradcheck(m, (x,))


def test_prelu_module():
    """PReLU: one parameter per channel initialised to `init`, learnt by backward."""
    m = nn.PReLU(3, init=0.1).double()
    assert [p.shape for p in m.parameters()] == [(3,)]
    assert m.weight.tolist() == pytest.approx([0.1] * 3)
    x = sample(2, 3, seed=9, requires_grad=True)
    assert gradcheck(m, (x,)) and gradgradcheck(m, (x,))
    m(x).sum().backward()
    assert m.weight.grad is not None and m.weight.grad.shape == (3,)
    assert nn.PReLU().weight.tolist() == [0.25]


REPRS = [
    (nn.ReLU(), "ReLU()"), (nn.ReLU(True), "ReLU(inplace=True)"), (nn.ReLU6(), "ReLU6()"),
    (nn.LeakyReLU(), "LeakyReLU(negative_slope=0.01)"), (nn.PReLU(3), "PReLU(num_parameters=3)"),
    (nn.ELU(), "ELU(alpha=1.0)"), (nn.ELU(0.5, inplace=True), "ELU(alpha=0.5, inplace=True)"),
    (nn.SELU(), "SELU()"), (nn.CELU(), "CELU(alpha=1.0)"), (nn.GELU(), "GELU(approximate='none')"),
    (nn.GELU("tanh"), "GELU(approximate='tanh')"), (nn.SiLU(), "SiLU()"), (nn.Mish(), "Mish()"),
    (nn.GLU(), "GLU(dim=-1)"), (nn.Tanh(), "Tanh()"), (nn.Tanhshrink(), "Tanhshrink()"),
    (nn.Threshold(0.1, 20), "Threshold(threshold=0.1, value=20)"), (nn.Sigmoid(), "Sigmoid()"),
    (nn.Hardtanh(), "Hardtanh(min_val=-1.0, max_val=1.0)"), (nn.Hardtanh(-2, 2), "Hardtanh(min_val=-2, max_val=2)"),
    (nn.Hardsigmoid(), "Hardsigmoid()"), (nn.Hardswish(), "Hardswish()"), (nn.Softsign(), "Softsign()"),
    (nn.Softplus(), "Softplus(beta=1.0, threshold=20.0)"), (nn.LogSigmoid(), "LogSigmoid()"),
    (nn.Softmax(dim=1), "Softmax(dim=1)"), (nn.LogSoftmax(1), "LogSoftmax(dim=1)"),
    (nn.Softmin(0), "Softmin(dim=0)"), (nn.Softmax2d(), "Softmax2d()"), (nn.Hardshrink(), "Hardshrink(0.5)"),
    (nn.Softshrink(), "Softshrink(0.5)"), (nn.RReLU(), "RReLU(lower=0.125, upper=0.3333333333333333)"),
]


@pytest.mark.parametrize("m, text", REPRS, ids=[t for _, t in REPRS])
def test_module_reprs(m, text):
    """Reprs are PyTorch's."""
    assert repr(m) == text


def test_functional_namespace_lists_activations():
    """Every activation is reachable as tensorplug.nn.functional.<name>."""
    for name in ("relu", "relu6", "leaky_relu", "prelu", "elu", "selu", "celu", "gelu", "silu", "mish",
                 "softplus", "softsign", "tanhshrink", "hardtanh", "threshold", "hardsigmoid", "hardswish",
                 "logsigmoid", "glu", "softmax", "log_softmax", "softmin", "sigmoid", "tanh"):
        assert callable(getattr(F, name)), name


def test_gumbel_softmax_samples_and_straight_through_gradient():
    torch.manual_seed(0)
    logits = torch.tensor([[0.0, 1.0, 2.0]]).expand(20000, 3)
    soft = F.gumbel_softmax(logits, tau=1.0)
    assert torch.allclose(soft.sum(-1), torch.ones(20000), atol=1e-5)
    hard = F.gumbel_softmax(logits, tau=0.5, hard=True)
    assert set(hard.unique().tolist()) == {0.0, 1.0} and (hard.sum(-1) == 1).all()
    # Gumbel-max: the argmax frequencies are softmax(logits)
    freq = (hard.sum(0) / 20000).tolist()
    want = np.exp([0.0, 1.0, 2.0]) / np.exp([0.0, 1.0, 2.0]).sum()
    assert np.allclose(freq, want, atol=0.015)
    l = torch.tensor([[1.0, 2.0, 3.0]], requires_grad=True)
    torch.manual_seed(1)
    y = F.gumbel_softmax(l, tau=0.5, hard=True)
    (y * torch.tensor([1.0, 2.0, 3.0])).sum().backward()
    torch.manual_seed(1)
    l2 = l.detach().clone().requires_grad_()
    (F.gumbel_softmax(l2, tau=0.5) * torch.tensor([1.0, 2.0, 3.0])).sum().backward()
    assert torch.allclose(l.grad, l2.grad)       # the hard sample carries the soft sample's gradient
