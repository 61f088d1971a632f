"""bfloat16 kernels of the NumPy backend: the storage is ml_dtypes' bfloat16 (a NumPy dtype of kind "V"),
the arithmetic is PyTorch's CPU kernels'.

ml_dtypes' ufuncs compute each element in float32 and round once, which is what PyTorch does for one
elementwise op (add, exp, tanh, ...), including a Python scalar operand rounded to bfloat16 first (add,
sub, pow, comparisons). They differ where a kernel takes several steps or accumulates, so those kernels
run in float32 and round their results once:
- sum, cumsum, cumprod (ml_dtypes would round every partial sum: 1000 ones would sum to 256), matmul
  (ml_dtypes returns float32), sigmoid, erf, softmax, log_softmax, clip, conv/pool, embedding_bag
  (batch_norm in norm.py accumulates in float32 for bfloat16 as for float16);
- mul and div by a Python number keep it a float32 (PyTorch's scalar "opmath"); a scalar divided by a
  tensor is the tensor's reciprocal times the scalar (how torch's __rdiv__ computes it);
- where with a Python scalar rounds it to bfloat16 (np.where would make float32);
- conversions to bfloat16 from float64, int32 and int64 go through float32, as PyTorch's (ml_dtypes rounds
  the exact value: 1 + 2**-8 + 2**-30 -> 1.0078125 where PyTorch gives 1.0).
prod stays in bfloat16, as PyTorch accumulates it. Every kernel here hands other dtypes to the generic
kernel unchanged; no kernel imports ml_dtypes before a bfloat16 array or dtype name reaches it.
"""
from __future__ import annotations

import numpy as np
from numpy import ndarray

_V = "V"            # the kind of ml_dtypes' bfloat16; the only kind-"V" dtype this backend serves
_F32 = np.dtype(np.float32)
_np_bf16 = None


def _bf16():
    global _np_bf16
    if _np_bf16 is None:
        import ml_dtypes
        _np_bf16 = np.dtype(ml_dtypes.bfloat16)
    return _np_bf16


def _is_bf16(x):
    return x.__class__ is ndarray and x.dtype.kind == _V


def _arr(r):
    return r if r.__class__ is ndarray else np.asarray(r)


def to_bf16(a):
    """An array (or scalar) rounded to bfloat16 as PyTorch rounds: wide types through float32."""
    a = np.asarray(a)
    if a.dtype.kind in "fiu" and a.dtype.itemsize > 2:
        with np.errstate(over="ignore", invalid="ignore"):
            a = a.astype(_F32)
    return a.astype(_bf16())


def _finish(r, out):
    """float32 result r rounded into out, or as a new bfloat16 array."""
    if out is None:
        return _arr(r.astype(_bf16()))
    np.copyto(out, r, casting="unsafe")
    return out


def in_float32(kernel):
    """kernel computed in float32 when its first argument is bfloat16: bfloat16 arrays among the arguments
    are widened, float32 arrays among the results rounded back."""
    def run(*args, **kwargs):
        if not _is_bf16(args[0]):
            return kernel(*args, **kwargs)
        out = kwargs.pop("out", None)
        wide = [a.astype(_F32) if _is_bf16(a) else a for a in args]
        r = kernel(*wide, **kwargs)
        if isinstance(r, tuple):
            return tuple(x.astype(_bf16()) if x.__class__ is ndarray and x.dtype == _F32 else x for x in r)
        return _finish(_arr(r), out)
    run.__name__ = getattr(kernel, "__name__", "kernel")
    return run


def _scaled(ufunc, reflected_reciprocal):
    """mul / div: a Python number stays float32 against a bfloat16 array (PyTorch's CPU scalar). Hot
    kernels: the generic kernel's two lines are repeated here rather than called."""
    def kernel(x, y, out=None):
        if x.__class__ is not ndarray or y.__class__ is not ndarray:
            cx, cy = x.__class__, y.__class__
            if (cy is float or cy is int) and cx is ndarray and x.dtype.kind == "V":
                return _finish(ufunc(x, np.float32(y), dtype=_F32), out)
            if (cx is float or cx is int) and cy is ndarray and y.dtype.kind == "V":
                if reflected_reciprocal:        # s / t is reciprocal(t) * s, each step rounded as torch's
                    y = np.reciprocal(y)
                return _finish(np.multiply(y, np.float32(x), dtype=_F32), out)
        r = ufunc(x, y) if out is None else ufunc(x, y, out=out)
        return r if r.__class__ is ndarray else np.asarray(r)
    kernel.__name__ = ufunc.__name__
    return kernel


