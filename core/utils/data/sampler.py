"""Samplers: iterables of data set indices (or, for BatchSampler, of lists of indices).

Random samplers draw with a tensorplug `Generator`. Without one they seed a fresh generator from
tensorplug's default generator each time they are iterated, so `tensorplug.manual_seed` makes
them reproducible and every epoch still gets a new order (PyTorch's behaviour).
"""
from __future__ import annotations

__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler", "WeightedRandomSampler",
           "BatchSampler"]


def _is_int(x):
    return isinstance(x, int) and not isinstance(x, bool)


def _fresh_generator():
    """A new CPU generator seeded from the default generator (one draw)."""
    from ...ops.random import Generator, randint
    seed = int(randint(0, 2**63 - 1, ()).item())
    return Generator().manual_seed(seed)


class Sampler:
    """Base class: subclasses define `__iter__` (yielding indices) and, if they can, `__len__`."""

    def __init__(self, data_source=None):
        pass

    def __iter__(self):
        raise NotImplementedError(f"{type(self).__name__} must implement __iter__")

    def __class_getitem__(cls, item):
        # `class MySampler(Sampler[int])`, as typed PyTorch code writes it
        return cls


class SequentialSampler(Sampler):
    """0, 1, ..., len(data_source) - 1."""

    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


class RandomSampler(Sampler):
    """Indices in random order: a permutation (repeated if `num_samples > len`) or, with
    `replacement=True`, `num_samples` independent uniform draws."""

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got replacement={replacement}")
        if num_samples is not None and (not _is_int(num_samples) or num_samples <= 0):
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={num_samples}")

    @property
    def num_samples(self) -> int:
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        from ...ops.random import randint, randperm
        n = len(self.data_source)
        g = self.generator if self.generator is not None else _fresh_generator()
        m = self.num_samples
        if self.replacement:
            if n == 0:
                raise ValueError("RandomSampler: cannot draw with replacement from an empty data set")
            for _ in range(m // 32):
                yield from randint(0, n, (32,), generator=g).tolist()
            if m % 32:
                yield from randint(0, n, (m % 32,), generator=g).tolist()
        else:
            if n == 0:
                return
            for _ in range(m // n):
                yield from randperm(n, generator=g).tolist()
            if m % n:
                yield from randperm(n, generator=g).tolist()[:m % n]

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices in random order (no replacement)."""

    def __init__(self, indices, generator=None):
        self.indices = indices
        self.generator = generator

    def __iter__(self):
        from ...ops.random import randperm
        for i in randperm(len(self.indices), generator=self.generator).tolist():
            yield self.indices[i]

    def __len__(self):
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """`num_samples` indices in [0, len(weights)), index i drawn with probability
    weights[i] / sum(weights) (with replacement by default)."""

    def __init__(self, weights, num_samples, replacement=True, generator=None):
        import numpy as np
        if not _is_int(num_samples) or num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got replacement={replacement}")
        host = np.asarray(weights.detach()._host() if hasattr(weights, "_host") else weights, dtype=np.float64)
        if host.ndim != 1:
            raise ValueError(f"weights should be a 1d sequence but given weights have shape {tuple(host.shape)}")
        from ...ops.creation import tensor
        self.weights = tensor(host, dtype="float64")
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self):
        from ...ops.random import multinomial
        yield from multinomial(self.weights, self.num_samples, self.replacement, generator=self.generator).tolist()

    def __len__(self):
        return self.num_samples


class BatchSampler(Sampler):
    """Groups the indices of `sampler` into lists of `batch_size` (the last one shorter unless
    `drop_last`)."""

    def __init__(self, sampler, batch_size, drop_last):
        if not _is_int(batch_size) or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self):
        batch = []
        for idx in self.sampler:
            batch.append(idx)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self):
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else (n + self.batch_size - 1) // self.batch_size
