"""The CuPy compute backend for device "cuda" (cuda:0, cuda:1, ...), and the NCCL communication
backend, registered through the plugin hook like any third-party plugin.

Importing this module never imports CuPy (so `import tensorplug` stays cheap and never breaks):
CuPy is imported the first time the backend is asked whether it is available or for its kernels.
Without CuPy, a CUDA driver or a device, `is_available()` answers (False, the reason).

The kernels (kernels.py, conv.py, norm.py, fused.py) are written over an array module `xp` and a
cupyx-like module; `CudaBackend(modules=...)` builds the same backend over other modules (the CPU
tests use a NumPy-based CuPy stand-in under another device type to test the backend's logic).

Devices: each device index gets its own kernel table whose kernels run inside
`cupy.cuda.Device(index)` (so arrays of cuda:1 are made and computed on device 1 whatever the
current device is); with a single device the plain table is used (no context switch per kernel).
Matmul runs without TF32 unless `allow_tf32` is set (tensorplug.cuda.set_allow_tf32, or the
environment variable TENSORPLUG_CUDA_TF32=1): conformance runs compare with float64 references.
"""
from __future__ import annotations

import contextlib
import os

from tensorplug.dispatch import Backend, hookimpl

__all__ = ["CudaBackend", "hookimpl", "tensorplug_register_backends"]

# no "bfloat16": CuPy has no bfloat16 arrays, so the frontend refuses bfloat16 tensors on this backend
# ("bfloat16 is not supported on the 'cuda' backend", a TypeError) rather than converting them silently
_DTYPES = frozenset(("float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "bool",
                     "complex64", "complex128"))


def _import_cupy():
    import cupy
    import cupyx
    return cupy, cupyx


