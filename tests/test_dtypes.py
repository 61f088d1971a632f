"""dtypes and PyTorch's type promotion: promote_types for every pair, result_type with dimensioned
tensors, 0-d tensors and Python scalars, and the dtypes ops actually produce."""
import numpy as np
import pytest

import tensorplug as torch

NAMES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64"]

# torch.promote_types(row, column), from PyTorch's documented rules: a category (bool < integer <
# floating) wins over a lower one whatever the sizes; within a category the wider type wins; uint8
# with a signed integer needs a signed type holding both (uint8 + int8 -> int16).
PROMOTE = """
          bool    uint8   int8    int16   int32   int64   float16 float32 float64
bool      bool    uint8   int8    int16   int32   int64   float16 float32 float64
uint8     uint8   uint8   int16   int16   int32   int64   float16 float32 float64
int8      int8    int16   int8    int16   int32   int64   float16 float32 float64
int16     int16   int16   int16   int16   int32   int64   float16 float32 float64
int32     int32   int32   int32   int32   int32   int64   float16 float32 float64
int64     int64   int64   int64   int64   int64   int64   float16 float32 float64
float16   float16 float16 float16 float16 float16 float16 float16 float32 float64
float32   float32 float32 float32 float32 float32 float32 float32 float32 float64
float64   float64 float64 float64 float64 float64 float64 float64 float64 float64
"""


def _table():
    header, *rows = [line.split() for line in PROMOTE.strip().splitlines()]
    assert header == NAMES
    for row in rows:
        for col, expected in zip(header, row[1:]):
            yield row[0], col, expected


def _dt(name):
    return getattr(torch, name)


@pytest.mark.parametrize("a,b,expected", list(_table()))
def test_promote_types_table(a, b, expected):
    """promote_types agrees with the documented table, for every ordered pair."""
    assert torch.promote_types(_dt(a), _dt(b)) is _dt(expected)


@pytest.mark.parametrize("a,b,expected", [row for row in _table() if row[0] != "bool" or row[1] != "bool"])
def test_binary_op_of_dimensioned_tensors_uses_promote_types(a, b, expected):
    """(x + y).dtype of two 1-d tensors is promote_types of theirs (bool + bool aside: that's an or)."""
    x, y = torch.ones(2, dtype=_dt(a)), torch.ones(2, dtype=_dt(b))
    assert torch.result_type(x, y) is _dt(expected)
    assert (x + y).dtype is _dt(expected)
    assert (x * y).dtype is _dt(expected)


def test_dtype_objects():
    """dtype attributes, aliases and repr."""
    assert torch.float32.is_floating_point and not torch.int64.is_floating_point
    assert torch.float32.itemsize == 4 and torch.float16.itemsize == 2 and torch.bool.itemsize == 1
    assert (torch.half, torch.float, torch.double) == (torch.float16, torch.float32, torch.float64)
    assert (torch.short, torch.int, torch.long) == (torch.int16, torch.int32, torch.int64)
    assert repr(torch.float64) == "tensorplug.float64" and str(torch.int8) == "tensorplug.int8"
    assert not torch.float32.is_complex and not torch.uint8.is_signed and torch.int8.is_signed


def test_default_dtype():
    """Python floats follow the default dtype; only floating types may be the default."""
    assert torch.get_default_dtype() is torch.float32
    try:
        torch.set_default_dtype(torch.float64)
        assert torch.tensor([1.5]).dtype is torch.float64
        assert torch.zeros(2).dtype is torch.float64
        assert (torch.tensor([1, 2]) + 0.5).dtype is torch.float64
    finally:
        torch.set_default_dtype(torch.float32)
    with pytest.raises(TypeError):
        torch.set_default_dtype(torch.int64)


