"""tensorplug.utils.backcompat: PyTorch 0.2's migration warnings (torch.utils.backcompat).

    import tensorplug as torch
    torch.utils.backcompat.broadcast_warning.enabled = True
    torch.utils.backcompat.keepdim_warning.enabled = True

broadcast_warning: a binary pointwise op on tensors of different shapes with the same number of
elements warns (UserWarning). Broadcastable ones broadcast, with the warning that this result shape is
new; non-broadcastable ones take the deprecated 1-d pointwise behaviour of PyTorch before 0.2: the
second operand is viewed with the first one's shape, and so is the result (_broadcast.py).
keepdim_warning: a reduction over a dim called without keepdim warns that keepdim's default changed
to False (_keepdim.py). Both are off by default, and then cost nothing: the modern errors and
behaviour stand.
"""
from __future__ import annotations

from ._broadcast import fallback_grad, pointwise_fallback  # noqa: F401  (called by ops._core)

__all__ = ["broadcast_warning", "keepdim_warning", "Warning"]


class Warning:          # noqa: A001 - PyTorch's name
    """A switch `enabled` (a bool), read and written through the functions given."""

    def __init__(self, setter, getter):
        self.setter = setter
        self.getter = getter

    def set_enabled(self, value) -> None:
        self.setter(value)

    def get_enabled(self) -> bool:
        return self.getter()

    enabled = property(get_enabled, set_enabled)


def _bool(value, setter):
    if not isinstance(value, bool):
        raise RuntimeError(f"{setter} expects a bool, but got {type(value).__name__}")


def _set_broadcast(value):
    _bool(value, "set_backcompat_broadcast_warn")
    from . import _broadcast
    _broadcast.enable(value)


def _get_broadcast():
    from ...ops import _core
    return _core._bcast_hook is not None


def _set_keepdim(value):
    _bool(value, "set_backcompat_keepdim_warn")
    from ...ops import reduction
    reduction._WARN_KEEPDIM[0] = value


def _get_keepdim():
    from ...ops import reduction
    return reduction._WARN_KEEPDIM[0]


broadcast_warning = Warning(_set_broadcast, _get_broadcast)
keepdim_warning = Warning(_set_keepdim, _get_keepdim)
