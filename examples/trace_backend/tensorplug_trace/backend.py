"""TraceBackend: device type "trace", exactly the required primitives (40 in API version 2), each
delegating to another backend's kernel (NumPy's by default) and recorded by the trace. Every optional kernel runs through
tensorplug's decomposition into those primitives, and is recorded too (kind "decomposed")."""
from __future__ import annotations

import os

from tensorplug.dispatch import Backend
from tensorplug.dispatch.backend_api import REQUIRED

from . import __version__
from .trace import Trace

TRACE = Trace()


class TraceBackend(Backend):
    name = "trace"
    device_type = "trace"          # a new device type: tensorplug.zeros(3, device="trace")
    indexed = False                # a single device: "trace", never "trace:0"
    priority = 0
    version = __version__

    def __init__(self, inner: str | None = None, trace: Trace | None = None):
        # the backend whose kernels do the work (environment TENSORPLUG_TRACE_INNER, default numpy)
        self.inner = inner or os.environ.get("TENSORPLUG_TRACE_INNER", "numpy")
        self.trace = trace or TRACE

    def _inner(self):
        from tensorplug.dispatch import registry
        return registry.compute.get(self.inner)

    def is_available(self):
        inner = self._inner()
        if inner is None:
            return False, f"the backend it wraps, {self.inner!r}, is not registered"
        ok, reason = inner.is_available()
        return (True, "") if ok else (False, f"the backend it wraps, {self.inner!r}, is unavailable: {reason}")

    @property
    def dtypes(self):
        inner = self._inner()
        return inner.dtypes if inner is not None else Backend.dtypes

    def native_kernels(self):
        inner = self._inner().kernels
        return {name: self.trace.wrap(name, inner[name]) for name in REQUIRED}

    @property
    def kernels(self):
        if self._kernels is None:
            table = Backend.kernels.fget(self)      # natives + decompositions bound to this table
            for name in list(table):
                if not name.startswith("__") and name not in self._native:
                    table[name] = self.trace.wrap(name, table[name], kind="decomposed")
        return self._kernels
