"""A plain process (no MPI launcher) that joins a world through an init method, runs the seed's
examples plus an all_gather and a broadcast, and prints its own `RESULT {json}` line (every process
has its own stdout here, so lines cannot interleave).

    python init_methods.py MODE [ARG]   RANK / WORLD_SIZE (and MASTER_ADDR / MASTER_PORT) in the env
MODE: env (init_method=None -> env://, backend "gloo"), tcp ARG=port, file ARG=path, store ARG=port
(a TCPStore passed as store=), timeout (world_size=3 with 2 processes started, 2 s), exit / kill / raise
(rank 1 leaves; rank 0 polls failed_peers), noport (MASTER_PORT unset), launcher (under mpiexec)."""
import json
import os
import signal
import sys
import time
from datetime import timedelta

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common  # noqa: E402,F401  (the watchdog)
import numpy as np  # noqa: E402

import tensorplug as torch  # noqa: E402
import tensorplug.distributed as dist  # noqa: E402
from tensorplug.distributed import health  # noqa: E402

mode = sys.argv[1]
arg = sys.argv[2] if len(sys.argv) > 2 else None
rank, size = int(os.environ.get("RANK", "-1")), int(os.environ.get("WORLD_SIZE", "-1"))
out = {"mode": mode, "rank": rank}


def report():
    sys.stdout.write("RESULT " + json.dumps(out) + "\n")
    sys.stdout.flush()


def error_of(fn, *a, **k):
    try:
        fn(*a, **k)
    except Exception as e:  # noqa: BLE001 - the message is what the test checks
        return f"{type(e).__name__}: {e}"
    return None


if mode == "noport":
    out["error"] = error_of(dist.init_process_group, "gloo")
    report()
    sys.exit(0)
if mode == "timeout":
    t0 = time.monotonic()
    out["error"] = error_of(dist.init_process_group, "mpi", init_method=f"tcp://127.0.0.1:{arg}", rank=rank,
                            world_size=3, timeout=timedelta(seconds=2))
    out["seconds"] = time.monotonic() - t0
    report()
    sys.exit(0)

t0 = time.monotonic()
if mode in ("env", "exit", "kill", "raise"):
    dist.init_process_group("gloo")
elif mode == "tcp":
    dist.init_process_group("mpi", init_method=f"tcp://127.0.0.1:{arg}", rank=rank, world_size=size)
elif mode == "file":
    dist.init_process_group("nccl", init_method=f"file://{arg}", rank=rank, world_size=size)
elif mode == "store":
    st = dist.TCPStore("127.0.0.1", int(arg), size, is_master=rank == 0, timeout=timedelta(seconds=30))
    dist.init_process_group("cpu:gloo,cuda:nccl", store=dist.PrefixStore("job", st), rank=rank, world_size=size,
                            timeout=timedelta(minutes=2))
elif mode == "launcher":
    dist.init_process_group("mpi")
else:
    raise SystemExit(f"unknown mode {mode}")
out["init_seconds"] = time.monotonic() - t0
rank, size = dist.get_rank(), dist.get_world_size()
out.update(rank=rank, size=size, backend=dist.get_backend(), timeout=dist.group.WORLD.timeout)
if mode == "env":
    pair = dist.new_group([0, 1], timeout=timedelta(seconds=7))
    if rank < 2:
        out["subgroup"] = [dist.get_backend(pair), pair.timeout, dist.get_rank(pair)]

if mode in ("exit", "kill", "raise"):
    sub = dist.new_group([0])                # collective: made while both ranks are there
    if rank == 1:
        if mode == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        if mode == "raise":
            raise ValueError("rank 1 fails")     # the abort hook says goodbye, then aborts
        sys.exit(0)                          # the atexit handler says goodbye
    t0 = time.monotonic()
    seen = {}
    while time.monotonic() - t0 < 10 and 1 not in seen:
        seen = health.failed_peers()
        time.sleep(0.01)
    out["failed"] = {str(k): v for k, v in seen.items()}
    out["seconds"] = time.monotonic() - t0
    out["failed_in_subgroup"] = {str(k): v for k, v in health.failed_peers(sub).items()}
    report()
    os._exit(0)                              # rank 1 is gone: nothing left to finalise with

# the seed's p2p example: rank 0 sends a random tensor to rank 1
x = torch.Tensor(10)
if rank == 0:
    x.normal_()
    dist.send(x, dst=1)
elif rank == 1:
    dist.recv(x, src=0)
out["p2p"] = x.tolist()
# the seed's all_reduce example: every rank gets the sum of the ranks
y = torch.Tensor([rank])
dist.all_reduce(y)
out["all_reduce"] = y.tolist()
# all_gather of per-rank values, a broadcast from the last rank
g = [torch.zeros(2, dtype=torch.float64) for _ in range(size)]
dist.all_gather(g, torch.tensor([rank, rank * 10 + 0.5], dtype=torch.float64))
out["all_gather"] = [t.tolist() for t in g]
b = torch.tensor(np.arange(5.0) * (rank + 1))
dist.broadcast(b, src=size - 1)
out["broadcast"] = b.tolist()
out["failed_peers"] = health.failed_peers()
dist.barrier()
dist.destroy_process_group()
if mode == "tcp":                           # again, on the same port: never meets the old store
    dist.init_process_group("mpi", init_method=f"tcp://127.0.0.1:{arg}", rank=rank, world_size=size)
    z = torch.Tensor([rank + 1])
    dist.all_reduce(z)
    out["all_reduce_again"] = z.tolist()
    dist.destroy_process_group()
report()
