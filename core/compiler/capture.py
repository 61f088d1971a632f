"""Capture: run Python once, eagerly, and write down every backend-kernel call it makes (a Tape).

The frontend touches array data only through the device's kernel table (DESIGN.md: backends supply
kernels, the frontend never computes on arrays itself), so while a capture is on, each callable entry
of the kernel tables in use is swapped for a recorder and everything the run computes is seen.
Only outermost calls are recorded (a decomposition's inner kernel calls belong to it).

What cannot be captured ends the capture with a `GraphBreak` reason (the run itself goes on
eagerly): a read of tensor values into Python (kernel `to_numpy`: `.item()`, `.tolist()`, `if t:`),
a kernel that answers with a Python value, an array that shares memory with the tape's arrays but
was not made by a kernel, a call of a `tensorplug.compiler.disable`d function.
"""
from __future__ import annotations

import threading

from ._state import _local, active, opaque  # noqa: F401  (opaque: re-exported)
from .tape import Guard, Op, RngState, Slot, Tape

_lock = threading.Lock()      # one capture at a time: the kernel tables are shared by the process


class GraphBreak(Exception):
    """Something the capture cannot record; `reason` says what."""

    def __init__(self, reason):
        super().__init__(reason)
        self.reason = reason


def _is_array(x):
    """A backend array (NumPy's, CuPy's, ...): what kernels take and give; not a NumPy scalar."""
    import numpy as np
    if isinstance(x, np.ndarray):
        return True
    return not isinstance(x, np.generic) and hasattr(x, "shape") and hasattr(x, "dtype") and hasattr(x, "strides")


class Capture:
    """Records kernel calls into ops while active (a context manager), for several tapes in a row
    (`begin_tape` / `end_tape`: the forward, then the backward, share the slots)."""

    def __init__(self, tables):
        self.tables = [t for t in {id(t): t for t in tables}.values()]
        self.slot_of = {}         # id(array) -> slot index
        self.arrays = []          # slot index -> array (kept alive: ids stay unique)
        self.sources = {}         # slot index -> ("input", key) for arrays given from outside
        self.constants = {}       # slot index -> array met without a known origin
        self.ops = []
        self.broken = None        # the GraphBreak reason, once one happened
        self._depth = 0
        self._rng = {}            # id(generator state) -> Generator
        self._saved = []

    # -- slots --------------------------------------------------------------------------------------
    def _new_slot(self, arr):
        i = len(self.arrays)
        self.arrays.append(arr)
        self.slot_of[id(arr)] = i
        return i

    def add_input(self, arr, key):
        """An array the caller will hand the replay (an argument's or a parameter's data)."""
        i = self.slot_of.get(id(arr))
        if i is None:
            i = self._new_slot(arr)
            self.sources[i] = key
        return i

    def slot(self, arr):
        return self.slot_of.get(id(arr))

    def _template(self, x):
        if type(x) in (list, tuple):
            return type(x)(self._template(e) for e in x)
        if x is None or type(x) in (int, float, bool, str, slice):
            return x
        if _is_array(x):
            i = self.slot_of.get(id(x))
            if i is None:
                i = self._foreign(x)
            return Slot(i)
        st = self._rng.get(id(x))
        if st is not None:
            return RngState(st)
        return x

    def _foreign(self, arr):
        """An array no kernel of this capture made and nobody declared: a constant, unless it is a
        view of the tape's arrays (made outside the kernels: its values would be stale on replay)."""
        base = getattr(arr, "base", None)
        while base is not None:
            if id(base) in self.slot_of:
                raise GraphBreak("an array that views the captured arrays was made outside the kernel table")
            base = getattr(base, "base", None)
        i = self._new_slot(arr)
        self.constants[i] = arr
        return i

    def _result(self, r):
        if r is None:
            return None
        if type(r) in (list, tuple):
            return tuple(self._result(e) for e in r)
        if _is_array(r):
            i = self.slot_of.get(id(r))
            return Slot(i if i is not None else self._new_slot(r))
        raise GraphBreak(f"a kernel answered with a Python value ({type(r).__name__})")

    # -- recording ----------------------------------------------------------------------------------
    def _wrap(self, name, fn, helper=False):
        cap = self

        def recorder(*args, **kwargs):
            if cap._depth or cap.broken is not None:
                return fn(*args, **kwargs)
            if name == "to_numpy" and not helper:
                cap.break_("tensor values read into Python (.item(), .tolist(), .numpy(), bool(), print)")
                return fn(*args, **kwargs)
            cap._depth = 1
            try:
                r = fn(*args, **kwargs)
            finally:
                cap._depth = 0
            try:
                op_args = cap._template(args)
                op_kwargs = {k: cap._template(v) for k, v in kwargs.items()}
                out = Guard(r) if helper and type(r) in (bool, int, str) else cap._result(r)
                cap.ops.append(Op(name, fn, op_args, op_kwargs, out))
            except GraphBreak as e:
                cap.break_(e.reason)
            return r

        recorder.__wrapped__ = fn
        return recorder

    def paused(self):
        """A context in which kernel calls run unrecorded (the capture's own helper arrays)."""
        import contextlib

        @contextlib.contextmanager
        def pause():
            depth, self._depth = self._depth, 1
            try:
                yield
            finally:
                self._depth = depth
        return pause()

    def break_(self, reason):
        if self.broken is None:
            self.broken = reason

    def __enter__(self):
        _lock.acquire()
        if active() is not None:
            _lock.release()
            raise RuntimeError("tensorplug.compile: a capture is already running on this thread")
        from ..ops import random as _random
        for table in self.tables:
            saved = {}
            for name, fn in table.items():
                if callable(fn) and not name.startswith("__"):
                    saved[name] = fn
                    table[name] = self._wrap(name, fn)
            self._saved.append((table, saved))
        cap = self
        orig_get = _random.Generator._get

        def _get(gen):
            st = orig_get(gen)
            cap._rng[id(st)] = gen
            return st
        self._orig_get = orig_get
        _random.Generator._get = _get
        _local.capture = self
        return self

    def __exit__(self, *exc):
        from ..ops import random as _random
        _local.capture = None
        _random.Generator._get = self._orig_get
        for table, saved in self._saved:
            table.update(saved)
        self._saved = []
        _lock.release()
        return False

    def tape(self, start, inputs, outputs, end=None):
        """The ops recorded from index `start` (to `end`), reading `inputs` (slot indices) and handing back
        `outputs` (slot indices); every other slot it reads must be a constant or an op's result."""
        ops = self.ops[start:end]
        made = set(inputs)
        used_constants = {}
        for op in ops:
            for s in op.slots_read():
                if s in self.constants:
                    used_constants[s] = self.constants[s]
                elif s not in made:
                    raise GraphBreak(f"kernel {op.name} reads an array made before this part of the capture")
            made.update(op.slots_written())
        for s in outputs:
            if s not in made and s not in self.constants:
                raise GraphBreak("an output was not made by the captured kernels")
        return Tape(ops, inputs, used_constants, outputs)
