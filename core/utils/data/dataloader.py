"""DataLoader: iterate a data set in (shuffled, collated) batches, in this process or in worker
processes.

    loader = DataLoader(ds, batch_size=32, shuffle=True, num_workers=2)
    for x, y in loader: ...

With `num_workers > 0` each worker is a real process (the 'fork' start method where the platform
has a safe one, else 'spawn'; pass `multiprocessing_context` to choose). The main process hands
out indices round robin (at most `prefetch_factor` tasks per worker in flight) and yields results
in sampler order (`in_order=False`: as they arrive). Worker `i` seeds Python's `random`, NumPy's
global generator and tensorplug (`tensorplug.manual_seed`) with `base_seed + i`, where
`base_seed` is drawn from `generator` (or tensorplug's default generator) for every iterator, then
calls `worker_init_fn(i)`. A worker's exception is re-raised in the main process with the
worker's traceback in its message. Workers are shut down (asked to exit, joined, terminated if
they do not) when the iterator is garbage collected, at the end of an epoch (unless
`persistent_workers`), after a time-out or a dead worker, and at interpreter exit.
"""
from __future__ import annotations

import itertools
import multiprocessing
import pickle
import queue
import sys
import threading
import time
import weakref

from . import _worker
from ._worker import ExceptionWrapper, _IterableDatasetStopIteration, make_fetcher
from .collate import default_collate, default_convert
from .dataset import IterableDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

__all__ = ["DataLoader", "get_worker_info", "default_collate", "default_convert"]

get_worker_info = _worker.get_worker_info

# how long the main process waits on the data queue before checking that the workers are alive
_POLL_INTERVAL = 0.5
# how long a shut-down waits for workers to exit on their own before terminating them
_JOIN_TIMEOUT = 5.0


class _DatasetKind:
    Map = "map"
    Iterable = "iterable"


class _InfiniteConstantSampler(Sampler):
    """The sampler of an IterableDataset: the data set decides when the stream ends."""

    def __iter__(self):
        while True:
            yield None


def _default_context():
    methods = multiprocessing.get_all_start_methods()
    # fork is fast and needs nothing picklable; macOS's system libraries are not fork-safe
    if "fork" in methods and sys.platform != "darwin":
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("spawn")


def _draw_seed(generator) -> int:
    from ...ops.random import randint
    return int(randint(0, 2**63 - 1, (), generator=generator).item())


