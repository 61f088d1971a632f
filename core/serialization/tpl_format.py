"""tensorplug's own data-only checkpoint format (what tensorplug.save wrote before it wrote
PyTorch's format): tensorplug.load still reads it, and `save` here still writes it.

    tpl_format.save(model.state_dict(), "ckpt.tpl")
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

Containers nest at most 200 levels deep (`_MAX_DEPTH`; real checkpoints nest fewer than 10): saving
a deeper object is a ValueError, loading a deeper file a CheckpointError, checked before the JSON
parser (which recurses) sees the header.

Loading checks the magic, the end marker (a truncated file lacks it), the SHA-256 of the whole
file (any flipped bit), the version, every length, the header's schema and every tensor's CRC-32,
and raises `CheckpointError` (a RuntimeError) saying what is wrong. Tensors are placed by
map_location as in the other formats (restore.py).

Saving to a path is atomic (atomic.py); a binary file object is written in place.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import re
import struct
import sys
import zlib
from collections import OrderedDict

import numpy as np

from .. import dtypes as _dt
from ..device import device as _Device
from ..tensor import Size, Tensor
from .errors import CheckpointError

__all__ = ["save", "load_buffer", "FORMAT_VERSION", "MAGIC"]

MAGIC = b"TPLGCKPT"
END_MARKER = b"TPLGEND\0"
FORMAT_VERSION = 1
FORMAT_NAME = "tensorplug.save"
_PREFIX = struct.Struct("<8sIIQQ")          # magic, version, reserved, header_len, payload_len
_DIGEST = 32
_TRAILER = _DIGEST + len(END_MARKER)
_ALIGN = 64
_MAX_DEPTH = 200        # containers nested in one checkpoint (real ones nest < 10; JSON needs ~3 levels each)
_MAX_JSON_DEPTH = 3 * _MAX_DEPTH + 4
_JSON_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"')
_NOT_BRACKET = bytes(c for c in range(256) if c not in b"[]{}")


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
    if name == "bfloat16":              # stored as its 16-bit patterns (ml_dtypes' dtype has no byte order)
        arr = arr.view(np.uint16)
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


def save(obj, f):
    """Write `obj` (tensors, containers, state dicts — see the module docstring) to `f`, a path
    (written atomically) or a binary file object."""
    head, buffers = _build(obj)
    if hasattr(f, "write"):
        _write_payload(f, _chunks(head, buffers))
        if hasattr(f, "flush"):
            f.flush()
        return
    from .atomic import write_atomically
    write_atomically(os.fsdecode(os.fspath(f)), lambda fh: _write_payload(fh, _chunks(head, buffers)))


# -- decoding -------------------------------------------------------------------------------------------
def _describe(name):
    return f"{name!r}" if name else "the file"


def _check_file(buf, name):
    """Validate the framing and checksum; returns (header dict, payload memoryview)."""
    where = _describe(name)
    if len(buf) < len(MAGIC) or bytes(buf[:len(MAGIC)]) != MAGIC:
        raise CheckpointError(f"{where} is not a tensorplug checkpoint")
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
    raw = bytes(view[_PREFIX.size:_PREFIX.size + header_len])
    if _json_depth(raw) > _MAX_JSON_DEPTH:       # json's parser recurses: a crafted depth must not reach it
        raise _too_deep(name)
    try:
        header = json.loads(raw.decode("utf-8"), parse_constant=_reject_constant)
    except (ValueError, UnicodeDecodeError) as e:
        raise CheckpointError(f"{where} is corrupted: its header is not valid JSON ({e})") from None
    except RecursionError:                      # (only when the caller's own stack is already deep)
        raise _too_deep(name) from None
    if not isinstance(header, dict) or header.get("format") != FORMAT_NAME or header.get("version") != version:
        raise CheckpointError(f"{where} is corrupted: its header does not describe a tensorplug checkpoint")
    start = _PREFIX.size + header_len
    return header, view[start:start + payload_len]


def _json_depth(raw):
    """The deepest nesting of arrays and objects in JSON text `raw` (bytes), counted without recursing."""
    brackets = _JSON_STRING.sub(b"", raw).translate(None, _NOT_BRACKET)
    if not brackets:
        return 0
    a = np.frombuffer(brackets, np.uint8)
    return int(np.cumsum(np.where((a == 0x5B) | (a == 0x7B), 1, -1)).max())


def _too_deep(name):
    return _bad(name, f"its structure is nested more than {_MAX_DEPTH} levels deep (the limit of tensorplug's "
                      "own format)")


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
        if depth > _MAX_DEPTH:
            raise _too_deep(self.name)
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
        elif dt is _dt.bfloat16:
            arr = np.frombuffer(raw, dtype="<u2").astype(np.uint16).view(_dt.numpy_bfloat16())
        else:
            arr = np.frombuffer(raw, dtype=np.dtype(dt.name).newbyteorder("<")).astype(dt.name, copy=True)
        arr = arr.reshape(e["shape"])
        t = self.place(arr, dt, e["device"])
        if e["kind"] == "parameter":
            from ..nn.parameter import Parameter
            t = Parameter(t, requires_grad=e["requires_grad"])
        elif e["kind"] == "buffer":
            from ..nn.parameter import Buffer
            t = Buffer(t)
            t._rg = e["requires_grad"]
        elif e["requires_grad"]:
            t.requires_grad = True
        self.cache[i] = t
        return t

    def place(self, arr, dt, saved_device):
        from ..ops.shape import row_major_strides
        from ..storage import legacy_class, tensor_view
        from .restore import restore_location
        storage = restore_location(legacy_class(dt)._wrap(arr.reshape(-1)), saved_device, self.map_location)
        return tensor_view(storage, 0, arr.shape, row_major_strides(arr.shape))


def load_buffer(buf, name, map_location=None):
    """The object in the tensorplug checkpoint held by buf (the whole file). The file is fully
    validated first (see the module docstring)."""
    header, payload = _check_file(buf, name)
    entries = header.get("tensors")
    _check_entries(entries, len(payload), name)
    if "root" not in header:
        raise _bad(name, "the header has no root object")
    return _Decoder(entries, payload, map_location, name).decode(header["root"])
