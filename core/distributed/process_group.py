"""Process groups: the default (world) group made by init_process_group, and sub-groups (new_group).

Ranks and the world size come from the launcher (`tensorplug run -n N script.py`, or
`mpiexec -n N python script.py`). A ProcessGroup pairs a communication backend (found by name in
the registry, like a third-party plugin's) with the backend's communicator handle. Ranks passed to
the public functions (src, dst) are global ranks, as in PyTorch; a group translates them.
"""
from __future__ import annotations

import sys

__all__ = ["ProcessGroup", "GroupMember", "group", "init_process_group", "destroy_process_group",
           "is_initialized", "is_available", "get_rank", "get_world_size", "get_backend", "new_group",
           "get_process_group_ranks", "get_global_rank", "get_group_rank", "is_mpi_available"]

DEFAULT_BACKEND = "mpi"


class ProcessGroup:
    """A set of processes that run collectives together.

    `rank()` / `size()` are this process's rank in the group and the group's size; `ranks` the
    global ranks of the members in group-rank order (None for the world, where they coincide)."""
    __slots__ = ("backend", "handle", "ranks", "_index", "name", "__weakref__")

    def __init__(self, backend, handle, ranks=None, name=""):
        self.backend = backend
        self.handle = handle
        self.ranks = None if ranks is None else list(ranks)
        self._index = None if ranks is None else {r: i for i, r in enumerate(ranks)}
        self.name = name

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


def _find_backend(name):
    from ..dispatch import registry
    registry.ensure_loaded()
    b = registry.communication.get(name)
    if b is None:
        raise ValueError(f"unknown communication backend {name!r}; registered communication backends: "
                         f"{', '.join(sorted(registry.communication)) or 'none'}")
    ok, reason = b.is_available()
    if not ok:
        raise RuntimeError(f"communication backend {name!r} is not available: {reason}")
    return b


def init_process_group(backend=None, init_method=None, timeout=None, world_size=-1, rank=-1, store=None,
                       group_name="", pg_options=None, device_id=None):
    """Join the job's default process group.

    backend: a communication backend's name ("mpi", the default). Ranks and the world size come
    from the launcher; world_size / rank, when given (not -1), must match them, else ValueError.
    init_method, timeout, store, ...: accepted for compatibility; the launcher connects the
    processes. With more than one process, an uncaught exception in any process aborts the whole
    job (its traceback is printed first), so the other processes never wait forever. (A
    `sys.exit(code)` is not an exception Python reports: under `tensorplug run`, i.e.
    `python -m mpi4py`, a non-zero exit aborts the job too; under a bare `mpiexec python script.py`
    it does not.)"""
    if _state.world is not None:
        raise RuntimeError("trying to initialize the default process group twice!")
    name = DEFAULT_BACKEND if backend is None else str(getattr(backend, "value", backend)).lower()
    b = _find_backend(name)
    handle = b.init(world_size=world_size, rank=rank)
    pg = ProcessGroup(b, handle, name=group_name or "default")
    if handle.size > 1:
        _install_abort_hook(b, handle.rank)
    for what, given, actual in (("world_size", world_size, handle.size), ("rank", rank, handle.rank)):
        if given is not None and given != -1 and given != actual:
            raise ValueError(f"init_process_group({what}={given}) does not match the launcher, which "
                             f"started this process as rank {handle.rank} of {handle.size}; ranks and the "
                             f"world size come from the launcher (tensorplug run -n N / mpiexec -n N)")
    _state.world = pg
    _state.groups = []
    return None


def destroy_process_group(group=None) -> None:
    """Destroy `group`, or (None) every group and the default one; init_process_group may then be
    called again."""
    if group is None or group is _state.world:
        w = _world()
        for g in _state.groups:
            w.backend.destroy(g.handle)
        w.backend.destroy(w.handle)
        _state.world = None
        _state.groups = []
        _remove_abort_hook()
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
    pg = resolve(group)
    if pg is None:
        raise ValueError("Invalid process group specified")
    return pg.backend.name


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
    if backend is not None and str(getattr(backend, "value", backend)).lower() != w.backend.name:
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
    pg = ProcessGroup(w.backend, handle, ranks=ranks, name=str(group_desc or f"group{len(_state.groups)}"))
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
        finally:
            backend.abort(1)

    _state.prev_excepthook = prev
    sys.excepthook = abort_on_uncaught


def _remove_abort_hook():
    prev = _state.prev_excepthook
    if prev is not None:
        sys.excepthook = prev
        _state.prev_excepthook = None
