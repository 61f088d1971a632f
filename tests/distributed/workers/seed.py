"""The seed's distributed examples as written (torch -> tensorplug), then a RESULT line from rank 0:
`RESULT [{rank, size, p2p, all_reduce} per rank]`. Runs under `tensorplug run` (-n and
--nproc-per-node), `mpiexec python -m mpi4py`, plain `mpiexec python` and torchrun-style launches.
The report goes through tensorplug.distributed itself (all_gather), not MPI.COMM_WORLD: under a
torchrun-style launch each rank is a plain process whose COMM_WORLD is itself alone."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common  # noqa: E402,F401  (the watchdog)

import tensorplug as torch  # noqa: E402
import tensorplug.distributed as dist  # noqa: E402

dist.init_process_group(backend='mpi')

print('Hello from process {} (out of {})!'.format(
    dist.get_rank(), dist.get_world_size()))

# All processes (receiving ones too!) need to have tensors of appropriate
# size preallocated.
x = torch.Tensor(10)
if dist.get_rank() == 0:
    x.normal_()
    # Send x to process with rank 1
    dist.send(x, dst=1)
elif dist.get_rank() == 1:
    # Receive data from process with rank 0 and save result in x
    dist.recv(x, src=0)
received = x.tolist()

x = torch.Tensor([dist.get_rank()])
# Add tensors from all processes such that they all receive the result.
# x is an input and output to this operation.
dist.all_reduce(x)

n = dist.get_world_size()
mine = torch.tensor([float(dist.get_rank()), float(n), *received, *x.tolist()], dtype=torch.float64)
every = [torch.zeros(13, dtype=torch.float64) for _ in range(n)]
dist.all_gather(every, mine)
if dist.get_rank() == 0:
    rows = [t.tolist() for t in every]
    sys.stdout.write("RESULT " + json.dumps([{"rank": int(r[0]), "size": int(r[1]), "p2p": r[2:12],
                                              "all_reduce": r[12:]} for r in rows]) + "\n")
dist.destroy_process_group()
