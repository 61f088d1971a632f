"""tensorplug.cpu.amp: PyTorch's deprecated `torch.cpu.amp` (`autocast`, `GradScaler` for "cpu")."""
from .autocast_mode import autocast  # noqa: F401
from .grad_scaler import GradScaler  # noqa: F401

__all__ = ["autocast", "GradScaler"]
