"""Data sets: TensorDataset, StackDataset, ConcatDataset, ChainDataset, Subset, random_split."""
import warnings

import pytest

import tensorplug as tp
import tensorplug.utils.data as data
from tensorplug.utils.data import (ChainDataset, ConcatDataset, Dataset, IterableDataset, StackDataset, Subset,
                                   TensorDataset, random_split)


class Squares(Dataset):
    def __init__(self, n):
        self.n = n

    def __getitem__(self, i):
        if not 0 <= i < self.n:
            raise IndexError(i)
        return i * i

    def __len__(self):
        return self.n


class Count(IterableDataset):
    def __init__(self, lo, hi):
        self.lo, self.hi = lo, hi

    def __iter__(self):
        return iter(range(self.lo, self.hi))

    def __len__(self):
        return self.hi - self.lo


def test_utils_package_exports():
    assert tp.utils.data is data
    for name in ("Dataset", "DataLoader", "Sampler", "DistributedSampler", "default_collate", "get_worker_info"):
        assert hasattr(data, name)


def test_tensor_dataset():
    x, y = tp.arange(12).reshape(4, 3), tp.arange(4) * 10
    ds = TensorDataset(x, y)
    assert len(ds) == 4
    a, b = ds[2]
    assert a.tolist() == [6, 7, 8] and b.item() == 20
    assert ds[-1][1].item() == 30
    with pytest.raises(ValueError, match="Size mismatch"):
        TensorDataset(tp.zeros(2), tp.zeros(3))


def test_stack_dataset():
    ds = StackDataset(Squares(3), [10, 20, 30])
    assert ds[1] == (1, 20) and len(ds) == 3
    dd = StackDataset(x=Squares(3), y=[10, 20, 30])
    assert dd[2] == {"x": 4, "y": 30}
    with pytest.raises(ValueError, match="Size mismatch"):
        StackDataset(Squares(3), [1])


def test_concat_dataset_indexing():
    c = ConcatDataset([Squares(3), [100, 101, 102, 103]])
    assert len(c) == 7 and c.cumulative_sizes == [3, 7]
    assert [c[i] for i in range(7)] == [0, 1, 4, 100, 101, 102, 103]
    assert c[-1] == 103 and c[-7] == 0 and c[-5] == 4
    with pytest.raises(ValueError, match="absolute value of index"):
        c[-8]
    with pytest.raises(IndexError):
        c[7]
    both = Squares(2) + Squares(3)
    assert isinstance(both, ConcatDataset) and [both[i] for i in range(5)] == [0, 1, 0, 1, 4]
    with pytest.raises(TypeError, match="IterableDataset"):
        ConcatDataset([Count(0, 2)])
    with pytest.raises(ValueError):
        ConcatDataset([])


def test_chain_dataset():
    ch = Count(0, 3) + Count(10, 12)
    assert isinstance(ch, ChainDataset)
    assert list(ch) == [0, 1, 2, 10, 11] and len(ch) == 5


def test_subset_indexing():
    s = Subset(Squares(10), [9, 2, 5])
    assert len(s) == 3 and [s[i] for i in range(3)] == [81, 4, 25]
    assert s[-1] == 25
    assert s.__getitems__([2, 0]) == [25, 81]
    nested = Subset(s, [2, 1])
    assert [nested[0], nested[1]] == [25, 4]


def test_random_split_lengths():
    ds = Squares(10)
    a, b = random_split(ds, [3, 7], generator=tp.Generator().manual_seed(1))
    assert len(a) == 3 and len(b) == 7
    idx = list(a.indices) + list(b.indices)
    assert sorted(idx) == list(range(10))
    a2, b2 = random_split(ds, [3, 7], generator=tp.Generator().manual_seed(1))
    assert list(a2.indices) == list(a.indices) and list(b2.indices) == list(b.indices)
    expected = tp.randperm(10, generator=tp.Generator().manual_seed(1)).tolist()
    assert idx == expected
    assert a[0] == expected[0] ** 2
    with pytest.raises(ValueError, match="Sum of input lengths"):
        random_split(ds, [3, 3])


def test_random_split_fractions():
    parts = random_split(range(10), [0.3, 0.3, 0.4], generator=tp.Generator().manual_seed(0))
    assert [len(p) for p in parts] == [3, 3, 4]
    parts = random_split(range(11), [0.5, 0.5], generator=tp.Generator().manual_seed(0))
    assert [len(p) for p in parts] == [6, 5]        # the remainder goes round robin from the first
    assert sorted(i for p in parts for i in p.indices) == list(range(11))
    with pytest.warns(UserWarning, match="Length of split at index 1 is 0"):
        parts = random_split(range(3), [0.1, 0.1, 0.8])
    assert [len(p) for p in parts] == [1, 0, 2]
    with pytest.raises(ValueError):
        random_split(range(4), [1.5, -0.5])


def test_random_split_default_generator_follows_manual_seed():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tp.manual_seed(5)
        a = [list(p.indices) for p in random_split(range(8), [4, 4])]
        tp.manual_seed(5)
        b = [list(p.indices) for p in random_split(range(8), [4, 4])]
    assert a == b


def test_generic_subscription_like_typed_pytorch_code():
    class Typed(Dataset[int]):
        def __getitem__(self, i):
            return i

        def __len__(self):
            return 2

    class MySampler(data.Sampler[int]):
        def __iter__(self):
            return iter([1, 0])

    assert [b.tolist() for b in data.DataLoader(Typed(), batch_size=2, sampler=MySampler())] == [[1, 0]]
