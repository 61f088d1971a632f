"""Utilities (PyTorch's torch.utils): `tensorplug.utils.data` — data sets, samplers, DataLoader;
`tensorplug.utils.checkpoint` — activation checkpointing."""
from . import checkpoint, data  # noqa: F401

__all__ = ["checkpoint", "data"]
