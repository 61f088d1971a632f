"""Registration: built-in plugins, plugins registered at run time, and what a failing plugin leaves."""
import types

import pytest

import tensorplug
import tensorplug.backends
from tensorplug.dispatch import API_VERSION, REQUIRED, Backend, hookimpl, registry


def test_builtin_backends_are_registered():
    """numpy (cpu), cuda (cuda) and mpi (communication) come from the built-in plugins."""
    registry.ensure_loaded()
    assert registry.compute["numpy"].device_type == "cpu"
    assert registry.compute["cuda"].device_type == "cuda"
    assert registry.communication["mpi"].kind == "communication"
    builtin = {p.name: p for p in registry.plugins if p.name in ("numpy", "cuda", "mpi")}
    assert set(builtin) == {"numpy", "cuda", "mpi"}
    assert all(p.error is None for p in builtin.values()), [p.error for p in builtin.values()]
    assert all(p.origin.startswith("tensorplug") for p in builtin.values())


def test_numpy_backend_provides_every_required_kernel_natively():
    """The reference backend implements the whole required SPI itself."""
    status = registry.get("numpy").kernel_status()
    assert [n for n in REQUIRED if status[n] != "native"] == []


def test_runtime_plugin_object_is_found(add_backend):
    """A plugin object registered at run time contributes its backend, with origin "runtime"."""
    b = add_backend("numpy_alt")
    assert registry.get("numpy_alt") is b
    assert b in tensorplug.backends.list_backends()
    assert registry.origin["numpy_alt"] == "runtime"
    rec = [p for p in registry.plugins if p.name == "test-plugin-numpy_alt"][0]
    assert rec.backends == ["numpy_alt"] and rec.error is None


def test_runtime_plugin_module_through_public_api(backend_class):
    """tensorplug.backends.register_plugin accepts a module with hookimpls, unregister_plugin removes it."""
    mod = types.ModuleType("my_backend_plugin")
    backend = backend_class("numpy_mod")()

    @hookimpl
    def tensorplug_register_backends(registry):
        registry.add(backend)
    mod.tensorplug_register_backends = tensorplug_register_backends

    rec = tensorplug.backends.register_plugin(mod)
    assert rec.name == "my_backend_plugin"
    assert tensorplug.backends.get("numpy_mod") is backend
    tensorplug.backends.unregister_plugin("my_backend_plugin")
    with pytest.raises(KeyError, match="numpy_mod"):
        tensorplug.backends.get("numpy_mod")
    assert registry.pm.get_plugin("my_backend_plugin") is None


def test_unknown_backend_lookup_names_the_known_ones():
    """get() of an unknown name raises KeyError listing the registered backends."""
    with pytest.raises(KeyError, match=r"unknown backend 'nope'.*numpy"):
        tensorplug.backends.get("nope")


def test_duplicate_backend_name_is_rejected_and_nothing_is_left(add_backend):
    """A second backend of a taken name fails the registration; the first stays as it was."""
    first = add_backend("numpy_dup")
    with pytest.raises(RuntimeError, match="'numpy_dup' is already registered"):
        add_backend("numpy_dup", plugin_name="second")
    assert registry.get("numpy_dup") is first
    assert not [p for p in registry.plugins if p.name == "second"]


def test_builtin_backend_name_is_reserved(add_backend):
    """A runtime plugin may not register a backend called "numpy"; the built-in one stays."""
    numpy_backend = registry.get("numpy")
    with pytest.raises(RuntimeError, match="the backend name 'numpy' belongs to tensorplug's built-in backend; "
                                           "plugin 'test-plugin-numpy' \\(runtime\\) may not register"):
        add_backend("numpy")
    assert registry.get("numpy") is numpy_backend
    assert not [p for p in registry.plugins if p.name == "test-plugin-numpy"]


def test_duplicate_plugin_name_is_rejected(add_backend):
    """Two plugins may not share a name."""
    add_backend("numpy_a", plugin_name="same")
    with pytest.raises(ValueError, match="already registered"):
        add_backend("numpy_b", plugin_name="same")
    assert "numpy_b" not in registry.compute


