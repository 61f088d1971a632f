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
from .all_to_all import all_to_all, all_to_all_single  # noqa: F401
from .node import get_node_local_rank  # noqa: F401
from .object_collectives import (all_gather_object, broadcast_object_list, gather_object,  # noqa: F401
                                 recv_object_list, scatter_object_list, send_object_list)
from .p2p_batch import P2POp, batch_isend_irecv  # noqa: F401
from .reduce_op import _make_nccl_premul_sum  # noqa: F401
from .work import Work  # noqa: F401
from .grad_bucket import GradBucket  # noqa: F401 - what DDP communication hooks receive (no imports)
from .debug import DebugLevel, get_debug_level, set_debug_level, set_debug_level_from_env  # noqa: F401
from .errors import DistBackendError, DistError, DistNetworkError, DistStoreError  # noqa: F401
from .monitored_barrier import monitored_barrier  # noqa: F401
from .process_group import Backend, default_pg_timeout  # noqa: F401
from .rendezvous import register_rendezvous_handler, rendezvous  # noqa: F401
from .store import FileStore, HashStore, PrefixStore, Store, TCPStore  # noqa: F401

__all__ = ["init_process_group", "destroy_process_group", "is_initialized", "is_available",
           "is_mpi_available", "get_rank", "get_world_size", "get_backend", "new_group", "group",
           "GroupMember", "ProcessGroup", "get_process_group_ranks", "get_global_rank", "get_group_rank",
           "send", "recv", "isend", "irecv", "all_reduce", "broadcast", "reduce", "all_gather",
           "all_gather_into_tensor", "gather", "scatter", "reduce_scatter", "reduce_scatter_tensor",
           "barrier", "ReduceOp", "reduce_op", "Work"]
__all__ += ["monitored_barrier", "DistError", "DistBackendError", "DistNetworkError", "DistStoreError",
            "DebugLevel", "get_debug_level", "set_debug_level", "set_debug_level_from_env"]
__all__ += ["Backend", "default_pg_timeout", "rendezvous", "register_rendezvous_handler", "Store", "TCPStore",
            "FileStore", "HashStore", "PrefixStore"]
__all__ += ["all_to_all", "all_to_all_single", "P2POp", "batch_isend_irecv", "broadcast_object_list",
            "all_gather_object", "gather_object", "scatter_object_list", "send_object_list", "recv_object_list",
            "get_node_local_rank"]
__all__ += ["GradBucket"]
