"""DataLoader: batching, sampling options, collation, and real worker processes (ordering, seeding,
errors with the worker's traceback, time-outs, clean shutdown, persistent workers)."""
import multiprocessing
import os
import random
import time

import numpy as np
import pytest

import tensorplug as tp
from tensorplug.utils.data import (BatchSampler, DataLoader, Dataset, IterableDataset, SequentialSampler,
                                   TensorDataset, get_worker_info)

MP = pytest.mark.timeout(60)


# -- data sets (module level, so that they also work with the spawn start method) ------------------------
class Range(Dataset):
    def __init__(self, n):
        self.n = n

    def __getitem__(self, i):
        return {"i": i, "x": np.full(3, i, dtype=np.float32), "pair": (i, float(i) / 2)}

    def __len__(self):
        return self.n


class FailsAt(Dataset):
    def __init__(self, n, bad):
        self.n, self.bad = n, bad

    def _explode_here(self, i):
        raise ValueError(f"sample {i} is broken on purpose")

    def __getitem__(self, i):
        if i == self.bad:
            self._explode_here(i)
        return i

    def __len__(self):
        return self.n


class WhoAmI(Dataset):
    """Each sample: (index, worker id, worker seed, what worker_init_fn stored, pid, draws)."""

    def __init__(self, n):
        self.n = n

    def __getitem__(self, i):
        info = get_worker_info()
        return (i, -1 if info is None else info.id, -1 if info is None else info.seed, _INIT[0], os.getpid(),
                tp.initial_seed(), random.random())

    def __len__(self):
        return self.n


class Slow(Dataset):
    def __init__(self, seconds):
        self.seconds = seconds

    def __getitem__(self, i):
        time.sleep(self.seconds)
        return i

    def __len__(self):
        return 4


class Dies(Dataset):
    def __getitem__(self, i):
        os._exit(3)

    def __len__(self):
        return 4


class Unpicklable(Dataset):
    def __getitem__(self, i):
        return lambda: i

    def __len__(self):
        return 2


class Sharded(IterableDataset):
    """Splits range(n) between the workers with get_worker_info()."""

    def __init__(self, n):
        self.n = n

    def __iter__(self):
        info = get_worker_info()
        if info is None:
            return iter(range(self.n))
        return iter(range(info.id, self.n, info.num_workers))

    def __len__(self):
        return self.n


_INIT = [None]


def record_init(worker_id):
    _INIT[0] = ("init", worker_id)


def _children():
    """Live child processes of this process, from /proc (multiprocessing-independent)."""
    me, found = os.getpid(), set()
    if not os.path.isdir("/proc"):
        return {p.pid for p in multiprocessing.active_children()}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as fh:
                stat = fh.read()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == me and fields[0] != "Z":
            found.add(int(name))
    return found


def assert_no_new_children(before, wait=5.0):
    deadline = time.monotonic() + wait
    while True:
        multiprocessing.active_children()         # reaps finished children
        left = _children() - before
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert not left, f"worker processes left behind: {left}"


def values(loader):
    out = []
    for b in loader:
        out.append(b)
    return out


def as_lists(batches):
    def conv(x):
        if isinstance(x, tp.Tensor):
            return x.tolist()
        if isinstance(x, dict):
            return {k: conv(v) for k, v in x.items()}
        if isinstance(x, (list, tuple)):
            return [conv(v) for v in x]
        return x
    return [conv(b) for b in batches]


# -- single process ---------------------------------------------------------------------------------------
def test_batches_in_order():
    x = tp.arange(20).reshape(10, 2)
    y = tp.arange(10)
    loader = DataLoader(TensorDataset(x, y), batch_size=4)
    batches = list(loader)
    assert len(loader) == 3 and len(batches) == 3
    assert [b[1].tolist() for b in batches] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert batches[0][0].shape == (4, 2) and batches[2][0].tolist() == [[16, 17], [18, 19]]


def test_drop_last():
    loader = DataLoader(list(range(10)), batch_size=4, drop_last=True)
    assert len(loader) == 2
    assert [b.tolist() for b in loader] == [[0, 1, 2, 3], [4, 5, 6, 7]]


def test_batch_size_none_converts_samples():
    loader = DataLoader(Range(3), batch_size=None)
    items = list(loader)
    assert len(items) == 3 and len(loader) == 3
    assert items[1]["i"] == 1 and items[1]["x"].tolist() == [1.0, 1.0, 1.0]
    with pytest.raises(ValueError, match="mutually exclusive with drop_last"):
        DataLoader(Range(3), batch_size=None, drop_last=True)


