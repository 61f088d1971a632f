"""save / load: tensors, containers and state dicts in a data-only file format.

    tensorplug.save(model.state_dict(), "ckpt.tpl")
    state = tensorplug.load("ckpt.tpl", map_location="cpu")

Nothing is pickled: the file holds a JSON description of the saved structure and the raw bytes of
every tensor, so loading a file can never run code. Supported values: tensors (every dtype, any
device; stored as little-endian host bytes with dtype, shape, device and requires_grad),
nn.Parameter and nn.Buffer (a flag), None, bool, int, float, str, bytes, list, tuple, dict and
OrderedDict (str / int / bool keys), tensorplug.Size, dtype and device objects. Anything else is a
TypeError naming its type. A tensor saved twice in one object is stored once and loads as one
tensor.

File layout (all integers little-endian):

    magic        8 bytes   b"TPLGCKPT"
    version      u32       FORMAT_VERSION
    reserved     u32       0
    header_len   u64       bytes of the JSON header
    payload_len  u64       bytes of the tensor data that follows the header
    header       JSON (UTF-8): {"format", "version", "root": <node>, "tensors": [...]}, each tensor
                 {"dtype", "shape", "device", "offset", "nbytes", "crc32", "requires_grad", "kind"}
    payload      every tensor's bytes at its offset (64-byte aligned, zero padding)
    sha256       32 bytes: SHA-256 of everything above
    end marker   8 bytes   b"TPLGEND\\0"

Loading checks the magic, the end marker (a truncated file lacks it), the SHA-256 of the whole
file (any flipped bit), the version, every length, the header's schema and every tensor's CRC-32,
and raises `CheckpointError` (a RuntimeError) saying what is wrong. A pickle file — including a
file written by torch.save — is recognised and refused without being unpickled.

Saving to a path is atomic: the data goes to a temporary file in the same directory, which is
flushed, fsync'ed and renamed over the target (os.replace), so a crash leaves either the old file
or the complete new one. A binary file object (anything with .write / .read) is written or read
in place.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import stat
import struct
import sys
import uuid
import zlib
from collections import OrderedDict

import numpy as np

from . import dtypes as _dt
from .device import device as _Device
from .tensor import Size, Tensor

__all__ = ["save", "load", "CheckpointError", "FORMAT_VERSION"]

MAGIC = b"TPLGCKPT"
END_MARKER = b"TPLGEND\0"
FORMAT_VERSION = 1
FORMAT_NAME = "tensorplug.save"
_PREFIX = struct.Struct("<8sIIQQ")          # magic, version, reserved, header_len, payload_len
_DIGEST = 32
_TRAILER = _DIGEST + len(END_MARKER)
_ALIGN = 64
_MAX_DEPTH = 1000


class CheckpointError(RuntimeError):
    """A file that tensorplug.load cannot or will not read: truncated, corrupted, not a
    tensorplug checkpoint, or a pickle."""


# -- encoding -------------------------------------------------------------------------------------------
def _tensor_kind(t):
    """'tensor', 'parameter' or 'buffer' (nn classes looked up only if nn is loaded)."""
    cls = type(t)
    if cls is Tensor:
        return "tensor"
    mod = sys.modules.get("tensorplug.nn.parameter")
    if mod is not None:
        if isinstance(t, mod.Parameter):
            return "parameter"
        if isinstance(t, mod.Buffer):
            return "buffer"
    raise TypeError(f"tensorplug.save: can't save a tensor of subclass {cls.__module__}.{cls.__qualname__}; "
                    "convert it to a plain Tensor first")


def _host_le(t):
    """A C-contiguous little-endian NumPy copy (or view) of t's data on the host."""
    arr = np.ascontiguousarray(t.detach()._host())
    name = t.dtype.name
    if arr.dtype.name != name:
        arr = arr.astype(name)
    if name == "bool":
        return arr.view(np.uint8)
    le = arr.dtype.newbyteorder("<")
    if arr.dtype != le:
        arr = arr.astype(le)
    return arr


