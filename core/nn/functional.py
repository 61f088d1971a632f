"""tensorplug.nn.functional: the functional form of every layer (re-exported from the op families, with
PyTorch's TypeError for non-Tensor arguments: ops._argcheck)."""
import importlib
import types

from ..ops._argcheck import tensor_typed

_FAMILIES = ("linear", "conv", "pool", "activation", "normalization", "dropout", "embedding", "loss",
             "sampling", "padding", "distance", "attention")

__all__ = []
for _f in _FAMILIES:
    _m = importlib.import_module(f"tensorplug.ops.{_f}")
    for _name in getattr(_m, "FUNCTIONAL", ()):
        _obj = getattr(_m, _name)
        globals()[_name] = tensor_typed(_obj, _name) if isinstance(_obj, types.FunctionType) else _obj
        __all__.append(_name)
del _f, _m, _obj
