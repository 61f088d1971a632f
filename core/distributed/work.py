"""Work: the handle of an asynchronous operation (isend, irecv, or a collective with async_op=True)."""
from __future__ import annotations

__all__ = ["Work"]


class Work:
    """`wait()` blocks until the operation is complete (the tensors then hold the result);
    `is_completed()` polls without blocking. For irecv, `source_rank()` is the sender's rank."""
    __slots__ = ("_req", "_post", "_group", "_done", "_result")

    def __init__(self, req, post=None, group=None, result=None):
        self._req = req            # the backend's request (wait / is_completed)
        self._post = post          # run once after completion (e.g. ReduceOp.AVG's division)
        self._group = group
        self._done = False
        self._result = result      # the tensors the operation writes (what result() / the future give)

    def _finish(self):
        self._done = True
        post, self._post = self._post, None
        if post is not None:
            post()

    def wait(self, timeout=None) -> bool:
        """Block until the operation is complete. `timeout` (a timedelta or seconds; default: the
        group's timeout) bounds the wait: past it, or when a process of the group has failed,
        DistBackendError names the operation and the group."""
        if not self._done:
            if timeout is None:
                self._req.wait()
            else:
                self._req.wait(timeout=timeout.total_seconds() if hasattr(timeout, "total_seconds")
                               else float(timeout))
            self._finish()
        return True

    def result(self) -> list:
        """The tensors the operation wrote (after waiting for it), as PyTorch's Work.result()."""
        self.wait()
        return [] if self._result is None else list(self._result)

    def get_future(self):
        """A tensorplug.futures.Future completing with `result()` once the operation is done."""
        from ..futures import Future
        return Future._of_work(self, [] if self._result is None else list(self._result))

    def is_completed(self) -> bool:
        if not self._done and self._req.is_completed():
            self._finish()
        return self._done

    def is_success(self) -> bool:
        return self._done

    def exception(self):
        return None

    def source_rank(self) -> int:
        """The global rank that sent the data of a completed irecv."""
        self.wait()
        src = getattr(self._req, "source", None)
        if src is None:
            raise RuntimeError("source_rank() is only available for a completed irecv")
        return self._group.global_rank(src) if self._group is not None else src

    def __repr__(self):
        return f"<Work {'completed' if self._done else 'pending'}>"
