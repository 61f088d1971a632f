"""TensorDataset's batched fetch: with the default collate_fn the DataLoader gathers each batch with one
index_select per tensor; the result must equal the per-sample path (samples + default_collate) exactly,
and a custom collate_fn still gets the list of per-sample tuples."""
import numpy as np
import pytest

import tensorplug as tp
from tensorplug.utils.data import DataLoader, Subset, TensorDataset, default_collate, random_split
from tensorplug.utils.data import _worker

MP = pytest.mark.timeout(60)


def per_sample_collate(batch):
    # not `default_collate` itself, so the loader takes the per-sample path
    assert isinstance(batch, list) and all(isinstance(s, tuple) for s in batch)
    return default_collate(batch)


def make_ds(n=37):
    rng = np.random.default_rng(0)
    x = tp.from_numpy(rng.standard_normal((n, 4, 3)).astype(np.float32))
    y = tp.from_numpy(rng.integers(0, 10, n))
    m = tp.from_numpy(rng.integers(0, 2, n).astype(bool))
    return TensorDataset(x, y, m)


def assert_same(fast, slow):
    assert len(fast) == len(slow)
    for bf, bs in zip(fast, slow):
        assert type(bf) is type(bs) is list and len(bf) == len(bs)
        for a, b in zip(bf, bs):
            assert type(a) is type(b)
            assert a.dtype == b.dtype and tuple(a.shape) == tuple(b.shape)
            np.testing.assert_array_equal(a.numpy(), b.numpy())


def epochs(ds, seed, **kw):
    fast = list(DataLoader(ds, generator=tp.Generator().manual_seed(seed), **kw))
    slow = list(DataLoader(ds, collate_fn=per_sample_collate, generator=tp.Generator().manual_seed(seed), **kw))
    return fast, slow


@pytest.mark.parametrize("shuffle", [False, True])
@pytest.mark.parametrize("drop_last", [False, True])
@pytest.mark.parametrize("batch_size", [1, 5, 8, 64])
def test_batched_matches_per_sample(shuffle, drop_last, batch_size):
    fast, slow = epochs(make_ds(), 3, batch_size=batch_size, shuffle=shuffle, drop_last=drop_last)
    assert_same(fast, slow)


@MP
@pytest.mark.parametrize("shuffle", [False, True])
@pytest.mark.parametrize("drop_last", [False, True])
def test_batched_matches_per_sample_with_workers(shuffle, drop_last):
    fast, slow = epochs(make_ds(), 5, batch_size=6, shuffle=shuffle, drop_last=drop_last, num_workers=2, timeout=30)
    assert_same(fast, slow)
    single = list(DataLoader(make_ds(), batch_size=6, shuffle=shuffle, drop_last=drop_last,
                             generator=tp.Generator().manual_seed(5)))
    assert_same(fast, single)


def test_subset_and_random_split_match():
    ds = make_ds()
    for sub in [Subset(ds, [5, 2, 30, 2, 0]), Subset(ds, np.arange(36, 0, -3)),
                random_split(ds, [0.7, 0.3], generator=tp.Generator().manual_seed(0))[1]]:
        fast, slow = epochs(sub, 1, batch_size=3, shuffle=True)
        assert_same(fast, slow)


def test_fast_path_is_taken_only_for_default_collate():
    ds = make_ds()
    assert isinstance(ds._getitems_collated([0, 1]), list)
    f = _worker.make_fetcher("map", ds, True, default_collate, False)
    assert f._getitems_collated is not None
    assert _worker.make_fetcher("map", ds, True, per_sample_collate, False)._getitems_collated is None
    assert _worker.make_fetcher("map", ds, False, default_collate, False)._getitems_collated is None


def test_custom_collate_sees_per_sample_tuples():
    ds = make_ds(10)
    seen = []
    loader = DataLoader(ds, batch_size=4, collate_fn=lambda b: seen.append(b) or len(b))
    assert list(loader) == [4, 4, 2]
    assert [len(b) for b in seen] == [4, 4, 2]
    for k, b in enumerate(seen):
        assert type(b) is list
        for j, s in enumerate(b):
            i = 4 * k + j
            assert type(s) is tuple and len(s) == 3
            for got, t in zip(s, ds.tensors):
                assert tuple(got.shape) == tuple(t[i].shape)
                np.testing.assert_array_equal(got.numpy(), t[i].numpy())


def test_getitems_is_list_of_samples():
    ds = make_ds(10)
    items = ds.__getitems__([3, -1, 0])
    assert type(items) is list and len(items) == 3
    for s, i in zip(items, [3, -1, 0]):
        for a, b in zip(s, ds[i]):
            np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_negative_and_numpy_indices_and_errors():
    ds = make_ds(10)
    got = ds._getitems_collated(np.array([-1, 0, 9, -10]))
    want = default_collate([ds[i] for i in [-1, 0, 9, -10]])
    assert_same([got], [want])
    assert ds._getitems_collated([10]) is NotImplemented             # per-sample path raises as before
    with pytest.raises(IndexError):
        list(DataLoader(ds, batch_size=2, sampler=[0, 10]))


class Doubled(TensorDataset):
    def __getitem__(self, i):
        return tuple(t[i] * 2 for t in self.tensors)


def test_subclass_overriding_getitem_keeps_its_samples():
    x = tp.arange(6.0)
    ds = Doubled(x)
    assert ds._getitems_collated([0, 1]) is NotImplemented
    (b,) = list(DataLoader(ds, batch_size=6))
    np.testing.assert_array_equal(b[0].numpy(), np.arange(6.0, dtype=np.float32) * 2)
