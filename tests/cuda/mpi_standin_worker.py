"""Worker of test_mpi_staging.py (run under mpiexec): the mpi backend moving CuPy-like device arrays
(the NumPy-based CuPy stand-in registered for "cuda", 2 fake devices) by staging through host memory.
Rank 0 prints one `RESULT {json}` line."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _standin import make_standin, register  # noqa: E402

import tensorplug as torch  # noqa: E402
import tensorplug.distributed as dist  # noqa: E402

register(make_standin("cuda_standin", "cuda", priority=100))
dist.init_process_group("mpi")
rank, size = dist.get_rank(), dist.get_world_size()
out = {"size": size}


def case(name, fn):
    try:
        out[name] = fn()
    except Exception as e:  # noqa: BLE001 - reported to the test
        out[name] = f"error: {type(e).__name__}: {e}"


def all_reduce_on(dev, noncontiguous):
    base = torch.zeros(3, 4, device=dev)
    t = base[:, ::2] if noncontiguous else base
    t += rank + 1
    dist.all_reduce(t)
    return base.tolist()


case("all_reduce cuda:0", lambda: all_reduce_on("cuda:0", False))
case("all_reduce cuda:1", lambda: all_reduce_on("cuda:1", False))
case("all_reduce cuda:0 non-contiguous", lambda: all_reduce_on("cuda:0", True))
case("all_reduce cuda:1 non-contiguous", lambda: all_reduce_on("cuda:1", True))


def gather_and_broadcast():
    outs = [torch.zeros(2, device="cuda") for _ in range(size)]
    dist.all_gather(outs, torch.full((2,), float(rank), device="cuda"))
    b = torch.full((3,), float(rank), device="cuda")
    dist.broadcast(b, 0)
    return [o.tolist() for o in outs] + [b.tolist()]


case("all_gather + broadcast", gather_and_broadcast)


def send_recv():
    t = torch.arange(4.0, device="cuda") if rank == 0 else torch.zeros(4, device="cuda")
    if rank == 0:
        dist.send(t, 1)
    elif rank == 1:
        dist.recv(t, 0)
    return t.tolist()


case("send/recv", send_recv)
if rank == 0:
    print("RESULT " + json.dumps(out), flush=True)
dist.destroy_process_group()
