"""The environment of the processes a launcher starts: what every rank gets, what torchrun's ranks
get (RANK, LOCAL_RANK, WORLD_SIZE, ...), and the same variables read off an MPI launcher's own."""
from __future__ import annotations

import os
import sys
from typing import Mapping, Optional

THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
# where each MPI launcher tells a process (global rank, world size, local rank, ranks on its node):
# MPICH's Hydra (Intel MPI, MVAPICH too), Open MPI
MPI_LAUNCHER_VARS = (
    ("PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"),
    ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"),
)


def cores() -> int:
    """The cores this process may run on (its affinity mask, not the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def base_env(nproc_per_node: int, environ: Optional[Mapping[str, str]] = None) -> dict:
    """What every rank gets, whichever launcher starts it: this Python's bin directory first on PATH
    (MPICH looks for its helpers there; a script's `python` is this one); OMP_NUM_THREADS = cores //
    ranks on this node (at least 1) unless a thread count is set, so the ranks' BLAS thread pools do
    not oversubscribe the cores (busy-waiting BLAS threads of several processes slow matrix products
    down many times); PYTHONUNBUFFERED=1, so a rank that is killed has written all it printed."""
    env = dict(os.environ if environ is None else environ)
    env["PYTHONUNBUFFERED"] = "1"
    if not any(v in env for v in THREAD_VARS):
        env["OMP_NUM_THREADS"] = str(max(1, cores() // max(1, nproc_per_node)))
    bindir = os.path.dirname(sys.executable)
    path = env.get("PATH", "")
    if bindir not in path.split(os.pathsep):
        env["PATH"] = bindir + (os.pathsep + path if path else "")
    return env


def torchrun_env(*, local_rank: int, nproc_per_node: int, node_rank: int, nnodes: int, master_addr: str,
                 master_port: int, run_id: str, role: str = "default", max_restarts: int = 0) -> dict:
    """The variables torchrun gives the process of `local_rank` on node `node_rank` (no restarts
    here, so the restart count is always 0)."""
    world = nnodes * nproc_per_node
    rank = node_rank * nproc_per_node + local_rank
    return {
        "RANK": str(rank), "LOCAL_RANK": str(local_rank), "WORLD_SIZE": str(world),
        "LOCAL_WORLD_SIZE": str(nproc_per_node), "GROUP_RANK": str(node_rank), "GROUP_WORLD_SIZE": str(nnodes),
        "ROLE_NAME": role, "ROLE_RANK": str(rank), "ROLE_WORLD_SIZE": str(world),
        "MASTER_ADDR": master_addr, "MASTER_PORT": str(master_port),
        "TORCHELASTIC_RUN_ID": run_id, "TORCHELASTIC_RESTART_COUNT": "0",
        "TORCHELASTIC_MAX_RESTARTS": str(max_restarts),
    }


def env_from_mpi_launcher(environ: Optional[Mapping[str, str]] = None) -> dict:
    """RANK / WORLD_SIZE / LOCAL_RANK / LOCAL_WORLD_SIZE from the variables an MPI launcher set
    (first launcher whose rank and size are both there), or {} when none did."""
    environ = os.environ if environ is None else environ
    for rank, size, local_rank, local_size in MPI_LAUNCHER_VARS:
        if environ.get(rank, "").isdigit() and environ.get(size, "").isdigit():
            out = {"RANK": environ[rank], "WORLD_SIZE": environ[size]}
            if environ.get(local_rank, "").isdigit():
                out["LOCAL_RANK"] = environ[local_rank]
            if environ.get(local_size, "").isdigit():
                out["LOCAL_WORLD_SIZE"] = environ[local_size]
            return out
    return {}
