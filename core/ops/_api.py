"""The public op namespace (`tensorplug.add`, `tensorplug.zeros`, ...): each family lists its
public functions in `PUBLIC`."""
from . import creation, indexing, introspection, linalg, numerical, pointwise, random, reduction, shape, special

__all__ = []
for _mod in (creation, pointwise, reduction, shape, indexing, linalg, random, special, numerical, introspection):
    for _name in getattr(_mod, "PUBLIC", ()):
        globals()[_name] = getattr(_mod, _name)
        __all__.append(_name)
del _mod, _name
