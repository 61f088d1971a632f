"""Activation functions of nn.functional: relu relu6 leaky_relu prelu rrelu elu selu celu gelu silu
mish softplus softsign tanhshrink hardtanh threshold hardsigmoid hardswish hardshrink softshrink
logsigmoid glu softmax log_softmax softmin sigmoid tanh.

Most are short compositions of differentiable Tensor ops, so gradients of any order come for free.
Ops whose naive composition would overflow in a discarded branch (elu, celu, softplus, logsigmoid)
compute their forward under no_grad and record a vjp written in Tensor ops (differentiable again).

    >>> import tensorplug as torch; import tensorplug.nn.functional as F
    >>> F.leaky_relu(torch.tensor([-2., 3.]), 0.1)          # tensor([-0.2000,  3.0000])
"""
from __future__ import annotations

import math

from ..amp.state import state as _amp
from . import pointwise as _pw
from . import reduction as _red
from ._core import (Tensor, _gstate, _make, cast_data, check_inplace, commit_inplace, record, snapshot, wrap_dim,
                    zeros_like_grad)
from ._float32 import in_float32 as _f32        # bfloat16 activations run in float32, as PyTorch's kernels

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


# -- helpers ------------------------------------------------------------------------------------
def _check_tensor(x, name):
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}(): argument 'input' must be Tensor, not {type(x).__name__}")


def _inplace(fn, input, *args):
    """fn(input, *args) written into input (autograd sees an in-place op)."""
    check_inplace(input)
    src = snapshot(input) if (input._rg and _gstate.enabled) else input
    return commit_inplace(input, fn(src, *args))


def _maybe_inplace(fn, input, inplace, *args):
    return _inplace(fn, input, *args) if inplace else fn(input, *args)


def _custom(name, x, forward, grad):
    """y = forward(x) computed without recording; its vjp is grad(g, x, y), written in Tensor ops."""
    prev = _gstate.enabled
    _gstate.enabled = False
    try:
        y = forward(x)
    finally:
        _gstate.enabled = prev
    if prev and x._rg:
        record(name, y, (x,), lambda g: (grad(g, x, y),), saved=(x, y))
    return y


def _keep(g, mask):
    """g where mask, else 0 (differentiable in g)."""
    return _pw.where(mask, g, zeros_like_grad(g))


def _float(x):
    return x if x._dtype.is_floating_point else x.float()


# -- ReLU family --------------------------------------------------------------------------------
def relu(input, inplace=False):
    """max(0, x). >>> relu(tensor([-1., 2.])) -> tensor([0., 2.])"""
    _check_tensor(input, "relu")
    return _maybe_inplace(_pw.relu, input, inplace)


def relu_(input):
    return relu(input, inplace=True)


def _hardtanh(x, min_val, max_val):
    x = _float(x)
    y = _pw.clamp(x.detach(), min_val, max_val)
    if _gstate.enabled and x._rg:
        record("HardtanhBackward0", y, (x,), lambda g: (_keep(g, (x > min_val) & (x < max_val)),),
               saved=(x,))
    return y


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    """x clamped to [min_val, max_val]; the gradient is 1 strictly inside the range, else 0."""
    _check_tensor(input, "hardtanh")
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    return _maybe_inplace(_hardtanh, input, inplace, min_val, max_val)


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    return hardtanh(input, min_val, max_val, inplace=True)


def relu6(input, inplace=False):
    """min(max(0, x), 6)."""
    return hardtanh(input, 0.0, 6.0, inplace)


def _leaky_relu(x, slope):
    return _pw.where(x > 0, x, x * slope)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    """x where x > 0, else negative_slope * x."""
    _check_tensor(input, "leaky_relu")
    return _maybe_inplace(_leaky_relu, input, inplace, negative_slope)


def leaky_relu_(input, negative_slope=0.01):
    return leaky_relu(input, negative_slope, inplace=True)


def prelu(input, weight):
    """leaky_relu with a learnt slope: one per channel (dim 1), or one shared (weight of 1 element)."""
    if _amp.on:
        return _amp.run("prelu", prelu, (input, weight))
    _check_tensor(input, "prelu")
    n = weight.numel()
    if n == 1:
        w = weight.reshape(())
    else:
        if input.ndim < 2:
            raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found parameter "
                               f"numbers = {n} and channel size = 1.")
        c = input.shape[1]
        if c != n:
            raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found parameter "
                               f"numbers = {n} and channel size = {c}.")
        w = weight.reshape((1, c) + (1,) * (input.ndim - 2))
    return _pw.where(input > 0, input, w * input)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    """Randomized leaky ReLU: in training each negative element gets a slope drawn from
    U(lower, upper); in eval the slope is (lower + upper) / 2."""
    _check_tensor(input, "rrelu")
    if not training:
        return leaky_relu(input, (lower + upper) / 2, inplace)
    from .random import rand
    slope = rand(*input.shape, dtype=input.dtype, device=input.device) * (upper - lower) + lower
    return _maybe_inplace(lambda x: _pw.where(x >= 0, x, x * slope), input, inplace)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False):
    return rrelu(input, lower, upper, training, inplace=True)