class _Encoder:
    def __init__(self):
        self.tensors = []          # (tensor, entry)
        self.ids = {}              # id(tensor) -> index
        self.path = set()          # ids of containers being encoded (cycle check)

    def encode(self, obj, depth=0):
        if depth > _MAX_DEPTH:
            raise ValueError(f"tensorplug.save: the object is nested more than {_MAX_DEPTH} levels deep")
        if obj is None:
            return {"t": "none"}
        cls = type(obj)
        if cls is bool:
            return {"t": "bool", "v": obj}
        if cls is int:
            return {"t": "int", "v": str(obj)}
        if cls is float:
            return {"t": "float", "v": repr(obj)}
        if cls is str:
            return {"t": "str", "v": obj}
        if cls is bytes:
            return {"t": "bytes", "v": obj.hex()}
        if isinstance(obj, Tensor):
            return {"t": "tensor", "id": self.tensor(obj)}
        if cls is _dt.dtype:
            return {"t": "dtype", "v": obj.name}
        if cls is _Device:
            return {"t": "device", "v": str(obj)}
        if cls in (list, tuple, Size, dict, OrderedDict):
            if id(obj) in self.path:
                raise ValueError(f"tensorplug.save: the object contains a reference cycle (through a {cls.__name__})")
            self.path.add(id(obj))
            try:
                if cls in (dict, OrderedDict):
                    items = [[self.key(k), self.encode(v, depth + 1)] for k, v in obj.items()]
                    return {"t": "dict" if cls is dict else "odict", "items": items}
                tag = {list: "list", tuple: "tuple", Size: "size"}[cls]
                return {"t": tag, "items": [self.encode(v, depth + 1) for v in obj]}
            finally:
                self.path.discard(id(obj))
        raise TypeError(f"tensorplug.save: can't save an object of type {cls.__module__}.{cls.__qualname__}; "
                        "supported: tensors, Parameters, None, bool, int, float, str, bytes, list, tuple, "
                        "dict and OrderedDict (str/int/bool keys), Size, dtype and device")

    def key(self, k):
        cls = type(k)
        if cls is str:
            return {"t": "str", "v": k}
        if cls is bool:
            return {"t": "bool", "v": k}
        if cls is int:
            return {"t": "int", "v": str(k)}
        raise TypeError(f"tensorplug.save: dict keys must be str, int or bool; got a key of type "
                        f"{cls.__module__}.{cls.__qualname__} ({k!r})")

    def tensor(self, t):
        i = self.ids.get(id(t))
        if i is not None:
            return i
        kind = _tensor_kind(t)
        entry = {"dtype": t.dtype.name, "shape": list(t.shape), "device": str(t.device),
                 "requires_grad": bool(t.requires_grad), "kind": kind}
        i = self.ids[id(t)] = len(self.tensors)
        self.tensors.append((t, entry))
        return i


def _build(obj):
    """(prefix + header bytes, list of buffers with their padding) for obj."""
    enc = _Encoder()
    root = enc.encode(obj)
    buffers, entries, offset = [], [], 0
    for t, entry in enc.tensors:
        arr = _host_le(t)
        nbytes = arr.nbytes
        entry.update(offset=offset, nbytes=nbytes, crc32=zlib.crc32(memoryview(arr).cast("B")) if nbytes else 0)
        entries.append(entry)
        pad = (-nbytes) % _ALIGN
        buffers.append((arr, pad))
        offset += nbytes + pad
    header = json.dumps({"format": FORMAT_NAME, "version": FORMAT_VERSION, "root": root, "tensors": entries},
                        separators=(",", ":"), allow_nan=False, ensure_ascii=False).encode("utf-8")
    head_pad = (-(_PREFIX.size + len(header))) % _ALIGN
    header += b" " * head_pad          # JSON ignores trailing whitespace; keeps the payload aligned
    prefix = _PREFIX.pack(MAGIC, FORMAT_VERSION, 0, len(header), offset)
    return prefix + header, buffers


def _chunks(head, buffers):
    yield head
    for arr, pad in buffers:
        if arr.nbytes:
            yield memoryview(arr).cast("B")
        if pad:
            yield b"\0" * pad


def _write_payload(f, chunks):
    """Write every chunk to f, then the SHA-256 of everything and the end marker."""
    h = hashlib.sha256()
    for c in chunks:
        h.update(c)
        f.write(c)
    f.write(h.digest())
    f.write(END_MARKER)


