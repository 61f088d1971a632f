"""The recording: which session is active, the per-thread stack of open events, and the op wrappers.

While a session is active (and only then) tensorplug's public op functions and Tensor's op methods
are replaced by recording wrappers. What gets replaced is the ONNX tracer's list (`Trace.patch` in
core/onnx/_tracer.py: op functions wherever a module holds them, the classes that keep them, Tensor's
methods and operators): `_Patcher` runs that enumeration and installs a profiler wrapper of the
original at each place instead of the exporter's. Nothing stays patched after the session (restore
undoes every replacement, also when the profiled code raised).

An op called by another op nests under it (its time counts in the caller's CPU total, not its self
time); a call with the same name directly inside (Tensor.relu calling relu) is one event.
"""
from __future__ import annotations

import inspect
import itertools
import os
import sys
import threading
import time

from ._events import FunctionEvent, Interval

_session = None                 # the Session recording now, else None
_clock = time.perf_counter_ns
_thread_id = threading.get_ident

# Tensor operators under PyTorch's op names (x + y runs aten::add)
_DUNDER_NAMES = {
    "__add__": "add", "__radd__": "add", "__iadd__": "add_", "__sub__": "sub", "__rsub__": "rsub",
    "__isub__": "sub_", "__mul__": "mul", "__rmul__": "mul", "__imul__": "mul_", "__truediv__": "div",
    "__rtruediv__": "div", "__itruediv__": "div_", "__floordiv__": "floor_divide",
    "__rfloordiv__": "floor_divide", "__ifloordiv__": "floor_divide_", "__mod__": "remainder",
    "__rmod__": "remainder", "__imod__": "remainder_", "__pow__": "pow", "__rpow__": "pow", "__ipow__": "pow_",
    "__neg__": "neg", "__pos__": "positive", "__abs__": "abs", "__invert__": "bitwise_not", "__eq__": "eq",
    "__ne__": "ne", "__lt__": "lt", "__le__": "le", "__gt__": "gt", "__ge__": "ge", "__and__": "bitwise_and",
    "__rand__": "bitwise_and", "__iand__": "bitwise_and_", "__or__": "bitwise_or", "__ror__": "bitwise_or",
    "__ior__": "bitwise_or_", "__xor__": "bitwise_xor", "__rxor__": "bitwise_xor", "__ixor__": "bitwise_xor_",
    "__matmul__": "matmul", "__rmatmul__": "matmul", "__imatmul__": "matmul", "__setitem__": "index_put_",
    "__iter__": "unbind"}
# public functions that are no ops on values (PyTorch records none of them)
_NOT_RECORDED = frozenset(("manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state", "is_tensor",
                           "is_complex", "is_floating_point", "is_conj", "is_neg", "numel", "can_cast"))
# dtype / device conversions run aten::to
_CONVERSIONS = frozenset(("float", "double", "half", "bfloat16", "bool", "byte", "char", "short", "int", "long",
                          "cpu", "cuda"))
_HERE = os.path.dirname(os.path.abspath(__file__))
_PACKAGE = os.path.dirname(_HERE)           # tensorplug's own frames are left out of with_stack


class Session:
    """One recording: events in the order they finished, each thread's stack of open events."""

    def __init__(self, record_shapes=False, with_stack=False):
        self.record_shapes = record_shapes
        self.with_stack = with_stack
        self.events: list = []
        self.start_ns = _clock()
        self._local = threading.local()
        self._ids = itertools.count()
        self._patcher = None

    def _stack(self):
        try:
            return self._local.stack
        except AttributeError:
            s = self._local.stack = []
            return s

    def open(self, name, args=(), kwargs=None, annotation=False):
        """Start an event (None for an op of the same name directly inside that op)."""
        stack = self._stack()
        parent = stack[-1] if stack else None
        if parent is not None and not annotation and not parent.is_user_annotation and parent.name == name:
            return None
        shapes = _shapes(args, kwargs) if self.record_shapes and not annotation else None
        frames = _frames() if self.with_stack else None
        ev = FunctionEvent(next(self._ids), name, _thread_id(), 0, shapes, frames, annotation)
        ev.cpu_parent = parent
        stack.append(ev)
        ev.start_ns = _clock()
        return ev

    def close(self, ev):
        end = _clock()
        ev.end_ns = end
        stack = self._stack()
        if stack and stack[-1] is ev:
            stack.pop()
        elif ev in stack:                   # ranges closed out of order (handles of _record_function_*)
            stack.remove(ev)
        if ev.cpu_parent is not None:
            ev.cpu_parent.cpu_children.append(ev)
        self.events.append(ev)

    def finish(self):
        """The events in start order (as PyTorch lists them), with times relative to the start."""
        evs = sorted(self.events, key=lambda e: (e.start_ns, -e.end_ns))
        for ev in evs:
            ev.time_range = Interval((ev.start_ns - self.start_ns) / 1e3, (ev.end_ns - self.start_ns) / 1e3)
        return evs