def _threshold(input, threshold, value, inplace=False):
    """x where x > threshold, else value."""
    _check_tensor(input, "threshold")
    return _maybe_inplace(lambda x: _pw.where(x > threshold, x, value), input, inplace)


threshold = _threshold


def threshold_(input, threshold, value):
    return _threshold(input, threshold, value, inplace=True)


# -- exponential family -------------------------------------------------------------------------
@_f32
def _elu(x, alpha):
    x = _float(x)
    return _custom("EluBackward0", x,
                   lambda x: _pw.where(x > 0, x, _pw.expm1(_pw.clamp(x, max=0.0)) * alpha),
                   lambda g, x, y: _pw.where(x > 0, g, g * (y + alpha)))


def elu(input, alpha=1.0, inplace=False):
    """x where x > 0, else alpha * (exp(x) - 1)."""
    _check_tensor(input, "elu")
    return _maybe_inplace(_elu, input, inplace, alpha)


def elu_(input, alpha=1.0):
    return elu(input, alpha, inplace=True)


def selu(input, inplace=False):
    """scale * elu(x, alpha) with the self-normalizing constants of Klambauer et al. (2017)."""
    _check_tensor(input, "selu")
    return _maybe_inplace(_f32(lambda x: _elu(x, _SELU_ALPHA) * _SELU_SCALE), input, inplace)


def selu_(input):
    return selu(input, inplace=True)


@_f32
def _celu(x, alpha):
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError")
    x = _float(x)
    return _custom("CeluBackward0", x,
                   lambda x: _pw.where(x > 0, x, _pw.expm1(_pw.clamp(x, max=0.0) / alpha) * alpha),
                   lambda g, x, y: _pw.where(x > 0, g, g * (y / alpha + 1)))


