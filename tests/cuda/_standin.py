"""Helpers of the CUDA backend tests: the real CudaBackend class over `fake_cupy`, the NumPy-based CuPy
stand-in (tests with it check the backend's logic and the frontend's device plumbing on the CPU; they
prove nothing about CuPy or a GPU)."""
from __future__ import annotations

import fake_cupy

from tensorplug.backends.cuda_backend import CudaBackend
from tensorplug.dispatch import hookimpl, registry


def make_standin(name="fakecuda", device_type="fakecuda", priority=0):
    """The CUDA backend class over the NumPy-based CuPy stand-in."""
    return CudaBackend(modules=fake_cupy.modules, name=name, device_type=device_type, priority=priority)


def register(backend, plugin_name=None):
    """Register `backend` through a runtime plugin (the root conftest removes it after the test)."""
    class Plugin:
        @hookimpl
        def tensorplug_register_backends(self, registry):
            registry.add(backend)

    registry.register_plugin(Plugin(), name=plugin_name or f"test-plugin-{backend.name}")
    return backend
