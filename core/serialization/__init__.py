"""save / load: PyTorch's checkpoint format, both ways (torch.save / torch.load).

    tensorplug.save(model.state_dict(), "ckpt.pt")      # torch.load(..., weights_only=True) reads it
    state = tensorplug.load("ckpt.pt", map_location="cpu")
    tensorplug.save(model, "model.pt")                  # a whole object: pickled by reference to its class

`save` writes PyTorch's zip format (zip_format.py; the legacy format with
`_use_new_zipfile_serialization=False`), naming PyTorch's classes and functions
(`torch.nn.modules.linear.Linear`, `torch._utils._rebuild_tensor_v2`, ...; pickling.py), so PyTorch
reads tensors, Parameters, state dicts, optimizer states and whole models, with dtypes, shapes,
strides, views sharing storage and requires_grad. `load` reads PyTorch's zip and legacy files and
tensorplug's own data-only format (tpl_format.py).

Loading, as PyTorch 2.6+:
- `weights_only=True` (the default) unpickles with a restricted unpickler that admits tensors,
  storages, Parameters, containers, numbers, dtypes, Size, devices and NumPy arrays of numeric dtypes
  and refuses any other global with pickle.UnpicklingError (`add_safe_globals` / `safe_globals` allow
  more). Nothing from the file runs.
- `weights_only=False` unpickles anything and so runs whatever code the file holds: use it only for
  files you trust. Passing `pickle_module` makes False the default.
- `map_location`: None (where each storage was saved), a device or string, a dict
  {saved location: target}, or a callable(storage, location) returning a storage (or None).
- `mmap=True` maps a zip checkpoint's file instead of reading it (copy-on-write: writes to the loaded
  tensors never reach the file).

Integrity: every zip record's CRC-32 is checked, files tensorplug wrote also carry a SHA-256 of all
their bytes (in the archive comment, which PyTorch ignores), and a truncated, altered, malformed,
hostile or unreadable file raises CheckpointError saying what is wrong (a refused global:
pickle.UnpicklingError). Saving to a path is atomic (atomic.py): an interrupted save leaves the old
file, and the next save removes what a killed one left. Containers in a loaded object nest at most
1000 levels deep (`_MAX_DEPTH`; 200 in tensorplug's own format): a deeper file, such as a crafted one
nested 100,000 deep, is a CheckpointError naming the limit, never a RecursionError.
"""
from __future__ import annotations

import enum
import io
import os
import pickle

from .errors import CheckpointError
from .weights_only_unpickler import add_safe_globals, clear_safe_globals, get_safe_globals, safe_globals

__all__ = ["save", "load", "CheckpointError", "add_safe_globals", "safe_globals", "get_safe_globals",
           "clear_safe_globals", "get_default_load_endianness", "set_default_load_endianness", "LoadEndianness",
           "DEFAULT_PROTOCOL"]

DEFAULT_PROTOCOL = 2
_MAX_DEPTH = 1000               # nesting of containers a loaded object may have


class LoadEndianness(enum.Enum):
    NATIVE = 1
    LITTLE = 2
    BIG = 3


_endianness = [None]


def get_default_load_endianness():
    """The byte order assumed for files without a byteorder record (None: the machine's)."""
    return _endianness[0]


def set_default_load_endianness(endianness):
    if endianness is not None and not isinstance(endianness, LoadEndianness):
        raise TypeError("Invalid argument type in function set_default_load_endianness")
    _endianness[0] = endianness


def _default_byteorder():
    import sys
    e = _endianness[0]
    return {LoadEndianness.LITTLE: "little", LoadEndianness.BIG: "big"}.get(e, sys.byteorder)


def _get_layout(name):
    """PyTorch pickles layouts by name ("torch.sparse_coo"; only sparse tensors use them)."""
    from .. import _layout
    return getattr(_layout, str(name).rsplit(".", 1)[-1], name)


# -- save -------------------------------------------------------------------------------------------------
def save(obj, f, pickle_module=pickle, pickle_protocol=DEFAULT_PROTOCOL, _use_new_zipfile_serialization=True,
         _disable_byteorder_record=False):
    """Save obj to f (a path, written atomically, or a binary file object) in PyTorch's format.

    Tensors and storages go to records of their own; everything else is pickled, classes and
    functions by reference (their module must be importable when loading)."""
    from . import legacy_format, zip_format
    from .pickling import pickler_class
    cls = pickler_class(pickle_module)

    def write(fh, name):
        if _use_new_zipfile_serialization:
            zip_format.save(obj, fh, cls, pickle_protocol, name, byteorder_record=not _disable_byteorder_record)
        else:
            legacy_format.save(obj, fh, cls, pickle_protocol)
    if hasattr(f, "write"):
        write(f, zip_format.archive_name(None))
        if hasattr(f, "flush"):
            f.flush()
        return
    from .atomic import write_atomically
    path = os.fsdecode(os.fspath(f))
    write_atomically(path, lambda fh: write(fh, zip_format.archive_name(path)))


