"""Process groups: the default (world) group made by init_process_group, and sub-groups (new_group).

Ranks and the world size come from an MPI launcher (`tensorplug run -n N script.py`, or
`mpiexec -n N python script.py`), or from a rendezvous (init_method env:// tcp:// file://, or a store;
rendezvous.py) for processes started some other way. A ProcessGroup pairs a communication backend (found by name in
the registry, like a third-party plugin's) with the backend's communicator handle. Ranks passed to
the public functions (src, dst) are global ranks, as in PyTorch; a group translates them.
"""
from __future__ import annotations

import importlib
import inspect
import sys
from datetime import timedelta

__all__ = ["ProcessGroup", "GroupMember", "group", "init_process_group", "destroy_process_group",
           "is_initialized", "is_available", "get_rank", "get_world_size", "get_backend", "new_group",
           "get_process_group_ranks", "get_global_rank", "get_group_rank", "is_mpi_available", "Backend",
           "default_pg_timeout"]

DEFAULT_BACKEND = "mpi"
default_pg_timeout = timedelta(minutes=30)


class Backend(str):
    """A backend name, lower-cased (PyTorch's dist.Backend): Backend("GLOO") == "gloo". Names that
    no registered communication backend carries ("gloo", "nccl", "cuda:nccl,cpu:gloo") are served by
    the registered backend that handles their device types (see init_process_group)."""
    UNDEFINED = "undefined"
    GLOO = "gloo"
    NCCL = "nccl"
    UCC = "ucc"
    MPI = "mpi"
    XCCL = "xccl"
    backend_list = [UNDEFINED, GLOO, NCCL, UCC, MPI, XCCL]
    default_device_backend_map = {"cpu": GLOO, "cuda": NCCL, "xpu": XCCL}
    # the device types each of PyTorch's names is for
    backend_capability = {GLOO: ["cpu", "cuda"], NCCL: ["cuda"], UCC: ["cpu", "cuda"], MPI: ["cpu", "cuda"],
                          XCCL: ["xpu"]}

    def __new__(cls, name):
        if not isinstance(name, str):
            raise ValueError(f"Backend constructor parameter must be string-ish, got {type(name).__name__}")
        value = getattr(Backend, name.upper(), name.lower())
        if value == Backend.UNDEFINED:
            value = name.lower()
        return super().__new__(cls, value)


class ProcessGroup:
    """A set of processes that run collectives together.

    `rank()` / `size()` are this process's rank in the group and the group's size; `ranks` the
    global ranks of the members in group-rank order (None for the world, where they coincide)."""
    __slots__ = ("backend", "handle", "ranks", "_index", "name", "timeout", "requested_backend",
                 "__weakref__")

    def __init__(self, backend, handle, ranks=None, name="", timeout=None, requested_backend=None):
        self.backend = backend
        self.handle = handle
        self.ranks = None if ranks is None else list(ranks)
        self._index = None if ranks is None else {r: i for i, r in enumerate(ranks)}
        self.name = name
        # seconds a collective may take (init_process_group's / new_group's timeout=)
        self.timeout = default_pg_timeout.total_seconds() if timeout is None else float(timeout)
        self.requested_backend = requested_backend or backend.name     # what get_backend() says

    def rank(self) -> int:
        return self.handle.rank

    def size(self) -> int:
        return self.handle.size

    def group_rank(self, global_rank: int, what: str = "rank") -> int:
        """The rank in this group of a process's global rank (ValueError if it is not a member)."""
        if self._index is None:
            if not isinstance(global_rank, int) or not 0 <= global_rank < self.handle.size:
                raise ValueError(f"invalid {what} {global_rank!r}: the group has ranks 0 to "
                                 f"{self.handle.size - 1}")
            return global_rank
        r = self._index.get(global_rank)
        if r is None:
            raise ValueError(f"invalid {what} {global_rank!r}: global rank {global_rank} is not part of "
                             f"the group (its members are {self.ranks})")
        return r

    def global_rank(self, group_rank: int) -> int:
        return group_rank if self.ranks is None else self.ranks[group_rank]

    def backend_name(self) -> str:
        return self.backend.name

    def __repr__(self):
        members = "world" if self.ranks is None else f"ranks {self.ranks}"
        return f"<ProcessGroup {self.backend.name} {members}: rank {self.rank()} of {self.size()}>"


