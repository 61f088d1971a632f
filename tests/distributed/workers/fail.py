"""One rank fails while the others wait in a collective; the job must end, not hang.

    fail.py raise     the last rank raises an uncaught exception
    fail.py exit      the last rank calls sys.exit(3)
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import dist  # noqa: E402

import tensorplug as torch  # noqa: E402

mode = sys.argv[1] if len(sys.argv) > 1 else "raise"
dist.init_process_group()
rank, world = dist.get_rank(), dist.get_world_size()
t = torch.ones(4)
dist.all_reduce(t)                         # everyone is up
if rank == world - 1:
    time.sleep(0.2)
    if mode == "exit":
        sys.exit(3)
    raise ValueError(f"rank {rank} fails on purpose")
dist.all_reduce(t)                         # never completes: the failing rank does not join
print("unreachable", flush=True)
