"""Data sets: the map-style `Dataset` (`__getitem__` + `__len__`), the stream-style `IterableDataset`
(`__iter__`), and the combinators `TensorDataset`, `StackDataset`, `ConcatDataset`, `ChainDataset`,
`Subset` and `random_split`.

    ds = TensorDataset(x, y)                 # ds[i] == (x[i], y[i])
    train, val = random_split(ds, [0.8, 0.2], generator=tensorplug.Generator().manual_seed(0))
"""
from __future__ import annotations

import bisect
import itertools
import math
import warnings

import numpy as np

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "StackDataset", "ConcatDataset", "ChainDataset",
           "Subset", "random_split"]


class Dataset:
    """A map-style data set: subclasses define `__getitem__(index)` and usually `__len__()`.

    A subclass may also define `__getitems__(indices)` returning a list of samples, which the
    DataLoader then uses to fetch a whole batch in one call."""

    def __getitem__(self, index):
        raise NotImplementedError(f"{type(self).__name__} must implement __getitem__")

    def __add__(self, other):
        return ConcatDataset([self, other])

    def __class_getitem__(cls, item):
        # `class MyData(Dataset[Tensor])`, as typed PyTorch code writes it
        return cls


class IterableDataset(Dataset):
    """A stream-style data set: subclasses define `__iter__()`.

    With `num_workers > 0` every worker process iterates its own copy of the data set; use
    `tensorplug.utils.data.get_worker_info()` inside `__iter__` to split the work between them
    (otherwise each sample is produced once per worker)."""

    def __iter__(self):
        raise NotImplementedError(f"{type(self).__name__} must implement __iter__")

    def __add__(self, other):
        return ChainDataset([self, other])


def _first_dim(t):
    return t.size(0)


class TensorDataset(Dataset):
    """Samples are tuples `(t[i] for t in tensors)`; every tensor has the same first dimension."""

    def __init__(self, *tensors):
        if not tensors:
            raise ValueError("TensorDataset needs at least one tensor")
        for t in tensors:
            if not hasattr(t, "size") or not getattr(t, "shape", ()):
                raise ValueError(f"TensorDataset: every argument must be a tensor with at least one "
                                 f"dimension, got {type(t).__name__} of shape {getattr(t, 'shape', None)}")
        n = _first_dim(tensors[0])
        sizes = [_first_dim(t) for t in tensors]
        if any(s != n for s in sizes):
            raise ValueError(f"Size mismatch between tensors: first dimensions are {sizes}")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __getitems__(self, indices):
        # the batched-fetch protocol: a list of samples, exactly `[self[i] for i in indices]`
        return [self[i] for i in indices]

    def _getitems_collated(self, indices):
        """The batch `default_collate(self.__getitems__(indices))` would build, gathered with one
        `index_select` per tensor; NotImplemented where that shortcut is not known to be exact
        (a subclass overriding `__getitem__`/`__getitems__`, non-tensor fields, odd indices)."""
        cls = type(self)
        if cls.__getitem__ is not TensorDataset.__getitem__ or cls.__getitems__ is not TensorDataset.__getitems__:
            return NotImplemented
        from ...tensor import Tensor
        if not all(type(t) is Tensor and not t.requires_grad for t in self.tensors):
            return NotImplemented
        try:
            idx = np.asarray(indices)
        except Exception:
            return NotImplemented
        if idx.ndim != 1 or idx.size == 0 or idx.dtype.kind not in "iu":
            return NotImplemented
        n = len(self)
        idx = idx.astype(np.int64, copy=True)
        if idx.min() < -n or idx.max() >= n:
            return NotImplemented          # the per-sample path raises the usual IndexError
        idx[idx < 0] += n
        from ...ops.creation import from_numpy
        index = from_numpy(idx)
        # default_collate of tuples gives a list of stacked "columns"
        return [t.index_select(0, index.to(t.device) if t.device != index.device else index)
                for t in self.tensors]

    def __len__(self):
        return _first_dim(self.tensors[0])


class StackDataset(Dataset):
    """Zips data sets of equal length: `StackDataset(a, b)[i] == (a[i], b[i])`,
    `StackDataset(x=a, y=b)[i] == {"x": a[i], "y": b[i]}`."""

    def __init__(self, *args, **kwargs):
        if args and kwargs:
            raise ValueError("StackDataset takes data sets as positional or as keyword arguments, not both")
        if not args and not kwargs:
            raise ValueError("StackDataset needs at least one data set")
        self.datasets = args if args else kwargs
        items = args if args else tuple(kwargs.values())
        lengths = [len(d) for d in items]
        if any(n != lengths[0] for n in lengths):
            raise ValueError(f"Size mismatch between datasets: lengths are {lengths}")
        self._length = lengths[0]

    def __getitem__(self, index):
        if isinstance(self.datasets, dict):
            return {k: d[index] for k, d in self.datasets.items()}
        return tuple(d[index] for d in self.datasets)

    def __len__(self):
        return self._length