class _NonMember:
    """What new_group returns on a process that is not a member: collectives on it do nothing."""

    def __repr__(self):
        return "GroupMember.NON_GROUP_MEMBER"


class GroupMember:
    NON_GROUP_MEMBER = _NonMember()

    @classmethod
    def _world(cls):
        return _state.world


class _GroupNamespace:
    """`dist.group.WORLD`: the default group (None before init_process_group)."""

    @property
    def WORLD(self):
        return _state.world


group = _GroupNamespace()


class _State:
    world: ProcessGroup | None = None
    groups: list = []
    prev_excepthook = None
    stores: list = []           # rendezvous stores this process opened (closed by destroy_process_group)
    generation = 0              # rendezvous in this process so far: fresh store keys for each


_state = _State()

_NOT_INIT = ("Default process group has not been initialized, please make sure to call "
             "init_process_group.")


def is_available() -> bool:
    """True: tensorplug.distributed is part of tensorplug (whether a backend works here is
    `is_mpi_available()` / the backend's `is_available()`)."""
    return True


def is_mpi_available() -> bool:
    from ..dispatch import registry
    registry.ensure_loaded()
    b = registry.communication.get("mpi")
    return b is not None and b.is_available()[0]


def is_initialized() -> bool:
    return _state.world is not None


def _world() -> ProcessGroup:
    w = _state.world
    if w is None:
        raise RuntimeError(_NOT_INIT)
    return w


def resolve(grp):
    """The ProcessGroup to run on (None where this process is not a member of `grp`)."""
    if grp is None or grp is group:
        return _world()
    if grp.__class__ is ProcessGroup:
        if _state.world is None:
            raise RuntimeError(_NOT_INIT)
        return grp
    if grp is GroupMember.NON_GROUP_MEMBER:
        _world()
        return None
    raise TypeError(f"group must be a ProcessGroup made by new_group (or None), got {type(grp).__name__}")


def _registered():
    from ..dispatch import registry
    registry.ensure_loaded()
    return registry.communication


def _find_backend(name):
    """The communication backend for `name`: the registered one of that name where it is available;
    else (PyTorch's names "gloo", "nccl", "cpu:gloo,cuda:nccl", ...) an available registered backend
    whose `device_types` cover the device types the name is for. (backend, True when it stands in)."""
    comm = _registered()
    b = comm.get(name)
    if b is not None and b.is_available()[0]:
        return b, False
    wanted = _device_types(name)
    if wanted is None:
        if b is None:
            raise ValueError(f"unknown communication backend {name!r}; registered communication backends: "
                             f"{', '.join(sorted(comm)) or 'none'} (PyTorch's gloo / nccl names are served "
                             f"by one of them)")
        raise RuntimeError(f"communication backend {name!r} is not available: {b.is_available()[1]}")
    candidates = [c for c in comm.values() if set(wanted) <= set(getattr(c, "device_types", ()))]
    candidates.sort(key=lambda c: (c.name != DEFAULT_BACKEND, -c.priority, c.name))
    for c in candidates:
        if c.is_available()[0]:
            return c, True
    reasons = "; ".join(f"{c.name}: {c.is_available()[1]}" for c in ([b] if b is not None else []) + candidates)
    raise RuntimeError(f"no available communication backend serves backend {name!r} (device types "
                       f"{', '.join(wanted)}){': ' + reasons if reasons else ''}")


def _device_types(name):
    """The device types a PyTorch backend string is for ("gloo" -> cpu; "nccl" -> cuda;
    "cpu:gloo,cuda:nccl" -> cpu, cuda), or None for a name that is not one of PyTorch's."""
    if ":" in name:
        out = []
        for part in name.split(","):
            dev, sep, be = part.strip().partition(":")
            if not sep or be.strip() not in Backend.backend_capability:
                raise ValueError(f"invalid backend string {name!r}: expected 'device:backend' pairs "
                                 f"separated by commas, such as 'cpu:gloo,cuda:nccl'")
            out.append(dev.strip())
        return out
    if name in (Backend.GLOO, Backend.UCC):
        return ["cpu"]
    if name == Backend.NCCL:
        return ["cuda"]
    return None


def _timeout_seconds(timeout):
    if timeout is None:
        return default_pg_timeout.total_seconds()
    if isinstance(timeout, timedelta):
        return timeout.total_seconds()
    raise TypeError(f"timeout must be a datetime.timedelta, got {type(timeout).__name__}")


