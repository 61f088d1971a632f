"""The public op namespace (`tensorplug.add`, `tensorplug.zeros`, ...): each family lists its
public functions in `PUBLIC`; functions get PyTorch's TypeError for non-Tensor arguments (_argcheck)."""
import types

from ._argcheck import tensor_typed
from . import creation, indexing, introspection, linalg, pointwise, random, reduction, shape
from . import complex as _complex_family

__all__ = []


def export(module):
    """Make module's PUBLIC names part of this namespace (and so of `tensorplug`)."""
    g = globals()
    for name in getattr(module, "PUBLIC", ()):
        obj = getattr(module, name)
        g[name] = tensor_typed(obj, name) if isinstance(obj, types.FunctionType) else obj
        if name not in __all__:
            __all__.append(name)


for _mod in (creation, pointwise, reduction, shape, indexing, linalg, random, introspection, _complex_family):
    export(_mod)
del _mod
