"""Grad modes: `no_grad`, `enable_grad`, `set_grad_enabled` (context managers and decorators)."""
from __future__ import annotations

import functools


class _State:
    __slots__ = ("enabled",)


state = _State()
state.enabled = True


def is_grad_enabled() -> bool:
    return state.enabled


class _Mode:
    _value = True

    def __enter__(self):
        self._prev = state.enabled
        state.enabled = self._value

    def __exit__(self, *exc):
        state.enabled = self._prev
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.__class__():
                return fn(*args, **kwargs)
        return wrapper


class no_grad(_Mode):
    """Disable gradient recording inside the block or decorated function."""
    _value = False


class enable_grad(_Mode):
    """Enable gradient recording inside the block or decorated function."""
    _value = True


class set_grad_enabled(_Mode):
    """Set gradient recording on or off; takes effect immediately and undoes itself as a context."""

    def __init__(self, mode: bool):
        self._prev = state.enabled
        self._value = bool(mode)
        state.enabled = self._value

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        state.enabled = self._prev
        return False

    def __call__(self, fn):
        state.enabled = self._prev      # as a decorator it only applies during calls
        value = self._value

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            prev = state.enabled
            state.enabled = value
            try:
                return fn(*args, **kwargs)
            finally:
                state.enabled = prev
        return wrapper


class inference_mode(no_grad):
    """Like no_grad (tensorplug has no separate inference tensors)."""

    def __init__(self, mode: bool = True):
        self._value = not mode