def _given(v):
    return v is not None and v != -1


def init_process_group(backend=None, init_method=None, timeout=None, world_size=-1, rank=-1, store=None,
                       group_name="", pg_options=None, device_id=None):
    """Join the job's default process group.

    backend: a communication backend's name ("mpi", the default), or one of PyTorch's ("gloo",
    "nccl", "cpu:gloo,cuda:nccl"), served by the registered backend for their device types.
    Who the processes are:
    - started by an MPI launcher (`tensorplug run -n N`, mpiexec, srun --mpi): the launcher's ranks;
      world_size / rank, given as arguments or as RANK / WORLD_SIZE in the environment, must match
      them, else ValueError;
    - else `init_method` "env://" (MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE), "tcp://host:port" or
      "file:///path" (these two need rank= and world_size=), or a `store` with rank= and world_size=;
      init_method=None means env:// when RANK and WORLD_SIZE (or MASTER_ADDR) are set, else a world
      of one process. Every process waits at most `timeout` for the others.
    timeout: a datetime.timedelta (default 30 minutes), kept as `group.WORLD.timeout` (seconds).
    With more than one process, an uncaught exception in any process aborts the whole job (its
    traceback is printed first), so the other processes never wait forever. (A `sys.exit(code)` is
    not an exception Python reports: under `tensorplug run`, i.e. `python -m mpi4py`, a non-zero exit
    aborts the job too; under a bare `mpiexec python script.py` it does not.)"""
    rdv = importlib.import_module(".rendezvous", __package__)   # (the package's attribute is the function)
    if _state.world is not None:
        raise RuntimeError("trying to initialize the default process group twice!")
    requested = DEFAULT_BACKEND if backend is None else Backend(str(getattr(backend, "value", backend)))
    b, stands_in = _find_backend(str(requested))
    seconds = _timeout_seconds(timeout)
    if store is not None and init_method is not None:
        raise ValueError("Cannot specify both init_method and store.")
    launched = rdv.mpi_launcher()
    if "store" not in inspect.signature(b.init).parameters:     # a backend that only its launcher runs
        handle = _init_from_launcher(b, world_size, rank, check_env=False)
        store_addr = None
    elif store is None and launched is not None and (launched[1] is None or launched[1] > 1
                                                     or init_method is None and _launcher_world_suffices(rdv)):
        handle = _init_from_launcher(b, world_size, rank)
        store_addr = None
    else:
        try:
            handle, store_addr = _init_by_rendezvous(b, init_method, store, world_size, rank, seconds)
        except BaseException:
            _close_stores()
            raise
    pg = ProcessGroup(b, handle, name=group_name or "default", timeout=seconds, requested_backend=requested)
    _state.world = pg
    _state.groups = []
    if stands_in and handle.rank == 0:
        sys.stderr.write(f'tensorplug.distributed: backend "{requested}" is served by the "{b.name}" '
                         f'communication backend\n')
    if handle.size > 1:
        _install_abort_hook(b, handle.rank)
        _start_health(b, handle, store_addr, seconds)
    return None


def _launcher_world_suffices(rdv) -> bool:
    """Under a 1-process MPI launch with no init_method: the launcher's world of one unless the
    environment asks for a rendezvous of several (`tensorplug run -n 1` sets RANK=0, WORLD_SIZE=1)."""
    import os
    return rdv.default_init_method() is None or os.environ.get("WORLD_SIZE", "1").strip() == "1"


def _init_from_launcher(b, world_size, rank, check_env=True):
    import os
    handle = b.init(world_size=world_size, rank=rank)
    env_rank, env_size = os.environ.get("RANK"), os.environ.get("WORLD_SIZE")
    for what, given, actual, var in (("world_size", world_size, handle.size, env_size),
                                     ("rank", rank, handle.rank, env_rank)):
        if _given(given) and given != actual:
            raise ValueError(f"init_process_group({what}={given}) does not match the launcher, which "
                             f"started this process as rank {handle.rank} of {handle.size}; ranks and the "
                             f"world size come from the launcher (tensorplug run -n N / mpiexec -n N)")
        if check_env and not _given(given) and var is not None and var.strip() != str(actual):
            name = "RANK" if what == "rank" else "WORLD_SIZE"
            raise ValueError(f"the environment variable {name}={var} does not match the MPI launcher, which "
                             f"started this process as rank {handle.rank} of {handle.size}; unset {name} or "
                             f"start the processes without an MPI launcher")
    return handle