def _summing(ufunc, base):
    def kernel(x, axes, keepdims, dtype=None):
        if dtype is None and x.dtype.kind == "V":   # bfloat16 sums in float32 (ml_dtypes would round every partial sum)
            return _arr(ufunc.reduce(x, axis=axes, keepdims=keepdims, dtype=_F32).astype(x.dtype))
        return base(x, axes, keepdims, dtype)
    return kernel


def _scan(base, accumulate):
    def kernel(x, axis):
        if x.dtype.kind == _V and x.ndim:
            return accumulate(x, axis=axis, dtype=_F32).astype(x.dtype)
        return base(x, axis)
    return kernel


def _with_dtype(base, via="float32"):
    """A kernel whose last argument names the result dtype: "bfloat16" is made in `via` and rounded."""
    def kernel(*args):
        if args[-1] != "bfloat16":
            return base(*args)
        return _arr(to_bf16(base(*args[:-1], via)))
    return kernel


def build(k) -> dict:
    """Replacements for entries of the generic kernel table k (see the module docstring)."""
    base_astype, base_full, base_assign, base_uniform = k["astype"], k["full"], k["assign"], k["uniform"]
    base_sign, base_where = k["sign"], k["where"]

    def astype(x, dtype):
        if dtype == "bfloat16":
            return to_bf16(x) if x.dtype.kind != _V else x.astype(x.dtype)
        if x.dtype.kind == _V:
            with np.errstate(invalid="ignore", over="ignore"):      # NaN / inf to integers, as PyTorch
                # to integers through float32: NumPy's float32 casts wrap out-of-range values as PyTorch's
                # do (300 -> uint8 44); ml_dtypes' own casts give 0
                return x.astype(_F32).astype(dtype) if dtype not in ("bool", "float16", "float32", "float64") \
                    else x.astype(dtype)
        return base_astype(x, dtype)

    def full(shape, value, dtype):
        if dtype == "bfloat16":
            return np.full(shape, to_bf16(value), dtype=_bf16())
        return base_full(shape, value, dtype)

    def assign(dst, src):
        if dst.dtype.kind == _V and (src.__class__ is not ndarray or src.dtype.kind != _V):
            src = to_bf16(src)
        base_assign(dst, src)

    def uniform(state, shape, dtype):
        if dtype != "bfloat16":
            return base_uniform(state, shape, dtype)
        r = to_bf16(state.random(shape, dtype=np.float32))
        one = np.array(1, dtype=r.dtype)
        np.minimum(r, np.nextafter(one, np.zeros_like(one)), out=r)   # rounding can reach 1.0
        return _arr(r)

    def sign(x, out=None):
        r = base_sign(x, out=out)
        if r.dtype.kind == _V:          # PyTorch's sign(NaN) is 0
            np.copyto(r, 0, where=np.isnan(r))
        return r

    def where(c, x, y):
        # np.where makes float32 of bfloat16 and a Python float: the scalar is rounded to bfloat16 first
        if y.__class__ is not ndarray and _is_bf16(x):
            y = to_bf16(y)
        elif x.__class__ is not ndarray and _is_bf16(y):
            x = to_bf16(x)
        return base_where(c, x, y)

    def bf16_matmul(a, b):          # hot: the generic kernel's line is repeated rather than called
        if a.dtype.kind == _V:
            return _arr(np.matmul(a.astype(_F32), b.astype(_F32)).astype(a.dtype))
        return _arr(np.matmul(a, b))

    out = {
        "mul": _scaled(np.multiply, False), "div": _scaled(np.true_divide, True), "sum": _summing(np.add, k["sum"]),
        "cumsum": _scan(k["cumsum"], np.add.accumulate), "cumprod": _scan(k["cumprod"], np.multiply.accumulate),
        "matmul": bf16_matmul, "astype": astype, "full": full, "assign": assign, "sign": sign, "where": where,
        "uniform": uniform, "normal": _with_dtype(k["normal"]), "arange": _with_dtype(k["arange"], "float64"),
        "randint": _with_dtype(k["randint"]), "randperm": _with_dtype(k["randperm"]),
    }
    for name in ("sigmoid", "erf", "softmax", "log_softmax", "clip", "conv", "conv_transpose", "max_pool",
                 "avg_pool", "embedding_bag"):      # (batch_norm: norm.py works in float32 itself)
        if name in k:
            out[name] = in_float32(k[name])
    return out
