"""torch.nn.modules.instancenorm: the instance-norm layers (written in normalization.py). Named here, as in PyTorch, so that
pickles of these layers carry PyTorch's path both ways."""
from .normalization import _InstanceNorm, InstanceNorm1d, InstanceNorm2d, InstanceNorm3d

__all__ = ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d"]

for _cls in (_InstanceNorm, InstanceNorm1d, InstanceNorm2d, InstanceNorm3d):
    _cls.__module__ = __name__
del _cls
