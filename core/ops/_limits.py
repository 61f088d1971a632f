"""What a new tensor's shape and fill value must respect before a kernel sees them, with PyTorch's errors.

- at most 64 dimensions: NumPy's (and CuPy's) limit. PyTorch has none on CPU, but reports this very
  bound where its own dim lists stop ("only tensors with up to 64 dims are supported");
- a byte size that fits in int64 (PyTorch: "Storage size calculation overflowed with sizes=[...]");
- an allocation the machine refuses (NumPy's MemoryError) is PyTorch's RuntimeError naming the bytes;
- a Python number written into a tensor (full, fill_, masked_fill, ...) must fit the dtype: PyTorch's
  "value cannot be converted to type int8_t without overflow" (uint8 takes -255..255, wrapping).
"""
from __future__ import annotations

import math
import numbers

MAX_DIMS = 64
_MAX_BYTES = (1 << 63) - 1

# the C++ type names PyTorch's overflow message uses
_CTYPE = {"uint8": "uint8_t", "int8": "int8_t", "int16": "int16_t", "int32": "int", "int64": "int64_t",
          "float16": "c10::Half", "bfloat16": "c10::BFloat16", "float32": "float", "float64": "double",
          "complex64": "c10::complex<float>", "complex128": "c10::complex<double>"}
_FMAX = {"float16": 65504.0, "bfloat16": 3.3895313892515355e38, "float32": 3.4028234663852886e38,
         "complex64": 3.4028234663852886e38}


def check_ndim(n):
    if n > MAX_DIMS:
        raise RuntimeError(f"only tensors with up to {MAX_DIMS} dims are supported, got {n} dims")


def check_shape(shape, itemsize):
    """Raise unless a tensor of `shape` (non-negative ints) and element size `itemsize` can exist."""
    if len(shape) > MAX_DIMS:
        check_ndim(len(shape))
    n = math.prod(shape)
    if n * itemsize > _MAX_BYTES:
        raise RuntimeError(f"Storage size calculation overflowed with sizes={list(shape)}")
    if n == 0 and math.prod(s for s in shape if s) * itemsize > _MAX_BYTES:
        # empty, but NumPy multiplies the sizes out all the same (PyTorch would accept it)
        raise RuntimeError(f"tensorplug cannot represent an empty tensor of size {list(shape)}: its nonzero "
                           "sizes multiply past int64 bytes")


def out_of_memory(shape, itemsize, dev):
    """The error for an allocation of `shape` that the backend refused (raise it `from None`)."""
    return RuntimeError(f"{dev}: can't allocate memory: you tried to allocate {math.prod(shape) * itemsize} "
                        f"bytes (a tensor of size {list(shape)}).")


def _overflow(dt):
    return RuntimeError(f"value cannot be converted to type {_CTYPE.get(dt.name, dt.name)} without overflow")


def check_fill(value, dt, arg="fill_(): argument 'value'"):
    """`value` (a Python or NumPy number) checked to fit dtype dt as PyTorch checks a Scalar; returns it as
    the kernel should get it (an int for an integer dtype, wrapped into range; a real number for a real one)."""
    cls = value.__class__
    if (cls is int or cls is float) and 0 <= value <= 127:        # fits every dtype (the common case: fast)
        c = dt.category
        return int(value) if c == 1 else (bool(value) if c == 0 else value)
    if cls is int and -128 <= value < 0 and (dt.category >= 2 or (dt.category == 1 and dt.is_signed)):
        return value                                                # (-1 for masks and padding: fast too)
    if isinstance(value, bool):
        return value
    if not isinstance(value, numbers.Number):
        if hasattr(value, "item") and getattr(value, "shape", None) == ():     # a NumPy scalar
            return check_fill(value.item(), dt, arg)
        raise TypeError(f"{arg} must be Number, not {type(value).__name__}")
    if isinstance(value, numbers.Integral) and not -(1 << 63) <= value < 1 << 64:
        raise OverflowError("int too big to convert")      # (PyTorch's, for any dtype: a Scalar is 64-bit)
    if dt.category == 0:
        return bool(value)
    if isinstance(value, complex):
        if dt.category != 3 and value.imag != 0:
            raise _overflow(dt)
        re = value.real if dt.category != 3 else value
    else:
        re = value
    if dt.category == 1:
        bits = 8 * dt.itemsize
        if isinstance(re, numbers.Integral):
            hi = (1 << bits) - 1 if not dt.is_signed else (1 << (bits - 1)) - 1
            lo = -hi if not dt.is_signed else -(1 << (bits - 1))      # uint8 wraps -255..-1, as PyTorch
        else:
            lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if dt.is_signed else (0, (1 << bits) - 1)
            re = float(re)
            if re != re:                    # NaN
                raise _overflow(dt)
        if not lo <= re <= hi:
            raise _overflow(dt)
        return int(re) % (1 << bits) if not dt.is_signed else int(re)
    fmax = _FMAX.get(dt.name)
    if fmax is not None:
        parts = (value.real, value.imag) if isinstance(value, complex) else (float(re),)
        if any(abs(p) > fmax and p not in (math.inf, -math.inf) for p in parts):
            raise _overflow(dt)
    return re
