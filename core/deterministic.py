"""Deterministic-algorithm mode: `use_deterministic_algorithms(True, warn_only=False)` and its queries.

PyTorch's mode makes ops without a deterministic implementation raise (or warn). tensorplug's NumPy
backend is deterministic throughout, and no op consults the mode yet: it is recorded and read back,
with PyTorch's argument checks and the equivalent debug-mode API (0 off, 1 warn, 2 error).
"""
from __future__ import annotations

__all__ = ["use_deterministic_algorithms", "are_deterministic_algorithms_enabled",
           "is_deterministic_algorithms_warn_only_enabled", "set_deterministic_debug_mode",
           "get_deterministic_debug_mode"]

_mode = [False, False]          # enabled, warn_only


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Turn deterministic-algorithm mode on or off (warn_only: warn instead of raising)."""
    if not isinstance(mode, bool):
        raise TypeError(f"use_deterministic_algorithms(): argument 'mode' (position 1) must be bool, not "
                        f"{type(mode).__name__}")
    if not isinstance(warn_only, bool):
        raise TypeError(f"use_deterministic_algorithms(): argument 'warn_only' must be bool, not "
                        f"{type(warn_only).__name__}")
    _mode[0], _mode[1] = mode, warn_only


def are_deterministic_algorithms_enabled() -> bool:
    return _mode[0]


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    return _mode[1]


_DEBUG_NAMES = {"default": 0, "warn": 1, "error": 2}


def set_deterministic_debug_mode(debug_mode) -> None:
    """0 / "default": off; 1 / "warn": on, warning only; 2 / "error": on."""
    if isinstance(debug_mode, str):
        if debug_mode not in _DEBUG_NAMES:
            raise RuntimeError("invalid value of debug_mode, expected one of `default`, `warn`, `error`, "
                               f"but got {debug_mode}")
        debug_mode = _DEBUG_NAMES[debug_mode]
    elif not isinstance(debug_mode, int) or isinstance(debug_mode, bool):
        raise TypeError(f"debug_mode must be str or int, but got {type(debug_mode)}")
    if debug_mode not in (0, 1, 2):
        raise RuntimeError(f"invalid value of debug_mode, expected 0, 1, or 2, but got {debug_mode}")
    _mode[0], _mode[1] = debug_mode != 0, debug_mode == 1


def get_deterministic_debug_mode() -> int:
    return 0 if not _mode[0] else (1 if _mode[1] else 2)
