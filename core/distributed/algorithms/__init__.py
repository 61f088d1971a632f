"""tensorplug.distributed.algorithms: training algorithms on top of the collectives - `Join` for
uneven inputs, and DistributedDataParallel's communication hooks (`ddp_comm_hooks`)."""
from .join import Join, Joinable, JoinHook  # noqa: F401

__all__ = ["Join", "Joinable", "JoinHook"]
