"""Samplers: Sequential, Random, SubsetRandom, WeightedRandom, Batch and Distributed."""
import math

import pytest

import tensorplug as tp
from tensorplug.utils.data import (BatchSampler, DistributedSampler, RandomSampler, SequentialSampler,
                                   SubsetRandomSampler, WeightedRandomSampler)


def gen(seed):
    return tp.Generator().manual_seed(seed)


def test_sequential_sampler():
    s = SequentialSampler(range(5))
    assert list(s) == [0, 1, 2, 3, 4] and len(s) == 5


def test_random_sampler_generator_reproducible():
    a = list(RandomSampler(range(20), generator=gen(3)))
    b = list(RandomSampler(range(20), generator=gen(3)))
    c = list(RandomSampler(range(20), generator=gen(4)))
    assert a == b and a != c
    assert sorted(a) == list(range(20))
    # one generator: every iteration continues its stream (a new order per epoch)
    s = RandomSampler(range(20), generator=gen(3))
    e1, e2 = list(s), list(s)
    assert e1 == a and e2 != e1 and sorted(e2) == list(range(20))


def test_random_sampler_without_generator_follows_manual_seed():
    tp.manual_seed(11)
    a = list(RandomSampler(range(30)))
    tp.manual_seed(11)
    b = list(RandomSampler(range(30)))
    assert a == b and sorted(a) == list(range(30))


def test_random_sampler_num_samples_without_replacement():
    s = RandomSampler(range(4), num_samples=10, generator=gen(0))
    out = list(s)
    assert len(out) == len(s) == 10
    assert sorted(out[:4]) == sorted(out[4:8]) == [0, 1, 2, 3]     # whole permutations, then a part
    assert len(set(out[8:])) == 2


def test_random_sampler_replacement():
    s = RandomSampler(range(5), replacement=True, num_samples=100, generator=gen(0))
    out = list(s)
    assert len(out) == 100 and set(out) <= set(range(5))
    assert len(set(out)) == 5                                         # 100 draws hit every index
    assert list(RandomSampler(range(5), replacement=True, num_samples=100, generator=gen(0))) == out
    assert len(list(RandomSampler(range(5), replacement=True, generator=gen(1)))) == 5


def test_random_sampler_argument_errors():
    with pytest.raises(TypeError, match="replacement should be a boolean"):
        RandomSampler(range(3), replacement=1)
    with pytest.raises(ValueError, match="num_samples should be a positive integer"):
        RandomSampler(range(3), num_samples=0)


def test_subset_random_sampler():
    idx = [10, 20, 30, 40, 50]
    out = list(SubsetRandomSampler(idx, generator=gen(2)))
    assert sorted(out) == idx and len(SubsetRandomSampler(idx)) == 5
    assert list(SubsetRandomSampler(idx, generator=gen(2))) == out


def test_weighted_random_sampler_statistics():
    w = [1.0, 2.0, 7.0, 0.0]
    n = 20000
    out = list(WeightedRandomSampler(w, n, generator=gen(0)))
    assert len(out) == n
    freq = [out.count(i) / n for i in range(4)]
    assert freq[3] == 0
    for f, p in zip(freq, [0.1, 0.2, 0.7]):
        assert abs(f - p) < 0.02
    assert list(WeightedRandomSampler(tp.tensor(w), n, generator=gen(0))) == out


def test_weighted_random_sampler_without_replacement():
    out = list(WeightedRandomSampler([1, 1, 5, 1, 1], 5, replacement=False, generator=gen(0)))
    assert sorted(out) == [0, 1, 2, 3, 4]
    with pytest.raises(RuntimeError):
        list(WeightedRandomSampler([1, 1], 3, replacement=False))


def test_weighted_random_sampler_errors():
    with pytest.raises(ValueError, match="1d sequence"):
        WeightedRandomSampler([[1.0]], 2)
    with pytest.raises(ValueError, match="num_samples"):
        WeightedRandomSampler([1.0], 0)
    with pytest.raises(ValueError, match="replacement"):
        WeightedRandomSampler([1.0], 1, replacement=0)


def test_batch_sampler():
    bs = BatchSampler(SequentialSampler(range(10)), 3, drop_last=False)
    assert list(bs) == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]] and len(bs) == 4
    bs = BatchSampler(range(10), 3, drop_last=True)
    assert list(bs) == [[0, 1, 2], [3, 4, 5], [6, 7, 8]] and len(bs) == 3
    assert list(BatchSampler(range(6), 3, False)) == [[0, 1, 2], [3, 4, 5]]
    for bad in (0, -1, True, 2.0):
        with pytest.raises(ValueError, match="batch_size should be a positive integer"):
            BatchSampler(range(3), bad, False)
    with pytest.raises(ValueError, match="drop_last should be a boolean"):
        BatchSampler(range(3), 2, 1)


