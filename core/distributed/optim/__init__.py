"""tensorplug.distributed.optim: optimizers for data-parallel training (`ZeroRedundancyOptimizer`)."""
from .zero_redundancy_optimizer import ZeroRedundancyOptimizer  # noqa: F401

__all__ = ["ZeroRedundancyOptimizer"]
