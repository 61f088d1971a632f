"""The distributed debug level (PyTorch's TORCH_DISTRIBUTED_DEBUG) and DETAIL's collective checks.

TENSORPLUG_DISTRIBUTED_DEBUG (else TORCH_DISTRIBUTED_DEBUG) = OFF (default) | INFO | DETAIL, read once,
at the first collective (or by set_debug_level_from_env()). With DETAIL, every collective first
all-gathers a small fixed-size fingerprint of each rank's call (operation, dtype, shape, root) and
raises DistBackendError on every rank when they differ, naming each rank's. It costs one extra
small all-gather per collective; when off, a collective pays one attribute test. Set it on every
rank (the launcher passes the environment to all of them).
"""
from __future__ import annotations

import enum
import os

__all__ = ["DebugLevel", "get_debug_level", "set_debug_level", "set_debug_level_from_env"]

ENV_VARS = ("TENSORPLUG_DISTRIBUTED_DEBUG", "TORCH_DISTRIBUTED_DEBUG")
MAX_DIMS = 8            # dims of a shape recorded in the fingerprint (more: compared by numel)

# fixed code tables: every rank must map names to the same numbers
OPS = ("all_reduce", "broadcast", "reduce", "all_gather", "all_gather_into_tensor", "gather", "scatter",
       "reduce_scatter", "reduce_scatter_tensor", "barrier", "all_to_all", "all_to_all_single")
OP_TYPES = {"all_reduce": "ALLREDUCE", "all_gather": "ALLGATHER", "all_gather_into_tensor": "_ALLGATHER_BASE",
            "reduce_scatter": "REDUCE_SCATTER", "reduce_scatter_tensor": "_REDUCE_SCATTER_BASE",
            "all_to_all": "ALLTOALL", "all_to_all_single": "ALLTOALL_BASE"}    # PyTorch's OpType names
DTYPES = ("float32", "float64", "float16", "bfloat16", "int8", "int16", "int32", "int64", "uint8", "bool",
          "complex64", "complex128", "uint16", "uint32", "uint64")
SCALAR_TYPES = ("Float", "Double", "Half", "BFloat16", "Char", "Short", "Int", "Long", "Byte", "Bool",
                "ComplexFloat", "ComplexDouble", "UInt16", "UInt32", "UInt64")     # PyTorch's names, as DTYPES


class DebugLevel(enum.Enum):
    OFF = 0
    INFO = 1
    DETAIL = 2


class _State:
    """`on` is True until the level is known, then True only for DETAIL: the one attribute a
    collective tests."""
    __slots__ = ("on", "level")

    def __init__(self):
        self.on = True
        self.level = None


state = _State()


def _from_env():
    for var in ENV_VARS:
        value = os.environ.get(var)
        if value:
            try:
                return DebugLevel[value.strip().upper()]
            except KeyError:
                raise ValueError(f"The value of {var} must be OFF, INFO, or DETAIL (got {value!r})") from None
    return DebugLevel.OFF


def set_debug_level(level) -> None:
    """Set the level (a DebugLevel or its name) for this process."""
    if not isinstance(level, DebugLevel):
        try:
            level = DebugLevel[str(level).upper()]
        except KeyError:
            raise ValueError(f"debug level must be OFF, INFO or DETAIL, got {level!r}") from None
    state.level = level
    state.on = level is DebugLevel.DETAIL


def set_debug_level_from_env() -> None:
    set_debug_level(_from_env())


def get_debug_level() -> DebugLevel:
    if state.level is None:
        set_debug_level_from_env()
    return state.level


def _fingerprint(op, tensor, root):
    import numpy as np
    fp = np.full(5 + MAX_DIMS, -1, np.int64)
    fp[0] = OPS.index(op)
    fp[4] = root
    if tensor is not None:
        name = tensor._dtype.name
        fp[1] = DTYPES.index(name) if name in DTYPES else len(DTYPES) + sum(map(ord, name))
        shape = tuple(tensor._data.shape)
        fp[2] = len(shape)
        fp[3] = int(np.prod(shape, dtype=np.int64))
        fp[5:5 + min(len(shape), MAX_DIMS)] = shape[:MAX_DIMS]
    return fp


def _describe(fp):
    op = OPS[fp[0]] if 0 <= fp[0] < len(OPS) else f"op#{fp[0]}"
    parts = [f"OpType={OP_TYPES.get(op, op.upper())}"]
    if fp[1] >= 0:
        ndim = int(fp[2])
        shape = [int(d) for d in fp[5:5 + min(ndim, MAX_DIMS)]]
        dims = ", ".join(map(str, shape)) + (f", ... ({ndim} dims, {int(fp[3])} elements)" if ndim > MAX_DIMS else "")
        dt = SCALAR_TYPES[fp[1]] if fp[1] < len(DTYPES) else "other"
        parts += [f"TensorShape=[{dims}]", f"TensorDtypes={dt}"]
    if fp[4] >= 0:
        parts.append(f"Root={int(fp[4])}")
    return f"CollectiveFingerPrint({', '.join(parts)})"


def check(pg, op, tensor=None, root=-1):
    """DETAIL: raise DistBackendError on every rank of `pg` unless each rank calls `op` with the same
    dtype, shape and root (a global rank, -1 for none), naming this rank's call and each different
    one (PyTorch's message). Called where `state.on` is true."""
    if state.level is None:
        get_debug_level()
        if not state.on:
            return
    import numpy as np
    n = pg.handle.size
    mine = _fingerprint(op, tensor, root)
    every = np.empty((n, mine.size), np.int64)
    pg.backend.all_gather_into(every, mine, pg.handle)
    me = pg.handle.rank
    bad = [i for i in range(n) if not np.array_equal(every[i], mine)]
    if not bad:
        return
    from .errors import DistBackendError
    others = "; ".join(f"Rank {pg.global_rank(i)} is running collective: {_describe(every[i])}" for i in bad)
    raise DistBackendError(f"Detected mismatch between collectives on ranks. Rank {pg.global_rank(me)} is "
                           f"running collective: {_describe(mine)}, but {others}")
