"""dtype objects and PyTorch's type-promotion rules.

A dtype is identified by its canonical name ("float32"); backends receive that
name as their dtype argument (NumPy and CuPy accept it natively).
"""
from __future__ import annotations

__all__ = ["dtype", "promote_types", "result_type", "get_default_dtype", "set_default_dtype",
           "float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "bool_"]

_BOOL, _INT, _FLOAT = 0, 1, 2


class dtype:
    """A tensor element type. Compare with `is` or `==`; one object per type."""
    __slots__ = ("name", "itemsize", "category", "is_signed", "_legacy")

    def __init__(self, name, itemsize, category, is_signed, legacy):
        self.name, self.itemsize, self.category = name, itemsize, category
        self.is_signed, self._legacy = is_signed, legacy

    @property
    def is_floating_point(self) -> bool:
        return self.category == _FLOAT

    @property
    def is_complex(self) -> bool:
        return False

    def __repr__(self):
        return "tensorplug." + self.name

    def __reduce__(self):
        return (_by_name, (self.name,))


float16 = dtype("float16", 2, _FLOAT, True, "HalfTensor")
float32 = dtype("float32", 4, _FLOAT, True, "FloatTensor")
float64 = dtype("float64", 8, _FLOAT, True, "DoubleTensor")
int8 = dtype("int8", 1, _INT, True, "CharTensor")
int16 = dtype("int16", 2, _INT, True, "ShortTensor")
int32 = dtype("int32", 4, _INT, True, "IntTensor")
int64 = dtype("int64", 8, _INT, True, "LongTensor")
uint8 = dtype("uint8", 1, _INT, False, "ByteTensor")
bool_ = dtype("bool", 1, _BOOL, False, "BoolTensor")

ALL = (float16, float32, float64, int8, int16, int32, int64, uint8, bool_)
BY_NAME = {d.name: d for d in ALL}
# PyTorch aliases
BY_NAME.update(half=float16, float=float32, double=float64, short=int16, int=int32, long=int64)


def _by_name(name):
    return BY_NAME[name]


def as_dtype(obj) -> dtype:
    """Turn a dtype, its name, a Python type or a NumPy dtype into a tensorplug dtype."""
    if obj.__class__ is dtype:
        return obj
    if obj is float:
        return _default[0]
    if obj is int:
        return int64
    if obj is bool:
        return bool_
    name = getattr(obj, "name", None) if not isinstance(obj, str) else obj
    if name is None and hasattr(obj, "dtype"):     # NumPy scalar types such as np.float32
        name = getattr(obj.dtype, "name", None)
    if name is None:
        try:
            import numpy
            name = numpy.dtype(obj).name
        except TypeError:
            name = None
    d = BY_NAME.get(name)
    if d is None:
        raise TypeError(f"unsupported dtype {obj!r}; supported: {', '.join(x.name for x in ALL)}")
    return d


_default = [float32]


def get_default_dtype() -> dtype:
    return _default[0]


def set_default_dtype(d) -> None:
    d = as_dtype(d)
    if not d.is_floating_point:
        raise TypeError(f"only floating-point types are supported as the default type, got {d!r}")
    _default[0] = d


_INT_ORDER = {uint8: 0, int8: 1, int16: 2, int32: 3, int64: 4}


def _promote_uncached(a: dtype, b: dtype) -> dtype:
    if a is b:
        return a
    if a.category != b.category:
        return a if a.category > b.category else b
    if a.category == _FLOAT:
        return a if a.itemsize >= b.itemsize else b
    # integers: uint8 with a signed type needs a signed type wide enough for both
    if uint8 in (a, b):
        other = b if a is uint8 else a
        return int16 if other is int8 else other
    return a if _INT_ORDER[a] >= _INT_ORDER[b] else b


_PROMOTE = {(a, b): _promote_uncached(a, b) for a in ALL for b in ALL}


def promote_types(a, b) -> dtype:
    """PyTorch's torch.promote_types: the smallest type both can be converted to."""
    return _PROMOTE[as_dtype(a), as_dtype(b)]


def _combine(higher, lower):
    # PyTorch's combine_categories: a lower-priority operand only wins by category.
    if higher is None:
        return lower
    if lower is None or higher.category == _FLOAT:
        return higher
    if higher is bool_ or lower.category > higher.category:
        return _PROMOTE[higher, lower]
    return higher


def scalar_dtype(value) -> dtype:
    """The dtype a Python scalar takes part in promotion with."""
    if isinstance(value, bool):
        return bool_
    if isinstance(value, int):
        return int64
    return _default[0]


def result_type(*operands) -> dtype:
    """torch.result_type over tensors and Python scalars (dimensioned > 0-d > scalars)."""
    dim = zero = wrapped = None
    for op in operands:
        d = getattr(op, "_dtype", None)
        if d is None:
            d = scalar_dtype(op)
            wrapped = d if wrapped is None else _PROMOTE[wrapped, d]
        elif op.ndim:
            dim = d if dim is None else _PROMOTE[dim, d]
        else:
            zero = d if zero is None else _PROMOTE[zero, d]
    return _combine(dim, _combine(zero, wrapped))
