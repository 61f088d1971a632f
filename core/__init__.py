"""tensorplug: PyTorch's programming model over pluggable backends.

    import tensorplug as torch
    x = torch.randn(3, requires_grad=True)
    (x * x).sum().backward()
"""
from __future__ import annotations

__version__ = "0.1.0"

from . import autograd, dtypes  # noqa: E402
from .autograd import enable_grad, is_grad_enabled, no_grad, set_grad_enabled, inference_mode  # noqa
from .device import device  # noqa: E402
from .dtypes import (bool_ as bool, float16, float32, float64, get_default_dtype, int8, int16,  # noqa
                     int32, int64, promote_types, result_type, set_default_dtype, uint8)
from .dtypes import dtype  # noqa: E402
from .tensor import Size, Tensor  # noqa: E402
from ._formatting import set_printoptions  # noqa: E402
from . import ops  # noqa: E402,F401  (attaches Tensor methods)
from .ops._api import *  # noqa: E402,F401,F403

half, float, double = float16, float32, float64
short, int, long = int16, int32, int64

from .dispatch import registry as _registry  # noqa: E402


_LAZY_MODULES = ("backends", "dispatch", "testing", "linalg", "nn", "optim", "utils", "serialization", "data", "distributed",
                 "cuda", "special")


def __getattr__(name):
    # modules that load on first use (keeps `import tensorplug` light)
    import importlib
    if name in ("save", "load"):
        from . import serialization
        return getattr(serialization, name)
    if name in _LAZY_MODULES:
        return importlib.import_module(f"{__name__}.{name}")
    if not name.startswith("_"):             # the op families that load on first use
        ops.load_lazy()
        from .ops import _api
        obj = _api.__dict__.get(name)
        if obj is not None:
            globals()[name] = obj
            return obj
    raise AttributeError(f"module 'tensorplug' has no attribute {name!r}")
