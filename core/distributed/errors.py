"""Errors of tensorplug.distributed, with PyTorch's names and hierarchy.

DistError (a RuntimeError) is the base; DistBackendError is raised when the communication backend
fails (a collective times out, a peer exits or dies, ranks pass messages of different sizes);
DistNetworkError for network failures; DistStoreError for the key-value store (a get that times
out, a store that cannot be reached).
"""
from __future__ import annotations

__all__ = ["DistError", "DistBackendError", "DistNetworkError", "DistStoreError"]


class DistError(RuntimeError):
    """A failure in tensorplug.distributed."""


class DistBackendError(DistError):
    """The communication backend failed: timeout, a failed peer, mismatched messages."""


class DistNetworkError(DistError):
    """A network failure (a connection refused, reset or timed out)."""


class DistStoreError(DistError):
    """A key-value store failure (a get that timed out, an unreachable store)."""
