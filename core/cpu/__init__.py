"""tensorplug.cpu: PyTorch's `torch.cpu` — the CPU device as an accelerator-like module (always
available, one device, nothing to synchronize) and `tensorplug.cpu.amp`."""
from __future__ import annotations

import importlib

__all__ = ["is_available", "device_count", "current_device", "set_device", "synchronize", "is_initialized",
           "amp"]


def is_available() -> bool:
    return True


def device_count() -> int:
    return 1


def current_device() -> str:
    return "cpu"


def set_device(device) -> None:
    """Nothing to select: there is one CPU device."""


def synchronize(device=None) -> None:
    """CPU kernels finish before they return: nothing to wait for."""


def is_initialized() -> bool:
    return True


def __getattr__(name):
    if name == "amp":
        return importlib.import_module(f"{__name__}.amp")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
