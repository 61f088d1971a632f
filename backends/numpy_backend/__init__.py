"""The NumPy compute backend for device "cpu", registered through the plugin hook."""
import numpy as np

from tensorplug.dispatch import Backend, hookimpl


class NumpyBackend(Backend):
    name = "numpy"
    device_type = "cpu"
    priority = 0
    indexed = False          # one device: "cpu", never "cpu:0"
    version = np.__version__

    def native_kernels(self):
        import warnings

        # NumPy reports overflow / invalid values (inf - inf, log(0)) as warnings; PyTorch's kernels
        # are silent about IEEE results, so ours are too. The filter is scoped to this backend's
        # modules and costs nothing unless a warning is raised.
        warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"tensorplug\.backends\.numpy_backend")
        from .kernels import build
        return build()


@hookimpl
def tensorplug_register_backends(registry):
    registry.add(NumpyBackend())
