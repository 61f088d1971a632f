"""PyTorch's checkpoint format (what torch.save writes since PyTorch 1.6), both ways.

The archive `<name>/` holds:

    data.pkl               the object, pickled (protocol 2 by default) with PyTorch's names
                           (pickling.py); each storage is a persistent id
                           ('storage', torch.FloatStorage, key, location, numel)
    data/<key>             the storage's bytes, in the byte order of `byteorder`
    byteorder              b"little" or b"big"
    version                b"3\\n"; .format_version b"1"; .storage_alignment b"64"
    .data/serialization_id an identifier of the file's contents

(zip_archive.py writes and checks the container itself.) Loading checks every record's CRC-32
before unpickling anything, and each storage record's size against the element count its
persistent id claims.
"""
from __future__ import annotations

import io
import pickle
import sys

from ..storage import UntypedStorage
from . import pickling
from .errors import CheckpointError, corrupted, describe
from .restore import check_pid, restore_location, storage_from_bytes
from .weights_only_unpickler import Unpickler as WeightsUnpickler
from .zip_archive import ZipReader, ZipWriter

__all__ = ["save", "load", "archive_name"]


def archive_name(path):
    """The archive's top folder: the file's name without its extension, as PyTorch names it
    ('archive' for a file object or a name that is not plain ASCII)."""
    if path is None:
        return "archive"
    import os
    base = os.path.basename(path)
    stem = base.rsplit(".", 1)[0] if "." in base else base
    ok = stem and all(c.isascii() and (c.isalnum() or c in "._-") for c in stem)
    return stem if ok else "archive"


def save(obj, f, pickler_class, pickle_protocol=2, name="archive", byteorder_record=True):
    """Write obj to the binary file object f in PyTorch's zip format."""
    storages = pickling.StorageTable()
    buf = io.BytesIO()
    pickler_class(buf, pickle_protocol, storages).dump(obj)
    w = ZipWriter(f)
    w.add(f"{name}/data.pkl", buf.getbuffer())
    w.add(f"{name}/.format_version", b"1")
    w.add(f"{name}/.storage_alignment", b"64")
    if byteorder_record:
        w.add(f"{name}/byteorder", sys.byteorder.encode("ascii"))
    for key, data, _ in storages.records:
        w.add(f"{name}/data/{key}", data)
    w.add(f"{name}/version", b"3\n")
    # PyTorch writes 40 decimal digits; these come from the contents, so equal objects give equal files
    digits = str(int.from_bytes(w.digest()[:16], "big")).zfill(40)[:40]
    w.add(f"{name}/.data/serialization_id", digits.encode("ascii"))
    w.close()


def load(buf, where, map_location, pickle_module, weights_only, load_args, default_byteorder):
    """The object in the zip checkpoint held by buf (bytes-like or an mmap)."""
    zr = ZipReader(buf, where)
    names = list(zr.records)
    prefix = names[0].split("/", 1)[0] if names else ""
    if f"{prefix}/data.pkl" not in zr.records:
        if any(n.endswith("/constants.pkl") or "/code/" in n for n in names):
            raise CheckpointError(f"{describe(where)} is a TorchScript archive (torch.jit.save); tensorplug.load "
                                  "reads checkpoints written by torch.save")
        raise CheckpointError(f"{describe(where)} is a zip archive but not a PyTorch checkpoint (no "
                              f"{prefix or '<name>'}/data.pkl record)")
    if f"{prefix}/constants.pkl" in zr.records:
        raise CheckpointError(f"{describe(where)} is a TorchScript archive (torch.jit.save); tensorplug.load "
                              "reads checkpoints written by torch.save")
    zr.verify_all()
    byteorder = default_byteorder
    if f"{prefix}/byteorder" in zr.records:
        byteorder = bytes(zr.data(f"{prefix}/byteorder")).decode("ascii", "replace")
        if byteorder not in ("little", "big"):
            raise corrupted(where, f"unknown byte order {byteorder!r}")
    loaded = {}

    def persistent_load(pid):
        cls, dt, key, location, numel = check_pid(pid, where)
        s = loaded.get(key)
        if s is None:
            rec = f"{prefix}/data/{key}"
            if rec not in zr.records:
                raise corrupted(where, f"the storage record {rec!r} is missing")
            raw = zr.data(rec)
            isz = 1 if cls is UntypedStorage else dt.itemsize
            if numel * isz != len(raw):
                raise corrupted(where, f"storage {key!r} claims {numel} elements of {dt.name} ({numel * isz} "
                                       f"bytes) but its record has {len(raw)} bytes")
            s = loaded[key] = restore_location(storage_from_bytes(cls, dt, raw, byteorder, where, key), location,
                                               map_location)
        return s

    data = bytes(zr.data(f"{prefix}/data.pkl"))
    if weights_only:
        return WeightsUnpickler(data, persistent_load=persistent_load, where=where,
                                **{k: v for k, v in load_args.items() if k in ("encoding", "errors")}).load()
    return pickling.make_unpickler(pickle_module or pickle, io.BytesIO(data), persistent_load, where,
                                   **load_args).load()
