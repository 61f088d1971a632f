"""CheckpointError: the one error a file that cannot be read raises (a refused global is PyTorch's
pickle.UnpicklingError instead)."""
from __future__ import annotations

__all__ = ["CheckpointError", "describe", "corrupted"]


class CheckpointError(RuntimeError):
    """A file that tensorplug.load cannot or will not read: truncated, corrupted, malformed, of an
    unknown format, or holding data tensorplug cannot represent."""


CheckpointError.__module__ = "tensorplug.serialization"


def describe(name):
    """How messages name the file: its path, or 'the file' for an anonymous file object."""
    return f"{name!r}" if name else "the file"


def corrupted(name, what):
    return CheckpointError(f"{describe(name)} is corrupted: {what}")
