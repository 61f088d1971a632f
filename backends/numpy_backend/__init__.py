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
        from .kernels import build
        return build()


@hookimpl
def tensorplug_register_backends(registry):
    registry.add(NumpyBackend())
