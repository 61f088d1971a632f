"""The module type of PyTorch's flag modules: switches that read like attributes and check what they are
set to (`tensorplug.backends.cudnn.benchmark = 1` raises, as in PyTorch), plus a `flags(...)` context
manager that sets several at once and restores them."""
from __future__ import annotations

import contextlib
import sys
import types


class FlagModule(types.ModuleType):
    """A module whose names listed in `_switches` ({name: setter name for the error}) are bools."""

    _switches: dict = {}

    def __setattr__(self, name, value):
        setter = type(self)._switches.get(name)
        if setter is not None and not isinstance(value, bool):
            raise RuntimeError(f"{setter} expects a bool, but got {type(value).__name__}")
        super().__setattr__(name, value)


def install(module_name: str, switches: dict) -> None:
    """Make module `module_name` a FlagModule checking `switches`."""
    cls = type("FlagModule", (FlagModule,), {"_switches": dict(switches)})
    sys.modules[module_name].__class__ = cls


def flags_context(module, **values):
    """Set the module's switches to `values` inside the block, then restore them."""
    @contextlib.contextmanager
    def ctx():
        old = {k: getattr(module, k) for k in values}
        try:
            for k, v in values.items():
                setattr(module, k, v)
            yield
        finally:
            for k, v in old.items():
                setattr(module, k, v)
    return ctx()