def celu(input, alpha=1.0, inplace=False):
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1))."""
    _check_tensor(input, "celu")
    return _maybe_inplace(_celu, input, inplace, alpha)


def celu_(input, alpha=1.0):
    return celu(input, alpha, inplace=True)


_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


@_f32
def gelu(input, approximate="none"):
    """x * Phi(x) (Phi: the standard normal CDF); approximate='tanh' uses the tanh approximation."""
    _check_tensor(input, "gelu")
    if approximate not in ("none", "tanh"):
        raise RuntimeError(f"approximate argument must be either none or tanh., got {approximate!r}")
    x = _float(input)
    if x._dtype.category == 3:
        if approximate == "none":
            return x * 0.5 * (1 + _pw.erf(x * (1 / math.sqrt(2.0))))
        return x * 0.5 * (1 + _pw.tanh((x + x * x * x * 0.044715) * _SQRT_2_OVER_PI))
    k = x._k
    y = _make(k["gelu"](x._data, approximate), x._dtype, k, x._dev)
    if _gstate.enabled and x._rg:
        record("GeluBackward0", y, (x,), lambda g: (_gelu_grad(g, x, approximate),), saved=(x,))
    return y


def _gelu_grad(g, x, approximate):
    """g * gelu'(x): the backend's fused `gelu_backward` kernel, or (create_graph) Tensor ops."""
    if not _gstate.enabled:
        return _make(x._k["gelu_backward"](cast_data(g, x._dtype), x._data, approximate), x._dtype, x._k, x._dev)
    if approximate == "tanh":
        x2 = x * x
        t = _pw.tanh((x + x2 * x * 0.044715) * _SQRT_2_OVER_PI)
        return g * ((t + 1) * 0.5 + x * 0.5 * (1 - t * t) * ((x2 * (3 * 0.044715) + 1) * _SQRT_2_OVER_PI))
    cdf = (_pw.erf(x * (1 / math.sqrt(2.0))) + 1) * 0.5
    return g * (cdf + x * _pw.exp(x * x * -0.5) * (1 / math.sqrt(2 * math.pi)))


def silu(input, inplace=False):
    """x * sigmoid(x) (also called swish)."""
    _check_tensor(input, "silu")
    return _maybe_inplace(_f32(lambda x: x * _pw.sigmoid(x)), input, inplace)


@_f32
def _softplus(x, beta, threshold):
    x = _float(x)

    def forward(x):
        bx = x * beta
        return _pw.where(bx > threshold, x, _pw.log1p(_pw.exp(_pw.clamp(bx, max=float(threshold)))) / beta)
    return _custom("SoftplusBackward0", x, forward,
                   lambda g, x, y: _pw.where(x * beta > threshold, g, g * _pw.sigmoid(x * beta)))


def softplus(input, beta=1.0, threshold=20.0):
    """log(1 + exp(beta * x)) / beta; linear (x) where beta * x > threshold."""
    if _amp.on:
        return _amp.run("softplus", softplus, (input, beta, threshold))
    _check_tensor(input, "softplus")
    return _softplus(input, beta, threshold)


def mish(input, inplace=False):
    """x * tanh(softplus(x))."""
    _check_tensor(input, "mish")
    return _maybe_inplace(_f32(lambda x: x * _pw.tanh(_softplus(x, 1.0, 20.0))), input, inplace)


@_f32
def logsigmoid(input):
    """log(sigmoid(x)), computed stably as min(x, 0) - log1p(exp(-|x|))."""
    _check_tensor(input, "logsigmoid")
    x = _float(input)
    return _custom("LogSigmoidBackward0", x,
                   lambda x: _pw.clamp(x, max=0.0) - _pw.log1p(_pw.exp(-_pw.abs(x))),
                   lambda g, x, y: g * _pw.sigmoid(-x))


# -- rational and shrinkage -------------------------------------------------------------------
def softsign(input):
    """x / (1 + |x|)."""
    _check_tensor(input, "softsign")
    return input / (_pw.abs(input) + 1)


def tanhshrink(input):
    """x - tanh(x)."""
    _check_tensor(input, "tanhshrink")
    return input - _pw.tanh(input)


def hardsigmoid(input, inplace=False):
    """relu6(x + 3) / 6."""
    _check_tensor(input, "hardsigmoid")
    return _maybe_inplace(_f32(lambda x: _hardtanh(x + 3, 0.0, 6.0) / 6), input, inplace)


def hardswish(input, inplace=False):
    """x * relu6(x + 3) / 6."""
    _check_tensor(input, "hardswish")
    return _maybe_inplace(_f32(lambda x: x * _hardtanh(x + 3, 0.0, 6.0) / 6), input, inplace)


def hardshrink(input, lambd=0.5):
    """x where |x| > lambd, else 0."""
    _check_tensor(input, "hardshrink")
    return _pw.where(_pw.abs(input) > lambd, input, 0.0)


def softshrink(input, lambd=0.5):
    """x - lambd where x > lambd, x + lambd where x < -lambd, else 0."""
    _check_tensor(input, "softshrink")
    if lambd < 0:
        raise RuntimeError(f"lambda must be greater or equal to 0, but found to be {lambd}.")
    return _pw.where(input > lambd, input - lambd, _pw.where(input < -lambd, input + lambd, 0.0))


def glu(input, dim=-1):
    """Gated linear unit: a * sigmoid(b), where a and b are the two halves of input along dim."""
    _check_tensor(input, "glu")
    if input.ndim == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    d = wrap_dim(dim, input.ndim)
    n = input.shape[d]
    if n % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {d} is size {n}")
    a, b = input.narrow(d, 0, n // 2), input.narrow(d, n // 2, n // 2)
    return a * _pw.sigmoid(b)


# -- softmax family -----------------------------------------------------------------------------
def softmax(input, dim=None, _stacklevel=3, dtype=None):
    """exp(x) / sum(exp(x)) along dim."""
    return _red.softmax(input, dim, dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    """log(softmax(x)) along dim, computed stably."""
    return _red.log_softmax(input, dim, dtype)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    """softmax(-x) along dim."""
    if dtype is not None:
        input = input.to(dtype)
    return _red.softmax(-input, dim)


def sigmoid(input):
    """1 / (1 + exp(-x))."""
    return _pw.sigmoid(input)


def tanh(input):
    return _pw.tanh(input)


def gumbel_softmax(logits, tau=1.0, hard=False, eps=1e-10, dim=-1):
    """softmax((logits + Gumbel noise) / tau) along dim; hard: the one-hot argmax in the forward pass
    with the soft sample's gradient (straight-through), as PyTorch."""
    _check_tensor(logits, "gumbel_softmax")
    gumbels = -logits.detach().new_empty(tuple(logits.shape)).exponential_().log()
    y_soft = _red.softmax((logits + gumbels) / tau, dim)
    if not hard:
        return y_soft
    index = y_soft.detach().argmax(dim, keepdim=True)
    y_hard = y_soft.detach().new_zeros(tuple(logits.shape)).scatter_(dim, index, 1.0)
    return y_hard - y_soft.detach() + y_soft


FUNCTIONAL = ["relu", "relu_", "relu6", "leaky_relu", "leaky_relu_", "prelu", "rrelu", "rrelu_", "elu", "elu_",
              "selu", "selu_", "celu", "celu_", "gelu", "silu", "mish", "softplus", "softsign", "tanhshrink",
              "hardtanh", "hardtanh_", "threshold", "threshold_", "hardsigmoid", "hardswish", "hardshrink",
              "softshrink", "logsigmoid", "glu", "softmax", "log_softmax", "softmin", "sigmoid", "tanh",
              "gumbel_softmax"]
