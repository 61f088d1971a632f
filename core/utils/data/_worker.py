"""What runs inside a DataLoader worker process, and what both sides share.

Protocol (one index queue per worker, one data queue shared by all of them):
  main -> worker:  (epoch, idx, index)   fetch the sample/batch for `index` (a list with batching)
                   (epoch, None, _RESUME) a new epoch begins (persistent workers): restart the
                                          iterator of an IterableDataset
                   None                   exit
  worker -> main:  bytes of pickle((epoch, idx, result)), where result is the collated batch, an
                   ExceptionWrapper, or _IterableDatasetStopIteration(worker_id); the batch's large
                   tensors travel as handles to shared memory (tensorplug.multiprocessing)
Results are pickled by the worker itself, so an unpicklable sample becomes an error the main
process re-raises instead of a message lost in the queue's feeder thread.
"""
from __future__ import annotations

import os
import pickle
import queue
import random
import sys
import traceback
from dataclasses import dataclass

# how often a waiting worker checks that its parent is still alive, in seconds
MP_STATUS_CHECK_INTERVAL = 1.0

_worker_info = None


@dataclass(frozen=True)
class WorkerInfo:
    """What a worker process knows about itself (see `get_worker_info`)."""
    id: int
    num_workers: int
    seed: int
    dataset: object


def get_worker_info():
    """In a DataLoader worker process: its `WorkerInfo` (id, num_workers, seed, dataset — the
    worker's own copy). In the main process: None."""
    return _worker_info


class ExceptionWrapper:
    """An exception caught in a worker, with its formatted traceback, that can cross processes."""

    def __init__(self, exc_info=None, where="in background"):
        if exc_info is None:
            exc_info = sys.exc_info()
        self.exc_type = exc_info[0]
        self.exc_msg = "".join(traceback.format_exception(*exc_info))
        self.where = where

    def __reduce__(self):
        # exception classes defined in a test module or __main__ may not unpickle in the parent
        return (_rebuild_wrapper, (_type_ref(self.exc_type), self.exc_msg, self.where))

    def reraise(self):
        """Raise the worker's exception type (RuntimeError when it cannot be built from a message)
        with the worker's traceback in its message."""
        msg = f"Caught {self.exc_type.__name__} {self.where}.\nOriginal {self.exc_msg}"
        if self.exc_type is KeyError:
            msg = _KeyErrorMessage(msg)
        try:
            exception = self.exc_type(msg)
        except Exception:
            raise RuntimeError(msg) from None
        raise exception


class _KeyErrorMessage(str):
    """KeyError shows repr() of its argument; this keeps the traceback readable."""

    def __repr__(self):
        return self


def _type_ref(tp):
    return (tp.__module__, tp.__qualname__)


def _rebuild_wrapper(ref, msg, where):
    w = ExceptionWrapper.__new__(ExceptionWrapper)
    w.exc_type = _resolve_type(ref)
    w.exc_msg = msg
    w.where = where
    return w


def _resolve_type(ref):
    module, qualname = ref
    obj = sys.modules.get(module)
    try:
        for part in qualname.split("."):
            obj = getattr(obj, part)
    except AttributeError:
        obj = None
    if isinstance(obj, type) and issubclass(obj, BaseException):
        return obj
    return RuntimeError


class _IterableDatasetStopIteration:
    """A worker's IterableDataset is exhausted."""

    def __init__(self, worker_id):
        self.worker_id = worker_id


class _ResumeIteration:
    """A new epoch of persistent workers."""


_RESUME = _ResumeIteration()


# -- fetchers: index -> sample or batch --------------------------------------------------------------
class _MapDatasetFetcher:
    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.dataset, self.auto_collation, self.collate_fn = dataset, auto_collation, collate_fn
        self._getitems = getattr(dataset, "__getitems__", None) if auto_collation else None
        # default_collate over a data set that can build the collated batch itself in one go
        # (TensorDataset: one index_select per tensor instead of per-sample tensors + stack)
        from .collate import default_collate
        self._getitems_collated = (getattr(dataset, "_getitems_collated", None)
                                   if auto_collation and collate_fn is default_collate else None)

    def fetch(self, index):
        if self.auto_collation:
            if self._getitems_collated is not None:
                batch = self._getitems_collated(index)
                if batch is not NotImplemented:
                    return batch
            data = self._getitems(index) if self._getitems is not None else [self.dataset[i] for i in index]
        else:
            data = self.dataset[index]
        return self.collate_fn(data)


class _IterableDatasetFetcher:
    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.dataset, self.auto_collation, self.collate_fn = dataset, auto_collation, collate_fn
        self.drop_last = drop_last
        self.dataset_iter = iter(dataset)
        self.ended = False

    def fetch(self, index):
        if self.ended:
            raise StopIteration
        if self.auto_collation:
            data = []
            for _ in index:
                try:
                    data.append(next(self.dataset_iter))
                except StopIteration:
                    self.ended = True
                    break
            if not data or (self.drop_last and len(data) < len(index)):
                raise StopIteration
        else:
            data = next(self.dataset_iter)
        return self.collate_fn(data)