class ConcatDataset(Dataset):
    """The concatenation of map-style data sets: indices run through each one in turn."""

    @staticmethod
    def cumsum(sequence):
        r, s = [], 0
        for e in sequence:
            s += len(e)
            r.append(s)
        return r

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise TypeError("ConcatDataset does not support IterableDataset (use ChainDataset)")
        self.cumulative_sizes = self.cumsum(self.datasets)

    def __len__(self):
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx):
        n = len(self)
        idx = _as_index(idx)
        if idx < 0:
            if -idx > n:
                raise ValueError("absolute value of index should not exceed dataset length")
            idx += n
        if idx >= n:
            raise IndexError(f"index {idx} is out of range for a ConcatDataset of length {n}")
        d = bisect.bisect_right(self.cumulative_sizes, idx)
        sample_idx = idx if d == 0 else idx - self.cumulative_sizes[d - 1]
        return self.datasets[d][sample_idx]


class ChainDataset(IterableDataset):
    """The chain of iterable data sets: iterates each one in turn."""

    def __init__(self, datasets):
        self.datasets = datasets

    def __iter__(self):
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise TypeError(f"ChainDataset only supports IterableDataset, got {type(d).__name__}")
            yield from d

    def __len__(self):
        return sum(len(d) for d in self.datasets)


class Subset(Dataset):
    """The samples of `dataset` at `indices`: `Subset(ds, [4, 1])[0] is ds[4]`."""

    def __init__(self, dataset, indices):
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices):
        # forwards batch fetching to the wrapped data set when it supports it
        inner = [self.indices[i] for i in indices]
        if callable(getattr(self.dataset, "__getitems__", None)):
            return self.dataset.__getitems__(inner)
        return [self.dataset[i] for i in inner]

    def _getitems_collated(self, indices):
        # forwards the default-collate batched fetch to the wrapped data set when it has one
        if type(self).__getitem__ is not Subset.__getitem__ or type(self).__getitems__ is not Subset.__getitems__:
            return NotImplemented
        fast = getattr(self.dataset, "_getitems_collated", None)
        if fast is None:
            return NotImplemented
        return fast([self.indices[i] for i in indices])

    def __len__(self):
        return len(self.indices)


def _as_index(idx):
    if isinstance(idx, int):
        return idx
    try:
        return idx.__index__()
    except AttributeError:
        raise TypeError(f"data set indices must be integers, got {type(idx).__name__}") from None


def random_split(dataset, lengths, generator=None):
    """Split `dataset` at random into non-overlapping Subsets of the given `lengths`.

    `lengths` are sizes summing to `len(dataset)`, or fractions summing to 1 (each part gets
    `floor(len * fraction)` samples, and the remainder is handed out one by one, round robin, from
    the first part). `generator` (default: tensorplug's default CPU generator) draws the permutation."""
    from ...ops.random import randperm
    lengths = list(lengths)
    n = len(dataset)
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1 and not all(
            isinstance(x, int) and not isinstance(x, bool) for x in lengths):
        subset_lengths = []
        for i, frac in enumerate(lengths):
            if frac < 0 or frac > 1:
                raise ValueError(f"Fraction at index {i} is not between 0 and 1")
            subset_lengths.append(int(math.floor(n * frac)))
        remainder = n - sum(subset_lengths)
        for i in range(remainder):
            subset_lengths[i % len(subset_lengths)] += 1
        lengths = subset_lengths
        for i, length in enumerate(lengths):
            if length == 0:
                warnings.warn(f"Length of split at index {i} is 0. This might result in an empty dataset.",
                              stacklevel=2)
    for x in lengths:
        if not isinstance(x, int) or isinstance(x, bool) or x < 0:
            raise ValueError(f"random_split: lengths must be non-negative integers or fractions summing to "
                             f"1, got {lengths}")
    if sum(lengths) != n:
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    indices = randperm(sum(lengths), generator=generator).tolist()
    return [Subset(dataset, indices[offset - length: offset])
            for offset, length in zip(itertools.accumulate(lengths), lengths)]