class DataLoader:
    """Batches of `dataset` (see the module docstring).

    batch_size: samples per batch (None: no batching, samples are converted one by one);
    shuffle: a RandomSampler drawing with `generator`; sampler / batch_sampler: custom index
    order (batch_sampler excludes batch_size, shuffle, sampler and drop_last); drop_last: drop the
    last incomplete batch; collate_fn: list of samples -> batch (default_collate);
    num_workers: worker processes (0: load in this process); timeout: seconds to wait for a
    worker's result before RuntimeError (0: forever); worker_init_fn(worker_id): called in each
    worker after seeding; prefetch_factor: tasks in flight per worker (default 2);
    persistent_workers: keep the workers across epochs; pin_memory: accepted, a no-op (tensorplug
    has no pinned host memory); in_order: False yields batches as workers finish them."""

    __initialized = False

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None, num_workers=0,
                 collate_fn=None, pin_memory=False, drop_last=False, timeout=0, worker_init_fn=None,
                 multiprocessing_context=None, generator=None, *, prefetch_factor=None,
                 persistent_workers=False, pin_memory_device="", in_order=True):
        if not isinstance(num_workers, int) or isinstance(num_workers, bool) or num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable "
                             "multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing. Let "
                             "num_workers > 0 to enable multiprocessing, otherwise set prefetch_factor to None.")
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        if prefetch_factor is not None and (not isinstance(prefetch_factor, int) or prefetch_factor < 1):
            raise ValueError(f"prefetch_factor should be a positive integer, got {prefetch_factor!r}")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")

        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.in_order = in_order

        if isinstance(dataset, IterableDataset):
            self._dataset_kind = _DatasetKind.Iterable
            if shuffle not in (False, None):
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified shuffle option, "
                                 f"but got shuffle={shuffle}")
            if sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified sampler option, "
                                 f"but got sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified batch_sampler option, "
                                 f"but got batch_sampler={batch_sampler}")
        else:
            shuffle = bool(shuffle)
            self._dataset_kind = _DatasetKind.Map

        if shuffle and sampler is not None:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, "
                                 "and drop_last")
            batch_size = None
            drop_last = False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with "
                             "drop_last")

        if sampler is None:
            if self._dataset_kind == _DatasetKind.Iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self.persistent_workers = persistent_workers
        self._iterator = None
        self.__initialized = True

    # -- configuration -------------------------------------------------------------------------------
    @property
    def multiprocessing_context(self):
        return self.__multiprocessing_context

    @multiprocessing_context.setter
    def multiprocessing_context(self, ctx):
        if ctx is not None and self.num_workers > 0:
            if isinstance(ctx, str):
                if ctx not in multiprocessing.get_all_start_methods():
                    raise ValueError(f"multiprocessing_context option should specify a valid start method in "
                                     f"{multiprocessing.get_all_start_methods()!r}, but got "
                                     f"multiprocessing_context={ctx!r}")
                ctx = multiprocessing.get_context(ctx)
            elif not hasattr(ctx, "Process") or not hasattr(ctx, "Queue"):
                raise TypeError(f"multiprocessing_context option should be a valid context object or a string "
                                f"specifying the start method, but got multiprocessing_context={ctx!r}")
        elif ctx is not None:
            raise ValueError(f"multiprocessing_context can only be used with multi-process loading "
                             f"(num_workers > 0), but got num_workers={self.num_workers}")
        self.__multiprocessing_context = ctx

    def _mp_context(self):
        return self.multiprocessing_context or _default_context()

    def __setattr__(self, attr, val):
        if self.__initialized and attr in ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset",
                                           "persistent_workers"):
            raise ValueError(f"{attr} attribute should not be set after {type(self).__name__} is initialized")
        super().__setattr__(attr, val)

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    # -- iteration -------------------------------------------------------------------------------------
    def _get_iterator(self):
        if self.num_workers == 0:
            return _SingleProcessDataLoaderIter(self)
        return _MultiProcessingDataLoaderIter(self)

    def __iter__(self):
        if self.persistent_workers and self.num_workers > 0:
            it = self._iterator
            if it is None or it._pool.closed:
                self._iterator = self._get_iterator()
            else:
                it._reset(self)
            return self._iterator
        return self._get_iterator()

    def __len__(self):
        if self._dataset_kind == _DatasetKind.Iterable:
            length = len(self.dataset)
            if self.batch_size is not None:
                length = length // self.batch_size if self.drop_last else -(-length // self.batch_size)
            return length
        return len(self._index_sampler)


class _BaseDataLoaderIter:
    def __init__(self, loader):
        self._dataset = loader.dataset
        self._dataset_kind = loader._dataset_kind
        self._auto_collation = loader._auto_collation
        self._drop_last = loader.drop_last
        self._index_sampler = loader._index_sampler
        self._num_workers = loader.num_workers
        self._timeout = loader.timeout
        self._collate_fn = loader.collate_fn
        self._sampler_iter = iter(self._index_sampler)
        self._base_seed = _draw_seed(loader.generator)
        self._persistent_workers = loader.persistent_workers
        self._num_yielded = 0

    def __iter__(self):
        return self

    def _reset(self, loader, first_iter=False):
        self._sampler_iter = iter(self._index_sampler)
        self._num_yielded = 0

    def _next_index(self):
        return next(self._sampler_iter)

    def _next_data(self):
        raise NotImplementedError

    def __next__(self):
        try:
            data = self._next_data()
        except _WorkerFailure as e:
            wrapper = e.wrapper
        else:
            self._num_yielded += 1
            return data
        # re-raised outside the frames that hold the iterator, so that the exception's traceback
        # does not keep the iterator (and its worker processes) alive
        del self
        wrapper.reraise()

    def __len__(self):
        return len(self._index_sampler)

    def __getstate__(self):
        raise TypeError(f"{type(self).__name__} cannot be pickled")