# -- DistributedSampler -----------------------------------------------------------------------------------
def ranks(n, world, **kw):
    return [list(DistributedSampler(range(n), num_replicas=world, rank=r, **kw)) for r in range(world)]


def test_distributed_sampler_partitions_without_shuffle():
    parts = ranks(12, 4, shuffle=False)
    assert parts == [[0, 4, 8], [1, 5, 9], [2, 6, 10], [3, 7, 11]]


@pytest.mark.parametrize("n,world", [(12, 4), (10, 4), (3, 4), (1, 3), (7, 2)])
def test_distributed_sampler_pads_to_equal_length(n, world):
    samplers = [DistributedSampler(range(n), num_replicas=world, rank=r, seed=3) for r in range(world)]
    parts = [list(s) for s in samplers]
    per = math.ceil(n / world)
    assert all(len(p) == per == len(s) for p, s in zip(parts, samplers))
    flat = [i for p in parts for i in p]
    assert sorted(set(flat)) == list(range(n))                  # every sample is seen
    assert len(flat) == per * world                             # padded with repeats only
    # the padding repeats the permutation from its start (PyTorch's algorithm)
    perm = tp.randperm(n, generator=tp.Generator().manual_seed(3)).tolist()
    padded = (perm * math.ceil(per * world / n))[:per * world]
    assert [padded[i] for r in range(world) for i in range(r, per * world, world)] == flat


@pytest.mark.parametrize("n,world", [(10, 4), (12, 4), (5, 3)])
def test_distributed_sampler_drop_last(n, world):
    parts = ranks(n, world, drop_last=True, seed=1)
    per = n // world
    assert all(len(p) == per for p in parts)
    flat = [i for p in parts for i in p]
    assert len(set(flat)) == len(flat) == per * world           # disjoint, tail dropped
    assert len(DistributedSampler(range(n), num_replicas=world, rank=0, drop_last=True)) == per


def test_distributed_sampler_set_epoch_deterministic_for_all_ranks():
    n, world = 23, 4
    samplers = [DistributedSampler(range(n), num_replicas=world, rank=r, shuffle=True, seed=7)
                for r in range(world)]

    def epoch(e):
        for s in samplers:
            s.set_epoch(e)
        return [list(s) for s in samplers]

    e0, e1 = epoch(0), epoch(1)
    assert e0 != e1
    assert epoch(0) == e0 and epoch(1) == e1                    # reproducible
    for parts, e in ((e0, 0), (e1, 1)):
        # all ranks slice one shared permutation drawn from seed + epoch
        perm = tp.randperm(n, generator=tp.Generator().manual_seed(7 + e)).tolist()
        total = samplers[0].total_size
        padded = (perm + perm)[:total]
        assert parts == [padded[r:total:world] for r in range(world)]
    # another sampler object (another process) with the same settings agrees
    other = DistributedSampler(range(n), num_replicas=world, rank=2, seed=7)
    other.set_epoch(1)
    assert list(other) == e1[2]
    # a different seed gives a different order
    assert ranks(n, world, seed=8) != ranks(n, world, seed=7)


def test_distributed_sampler_requires_explicit_world_without_process_group():
    with pytest.raises(RuntimeError, match="num_replicas"):
        DistributedSampler(range(4))
    with pytest.raises(RuntimeError, match="rank"):
        DistributedSampler(range(4), num_replicas=2)


def test_distributed_sampler_invalid_rank():
    with pytest.raises(ValueError, match=r"Invalid rank 2, rank should be in the interval \[0, 1\]"):
        DistributedSampler(range(4), num_replicas=2, rank=2)
    with pytest.raises(ValueError, match="Invalid rank -1"):
        DistributedSampler(range(4), num_replicas=2, rank=-1)
    with pytest.raises(ValueError, match="num_replicas"):
        DistributedSampler(range(4), num_replicas=0, rank=0)


def test_distributed_sampler_with_dataloader():
    from tensorplug.utils.data import DataLoader
    ds = list(range(10))
    seen = []
    for r in range(2):
        s = DistributedSampler(ds, num_replicas=2, rank=r, shuffle=False)
        seen += [b.tolist() for b in DataLoader(ds, batch_size=2, sampler=s)]
    assert seen == [[0, 2], [4, 6], [8], [1, 3], [5, 7], [9]]
