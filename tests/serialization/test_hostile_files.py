"""Malformed, truncated, altered, hostile and oversized files: each gives CheckpointError (a refused
global: pickle.UnpicklingError) quickly, without a huge allocation, a RecursionError or running code."""
import io
import pickle
import struct
import tarfile
import zipfile

import numpy as np
import pytest
from serialization_helpers import fixture_path, zip_checkpoint

import tensorplug as tp
from tensorplug.serialization import CheckpointError, load, save
from tensorplug.serialization.zip_archive import ZipWriter

P2 = b"\x80\x02"


def tensor_pickle(numel=2, offset=0, size=(2,), stride=(1,), cls=b"FloatStorage", key=b"0"):
    """_rebuild_tensor_v2(('storage', torch.<cls>, key, 'cpu', numel), offset, size, stride, False,
    OrderedDict()), as PyTorch writes it."""
    def t(items):
        return b"(" + b"".join(items) + b"t"
    ints = [b"\x8a" + bytes([len(b)]) + b for b in (int(v).to_bytes(9, "little", signed=True) for v in
                                                    (numel, offset, *size, *stride))]
    n_size = len(size)
    pid = t([b"X\x07\x00\x00\x00storage", b"ctorch\n" + cls + b"\n", b"X" + struct.pack("<I", len(key)) + key,
             b"X\x03\x00\x00\x00cpu", ints[0]]) + b"Q"
    args = t([pid, ints[1], t(ints[2:2 + n_size]), t(ints[2 + n_size:]), b"\x89",
              b"ccollections\nOrderedDict\n)R"])
    return P2 + b"ctorch._utils\n_rebuild_tensor_v2\n" + args + b"R."


def test_helper_builds_a_valid_tensor():
    out = load(zip_checkpoint(tensor_pickle(), [("0", np.array([1.5, -2], np.float32).tobytes())]))
    assert out.tolist() == [1.5, -2.0]


@pytest.mark.parametrize("pkl,records,match", [
    (tensor_pickle(numel=10 ** 12), [("0", b"\0" * 8)], "claims 1000000000000 elements"),
    (tensor_pickle(size=(10 ** 6, 10 ** 6), stride=(10 ** 6, 1)), [("0", b"\0" * 8)], "out of bounds"),
    (tensor_pickle(offset=-1), [("0", b"\0" * 8)], "invalid storage offset"),
    (tensor_pickle(stride=(-1,)), [("0", b"\0" * 8)], "negative size or stride"),
    (tensor_pickle(size=(2, 2), stride=(1,)), [("0", b"\0" * 8)], "invalid tensor geometry"),
    (tensor_pickle(size=(1,) * 65, stride=(1,) * 65), [("0", b"\0" * 8)], "invalid tensor geometry"),
    (tensor_pickle(), [], "record 'archive/data/0' is missing"),
    (tensor_pickle(cls=b"QInt8Storage"), [("0", b"\0" * 2)], "qint8"),
    (tensor_pickle(numel=3), [("0", b"\0" * 8)], "claims 3 elements"),
    (P2 + b"(X\x03\x00\x00\x00bad\x85Q.", [], "unknown persistent id"),
])
def test_bad_storages_and_geometry(pkl, records, match):
    with pytest.raises(CheckpointError, match=match):
        load(zip_checkpoint(pkl, records))


def test_claimed_huge_storage_allocates_nothing():
    """The element count a file claims is checked against its record before anything is made."""
    import tracemalloc
    tracemalloc.start()
    try:
        with pytest.raises(CheckpointError):
            load(zip_checkpoint(tensor_pickle(numel=10 ** 12), [("0", b"\0" * 8)]))
        assert tracemalloc.get_traced_memory()[1] < 50_000_000
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("pkl", [
    P2 + b"]" * 100_000 + b"a" * 99_999 + b".",                     # lists nested 100,000 deep
    P2 + b")" + b"\x85" * 100_000 + b".",                            # tuples
    P2 + b"]" + b"(]" * 100_000 + b"e" * 100_000 + b".",             # through APPENDS
    P2 + b"}" + b"X\x01\x00\x00\x00k}" * 100_000 + b"s" * 100_000 + b".",   # dicts
])
def test_deep_nesting(pkl):
    with pytest.raises(CheckpointError, match="nested|malformed"):
        load(zip_checkpoint(pkl))


def test_nesting_a_little_is_fine():
    deep = x = []
    for _ in range(200):
        x.append([])
        x = x[0]
    buf = io.BytesIO()
    save(deep, buf)
    out = load(io.BytesIO(buf.getvalue()))
    for _ in range(200):
        out = out[0]
    assert out == []