def _init_by_rendezvous(b, init_method, store, world_size, rank, seconds):
    """(backend handle, (host, port) of a TCPStore server to use for liveness, or None)."""
    rdv = importlib.import_module(".rendezvous", __package__)   # (the package's attribute is the function)
    from .store import PrefixStore, Store, TCPStore
    if store is not None:
        if not isinstance(store, Store):
            raise TypeError(f"init_process_group(store=...) needs a tensorplug.distributed.Store, got "
                            f"{type(store).__name__}")
        if not _given(world_size) or not isinstance(world_size, int) or world_size < 1:
            raise ValueError(f"init_process_group(store=...) needs world_size= (a positive int), got {world_size!r}")
        if not _given(rank) or not isinstance(rank, int) or not 0 <= rank < world_size:
            raise ValueError(f"init_process_group(store=...) needs rank= in [0, {world_size - 1}], got {rank!r}")
    else:
        method = init_method if init_method is not None else rdv.default_init_method()
        if method is None:
            if _given(world_size) and world_size != 1:
                method = "env://"           # as PyTorch: a world of several needs a rendezvous
            else:
                if _given(rank) and rank != 0:
                    raise ValueError(f"init_process_group(rank={rank}) in a world of one process (no "
                                     f"launcher, no init_method, no RANK / WORLD_SIZE in the environment)")
                return b.init(), None
        store, rank, world_size = next(rdv.rendezvous(method, rank, world_size, seconds))
    _state.stores.append(store)
    _state.generation += 1
    prefixed = PrefixStore(f"tensorplug/init{_state.generation}", store)
    if world_size == 1:
        return b.init(), None
    handle = b.init(world_size=world_size, rank=rank, store=prefixed, timeout=seconds)
    base = store
    while isinstance(base, PrefixStore):
        base = base.underlying_store
    addr = (base.host, base.port) if isinstance(base, TCPStore) else ("store", prefixed)
    return handle, addr


def _start_health(b, handle, store_addr, seconds):
    """The liveness link of every rank (health.py) to a TCPStore server in rank 0: the rendezvous
    store's, or one rank 0 starts now (its address sent over the store, or broadcast by the backend)."""
    import socket

    import numpy as np

    from . import health
    from .errors import DistNetworkError
    from .store import TCPStore
    own = None
    if store_addr is not None and store_addr[0] != "store":
        host, port = store_addr
    else:
        if handle.rank == 0:
            own = TCPStore(socket.gethostname(), 0, is_master=True, timeout=seconds)
            addr = f"{socket.gethostname()}:{own.port}"
        if store_addr is not None:
            st = store_addr[1]
            if handle.rank == 0:
                st.set("health/address", addr)
            text = st.get("health/address").decode()
        else:
            buf = np.zeros(512, np.uint8)
            if handle.rank == 0:
                raw = addr.encode()
                buf[:len(raw)] = np.frombuffer(raw, np.uint8)
            b.broadcast(buf, 0, handle)
            text = bytes(buf).rstrip(b"\0").decode()
        host, _, port = text.rpartition(":")
        port = int(port)
        if handle.rank == 0:
            host = "localhost"
    try:
        # the server listens already: a failure to connect is not a matter of waiting
        health.start(host, port, handle.rank, handle.size, timeout=min(seconds, 10.0), server_store=own)
    except DistNetworkError as e:
        sys.stderr.write(f"tensorplug.distributed: rank {handle.rank} cannot reach the liveness store of rank 0 "
                         f"({e}); peers that exit or die will not be noticed\n")


def _close_stores():
    for st in _state.stores:
        close = getattr(st, "close", None)
        if close is not None:
            close()
    _state.stores = []


def destroy_process_group(group=None) -> None:
    """Destroy `group`, or (None) every group and the default one; init_process_group may then be
    called again. Destroying the default group of several processes waits (at most 5 s) until every
    rank has left the job's store, so that a new rendezvous never meets the old one."""
    if group is None or group is _state.world:
        from . import health
        w = _world()
        for g in _state.groups:
            w.backend.destroy(g.handle)
        w.backend.destroy(w.handle)
        _state.world = None
        _state.groups = []
        _remove_abort_hook()
        health.stop(linger=health.LINGER)       # every rank leaves the old store before a new init
        _close_stores()
        return
    if group is GroupMember.NON_GROUP_MEMBER:
        return
    if group in _state.groups:
        _state.groups.remove(group)
        group.backend.destroy(group.handle)


