"""DistributedSampler: each of `num_replicas` processes iterates its own share of a data set.

    sampler = DistributedSampler(ds, num_replicas=world_size, rank=rank, shuffle=True, seed=0)
    for epoch in range(n):
        sampler.set_epoch(epoch)             # a new order every epoch, the same on every rank
        for batch in DataLoader(ds, batch_size=32, sampler=sampler): ...

Every rank computes the same permutation (from `seed + epoch`), pads it by repeating indices from its
start so that its length divides evenly (or, with `drop_last`, cuts the tail), and takes every
`num_replicas`-th index starting at `rank` (PyTorch's algorithm).
"""
from __future__ import annotations

import importlib
import math

from .sampler import Sampler

__all__ = ["DistributedSampler"]


def _default_group():
    """(world size, rank) of tensorplug.distributed's default group, or a clear error."""
    try:
        dist = importlib.import_module("tensorplug.distributed")
    except ImportError:
        dist = None
    ready = dist is not None and (getattr(dist, "is_available", lambda: True)()) and \
        getattr(dist, "is_initialized", lambda: False)()
    if not ready:
        why = "tensorplug.distributed is not available" if dist is None else \
            "the default process group of tensorplug.distributed is not initialized"
        raise RuntimeError(f"DistributedSampler: num_replicas and rank were not given and {why}; pass "
                           "num_replicas= and rank= explicitly (or initialize the process group first)")
    return dist.get_world_size(), dist.get_rank()


class DistributedSampler(Sampler):
    """The indices of this rank's share of `dataset` (see the module docstring).

    num_replicas, rank: default to the world size and rank of tensorplug.distributed's default
    process group. shuffle: permute with `seed + epoch` (call `set_epoch` every epoch).
    drop_last: drop the tail so every rank gets `floor(len / num_replicas)` indices instead of
    padding with repeated indices up to `ceil(len / num_replicas)`."""

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0, drop_last=False):
        if num_replicas is None or rank is None:
            world, me = _default_group()
            num_replicas = world if num_replicas is None else num_replicas
            rank = me if rank is None else rank
        if not isinstance(num_replicas, int) or isinstance(num_replicas, bool) or num_replicas < 1:
            raise ValueError(f"num_replicas should be a positive integer, but got num_replicas={num_replicas!r}")
        if not isinstance(rank, int) or isinstance(rank, bool) or rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        n = len(dataset)
        if drop_last and n % num_replicas != 0:
            # the largest length every rank can fill without repeating
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self):
        n = len(self.dataset)
        if self.shuffle:
            from ...ops.random import Generator, randperm
            g = Generator().manual_seed(self.seed + self.epoch)
            indices = randperm(n, generator=g).tolist()
        else:
            indices = list(range(n))
        if not self.drop_last:
            padding = self.total_size - len(indices)
            if padding > 0 and indices:
                if padding <= len(indices):
                    indices += indices[:padding]
                else:
                    indices += (indices * math.ceil(padding / len(indices)))[:padding]
        else:
            indices = indices[:self.total_size]
        if len(indices) != self.total_size:
            raise RuntimeError(f"DistributedSampler: the data set has {n} samples, expected {self.total_size} "
                               "after padding (did its length change after the sampler was made?)")
        indices = indices[self.rank:self.total_size:self.num_replicas]
        return iter(indices)

    def __len__(self):
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Set the epoch: with shuffle=True the order of every rank depends on seed + epoch."""
        self.epoch = epoch
