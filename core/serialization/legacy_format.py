"""Reading PyTorch's legacy checkpoint format (torch.save before 1.6, or with
`_use_new_zipfile_serialization=False`): a sequence of pickles and raw storage data.

    pickle  the magic number 0x1950a86a20f9469cfc6c
    pickle  the protocol version 1001
    pickle  {'protocol_version', 'little_endian', 'type_sizes'}
    pickle  the object; storages are persistent ids
            ('storage', torch.FloatStorage, key, location, numel, view) with view None or
            (view key, offset, size) for a storage that is part of another; a whole module's
            class is ('module', class, source file, source)
    pickle  the list of storage keys, in the order their data follows
    then, per key: numel (int64) and numel elements

The object comes before the data, so the persistent ids are first collected by a pass over the
object's opcodes that runs nothing; the data layout is then known and checked (every element
count against the file's size), and the object is unpickled with storages viewing the file's
buffer.
"""
from __future__ import annotations

import io
import pickle
import pickletools
import struct
import sys

from ..storage import LEGACY_STORAGES
from .errors import CheckpointError, corrupted, describe
from .pickling import StorageTable, make_unpickler
from .restore import check_pid, restore_location, storage_from_bytes
from .weights_only_unpickler import Unpickler as WeightsUnpickler

__all__ = ["MAGIC_NUMBER", "PROTOCOL_VERSION", "is_legacy", "load", "save"]

MAGIC_NUMBER = 0x1950a86a20f9469cfc6c
PROTOCOL_VERSION = 1001


def save(obj, f, pickler_class, pickle_protocol):
    """Write obj to the binary file object f in the legacy format (as
    torch.save(..., _use_new_zipfile_serialization=False))."""
    info = {"protocol_version": PROTOCOL_VERSION, "little_endian": sys.byteorder == "little",
            "type_sizes": {"short": 2, "int": 4, "long": 4}}
    for header in (MAGIC_NUMBER, PROTOCOL_VERSION, info):
        pickle.dump(header, f, protocol=pickle_protocol)
    storages = StorageTable(legacy=True)
    pickler_class(f, pickle_protocol, storages).dump(obj)
    pickle.dump([key for key, _, _ in storages.records], f, protocol=pickle_protocol)
    for _, data, numel in storages.records:
        f.write(struct.pack("=q", numel))
        f.write(data)


class _ViewReader:
    """A read-only file over a memoryview (pickletools.genops reads through it, nothing is copied)."""

    def __init__(self, view, pos):
        self.view, self.pos = view, pos

    def read(self, n=-1):
        end = len(self.view) if n is None or n < 0 else min(self.pos + n, len(self.view))
        b = bytes(self.view[self.pos:end])
        self.pos = end
        return b

    def readline(self):
        end = self.pos
        n = len(self.view)
        while end < n and self.view[end] != 10:
            end += 1
        return self.read(end + 1 - self.pos)

    def tell(self):
        return self.pos


class _Name:
    __slots__ = ("module", "name")

    def __init__(self, module, name):
        self.module, self.name = module, name


def _scan(view, pos, where):
    """(end offset, persistent ids) of the pickle at pos: an abstract run of its opcodes that keeps
    only strings, numbers, tuples and global names (never imports or calls anything)."""
    stack, marks, memo, pids = [], [], {}, []
    markobject = pickletools.markobject
    try:
        for op, arg, at in pickletools.genops(_ViewReader(view, pos)):
            name = op.name
            if name == "STOP":
                return at + 1, pids
            if name == "MARK":
                marks.append(len(stack))
            elif name in ("PUT", "BINPUT", "LONG_BINPUT"):
                memo[arg] = stack[-1]
            elif name == "MEMOIZE":
                memo[len(memo)] = stack[-1]
            elif name in ("GET", "BINGET", "LONG_BINGET"):
                stack.append(memo.get(arg))
            elif name == "DUP":
                stack.append(stack[-1])
            elif name == "GLOBAL":
                module, _, qual = arg.partition(" ")
                stack.append(_Name(module, qual))
            elif name in ("PROTO", "FRAME"):
                pass
            else:
                before = op.stack_before
                items = None
                if markobject in before:
                    k = marks.pop()
                    items = stack[k:]
                    del stack[k:]
                    n = before.index(markobject)
                else:
                    n = len(before)
                if n > len(stack):
                    raise IndexError("stack underflow")
                popped = stack[len(stack) - n:] if n else []
                del stack[len(stack) - n:]
                if name == "TUPLE":
                    stack.append(tuple(items))
                elif name in ("TUPLE1", "TUPLE2", "TUPLE3"):
                    stack.append(tuple(popped))
                elif name == "EMPTY_TUPLE":
                    stack.append(())
                elif name == "STACK_GLOBAL":
                    stack.append(_Name(*popped))
                elif name == "BINPERSID":
                    pids.append(popped[0])
                    stack.append(None)
                elif name in ("NEWTRUE", "NEWFALSE"):
                    stack.append(name == "NEWTRUE")
                elif not before and len(op.stack_after) == 1 and arg is not None:
                    stack.append(arg)           # a constant: string, number
                else:
                    stack.extend([None] * len(op.stack_after))
    except (ValueError, IndexError, KeyError, struct.error, UnicodeDecodeError) as e:
        raise corrupted(where, f"its pickle is malformed or truncated ({e})") from None
    raise corrupted(where, "its pickle is truncated (no STOP)")


