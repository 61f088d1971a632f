"""Parallel training: `DistributedDataParallel` (data parallelism over tensorplug.distributed)."""
from .distributed import DistributedDataParallel  # noqa: F401

__all__ = ["DistributedDataParallel"]
