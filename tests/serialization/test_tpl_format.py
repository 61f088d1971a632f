"""tensorplug's own data-only format (what tensorplug.save wrote before it wrote PyTorch's): load still
reads it, validating everything; map_location works on it as on PyTorch's formats."""
import io
from collections import OrderedDict

import numpy as np
import pytest

import tensorplug as tp
from tensorplug.serialization import CheckpointError, load, tpl_format

DTYPES = [tp.float16, tp.float32, tp.float64, tp.bfloat16, tp.complex64, tp.int8, tp.int16, tp.int32, tp.int64,
          tp.uint8, tp.bool]


def tpl(obj):
    buf = io.BytesIO()
    tpl_format.save(obj, buf)
    assert buf.getvalue()[:8] == b"TPLGCKPT"
    buf.seek(0)
    return buf


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: d.name)
def test_reads_every_dtype(dt):
    t = (tp.arange(12) % 3).to(dt).reshape(3, 4)
    out = load(tpl({"t": t, "p": tp.nn.Parameter(tp.ones(2)), "meta": OrderedDict(a=(1, None))}))
    assert out["t"].dtype is dt and out["t"].tolist() == t.tolist() and out["t"]._data.flags.writeable
    assert type(out["p"]) is tp.nn.Parameter and out["meta"] == OrderedDict(a=(1, None))


def test_map_location_callable_gets_a_storage():
    seen = []
    out = load(tpl([tp.ones(2)]), map_location=lambda s, loc: seen.append((type(s).__name__, loc)) or s)
    assert seen == [("FloatStorage", "cpu")] and out[0].tolist() == [1.0, 1.0]


def test_save_to_a_path(tmp_path):
    tpl_format.save({"w": tp.arange(3)}, tmp_path / "x.tpl")
    assert load(tmp_path / "x.tpl")["w"].tolist() == [0, 1, 2]


def test_forged_header_is_validated(tmp_path):
    """A file with a correct checksum but a hostile header still fails with CheckpointError."""
    import hashlib
    import json
    import struct

    def forge(header_obj, payload=b""):
        header = json.dumps(header_obj).encode()
        body = struct.pack("<8sIIQQ", b"TPLGCKPT", 1, 0, len(header), len(payload)) + header + payload
        return io.BytesIO(body + hashlib.sha256(body).digest() + b"TPLGEND\0")

    base = {"format": "tensorplug.save", "version": 1}
    entry = {"dtype": "float32", "shape": [2], "device": "cpu", "offset": 0, "nbytes": 8, "crc32": 0,
             "requires_grad": False, "kind": "tensor"}
    bad = [
        {**base, "root": {"t": "pickle", "v": "cos\nsystem\n"}, "tensors": []},
        {**base, "root": {"t": "tensor", "id": 3}, "tensors": []},
        {**base, "root": {"t": "tensor", "id": 0}, "tensors": [{**entry, "dtype": "object"}]},
        {**base, "root": {"t": "tensor", "id": 0}, "tensors": [{**entry, "nbytes": 4}]},
        {**base, "root": {"t": "tensor", "id": 0}, "tensors": [{**entry, "offset": 4}]},
        {**base, "root": {"t": "tensor", "id": 0}, "tensors": [entry]},         # CRC mismatch
        {**base, "root": {"t": "dict", "items": [[{"t": "list", "items": []}, {"t": "none"}]]}, "tensors": []},
        {**base, "root": {"t": "int", "v": "__import__('os')"}, "tensors": []},
        {**base, "tensors": []},
        {"format": "other", "version": 1, "root": {"t": "none"}, "tensors": []},
    ]
    for h in bad:
        with pytest.raises(CheckpointError):
            load(forge(h, b"\x01" * 8))
    ok = forge({**base, "root": {"t": "none"}, "tensors": []})
    assert load(ok) is None


def test_newer_version_reported(tmp_path):
    import hashlib
    import struct
    body = struct.pack("<8sIIQQ", b"TPLGCKPT", 99, 0, 2, 0) + b"{}"
    with pytest.raises(CheckpointError, match="version 99"):
        load(io.BytesIO(body + hashlib.sha256(body).digest() + b"TPLGEND\0"))



def test_truncated_and_flipped():
    data = tpl({"w": tp.randn(20), "b": tp.arange(7)}).getvalue()
    rng = np.random.default_rng(0)
    for pos in rng.choice(len(data), 80, replace=False):
        bad = bytearray(data)
        bad[pos] ^= 0x04
        with pytest.raises(CheckpointError):
            load(io.BytesIO(bytes(bad)))
    for cut in (9, 30, len(data) // 2, len(data) - 1):
        with pytest.raises(CheckpointError, match="truncated|corrupted"):
            load(io.BytesIO(data[:cut]))
