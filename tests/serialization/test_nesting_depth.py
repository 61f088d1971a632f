"""Checkpoints nested beyond the documented depth (1000 containers in PyTorch's formats, 200 in
tensorplug's own) give CheckpointError naming the limit, in every format; within it they round-trip."""
import hashlib
import io
import pickle
import sys

import pytest
from serialization_helpers import zip_checkpoint

import tensorplug as tp
from tensorplug.serialization import CheckpointError, load, save
from tensorplug.serialization import legacy_format, tpl_format

P2 = b"\x80\x02"
DEEP_LISTS = P2 + b"]" * 100_000 + b"a" * 99_999 + b"."        # lists nested 100,000 deep


def nested(n, kind, leaf):
    for _ in range(n):
        leaf = [leaf] if kind == "list" else ({"k": leaf} if kind == "dict" else (leaf,))
    return leaf


def unnest(obj, n, kind):
    for _ in range(n):
        obj = obj["k"] if kind == "dict" else obj[0]
    return obj


def tpl_file(root_json: bytes) -> bytes:
    """A well-framed tensorplug-format file (valid SHA-256) whose header holds `root_json`."""
    header = b'{"format":"tensorplug.save","version":1,"root":' + root_json + b',"tensors":[]}'
    body = tpl_format._PREFIX.pack(tpl_format.MAGIC, 1, 0, len(header), 0) + header
    return body + hashlib.sha256(body).digest() + tpl_format.END_MARKER


def tpl_lists(n):
    return tpl_file(b'{"t":"list","items":[' * n + b'{"t":"none"}' + b']}' * n)


def legacy_file(object_pickle: bytes) -> bytes:
    buf = io.BytesIO()
    info = {"protocol_version": legacy_format.PROTOCOL_VERSION, "little_endian": sys.byteorder == "little",
            "type_sizes": {"short": 2, "int": 4, "long": 4}}
    for header in (legacy_format.MAGIC_NUMBER, legacy_format.PROTOCOL_VERSION, info):
        pickle.dump(header, buf, protocol=2)
    buf.write(object_pickle)
    pickle.dump([], buf, protocol=2)
    return buf.getvalue()


@pytest.mark.parametrize("weights_only", [True, False])
def test_zip_nested_100000_deep(weights_only):
    with pytest.raises(CheckpointError, match="nested more than 1000 levels deep"):
        load(zip_checkpoint(DEEP_LISTS), weights_only=weights_only)


@pytest.mark.parametrize("weights_only", [True, False])
def test_legacy_nested_100000_deep(weights_only):
    with pytest.raises(CheckpointError, match="nested more than 1000 levels deep"):
        load(io.BytesIO(legacy_file(DEEP_LISTS)), weights_only=weights_only)


@pytest.mark.parametrize("n", [100_000, 201])
def test_tpl_nested_beyond_its_limit(n):
    """The header is measured before the (recursive) JSON parser reads it: no RecursionError."""
    with pytest.raises(CheckpointError, match="nested more than 200 levels deep"):
        load(io.BytesIO(tpl_lists(n)))


def test_tpl_deep_dicts_crafted():
    node = b'{"t":"dict","items":[[{"t":"str","v":"k"},' * 50_000 + b'{"t":"none"}' + b']]}' * 50_000
    with pytest.raises(CheckpointError, match="nested more than 200 levels deep"):
        load(io.BytesIO(tpl_file(node)))


def test_tpl_brackets_inside_strings_do_not_count():
    """Only real nesting counts: a string full of brackets is a flat value."""
    root = b'{"t":"str","v":"' + b"[{" * 5000 + b'\\"]"}'
    assert load(io.BytesIO(tpl_file(root))) == "[{" * 5000 + '"]'


@pytest.mark.parametrize("kind", ["list", "dict", "tuple"])
def test_tpl_roundtrip_at_the_limit(kind):
    buf = io.BytesIO()
    tpl_format.save(nested(200, kind, tp.tensor([1.5, -2.0])), buf)
    out = unnest(load(io.BytesIO(buf.getvalue())), 200, kind)
    assert out.tolist() == [1.5, -2.0]


def test_tpl_save_beyond_the_limit_is_a_value_error():
    with pytest.raises(ValueError, match="nested more than 200 levels deep"):
        tpl_format.save(nested(201, "list", 1), io.BytesIO())


@pytest.mark.parametrize("weights_only", [True, False])
def test_zip_limit_is_1000_levels(weights_only):
    at_limit = zip_checkpoint(P2 + b"]" * 1000 + b"a" * 999 + b".")
    assert unnest(load(at_limit, weights_only=weights_only), 999, "list") == []
    with pytest.raises(CheckpointError, match="nested more than 1000 levels deep"):
        load(zip_checkpoint(P2 + b"]" * 1001 + b"a" * 1000 + b"."), weights_only=weights_only)


@pytest.mark.parametrize("kind", ["list", "dict"])
def test_zip_roundtrip_nested(kind):
    buf = io.BytesIO()
    save(nested(200, kind, 7), buf)
    assert unnest(load(io.BytesIO(buf.getvalue())), 200, kind) == 7