class _WorkerFailure(Exception):
    """Carries a worker's ExceptionWrapper out of _next_data (see __next__)."""

    def __init__(self, wrapper):
        super().__init__()
        self.wrapper = wrapper


class _SingleProcessDataLoaderIter(_BaseDataLoaderIter):
    def __init__(self, loader):
        super().__init__(loader)
        self._pool = _WorkerPool()
        self._fetcher = make_fetcher(self._dataset_kind, self._dataset, self._auto_collation, self._collate_fn,
                                     self._drop_last)

    def _next_data(self):
        index = self._next_index()       # StopIteration ends the epoch
        return self._fetcher.fetch(index)


class _WorkerPool:
    """What shutting the workers down needs; the finalizer holds this, never the iterator."""

    def __init__(self):
        self.workers = []
        self.index_queues = []
        self.data_queue = None
        self.done_event = None
        self.closed = False
        self.lock = threading.Lock()


def _shutdown_pool(pool, join_timeout=_JOIN_TIMEOUT):
    """Ask every worker to exit, wait up to `join_timeout` seconds, then terminate (and kill)
    the ones still running; close the queues. Safe to call more than once."""
    with pool.lock:
        if pool.closed:
            return
        pool.closed = True
    try:
        if pool.done_event is not None:
            pool.done_event.set()
        for q in pool.index_queues:
            try:
                q.put(None)
            except Exception:     # pragma: no cover - closed at interpreter exit
                pass
        deadline = time.monotonic() + join_timeout
        for w in pool.workers:
            if w.pid is not None:
                w.join(timeout=max(0.0, deadline - time.monotonic()))
        for w in pool.workers:
            if w.pid is not None and w.is_alive():
                w.terminate()
                w.join(timeout=2.0)
                if w.is_alive():          # pragma: no cover
                    w.kill()
                    w.join(timeout=2.0)
    finally:
        for q in [*pool.index_queues, pool.data_queue]:
            if q is not None:
                try:
                    q.cancel_join_thread()
                    q.close()
                except Exception:     # pragma: no cover
                    pass


