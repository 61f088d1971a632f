"""tensorplug.cuda.amp: PyTorch's deprecated `torch.cuda.amp` (`autocast`, `GradScaler`,
`custom_fwd`, `custom_bwd` for "cuda")."""
from .autocast_mode import autocast, custom_bwd, custom_fwd  # noqa: F401
from .common import amp_definitely_not_available  # noqa: F401
from .grad_scaler import GradScaler  # noqa: F401

__all__ = ["amp_definitely_not_available", "autocast", "custom_bwd", "custom_fwd", "GradScaler"]
