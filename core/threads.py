"""CPU threads: `set_num_threads` / `get_num_threads` (intra-op: the threads one kernel may use) and
`set_num_interop_threads` / `get_num_interop_threads`.

The thread count belongs to the backend serving "cpu": one that runs kernels on a thread pool provides
`set_num_threads(n)` and `get_num_threads()` (the NumPy backend sets its BLAS and OpenMP pools through
threadpoolctl). A backend without them keeps its own threading; the count asked for is then only
recorded and read back. tensorplug runs no inter-op thread pool: the inter-op count is recorded and,
as in PyTorch, can be set once.

Default: ONE BLAS thread (`DEFAULT_THREADS`), unless the environment names a count
(`OMP_NUM_THREADS`, `OPENBLAS_NUM_THREADS`, `MKL_NUM_THREADS`, ... : then the libraries' own reading
of it stands); `set_num_threads(n)` raises or lowers it at any time. Chosen by measurement on a
2-core machine (docs/threads.md): OpenBLAS's threads spin-wait, so with a core taken by another
process a 2-thread MLP step ran 13x slower than with 1 thread (189 ms vs 14.6 ms) and a ResNet-18
step 2.3x; with both cores free 2 threads gained nothing on these model steps (ResNet-18 224 vs
227 ms). `import tensorplug` applies the default at no cost when NumPy is not loaded yet (the
variables are set only while NumPy loads its BLAS, then restored, so child processes and libraries
loaded later see the user's environment); when NumPy was imported first it goes through
threadpoolctl.
"""
from __future__ import annotations

import os
import sys

__all__ = ["set_num_threads", "get_num_threads", "set_num_interop_threads", "get_num_interop_threads"]

_asked = [None]             # set_num_threads' count, for a backend without a thread method
_interop = [None]

DEFAULT_THREADS = 1
# the variables through which a user names a BLAS / OpenMP thread count (any set: no default applied)
THREAD_ENV = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "GOTO_NUM_THREADS",
              "BLIS_NUM_THREADS", "VECLIB_MAXIMUM_THREADS")
# the ones BLAS libraries read when they load (OpenBLAS, MKL, BLIS, Accelerate); OMP_NUM_THREADS is
# left alone: an OpenMP runtime loaded later would read it
_BLAS_ENV = ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS", "VECLIB_MAXIMUM_THREADS")
default_applied = [None]    # how the default was applied at import: "env", "threadpoolctl", or None


def _import_numpy_with_default_threads() -> None:
    """Called first by `import tensorplug`: load NumPy with DEFAULT_THREADS BLAS threads unless the
    user named a count in the environment."""
    if any(os.environ.get(k) for k in THREAD_ENV):
        return
    if "numpy" in sys.modules:          # its BLAS already read the environment
        try:
            from threadpoolctl import threadpool_limits
        except ImportError:
            return
        threadpool_limits(limits=DEFAULT_THREADS, user_api="blas")
        default_applied[0] = "threadpoolctl"
        return
    for k in _BLAS_ENV:
        os.environ[k] = str(DEFAULT_THREADS)
    try:
        import numpy  # noqa: F401
    finally:
        for k in _BLAS_ENV:
            os.environ.pop(k, None)
    default_applied[0] = "env"


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