def test_dict_tuple_nested_collate():
    (b,) = list(DataLoader(Range(3), batch_size=3))
    assert b["i"].tolist() == [0, 1, 2]
    assert b["x"].shape == (3, 3) and b["x"].dtype == tp.float32
    assert b["pair"][0].tolist() == [0, 1, 2] and b["pair"][1].tolist() == [0.0, 0.5, 1.0]


def test_collate_fn_and_batch_sampler():
    loader = DataLoader(list(range(7)), batch_sampler=BatchSampler(SequentialSampler(range(7)), 3, False),
                        collate_fn=lambda batch: sum(batch))
    assert list(loader) == [3, 12, 6] and len(loader) == 3
    with pytest.raises(ValueError, match="mutually exclusive"):
        DataLoader(list(range(7)), batch_size=2, batch_sampler=[[0, 1]])
    with pytest.raises(ValueError, match="mutually exclusive with shuffle"):
        DataLoader(list(range(7)), shuffle=True, sampler=SequentialSampler(range(7)))


def test_shuffle_with_generator():
    def order(seed):
        return [i for b in DataLoader(list(range(20)), batch_size=5, shuffle=True,
                                      generator=tp.Generator().manual_seed(seed)) for i in b.tolist()]
    a = order(0)
    assert a == order(0) and a != order(1) and sorted(a) == list(range(20))


def test_option_validation():
    with pytest.raises(ValueError, match="num_workers"):
        DataLoader([1], num_workers=-1)
    with pytest.raises(ValueError, match="prefetch_factor"):
        DataLoader([1], prefetch_factor=2)
    with pytest.raises(ValueError, match="persistent_workers"):
        DataLoader([1], persistent_workers=True)
    with pytest.raises(ValueError, match="timeout"):
        DataLoader([1], timeout=-1)
    with pytest.raises(ValueError, match="shuffle"):
        DataLoader(Sharded(3), shuffle=True)
    loader = DataLoader([1, 2], batch_size=2, pin_memory=True)     # accepted, a no-op on the host
    assert [b.tolist() for b in loader] == [[1, 2]]
    with pytest.raises(ValueError, match="should not be set after"):
        loader.batch_size = 3


def test_iterable_dataset_single_process():
    loader = DataLoader(Sharded(7), batch_size=3)
    assert [b.tolist() for b in loader] == [[0, 1, 2], [3, 4, 5], [6]] and len(loader) == 3
    assert [b.tolist() for b in DataLoader(Sharded(7), batch_size=3, drop_last=True)] == [[0, 1, 2], [3, 4, 5]]


# -- worker processes -------------------------------------------------------------------------------------
@MP
@pytest.mark.parametrize("batch_size,drop_last", [(4, False), (3, True), (None, False)])
def test_workers_match_single_process(batch_size, drop_last):
    single = as_lists(DataLoader(Range(11), batch_size=batch_size, drop_last=drop_last))
    multi = as_lists(DataLoader(Range(11), batch_size=batch_size, drop_last=drop_last, num_workers=2, timeout=20))
    assert multi == single


@MP
def test_workers_shuffle_matches_single_process():
    def run(workers):
        return [b.tolist() for b in DataLoader(list(range(30)), batch_size=4, shuffle=True, num_workers=workers,
                                               generator=tp.Generator().manual_seed(9))]
    assert run(2) == run(0)


@MP
def test_workers_in_order_false_returns_everything():
    got = [b.tolist() for b in DataLoader(list(range(20)), batch_size=2, num_workers=2, in_order=False,
                                          timeout=20)]
    assert sorted(i for b in got for i in b) == list(range(20))


@MP
def test_iterable_dataset_with_workers():
    loader = DataLoader(Sharded(10), batch_size=2, num_workers=2, timeout=20)
    got = [b.tolist() for b in loader]
    assert sorted(i for b in got for i in b) == list(range(10))
    # round robin between the workers: worker 0 holds the evens, worker 1 the odds
    assert got[0] == [0, 2] and got[1] == [1, 3]


@MP
def test_worker_seeds_and_init_fn():
    before = _children()
    loader = DataLoader(WhoAmI(8), batch_size=None, num_workers=2, worker_init_fn=record_init, timeout=20,
                        generator=tp.Generator().manual_seed(123))
    rows = list(loader)
    assert [r[0] for r in rows] == list(range(8))
    workers = {r[1] for r in rows}
    assert workers == {0, 1}
    base = {r[2] - r[1] for r in rows}
    assert len(base) == 1                                          # seed = base_seed + worker_id
    for _, wid, seed, init, pid, tp_seed, _r in rows:
        assert list(init) == ["init", wid]                             # worker_init_fn ran in that worker
        assert tp_seed == seed                                      # tensorplug.manual_seed(seed) there
        assert pid != os.getpid()
    assert len({r[4] for r in rows}) == 2
    assert _INIT[0] is None                                         # not in the main process
    # the same loader generator seed gives the same worker seeds and random draws
    again = list(DataLoader(WhoAmI(8), batch_size=None, num_workers=2, worker_init_fn=record_init, timeout=20,
                            generator=tp.Generator().manual_seed(123)))
    assert [r[2] for r in again] == [r[2] for r in rows] and [r[6] for r in again] == [r[6] for r in rows]
    assert rows[0][6] != rows[1][6]                                 # workers draw different numbers
    assert_no_new_children(before)


