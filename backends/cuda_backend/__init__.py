"""The CuPy compute backend for device "cuda" (registration only; kernels arrive with the CUDA issue)."""
from tensorplug.dispatch import Backend, hookimpl


class CudaBackend(Backend):
    name = "cuda"
    device_type = "cuda"
    priority = 0

    @property
    def version(self):
        """CuPy's version, or "-" where CuPy is not installed."""
        try:
            import cupy
        except Exception:
            return "-"
        return cupy.__version__

    def is_available(self):
        try:
            import cupy  # noqa: F401
        except Exception as e:  # ImportError, or a CUDA library failing to load
            return False, f"CuPy is not importable ({type(e).__name__}: {e}); install tensorplug[cuda]"
        return False, "the CuPy kernels of this backend are not implemented yet"

    def native_kernels(self):
        return {}


@hookimpl
def tensorplug_register_backends(registry):
    registry.add(CudaBackend())