@pytest.mark.parametrize("pkl", [
    P2 + b"\x8b\xff\xff\xff\x7f" + b"\x01" * 10 + b".",             # LONG4 claiming 2 GiB of digits
    P2 + b"\x8d" + struct.pack("<Q", 2 ** 60) + b"ab.",              # BINUNICODE8 claiming 2**60 bytes
    P2 + b"\x8e" + struct.pack("<Q", 2 ** 62) + b".",                # BINBYTES8
    P2 + b"X" + struct.pack("<I", 2 ** 31) + b"abc.",                # BINUNICODE
    P2 + b"(" * 100_000 + b".",                                      # marks never closed
    P2 + b"h\x07.",                                                  # memo entry missing
    P2 + b"N",                                                       # no STOP
    P2 + b"\xfe.",                                                   # not an opcode
    b"\x80\x09N.",                                                   # protocol 9
    P2 + b"e.",                                                      # APPENDS without a mark
    P2 + b"I99999999999999999999" * 300 + b"\n.",                    # an int of 6,000 digits
])
def test_malformed_pickles(pkl):
    with pytest.raises(CheckpointError):
        load(zip_checkpoint(pkl))


def test_code_in_every_protocol_refused(tmp_path):
    import os
    marker = tmp_path / "pwned"

    class Evil:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))
    for protocol in range(6):
        with pytest.raises(pickle.UnpicklingError):
            load(zip_checkpoint(pickle.dumps({"x": Evil()}, protocol=protocol)))
    assert not marker.exists()


# -- the archive ------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def small_file():
    buf = io.BytesIO()
    base = tp.arange(6.0)
    save({"w": base, "v": base[2:], "i": tp.tensor([1, 2]), "meta": {"epoch": 3}}, buf)
    return buf.getvalue()


def test_every_truncation_fails(small_file):
    for cut in range(len(small_file)):
        with pytest.raises(CheckpointError, match="truncated|corrupted|empty"):
            load(io.BytesIO(small_file[:cut]))


def test_every_flipped_bit_is_detected(small_file):
    """Every byte of a file tensorplug wrote, with one bit flipped: CheckpointError, each time."""
    rng = np.random.default_rng(0)
    for pos in range(len(small_file)):
        bad = bytearray(small_file)
        bad[pos] ^= 1 << int(rng.integers(0, 8))
        with pytest.raises(CheckpointError):
            load(io.BytesIO(bytes(bad)))


def test_flipped_bits_in_a_pytorch_file_never_load_different_data():
    """A file PyTorch wrote has no SHA-256: a flip is caught by a CRC-32 or a structure check, or lands in
    bytes nothing reads (padding); the loaded data is then unchanged."""
    data = open(fixture_path("views"), "rb").read()
    ref = load(io.BytesIO(data))
    rng = np.random.default_rng(1)
    loaded = 0
    for pos in rng.choice(len(data), 400, replace=False):
        bad = bytearray(data)
        bad[pos] ^= 1 << int(rng.integers(0, 8))
        try:
            out = load(io.BytesIO(bytes(bad)))
        except CheckpointError:
            continue
        loaded += 1
        assert out.keys() == ref.keys()
        for k in ref:
            assert out[k].tolist() == ref[k].tolist() and out[k].stride() == ref[k].stride()
    assert loaded < 200


def _zip(entries, **kw):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", **kw) as z:
        for name, data in entries:
            z.writestr(name, data)
    return buf.getvalue()


def test_deflated_archive_loads_as_pytorch_does():
    raw = _zip([("a/data.pkl", pickle.dumps({"a": [1, 2]}, protocol=2)), ("a/version", "3\n")],
               compression=zipfile.ZIP_DEFLATED)
    assert load(io.BytesIO(raw)) == {"a": [1, 2]}


def _patch(raw, old, new, count=1):
    assert raw.count(old) >= count
    return raw.replace(old, new, count)


def _central(raw, offset, fmt, *values):
    """raw with fields of its first central directory entry (at `offset` into it) replaced."""
    raw = bytearray(raw)
    struct.pack_into(fmt, raw, bytes(raw).index(b"PK\x01\x02") + offset, *values)
    return bytes(raw)


@pytest.mark.filterwarnings("ignore:Duplicate name")
def test_structural_damage():
    pkl = pickle.dumps(1, protocol=2)
    good = _zip([("a/data.pkl", pkl), ("a/version", "3\n")])
    eocd = good.rindex(b"PK\x05\x06")
    cases = {
        "duplicate": _zip([("a/data.pkl", pkl), ("a/data.pkl", pkl)]),
        "encrypted": _central(good, 8, "<H", 1),
        "method": _central(good, 10, "<H", 12),
        "offset": _central(good, 42, "<L", 7),
        "count": good[:eocd + 8] + struct.pack("<HH", 0x7FFF, 0x7FFF) + good[eocd + 12:],
        "trailing": good + b"\0" * 10,
        "torchscript": _zip([("a/data.pkl", pkl), ("a/constants.pkl", pkl), ("a/code/x.py", "")]),
        "not a checkpoint": _zip([("readme.txt", "hi")]),
    }
    assert load(io.BytesIO(good)) == 1
    for what, raw in cases.items():
        with pytest.raises(CheckpointError):
            load(io.BytesIO(raw))


