"""bfloat16 ops that PyTorch computes in float32: `in_float32` runs an op composed of several Tensor ops in
float32 when its floating-point tensor arguments are bfloat16, and rounds the result to bfloat16 once, as
PyTorch's CPU kernel for the op does (each Tensor op of the composition would round to bfloat16).

    >>> lerp = in_float32(lambda a, b, w: a + w * (b - a))

Gradients flow through the two casts, so they arrive in bfloat16 and were computed in float32 too.
"""
from __future__ import annotations

import functools

from .. import dtypes as _dt
from ._core import Tensor

_BF16 = _dt.bfloat16


def _only_bfloat16(values):
    """True when some value is a bfloat16 tensor and no tensor has another floating dtype."""
    seen = False
    for v in values:
        if isinstance(v, Tensor):
            d = v._dtype
            if d is _BF16:
                seen = True
            elif d.category >= 2:
                return False
    return seen


def _up(v):
    return v.float() if isinstance(v, Tensor) and v._dtype is _BF16 else v


def _down(r):
    if isinstance(r, Tensor):
        return r.to(_BF16) if r._dtype is _dt.float32 else r
    if isinstance(r, tuple):
        return type(r)(*map(_down, r)) if hasattr(r, "_fields") else tuple(map(_down, r))
    return r


def round_scalar(v) -> float:
    """A Python number rounded to bfloat16 (through float32, as PyTorch converts it)."""
    import numpy as np
    with np.errstate(over="ignore"):
        return float(np.float32(v).astype(_dt.numpy_bfloat16()))


def in_float32(fn):
    """fn computed in float32 for bfloat16 tensor arguments (see the module docstring). A call with out=
    runs fn unchanged."""
    @functools.wraps(fn)
    def run(*args, **kwargs):
        if kwargs.get("out") is not None or not _only_bfloat16((*args, *kwargs.values())):
            return fn(*args, **kwargs)
        return _down(fn(*map(_up, args), **{k: _up(v) for k, v in kwargs.items()}))
    return run
