"""tensorplug.backends.mps: PyTorch's Apple-GPU queries (torch.backends.mps), answered by the registry:
tensorplug ships no MPS backend, so both are False unless a plugin serves the device type "mps"."""
from __future__ import annotations

__all__ = ["is_available", "is_built"]

DEVICE_TYPE = "mps"


def is_built() -> bool:
    """True when a backend for "mps" is registered."""
    from tensorplug.dispatch import registry
    return bool(registry.candidates(DEVICE_TYPE))


def is_available() -> bool:
    """True when a registered backend for "mps" can run here."""
    from tensorplug.dispatch import registry
    return any(b.is_available()[0] for b in registry.candidates(DEVICE_TYPE))
