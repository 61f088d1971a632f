"""broadcast_warning: PyTorch 0.2's broadcasting warnings and its deprecated 1-d pointwise fallback.

Turned on, the broadcast cache of ops._core stops caching and every new broadcast of two shapes passes
`check`; an op whose operands do not broadcast calls `pointwise_fallback` (from ops._core's error
branch) before raising. Gradients of a fallback op reach the second operand through `fallback_grad`
(ops._core.sum_to reshapes instead of summing).
"""
from __future__ import annotations

import math

from ._warn import warn

SAME_NUMEL = ("self and other do not have the same shape, but are broadcastable, and have the same number "
              "of elements.")
FALLBACK = ("self and other not broadcastable, but have the same number of elements.  Falling back to "
            "deprecated pointwise behavior.")


def enable(on: bool) -> None:
    from ...ops import _core
    if on:
        _core._bcast_cache.clear()
        _core._bcast_hook = check
    else:
        _core._bcast_hook = None


def check(a: tuple, b: tuple) -> None:
    """Shapes a and b broadcast: warn when they differ but hold as many elements (0-d aside: 0.2 had none)."""
    if a != b and a and b and math.prod(a) == math.prod(b):
        warn(SAME_NUMEL)


def pointwise_fallback(a, b, dt, error):
    """b's data (in dtype dt) viewed with a's shape when the warning is on and the element counts
    match; otherwise raise `error`, the broadcasting RuntimeError."""
    from ...ops import _core
    sa, sb = a._data.shape, b._data.shape
    if _core._bcast_hook is None or math.prod(sa) != math.prod(sb):
        raise error
    warn(FALLBACK)
    _core._fell_back = True
    return a._k["reshape"](_core.cast_data(b, dt), sa)


def fallback_grad(g, shape):
    """g reshaped to `shape` when g comes from a fallback op (same element count, and `shape` does not
    broadcast to g's); None otherwise (an ordinary broadcast gradient)."""
    gs = g._data.shape
    if math.prod(gs) != math.prod(shape):
        return None
    broadcasts = len(shape) <= len(gs) and all(s == 1 or s == t for s, t in zip(reversed(shape), reversed(gs)))
    return None if broadcasts else g.reshape(shape)
