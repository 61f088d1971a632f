"""Records of the pointwise kernels: unary and binary math, comparisons, logical and bitwise ops,
`where`. References are NumPy ufuncs on float64 / int64 inputs, cast to the result dtype."""
from __future__ import annotations

import math

import numpy as np

from ._base import (ALL, COMPLEX, FLOAT, INT, INTBOOL, NUMERIC, REAL_OF, A, ErrorCase, OpRecord, Sample,
                    binary_samples, register, unary_samples, values)

_erf = np.vectorize(math.erf, otypes=[np.float64])


def unary(name, dtypes, ref, out_dtype=None, lo=None, hi=None, family="pointwise", tol=None, errors=(),
          edge_filter=None, doc=""):
    return register(OpRecord(
        name, family, dtypes, lambda dt, rng: unary_samples(dt, rng, lo, hi, edge_filter=edge_filter),
        ref=ref, out_dtype=out_dtype, supports_out=True, tol=tol, errors=list(errors), doc=doc))


def binary(name, dtypes, ref, out_dtype=None, family="pointwise", tol=None, errors=(), **sample_kw):
    return register(OpRecord(
        name, family, dtypes, lambda dt, rng: binary_samples(dt, rng, **_kw(sample_kw, dt)),
        ref=ref, out_dtype=out_dtype, supports_out=True, tol=tol, errors=list(errors)))


def _kw(kw, dt):
    return {k: (v(dt) if callable(v) and k not in ("pair_filter",) else v) for k, v in kw.items()}


def _broadcast_error(fname):
    return ErrorCase(f"{fname} of shapes (2, 3) and (2,) (not broadcastable)",
                     lambda T: getattr(_torch(), fname)(T([[1, 2, 3], [4, 5, 6]]), T([1, 2])))


def _torch():
    import tensorplug
    return tensorplug


# -- unary ---------------------------------------------------------------------------------------
unary("neg", NUMERIC + COMPLEX, np.negative, errors=[ErrorCase(
    "neg of a bool tensor", lambda T: _torch().neg(T([True, False])), (RuntimeError, TypeError))])
unary("abs", NUMERIC + COMPLEX, np.abs, out_dtype=lambda dt, s: REAL_OF.get(dt, dt),
      doc="magnitudes; complex inputs give the matching float dtype")
def _sign(a):
    r = np.sign(a)
    return np.where(np.isnan(r), 0, r).astype(r.dtype) if r.dtype.kind == "f" else r


unary("sign", NUMERIC, _sign, doc="sign(NaN) is 0, as PyTorch")
for _n, _f in (("exp", np.exp), ("log", np.log), ("sqrt", np.sqrt), ("sin", np.sin), ("cos", np.cos),
               ("tanh", np.tanh)):
    unary(_n, FLOAT + COMPLEX, _f)
unary("erf", FLOAT, _erf)
unary("tan", FLOAT + COMPLEX, np.tan, lo=-1.4, hi=1.4, edge_filter=lambda e: np.abs(e) < 1e4)
def _integers_unchanged(f):
    # rounding an integer is the identity; a float64 detour would lose large int64 values
    return lambda a: a.copy() if a.dtype.kind in "iub" else f(a)


unary("floor", NUMERIC, _integers_unchanged(np.floor))
unary("ceil", NUMERIC, _integers_unchanged(np.ceil))
unary("round", NUMERIC, _integers_unchanged(np.rint), doc="round half to even")
unary("trunc", NUMERIC, _integers_unchanged(np.trunc))
unary("logical_not", ALL, np.logical_not, out_dtype="bool")
unary("bitwise_not", INTBOOL, np.invert, errors=[ErrorCase(
    "bitwise_not of a float tensor", lambda T: _torch().bitwise_not(T([1.5])))])
unary("isnan", FLOAT + COMPLEX, np.isnan, out_dtype="bool", doc="complex: NaN in either part")


# -- binary --------------------------------------------------------------------------------------
def _int_div_pairs(a, b):
    """Pairs for integer / float division-like ops: no zero or infinite divisor, no MIN / -1."""
    keep = (b != 0) & np.isfinite(b) & (np.isfinite(a) | np.isnan(a))
    return keep & ~((a <= -128) & (b == -1))


def _div_samples(dt, rng):
    out = binary_samples(dt, rng, pair_filter=_int_div_pairs)
    # integer divisors must be nonzero: move zeros away (the frontend raises for them)
    for s in out:
        b = s.args[1]
        if isinstance(b, A):
            b.value[b.value == 0] = 1
        elif b == 0:
            s.args = (s.args[0], type(b)(1))
    if dt in INT:
        mixed = values(rng, dt, (12,), -20, 20)
        div = np.array([3, -3, 5, -5, 7, -7, 2, -2, 4, -4, 1, -1] if dt != "uint8" else
                       [3, 3, 5, 5, 7, 7, 2, 2, 4, 4, 1, 1], dtype=dt)
        out.append(Sample((A(mixed), A(div)), desc="signs mixed (floor vs trunc rounding)"))
    else:
        a = np.array([7.5, -7.5, 7.5, -7.5, 3.0, -3.0, 0.0, -0.0, 5.25], dtype=dt)
        b = np.array([2.0, 2.0, -2.0, -2.0, 0.5, 0.5, 3.0, 3.0, -1.75], dtype=dt)
        out.append(Sample((A(a), A(b)), desc="signs mixed, exact quotients"))
    return out


