"""tensorplug.backends.openmp: whether OpenMP is available (torch.backends.openmp).

tensorplug runs no OpenMP code itself; the answer is whether an OpenMP runtime is loaded in this process
(for NumPy's BLAS, or a backend's compiled kernels), as threadpoolctl sees it. NumPy's own wheels use
OpenBLAS with pthreads, so it is often False where PyTorch, built with OpenMP, says True.
"""
from __future__ import annotations

__all__ = ["is_available"]


def is_available() -> bool:
    from threadpoolctl import threadpool_info
    return any(lib.get("user_api") == "openmp" for lib in threadpool_info())
