"""The container of PyTorch's checkpoint format: a zip archive of stored (uncompressed) records.

`torch.save` (since PyTorch 1.6) writes `<archive>/data.pkl`, `<archive>/data/<key>` for every
storage, and a few small records (`byteorder`, `version`, ...), all stored, each record's data
64-byte aligned so that it can be memory-mapped. This module writes and reads such archives; what
the records mean is zip_format.py's business.

Writing: local headers carry the CRC-32 and sizes (no data descriptors), an alignment padding extra
field, ZIP64 fields where a size or offset needs them, and the archive comment holds
`tensorplug-sha256:<hex>`, the SHA-256 of every byte before it. Zip readers (PyTorch's included)
ignore the comment; `ZipReader` checks it, so any flipped bit of a file tensorplug wrote is found.

Reading validates everything before any record is used: the end records, the central directory,
that every local header agrees with its central entry, that records lie inside the file without
overlapping, the compression method (stored, or deflate as other zip tools write) and every
record's CRC-32. Anything wrong raises CheckpointError saying what.
"""
from __future__ import annotations

import hashlib
import struct
import zlib

from .errors import CheckpointError, corrupted, describe

__all__ = ["ZipWriter", "ZipReader", "ALIGN", "is_zip"]

ALIGN = 64
SHA_MARKER = b"tensorplug-sha256:"
_COMMENT_LEN = len(SHA_MARKER) + 64
_ZIP64_LIMIT = 0xFFFFFFFF          # sizes/offsets at or past this need ZIP64 fields (tests lower it)
_PAD_ID = 0x5054                   # extra field "TP": padding that aligns the record's data

_LOCAL = struct.Struct("<4s5H3L2H")             # sig, version, flags, method, time, date, crc, csize, usize, nlen, xlen
_CENTRAL = struct.Struct("<4s6H3L5H2L")         # ... + made-by first; disk, iattr, eattr, offset
_EOCD = struct.Struct("<4s4H2LH")
_EOCD64 = struct.Struct("<4sQ2H2L4Q")
_LOC64 = struct.Struct("<4sLQL")
_SIG_LOCAL, _SIG_CENTRAL = b"PK\x03\x04", b"PK\x01\x02"
_SIG_EOCD, _SIG_EOCD64, _SIG_LOC64 = b"PK\x05\x06", b"PK\x06\x06", b"PK\x06\x07"
_DOS_DATE = (0 << 9) | (1 << 5) | 1             # 1980-01-01: fixed, so equal objects give equal files
_MAX_INFLATE_RATIO = 1100                       # deflate cannot expand more (its limit is ~1032:1)


def is_zip(head: bytes) -> bool:
    return head[:4] in (_SIG_LOCAL, _SIG_EOCD)


