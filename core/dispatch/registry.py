"""The backend registry: discovery through pluggy, per-device selection, configuration.

Plugins load lazily, the first time a backend is needed. The hot path calls
`backend_for(device_type)`, a dict lookup; pluggy is never on it.

A plugin can never break tensorplug: whatever its code raises (any exception, SystemExit or another
BaseException; only KeyboardInterrupt passes, so Ctrl-C still interrupts) while importing,
registering, answering `is_available()`, building its kernel table, choosing in a select hook, or
when its `name`, `priority`, `device_type` or `dtypes` are read and checked, marks that plugin
broken with the reason, drops its backends, and leaves every other backend working. Strict mode
(TENSORPLUG_STRICT_PLUGINS=1, for plugin authors) re-raises instead.
"""
from __future__ import annotations

import importlib.metadata
import math
import numbers
import traceback
from dataclasses import dataclass, field

import pluggy

from . import backend_api, config
from .backend_api import API_VERSION, Backend, CommunicationBackend
from .hookspecs import PROJECT, Specs

ENTRY_POINT_GROUP = "tensorplug"
STRICT_VAR = "TENSORPLUG_STRICT_PLUGINS"
# Used when tensorplug runs from a source tree without installed metadata.
BUILTIN_PLUGINS = {
    "numpy": "tensorplug.backends.numpy_backend",
    "cuda": "tensorplug.backends.cuda_backend",
    "mpi": "tensorplug.backends.mpi_dist",
}
# backend and plugin names only tensorplug's own plugins may take
RESERVED_NAMES = frozenset(BUILTIN_PLUGINS)


@dataclass
class PluginRecord:
    """One plugin as loaded: where it came from and, if it failed, why."""
    name: str
    origin: str                      # distribution name and version, or "runtime"
    error: str | None = None
    backends: list = field(default_factory=list)
    builtin: bool = False            # one of tensorplug's own plugins