def _div_record(name, dtypes, ref, zero_msg=True):
    errors = [_broadcast_error(name if name != "floor_divide" else "floor_divide")]
    if zero_msg:
        errors.append(ErrorCase(f"integer {name} by zero",
                                lambda T: getattr(_torch(), name)(T([1, 2]), T([1, 0]))))
    return register(OpRecord(name, "pointwise", dtypes, _div_samples, ref=ref, supports_out=True,
                             errors=errors))


binary("add", NUMERIC + ("bool",) + COMPLEX, np.add, errors=[_broadcast_error("add")])
binary("sub", NUMERIC + COMPLEX, np.subtract, errors=[_broadcast_error("sub"), ErrorCase(
    "sub of two bool tensors", lambda T: _torch().sub(T([True]), T([False])))])
binary("mul", NUMERIC + ("bool",) + COMPLEX, np.multiply, errors=[_broadcast_error("mul")])
binary("div", FLOAT + COMPLEX, np.true_divide, errors=[_broadcast_error("div")])
_div_record("floor_divide", NUMERIC, np.floor_divide)
_div_record("remainder", NUMERIC, np.remainder)
_div_record("fmod", NUMERIC, np.fmod)


def _pow_samples(dt, rng):
    if dt in INT:
        return binary_samples(dt, rng, lo=-6, hi=6, rlo=0, rhi=5,
                              pair_filter=lambda a, b: (b >= 0) & (b <= 64))
    return binary_samples(dt, rng, lo=0.1, hi=4.0, rlo=-3.0, rhi=3.0) + [
        Sample((A(values(rng, dt, (8,), -4, 4)), A(np.array([0, 1, 2, 3, -1, -2, 3, 2], dtype=dt))),
               desc="negative bases, integral exponents")]


register(OpRecord("pow", "pointwise", NUMERIC + COMPLEX, _pow_samples, ref=np.power, supports_out=True,
                  tol={"complex64": (1e-4, 1e-5)},      # exp(b log a) in single precision
                  errors=[_broadcast_error("pow"), ErrorCase(
                      "integer tensor to a negative integer power",
                      lambda T: _torch().pow(T([2, 3]), T([1, -1])))]))
binary("maximum", ALL, np.maximum, errors=[_broadcast_error("maximum")])
binary("minimum", ALL, np.minimum, errors=[_broadcast_error("minimum")])
binary("atan2", FLOAT, np.arctan2, errors=[_broadcast_error("atan2")])
for _n, _f in (("eq", np.equal), ("ne", np.not_equal), ("lt", np.less), ("le", np.less_equal),
               ("gt", np.greater), ("ge", np.greater_equal)):
    binary(_n, ALL + (COMPLEX if _n in ("eq", "ne") else ()), _f, out_dtype="bool",
           errors=[_broadcast_error(_n)] + ([ErrorCase(f"{_n} of complex tensors (no order)",
                                                       lambda T, n=_n: getattr(_torch(), n)(T([1j]), T([2j])),
                                                       NotImplementedError)] if _n not in ("eq", "ne") else []))
for _n, _f in (("logical_and", np.logical_and), ("logical_or", np.logical_or),
               ("logical_xor", np.logical_xor)):
    binary(_n, ALL, _f, out_dtype="bool", errors=[_broadcast_error(_n)])
for _n, _f in (("bitwise_and", np.bitwise_and), ("bitwise_or", np.bitwise_or),
               ("bitwise_xor", np.bitwise_xor)):
    binary(_n, INTBOOL, _f, errors=[_broadcast_error(_n), ErrorCase(
        f"{_n} of float tensors", lambda T, n=_n: getattr(_torch(), n)(T([1.5]), T([2.5])))])


def _bits(dt):
    return np.iinfo(dt).bits


def _shift_samples(dt, rng):
    bits = _bits(dt)
    return binary_samples(dt, rng, lo=None, hi=None, rlo=0, rhi=bits - 1,
                          pair_filter=lambda a, b: (b >= 0) & (b < bits))


def _shift_ref(fn):
    return lambda a, b: fn(np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64))


register(OpRecord("left_shift", "pointwise", INT, _shift_samples, ref=_shift_ref(np.left_shift),
                  supports_out=True, errors=[_broadcast_error("bitwise_left_shift")]))
register(OpRecord("right_shift", "pointwise", INT, _shift_samples, ref=_shift_ref(np.right_shift),
                  supports_out=True, errors=[_broadcast_error("bitwise_right_shift")]))


# -- where ---------------------------------------------------------------------------------------
def _where_samples(dt, rng):
    c = lambda *s: A(rng.random(s) < 0.5)  # noqa: E731
    v = lambda *s: values(rng, dt, s)  # noqa: E731
    from ._base import edges, scalar
    e = edges(dt)
    return [
        Sample((c(3, 4), A(v(3, 4)), A(v(3, 4)))),
        Sample((c(), A(v()), A(v()))),
        Sample((c(2, 3), A(v(3)), A(v(2, 1)))),
        Sample((c(3), A(v(2, 3), "T"), A(v(2, 3), "S"))),
        Sample((c(2, 3), A(v(2, 3)), scalar(dt))),
        Sample((c(2, 3), scalar(dt, 1), A(v(3)))),
        Sample((c(0, 3), A(v(0, 3)), A(v(3)))),
        Sample((A(rng.random(e.shape) < 0.5), A(e), A(e[::-1].copy())), desc="edge values"),
    ]


register(OpRecord("where", "pointwise", ALL + COMPLEX, _where_samples, ref=lambda c, x, y: np.where(c, x, y),
                  errors=[ErrorCase("where with a condition of shape (2,) and values of shape (3,)",
                                    lambda T: _torch().where(T([True, False]), T([1., 2., 3.]), 0.0))]))