def test_failing_registration_is_all_or_nothing(backend_class):
    """A plugin whose hook raises after adding one backend leaves no backend behind."""
    first = backend_class("numpy_half")()

    class Plugin:
        @hookimpl
        def tensorplug_register_backends(self, registry):
            registry.add(first)
            raise OSError("driver missing")

    with pytest.raises(RuntimeError, match="driver missing"):
        registry.register_plugin(Plugin(), name="half-plugin")
    assert "numpy_half" not in registry.compute
    assert registry.pm.get_plugin("half-plugin") is None
    assert not [p for p in registry.plugins if p.name == "half-plugin"]


def test_load_failure_is_recorded_not_raised():
    """Discovery (`_load`) records a plugin that fails to import, and skips it."""
    def loader():
        raise ImportError("no module named 'exotic_driver'")
    before = len(registry.plugins)
    registry._load("exotic", "exotic-dist 1.0", loader)
    try:
        rec = registry.plugins[-1]
        assert len(registry.plugins) == before + 1
        assert rec.name == "exotic" and rec.origin == "exotic-dist 1.0"
        assert rec.error.startswith("ImportError: no module named 'exotic_driver'")
        assert registry.pm.get_plugin("exotic") is None
        assert tensorplug.zeros(2).tolist() == [0.0, 0.0]
    finally:
        registry.plugins.remove(rec)


def test_load_failure_in_strict_mode_raises(monkeypatch):
    """TENSORPLUG_STRICT_PLUGINS=1 re-raises a plugin's error (for plugin authors)."""
    monkeypatch.setenv("TENSORPLUG_STRICT_PLUGINS", "1")

    def loader():
        raise ImportError("strict please")
    try:
        with pytest.raises(ImportError, match="strict please"):
            registry._load("strictplug", "x 1", loader)
    finally:
        registry.plugins[:] = [p for p in registry.plugins if p.name != "strictplug"]


def test_register_hook_failure_during_discovery_is_recorded():
    """A plugin that imports but fails in its register hook is recorded and unregistered from pluggy."""
    class Plugin:
        @hookimpl
        def tensorplug_register_backends(self, registry):
            raise RuntimeError("no licence")
    registry._load("unlicensed", "unlicensed 0.1", Plugin)
    try:
        rec = [p for p in registry.plugins if p.name == "unlicensed"][0]
        assert "RuntimeError: no licence" in rec.error
        assert registry.pm.get_plugin("unlicensed") is None
    finally:
        registry.plugins[:] = [p for p in registry.plugins if p.name != "unlicensed"]


def test_backend_needing_a_newer_api_is_rejected():
    """A backend built for a newer SPI version than this tensorplug's cannot register."""
    class Future(Backend):
        name, device_type, api_version = "future", "cpu", API_VERSION + 1

        def native_kernels(self):
            return {}

    class Plugin:
        @hookimpl
        def tensorplug_register_backends(self, registry):
            registry.add(Future())
    with pytest.raises(RuntimeError, match="SPI version"):
        registry.register_plugin(Plugin(), name="future-plugin")
    assert "future" not in registry.compute


def test_object_without_backend_attributes_is_rejected():
    """registry.add checks the SPI attributes."""
    class Plugin:
        @hookimpl
        def tensorplug_register_backends(self, registry):
            registry.add(object())
    with pytest.raises(RuntimeError, match="lacks the required attribute 'name'"):
        registry.register_plugin(Plugin(), name="bad-object")


def test_communication_backend_registration():
    """registry.add_communication (or add with kind "communication") registers a collective backend."""
    from tensorplug.dispatch import CommunicationBackend

    class Loopback(CommunicationBackend):
        name = "loopback"

    class Plugin:
        @hookimpl
        def tensorplug_register_backends(self, registry):
            registry.add(Loopback())
    registry.register_plugin(Plugin(), name="loopback-plugin")
    assert isinstance(registry.get("loopback"), Loopback)
    assert "loopback" not in registry.compute
    registry.unregister_plugin("loopback-plugin")
    assert "loopback" not in registry.communication
