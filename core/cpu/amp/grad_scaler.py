"""`torch.cpu.amp.GradScaler`: the deprecated spelling of `torch.amp.GradScaler("cpu", ...)`."""
from __future__ import annotations

import warnings

from ...amp import grad_scaler as _gs

__all__ = ["GradScaler"]


class GradScaler(_gs.GradScaler):
    """See `tensorplug.amp.GradScaler`. Deprecated: use `tensorplug.amp.GradScaler("cpu", ...)`."""

    def __init__(self, init_scale: float = 2.0 ** 16, growth_factor: float = 2.0, backoff_factor: float = 0.5,
                 growth_interval: int = 2000, enabled: bool = True) -> None:
        warnings.warn("`torch.cpu.amp.GradScaler(args...)` is deprecated. Please use "
                      "`torch.amp.GradScaler('cpu', args...)` instead.", FutureWarning, stacklevel=2)
        super().__init__("cpu", init_scale=init_scale, growth_factor=growth_factor,
                         backoff_factor=backoff_factor, growth_interval=growth_interval, enabled=enabled)
