"""tensorplug.amp: automatic mixed precision, as `torch.amp` — `autocast` (autocast_mode.py, with the
op lists in op_lists.py) and `GradScaler` (grad_scaler.py).

Importing this package loads only the per-thread state the ops read (state.py); the rest loads on
first use, so `import tensorplug` stays light.
"""
from __future__ import annotations

import importlib

__all__ = ["autocast", "custom_bwd", "custom_fwd", "is_autocast_available", "GradScaler"]

_WHERE = {"autocast": "autocast_mode", "custom_fwd": "autocast_mode", "custom_bwd": "autocast_mode",
          "is_autocast_available": "autocast_mode", "GradScaler": "grad_scaler"}
_SUBMODULES = ("autocast_mode", "grad_scaler", "op_lists", "casting", "state")


def __getattr__(name):
    if name in _WHERE:
        obj = getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
        globals()[name] = obj
        return obj
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__) | set(_SUBMODULES))
