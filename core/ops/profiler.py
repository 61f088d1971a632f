"""torch.ops.profiler: record_function's functional form, as FX-traced code calls it.

`_record_function_enter(name)` opens a range and returns a handle (a Tensor, as PyTorch's legacy
form does); `_record_function_exit(handle)` closes it. Given an FX Proxy, `_record_function_exit`
records itself as a call_function node (both are marked side-effecting so dead-code elimination
keeps them). Not ops themselves: no PUBLIC list, so the profiler never wraps them.
"""
from __future__ import annotations

import sys

from .creation import empty


def _record_function_enter(name: str, args: str | None = None):
    """Open the range `name`; the returned handle closes it through `_record_function_exit`."""
    from ..profiler import record_function
    rf = record_function(name, args).__enter__()
    handle = empty(0)
    handle._record_function = rf
    return handle


def _record_function_enter_new(name: str, args: str | None = None):
    """Open the range `name`; the handle is the record_function itself."""
    from ..profiler import record_function
    return record_function(name, args).__enter__()


def _record_function_exit(handle) -> None:
    """Close the range `handle` (from either enter function) opened."""
    proxy = _proxy_class()
    if proxy is not None and isinstance(handle, proxy):
        return handle.tracer.create_proxy("call_function", _record_function_exit, (handle,), {})
    rf = getattr(handle, "_record_function", handle)
    rf.__exit__(None, None, None)


def _proxy_class():
    mod = sys.modules.get("tensorplug.fx.proxy")      # only a program that imported fx has Proxies
    return None if mod is None else mod.Proxy


_record_function_exit._RecordFunction = _record_function_exit
for _f in (_record_function_enter, _record_function_enter_new, _record_function_exit):
    _f._fx_side_effect = True
del _f