def save(obj, f, pickle_module=None, pickle_protocol=None, _use_new_zipfile_serialization=True):
    """Save `obj` (tensors, containers, state dicts — see the module docstring) to `f`, a path
    (written atomically) or a binary file object. The pickle arguments are accepted for
    compatibility and must be left at None: nothing is pickled."""
    if pickle_module is not None or pickle_protocol is not None:
        raise ValueError("tensorplug.save never pickles; pickle_module and pickle_protocol are not supported")
    head, buffers = _build(obj)
    if hasattr(f, "write"):
        _write_payload(f, _chunks(head, buffers))
        if hasattr(f, "flush"):
            f.flush()
        return
    path = os.fspath(f)
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    _atomic_write(path, _chunks(head, buffers))


def _atomic_write(path, chunks):
    if os.path.islink(path):
        path = os.path.realpath(path)      # replace the file the link points to, keep the link
    directory = os.path.dirname(os.path.abspath(path))
    tmp = os.path.join(directory, f".{os.path.basename(path)}.{uuid.uuid4().hex[:12]}.tmp")
    # O_EXCL: never follows or reuses someone else's file; mode 0o666 is reduced by the umask
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        with os.fdopen(fd, "wb") as fh:
            try:
                os.chmod(tmp, stat.S_IMODE(os.stat(path).st_mode))     # an existing file keeps its mode
            except FileNotFoundError:
                pass
            _write_payload(fh, chunks)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    _fsync_dir(directory)


def _fsync_dir(directory):
    """Make the rename durable (best effort; not possible on every platform)."""
    try:
        dfd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dfd)
    except OSError:
        pass
    finally:
        os.close(dfd)


# -- decoding -------------------------------------------------------------------------------------------
def _describe(name):
    return f"{name!r}" if name else "the file"


def _sniff(buf, name):
    """A CheckpointError for a file that is not a tensorplug checkpoint, saying what it looks like."""
    head = bytes(buf[:8])
    where = _describe(name)
    if len(buf) >= 2 and head[0] == 0x80 and 1 <= head[1] <= 5 or \
            (len(buf) >= 2 and head[:1] in (b"(", b"]", b"}", b"c", b"K", b"N", b"I", b"X")
             and bytes(buf[-1:]) == b"."):
        return CheckpointError(f"{where} looks like a pickle file; tensorplug.load never unpickles (unpickling "
                               "can run arbitrary code). Re-save the data with tensorplug.save, or convert it "
                               "in a trusted environment.")
    if head.startswith(b"PK\x03\x04") or head.startswith(b"PK\x05\x06"):
        return CheckpointError(f"{where} is a zip archive, such as a file written by torch.save; those hold "
                               "pickled objects and tensorplug.load never unpickles. Convert the file in a "
                               "trusted environment (load it there and re-save the tensors with "
                               "tensorplug.save).")
    if MAGIC.startswith(head[:len(buf)]) and len(buf) < len(MAGIC):
        return CheckpointError(f"{where} is truncated ({len(buf)} bytes): not a complete tensorplug checkpoint")
    if not buf:
        return CheckpointError(f"{where} is empty: not a tensorplug checkpoint")
    return CheckpointError(f"{where} is not a tensorplug checkpoint (unknown format; it starts with {head!r})")


def _check_file(buf, name):
    """Validate the framing and checksum; returns (header dict, payload memoryview)."""
    where = _describe(name)
    if len(buf) < len(MAGIC) or bytes(buf[:len(MAGIC)]) != MAGIC:
        raise _sniff(buf, name)
    if len(buf) < _PREFIX.size + _TRAILER or bytes(buf[-len(END_MARKER):]) != END_MARKER:
        raise CheckpointError(f"{where} is truncated or corrupted: the end marker is missing "
                              f"(the file has {len(buf)} bytes; was the write interrupted?)")
    view = memoryview(buf)
    digest = hashlib.sha256(view[:-_TRAILER]).digest()
    if digest != bytes(view[-_TRAILER:-len(END_MARKER)]):
        raise CheckpointError(f"{where} is corrupted: its SHA-256 checksum does not match the contents")
    _, version, _, header_len, payload_len = _PREFIX.unpack_from(buf, 0)
    if version != FORMAT_VERSION:
        raise CheckpointError(f"{where} has checkpoint format version {version}; this tensorplug reads version "
                              f"{FORMAT_VERSION} (was it written by a newer tensorplug?)")
    expected = _PREFIX.size + header_len + payload_len + _TRAILER
    if expected != len(buf):
        raise CheckpointError(f"{where} is corrupted: its header announces {expected} bytes but the file has "
                              f"{len(buf)}")
    try:
        header = json.loads(bytes(view[_PREFIX.size:_PREFIX.size + header_len]).decode("utf-8"),
                            parse_constant=_reject_constant)
    except (ValueError, UnicodeDecodeError) as e:
        raise CheckpointError(f"{where} is corrupted: its header is not valid JSON ({e})") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT_NAME or header.get("version") != version:
        raise CheckpointError(f"{where} is corrupted: its header does not describe a tensorplug checkpoint")
    start = _PREFIX.size + header_len
    return header, view[start:start + payload_len]