@MP
def test_worker_exception_reraised_with_traceback():
    before = _children()
    loader = DataLoader(FailsAt(10, bad=5), batch_size=2, num_workers=2, timeout=20)
    seen = []
    with pytest.raises(ValueError) as exc:
        for b in loader:
            seen.append(b.tolist())
    msg = str(exc.value)
    assert seen == [[0, 1], [2, 3]]                                 # results before the bad batch arrive
    assert "Caught ValueError in DataLoader worker process 0" in msg
    assert "Traceback (most recent call last)" in msg
    assert "_explode_here" in msg and "sample 5 is broken on purpose" in msg
    assert_no_new_children(before)


@MP
def test_worker_init_fn_exception_is_reraised():
    def bad_init(worker_id):
        raise KeyError("no such thing")
    with pytest.raises(KeyError, match="no such thing"):
        list(DataLoader(list(range(4)), num_workers=2, worker_init_fn=bad_init, timeout=20))


@MP
def test_unpicklable_result_is_reported():
    with pytest.raises(Exception, match="while sending its result"):
        list(DataLoader(Unpicklable(), batch_size=None, num_workers=1, timeout=20))


@MP
def test_no_orphans_after_early_break():
    before = _children()
    loader = DataLoader(list(range(1000)), batch_size=2, num_workers=2, timeout=20)
    for b in loader:
        assert b.tolist() == [0, 1]
        assert len(_children() - before) == 2                       # the workers are real processes
        break
    assert_no_new_children(before)
    it = iter(loader)
    next(it)
    del it
    assert_no_new_children(before)


@MP
def test_timeout():
    before = _children()
    start = time.monotonic()
    with pytest.raises(RuntimeError, match=r"DataLoader timed out after 0.3 seconds"):
        list(DataLoader(Slow(10.0), num_workers=1, timeout=0.3))
    assert time.monotonic() - start < 8.0
    assert_no_new_children(before)


@MP
def test_dead_worker_is_detected():
    before = _children()
    with pytest.raises(RuntimeError, match="exited unexpectedly"):
        list(DataLoader(Dies(), num_workers=2, timeout=20))
    assert_no_new_children(before)


@MP
def test_persistent_workers_reused_across_epochs():
    before = _children()
    loader = DataLoader(WhoAmI(6), batch_size=2, num_workers=2, persistent_workers=True, timeout=20,
                        worker_init_fn=record_init)
    e1 = [b for b in loader]
    e2 = [b for b in loader]
    pids1 = {p for b in e1 for p in b[4].tolist()}
    pids2 = {p for b in e2 for p in b[4].tolist()}
    assert len(pids1) == 2 and pids1 == pids2                       # the same worker processes
    assert [b[0].tolist() for b in e2] == [[0, 1], [2, 3], [4, 5]]
    # an epoch cut short: the next one starts clean (results still in flight are discarded)
    for b in loader:
        break
    assert [b[0].tolist() for b in loader] == [[0, 1], [2, 3], [4, 5]]
    assert len(_children() - before) == 2
    del loader, b
    assert_no_new_children(before)


@MP
def test_persistent_workers_with_iterable_dataset():
    loader = DataLoader(Sharded(6), batch_size=None, num_workers=2, persistent_workers=True, timeout=20)
    assert sorted(int(x) for x in loader) == list(range(6))
    assert sorted(int(x) for x in loader) == list(range(6))


@MP
def test_spawn_context():
    loader = DataLoader(Range(5), batch_size=2, num_workers=1, multiprocessing_context="spawn", timeout=60)
    assert as_lists(loader) == as_lists(DataLoader(Range(5), batch_size=2))
    with pytest.raises(ValueError, match="start method"):
        DataLoader(Range(5), num_workers=1, multiprocessing_context="no-such-method")


@MP
def test_iteration_can_continue_after_a_worker_exception():
    before = _children()
    it = iter(DataLoader(FailsAt(6, bad=2), batch_size=None, num_workers=2, timeout=20))
    got = [next(it), next(it)]
    with pytest.raises(ValueError, match="sample 2 is broken"):
        next(it)
    got += list(it)                                                 # like PyTorch: the bad item is skipped
    assert got == [0, 1, 3, 4, 5]
    del it
    assert_no_new_children(before)
