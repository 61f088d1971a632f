"""`torch.cpu.amp.autocast`: the deprecated spelling of `torch.autocast("cpu", ...)`."""
from __future__ import annotations

import warnings

from ... import dtypes as _dt
from ...amp import autocast_mode as _am

__all__ = ["autocast"]


class autocast(_am.autocast):
    """See `tensorplug.autocast`. Deprecated: use `tensorplug.amp.autocast("cpu", ...)`."""

    def __init__(self, enabled: bool = True, dtype: _dt.dtype = _dt.bfloat16, cache_enabled: bool = True):
        warnings.warn("`torch.cpu.amp.autocast(args...)` is deprecated. Please use "
                      "`torch.amp.autocast('cpu', args...)` instead.", FutureWarning, stacklevel=2)
        super().__init__("cpu", enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)
