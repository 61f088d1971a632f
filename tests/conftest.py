"""Shared fixtures. The session ignores the user's backend configuration (environment variables and
config file), and every test leaves the backend registry as it found it."""
from __future__ import annotations

import os

import pytest

# Before tensorplug selects any backend: no TENSORPLUG_BACKEND_* and no ~/.config file may steer tests.
for _key in [k for k in os.environ if k.startswith("TENSORPLUG_BACKEND_")]:
    del os.environ[_key]
os.environ["TENSORPLUG_CONFIG"] = os.devnull     # an empty config (a named file that is missing is an error)
os.environ.pop("TENSORPLUG_STRICT_PLUGINS", None)

from tensorplug.dispatch import registry  # noqa: E402


@pytest.fixture(autouse=True)
def _restore_registry():
    """Unregister plugins a test registered at run time and forget its backend selections
    (re-selection on next use is cheap and re-reads the restored environment)."""
    registry.ensure_loaded()
    before = {p.name for p in registry.plugins}
    yield
    for rec in list(registry.plugins):
        if rec.name not in before:
            registry.unregister_plugin(rec.name)
    registry.reset_selection()


def make_backend_class(name, device_type="cpu", priority=0, available=(True, ""), indexed=None,
                       count=1, counting=False, drop=()):
    """A compute backend class with the NumPy kernels: `name` serving `device_type`.

    available: what is_available() returns; count: device_count(); counting: record kernel calls
    in `instance.calls` ({kernel name: number}); drop: kernel names left out of the table."""
    from tensorplug.backends.numpy_backend import NumpyBackend

    attrs = {"name": name, "device_type": device_type, "priority": priority, "version": "9.9"}
    if indexed is not None:
        attrs["indexed"] = indexed

    def is_available(self):
        return available

    def device_count(self):
        return count

    def native_kernels(self):
        table = {k: v for k, v in NumpyBackend.native_kernels(self).items() if k not in drop}
        if counting:
            self.calls = {}

            def wrap(kname, fn):
                def kernel(*args, **kwargs):
                    self.calls[kname] = self.calls.get(kname, 0) + 1
                    return fn(*args, **kwargs)
                return kernel
            table = {k: wrap(k, v) for k, v in table.items()}
        return table

    attrs.update(is_available=is_available, device_count=device_count, native_kernels=native_kernels)
    return type(f"Test_{name}_Backend", (NumpyBackend,), attrs)


@pytest.fixture
def add_backend():
    """add_backend(name, device_type="cpu", ...) registers a backend through a runtime plugin
    (a plugin object with a `tensorplug_register_backends` hookimpl) and returns the backend.
    The autouse fixture above unregisters it after the test."""
    from tensorplug.dispatch import hookimpl

    def add(name, device_type="cpu", plugin_name=None, **kwargs):
        backend = make_backend_class(name, device_type, **kwargs)()

        class Plugin:
            @hookimpl
            def tensorplug_register_backends(self, registry):
                registry.add(backend)

        registry.register_plugin(Plugin(), name=plugin_name or f"test-plugin-{name}")
        return backend
    return add


@pytest.fixture
def backend_class():
    """The factory `make_backend_class` (for tests that register backends themselves)."""
    return make_backend_class
