"""The public op namespace (`tensorplug.add`, `tensorplug.zeros`, ...): each family lists its
public functions in `PUBLIC`; functions get PyTorch's TypeError for non-Tensor arguments (_argcheck)."""
import inspect

from ._argcheck import tensor_typed
from . import creation, indexing, introspection, linalg, numerical, pointwise, random, reduction, shape, special

__all__ = []
for _mod in (creation, pointwise, reduction, shape, indexing, linalg, random, special, numerical, introspection):
    for _name in getattr(_mod, "PUBLIC", ()):
        _obj = getattr(_mod, _name)
        globals()[_name] = tensor_typed(_obj, _name) if inspect.isfunction(_obj) else _obj
        __all__.append(_name)
del _mod, _name, _obj
