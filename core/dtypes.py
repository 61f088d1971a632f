"""dtype objects and PyTorch's type-promotion rules.

A dtype is identified by its canonical name ("float32"); backends receive that
name as their dtype argument (NumPy and CuPy accept it natively).
"""
from __future__ import annotations

__all__ = ["dtype", "promote_types", "result_type", "get_default_dtype", "set_default_dtype",
           "float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "bool_",
           "complex64", "complex128", "bfloat16"]

_BOOL, _INT, _FLOAT, _COMPLEX = 0, 1, 2, 3


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
        return self.category == _COMPLEX

    def to_complex(self) -> "dtype":
        """The complex dtype whose parts are this float dtype (float32 -> complex64)."""
        if self.category == _COMPLEX:
            return self
        if self.category != _FLOAT:
            raise ValueError(f"to_complex is only defined for floating point dtypes, got {self!r}")
        return _complex_of(self)

    def to_real(self) -> "dtype":
        """The float dtype of a complex dtype's parts (complex64 -> float32); others unchanged."""
        return _TO_REAL.get(self, self)

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
bfloat16 = dtype("bfloat16", 2, _FLOAT, True, "BFloat16Tensor")
complex64 = dtype("complex64", 8, _COMPLEX, True, "ComplexFloatTensor")
complex128 = dtype("complex128", 16, _COMPLEX, True, "ComplexDoubleTensor")
# complex32 (ComplexHalf) is not provided: float16 parts make complex64
_TO_REAL = {complex64: float32, complex128: float64}


def _complex_of(d):
    """The complex dtype with float parts at least as wide as float dtype d."""
    return complex128 if d.itemsize > 4 and d.category == _FLOAT else complex64


ALL = (float16, float32, float64, int8, int16, int32, int64, uint8, bool_, complex64, complex128, bfloat16)
BY_NAME = {d.name: d for d in ALL}
# PyTorch aliases
BY_NAME.update(half=float16, float=float32, double=float64, short=int16, int=int32, long=int64)
BY_NAME.update(cfloat=complex64, cdouble=complex128)


# Dtypes a backend serves only when its `dtypes` lists them (tensor creation checks; see creation.py).
NEED_DECLARING = frozenset((bfloat16, complex64, complex128))
_np_bfloat16 = None


def numpy_bfloat16():
    """NumPy's bfloat16 dtype (from ml_dtypes, which also makes NumPy understand the name "bfloat16").
    ml_dtypes is imported on first use only: it is slow to import (about a second here)."""
    global _np_bfloat16
    if _np_bfloat16 is None:
        import ml_dtypes
        import numpy
        _np_bfloat16 = numpy.dtype(ml_dtypes.bfloat16)
    return _np_bfloat16


def _by_name(name):
    if name == "bfloat16":
        numpy_bfloat16()
    return BY_NAME[name]


def as_dtype(obj) -> dtype:
    """Turn a dtype, its name, a Python type or a NumPy dtype into a tensorplug dtype."""
    if obj.__class__ is dtype:
        if obj is bfloat16:         # every way to name bfloat16 passes here: NumPy must know it from now on
            numpy_bfloat16()
        return obj
    if obj is float:
        return _default[0]
    if obj is int:
        return int64
    if obj is bool:
        return bool_
    if obj is complex:
        return _complex_of(_default[0])
    d = _BY_OBJECT.get(obj) if obj.__hash__ is not None else None
    if d is not None:               # a NumPy dtype or type seen before (NumPy's dtype.name costs ~1.5 us)
        return d
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
    if d is bfloat16:
        numpy_bfloat16()
    elif obj.__hash__ is not None and not isinstance(obj, str):
        _BY_OBJECT[obj] = d
    return d


_BY_OBJECT = {}     # as_dtype's answers for NumPy dtypes and scalar types


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
    if _COMPLEX in (a.category, b.category):
        # complex with a float: parts wide enough for both (float64 + complex64 -> complex128)
        c, o = (a, b) if a.category == _COMPLEX else (b, a)
        if o.category == _FLOAT or o.category == _COMPLEX:
            return _complex_of(max(c.to_real(), o.to_real(), key=lambda d: d.itemsize))
        return c
    if a.category != b.category:
        return a if a.category > b.category else b
    if a.category == _FLOAT:
        if a.itemsize == b.itemsize:        # float16 with bfloat16: neither holds the other
            return float32
        return a if a.itemsize > b.itemsize else b
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
    if lower is None or higher.category == _COMPLEX:
        return higher
    if lower.category == _COMPLEX:
        # a complex 0-d tensor or scalar keeps a float operand's precision (float64 * 1j -> complex128)
        return _complex_of(higher) if higher.category == _FLOAT else lower
    if higher.category == _FLOAT:
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
    if isinstance(value, complex):
        return _complex_of(_default[0])
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
