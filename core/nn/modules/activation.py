"""Activation layers: thin modules over tensorplug.ops.activation (nn.functional)."""
from __future__ import annotations

from ...ops import activation as F
from ...ops.creation import empty
from .. import init as _init
from ..parameter import Parameter
from .module import Module

__all__ = ["ReLU", "ReLU6", "LeakyReLU", "PReLU", "RReLU", "ELU", "SELU", "CELU", "GELU", "SiLU", "Mish",
           "GLU", "Tanh", "Tanhshrink", "Threshold", "Sigmoid", "Hardtanh", "Hardsigmoid", "Hardswish",
           "Hardshrink", "Softshrink", "Softsign", "Softplus", "LogSigmoid", "Softmax", "LogSoftmax",
           "Softmin", "Softmax2d"]


def _inplace_str(inplace):
    return "inplace=True" if inplace else ""


class ReLU(Module):
    """max(0, x) elementwise."""

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.relu(input, inplace=self.inplace)

    def extra_repr(self):
        return _inplace_str(self.inplace)


class Hardtanh(Module):
    """x clamped to [min_val, max_val]."""

    def __init__(self, min_val=-1.0, max_val=1.0, inplace=False):
        super().__init__()
        if min_val > max_val:
            raise ValueError("min_val cannot be greater than max_val")
        self.min_val, self.max_val, self.inplace = min_val, max_val, inplace

    def forward(self, input):
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self):
        return f"min_val={self.min_val}, max_val={self.max_val}" + (", inplace=True" if self.inplace else "")


class ReLU6(Hardtanh):
    """min(max(0, x), 6) elementwise."""

    def __init__(self, inplace=False):
        super().__init__(0.0, 6.0, inplace)

    def extra_repr(self):
        return _inplace_str(self.inplace)


class LeakyReLU(Module):
    """x where x > 0, else negative_slope * x."""

    def __init__(self, negative_slope=0.01, inplace=False):
        super().__init__()
        self.negative_slope, self.inplace = negative_slope, inplace

    def forward(self, input):
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self):
        return f"negative_slope={self.negative_slope}" + (", inplace=True" if self.inplace else "")


class PReLU(Module):
    """leaky ReLU with a learnt slope: one shared (num_parameters=1) or one per channel (dim 1),
    initialised to `init`."""

    def __init__(self, num_parameters=1, init=0.25, device=None, dtype=None):
        super().__init__()
        self.num_parameters = num_parameters
        self.init = init
        self.weight = Parameter(empty(num_parameters, device=device, dtype=dtype))
        self.reset_parameters()

    def reset_parameters(self):
        _init.constant_(self.weight, self.init)

    def forward(self, input):
        return F.prelu(input, self.weight)

    def extra_repr(self):
        return f"num_parameters={self.num_parameters}"



class RReLU(Module):
    """Randomized leaky ReLU: slopes drawn from U(lower, upper) in training, their mean in eval."""

    def __init__(self, lower=1.0 / 8, upper=1.0 / 3, inplace=False):
        super().__init__()
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, input):
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self):
        return f"lower={self.lower}, upper={self.upper}" + (", inplace=True" if self.inplace else "")


class ELU(Module):
    """x where x > 0, else alpha * (exp(x) - 1)."""

    def __init__(self, alpha=1.0, inplace=False):
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, input):
        return F.elu(input, self.alpha, self.inplace)

    def extra_repr(self):
        return f"alpha={self.alpha}" + (", inplace=True" if self.inplace else "")


