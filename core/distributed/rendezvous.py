"""How the processes of a job find each other: init_method URLs -> (store, rank, world_size).

    env://            MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE from the environment (rank= /
                      world_size= arguments override the last two; under Slurm's srun, SLURM_PROCID /
                      SLURM_NTASKS stand in for RANK / WORLD_SIZE when RANK is not set)
    tcp://host:port   a TCPStore at host:port (rank 0 serves it); rank and world_size required
    file:///path      a FileStore on a file every process can open; rank and world_size required

`rank` / `world_size` may also be URL query parameters (`tcp://h:p?rank=0&world_size=2`). Processes
an MPI launcher started (mpiexec, srun --mpi, `tensorplug run -n N`) need none of this: the launcher
gave them their ranks (`mpi_launcher()`).
"""
from __future__ import annotations

import os
from urllib.parse import parse_qs, urlparse

__all__ = ["rendezvous", "register_rendezvous_handler", "mpi_launcher", "default_init_method"]

_handlers = {}

# what an MPI launcher puts in each process's environment: (rank variable, size variable)
_LAUNCHER_VARS = (("PMI_RANK", "PMI_SIZE"), ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
                  ("PMIX_RANK", None), ("MPI_LOCALRANKID", None), ("PMI_PORT", None))


def mpi_launcher():
    """(rank, size) this process was started as by an MPI launcher (either None where the environment
    does not say), or None when no MPI launcher started it."""
    env = os.environ
    if env.get("TENSORPLUG_PMI_HOLDER"):        # tensorplug's own helper hydra (mpi_dist/connect.py)
        return None
    for rank_var, size_var in _LAUNCHER_VARS:
        if rank_var in env:
            rank = env.get(rank_var, "")
            size = env.get(size_var, "") if size_var else ""
            return (int(rank) if rank.isdigit() else None, int(size) if size.isdigit() else None)
    return None


def _env(var):
    """os.environ[var], with Slurm's task variables standing in for RANK / WORLD_SIZE."""
    v = os.environ.get(var)
    if v is None and "RANK" not in os.environ and "SLURM_PROCID" in os.environ:
        v = os.environ.get({"RANK": "SLURM_PROCID", "WORLD_SIZE": "SLURM_NTASKS"}.get(var, ""))
    return v


def default_init_method():
    """What init_method=None means outside an MPI launcher: "env://" where the environment names a
    rank (RANK and WORLD_SIZE, MASTER_ADDR, or Slurm's SLURM_PROCID), else None (a 1-process world)."""
    env = os.environ
    if ("RANK" in env and "WORLD_SIZE" in env) or "MASTER_ADDR" in env or "SLURM_PROCID" in env:
        return "env://"
    return None


def register_rendezvous_handler(scheme, handler):
    """handler(url, rank, world_size, timeout_seconds) -> (store, rank, world_size)."""
    if scheme in _handlers:
        raise RuntimeError(f"rendezvous handler for {scheme}:// is already registered")
    _handlers[scheme] = handler


def rendezvous(url, rank=-1, world_size=-1, timeout=1800.0):
    """Yield (store, rank, world_size) once, for `url` (as PyTorch's rendezvous iterator)."""
    if not isinstance(url, str):
        raise TypeError(f"init_method must be a str URL such as 'env://', got {type(url).__name__}")
    scheme = urlparse(url).scheme
    handler = _handlers.get(scheme)
    if handler is None:
        raise RuntimeError(f"no rendezvous handler for {scheme or url!r}:// (init_method={url!r}); known: "
                           f"{', '.join(s + '://' for s in sorted(_handlers))}")
    yield handler(url, rank, world_size, timeout)


def _int(value, what, method):
    try:
        v = int(value)
    except (TypeError, ValueError):
        raise ValueError(f"{method} rendezvous: {what} must be an int, got {value!r}") from None
    return v


def _query_ranks(url, rank, world_size, method, required=True):
    q = {k: v[-1] for k, v in parse_qs(urlparse(url).query).items()}
    if (rank is None or rank == -1) and "rank" in q:
        rank = _int(q["rank"], "rank", method)
    if (world_size is None or world_size == -1) and "world_size" in q:
        world_size = _int(q["world_size"], "world_size", method)
    if required:
        if rank is None or rank == -1:
            raise ValueError(f"Error initializing tensorplug.distributed using {method} rendezvous: rank "
                             f"parameter missing (pass rank= to init_process_group or ?rank= in the URL)")
        if world_size is None or world_size == -1:
            raise ValueError(f"Error initializing tensorplug.distributed using {method} rendezvous: world "
                             f"size parameter missing (pass world_size= or ?world_size= in the URL)")
    return rank, world_size


def _check_ranks(rank, world_size, method):
    if not isinstance(world_size, int) or isinstance(world_size, bool) or world_size < 1:
        raise ValueError(f"{method} rendezvous: world_size must be a positive int, got {world_size!r}")
    if not isinstance(rank, int) or isinstance(rank, bool) or not 0 <= rank < world_size:
        raise ValueError(f"{method} rendezvous: rank {rank!r} is out of range for world_size {world_size} "
                         f"(ranks are 0 to {world_size - 1})")


def _tcp_store(host, port, rank, world_size, timeout):
    from .store import TCPStore
    # every rank's arrival is checked later, by rank (a clearer error than a count of workers)
    return TCPStore(host, port, world_size, is_master=rank == 0, timeout=timeout, wait_for_workers=False,
                    multi_tenant=True)


def _env_handler(url, rank, world_size, timeout):
    rank, world_size = _query_ranks(url, rank, world_size, "env://", required=False)

    def need(var):
        v = _env(var)
        if v is None or v == "":
            raise ValueError(f"Error initializing tensorplug.distributed using env:// rendezvous: environment "
                             f"variable {var} expected, but not set (env:// needs MASTER_ADDR, MASTER_PORT, "
                             f"RANK and WORLD_SIZE; rank= / world_size= arguments replace the last two)")
        return v
    if rank is None or rank == -1:
        rank = _int(need("RANK"), "RANK", "env://")
    if world_size is None or world_size == -1:
        world_size = _int(need("WORLD_SIZE"), "WORLD_SIZE", "env://")
    _check_ranks(rank, world_size, "env://")
    addr = need("MASTER_ADDR")
    port = _int(need("MASTER_PORT"), "MASTER_PORT", "env://")
    return _tcp_store(addr, port, rank, world_size, timeout), rank, world_size


def _tcp_handler(url, rank, world_size, timeout):
    rank, world_size = _query_ranks(url, rank, world_size, "tcp://")
    _check_ranks(rank, world_size, "tcp://")
    u = urlparse(url)
    if not u.hostname or u.port is None:
        raise ValueError(f"tcp:// rendezvous: {url!r} must name a host and a port (tcp://HOST:PORT)")
    return _tcp_store(u.hostname, u.port, rank, world_size, timeout), rank, world_size


def _file_handler(url, rank, world_size, timeout):
    from .store import FileStore
    rank, world_size = _query_ranks(url, rank, world_size, "file://")
    _check_ranks(rank, world_size, "file://")
    path = urlparse(url).path
    if not path:
        raise ValueError(f"file:// rendezvous: {url!r} names no file (file:///absolute/path)")
    store = FileStore(path, world_size)
    store.set_timeout(timeout)
    return store, rank, world_size


register_rendezvous_handler("env", _env_handler)
register_rendezvous_handler("tcp", _tcp_handler)
register_rendezvous_handler("file", _file_handler)
