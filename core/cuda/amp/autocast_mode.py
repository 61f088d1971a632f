"""`torch.cuda.amp.autocast`, `custom_fwd`, `custom_bwd`: the deprecated spellings of
`torch.autocast("cuda", ...)` and `torch.amp.custom_fwd(..., device_type="cuda")`."""
from __future__ import annotations

import warnings

from ... import dtypes as _dt
from ...amp import autocast_mode as _am

__all__ = ["autocast", "custom_fwd", "custom_bwd"]


class autocast(_am.autocast):
    """See `tensorplug.autocast`. Deprecated: use `tensorplug.amp.autocast("cuda", ...)`."""

    def __init__(self, enabled: bool = True, dtype: _dt.dtype = _dt.float16, cache_enabled: bool = True):
        warnings.warn("`torch.cuda.amp.autocast(args...)` is deprecated. Please use "
                      "`torch.amp.autocast('cuda', args...)` instead.", FutureWarning, stacklevel=2)
        super().__init__("cuda", enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)


def custom_fwd(fwd=None, *, cast_inputs=None):
    """Deprecated: use `tensorplug.amp.custom_fwd(fwd, device_type="cuda", cast_inputs=...)`."""
    warnings.warn("`torch.cuda.amp.custom_fwd(args...)` is deprecated. Please use "
                  "`torch.amp.custom_fwd(args..., device_type='cuda')` instead.", FutureWarning, stacklevel=2)
    return _am.custom_fwd(fwd, device_type="cuda", cast_inputs=cast_inputs)


def custom_bwd(bwd):
    """Deprecated: use `tensorplug.amp.custom_bwd(bwd, device_type="cuda")`."""
    warnings.warn("`torch.cuda.amp.custom_bwd(args...)` is deprecated. Please use "
                  "`torch.amp.custom_bwd(args..., device_type='cuda')` instead.", FutureWarning, stacklevel=2)
    return _am.custom_bwd(bwd, device_type="cuda")