class _MultiProcessingDataLoaderIter(_BaseDataLoaderIter):
    def __init__(self, loader):
        super().__init__(loader)
        self._prefetch_factor = loader.prefetch_factor
        self._in_order = loader.in_order
        ctx = loader._mp_context()
        pool = self._pool = _WorkerPool()
        # registered first, so that a failure half-way through starting still cleans up
        self._finalizer = weakref.finalize(self, _shutdown_pool, pool)
        pool.data_queue = ctx.Queue()
        pool.done_event = ctx.Event()
        for i in range(self._num_workers):
            iq = ctx.Queue()
            iq.cancel_join_thread()
            w = ctx.Process(target=_worker._worker_loop,
                            args=(self._dataset_kind, self._dataset, iq, pool.data_queue, pool.done_event,
                                  self._auto_collation, self._collate_fn, self._drop_last, self._base_seed,
                                  loader.worker_init_fn, i, self._num_workers, _worker.SHARED_MEMORY_MIN_BYTES),
                            daemon=True, name=f"DataLoaderWorker-{i}")
            pool.index_queues.append(iq)
            pool.workers.append(w)
            w.start()
        self._epoch = 0
        self._reset(loader, first_iter=True)

    def _reset(self, loader, first_iter=False):
        super()._reset(loader, first_iter)
        self._send_idx = 0
        self._rcvd_idx = 0
        self._task_info = {}            # idx -> (worker_id,) while in flight, (worker_id, data) when early
        self._tasks_outstanding = 0
        self._workers_status = [True] * self._num_workers
        self._worker_cycle = itertools.cycle(range(self._num_workers))
        if not first_iter:
            # persistent workers: results still in flight from the previous epoch are dropped by tag
            self._epoch += 1
            for q in self._pool.index_queues:
                q.put((self._epoch, None, _worker._RESUME))
        for _ in range(self._prefetch_factor * self._num_workers):
            self._try_put_index()

    def _try_put_index(self):
        if self._tasks_outstanding >= self._prefetch_factor * self._num_workers:
            return
        for _ in range(self._num_workers):
            wid = next(self._worker_cycle)
            if self._workers_status[wid]:
                break
        else:
            return                       # every worker's IterableDataset is exhausted
        try:
            index = self._next_index()
        except StopIteration:
            return
        self._pool.index_queues[wid].put((self._epoch, self._send_idx, index))
        self._task_info[self._send_idx] = (wid,)
        self._tasks_outstanding += 1
        self._send_idx += 1

    def _shutdown_workers(self, join_timeout=_JOIN_TIMEOUT):
        if not self._pool.closed:
            self._finalizer.detach()
            _shutdown_pool(self._pool, join_timeout)

    def _fail(self, message):
        self._shutdown_workers(join_timeout=0.5)
        raise RuntimeError(message)

    def _get_data(self):
        """The next (idx, result) of this epoch from the data queue."""
        deadline = time.monotonic() + self._timeout if self._timeout > 0 else None
        while True:
            wait = _POLL_INTERVAL if deadline is None else \
                max(0.0, min(_POLL_INTERVAL, deadline - time.monotonic()))
            error = payload = None
            try:
                payload = self._pool.data_queue.get(timeout=wait)
            except queue.Empty:
                dead = [w for w in self._pool.workers if not w.is_alive()]
                if dead:
                    pids = ", ".join(str(w.pid) for w in dead)
                    codes = ", ".join(str(w.exitcode) for w in dead)
                    error = f"DataLoader worker (pid(s) {pids}) exited unexpectedly (exit code(s) {codes})"
                elif deadline is not None and time.monotonic() >= deadline:
                    error = f"DataLoader timed out after {self._timeout} seconds"
            except (OSError, EOFError, ValueError) as e:
                error = f"DataLoader lost its connection to the worker processes: {e}"
            if error is not None:
                self._fail(error)
            if payload is None:
                continue
            try:
                epoch, idx, data = pickle.loads(payload)
            except Exception as e:
                error = f"DataLoader could not unpickle a result sent by a worker process: {type(e).__name__}: {e}"
            if error is not None:
                self._fail(error)
            if epoch == self._epoch:
                return idx, data

    def _next_data(self):
        if self._pool.closed:
            raise RuntimeError("this DataLoader iterator's workers were shut down after an error; "
                               "start a new iteration")
        while True:
            # skip the tasks of workers whose IterableDataset is exhausted
            while self._rcvd_idx < self._send_idx:
                info = self._task_info.get(self._rcvd_idx)
                if info is not None and (len(info) == 2 or self._workers_status[info[0]]):
                    break
                self._task_info.pop(self._rcvd_idx, None)
                self._rcvd_idx += 1
            else:
                if not self._persistent_workers:
                    self._shutdown_workers()
                raise StopIteration
            info = self._task_info[self._rcvd_idx]
            if len(info) == 2:
                del self._task_info[self._rcvd_idx]
                self._rcvd_idx += 1
                return self._process_data(info[1])
            idx, data = self._get_data()
            self._tasks_outstanding -= 1
            if isinstance(data, _IterableDatasetStopIteration):
                self._workers_status[data.worker_id] = False
                self._try_put_index()
                continue
            if idx == self._rcvd_idx or not self._in_order:
                del self._task_info[idx]
                if idx == self._rcvd_idx:
                    self._rcvd_idx += 1
                return self._process_data(data)
            self._task_info[idx] += (data,)

    def _process_data(self, data):
        self._try_put_index()
        if isinstance(data, ExceptionWrapper):
            raise _WorkerFailure(data)
        return data