class ZipWriter:
    """Writes records one after another to a binary file object; `close()` writes the directory."""

    def __init__(self, f):
        self._f = f
        self._pos = 0
        self._sha = hashlib.sha256()
        self._entries = []          # (name bytes, crc, size, offset)

    def _write(self, b):
        self._f.write(b)
        self._sha.update(b)
        self._pos += len(b)

    def digest(self) -> bytes:
        """SHA-256 of everything written so far."""
        return self._sha.copy().digest()

    def add(self, name: str, data):
        """Add a record: `data` is a bytes-like object or a list of them (written in order)."""
        chunks = [memoryview(c).cast("B") if not isinstance(c, bytes) else c
                  for c in (data if isinstance(data, list) else [data])]
        size, crc = 0, 0
        for c in chunks:
            crc = zlib.crc32(c, crc)
            size += len(c)
        bname = name.encode("utf-8")
        offset = self._pos
        big = size >= _ZIP64_LIMIT
        extra = struct.pack("<2H2Q", 1, 16, size, size) if big else b""
        pad = (-(offset + _LOCAL.size + len(bname) + len(extra) + 4)) % ALIGN
        extra += struct.pack("<2H", _PAD_ID, pad) + b"\0" * pad
        field = 0xFFFFFFFF if big else size
        self._write(_LOCAL.pack(_SIG_LOCAL, 45 if big else 20, 0x800, 0, 0, _DOS_DATE, crc, field, field,
                                len(bname), len(extra)) + bname + extra)
        for c in chunks:
            if len(c):
                self._write(c)
        self._entries.append((bname, crc, size, offset))

    def close(self):
        """Write the central directory, the end records and the integrity comment."""
        cd_start = self._pos
        for bname, crc, size, offset in self._entries:
            fields = []
            if size >= _ZIP64_LIMIT:
                fields += [size, size]
            if offset >= _ZIP64_LIMIT:
                fields.append(offset)
            extra = struct.pack(f"<2H{len(fields)}Q", 1, 8 * len(fields), *fields) if fields else b""
            sz = 0xFFFFFFFF if size >= _ZIP64_LIMIT else size
            off = 0xFFFFFFFF if offset >= _ZIP64_LIMIT else offset
            self._write(_CENTRAL.pack(_SIG_CENTRAL, 45 if fields else 20, 45 if fields else 20, 0x800, 0, 0,
                                      _DOS_DATE, crc, sz, sz, len(bname), len(extra), 0, 0, 0, 0, off)
                        + bname + extra)
        cd_size = self._pos - cd_start
        n = len(self._entries)
        if n >= 0xFFFF or cd_start >= _ZIP64_LIMIT or cd_size >= _ZIP64_LIMIT:
            eocd64 = self._pos
            self._write(_EOCD64.pack(_SIG_EOCD64, _EOCD64.size - 12, 45, 45, 0, 0, n, n, cd_size, cd_start))
            self._write(_LOC64.pack(_SIG_LOC64, 0, eocd64, 1))
            n16, cd_size32, cd_start32 = 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF
        else:
            n16, cd_size32, cd_start32 = n, cd_size, cd_start
        self._write(_EOCD.pack(_SIG_EOCD, 0, 0, n16, n16, cd_size32, cd_start32, _COMMENT_LEN))
        self._write(SHA_MARKER + self._sha.hexdigest().encode("ascii"))


def _looks_signed(comment):
    """The comment is tensorplug's integrity comment, possibly damaged (so a flipped bit in it is an
    error too, not a file without one): its length, and nearly all of its marker and hex digits."""
    if len(comment) != _COMMENT_LEN:
        return False
    hexdigits = b"0123456789abcdef"
    same = sum(a == b for a, b in zip(comment, SHA_MARKER)) + sum(c in hexdigits for c in comment[len(SHA_MARKER):])
    return same >= _COMMENT_LEN - 8


class Record:
    __slots__ = ("name", "offset", "size", "csize", "method", "crc", "checked")

    def __init__(self, name, offset, size, csize, method, crc):
        self.name, self.offset, self.size, self.csize, self.method, self.crc = name, offset, size, csize, method, crc
        self.checked = False