def make_fetcher(kind, dataset, auto_collation, collate_fn, drop_last):
    cls = _IterableDatasetFetcher if kind == "iterable" else _MapDatasetFetcher
    return cls(dataset, auto_collation, collate_fn, drop_last)


# -- the worker process ------------------------------------------------------------------------------
def _seed_worker(seed, worker_id):
    random.seed(seed)
    from ... import manual_seed
    manual_seed(seed)
    try:
        import numpy as np
        np.random.seed(np.random.SeedSequence([worker_id, seed % 2**64]).generate_state(4))
    except ImportError:       # pragma: no cover
        pass


# batches' tensors of at least this many bytes go to the main process through shared memory (one copy
# into a segment, a descriptor passed) instead of inside the pickle (copied into it, through the pipe
# and out again). Passing a descriptor costs a connection to the worker, so pickling wins below about
# a MiB (bench/dataloader.py: 0.4 MiB batches faster pickled, 3 MiB ones faster shared). None: always
# pickled; 0: always shared.
SHARED_MEMORY_MIN_BYTES = 2 << 20


class _BatchPickler(pickle.Pickler):
    """Pickles a result with its large CPU tensors as handles to shared memory."""

    def __init__(self, file, min_bytes):
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self.min_bytes = min_bytes
        from ...multiprocessing.reductions import reduce_tensor
        from ...tensor import Tensor
        self._reduce, self._tensor = reduce_tensor, Tensor

    def reducer_override(self, obj):
        if type(obj) is self._tensor and obj._dev.type == "cpu" and obj.grad_fn is None \
                and obj._data.nbytes >= self.min_bytes:
            return self._reduce(obj)
        return NotImplemented


def _dumps(obj, min_bytes):
    if min_bytes is None:
        return pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    import io
    f = io.BytesIO()
    _BatchPickler(f, min_bytes).dump(obj)
    return f.getvalue()


def _worker_loop(kind, dataset, index_queue, data_queue, done_event, auto_collation, collate_fn,
                 drop_last, base_seed, init_fn, worker_id, num_workers, share_min_bytes=None):
    global _worker_info
    import signal
    try:
        # Ctrl-C goes to the main process, which shuts the workers down
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    except (ValueError, OSError):    # pragma: no cover
        pass
    parent = os.getppid()
    seed = (base_seed + worker_id) % 2**64
    _seed_worker(seed, worker_id)
    _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed, dataset=dataset)

    where = f"in DataLoader worker process {worker_id}"
    init_exception = None
    fetcher = None
    try:
        if init_fn is not None:
            init_fn(worker_id)
        fetcher = make_fetcher(kind, dataset, auto_collation, collate_fn, drop_last)
    except Exception:
        init_exception = ExceptionWrapper(where=where)

    def send(epoch, idx, result):
        try:
            payload = _dumps((epoch, idx, result), share_min_bytes)
        except Exception:
            payload = pickle.dumps((epoch, idx, ExceptionWrapper(
                where=f"{where} while sending its result to the main process")),
                protocol=pickle.HIGHEST_PROTOCOL)
        data_queue.put(payload)

    exhausted = False
    try:
        while True:
            try:
                msg = index_queue.get(timeout=MP_STATUS_CHECK_INTERVAL)
            except queue.Empty:
                if os.getppid() != parent:           # the main process died: nobody will read results
                    break
                continue
            if msg is None:
                break
            if done_event.is_set():
                continue                             # shutting down: drain without working
            epoch, idx, index = msg
            if index is _RESUME or isinstance(index, _ResumeIteration):
                exhausted = False
                if init_exception is None:
                    try:
                        fetcher = make_fetcher(kind, dataset, auto_collation, collate_fn, drop_last)
                    except Exception:
                        init_exception = ExceptionWrapper(where=where)
                continue
            if init_exception is not None:
                result = init_exception               # every task of this worker reports it
            elif exhausted or fetcher is None:
                result = _IterableDatasetStopIteration(worker_id)
            else:
                try:
                    result = fetcher.fetch(index)
                except StopIteration:
                    if kind == "iterable":
                        exhausted = True
                        result = _IterableDatasetStopIteration(worker_id)
                    else:
                        result = ExceptionWrapper(where=where)
                except Exception:
                    result = ExceptionWrapper(where=where)
            send(epoch, idx, result)
            del result
    except KeyboardInterrupt:     # pragma: no cover
        pass
    if done_event.is_set() or os.getppid() != parent:
        # nobody reads the rest: exiting must not wait for the queue's feeder thread to flush
        data_queue.cancel_join_thread()
        data_queue.close()
