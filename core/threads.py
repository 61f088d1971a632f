"""CPU threads: `set_num_threads` / `get_num_threads` (intra-op: the threads one kernel may use) and
`set_num_interop_threads` / `get_num_interop_threads`.

The thread count belongs to the backend serving "cpu": one that runs kernels on a thread pool provides
`set_num_threads(n)` and `get_num_threads()` (the NumPy backend sets its BLAS and OpenMP pools through
threadpoolctl). A backend without them keeps its own threading; the count asked for is then only
recorded and read back. tensorplug runs no inter-op thread pool: the inter-op count is recorded and,
as in PyTorch, can be set once.
"""
from __future__ import annotations

import os

__all__ = ["set_num_threads", "get_num_threads", "set_num_interop_threads", "get_num_interop_threads"]

_asked = [None]             # set_num_threads' count, for a backend without a thread method
_interop = [None]


def _count(n, fname) -> int:
    if not isinstance(n, int) or isinstance(n, bool):
        raise RuntimeError(f"{fname} expects an int, but got {type(n).__name__}")
    if n <= 0:
        raise RuntimeError(f"{fname} expects a positive integer")
    return n


def _cpu_backend():
    from .dispatch import registry
    from .ops.creation import _CPU
    return registry.backend_for(_CPU.type)


def set_num_threads(n: int) -> None:
    """Let a CPU kernel use at most `n` threads (NumPy's BLAS and OpenMP thread pools)."""
    n = _count(n, "set_num_threads")
    fn = getattr(_cpu_backend(), "set_num_threads", None)
    if fn is not None:
        fn(n)
    _asked[0] = n


def get_num_threads() -> int:
    """The number of threads a CPU kernel may use (as the backend reports it)."""
    fn = getattr(_cpu_backend(), "get_num_threads", None)
    if fn is not None:
        return int(fn())
    return _asked[0] if _asked[0] is not None else (os.cpu_count() or 1)


def set_num_interop_threads(n: int) -> None:
    """Set the inter-op thread count; allowed once, as in PyTorch."""
    n = _count(n, "set_num_interop_threads")
    if _interop[0] is not None:
        raise RuntimeError("Error: cannot set number of interop threads after parallel work has started "
                           "or set_num_interop_threads called")
    _interop[0] = n


def get_num_interop_threads() -> int:
    """The inter-op thread count (default: the number of CPUs)."""
    return _interop[0] if _interop[0] is not None else (os.cpu_count() or 1)
