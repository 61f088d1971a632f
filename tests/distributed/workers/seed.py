"""The seed's distributed examples as written (torch -> tensorplug), then a RESULT line from rank 0.
Runs under `tensorplug run`, `mpiexec python -m mpi4py` and plain `mpiexec python`."""
import json
import sys

import tensorplug as torch
import tensorplug.distributed as dist

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

from mpi4py import MPI  # noqa: E402  (only to report the results)

every = MPI.COMM_WORLD.gather({"rank": dist.get_rank(), "size": dist.get_world_size(),
                               "p2p": received, "all_reduce": x.tolist()}, root=0)
if dist.get_rank() == 0:
    sys.stdout.write("RESULT " + json.dumps(every) + "\n")
