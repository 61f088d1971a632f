"""record_function: a named range in the profile, around a block (`with`) or a function (decorator).
The same class is torch.profiler.record_function and torch.autograd.profiler.record_function.
Outside a profile it records nothing."""
from __future__ import annotations

import functools

from . import _state


class record_function:
    """`with record_function("name"):` — the ops inside nest under a "name" row; its CPU total is
    the block's time. `args` (a string) is kept as in PyTorch and shown in the Chrome trace."""

    def __init__(self, name: str, args: str | None = None):
        self.name = name
        self.args = args
        self.run_callbacks_on_exit = True
        self._event = None
        self._session = None

    def __enter__(self):
        s = _state.current()
        if s is not None:
            self._session = s
            self._event = s.open(self.name, annotation=True)
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        if self.run_callbacks_on_exit:
            self._close()
        return False

    def _close(self):
        ev, s = self._event, self._session
        self._event = self._session = None
        if ev is not None and _state.current() is s:     # a profile that ended in between keeps no range
            s.close(ev)

    def _call_end_callbacks_on_future(self, fut):
        """Close the range when `fut` completes (PyTorch's async form); returns fut."""
        self.run_callbacks_on_exit = False
        if hasattr(fut, "add_done_callback"):
            fut.add_done_callback(lambda _f: self._close())
        else:
            self._close()
        return fut

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapped(*args, **kwargs):
            with type(self)(self.name, self.args):      # a fresh range per call (recursion, threads)
                return fn(*args, **kwargs)
        return wrapped
