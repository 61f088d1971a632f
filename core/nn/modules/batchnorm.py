"""torch.nn.modules.batchnorm: the batch-norm layers (written in normalization.py). Named here, as in PyTorch, so that
pickles of these layers carry PyTorch's path both ways."""
from .normalization import _NormBase, _BatchNorm, BatchNorm1d, BatchNorm2d, BatchNorm3d

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d"]

for _cls in (_NormBase, _BatchNorm, BatchNorm1d, BatchNorm2d, BatchNorm3d):
    _cls.__module__ = __name__
del _cls