class ZipReader:
    """The records of a zip archive held in `buf` (bytes, bytearray or an mmap), validated.

    `records` maps each name to its Record, in the order of the central directory; `data(name)`
    returns a record's bytes (a memoryview into buf for stored records), its CRC-32 checked."""

    def __init__(self, buf, name=None):
        self.buf = buf
        self.view = memoryview(buf)
        self.where = name
        self.records = {}
        self.signed = False        # written by tensorplug: the SHA-256 comment matched
        self._parse()

    # -- structure -----------------------------------------------------------------------------
    def _bad(self, what):
        return corrupted(self.where, what)

    def _find_eocd(self):
        n = len(self.buf)
        lo = max(0, n - _EOCD.size - 0xFFFF)
        tail = bytes(self.view[lo:])
        pos = len(tail)
        found_any = False
        while True:
            pos = tail.rfind(_SIG_EOCD, 0, pos)
            if pos < 0:
                break
            found_any = True
            if pos + _EOCD.size <= len(tail):
                clen = struct.unpack_from("<H", tail, pos + 20)[0]
                if pos + _EOCD.size + clen == len(tail):
                    return lo + pos
        if found_any:
            raise self._bad("the zip end record does not match the file's length (bytes were cut or appended)")
        raise CheckpointError(f"{describe(self.where)} is truncated or not a complete zip archive: its end record "
                              f"is missing (the file has {n} bytes; was the write interrupted?)")

    def _parse(self):
        buf, n = self.buf, len(self.buf)
        eocd = self._find_eocd()
        _, disk, cd_disk, n_disk, n_total, cd_size, cd_off, clen = _EOCD.unpack_from(buf, eocd)
        comment = bytes(self.view[eocd + _EOCD.size:eocd + _EOCD.size + clen])
        cd_end = eocd
        loc = eocd - _LOC64.size
        has64 = loc >= 0 and bytes(self.view[loc:loc + 4]) == _SIG_LOC64
        if 0xFFFF in (n_disk, n_total) or 0xFFFFFFFF in (cd_size, cd_off) or has64:
            if not has64:
                raise self._bad("the ZIP64 end record locator is missing")
            _, disk, eocd64, _ = _LOC64.unpack_from(buf, loc)
            if eocd64 + _EOCD64.size > loc or bytes(self.view[eocd64:eocd64 + 4]) != _SIG_EOCD64:
                raise self._bad("the ZIP64 end record is missing or misplaced")
            vals = _EOCD64.unpack_from(buf, eocd64)[4:]
            for v32, v64 in zip((disk, cd_disk, n_disk, n_total, cd_size, cd_off), vals):
                if v32 not in (v64, 0xFFFF, 0xFFFFFFFF):
                    raise self._bad("the zip end records disagree")
            disk, cd_disk, n_disk, n_total, cd_size, cd_off = vals
            cd_end = eocd64
        if disk != 0 or cd_disk != 0 or n_disk != n_total:
            raise self._bad("multi-disk zip archives are not supported")
        if cd_off + cd_size != cd_end:
            raise self._bad(f"the central directory ({cd_size} bytes at {cd_off}) does not end where the end "
                            f"records start ({cd_end})")
        if n_total * _CENTRAL.size > cd_size:
            raise self._bad(f"the central directory claims {n_total} records but has only {cd_size} bytes")
        if _looks_signed(comment):
            self._check_sha(comment, n - clen)
        pos = cd_off
        spans = []
        for i in range(n_total):
            if pos + _CENTRAL.size > cd_end or bytes(self.view[pos:pos + 4]) != _SIG_CENTRAL:
                raise self._bad(f"central directory entry {i} is damaged")
            (_, _, _, flags, method, _, _, crc, csize, usize, nlen, xlen, klen, _, _, _,
             offset) = _CENTRAL.unpack_from(buf, pos)
            end = pos + _CENTRAL.size + nlen + xlen + klen
            if end > cd_end:
                raise self._bad(f"central directory entry {i} runs past the directory")
            rname = self._name(pos + _CENTRAL.size, nlen, flags)
            extra = bytes(self.view[pos + _CENTRAL.size + nlen:pos + _CENTRAL.size + nlen + xlen])
            usize, csize, offset = self._zip64(extra, (usize, csize, offset), rname)
            pos = end
            if rname in self.records:
                raise self._bad(f"the record {rname!r} appears twice")
            if flags & 1:
                raise self._bad(f"the record {rname!r} is encrypted")
            if method not in (0, 8):
                raise self._bad(f"the record {rname!r} uses compression method {method} (only stored and "
                                "deflated records are supported)")
            if method == 0 and csize != usize:
                raise self._bad(f"the stored record {rname!r} has different compressed and real sizes")
            if method == 8 and usize > _MAX_INFLATE_RATIO * csize + 1024:
                raise self._bad(f"the deflated record {rname!r} claims {usize} bytes from {csize}: more than "
                                "deflate can produce")
            data_off = self._local(offset, rname, flags, method, crc, csize, usize, cd_off)
            spans.append((offset, data_off + csize, rname))
            self.records[rname] = Record(rname, data_off, usize, csize, method, crc)
        if pos != cd_end:
            raise self._bad("the central directory has bytes after its last entry")
        spans.sort()
        for (_, end, a), (start, _, b) in zip(spans, spans[1:]):
            if end > start:
                raise self._bad(f"the records {a!r} and {b!r} overlap")

    def _name(self, at, nlen, flags):
        raw = bytes(self.view[at:at + nlen])
        try:
            return raw.decode("utf-8" if flags & 0x800 else "cp437")
        except UnicodeDecodeError:
            raise self._bad("a record name is not valid UTF-8") from None

    def _zip64(self, extra, fields, rname):
        """Replace the 0xFFFFFFFF fields by their values from the ZIP64 extra field."""
        need = [v == 0xFFFFFFFF for v in fields]
        if not any(need):
            return fields
        i = 0
        while i + 4 <= len(extra):
            hid, hlen = struct.unpack_from("<2H", extra, i)
            if hid == 1:
                vals = list(fields)
                j = i + 4
                for k in range(3):
                    if need[k]:
                        if j + 8 > i + 4 + hlen:
                            raise self._bad(f"the ZIP64 field of {rname!r} is too short")
                        vals[k] = struct.unpack_from("<Q", extra, j)[0]
                        j += 8
                return tuple(vals)
            i += 4 + hlen
        raise self._bad(f"the record {rname!r} lacks the ZIP64 field its sizes call for")

    def _local(self, offset, rname, cflags, method, crc, csize, usize, limit):
        """Check the local header at offset against the central entry; returns the data offset."""
        buf = self.buf
        if offset + _LOCAL.size > limit or bytes(self.view[offset:offset + 4]) != _SIG_LOCAL:
            raise self._bad(f"the local header of {rname!r} is missing or damaged")
        _, _, flags, lmethod, _, _, lcrc, lcsize, lusize, nlen, xlen = _LOCAL.unpack_from(buf, offset)
        data_off = offset + _LOCAL.size + nlen + xlen
        if data_off > limit or self._name(offset + _LOCAL.size, nlen, flags) != rname:
            raise self._bad(f"the local header of {rname!r} does not match the central directory")
        if lmethod != method or (flags & 1) != (cflags & 1):
            raise self._bad(f"the local header of {rname!r} does not match the central directory")
        if not flags & 8:          # sizes and CRC in the local header (else in a data descriptor)
            extra = bytes(self.view[offset + _LOCAL.size + nlen:data_off])
            lusize, lcsize = self._zip64(extra, (lusize, lcsize, 0), rname)[:2]
            if (lcrc, lcsize, lusize) != (crc, csize, usize):
                raise self._bad(f"the local header of {rname!r} does not match the central directory")
        if data_off + csize > limit:
            raise CheckpointError(f"{describe(self.where)} is truncated or corrupted: the record {rname!r} "
                                  f"({csize} bytes at {data_off}) runs past the data area ({limit} bytes)")
        return data_off

    def _check_sha(self, comment, covered):
        digest = comment[len(SHA_MARKER):]
        if not comment.startswith(SHA_MARKER) or digest != hashlib.sha256(self.view[:covered]).hexdigest().encode():
            raise self._bad("its SHA-256 checksum does not match the contents")
        self.signed = True

    # -- data ----------------------------------------------------------------------------------
    def data(self, name):
        """The bytes of record `name` (CRC-32 checked): a memoryview into the buffer when stored."""
        r = self.records.get(name)
        if r is None:
            raise self._bad(f"the record {name!r} is missing")
        raw = self.view[r.offset:r.offset + r.csize]
        if r.method == 8:
            d = zlib.decompressobj(-15)
            try:
                out = d.decompress(raw, r.size + 1)
            except zlib.error as e:
                raise self._bad(f"the record {name!r} does not inflate ({e})") from None
            if len(out) != r.size or not d.eof:
                raise self._bad(f"the record {name!r} inflates to a different size than recorded")
            raw = memoryview(bytearray(out))
        if not r.checked:
            if zlib.crc32(raw) != r.crc:
                raise self._bad(f"the record {name!r} fails its CRC-32 check")
            r.checked = True
        return raw

    def verify_all(self):
        """Check every record's CRC-32 (records already read were checked then)."""
        for name, r in self.records.items():
            if not r.checked:
                self.data(name)
