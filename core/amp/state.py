"""The per-thread autocast state and PyTorch's functions on it (`torch.is_autocast_enabled`,
`torch.set_autocast_dtype`, `torch.autocast_increment_nesting`, ...).

Like PyTorch's, the state is per thread: a new thread starts with autocast off. The listed ops read
one attribute, `state.on` (true while autocast is enabled for some device type), and only then hand
their arguments to `state.run` (core/amp/casting.py) — the whole cost of autocast when it is off.
"""
from __future__ import annotations

import threading
import warnings

from .. import dtypes as _dt

__all__ = ["is_autocast_enabled", "set_autocast_enabled", "get_autocast_dtype", "set_autocast_dtype",
           "is_autocast_cache_enabled", "set_autocast_cache_enabled", "clear_autocast_cache",
           "autocast_increment_nesting", "autocast_decrement_nesting", "is_autocast_cpu_enabled",
           "set_autocast_cpu_enabled", "get_autocast_cpu_dtype", "set_autocast_cpu_dtype",
           "get_autocast_gpu_dtype", "set_autocast_gpu_dtype"]

_LEGACY = "cuda"       # the device type of the argument-less legacy forms (PyTorch's choice)


class _State(threading.local):
    on = False                         # the flag the ops read; the class default is each new thread's

    def __init__(self):
        self.enabled = {}              # device type -> bool
        self.dtypes = {}               # device type -> dtype set by set_autocast_dtype
        self.cache_enabled = True
        self.nesting = 0
        self.cache = {}                # id(fp32 leaf) -> (leaf, version, cast copy), see casting.py

    def run(self, name, fn, args, kwargs=None):
        """Run the listed op `name` under the autocast policy (loads casting.py on first use)."""
        from . import casting
        return casting.run(name, fn, args, kwargs)

    def cast(self, name, args):
        """`args` (a tuple) cast as the policy of `name` says, for an op whose parts then run under
        autocast themselves (the recurrent layers: their weights are cast by the products)."""
        from . import casting
        return casting.cast(name, args)

    def listed(self, name, args):
        """Whether `name` has a policy for the device type of `args` (for an op that, unlisted, runs
        as the composite it is, its parts autocast one by one)."""
        from . import casting
        return casting.listed(name, args)


state = _State()


def _check_type(fname, value, argname, pos, kind, kind_name):
    if not isinstance(value, kind):
        raise TypeError(f"{fname}(): argument '{argname}' (position {pos}) must be {kind_name}, not "
                        f"{type(value).__name__}")


def _refresh():
    state.on = any(state.enabled.values())


def is_autocast_enabled(device_type=None) -> bool:
    """Whether autocast is enabled for `device_type` in this thread (no argument: "cuda")."""
    if device_type is None:
        device_type = _LEGACY
    _check_type("is_autocast_enabled", device_type, "device_type", 1, str, "str")
    return bool(state.enabled.get(device_type, False))


def set_autocast_enabled(*args) -> None:
    """`set_autocast_enabled(device_type, enabled)` (or the legacy `set_autocast_enabled(enabled)`,
    for "cuda")."""
    if len(args) == 1:
        device_type, enabled = _LEGACY, args[0]
        _check_type("set_autocast_enabled", enabled, "enabled", 1, bool, "bool")
    elif len(args) == 2:
        device_type, enabled = args
        _check_type("set_autocast_enabled", device_type, "device_type", 1, str, "str")
        _check_type("set_autocast_enabled", enabled, "enabled", 2, bool, "bool")
    else:
        raise TypeError(f"set_autocast_enabled() takes 1 or 2 arguments ({len(args)} given)")
    state.enabled[device_type] = enabled
    _refresh()


def get_autocast_dtype(device_type) -> _dt.dtype:
    """The dtype autocast casts to on `device_type` (cpu: bfloat16, cuda: float16 unless set)."""
    _check_type("get_autocast_dtype", device_type, "device_type", 1, str, "str")
    dt = state.dtypes.get(device_type)
    if dt is not None:
        return dt
    from .op_lists import profile
    return profile(device_type).default_dtype()


def set_autocast_dtype(device_type, dtype) -> None:
    _check_type("set_autocast_dtype", device_type, "device_type", 1, str, "str")
    _check_type("set_autocast_dtype", dtype, "dtype", 2, _dt.dtype, "torch.dtype")
    state.dtypes[device_type] = dtype


def is_autocast_cache_enabled() -> bool:
    return state.cache_enabled


def set_autocast_cache_enabled(enabled) -> None:
    _check_type("set_autocast_cache_enabled", enabled, "enabled", 1, bool, "bool")
    state.cache_enabled = enabled


def clear_autocast_cache() -> None:
    """Drop the casts of weights kept while autocast regions run (done on leaving the outermost)."""
    state.cache.clear()


def autocast_increment_nesting() -> int:
    state.nesting += 1
    return state.nesting


def autocast_decrement_nesting() -> int:
    state.nesting -= 1
    return state.nesting


# -- the deprecated per-device forms (PyTorch's DeprecationWarning texts) --------------------------------
def _deprecated(old, new):
    warnings.warn(f"torch.{old} is deprecated. Please use torch.{new} instead.", DeprecationWarning,
                  stacklevel=3)


def is_autocast_cpu_enabled() -> bool:
    _deprecated("is_autocast_cpu_enabled()", "is_autocast_enabled('cpu')")
    return is_autocast_enabled("cpu")


def set_autocast_cpu_enabled(enabled) -> None:
    _deprecated("set_autocast_cpu_enabled(enabled)", "set_autocast_enabled('cpu', enabled)")
    set_autocast_enabled("cpu", enabled)


def get_autocast_cpu_dtype() -> _dt.dtype:
    _deprecated("get_autocast_cpu_dtype()", "get_autocast_dtype('cpu')")
    return get_autocast_dtype("cpu")


def set_autocast_cpu_dtype(dtype) -> None:
    _deprecated("set_autocast_cpu_dtype(dtype)", "set_autocast_dtype('cpu', dtype)")
    set_autocast_dtype("cpu", dtype)


def get_autocast_gpu_dtype() -> _dt.dtype:
    _deprecated("get_autocast_gpu_dtype()", "get_autocast_dtype('cuda')")
    return get_autocast_dtype("cuda")


def set_autocast_gpu_dtype(dtype) -> None:
    _deprecated("set_autocast_gpu_dtype(dtype)", "set_autocast_dtype('cuda', dtype)")
    set_autocast_dtype("cuda", dtype)
