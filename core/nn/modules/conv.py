"""Conv1d/2d/3d, ConvTranspose1d/2d/3d, Fold, Unfold.

Parameters are initialised like PyTorch's: the weight with kaiming_uniform_(a=sqrt(5)), the bias
from U(-1/sqrt(fan_in), 1/sqrt(fan_in)). Non-zero padding modes pad with F.pad first.

    >>> m = Conv2d(1, 6, 5)
    >>> m
    Conv2d(1, 6, kernel_size=(5, 5), stride=(1, 1))
    >>> m(tensorplug.randn(2, 1, 28, 28)).shape
    tensorplug.Size([2, 6, 24, 24])
"""
from __future__ import annotations

import math

from ...ops import conv as _F
from ...ops.creation import empty
from ...ops.padding import pad as _pad
from .. import init
from ..parameter import Parameter
from .module import Module

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d", "Fold",
           "Unfold"]

_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


def _tuple(v, n):
    if isinstance(v, (list, tuple)):
        v = tuple(v)
        return v * n if len(v) == 1 and n > 1 else v
    return (v,) * n


class _ConvNd(Module):
    _nd = 0
    transposed = False

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation, output_padding,
                 groups, bias, padding_mode, device=None, dtype=None):
        super().__init__()
        nd = self._nd
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        if isinstance(padding, str):
            if padding not in ("valid", "same"):
                raise ValueError(f"Invalid padding string {padding!r}, should be one of {{'valid', 'same'}}")
            if padding == "same" and any(s != 1 for s in _tuple(stride, nd)):
                raise ValueError("padding='same' is not supported for strided convolutions")
        if padding_mode not in _PADDING_MODES:
            raise ValueError(f"padding_mode must be one of {set(_PADDING_MODES)}, but got "
                             f"padding_mode={padding_mode!r}")
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = _tuple(kernel_size, nd)
        self.stride = _tuple(stride, nd)
        self.padding = padding if isinstance(padding, str) else _tuple(padding, nd)
        self.dilation = _tuple(dilation, nd)
        self.transposed = self.transposed
        self.output_padding = _tuple(output_padding, nd)
        self.groups = groups
        self.padding_mode = padding_mode
        # F.pad's (last dim first) widths for the non-zero padding modes
        if isinstance(self.padding, str):
            widths = []
            if self.padding == "same":
                for d, k in zip(reversed(self.dilation), reversed(self.kernel_size)):
                    total = d * (k - 1)
                    widths += [total // 2, total - total // 2]
            else:
                widths = [0, 0] * nd
            self._reversed_padding_repeated_twice = widths
        else:
            self._reversed_padding_repeated_twice = [p for p in reversed(self.padding) for _ in range(2)]
        if self.transposed:
            shape = (in_channels, out_channels // groups) + self.kernel_size
        else:
            shape = (out_channels, in_channels // groups) + self.kernel_size
        self.weight = Parameter(empty(shape, device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(empty(out_channels, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            if fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def extra_repr(self):
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        pad = self.padding
        if isinstance(pad, str) or pad != (0,) * len(pad):
            s += f", padding={pad}"
        if self.dilation != (1,) * len(self.dilation):
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * len(self.output_padding):
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s

    def __setstate__(self, state):
        super().__setstate__(state)
        if not hasattr(self, "padding_mode"):
            self.padding_mode = "zeros"


class _Conv(_ConvNd):
    _fn = None

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True, padding_mode="zeros", device=None, dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, 0, groups, bias,
                         padding_mode, device, dtype)

    def _conv_forward(self, input, weight, bias):
        fn = type(self)._fn
        if self.padding_mode != "zeros":
            input = _pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)
            return fn(input, weight, bias, self.stride, 0, self.dilation, self.groups)
        return fn(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)

    def forward(self, input):
        return self._conv_forward(input, self.weight, self.bias)


class Conv1d(_Conv):
    """1-d convolution over (N, C_in, L) inputs; weight (out_channels, in_channels / groups, k)."""
    _nd = 1
    _fn = staticmethod(_F.conv1d)


class Conv2d(_Conv):
    """2-d convolution over (N, C_in, H, W) inputs; weight (out_channels, in_channels / groups, kH, kW)."""
    _nd = 2
    _fn = staticmethod(_F.conv2d)


class Conv3d(_Conv):
    """3-d convolution over (N, C_in, D, H, W) inputs."""
    _nd = 3
    _fn = staticmethod(_F.conv3d)


class _ConvTranspose(_ConvNd):
    transposed = True
    _fn = None

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 bias=True, dilation=1, padding_mode="zeros", device=None, dtype=None):
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {type(self).__name__}')
        if isinstance(padding, str):
            raise ValueError(f"{type(self).__name__} does not support string padding")
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, output_padding,
                         groups, bias, padding_mode, device, dtype)

    def _output_padding(self, input, output_size):
        if output_size is None:
            return self.output_padding
        nd = self._nd
        output_size = list(output_size.tolist() if hasattr(output_size, "tolist") else output_size)
        non_spatial = 2 if input.dim() == nd + 2 else 1
        if len(output_size) == non_spatial + nd:
            output_size = output_size[non_spatial:]
        if len(output_size) != nd:
            raise ValueError(f"ConvTranspose{nd}D: for {input.dim()}D input, output_size must have {nd} or "
                             f"{non_spatial + nd} elements (got {len(output_size)})")
        spatial = input.shape[-nd:]
        mins = [(spatial[d] - 1) * self.stride[d] - 2 * self.padding[d] + self.dilation[d] * (self.kernel_size[d] - 1)
                + 1 for d in range(nd)]
        maxs = [m + self.stride[d] - 1 for d, m in enumerate(mins)]
        for size, lo, hi in zip(output_size, mins, maxs):
            if not lo <= size <= hi:
                raise ValueError(f"requested an output size of {output_size}, but valid sizes range from {mins} "
                                 f"to {maxs} (for an input of {list(spatial)})")
        return tuple(int(s) - m for s, m in zip(output_size, mins))

    def forward(self, input, output_size=None):
        op = self._output_padding(input, output_size)
        return type(self)._fn(input, self.weight, self.bias, self.stride, self.padding, op, self.groups,
                              self.dilation)


class ConvTranspose1d(_ConvTranspose):
    """Transposed 1-d convolution; weight (in_channels, out_channels / groups, k)."""
    _nd = 1
    _fn = staticmethod(_F.conv_transpose1d)


class ConvTranspose2d(_ConvTranspose):
    """Transposed 2-d convolution ("deconvolution"); weight (in_channels, out_channels / groups, kH, kW).

    >>> ConvTranspose2d(3, 4, 3, stride=2, output_padding=1)
    ConvTranspose2d(3, 4, kernel_size=(3, 3), stride=(2, 2), output_padding=(1, 1))
    """
    _nd = 2
    _fn = staticmethod(_F.conv_transpose2d)


class ConvTranspose3d(_ConvTranspose):
    _nd = 3
    _fn = staticmethod(_F.conv_transpose3d)


class Fold(Module):
    """Combines sliding local blocks (N, C * prod(kernel_size), L) into a (N, C, *output_size) tensor."""

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.output_size = output_size
        self.kernel_size = kernel_size
        self.dilation = dilation
        self.padding = padding
        self.stride = stride

    def forward(self, input):
        return _F.fold(input, self.output_size, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self):
        return (f"output_size={self.output_size}, kernel_size={self.kernel_size}, dilation={self.dilation}, "
                f"padding={self.padding}, stride={self.stride}")


class Unfold(Module):
    """Extracts sliding local blocks of a (N, C, H, W) input as columns (N, C * prod(kernel_size), L)."""

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.kernel_size = kernel_size
        self.dilation = dilation
        self.padding = padding
        self.stride = stride

    def forward(self, input):
        return _F.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self):
        return (f"kernel_size={self.kernel_size}, dilation={self.dilation}, padding={self.padding}, "
                f"stride={self.stride}")