# -- load -------------------------------------------------------------------------------------------------
def _read(f, use_mmap):
    """(buffer, display name, file object or None, start offset) of a path or a binary file object."""
    import mmap as _mmap
    if hasattr(f, "read"):
        name = getattr(f, "name", None)
        name = name if isinstance(name, str) else None
        if use_mmap:
            try:
                fileno = f.fileno()
            except (AttributeError, OSError, io.UnsupportedOperation):
                raise ValueError("f must be a file path in order to use the mmap argument") from None
            return _map(fileno, _mmap), name, None, 0
        start = f.tell() if _seekable(f) else 0
        if start is not None and hasattr(f, "readinto"):       # one buffer, no second copy
            size = f.seek(0, os.SEEK_END) - start
            f.seek(start)
            buf = bytearray(max(size, 0))
            n = f.readinto(buf)
            if n is not None and n == len(buf):
                return buf, name, f, start
            f.seek(start)
        data = f.read()
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError("tensorplug.load: the file object must be opened in binary mode")
        return bytearray(data), name, f, start
    path = os.fsdecode(os.fspath(f))
    with open(path, "rb") as fh:
        if use_mmap:
            return _map(fh.fileno(), _mmap), path, None, 0
        size = os.fstat(fh.fileno()).st_size
        buf = bytearray(size)
        n = fh.readinto(buf)
        if n != size:
            del buf[n:]
        rest = fh.read()
        if rest:
            buf += rest
    return buf, path, None, 0


def _map(fileno, _mmap):
    if os.fstat(fileno).st_size == 0:
        return bytearray()
    # ACCESS_COPY: private pages, so writes to loaded tensors never reach the file
    return _mmap.mmap(fileno, 0, access=_mmap.ACCESS_COPY)


def _seekable(f):
    try:
        return f.seekable()
    except (AttributeError, OSError):
        return False


def load(f, map_location=None, pickle_module=None, *, weights_only=None, mmap=None, **pickle_load_args):
    """Load an object saved by tensorplug.save or torch.save (see the module docstring).

    weights_only=False runs any code the file holds: only for files from a trusted source."""
    from . import legacy_format, tpl_format, zip_format
    from .errors import describe
    from .weights_only_unpickler import check_nesting
    from .zip_archive import is_zip
    if weights_only is None:
        weights_only = pickle_module is None
    if weights_only and pickle_module is not None:
        raise RuntimeError("Can not safely load weights when explicit pickle_module is specified")
    pickle_load_args.setdefault("encoding", "utf-8")
    buf, name, fobj, start = _read(f, bool(mmap))
    head = bytes(memoryview(buf)[:8])
    if is_zip(head):
        obj = zip_format.load(buf, name, map_location, pickle_module, weights_only, pickle_load_args,
                              _default_byteorder())
    elif mmap:
        raise RuntimeError(f"mmap can only be used with files saved with `torch.save({name or 'f'}, "
                           "_use_new_zipfile_serialization=True), please torch.save your checkpoint with this "
                           "option in order to use mmap.")
    elif head.startswith(tpl_format.MAGIC):
        obj = tpl_format.load_buffer(buf, name, map_location)
    elif legacy_format.is_legacy(buf):
        obj, used = legacy_format.load(buf, name, map_location, pickle_module, weights_only, pickle_load_args)
        if fobj is not None:
            fobj.seek(start + used)             # the next object of the file may follow (as PyTorch)
    else:
        raise _unknown(buf, name, describe)
    check_nesting(obj, _MAX_DEPTH, name)
    return obj


def _unknown(buf, name, describe):
    where = describe(name)
    head = bytes(memoryview(buf)[:512])
    if not head:
        return CheckpointError(f"{where} is empty: not a checkpoint")
    from .tpl_format import MAGIC
    if len(head) < 8 and any(m.startswith(head) for m in (MAGIC, b"PK\x03\x04")):
        return CheckpointError(f"{where} is truncated ({len(head)} bytes): not a complete checkpoint")
    if len(head) >= 262 and head[257:262] == b"ustar":
        return CheckpointError(f"{where} is a tar archive: the checkpoint format of PyTorch before 0.4 is not "
                               "supported; load it with PyTorch and save it again")
    if head[:1] == b"\x80":
        return CheckpointError(f"{where} is a pickle, not a checkpoint written by torch.save or tensorplug.save "
                               "(no checkpoint magic number); tensorplug.load does not read bare pickles")
    return CheckpointError(f"{where} is not a checkpoint (unknown format; it starts with {head[:8]!r})")
