"""The NCCL communication backend ("nccl"): collectives on CuPy arrays through cupy.cuda.nccl.

The same communication SPI as the MPI backend (see tensorplug.backends.mpi_dist.backend): init,
new_group, destroy, send/recv/isend/irecv, all_reduce, broadcast, reduce, all_gather,
all_gather_into, gather, scatter, reduce_scatter, barrier. Arrays must be CuPy arrays on this
rank's device (cpu tensors: use the "mpi" backend). Operations are enqueued on the current CuPy
stream, so later kernels see their results; async_op requests wait on a CUDA event.

Start-up: processes come from an MPI launcher (`tensorplug run -n N` / `mpiexec -n N`); rank 0
makes the NCCL unique id and the MPI backend broadcasts it (a job of one process needs no MPI).
Each rank uses device `local rank % device count` (the launcher's local rank variable, else rank).
Limits of NCCL itself: no message tags (sends and receives between two ranks pair in order), no
receive from any source, no bitwise reductions; int16 travels as int32.
"""
from __future__ import annotations

import importlib
import os
import warnings

import numpy as np

from tensorplug.dispatch import CommunicationBackend

OPS = ("sum", "product", "min", "max")
_LOCAL_RANK_VARS = ("LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "MV2_COMM_WORLD_LOCAL_RANK",
                    "SLURM_LOCALID", "PMI_LOCAL_RANK")
_SIZE_VARS = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "MPI_LOCALNRANKS", "SLURM_NTASKS", "WORLD_SIZE")


def _import_nccl():
    import cupy
    for name in ("cupy.cuda.nccl", "cupy_backends.cuda.libs.nccl"):
        try:
            with warnings.catch_warnings():     # CuPy warns when libnccl is missing; the reason below says it
                warnings.simplefilter("ignore", UserWarning)
                mod = importlib.import_module(name)
        except ImportError:
            continue
        if getattr(mod, "available", True) and hasattr(mod, "NcclCommunicator"):
            return cupy, mod
    raise ImportError("cupy.cuda.nccl is not usable: NCCL is not installed (pip install nvidia-nccl-cu12, "
                      "or -cu13, matching your CuPy's CUDA) or this CuPy was built without NCCL")


class NcclGroup:
    """A communicator: `rank` and `size` in it, the NCCL communicator, the device, and the MPI group
    that bootstrapped it (None for a one-process job)."""
    __slots__ = ("comm", "rank", "size", "device", "mpi", "world")

    def __init__(self, comm, rank, size, device, mpi=None, world=False):
        self.comm, self.rank, self.size, self.device, self.mpi, self.world = comm, rank, size, device, mpi, world

    def __repr__(self):
        return f"<NcclGroup rank {self.rank} of {self.size} on cuda:{self.device}>"


class NcclRequest:
    """A pending operation: done when the CUDA event recorded after it has completed."""
    __slots__ = ("_event", "source", "_done")

    def __init__(self, event, source=None):
        self._event, self.source, self._done = event, source, False

    def is_completed(self) -> bool:
        if not self._done:
            self._done = self._event is None or bool(self._event.done)
        return self._done

    def wait(self, timeout=None) -> bool:
        if not self._done and self._event is not None:
            self._event.synchronize()
        self._done = True
        return True

    def is_success(self) -> bool:
        return self._done


