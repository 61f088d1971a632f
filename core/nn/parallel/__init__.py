"""Parallel training: `DistributedDataParallel` (data parallelism over tensorplug.distributed) and
`DataParallel` (one process driving several devices), with DataParallel's pieces."""
from .data_parallel import DataParallel, data_parallel  # noqa: F401
from .distributed import DistributedDataParallel  # noqa: F401
from .parallel_apply import parallel_apply  # noqa: F401
from .replicate import replicate  # noqa: F401
from .scatter_gather import gather, scatter  # noqa: F401

__all__ = ["DistributedDataParallel", "DataParallel", "data_parallel", "parallel_apply", "replicate",
           "scatter", "gather"]