class CELU(Module):
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1))."""

    def __init__(self, alpha=1.0, inplace=False):
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, input):
        return F.celu(input, self.alpha, self.inplace)

    def extra_repr(self):
        return f"alpha={self.alpha}" + (", inplace=True" if self.inplace else "")


class _Simple(Module):
    """An activation without parameters whose only option is `inplace`."""

    _fn = None

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return type(self)._fn(input, inplace=self.inplace)

    def extra_repr(self):
        return _inplace_str(self.inplace)


class SELU(_Simple):
    """scale * elu(x, alpha) with the self-normalizing constants."""
    _fn = staticmethod(F.selu)


class SiLU(_Simple):
    """x * sigmoid(x)."""
    _fn = staticmethod(F.silu)


class Mish(_Simple):
    """x * tanh(softplus(x))."""
    _fn = staticmethod(F.mish)


class Hardsigmoid(_Simple):
    """relu6(x + 3) / 6."""
    _fn = staticmethod(F.hardsigmoid)


class Hardswish(_Simple):
    """x * relu6(x + 3) / 6."""
    _fn = staticmethod(F.hardswish)


class _NoArgs(Module):
    _fn = None

    def forward(self, input):
        return type(self)._fn(input)


class Tanh(_NoArgs):
    """tanh(x)."""
    _fn = staticmethod(F.tanh)


class Sigmoid(_NoArgs):
    """1 / (1 + exp(-x))."""
    _fn = staticmethod(F.sigmoid)


class Tanhshrink(_NoArgs):
    """x - tanh(x)."""
    _fn = staticmethod(F.tanhshrink)


class Softsign(_NoArgs):
    """x / (1 + |x|)."""
    _fn = staticmethod(F.softsign)


class LogSigmoid(_NoArgs):
    """log(sigmoid(x))."""
    _fn = staticmethod(F.logsigmoid)


class GELU(Module):
    """x * Phi(x); approximate='tanh' for the tanh approximation."""

    def __init__(self, approximate="none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, input):
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self):
        return f"approximate={self.approximate!r}"


class GLU(Module):
    """a * sigmoid(b), with a, b the halves of the input along dim."""

    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.glu(input, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class Threshold(Module):
    """x where x > threshold, else value."""

    def __init__(self, threshold, value, inplace=False):
        super().__init__()
        self.threshold, self.value, self.inplace = threshold, value, inplace

    def forward(self, input):
        return F.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self):
        return f"threshold={self.threshold}, value={self.value}" + (", inplace=True" if self.inplace else "")


class Softplus(Module):
    """log(1 + exp(beta * x)) / beta, linear above threshold."""

    def __init__(self, beta=1.0, threshold=20.0):
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, input):
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self):
        return f"beta={self.beta}, threshold={self.threshold}"


class Hardshrink(Module):
    """x where |x| > lambd, else 0."""

    def __init__(self, lambd=0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, input):
        return F.hardshrink(input, self.lambd)

    def extra_repr(self):
        return f"{self.lambd}"


class Softshrink(Hardshrink):
    """x - lambd above lambd, x + lambd below -lambd, else 0."""

    def forward(self, input):
        return F.softshrink(input, self.lambd)


class _SoftmaxBase(Module):
    _fn = None

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def __setstate__(self, state):
        super().__setstate__(state)
        if not hasattr(self, "dim"):
            self.dim = None

    def forward(self, input):
        return type(self)._fn(input, self.dim, _stacklevel=5)

    def extra_repr(self):
        return f"dim={self.dim}"


class Softmax(_SoftmaxBase):
    """exp(x) / sum(exp(x)) along dim."""
    _fn = staticmethod(F.softmax)


class LogSoftmax(_SoftmaxBase):
    """log(softmax(x)) along dim."""
    _fn = staticmethod(F.log_softmax)


class Softmin(_SoftmaxBase):
    """softmax(-x) along dim."""
    _fn = staticmethod(F.softmin)


class Softmax2d(Module):
    """Softmax over the channels of every spatial location: input (N, C, H, W) or (C, H, W)."""

    def forward(self, input):
        if input.ndim not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.ndim}D instead")
        return F.softmax(input, -3, _stacklevel=5)


def __getattr__(name):
    # torch.nn.modules.activation.MultiheadAttention (defined in attention.py, which imports this file)
    if name == "MultiheadAttention":
        from .attention import MultiheadAttention
        return MultiheadAttention
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