def test_deflate_bomb_claim_refused():
    raw = bytearray(_zip([("a/data.pkl", b"\0" * 5000), ("a/version", "3\n")], compression=zipfile.ZIP_DEFLATED))
    z = zipfile.ZipFile(io.BytesIO(bytes(raw)))
    info = z.getinfo("a/data.pkl")
    cd = bytes(raw).index(b"PK\x01\x02")                    # its central entry: claim 4 GiB uncompressed
    struct.pack_into("<L", raw, cd + 24, 0xFFFFFFFE)
    struct.pack_into("<L", raw, info.header_offset + 22, 0xFFFFFFFE)
    with pytest.raises(CheckpointError, match="more than deflate can produce"):
        load(io.BytesIO(bytes(raw)))


def test_overlapping_records_refused():
    buf = io.BytesIO()
    w = ZipWriter(buf)
    w.add("a/data.pkl", pickle.dumps(1, protocol=2))
    w.close()
    raw = bytearray(buf.getvalue())
    cd = bytes(raw).index(b"PK\x01\x02")
    entry = bytes(raw[cd:bytes(raw).index(b"PK\x05\x06")])
    name = b"a/data.pkl"
    twin = entry.replace(name, b"a/version\0"[:len(name)])         # a second entry over the same bytes
    raw[cd:cd] = twin
    eocd = bytes(raw).index(b"PK\x05\x06")
    count, = struct.unpack_from("<H", raw, eocd + 8)
    struct.pack_into("<HHL", raw, eocd + 8, count + 1, count + 1, struct.unpack_from("<L", raw, eocd + 12)[0]
                     + len(twin))
    with pytest.raises(CheckpointError):
        load(io.BytesIO(bytes(raw)))


def test_oversized_record_claims():
    buf = io.BytesIO()
    w = ZipWriter(buf)
    w.add("a/data.pkl", pickle.dumps(1, protocol=2))
    w.close()
    raw = bytearray(buf.getvalue())
    cd = bytes(raw).index(b"PK\x01\x02")
    struct.pack_into("<LL", raw, cd + 20, 2 ** 31, 2 ** 31)      # sizes past the end of the file
    struct.pack_into("<LL", raw, 18, 2 ** 31, 2 ** 31)
    raw[-64:] = b"0" * 64                                      # (and no valid SHA-256: not ours any more)
    with pytest.raises(CheckpointError):
        load(io.BytesIO(bytes(raw)))


# -- other formats ----------------------------------------------------------------------------------------
def test_legacy_file_damage():
    data = open(fixture_path("legacy"), "rb").read()
    for cut in range(0, len(data), 7):
        with pytest.raises(CheckpointError):
            load(io.BytesIO(data[:cut]))
    bad = bytearray(data)
    at = bytes(bad).index(b"\x80\x02]")                     # the key list; then the first storage's numel
    end = bytes(bad).index(b"e.", at) + 2
    struct.pack_into("<q", bad, end, 10 ** 12)
    with pytest.raises(CheckpointError, match="1000000000000 elements"):
        load(io.BytesIO(bytes(bad)))


def test_legacy_file_with_code_refused(tmp_path):
    import os

    class Evil:
        def __reduce__(self):
            return (os.system, ("true",))
    path = tmp_path / "legacy.pt"
    save({"e": Evil()}, path, _use_new_zipfile_serialization=False)
    with pytest.raises(pickle.UnpicklingError, match="is blocked"):
        load(path)


def test_tar_checkpoint_refused(tmp_path):
    path = tmp_path / "old.tar"
    with tarfile.open(path, "w") as t:
        info = tarfile.TarInfo("storages")
        info.size = 3
        t.addfile(info, io.BytesIO(b"abc"))
    with pytest.raises(CheckpointError, match="tar archive"):
        load(path)


def test_tpl_file_damage(tmp_path):
    from tensorplug.serialization import tpl_format
    buf = io.BytesIO()
    tpl_format.save({"w": tp.ones(3)}, buf)
    data = buf.getvalue()
    for cut in range(0, len(data), 5):
        with pytest.raises(CheckpointError):
            load(io.BytesIO(data[:cut]))
