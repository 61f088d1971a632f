"""Every layer class; each module file lists its public classes in `__all__`."""
import importlib

_FILES = ("module", "container", "linear", "conv", "pooling", "activation", "normalization", "dropout",
          "sparse", "loss", "padding", "pixelshuffle", "upsampling", "distance", "rnn", "attention", "transformer")

__all__ = []
for _f in _FILES:
    _m = importlib.import_module(f"{__name__}.{_f}")
    for _name in getattr(_m, "__all__", ()):
        globals()[_name] = getattr(_m, _name)
        __all__.append(_name)
del _f, _m
# PyTorch's file names for layers written elsewhere (they give the classes PyTorch's pickle paths)
from . import batchnorm, channelshuffle, flatten, fold, instancenorm  # noqa: E402,F401
from .batchnorm import SyncBatchNorm  # noqa: E402,F401
__all__.append("SyncBatchNorm")
