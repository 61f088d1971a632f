"""tensorplug.futures: `Future`, the result of an asynchronous operation (PyTorch's torch.futures).

    fut = Future()
    doubled = fut.then(lambda f: f.value() * 2)   # runs when fut completes
    fut.set_result(21)
    doubled.wait()                                 # 42

Communication runs only inside MPI calls, so a Future made from a `Work` (`Future._of_work`)
completes when someone waits on it (or on a Future chained from it with `then`); its callbacks run
then, in the waiting thread.
"""
from __future__ import annotations

import threading

__all__ = ["Future", "collect_all", "wait_all"]


class Future:
    """A value that will exist later. `set_result` / `set_exception` complete it once; `wait()`
    returns the value (raising the exception, if one was set); `then(cb)` returns a new Future
    holding `cb(this_future)`; `add_done_callback(cb)` runs `cb(this_future)` on completion."""

    def __init__(self, *, devices=None):
        self._lock = threading.Lock()
        self._done = False
        self._value = None
        self._error = None
        self._callbacks = []
        self._waiter = None        # completes this Future when called (a Work to wait on, a parent)

    @classmethod
    def _of_work(cls, work, value):
        """A Future that completes with `value` once `work` (a Work or a backend request) is done."""
        fut = cls()

        def finish():
            work.wait()
            fut.set_result(value)
        fut._waiter = finish
        return fut

    # -- completion ----------------------------------------------------------------------------------
    def done(self) -> bool:
        return self._done

    def set_result(self, result) -> None:
        self._complete(result, None)

    def set_exception(self, result) -> None:
        if not isinstance(result, BaseException):
            raise TypeError(f"set_exception needs an exception, got {type(result).__name__}")
        self._complete(None, result)

    def _complete(self, value, error):
        with self._lock:
            if self._done:
                raise RuntimeError("Future can only be marked completed once (it already holds a result)")
            self._done, self._value, self._error = True, value, error
            self._waiter = None
            callbacks, self._callbacks = self._callbacks, []
        for cb in callbacks:
            cb(self)

    # -- results -------------------------------------------------------------------------------------
    def wait(self):
        if not self._done:
            waiter = self._waiter
            if waiter is None:
                raise RuntimeError("Future.wait(): nothing will complete this Future (call set_result on it)")
            try:
                waiter()
            except Exception:
                if not self._done:       # a parent's failure already completed this one
                    raise
        return self.value()

    def value(self):
        """The result of a completed Future (raises its exception, if it failed)."""
        if not self._done:
            raise RuntimeError("Future.value() called on a Future that has not completed; call wait()")
        if self._error is not None:
            raise self._error
        return self._value

    def then(self, callback):
        child = Future()
        child._waiter = self.wait

        def run(parent):
            try:
                result = callback(parent)
            except Exception as e:  # noqa: BLE001 - carried by the child, raised by its wait()
                child.set_exception(e)
            else:
                child.set_result(result)
        self.add_done_callback(run)
        return child

    def add_done_callback(self, callback) -> None:
        with self._lock:
            if not self._done:
                self._callbacks.append(callback)
                return
        callback(self)

    def __repr__(self):
        return f"<Future {'completed' if self._done else 'pending'}>"


def collect_all(futures):
    """A Future holding the list of `futures` once every one of them has completed."""
    futures = list(futures)
    out = Future()

    def finish():
        for f in futures:
            if not f.done():
                try:
                    f.wait()
                except Exception:  # noqa: BLE001 - kept in f; the caller reads it with f.wait()
                    pass
        out.set_result(futures)
    out._waiter = finish
    return out


def wait_all(futures):
    """Wait for every Future; their values, in order (the first exception is raised)."""
    return [f.wait() for f in futures]
