"""Utilities (PyTorch's torch.utils): `tensorplug.utils.data` — data sets, samplers, DataLoader;
`tensorplug.utils.checkpoint` — activation checkpointing."""
from . import checkpoint, data  # noqa: F401

__all__ = ["checkpoint", "data"]

_LAZY = ("backcompat",)         # loaded on first use: `tensorplug.utils.backcompat` without importing it


def __getattr__(name):
    if name in _LAZY:
        import importlib
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
