"""Every op, defined once, grouped by family. Importing a family attaches its Tensor methods.

The special-function and numerical families load on first use (`load_lazy`): by the name through
`tensorplug.<name>` or a Tensor method, which keeps `import tensorplug` light."""
from . import (creation, indexing, introspection, linalg, pointwise, random, reduction, shape,  # noqa: F401
               view_inplace)
from . import complex as _complex_family  # noqa: F401,E402  (real/imag/conj/...; shadows no builtin here)

LAZY_FAMILIES = ("special", "numerical", "random_distributions", "factorizations")
_loaded = []


def load_lazy() -> bool:
    """Import the lazy families and export their public functions; False when already done."""
    if _loaded:
        return False
    import importlib

    from . import _api
    _loaded.append(True)
    for name in LAZY_FAMILIES:
        _api.export(importlib.import_module(f"{__name__}.{name}"))
    return True
