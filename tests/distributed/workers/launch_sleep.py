"""Every rank prints `ready <rank>` and sleeps (for the launcher's supervision tests).

    launch_sleep.py                  every rank sleeps until it is stopped
    launch_sleep.py RANK CODE        rank RANK exits with CODE once every rank is ready (the ready
                                     lines are counted in the launcher's output, so it waits 1 s);
                                     CODE `raise`: it raises ValueError instead
    launch_sleep.py ... init         the same after init_process_group() (the ranks are one job)
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ["WORKER_WATCHDOG_S"] = os.environ.get("WORKER_WATCHDOG_S", "40")
import _common  # noqa: E402,F401  (the watchdog: a rank nobody stops still ends)

args = [a for a in sys.argv[1:] if a != "init"]
if "init" in sys.argv[1:]:
    _common.dist.init_process_group()
    assert _common.dist.get_world_size() == int(os.environ["WORLD_SIZE"])
rank = int(os.environ["RANK"])
print(f"ready {rank}", flush=True)
if "init" in sys.argv[1:]:
    _common.dist.barrier()          # every rank has printed before one of them fails
if len(args) > 1 and int(args[0]) == rank:
    time.sleep(1.0)
    if args[1] == "raise":
        raise ValueError(f"rank {rank} fails on purpose")
    sys.exit(int(args[1]))
time.sleep(120)