def _shape_of(a):
    from ..tensor import Tensor
    if isinstance(a, Tensor):
        return list(a.shape)
    if isinstance(a, (list, tuple)) and a and all(isinstance(x, Tensor) for x in a):
        return [list(x.shape) for x in a]
    return []


def _shapes(args, kwargs):
    out = [_shape_of(a) for a in args]
    if kwargs:
        out += [_shape_of(a) for a in kwargs.values()]
    return out


def _frames(limit=64):
    """The program's Python frames, innermost first, as "file(line): function"."""
    out = []
    f = sys._getframe(2)
    while f is not None and len(out) < limit:
        path = f.f_code.co_filename
        if not os.path.abspath(path).startswith(_PACKAGE):
            out.append(f"{path}({f.f_lineno}): {f.f_code.co_name}")
        f = f.f_back
    return out


def op_wrapper(fn, name):
    key = "aten::" + name

    def op(*args, **kwargs):
        s = _session
        ev = None if s is None else s.open(key, args, kwargs)
        if ev is None:
            return fn(*args, **kwargs)
        try:
            return fn(*args, **kwargs)
        finally:
            s.close(ev)
    op.__name__ = getattr(fn, "__name__", name)
    op.__qualname__ = getattr(fn, "__qualname__", name)
    op.__doc__ = getattr(fn, "__doc__", None)
    op.__wrapped__ = fn
    return op


def _getitem_wrapper(fn):
    """Tensor.__getitem__, named by its index as PyTorch's ops are (select / slice / index)."""
    def __getitem__(self, key):
        s = _session
        name = "aten::select" if isinstance(key, int) else "aten::slice" if isinstance(key, slice) else "aten::index"
        ev = None if s is None else s.open(name, (self, key))
        if ev is None:
            return fn(self, key)
        try:
            return fn(self, key)
        finally:
            s.close(ev)
    __getitem__.__wrapped__ = fn
    return __getitem__


def _public_name(fn, given):
    """The op's canonical name: its own function name where its module publishes it under that name
    (torch.multiply runs aten::mul, as in PyTorch), else the name it was found under."""
    own = getattr(fn, "__name__", "")
    mod = sys.modules.get(getattr(fn, "__module__", None) or "")
    if own and not own.startswith("_") and getattr(mod, own, None) is fn:
        return own
    return _DUNDER_NAMES.get(given, given)


def _patcher_class():
    from ..onnx import _tracer

    class _Patcher(_tracer.Trace):
        """The ONNX tracer's enumeration of what to patch, installing profiler wrappers instead."""

        def __init__(self):
            super().__init__(None, {}, {})
            self._mine = {}                 # id(original) -> its profiler wrapper

        def _wrapper(self, exporter_wrapper, attr):
            fn = getattr(exporter_wrapper, "__wrapped__", None)
            if fn is None:                  # size / shape / Module.__call__: no ops of their own
                return None
            w = self._mine.get(id(fn), False)
            if w is False:
                given = inspect.getclosurevars(exporter_wrapper).nonlocals.get("name", attr)
                if given in _NOT_RECORDED:
                    return None
                if given in _CONVERSIONS:
                    given = "to"
                w = _getitem_wrapper(fn) if given == "__getitem__" else op_wrapper(fn, _public_name(fn, given))
                self._mine[id(fn)] = w
            return w

        def _set(self, owner, attr, new):
            if isinstance(new, property):
                w = self._wrapper(new.fget, attr)
                mine = None if w is None else property(w)
            elif isinstance(new, staticmethod):
                w = self._wrapper(new.__func__, attr)
                mine = None if w is None else staticmethod(w)
            else:
                mine = self._wrapper(new, attr)
            if mine is not None:
                super()._set(owner, attr, mine)
    return _Patcher


def start(record_shapes=False, with_stack=False) -> Session:
    """Begin recording (the op functions are wrapped until stop())."""
    global _session
    if _session is not None:
        raise RuntimeError("the profiler is already enabled (profiles do not nest)")
    s = Session(record_shapes, with_stack)
    s._patcher = _patcher_class()()
    try:
        s._patcher.patch()
    except BaseException:
        s._patcher.restore()
        raise
    s.start_ns = _clock()
    _session = s
    return s


def stop(s: Session) -> list:
    """End recording: restore every patched function; the events in start order."""
    global _session
    if _session is s:
        _session = None
    s._patcher.restore()
    return s.finish()


def current():
    return _session