def get_rank(group=None) -> int:
    """This process's rank in `group` (default: the world); -1 if it is not a member."""
    pg = resolve(group)
    return -1 if pg is None else pg.handle.rank


def get_world_size(group=None) -> int:
    """The number of processes in `group` (default: the world); -1 if this one is not a member."""
    pg = resolve(group)
    return -1 if pg is None else pg.handle.size


def get_backend(group=None) -> str:
    """The backend's name as init_process_group was given it ("gloo" when it asked for gloo, even
    though another registered backend serves it)."""
    pg = resolve(group)
    if pg is None:
        raise ValueError("Invalid process group specified")
    return pg.requested_backend


def get_process_group_ranks(group) -> list:
    """The global ranks of `group`'s members, in group-rank order."""
    pg = resolve(group)
    if pg is None:
        raise ValueError("this process is not a member of the group")
    return list(range(pg.size())) if pg.ranks is None else list(pg.ranks)


def get_global_rank(group, group_rank: int) -> int:
    pg = resolve(group)
    if pg is None:
        raise ValueError("this process is not a member of the group")
    if not 0 <= group_rank < pg.size():
        raise ValueError(f"group rank {group_rank} is out of range for a group of size {pg.size()}")
    return pg.global_rank(group_rank)


def get_group_rank(group, global_rank: int) -> int:
    pg = resolve(group)
    if pg is None:
        raise ValueError("this process is not a member of the group")
    return pg.group_rank(global_rank, "global rank")


def new_group(ranks=None, timeout=None, backend=None, pg_options=None, use_local_synchronization=False,
              group_desc=None):
    """A process group of the global `ranks` (default: every process), made from an MPI
    sub-communicator. Every process of the world must call it, in the same order; a process that is
    not in `ranks` gets GroupMember.NON_GROUP_MEMBER, on which collectives do nothing."""
    w = _world()
    requested = w.requested_backend if backend is None else Backend(str(getattr(backend, "value", backend)))
    if backend is not None and requested not in (w.backend.name, w.requested_backend) \
            and _find_backend(str(requested))[0] is not w.backend:
        raise ValueError(f"new_group(backend={backend!r}): groups use the default group's backend "
                         f"{w.backend.name!r}")
    size = w.handle.size
    if ranks is None:
        ranks = list(range(size))
    else:
        ranks = list(ranks)
        for r in ranks:
            if not isinstance(r, int) or isinstance(r, bool) or not 0 <= r < size:
                raise ValueError(f"new_group: invalid rank {r!r}; ranks must be in [0, {size - 1}]")
        if len(set(ranks)) != len(ranks):
            raise ValueError(f"new_group: ranks {ranks} contain duplicates")
        ranks = sorted(ranks)
    handle = w.backend.new_group(w.handle, ranks)
    if handle is None:
        return GroupMember.NON_GROUP_MEMBER
    pg = ProcessGroup(w.backend, handle, ranks=ranks, name=str(group_desc or f"group{len(_state.groups)}"),
                      timeout=w.timeout if timeout is None else _timeout_seconds(timeout),
                      requested_backend=requested)
    _state.groups.append(pg)
    return pg


# -- a failing process aborts the job ---------------------------------------------------------------
def _install_abort_hook(backend, rank):
    """sys.excepthook that prints the traceback, then aborts every process of the job (when the
    script runs under `python -m mpi4py`, mpi4py does the same before this hook is reached)."""
    if _state.prev_excepthook is not None:
        return
    prev = sys.excepthook

    def abort_on_uncaught(etype, value, tb):
        try:
            sys.stderr.write(f"tensorplug.distributed: uncaught exception on rank {rank}; "
                             f"aborting the job\n")
            prev(etype, value, tb)
            sys.stderr.flush()
            sys.stdout.flush()
            from . import health        # after the traceback is out: the others end the job on seeing it
            health.record_exit(f"exited with code 1 (uncaught {etype.__name__})")
        finally:
            backend.abort(1)

    _state.prev_excepthook = prev
    sys.excepthook = abort_on_uncaught


def _remove_abort_hook():
    prev = _state.prev_excepthook
    if prev is not None:
        sys.excepthook = prev
        _state.prev_excepthook = None
