"""`torch.cuda.amp.common`."""
from __future__ import annotations

__all__ = ["amp_definitely_not_available"]


def amp_definitely_not_available() -> bool:
    """True when no backend with a device serves "cuda" here."""
    from ...amp.autocast_mode import _usable
    return not _usable("cuda")[0]