@pytest.mark.parametrize("operands,expected", [
    # dimensioned tensor with a Python scalar: the scalar only wins by category
    ((torch.tensor([1, 2]), 2.5), torch.float32),
    ((torch.tensor([1, 2], dtype=torch.int32), 2.5), torch.float32),
    ((torch.tensor([1, 2], dtype=torch.uint8), 1), torch.uint8),
    ((torch.tensor([1, 2], dtype=torch.int8), 1000), torch.int8),
    ((torch.tensor([True]), True), torch.bool),
    ((torch.tensor([True]), 1), torch.int64),
    ((torch.tensor([True]), 1.5), torch.float32),
    ((torch.tensor([1.0], dtype=torch.float16), 2.5), torch.float16),
    ((torch.tensor([1.0], dtype=torch.float64), 2), torch.float64),
    # dimensioned tensor with a 0-d tensor: the same, 0-d tensors rank above scalars
    ((torch.tensor([1, 2], dtype=torch.int32), torch.tensor(1.0, dtype=torch.float64)), torch.float64),
    ((torch.tensor([1.0], dtype=torch.float16), torch.tensor(1.0, dtype=torch.float64)), torch.float16),
    ((torch.tensor([1], dtype=torch.uint8), torch.tensor(5)), torch.uint8),
    ((torch.tensor([1], dtype=torch.int8), torch.tensor(5, dtype=torch.int64)), torch.int8),
    ((torch.tensor([True]), torch.tensor(5, dtype=torch.int16)), torch.int16),
    # 0-d tensors among themselves promote normally, and beat Python scalars
    ((torch.tensor(1, dtype=torch.int32), torch.tensor(1.0, dtype=torch.float64)), torch.float64),
    ((torch.tensor(1, dtype=torch.int32), 2.5), torch.float32),
    ((torch.tensor(1, dtype=torch.int32), 7), torch.int32),
    ((torch.tensor(1.0, dtype=torch.float64), 7), torch.float64),
    # Python scalars alone
    ((1, 2.5), torch.float32),
    ((1, 2), torch.int64),
    ((True, False), torch.bool),
])
def test_result_type(operands, expected):
    """result_type ranks dimensioned tensors > 0-d tensors > Python scalars (category decides)."""
    assert torch.result_type(*operands) is expected


@pytest.mark.parametrize("make,expected", [
    (lambda: torch.tensor([1, 2]) + 2.5, torch.float32),
    (lambda: torch.tensor([1, 2], dtype=torch.int32) + torch.tensor(1.0, dtype=torch.float64), torch.float64),
    (lambda: torch.tensor([1.0], dtype=torch.float16) + torch.tensor(1.0, dtype=torch.float64), torch.float16),
    (lambda: torch.tensor([1], dtype=torch.uint8) + 1, torch.uint8),
    (lambda: torch.tensor([True, False]) + 1, torch.int64),
    (lambda: torch.tensor([True, False]) * 2.5, torch.float32),
    (lambda: torch.tensor([1, 2]) / 2, torch.float32),
    (lambda: torch.tensor([1, 2], dtype=torch.int32) / torch.tensor([2], dtype=torch.int32), torch.float32),
    (lambda: torch.tensor([1.0]) + torch.tensor([1.0], dtype=torch.float64), torch.float64),
    (lambda: torch.tensor([1], dtype=torch.int8) + torch.tensor([1], dtype=torch.uint8), torch.int16),
    (lambda: 2.5 * torch.tensor([1, 2], dtype=torch.int16), torch.float32),
    (lambda: torch.tensor([1.0]) < 2, torch.bool),
    (lambda: torch.tensor([1.0], dtype=torch.float64) + np.float64(1.0), torch.float64),
])
def test_op_result_dtypes(make, expected):
    """Arithmetic results carry the promoted dtype (true division of integers gives a float)."""
    assert make().dtype is expected


def test_op_values_after_promotion():
    """Promotion converts values, not bits: int8 + uint8 does not wrap at 127/255."""
    x = torch.tensor([100], dtype=torch.int8) + torch.tensor([200], dtype=torch.uint8)
    assert x.tolist() == [300] and x.dtype is torch.int16
    y = torch.tensor([1, 2]) + 0.5
    assert y.tolist() == [1.5, 2.5]


def test_promote_types_accepts_aliases():
    """promote_types accepts dtype aliases and returns the canonical dtype object."""
    assert torch.promote_types(torch.long, torch.half) is torch.float16
    assert torch.promote_types(torch.int, torch.double) is torch.float64