def _reject_constant(name):
    raise ValueError(f"non-standard JSON constant {name}")


def _bad(name, what):
    return CheckpointError(f"{_describe(name)} is corrupted: {what}")


def _is_int(x):
    return isinstance(x, int) and not isinstance(x, bool)


def _check_entries(entries, payload_len, name):
    if not isinstance(entries, list):
        raise _bad(name, "the tensor table is not a list")
    for i, e in enumerate(entries):
        if not isinstance(e, dict):
            raise _bad(name, f"tensor entry {i} is not an object")
        dt = e.get("dtype")
        if dt not in {d.name for d in _dt.ALL}:
            raise _bad(name, f"tensor {i} has unknown dtype {dt!r}")
        shape = e.get("shape")
        if not isinstance(shape, list) or not all(_is_int(s) and s >= 0 for s in shape):
            raise _bad(name, f"tensor {i} has an invalid shape {shape!r}")
        off, nbytes = e.get("offset"), e.get("nbytes")
        if not (_is_int(off) and _is_int(nbytes) and off >= 0 and nbytes >= 0):
            raise _bad(name, f"tensor {i} has an invalid offset/size")
        if nbytes != math.prod(shape) * _dt.BY_NAME[dt].itemsize:
            raise _bad(name, f"tensor {i}: {nbytes} bytes do not match shape {shape} of dtype {dt}")
        if off + nbytes > payload_len:
            raise _bad(name, f"tensor {i} lies outside the data section")
        if not isinstance(e.get("device"), str) or e.get("kind") not in ("tensor", "parameter", "buffer") \
                or not isinstance(e.get("requires_grad"), bool) or not _is_int(e.get("crc32")):
            raise _bad(name, f"tensor {i} has an invalid entry")


