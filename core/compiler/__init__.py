"""tensorplug.compiler (torch.compiler) and `tensorplug.compile`: capture a model's forward and its
backward as kernel tapes and replay them (compiled.py; capture.py and tape.py say how).

    model = tensorplug.compile(model)          # or torch.compile under `tensorplug exec`, model.compile()
    @tensorplug.compile
    def step(x): ...

The names load on first use: the ops import only `_state` (is a capture running?).
"""
from __future__ import annotations

__all__ = ["compile", "disable", "is_compiling", "is_dynamo_compiling", "list_backends", "reset"]


def __getattr__(name):
    if name in __all__:
        from . import api
        value = getattr(api, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'tensorplug.compiler' has no attribute {name!r}")


def __dir__():
    return sorted(__all__)
