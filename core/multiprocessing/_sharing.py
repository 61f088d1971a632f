"""Moving tensors and storages into shared memory (Tensor.share_memory_(), is_shared(),
Storage.share_memory_()), and the sharing strategy that new segments use.

A CPU tensor's memory block (its array's whole base, so views keep their offsets) is copied into a
fresh segment, and the tensor and the bases it views are re-pointed at it, as PyTorch moves the
storage. Views made before the move keep the old memory (tensorplug tensors have no storage object
to re-point them through). CUDA tensors: a no-op, and is_shared() is True, as in PyTorch.
"""
from __future__ import annotations

import sys

import numpy as np

from ._segment import new_segment, segment_of

if sys.platform in ("darwin", "win32"):
    _ALL = {"file_system"}
    _strategy = "file_system"
else:
    _ALL = {"file_descriptor", "file_system"}
    _strategy = "file_descriptor"


def get_sharing_strategy() -> str:
    """The strategy new shared segments use ('file_descriptor' by default on Linux)."""
    return _strategy


def set_sharing_strategy(new_strategy: str) -> None:
    """Set the strategy for segments made from now on (see get_all_sharing_strategies)."""
    global _strategy
    if new_strategy not in _ALL:
        # AssertionError, as PyTorch's (an assert there)
        raise AssertionError(f"invalid sharing strategy {new_strategy!r}, expected one of {sorted(_ALL)}")
    _strategy = new_strategy
    if new_strategy == "file_system":
        # one resource tracker for the whole process tree, started before any fork: children
        # register segments with it and whichever process frees a segment last unregisters it
        from multiprocessing import resource_tracker
        resource_tracker.ensure_running()


def get_all_sharing_strategies() -> set:
    """The strategies this platform supports."""
    return set(_ALL)


def _in_segment(arr, root, seg_buf):
    """arr (a view of root) rebuilt at the same offset in seg_buf, a byte copy of root."""
    offset = arr.__array_interface__["data"][0] - root.__array_interface__["data"][0]
    return np.ndarray(arr.shape, arr.dtype, buffer=seg_buf, offset=offset, strides=arr.strides)


def _block(arr):
    """(root, arr, raw): the memory block arr views, arr, and the block's bytes (a 1-D uint8 view)."""
    from ..storage import root_array
    root = root_array(arr)
    if not (root.flags.c_contiguous or root.flags.f_contiguous):
        root = arr = np.ascontiguousarray(arr)          # not one block: share what arr sees
    return root, arr, root.ravel(order="K").view(np.uint8)


def _check_host(t):
    if not isinstance(t._data, np.ndarray):
        raise RuntimeError(f"share_memory_(): the {t._dev} backend's arrays do not expose host memory "
                           f"({type(t._data).__name__})")


def share_tensor_(t):
    """Move t's memory into shared memory (no-op when it is there already, or on CUDA)."""
    if t._dev.type != "cpu":
        return t
    _check_host(t)
    arr = t._data
    if segment_of(arr) is not None:
        return t
    root, arr, raw = _block(arr)
    seg = new_segment(raw.nbytes, _strategy)
    buf = np.frombuffer(seg, np.uint8, raw.nbytes)
    buf[:] = raw
    new = _in_segment(arr, root, buf)
    k = t._k
    # the tensor and the bases it views, down to the one owning the block
    b = t._base
    t._data = k["from_numpy"](new)
    while b is not None and isinstance(b._data, np.ndarray) and segment_of(b._data) is None:
        from ..storage import root_array
        if root_array(b._data) is not root:
            break
        b._data = k["from_numpy"](_in_segment(b._data, root, buf))
        b = b._base
    return t


def tensor_is_shared(t) -> bool:
    if t._dev.type != "cpu":
        return True
    return isinstance(t._data, np.ndarray) and segment_of(t._data) is not None


def share_storage_(s):
    """Move a storage's bytes into shared memory (its `_array` is re-pointed)."""
    if s._device.type != "cpu" or segment_of(s._array) is not None:
        return s
    arr = s._array
    raw = np.ascontiguousarray(arr).view(np.uint8)
    seg = new_segment(raw.nbytes, _strategy)
    buf = np.frombuffer(seg, np.uint8, raw.nbytes)
    buf[:] = raw
    s._array = buf.view(arr.dtype)
    return s


def storage_is_shared(s) -> bool:
    return s._device.type != "cpu" or segment_of(s._array) is not None
