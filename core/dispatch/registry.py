"""The backend registry: discovery through pluggy, per-device selection, configuration.

Plugins load lazily, the first time a backend is needed. The hot path calls
`backend_for(device_type)`, a dict lookup; pluggy is never on it.
"""
from __future__ import annotations

import importlib.metadata
import os
import traceback
from dataclasses import dataclass, field

import pluggy

from . import config
from .backend_api import API_VERSION, Backend, CommunicationBackend
from .hookspecs import PROJECT, Specs

ENTRY_POINT_GROUP = "tensorplug"
# Used when tensorplug runs from a source tree without installed metadata.
BUILTIN_PLUGINS = {
    "numpy": "tensorplug.backends.numpy_backend",
    "cuda": "tensorplug.backends.cuda_backend",
    "mpi": "tensorplug.backends.mpi_dist",
}


@dataclass
class PluginRecord:
    """One plugin as loaded: where it came from and, if it failed, why."""
    name: str
    origin: str                      # distribution name and version, or "runtime"
    error: str | None = None
    backends: list = field(default_factory=list)


class Registry:
    def __init__(self):
        self.pm = pluggy.PluginManager(PROJECT)
        self.pm.add_hookspecs(Specs)
        self.compute: dict[str, Backend] = {}
        self.communication: dict[str, CommunicationBackend] = {}
        self.plugins: list[PluginRecord] = []
        self.origin: dict[str, str] = {}
        self._api_choices: dict[str, str] = {}
        self._selected: dict[str, Backend] = {}
        self._why: dict[str, str] = {}          # device type -> what chose its backend
        self._loaded = False
        self._current: PluginRecord | None = None

    # -- registration (called by plugins) ------------------------------------------
    def add(self, backend: Backend) -> None:
        """Register a compute backend."""
        if getattr(backend, "kind", None) == "communication":
            return self.add_communication(backend)
        self._check(backend)
        if backend.name in self.compute:
            raise ValueError(f"a compute backend named {backend.name!r} is already registered "
                             f"(from {self.origin.get(backend.name)})")
        self.compute[backend.name] = backend
        self._note(backend)
        self._selected.pop(backend.device_type, None)

    def add_communication(self, backend: CommunicationBackend) -> None:
        """Register a communication backend."""
        self._check(backend)
        if backend.name in self.communication:
            raise ValueError(f"a communication backend named {backend.name!r} is already registered")
        self.communication[backend.name] = backend
        self._note(backend)

    def _check(self, backend):
        for attr in ("name", "api_version", "is_available"):
            if not hasattr(backend, attr):
                raise TypeError(f"backend {backend!r} lacks the required attribute {attr!r}")
        if backend.api_version > API_VERSION:
            raise ValueError(f"backend {backend.name!r} needs SPI version {backend.api_version}; "
                             f"this tensorplug provides version {API_VERSION}")

    def _note(self, backend):
        rec = self._current
        self.origin[backend.name] = rec.origin if rec else "runtime"
        if rec:
            rec.backends.append(backend.name)

    # -- discovery -------------------------------------------------------------------
    def ensure_loaded(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        eps = list(importlib.metadata.entry_points(group=ENTRY_POINT_GROUP))
        names = {ep.name for ep in eps}
        for ep in eps:
            dist = ep.dist
            origin = f"{dist.name} {dist.version}" if dist is not None else "unknown"
            self._load(ep.name, origin, ep.load)
        for name, module in BUILTIN_PLUGINS.items():
            if name not in names:       # running from a source tree that was not pip-installed
                self._load(name, "tensorplug (source tree)", lambda m=module: importlib.import_module(m))

    def _load(self, name, origin, loader):
        rec = PluginRecord(name, origin)
        self.plugins.append(rec)
        try:
            plugin = loader()
            self.pm.register(plugin, name=name)
        except Exception as e:
            rec.error = _describe(e)
            if _strict():
                raise
            return
        self._call_register(plugin, rec)
        if rec.error:                   # skipped entirely: none of its hooks run later
            self.pm.unregister(name=name)

    def register_plugin(self, plugin, name: str | None = None) -> PluginRecord:
        """Register a plugin object or module at run time (as an entry point would).

        Unlike discovery at start-up, an explicit registration that fails raises (and leaves
        nothing registered): the caller asked for it and can act on the error."""
        self.ensure_loaded()
        name = name or getattr(plugin, "__name__", None) or repr(plugin)
        if self.pm.get_plugin(name) is not None or any(r.name == name for r in self.plugins):
            raise ValueError(f"a plugin named {name!r} is already registered")
        self.pm.register(plugin, name=name)
        rec = PluginRecord(name, "runtime")
        self.plugins.append(rec)
        try:
            self._call_register(plugin, rec)
        except BaseException:           # strict mode re-raised
            self.unregister_plugin(name)
            raise
        if rec.error:
            self.unregister_plugin(name)
            raise RuntimeError(f"plugin {name!r} failed to register its backends: {rec.error}")
        return rec

    def unregister_plugin(self, name: str) -> None:
        """Remove a runtime plugin and the backends it registered (mainly for tests)."""
        for rec in [r for r in self.plugins if r.name == name]:
            self._drop_backends(rec)
            self.plugins.remove(rec)
        if self.pm.get_plugin(name) is not None:
            self.pm.unregister(name=name)

    def _call_register(self, plugin, rec):
        # Call this plugin's hook alone, so one failing plugin cannot break the others.
        impls = [i for i in self.pm.hook.tensorplug_register_backends.get_hookimpls() if i.plugin is plugin]
        self._current = rec
        try:
            for impl in impls:
                impl.function(registry=self)
        except Exception as e:
            rec.error = _describe(e)
            self._drop_backends(rec)        # all or nothing: no half-registered plugin
            if _strict():
                raise
        finally:
            self._current = None

    def _drop_backends(self, rec):
        for b in rec.backends:
            backend = self.compute.pop(b, None) or self.communication.pop(b, None)
            if backend is not None:
                self._selected.pop(getattr(backend, "device_type", None), None)
                self._why.pop(getattr(backend, "device_type", None), None)
            self.origin.pop(b, None)
        rec.backends.clear()

    # -- selection ---------------------------------------------------------------------
    def use(self, name: str, device_type: str | None = None) -> None:
        """Select the compute backend `name` for its device type (overrides environment and file)."""
        self.ensure_loaded()
        backend = self.compute.get(name)
        if backend is None:
            raise ValueError(f"unknown backend {name!r}; registered compute backends: "
                             f"{', '.join(sorted(self.compute)) or 'none'}")
        dev = device_type or backend.device_type
        if backend.device_type != dev:
            raise ValueError(f"backend {name!r} serves device type {backend.device_type!r}, not {dev!r}")
        ok, reason = backend.is_available()
        if not ok:
            raise RuntimeError(f"backend {name!r} is not available: {reason}")
        self._api_choices[dev] = name
        self._selected.pop(dev, None)

    def reset_selection(self, device_type: str | None = None) -> None:
        """Forget `use()` choices (for one device type or all) and re-select on next use, reading
        the environment and config file again. Existing tensors keep the kernels they were made with."""
        if device_type is None:
            self._api_choices.clear()
            self._selected.clear()
            self._why.clear()
        else:
            self._api_choices.pop(device_type, None)
            self._selected.pop(device_type, None)
            self._why.pop(device_type, None)

    def settings(self) -> dict:
        return config.backend_settings(self._api_choices)

    def candidates(self, device_type: str) -> list:
        self.ensure_loaded()
        found = [b for b in self.compute.values() if b.device_type == device_type]
        return sorted(found, key=lambda b: -b.priority)

    def backend_for(self, device_type: str) -> Backend:
        """The selected backend for a device type. Selection runs once per device type (reading the
        configuration then) and is cached: this is a dict lookup on the hot path."""
        b = self._selected.get(device_type)
        if b is None:
            b = self._selected[device_type] = self._select(device_type)
        return b

    def _select(self, device_type: str) -> Backend:
        self.ensure_loaded()
        setting = self.settings().get(device_type)
        if setting is not None:
            name, source = setting
            backend = self.compute.get(name)
            if backend is None:
                raise RuntimeError(f"{source} asks for backend {name!r} for device {device_type!r}, "
                                   f"but no compute backend has that name; registered: "
                                   f"{', '.join(sorted(self.compute)) or 'none'}")
            if backend.device_type != device_type:
                raise RuntimeError(f"{source} asks for backend {name!r} for device {device_type!r}, "
                                   f"but it serves device {backend.device_type!r}")
            ok, reason = backend.is_available()
            if not ok:
                raise RuntimeError(f"{source} asks for backend {name!r}, which is not available: {reason}")
            return self._activate(backend, source)
        cands = self.candidates(device_type)
        available, reasons = [], []
        for b in cands:
            ok, reason = b.is_available()
            (available.append(b) if ok else reasons.append(f"{b.name}: {reason}"))
        if not available:
            known = sorted({b.device_type for b in self.compute.values()})
            detail = "; ".join(reasons) if reasons else f"known device types: {', '.join(known)}"
            raise RuntimeError(f"no available backend for device type {device_type!r} ({detail})")
        chosen = self.pm.hook.tensorplug_select_backend(device_type=device_type, candidates=available)
        if chosen is not None:
            match = [b for b in available if b.name == chosen]
            if not match:
                raise RuntimeError(f"a tensorplug_select_backend hook chose {chosen!r}, which is not an "
                                   f"available backend for {device_type!r}")
            return self._activate(match[0], "a tensorplug_select_backend hook")
        return self._activate(available[0], "priority" if len(cands) > 1 else "only backend")

    def _activate(self, backend, why):
        missing = backend.missing_required()
        if missing:
            raise RuntimeError(f"backend {backend.name!r} lacks required kernels: {', '.join(missing)}")
        self._why[backend.device_type] = why
        return backend

    def selection_reason(self, device_type: str) -> str | None:
        """What chose the current backend of `device_type` ("priority", "environment ...", ...)."""
        return self._why.get(device_type) if self.selected_name(device_type) else None

    def selected_name(self, device_type: str) -> str | None:
        try:
            return self.backend_for(device_type).name
        except RuntimeError:
            return None

    def get(self, name: str):
        self.ensure_loaded()
        b = self.compute.get(name) or self.communication.get(name)
        if b is None:
            raise KeyError(f"unknown backend {name!r}; registered: "
                           f"{', '.join(sorted([*self.compute, *self.communication])) or 'none'}")
        return b


def _describe(e: BaseException) -> str:
    last = traceback.extract_tb(e.__traceback__)[-1:] if e.__traceback__ else []
    where = f" (at {last[0].filename}:{last[0].lineno})" if last else ""
    return f"{type(e).__name__}: {e}{where}"


def _strict() -> bool:
    return os.environ.get("TENSORPLUG_STRICT_PLUGINS", "") not in ("", "0")


registry = Registry()
backend_for = registry.backend_for
