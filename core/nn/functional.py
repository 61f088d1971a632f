"""tensorplug.nn.functional: the functional form of every layer (re-exported from the op families)."""
import importlib

_FAMILIES = ("linear", "conv", "pool", "activation", "normalization", "dropout", "embedding", "loss",
             "sampling", "padding", "distance", "attention")

__all__ = []
for _f in _FAMILIES:
    _m = importlib.import_module(f"tensorplug.ops.{_f}")
    for _name in getattr(_m, "FUNCTIONAL", ()):
        globals()[_name] = getattr(_m, _name)
        __all__.append(_name)
del _f, _m
