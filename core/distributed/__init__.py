"""tensorplug.distributed: processes that exchange tensors (MPI's programming model, PyTorch's API).

    import tensorplug as torch
    import tensorplug.distributed as dist

    dist.init_process_group(backend="mpi")      # run with: tensorplug run -n 2 script.py
    x = torch.Tensor(10)
    if dist.get_rank() == 0:
        x.normal_()
        dist.send(x, dst=1)
    else:
        dist.recv(x, src=0)
    y = torch.Tensor([dist.get_rank()])
    dist.all_reduce(y)                          # every rank: sum of the ranks

The communication backend is chosen by name from the registry's communication backends (the
built-in "mpi" one uses mpi4py; plugins can add others). Data-parallel training:
`tensorplug.nn.parallel.DistributedDataParallel` with `tensorplug.utils.data.DistributedSampler`.
"""
from . import nn  # noqa: F401
from .collectives import (all_gather, all_gather_into_tensor, all_reduce, barrier, broadcast,  # noqa: F401
                          gather, irecv, isend, recv, reduce, reduce_scatter, reduce_scatter_tensor,
                          scatter, send)
from .process_group import (GroupMember, ProcessGroup, destroy_process_group, get_backend,  # noqa: F401
                            get_global_rank, get_group_rank, get_process_group_ranks, get_rank,
                            get_world_size, group, init_process_group, is_available, is_initialized,
                            is_mpi_available, new_group)
from .reduce_op import ReduceOp, reduce_op  # noqa: F401
from .work import Work  # noqa: F401

__all__ = ["init_process_group", "destroy_process_group", "is_initialized", "is_available",
           "is_mpi_available", "get_rank", "get_world_size", "get_backend", "new_group", "group",
           "GroupMember", "ProcessGroup", "get_process_group_ranks", "get_global_rank", "get_group_rank",
           "send", "recv", "isend", "irecv", "all_reduce", "broadcast", "reduce", "all_gather",
           "all_gather_into_tensor", "gather", "scatter", "reduce_scatter", "reduce_scatter_tensor",
           "barrier", "ReduceOp", "reduce_op", "Work"]
