"""The one piece of the compiler that ops import: whether a capture is running on this thread, and
the `opaque` marker for frontend helpers that read array values (kept apart so that `import
tensorplug` loads nothing else of the compiler)."""
from __future__ import annotations

import functools
import threading

_local = threading.local()


def active():
    """The Capture now recording on this thread, or None."""
    return getattr(_local, "capture", None)


def opaque(fn):
    """Mark a frontend helper that works on backend arrays and reads their values to decide or to
    raise a clear error (index bounds, say): under a capture its call is recorded as one op of the
    tape, so every replay runs it again — checks and value-dependent choices included. Its arguments
    follow the kernels' rules (arrays, Python values, a kernel table); a Python result (a bool the
    caller branches on) becomes a guard: a replay whose call answers differently stops and the call
    runs eagerly instead."""
    @functools.wraps(fn)
    def helper(*args, **kwargs):
        cap = getattr(_local, "capture", None)
        if cap is None or cap._depth or cap.broken is not None:
            return fn(*args, **kwargs)
        return cap._wrap(fn.__qualname__, fn, helper=True)(*args, **kwargs)
    return helper