class CudaBackend(Backend):
    """Kernels on CuPy arrays for device type `device_type` (default "cuda")."""

    name = "cuda"
    device_type = "cuda"
    priority = 0
    indexed = True
    dtypes = _DTYPES

    def __init__(self, modules=None, name=None, device_type=None, priority=None):
        """modules: a function returning (xp, cupyx-like module); default imports cupy and cupyx."""
        self._loader = modules or _import_cupy
        if name is not None:
            self.name = name
        if device_type is not None:
            self.device_type = device_type
        if priority is not None:
            self.priority = priority
        self._mods = None
        self._avail = None
        self._count = None
        self._fusion = None
        self.fallbacks = {}              # which CuPy gaps were worked around (scatter_add dtypes, ...)
        from tensorplug.dispatch.config import env_bool
        self.allow_tf32 = env_bool("TENSORPLUG_CUDA_TF32")

    # -- the array modules ---------------------------------------------------------------------------
    def modules(self):
        """(xp, cupyx): imported once; raises what the import raised."""
        if self._mods is None:
            self._mods = tuple(self._loader())
        return self._mods

    @property
    def xp(self):
        return self.modules()[0]

    @property
    def version(self):
        """CuPy's version, or "-" where CuPy is not importable."""
        try:
            return str(self.modules()[0].__version__)
        except Exception:
            return "-"

    # -- availability --------------------------------------------------------------------------------
    def is_available(self):
        if self._avail is None:
            self._avail = self._probe()
        return self._avail

    def _probe(self):
        try:
            xp, _ = self.modules()
        except Exception as e:  # ImportError, or a CUDA library failing to load
            from tensorplug.utils.collect_env import pip_install_command
            return False, f"CuPy is not importable ({type(e).__name__}: {e}); install it: {pip_install_command('cuda')}"
        try:
            n = int(xp.cuda.runtime.getDeviceCount())
        except Exception as e:  # CUDARuntimeError: no driver, driver too old, ...
            return False, f"no usable CUDA driver ({type(e).__name__}: {e})"
        if n <= 0:
            return False, "no CUDA device is visible (cudaGetDeviceCount returned 0; see CUDA_VISIBLE_DEVICES)"
        try:                            # a first kernel: catches a missing NVRTC / an unusable device
            with xp.cuda.Device(0):
                a = xp.arange(4, dtype="float32")
                float((a + 1).sum())
        except Exception as e:
            return False, f"CuPy cannot run a kernel on device 0 ({type(e).__name__}: {e})"
        self._count = n
        return True, ""

    def device_count(self) -> int:
        if self._count is None:
            try:
                self._count = int(self.modules()[0].cuda.runtime.getDeviceCount())
            except Exception:
                self._count = 0
        return self._count

    # -- devices -------------------------------------------------------------------------------------
    def device_context(self, index):
        if index is None:
            return contextlib.nullcontext()
        return self.modules()[0].cuda.Device(index)

    def kernels_for(self, index) -> dict:
        """Per-device tables; with several devices, device 0's kernels are bound to device 0 too
        (a set_device(1) must not move cuda:0's work)."""
        if index and index > 0 or (self.device_count() > 1 and index is not None):
            tables = self.__dict__.setdefault("_device_tables", {})
            table = tables.get(index)
            if table is None:
                table = tables[index] = self.device_kernels(index)
            return table
        return self.kernels

    def device_kernels(self, index) -> dict:
        """The kernel table with every kernel running inside `Device(index)`."""
        dev = self.modules()[0].cuda.Device(index)

        def bind(fn):
            def kernel(*args, **kwargs):
                with dev:
                    return fn(*args, **kwargs)
            kernel.__name__ = getattr(fn, "__name__", "kernel")
            kernel.__wrapped__ = fn
            return kernel
        return {k: (bind(v) if callable(v) and k != "__backend__" else v) for k, v in self.kernels.items()}

    def current_device(self) -> int:
        return int(self.modules()[0].cuda.runtime.getDevice())

    def set_device(self, index) -> None:
        self.modules()[0].cuda.runtime.setDevice(int(index))

    def synchronize(self, index=None) -> None:
        xp = self.modules()[0]
        if index is None:
            xp.cuda.Device().synchronize()
        else:
            xp.cuda.Device(index).synchronize()

    def device_name(self, index=0) -> str:
        props = self.modules()[0].cuda.runtime.getDeviceProperties(int(index))
        name = props.get("name", b"?")
        return name.decode() if isinstance(name, bytes) else str(name)

    def device_capability(self, index=0) -> tuple:
        props = self.modules()[0].cuda.runtime.getDeviceProperties(int(index))
        return int(props.get("major", 0)), int(props.get("minor", 0))

    def memory_allocated(self) -> int:
        return int(self.modules()[0].get_default_memory_pool().used_bytes())

    def memory_reserved(self) -> int:
        """Bytes CuPy's pool holds, in use or cached for reuse (PyTorch's "reserved")."""
        return int(self.modules()[0].get_default_memory_pool().total_bytes())

    def max_memory_allocated(self) -> int:
        """The peak of memory_allocated() since the last reset_peak_memory_stats(). CuPy's pool keeps
        no peak: a wrapper of the allocator records it, installed by the first call of this or of
        reset_peak_memory_stats() (it costs a Python call per allocation, so it is not there before;
        the first call reports the bytes in use then)."""
        return max(self._peak_tracker()[0], self.memory_allocated())

    def reset_peak_memory_stats(self) -> None:
        self._peak_tracker()[0] = self.memory_allocated()

    def _peak_tracker(self) -> list:
        peak = self.__dict__.get("_peak")
        if peak is None:
            xp = self.modules()[0]
            used = xp.get_default_memory_pool().used_bytes
            inner = xp.cuda.get_allocator()
            peak = self._peak = [int(used())]

            def allocate(size):
                mem = inner(size)
                n = used()
                if n > peak[0]:
                    peak[0] = n
                return mem
            xp.cuda.set_allocator(allocate)
        return peak

    def empty_cache(self) -> None:
        xp = self.modules()[0]
        xp.get_default_memory_pool().free_all_blocks()
        pinned = getattr(xp, "get_default_pinned_memory_pool", None)
        if pinned is not None:
            pinned().free_all_blocks()

    # -- TF32 ----------------------------------------------------------------------------------------
    def set_allow_tf32(self, allow: bool) -> None:
        """Let float32 matmuls use TF32 tensor cores (Ampere and newer): faster, ~1e-3 relative error."""
        self.allow_tf32 = bool(allow)
        if self._kernels is not None:
            self._apply_tf32()

    def _apply_tf32(self):
        xp = self.modules()[0]
        try:
            import importlib
            lin = importlib.import_module(xp.__name__ + "._core._routines_linalg")
        except Exception as e:   # noqa: BLE001 - another CuPy layout: leave CuPy's default (CUPY_TF32)
            self.fallbacks["tf32"] = f"cannot set cuBLAS compute type ({type(e).__name__}: {e})"
            return
        import numpy as np
        lin.set_compute_type(np.float32, lin.COMPUTE_TYPE_TF32 if self.allow_tf32 else lin.COMPUTE_TYPE_DEFAULT)

    def tf32_enabled(self) -> bool:
        """Whether float32 matmuls may use TF32 now (as CuPy will do it)."""
        import importlib

        import numpy as np
        try:
            lin = importlib.import_module(self.modules()[0].__name__ + "._core._routines_linalg")
            return lin.get_compute_type(np.float32) == lin.COMPUTE_TYPE_TF32
        except Exception:   # noqa: BLE001
            return False

    # -- kernels -------------------------------------------------------------------------------------
    def kernel_status(self) -> dict:
        """Per kernel: native / decomposed / missing. Without CuPy the table cannot be built; every
        kernel of the SPI is native here (tests/cuda checks that on the CPU stand-in)."""
        try:
            return super().kernel_status()
        except Exception:   # noqa: BLE001 - CuPy not importable
            from tensorplug.dispatch.backend_api import OPTIONAL, REQUIRED
            return {n: "native" for n in (*REQUIRED, *OPTIONAL)}

    def fusion(self):
        if self._fusion is None:
            from .fused import Fusion
            self._fusion = Fusion(self.modules()[0])
        return self._fusion

    def fuse_pointwise(self, program):
        """One ElementwiseKernel for a compiled tape's pointwise chain (fusion.py); None without CuPy
        or over the CPU stand-in (no ElementwiseKernel there)."""
        try:
            xp = self.modules()[0]
        except Exception:   # noqa: BLE001 - CuPy not importable: the tape runs op by op
            return None
        from .fusion import fuse_pointwise
        return fuse_pointwise(program, xp)

    def native_kernels(self):
        from . import complex as complex_kernels, conv, fft, kernels, norm
        xp, cx = self.modules()
        f = self.fusion()
        self._apply_tf32()
        table = kernels.build(xp, cx, f, self.fallbacks)
        table.update(conv.build(xp, f))
        table.update(norm.build(xp, f, lambda: self.kernels))
        table.update(complex_kernels.build(xp))
        table.update(fft.build(xp))
        from . import linalg
        table.update(linalg.build(xp, cx))
        from . import sparse, vision
        table.update(sparse.build(xp, cx, lambda: self.kernels))
        table.update(vision.build(xp, lambda: self.kernels))
        return table


@hookimpl
def tensorplug_register_backends(registry):
    registry.add(CudaBackend())
    from .nccl import NcclBackend
    registry.add_communication(NcclBackend())