class _Decoder:
    def __init__(self, entries, payload, map_location, name):
        self.entries, self.payload, self.map_location, self.name = entries, payload, map_location, name
        self.cache = {}

    def decode(self, node, depth=0):
        if depth > _MAX_DEPTH + 1:
            raise _bad(self.name, "the structure is nested too deeply")
        if not isinstance(node, dict):
            raise _bad(self.name, f"unexpected structure node {type(node).__name__}")
        tag = node.get("t")
        try:
            if tag == "none":
                return None
            if tag == "bool":
                v = node["v"]
                if not isinstance(v, bool):
                    raise ValueError
                return v
            if tag == "int":
                return int(node["v"])
            if tag == "float":
                return float(node["v"])
            if tag == "str":
                v = node["v"]
                if not isinstance(v, str):
                    raise ValueError
                return v
            if tag == "bytes":
                return bytes.fromhex(node["v"])
            if tag == "dtype":
                return _dt.BY_NAME[node["v"]]
            if tag == "device":
                return _Device(node["v"])
            if tag in ("list", "tuple", "size"):
                items = [self.decode(x, depth + 1) for x in node["items"]]
                return items if tag == "list" else tuple(items) if tag == "tuple" else Size(items)
            if tag in ("dict", "odict"):
                out = {} if tag == "dict" else OrderedDict()
                for k, v in node["items"]:
                    key = self.decode(k, depth + 1)
                    if type(key) not in (str, int, bool):
                        raise ValueError
                    out[key] = self.decode(v, depth + 1)
                return out
            if tag == "tensor":
                return self.tensor(node["id"])
        except CheckpointError:
            raise
        except (KeyError, ValueError, TypeError, IndexError):
            raise _bad(self.name, f"malformed {tag!r} node in the header") from None
        raise _bad(self.name, f"unknown node type {tag!r} in the header")

    def tensor(self, i):
        if not _is_int(i) or not 0 <= i < len(self.entries):
            raise _bad(self.name, f"reference to a missing tensor {i!r}")
        t = self.cache.get(i)
        if t is not None:
            return t
        e = self.entries[i]
        raw = self.payload[e["offset"]:e["offset"] + e["nbytes"]]
        if (zlib.crc32(raw) if e["nbytes"] else 0) != e["crc32"]:
            raise _bad(self.name, f"tensor {i} fails its CRC-32 check")
        dt = _dt.BY_NAME[e["dtype"]]
        if dt is _dt.bool_:
            arr = np.frombuffer(raw, dtype=np.uint8).astype(bool)
        else:
            arr = np.frombuffer(raw, dtype=np.dtype(dt.name).newbyteorder("<")).astype(dt.name, copy=True)
        arr = arr.reshape(e["shape"])
        t = self.place(arr, dt, e["device"])
        if e["kind"] == "parameter":
            from .nn.parameter import Parameter
            t = Parameter(t, requires_grad=e["requires_grad"])
        elif e["kind"] == "buffer":
            from .nn.parameter import Buffer
            t = Buffer(t)
            t._rg = e["requires_grad"]
        elif e["requires_grad"]:
            t.requires_grad = True
        self.cache[i] = t
        return t

    def place(self, arr, dt, saved_device):
        from .ops.creation import from_numpy
        t = from_numpy(arr)
        ml = self.map_location
        target = saved_device
        if callable(ml) and not isinstance(ml, (str, _Device)):
            r = ml(t, saved_device)
            if r is not None:
                if not isinstance(r, Tensor):
                    raise TypeError(f"tensorplug.load: map_location returned {type(r).__name__}, expected a "
                                    "Tensor (or None to keep the saved device)")
                return r
        elif isinstance(ml, dict):
            target = ml.get(saved_device, saved_device)
        elif ml is not None:
            target = ml
        try:
            target_dev = _Device(target) if not isinstance(target, _Device) else target
            if target_dev.type == "cpu" and target_dev.index in (None, 0):
                return t
            return t.to(target_dev)
        except Exception as e:
            raise RuntimeError(f"tensorplug.load: can't place a tensor saved on {saved_device!r} on {target!s}: "
                               f"{e}. Pass map_location (e.g. map_location='cpu') to load it elsewhere.") from e


def _read_all(f):
    """(bytes-like, display name) from a path or a binary file object."""
    if hasattr(f, "read"):
        data = f.read()
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError("tensorplug.load: the file object must be opened in binary mode")
        return data, getattr(f, "name", None) if isinstance(getattr(f, "name", None), str) else None
    path = os.fspath(f)
    with open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        buf = bytearray(size)
        n = fh.readinto(buf)
        if n != size:
            buf = buf[:n]
        rest = fh.read()
        if rest:
            buf += rest
    return buf, os.fsdecode(path)


def load(f, map_location=None, pickle_module=None, *, weights_only=True, mmap=None, **kwargs):
    """Load what `save` wrote, from a path or a binary file object.

    map_location: None (each tensor on the device it was saved from), a device or string (every
    tensor there), a dict {saved device string: target}, or a callable(tensor_on_cpu, saved_device)
    returning the tensor to use (None: the default). The file is fully validated first (see the
    module docstring); a file that is not a tensorplug checkpoint raises CheckpointError.
    weights_only is accepted for compatibility: loading is always data-only, nothing is unpickled."""
    if pickle_module is not None or kwargs:
        raise ValueError("tensorplug.load never unpickles; pickle_module and pickle load arguments are not "
                         "supported")
    buf, name = _read_all(f)
    header, payload = _check_file(buf, name)
    entries = header.get("tensors")
    _check_entries(entries, len(payload), name)
    if "root" not in header:
        raise _bad(name, "the header has no root object")
    return _Decoder(entries, payload, map_location, name).decode(header["root"])
