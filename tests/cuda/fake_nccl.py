"""A one-process stand-in for cupy.cuda.nccl over fake_cupy arrays (pointers are NumPy buffer
addresses). A communicator of size 1 copies send buffers to receive buffers; it records every call.
It exercises the nccl backend's staging, dtype and op mapping, not NCCL."""
from __future__ import annotations

import ctypes

available = True
(NCCL_INT8, NCCL_UINT8, NCCL_INT32, NCCL_UINT32, NCCL_INT64, NCCL_UINT64, NCCL_FLOAT16, NCCL_FLOAT32,
 NCCL_FLOAT64) = range(9)
NCCL_SUM, NCCL_PROD, NCCL_MAX, NCCL_MIN = range(4)
_SIZE = {NCCL_INT8: 1, NCCL_UINT8: 1, NCCL_INT32: 4, NCCL_UINT32: 4, NCCL_INT64: 8, NCCL_UINT64: 8,
         NCCL_FLOAT16: 2, NCCL_FLOAT32: 4, NCCL_FLOAT64: 8}
calls = []


def get_version():
    return 22105


def get_unique_id():
    return tuple(range(128))


def groupStart():
    calls.append(("groupStart",))


def groupEnd():
    calls.append(("groupEnd",))


class NcclCommunicator:
    def __init__(self, ndev, commId, rank):
        assert ndev == 1 and rank == 0 and len(commId) == 128, "the stand-in has one rank"
        self.destroyed = False

    def _copy(self, name, send, recv, count, dtype):
        calls.append((name, count, dtype))
        if send != recv:
            ctypes.memmove(recv, send, count * _SIZE[dtype])

    def allReduce(self, send, recv, count, dtype, op, stream):
        calls.append(("op", op))
        self._copy("allReduce", send, recv, count, dtype)

    def reduce(self, send, recv, count, dtype, op, root, stream):
        self._copy("reduce", send, recv, count, dtype)

    def broadcast(self, send, recv, count, dtype, root, stream):
        self._copy("broadcast", send, recv, count, dtype)

    def allGather(self, send, recv, count, dtype, stream):
        self._copy("allGather", send, recv, count, dtype)

    def reduceScatter(self, send, recv, count, dtype, op, stream):
        self._copy("reduceScatter", send, recv, count, dtype)

    def send(self, buf, count, dtype, peer, stream):
        raise AssertionError("no peer in a one-rank job")

    def recv(self, buf, count, dtype, peer, stream):
        raise AssertionError("no peer in a one-rank job")

    def destroy(self):
        self.destroyed = True


def modules():
    import fake_cupy
    import sys
    return fake_cupy, sys.modules[__name__]