class NcclBackend(CommunicationBackend):
    """Collectives through NCCL (see the module docstring)."""
    name = "nccl"
    OPS = OPS

    def __init__(self, modules=None, mpi=None):
        """modules: a function returning (cupy, nccl module); mpi: the communication backend that
        bootstraps multi-process jobs (default: the registry's "mpi")."""
        self._loader = modules or _import_nccl
        self._mods = None
        self._mpi_backend = mpi

    def modules(self):
        if self._mods is None:
            self._mods = tuple(self._loader())
        return self._mods

    @property
    def version(self):
        try:
            _, nccl = self.modules()
            v = int(nccl.get_version())
            return f"{v // 10000}.{v // 100 % 100}.{v % 100}" if v >= 10000 else f"{v // 1000}.{v // 100 % 10}.{v % 100}"
        except Exception:   # noqa: BLE001
            return "-"

    def is_available(self):
        try:
            xp, nccl = self.modules()
        except Exception as e:   # noqa: BLE001
            msg = str(e) if "nccl" in str(e).lower() else f"CuPy is not importable ({type(e).__name__}: {e})"
            return False, msg
        try:
            n = int(xp.cuda.runtime.getDeviceCount())
        except Exception as e:   # noqa: BLE001
            return False, f"no usable CUDA driver ({type(e).__name__}: {e})"
        if n <= 0:
            return False, "no CUDA device is visible"
        return True, ""

    # -- set-up ----------------------------------------------------------------------------------------
    def _mpi(self):
        if self._mpi_backend is None:
            from tensorplug.dispatch import registry
            registry.ensure_loaded()
            self._mpi_backend = registry.communication.get("mpi")
        return self._mpi_backend

    def _launched_size(self):
        for var in _SIZE_VARS:
            v = os.environ.get(var)
            if v and v.isdigit():
                return int(v)
        return 1

    def _local_rank(self, rank):
        for var in _LOCAL_RANK_VARS:
            v = os.environ.get(var)
            if v and v.isdigit():
                return int(v)
        return rank

    def _communicator(self, size, rank, device, bcast_id):
        xp, nccl = self.modules()
        with xp.cuda.Device(device):
            uid = bcast_id(nccl.get_unique_id() if rank == 0 else None)
            return nccl.NcclCommunicator(size, uid, rank)

    def init(self, world_size=-1, rank=-1):
        xp, nccl = self.modules()
        mgroup = None
        if self._launched_size() > 1:            # several processes: MPI carries the unique id
            mpi = self._mpi()
            ok, reason = mpi.is_available() if mpi is not None else (False, "no mpi backend is registered")
            if not ok:
                raise RuntimeError(f"the nccl backend needs the mpi backend to start a job of several "
                                   f"processes, and it is not available: {reason}")
            mgroup = mpi.init()
        size, me = (mgroup.size, mgroup.rank) if mgroup is not None else (1, 0)
        device = self._local_rank(me) % int(xp.cuda.runtime.getDeviceCount())
        xp.cuda.Device(device).use()
        bcast = (lambda uid: mgroup.comm.bcast(uid, root=0)) if mgroup is not None else (lambda uid: uid)
        comm = self._communicator(size, me, device, bcast)
        return NcclGroup(comm, me, size, device, mgroup, world=True)

    def new_group(self, group, ranks):
        ranks = list(ranks)
        if group.mpi is None:
            if ranks != [0]:
                raise ValueError(f"ranks {ranks} are not in a one-process job")
            return NcclGroup(group.comm, 0, 1, group.device, None)
        sub = self._mpi().new_group(group.mpi, ranks)
        if sub is None:
            return None
        comm = self._communicator(sub.size, sub.rank, group.device, lambda uid: sub.comm.bcast(uid, root=0))
        return NcclGroup(comm, sub.rank, sub.size, group.device, sub)

    def destroy(self, group):
        if group is None:
            return
        if group.comm is not None and (group.world or group.size > 1 or group.mpi is not None):
            try:
                group.comm.destroy()
            except Exception:   # noqa: BLE001 - already gone
                pass
        if group.mpi is not None and not group.world:
            self._mpi().destroy(group.mpi)

    def abort(self, code=1):
        mpi = self._mpi()
        if mpi is not None and mpi.is_available()[0]:
            mpi.abort(code)
        os._exit(code)

    # -- helpers ---------------------------------------------------------------------------------------
    def _stream(self):
        return self.modules()[0].cuda.get_current_stream()

    def _dtype(self, a):
        _, nccl = self.modules()
        table = {"float16": nccl.NCCL_FLOAT16, "float32": nccl.NCCL_FLOAT32, "float64": nccl.NCCL_FLOAT64,
                 "int8": nccl.NCCL_INT8, "uint8": nccl.NCCL_UINT8, "int32": nccl.NCCL_INT32,
                 "int64": nccl.NCCL_INT64, "bool": nccl.NCCL_UINT8}
        return table[a.dtype.name]

    def _op(self, op, dtype):
        _, nccl = self.modules()
        if op not in OPS:
            raise ValueError(f"reduce op {op!r} is not supported by NCCL; expected one of {', '.join(OPS)}")
        if dtype == np.bool_:                    # logical or / and, as in PyTorch
            op = {"sum": "max", "product": "min"}.get(op, op)
        return {"sum": nccl.NCCL_SUM, "product": nccl.NCCL_PROD, "min": nccl.NCCL_MIN, "max": nccl.NCCL_MAX}[op]

    def _buf(self, a, group, what="array"):
        """(contiguous device buffer NCCL can use, array to write it back to or None)."""
        xp = self.modules()[0]
        if not isinstance(a, xp.ndarray):
            raise TypeError(f"the nccl backend moves CUDA (CuPy) arrays; got {type(a).__name__} for the {what} "
                            f"(use the mpi backend for cpu tensors)")
        dev = getattr(getattr(a, "device", None), "id", group.device)
        if dev != group.device:
            raise RuntimeError(f"the {what} is on cuda:{dev}, but this rank's NCCL communicator uses "
                               f"cuda:{group.device}")
        b, back = a, None
        if a.dtype == np.int16:
            b, back = a.astype(np.int32), a
        elif not a.flags.c_contiguous:
            b, back = xp.ascontiguousarray(a), a
        return b, back

    def _ptr(self, b):
        return b.data.ptr

    def _done(self, back, b):
        if back is not None:
            self.modules()[0].copyto(back, b.reshape(back.shape), casting="unsafe")

    def _request(self, async_op, source=None):
        if not async_op:
            return None
        xp = self.modules()[0]
        ev = xp.cuda.Event(block=False, disable_timing=True)
        ev.record(self._stream())
        return NcclRequest(ev, source)

    # -- point to point --------------------------------------------------------------------------------
    def send(self, array, dst, tag, group):
        b, _ = self._buf(array, group)
        group.comm.send(self._ptr(b), b.size, self._dtype(b), dst, self._stream().ptr)

    def recv(self, array, src, tag, group):
        if src is None:
            raise ValueError("the nccl backend cannot receive from any source: give src")
        b, back = self._buf(array, group)
        group.comm.recv(self._ptr(b), b.size, self._dtype(b), src, self._stream().ptr)
        self._done(back, b)
        return src

    def isend(self, array, dst, tag, group):
        self.send(array, dst, tag, group)
        return self._request(True)

    def irecv(self, array, src, tag, group):
        got = self.recv(array, src, tag, group)
        return self._request(True, got)

    # -- collectives -----------------------------------------------------------------------------------
    def all_reduce(self, array, op, group, async_op=False):
        b, back = self._buf(array, group)
        ptr = self._ptr(b)
        group.comm.allReduce(ptr, ptr, b.size, self._dtype(b), self._op(op, b.dtype), self._stream().ptr)
        self._done(back, b)
        return self._request(async_op)

    def broadcast(self, array, src, group, async_op=False):
        b, back = self._buf(array, group)
        ptr = self._ptr(b)
        group.comm.broadcast(ptr, ptr, b.size, self._dtype(b), src, self._stream().ptr)
        self._done(back, b)
        return self._request(async_op)

    def reduce(self, array, dst, op, group, async_op=False):
        b, back = self._buf(array, group)
        ptr = self._ptr(b)
        group.comm.reduce(ptr, ptr, b.size, self._dtype(b), self._op(op, b.dtype), dst, self._stream().ptr)
        if group.rank == dst:
            self._done(back, b)
        return self._request(async_op)

    def all_gather_into(self, out_array, array, group, async_op=False):
        b, _ = self._buf(array, group)
        o, back = self._buf(out_array, group, "output")
        group.comm.allGather(self._ptr(b), self._ptr(o), b.size, self._dtype(b), self._stream().ptr)
        self._done(back, o)
        return self._request(async_op)

    def all_gather(self, out_arrays, array, group, async_op=False):
        xp = self.modules()[0]
        b, _ = self._buf(array, group)
        tmp = xp.empty((group.size,) + b.shape, dtype=b.dtype)
        group.comm.allGather(self._ptr(b), self._ptr(tmp), b.size, self._dtype(b), self._stream().ptr)
        for o, piece in zip(out_arrays, tmp):
            xp.copyto(o, piece.reshape(o.shape), casting="unsafe")
        return self._request(async_op)

    def gather(self, array, out_arrays, dst, group, async_op=False):
        xp, nccl = self.modules()
        b, _ = self._buf(array, group)
        s = self._stream().ptr
        if group.rank == dst:
            tmp = xp.empty((group.size,) + b.shape, dtype=b.dtype)
            nccl.groupStart()
            for r in range(group.size):
                if r != dst:
                    group.comm.recv(self._ptr(tmp[r]), b.size, self._dtype(b), r, s)
            nccl.groupEnd()
            xp.copyto(tmp[dst], b)
            for o, piece in zip(out_arrays, tmp):
                xp.copyto(o, piece.reshape(o.shape), casting="unsafe")
        else:
            group.comm.send(self._ptr(b), b.size, self._dtype(b), dst, s)
        return self._request(async_op)

    def scatter(self, out_array, in_arrays, src, group, async_op=False):
        xp, nccl = self.modules()
        o, back = self._buf(out_array, group, "output")
        s = self._stream().ptr
        if group.rank == src:
            pieces = [self._buf(a, group, "input")[0] for a in in_arrays]
            nccl.groupStart()
            for r, p in enumerate(pieces):
                if r != src:
                    group.comm.send(self._ptr(p), p.size, self._dtype(p), r, s)
            nccl.groupEnd()
            xp.copyto(o, pieces[src].reshape(o.shape))
        else:
            group.comm.recv(self._ptr(o), o.size, self._dtype(o), src, s)
        self._done(back, o)
        return self._request(async_op)

    def reduce_scatter(self, out_array, in_arrays, op, group, async_op=False):
        xp = self.modules()[0]
        o, back = self._buf(out_array, group, "output")
        send = xp.stack([self._buf(a, group, "input")[0].reshape(o.shape) for a in in_arrays])
        group.comm.reduceScatter(self._ptr(send), self._ptr(o), o.size, self._dtype(o), self._op(op, o.dtype),
                                 self._stream().ptr)
        self._done(back, o)
        return self._request(async_op)

    def barrier(self, group, async_op=False):
        xp = self.modules()[0]
        with xp.cuda.Device(group.device):
            one = xp.ones((1,), dtype=np.float32)
            req = self.all_reduce(one, "sum", group, async_op)
            if not async_op:
                self._stream().synchronize()
        return req
