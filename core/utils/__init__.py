"""Utilities (PyTorch's torch.utils): `tensorplug.utils.data` — data sets, samplers, DataLoader."""
from . import data  # noqa: F401

__all__ = ["data"]
