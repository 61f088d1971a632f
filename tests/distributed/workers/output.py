"""Prints many lines on every rank for the rank-prefix tests of `tensorplug run`.

    output.py LINES            every rank prints LINES numbered lines, one stderr line, a child
                               process's line and a last line without a newline, then exits 0
    output.py LINES abort      the same, then every rank but the last waits in a barrier while the
                               last one raises: the job aborts with the waiting ranks' lines printed
"""
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import dist  # noqa: E402

lines, mode = int(sys.argv[1]), (sys.argv[2] if len(sys.argv) > 2 else "")
dist.init_process_group()
rank, world = dist.get_rank(), dist.get_world_size()
for i in range(lines):
    print(f"rank {rank} line {i:05d} " + "x" * (i % 97) + " ünïcödé")
print(f"rank {rank} to stderr", file=sys.stderr)
subprocess.run([sys.executable, "-c", f"print('child of rank {rank}')"], check=True)
print(f"rank {rank} last words", end="")
if mode == "abort":
    dist.barrier()                    # everyone has printed
    if rank == world - 1:
        time.sleep(0.3)
        raise ValueError(f"rank {rank} fails on purpose")
    dist.barrier()                    # never completes: the last rank does not join
    print("unreachable")
