"""From a file's bytes to a placed storage: what the zip and legacy formats share.

A storage's bytes become a NumPy array without a copy (a view into the file's buffer or its memory
map), byte-swapped when the file's byte order is not the machine's, and then placed by
`map_location` as PyTorch does: None (where it was saved), a device or string, a dict
{saved location: target}, or a callable(storage, location) returning a storage (None: the
default).
"""
from __future__ import annotations

import sys

import numpy as np

from ..device import device as _Device
from ..storage import TypedStorage, UntypedStorage, _Storage, numpy_dtype, storage_dtype
from .errors import CheckpointError, corrupted, describe

__all__ = ["check_pid", "storage_from_bytes", "restore_location"]

_CPU = _Device("cpu")


def _is_int(x):
    return isinstance(x, int) and not isinstance(x, bool)


def check_pid(pid, where):
    """(storage class, dtype, key, location, numel) of a persistent id ('storage', cls, key, location,
    numel[, view]); CheckpointError for anything else."""
    if not isinstance(pid, tuple) or len(pid) not in (5, 6) or pid[0] != "storage":
        raise corrupted(where, f"unknown persistent id {str(pid)[:100]}")
    _, cls, key, location, numel = pid[:5]
    if not isinstance(cls, type) or not issubclass(cls, (TypedStorage, UntypedStorage)) or cls is TypedStorage:
        raise corrupted(where, f"persistent id names {cls!r}, not a storage class")
    try:
        dt = storage_dtype(cls)
    except RuntimeError:
        raise CheckpointError(f"{describe(where)} holds {cls._torch_dtype} tensors (torch.{cls.__name__}), "
                              "which tensorplug does not support") from None
    if not isinstance(key, str) or not isinstance(location, str) or not _is_int(numel) or numel < 0:
        raise corrupted(where, f"malformed storage reference {str(pid)[:100]}")
    return cls, dt, key, location, numel


def storage_from_bytes(cls, dt, raw, byteorder, where, key):
    """A storage of class cls over `raw` (a writable buffer of whole dt elements)."""
    arr = np.frombuffer(raw, dtype=numpy_dtype(dt) if cls is not UntypedStorage else np.uint8)
    if byteorder != sys.byteorder and dt.itemsize > 1 and arr.size:
        if not arr.flags.writeable:
            arr = arr.copy()
        swap = arr.view(f"u{dt.itemsize // 2}") if dt.is_complex else arr.view(f"u{dt.itemsize}") \
            if dt.name == "bfloat16" else arr
        swap.byteswap(inplace=True)
    if dt.name == "bool" and arr.size:
        u8 = arr.view(np.uint8)
        if u8.max() > 1:            # only 0 and 1 are booleans: other bytes read as True
            if not arr.flags.writeable:
                arr = arr.copy()
                u8 = arr.view(np.uint8)
            np.not_equal(u8, 0, out=arr)
    return cls._wrap(arr)


def restore_location(storage, location, map_location):
    """The storage placed where map_location says (see the module docstring)."""
    ml = map_location
    if ml is None:
        target = location
    elif isinstance(ml, (str, _Device)):
        target = ml
    elif isinstance(ml, dict):
        target = ml.get(location, location)
    elif callable(ml):
        r = ml(storage, location)
        if r is None:
            target = location
        elif isinstance(r, _Storage):
            return r
        else:
            raise TypeError(f"map_location returned {type(r).__name__}; it must return a storage (or None to "
                            "keep the saved location)")
    else:
        raise TypeError(f"map_location should be a str, a device, a dict or a callable, not {type(ml).__name__}")
    from ..ops.creation import resolve_device
    try:
        dev = resolve_device(target)[1]
    except Exception as e:
        if str(target).split(":")[0] == "cuda":
            from .. import cuda
            if not cuda.is_available():         # PyTorch's words for this common case
                raise RuntimeError("Attempting to deserialize object on a CUDA device but torch.cuda.is_available() "
                                   "is False. If you are running on a CPU-only machine, please use torch.load with "
                                   "map_location=torch.device('cpu') to map your storages to the CPU.") from e
        raise RuntimeError(f"tensorplug.load: can't place a tensor saved on {location!r} on {target!s}: {e}. Pass "
                           "map_location (e.g. map_location='cpu') to load it elsewhere.") from e
    return storage if dev is _CPU else storage.to(dev)
