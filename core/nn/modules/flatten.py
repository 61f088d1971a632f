"""torch.nn.modules.flatten: Flatten and Unflatten (written in linear.py). Named here, as in PyTorch, so that
pickles of these layers carry PyTorch's path both ways."""
from .linear import Flatten, Unflatten

__all__ = ["Flatten", "Unflatten"]

for _cls in (Flatten, Unflatten):
    _cls.__module__ = __name__
del _cls