class Registry:
    def __init__(self):
        self.pm = pluggy.PluginManager(PROJECT)
        self.pm.add_hookspecs(Specs)
        self.compute: dict[str, Backend] = {}
        self.communication: dict[str, CommunicationBackend] = {}
        self.plugins: list[PluginRecord] = []
        self.origin: dict[str, str] = {}
        self._priority: dict[str, float] = {}    # checked at registration; sorting never reads plugin code
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
        self._check(backend, compute=True)
        if backend.name in self.compute:
            raise ValueError(f"a compute backend named {backend.name!r} is already registered "
                             f"(from {self.origin.get(backend.name)})")
        self.compute[backend.name] = backend
        self._note(backend)
        self._selected.pop(backend.device_type, None)

    def add_communication(self, backend: CommunicationBackend) -> None:
        """Register a communication backend."""
        self._check(backend, compute=False)
        if backend.name in self.communication:
            raise ValueError(f"a communication backend named {backend.name!r} is already registered")
        self.communication[backend.name] = backend
        self._note(backend)

    def _check(self, backend, compute):
        """Validate the SPI attributes once, so later reads of them cannot fail."""
        kind = type(backend).__name__
        for attr in ("name", "api_version", "is_available"):
            if not hasattr(backend, attr):
                raise TypeError(f"backend {kind} lacks the required attribute {attr!r}")
        name = backend.name
        if not isinstance(name, str) or not name:
            raise TypeError(f"backend {kind}: name must be a non-empty string, got {name!r}")
        version = backend.api_version
        if not isinstance(version, int) or isinstance(version, bool):
            raise TypeError(f"backend {name!r}: api_version must be an int, got {version!r}")
        if version > API_VERSION:
            raise ValueError(f"backend {name!r} needs SPI version {version}; "
                             f"this tensorplug provides version {API_VERSION}")
        if not callable(backend.is_available):
            raise TypeError(f"backend {name!r}: is_available must be a method")
        rec = self._current
        if name in RESERVED_NAMES and not (rec is not None and rec.builtin):
            who = f"plugin {rec.name!r} ({rec.origin})" if rec is not None else "a runtime registration"
            raise ValueError(f"the backend name {name!r} belongs to tensorplug's built-in backend; "
                             f"{who} may not register a backend of that name")
        priority = getattr(backend, "priority", 0)
        if (not isinstance(priority, numbers.Real) or isinstance(priority, bool)
                or math.isnan(priority)):
            raise TypeError(f"backend {name!r}: priority must be a number, got {priority!r}")
        if compute:
            device = backend.device_type
            if not isinstance(device, str) or not device or device == "?":
                raise TypeError(f"backend {name!r}: device_type must be a device type name, got {device!r}")
            dtypes = backend.dtypes
            if isinstance(dtypes, str) or not all(isinstance(d, str) for d in dtypes):
                raise TypeError(f"backend {name!r}: dtypes must be a set of dtype names, got {dtypes!r}")
        self._priority[name] = priority

    def _note(self, backend):
        rec = self._current
        self.origin[backend.name] = rec.origin if rec else "runtime"
        if rec:
            rec.backends.append(backend.name)

    # -- discovery -------------------------------------------------------------------
    def ensure_loaded(self) -> None:
        if self._loaded:
            return
        _strict()                       # an invalid TENSORPLUG_STRICT_PLUGINS: a ConfigError now
        self._loaded = True
        eps = []
        try:
            eps = list(importlib.metadata.entry_points(group=ENTRY_POINT_GROUP))
        except Exception as e:  # noqa: BLE001 - unreadable metadata of some installed distribution
            self.plugins.append(PluginRecord("(entry points)", "importlib.metadata", _describe(e)))
        # the built-in plugins first: their names are theirs, whatever a third party declares
        builtin = [ep for ep in eps if _is_builtin(ep)]
        for ep in builtin:
            self._load(ep.name, _origin(ep), ep.load, builtin=True)
        found = {ep.name for ep in builtin}
        for name, module in BUILTIN_PLUGINS.items():
            if name not in found:       # running from a source tree that was not pip-installed
                self._load(name, "tensorplug (source tree)", lambda m=module: importlib.import_module(m),
                           builtin=True)
        for ep in eps:
            if not _is_builtin(ep):
                self._load(ep.name, _origin(ep), ep.load)

    def _load(self, name, origin, loader, builtin=False):
        rec = PluginRecord(name, origin, builtin=builtin)
        self.plugins.append(rec)
        try:
            taken = [r for r in self.plugins if r.name == name and r is not rec and not r.error]
            if taken:
                raise ValueError(f"the plugin name {name!r} is taken by {taken[0].origin}")
            plugin = loader()
            self.pm.register(plugin, name=name)
        except KeyboardInterrupt:
            raise
        except BaseException as e:      # SystemExit too: a plugin may not end the user's program
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
        except KeyboardInterrupt:
            self._drop_backends(rec)
            raise
        except BaseException as e:
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
            self._priority.pop(b, None)
        rec.backends.clear()

    def _fail(self, rec: PluginRecord, what: str, e: BaseException) -> str:
        """Mark a plugin broken after it was loaded (its code raised in `what`): record the reason,
        drop its backends and unregister its hooks. Returns the reason; strict mode re-raises, and so
        does a built-in plugin (a bug in tensorplug itself, whose traceback is wanted)."""
        if rec.builtin:
            raise e
        reason = f"{what} raised {_describe(e)}"
        rec.error = rec.error or reason
        self._drop_backends(rec)
        if self.pm.get_plugin(rec.name) is not None:
            self.pm.unregister(name=rec.name)
        if _strict():
            raise e
        return reason

    def _record_of(self, backend) -> tuple[str, PluginRecord]:
        """The name `backend` is registered under and the record of the plugin that added it."""
        name = next((n for table in (self.compute, self.communication)
                     for n, b in table.items() if b is backend), "?")
        rec = next((r for r in self.plugins if name in r.backends), None)
        if rec is None:                 # added outside any plugin's hook
            rec = PluginRecord(name, self.origin.get(name, "runtime"), backends=[name])
            self.plugins.append(rec)
        return name, rec

    # -- availability --------------------------------------------------------------------
    def available(self, backend, kernels: bool = True) -> tuple[bool, str]:
        """(usable, reason): the backend's own `is_available()` answer, guarded (a plugin whose
        answer raises is marked broken), and for compute backends (when `kernels`) whether its
        kernel table has every required kernel."""
        try:
            ok, reason = backend.is_available()
            ok = bool(ok)
        except KeyboardInterrupt:
            raise
        except BaseException as e:
            name, rec = self._record_of(backend)
            return False, self._fail(rec, f"is_available() of backend {name!r}", e)
        if not ok:
            return False, str(reason)
        if kernels and getattr(backend, "kind", "compute") == "compute":
            try:
                table = backend.kernels
                missing = [n for n in backend_api.REQUIRED if n not in table]
            except KeyboardInterrupt:
                raise
            except BaseException as e:
                name, rec = self._record_of(backend)
                return False, self._fail(rec, f"building the kernel table of backend {name!r}", e)
            if missing:
                return False, f"lacks required kernels: {', '.join(missing)}"
        return True, ""

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
        ok, reason = self.available(backend)
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

    def priority(self, backend) -> float:
        """The priority `backend` registered with (checked to be a number then)."""
        return self._priority.get(getattr(backend, "name", None), 0)

    def candidates(self, device_type: str) -> list:
        self.ensure_loaded()
        found = [(n, b) for n, b in self.compute.items() if b.device_type == device_type]
        return [b for n, b in sorted(found, key=lambda nb: -self._priority.get(nb[0], 0))]

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
            ok, reason = self.available(backend)
            if not ok:
                raise RuntimeError(f"{source} asks for backend {name!r}, which is not available: {reason}")
            return self._activate(backend, source)
        cands = self.candidates(device_type)
        available, reasons = [], []
        for b in cands:
            ok, reason = self.available(b)
            (available.append(b) if ok else reasons.append(f"{b.name}: {reason}"))
        if not available:
            known = sorted({b.device_type for b in self.compute.values()})
            detail = "; ".join(reasons) if reasons else f"known device types: {', '.join(known)}"
            raise RuntimeError(f"no available backend for device type {device_type!r} ({detail})")
        chosen = self._ask_select_hooks(device_type, available)
        if chosen is not None:
            match = [b for b in available if b.name == chosen]
            if not match:
                raise RuntimeError(f"a tensorplug_select_backend hook chose {chosen!r}, which is not an "
                                   f"available backend for {device_type!r}")
            return self._activate(match[0], "a tensorplug_select_backend hook")
        return self._activate(available[0], "priority" if len(cands) > 1 else "only backend")

    def _ask_select_hooks(self, device_type, available):
        """The first non-None answer of the select hooks, in pluggy's order; a hook that raises
        marks its plugin broken and is passed over."""
        args = {"device_type": device_type, "candidates": available}
        for impl in reversed(self.pm.hook.tensorplug_select_backend.get_hookimpls()):
            if impl.hookwrapper or getattr(impl, "wrapper", False):
                continue
            try:
                chosen = impl.function(*[args[a] for a in impl.argnames])
            except KeyboardInterrupt:
                raise
            except BaseException as e:
                rec = next((r for r in self.plugins if r.name == impl.plugin_name), None)
                if rec is None:
                    rec = PluginRecord(impl.plugin_name, "runtime")
                    self.plugins.append(rec)
                self._fail(rec, "its tensorplug_select_backend hook", e)
                available[:] = [b for b in available if b.name in self.compute]
                continue
            if chosen is not None:
                return chosen
        return None

    def _activate(self, backend, why):
        self._why[backend.device_type] = why
        from .kernel_check import install
        install(backend)                    # non-built-in backends: kernel results checked
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


def _is_builtin(ep) -> bool:
    """An entry point of tensorplug's own distribution naming one of its plugins."""
    try:
        return BUILTIN_PLUGINS.get(ep.name) == ep.value and ep.dist is not None and ep.dist.name == "tensorplug"
    except Exception:  # noqa: BLE001 - unreadable metadata
        return False


def _origin(ep) -> str:
    try:
        dist = ep.dist
        return f"{dist.name} {dist.version}" if dist is not None else "unknown"
    except Exception:  # noqa: BLE001 - unreadable metadata
        return "unknown"


def _describe(e: BaseException) -> str:
    try:
        text = str(e)
    except Exception:  # noqa: BLE001 - an exception whose __str__ raises
        text = "(message unavailable)"
    # the innermost frame outside this file: the plugin's line, not the registry's check
    last = [f for f in traceback.extract_tb(e.__traceback__) if f.filename != __file__][-1:]
    where = f" (at {last[0].filename}:{last[0].lineno})" if last else ""
    return f"{type(e).__name__}: {text}{where}"


def _strict() -> bool:
    return config.env_bool(STRICT_VAR)


registry = Registry()
backend_for = registry.backend_for
