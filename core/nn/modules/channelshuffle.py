"""torch.nn.modules.channelshuffle: ChannelShuffle (written in pixelshuffle.py). Named here, as in PyTorch, so that
pickles of these layers carry PyTorch's path both ways."""
from .pixelshuffle import ChannelShuffle

__all__ = ["ChannelShuffle"]

for _cls in (ChannelShuffle,):
    _cls.__module__ = __name__
del _cls
