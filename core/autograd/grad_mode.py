"""Grad modes: `no_grad`, `enable_grad`, `set_grad_enabled`, `inference_mode`.

Each works as a context manager and as a decorator (with or without parentheses for
`no_grad`/`enable_grad`/`inference_mode`; generator functions keep the mode while they
run). The mode is per thread, like PyTorch's: a new thread starts with grad mode on.
Ops read `state.enabled` on their hot path.
"""
from __future__ import annotations

import functools
import inspect
import threading


class _State(threading.local):
    enabled = True                    # the class default is what every new thread sees


state = _State()


def is_grad_enabled() -> bool:
    """True when ops record the graph (the default)."""
    return state.enabled


def _decorate(fn, value):
    """fn run with grad mode set to `value` (restored afterwards, also on error)."""
    if inspect.isgeneratorfunction(fn):
        @functools.wraps(fn)
        def gen_wrapper(*args, **kwargs):
            gen = fn(*args, **kwargs)
            method, arg = gen.send, None
            while True:
                prev = state.enabled
                state.enabled = value
                try:
                    out = method(arg)
                except StopIteration as stop:
                    return stop.value
                finally:
                    state.enabled = prev
                try:
                    arg = yield out
                    method = gen.send
                except GeneratorExit:
                    gen.close()
                    raise
                except BaseException as exc:      # forwarded into the wrapped generator
                    method, arg = gen.throw, exc
        return gen_wrapper

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        prev = state.enabled
        state.enabled = value
        try:
            return fn(*args, **kwargs)
        finally:
            state.enabled = prev
    return wrapper


class _Mode:
    """Sets grad mode to `_value` inside a `with` block, or during calls of a decorated function."""
    _value = True

    def __new__(cls, *args, **kwargs):
        # bare decorator: `@no_grad` passes the function itself
        if cls._bare_ok and len(args) == 1 and not kwargs and callable(args[0]) \
                and not isinstance(args[0], bool):
            self = object.__new__(cls)
            self.__init__()
            return self(args[0])
        return object.__new__(cls)

    _bare_ok = True

    def __init__(self):
        self._prevs = []

    def __enter__(self):
        self._prevs.append(state.enabled)
        state.enabled = self._value

    def __exit__(self, *exc):
        state.enabled = self._prevs.pop()
        return False

    def __call__(self, fn):
        if not callable(fn):
            raise TypeError(f"{type(self).__name__} decorates a callable, got {type(fn).__name__}")
        return _decorate(fn, self._value)

    def clone(self):
        new = object.__new__(type(self))
        new._prevs = []
        new._value = self._value
        return new


class no_grad(_Mode):
    """Disable gradient recording inside the block or decorated function.

    >>> with no_grad():
    ...     y = x * 2          # y.requires_grad is False
    """
    _value = False


class enable_grad(_Mode):
    """Enable gradient recording inside the block or decorated function (e.g. inside no_grad)."""
    _value = True


class set_grad_enabled(_Mode):
    """Set gradient recording on or off. Takes effect immediately (so it also works as a plain
    call, `set_grad_enabled(False)`); as a context manager it restores the previous mode on exit,
    as a decorator it applies only during calls."""
    _bare_ok = False

    def __init__(self, mode: bool):
        self._value = bool(mode)
        self._prevs = [state.enabled]
        state.enabled = self._value

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        if self._prevs:
            state.enabled = self._prevs.pop()
        return False

    def __call__(self, fn):
        if self._prevs:
            state.enabled = self._prevs.pop()      # as a decorator it only applies during calls
        return _decorate(fn, self._value)


class inference_mode(_Mode):
    """Like no_grad (tensorplug has no separate inference tensors); `inference_mode(False)` is a
    no-op that leaves grad mode as it is."""

    def __init__(self, mode: bool = True):
        self._prevs = []
        self._mode = bool(mode)
        self._value = False

    def __enter__(self):
        self._prevs.append(state.enabled)
        if self._mode:
            state.enabled = False

    def __call__(self, fn):
        if not self._mode:
            return fn
        return _decorate(fn, False)

    def clone(self):
        return inference_mode(self._mode)
