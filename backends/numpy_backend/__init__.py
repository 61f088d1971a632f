"""The NumPy compute backend for device "cpu", registered through the plugin hook."""
import os
import sys

import numpy as np

from tensorplug.dispatch import Backend, hookimpl


class NumpyBackend(Backend):
    name = "numpy"
    device_type = "cpu"
    priority = 0
    indexed = False          # one device: "cpu", never "cpu:0"
    version = np.__version__
    dtypes = Backend.dtypes | {"complex64", "complex128"} | {"bfloat16"}     # bfloat16: ml_dtypes' storage

    def native_kernels(self):
        from .kernels import build
        return build()

    def fuse_pointwise(self, program):
        # TENSORPLUG_FUSE: "numba" (default; a compiled loop, the `fast` extra), "numexpr" (the `compile`
        # extra: measured 3x slower than NumPy's SIMD ufuncs on one thread, docs/compile.md), "none"
        engine = os.environ.get("TENSORPLUG_FUSE", "numba")
        if engine == "numba":
            from .fusion_numba import fuse_pointwise
        elif engine == "numexpr":
            from .fusion_numexpr import fuse_pointwise
        else:
            return None
        return fuse_pointwise(program)

    # tensorplug.set_num_threads / get_num_threads: the thread pools of NumPy's BLAS and of any OpenMP
    # runtime in the process, through threadpoolctl (imported on first use)
    def set_num_threads(self, n: int) -> None:
        from threadpoolctl import threadpool_limits
        threadpool_limits(limits=n)
        if "numexpr" in sys.modules:         # compiled tapes' fused kernels (fusion_numexpr.py)
            sys.modules["numexpr"].set_num_threads(n)

    def get_num_threads(self) -> int:
        from threadpoolctl import threadpool_info
        return max((lib["num_threads"] for lib in threadpool_info() if lib["user_api"] in ("blas", "openmp")),
                   default=1)


@hookimpl
def tensorplug_register_backends(registry):
    registry.add(NumpyBackend())
