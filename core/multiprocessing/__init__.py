"""tensorplug.multiprocessing: the standard `multiprocessing` module, with tensors that cross
processes through shared memory (torch.multiprocessing).

    import tensorplug.multiprocessing as mp
    model.share_memory()                       # parameters move to shared memory
    ps = [mp.Process(target=train, args=(model,)) for _ in range(4)]

Everything of `multiprocessing` is here (Process, Queue, Pool, get_context, ...). Importing this
module registers reducers with multiprocessing's ForkingPickler, so every queue, pipe and process
argument of every context sends a CPU tensor as a handle to shared memory: the receiver sees the
sender's memory, not a copy (see reductions.py). Plus spawn / start_processes (spawn.py) and the
sharing strategy (_sharing.py, _segment.py): 'file_descriptor' (default; anonymous segments that
cannot leak) and 'file_system' (named segments in /dev/shm, reference counted; no descriptor held
per segment).
"""
from __future__ import annotations

import multiprocessing
from multiprocessing import *  # noqa: F401,F403

from . import reductions  # noqa: E402
from ._sharing import get_all_sharing_strategies, get_sharing_strategy, set_sharing_strategy  # noqa: E402
from .reductions import init_reductions  # noqa: E402
from .spawn import (ProcessContext, ProcessExitedException, ProcessRaisedException, SpawnContext,  # noqa: E402
                    spawn, start_processes)

__all__ = ["set_sharing_strategy", "get_sharing_strategy", "get_all_sharing_strategies", "init_reductions",
           "spawn", "start_processes", "ProcessContext", "SpawnContext", "ProcessRaisedException",
           "ProcessExitedException"]
__all__ += multiprocessing.__all__

init_reductions()
