"""An operation that cannot complete must end the job with a clear error, not hang.

    timeouts.py MODE [TIMEOUT_S]

The last rank ("the absent rank") skips the operation and sleeps; the others wait in it with the
group's timeout TIMEOUT_S (default 2). Every waiting rank prints `WAITED <mode> <rank> <seconds>`
and `CPU <mode> <rank> <share of a core used while waiting>` if the operation raised (caught,
printed, then re-raised so the job aborts as an uncaught error would).

    all_reduce | broadcast | barrier | recv | work   absent last rank
    exit            the last rank calls sys.exit(0) while the others wait (group timeout 60 s)
    size_mismatch   rank r all-reduces 4 * (r + 1) float32 values (no debug checks)
    monitored       ranks >= 1 arrive; the last (and, on 4 ranks, rank 1 too) never do
    monitored_all   the same with wait_all_ranks=True
"""
import os
import sys
import time
from datetime import timedelta

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import dist  # noqa: E402

import tensorplug as torch  # noqa: E402

mode = sys.argv[1]
limit = float(sys.argv[2]) if len(sys.argv) > 2 else 2.0
dist.init_process_group(timeout=timedelta(seconds=60 if mode in ("exit", "work") else limit))
rank, world = dist.get_rank(), dist.get_world_size()
last = world - 1
t = torch.ones(4)
dist.all_reduce(t)                               # everyone is up
assert t.tolist() == [float(world)] * 4


def waited(fn):
    t0, c0 = time.perf_counter(), time.process_time()
    try:
        fn()
    except Exception as e:
        wall = time.perf_counter() - t0
        cpu = (time.process_time() - c0) / wall            # the share of a core the wait used
        print(f"CPU {mode} {rank} {cpu:.3f}", flush=True)
        print(f"WAITED {mode} {rank} {wall:.2f} {type(e).__name__}: {e}", flush=True)
        raise
    print(f"COMPLETED {mode} {rank}", flush=True)


if mode == "size_mismatch":
    waited(lambda: dist.all_reduce(torch.ones(4 * (rank + 1))))
elif mode.startswith("monitored"):
    absent = {last, 1} if world >= 4 else {last}
    if rank in absent:
        time.sleep(60)
    waited(lambda: dist.monitored_barrier(timeout=timedelta(seconds=limit),
                                          wait_all_ranks=mode == "monitored_all"))
elif rank == last:
    if mode == "exit":
        time.sleep(0.3)
        sys.exit(0)
    time.sleep(60)                               # the absent rank: the job must end before this does
elif mode == "all_reduce":
    waited(lambda: dist.all_reduce(t))
elif mode == "broadcast":
    waited(lambda: dist.broadcast(t, src=last))
elif mode == "barrier":
    waited(dist.barrier)
elif mode == "recv":
    if rank == 0:
        waited(lambda: dist.recv(t, src=last))
    time.sleep(60)
elif mode == "work":
    work = dist.all_reduce(t, async_op=True)
    waited(lambda: work.wait(timeout=timedelta(seconds=limit)))
elif mode == "exit":
    waited(lambda: dist.all_reduce(t))
print("unreachable", flush=True)
