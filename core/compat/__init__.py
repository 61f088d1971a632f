"""Running unchanged PyTorch programs on tensorplug.

    from tensorplug.compat import alias_torch
    alias_torch()
    import torch                      # tensorplug
    from torch.utils.data import DataLoader

`tensorplug exec train.py ARGS...` runs a script (or `-m module`) with the alias installed from the
start, as `python train.py ARGS...` would run it. `alias` holds the import hook, `children` how
child processes get the alias, `program` how a script runs as `__main__`.
"""
from .alias import ALIASES, AlreadyImported, alias_torch, is_aliased, unalias_torch

__all__ = ["ALIASES", "AlreadyImported", "alias_torch", "is_aliased", "unalias_torch"]