def _storage_class(token):
    if isinstance(token, _Name) and token.module in ("torch", "torch.cuda") and token.name in LEGACY_STORAGES:
        return LEGACY_STORAGES[token.name]
    return token


def _small(view, pos, where):
    """A header pickle (numbers, dicts, strings only) at pos: (object, end)."""
    end, _ = _scan(view, pos, where)
    return WeightsUnpickler(bytes(view[pos:end]), where=where).load(), end


def is_legacy(buf):
    """The file starts with the pickled magic number."""
    view = memoryview(buf)[:64]
    if not bytes(view[:1]) == b"\x80":
        return False
    try:
        return _small(view, 0, None)[0] == MAGIC_NUMBER
    except (CheckpointError, pickle.UnpicklingError):
        return False


def load(buf, where, map_location, pickle_module, weights_only, load_args):
    """(object, bytes consumed) of the legacy checkpoint at the start of buf."""
    view = memoryview(buf)
    magic, pos = _small(view, 0, where)
    if magic != MAGIC_NUMBER:
        raise CheckpointError(f"{describe(where)} is not a PyTorch checkpoint (invalid magic number)")
    proto, pos = _small(view, pos, where)
    if proto != PROTOCOL_VERSION:
        raise CheckpointError(f"{describe(where)} has legacy protocol version {proto!r}; tensorplug reads "
                              f"{PROTOCOL_VERSION}")
    info, pos = _small(view, pos, where)
    if not isinstance(info, dict):
        raise corrupted(where, "its system information is not a dict")
    byteorder = "little" if info.get("little_endian", True) else "big"
    main_start = pos
    pos, pids = _scan(view, pos, where)
    main_end = pos
    keys, pos = _small(view, pos, where)
    if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
        raise corrupted(where, "its list of storage keys is malformed")
    sizes = {}                      # key -> (class, dtype, numel)
    for pid in pids:
        if isinstance(pid, tuple) and pid[:1] == ("module",):
            continue                    # a whole module's class (with its source, which is ignored)
        if isinstance(pid, tuple) and len(pid) >= 2:
            pid = (pid[0], _storage_class(pid[1])) + pid[2:]
        cls, dt, key, _, numel = check_pid(pid, where)
        if sizes.setdefault(key, (cls, dt, numel)) != (cls, dt, numel):
            raise corrupted(where, f"storage {key!r} is described twice, differently")
    records = {}
    for key in keys:
        if key not in sizes:
            raise corrupted(where, f"storage {key!r} has data but no description")
        cls, dt, numel = sizes[key]
        if pos + 8 > len(view):
            raise CheckpointError(f"{describe(where)} is truncated: the data of storage {key!r} is missing")
        n = struct.unpack("<q" if byteorder == "little" else ">q", view[pos:pos + 8])[0]
        if n != numel:
            raise corrupted(where, f"storage {key!r} has {n} elements, its description says {numel}")
        pos += 8
        nbytes = numel * dt.itemsize
        if pos + nbytes > len(view):
            raise CheckpointError(f"{describe(where)} is truncated: storage {key!r} needs {nbytes} bytes, "
                                  f"{len(view) - pos} remain")
        records[key] = view[pos:pos + nbytes]
        pos += nbytes
    loaded = {}

    def persistent_load(pid):
        if isinstance(pid, tuple) and len(pid) == 4 and pid[0] == "module":
            return pid[1]               # ('module', class, source file, source): the class, as PyTorch
        if isinstance(pid, tuple) and len(pid) == 6 and pid[5] is not None:
            return _view(pid)
        cls, dt, key, location, numel = check_pid(pid, where)
        s = loaded.get(key)
        if s is None:
            if key not in records:
                raise corrupted(where, f"storage {key!r} has no data")
            s = loaded[key] = restore_location(storage_from_bytes(cls, dt, records[key], byteorder, where, key),
                                               location, map_location)
        return s

    def _view(pid):
        view_key, offset, size = pid[5] if isinstance(pid[5], tuple) and len(pid[5]) == 3 else (None, None, None)
        if not isinstance(view_key, str) or not isinstance(offset, int) or not isinstance(size, int):
            raise corrupted(where, "malformed storage view")
        s = loaded.get(view_key)
        if s is None:
            root = persistent_load(pid[:5] + (None,))
            if offset < 0 or size < 0 or offset + size > root.size():
                raise corrupted(where, f"storage view {view_key!r} lies outside its storage")
            s = loaded[view_key] = type(root)._wrap(root._array[offset:offset + size], root._device, root._ver)
        return s

    data = bytes(view[main_start:main_end])
    if weights_only:
        obj = WeightsUnpickler(data, persistent_load=persistent_load, where=where,
                               **{k: v for k, v in load_args.items() if k in ("encoding", "errors")}).load()
    else:
        obj = make_unpickler(pickle_module or pickle, io.BytesIO(data), persistent_load, where, **load_args).load()
    return obj, pos
