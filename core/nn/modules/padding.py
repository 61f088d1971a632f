"""Padding layers: ConstantPad1d/2d/3d, ZeroPad1d/2d/3d, ReflectionPad1d/2d/3d,
ReplicationPad1d/2d/3d, CircularPad1d/2d/3d (all through nn.functional.pad)."""
from __future__ import annotations

from ...ops.padding import pad as _pad
from .module import Module

__all__ = ["ConstantPad1d", "ConstantPad2d", "ConstantPad3d", "ZeroPad1d", "ZeroPad2d", "ZeroPad3d",
           "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d",
           "ReplicationPad3d", "CircularPad1d", "CircularPad2d", "CircularPad3d"]


def _ntuple_pad(padding, n):
    """An int pads every side by it; else a tuple of 2n widths (left, right, top, bottom, ...)."""
    if isinstance(padding, int):
        return (padding,) * (2 * n)
    padding = tuple(int(p) for p in padding)
    if len(padding) != 2 * n:
        raise ValueError(f"padding must be an int or a tuple of {2 * n} ints, got {padding}")
    return padding


class _ConstantPadNd(Module):
    _n = 0

    def __init__(self, padding, value):
        super().__init__()
        self.padding = _ntuple_pad(padding, self._n)
        self.value = value

    def forward(self, input):
        return _pad(input, self.padding, "constant", self.value)

    def extra_repr(self):
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    """Pad the last dim with a constant: padding int or (left, right)."""
    _n = 1


class ConstantPad2d(_ConstantPadNd):
    """Pad the last 2 dims with a constant: padding int or (left, right, top, bottom)."""
    _n = 2


class ConstantPad3d(_ConstantPadNd):
    """Pad the last 3 dims with a constant: padding int or (left, right, top, bottom, front, back)."""
    _n = 3


class _ZeroPadNd(_ConstantPadNd):
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class ZeroPad1d(_ZeroPadNd):
    """Pad the last dim with zeros."""
    _n = 1


class ZeroPad2d(_ZeroPadNd):
    """Pad the last 2 dims with zeros: padding int or (left, right, top, bottom)."""
    _n = 2


class ZeroPad3d(_ZeroPadNd):
    """Pad the last 3 dims with zeros."""
    _n = 3


class _ModePadNd(Module):
    _n = 0
    _mode = ""

    def __init__(self, padding):
        super().__init__()
        self.padding = _ntuple_pad(padding, self._n)

    def forward(self, input):
        return _pad(input, self.padding, self._mode)

    def extra_repr(self):
        return f"{self.padding}"


class ReflectionPad1d(_ModePadNd):
    """Mirror the last dim at its edges (edge not repeated)."""
    _n, _mode = 1, "reflect"


class ReflectionPad2d(_ModePadNd):
    """Mirror the last 2 dims at their edges."""
    _n, _mode = 2, "reflect"


class ReflectionPad3d(_ModePadNd):
    """Mirror the last 3 dims at their edges."""
    _n, _mode = 3, "reflect"


class ReplicationPad1d(_ModePadNd):
    """Repeat the edge values of the last dim."""
    _n, _mode = 1, "replicate"


class ReplicationPad2d(_ModePadNd):
    """Repeat the edge values of the last 2 dims."""
    _n, _mode = 2, "replicate"


class ReplicationPad3d(_ModePadNd):
    """Repeat the edge values of the last 3 dims."""
    _n, _mode = 3, "replicate"


class CircularPad1d(_ModePadNd):
    """Wrap the last dim around."""
    _n, _mode = 1, "circular"


class CircularPad2d(_ModePadNd):
    """Wrap the last 2 dims around."""
    _n, _mode = 2, "circular"


class CircularPad3d(_ModePadNd):
    """Wrap the last 3 dims around."""
    _n, _mode = 3, "circular"
