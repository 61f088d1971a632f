"""torch.nn.modules.fold: Fold and Unfold (written in conv.py). Named here, as in PyTorch, so that
pickles of these layers carry PyTorch's path both ways."""
from .conv import Fold, Unfold

__all__ = ["Fold", "Unfold"]

for _cls in (Fold, Unfold):
    _cls.__module__ = __name__
del _cls
