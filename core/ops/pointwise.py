"""Pointwise ops: arithmetic, comparison, logical and bitwise operators, and unary math.

Each op: prepare operands (promotion, broadcasting check), run the kernel, and if an
input requires grad record a vjp written in Tensor ops (so it can be differentiated again).
"""
from __future__ import annotations

import math

from .. import dtypes as _dt
from ..amp.state import state as _amp
from ..autograd.grad_mode import no_grad as _no_grad
from ._core import SparseOpError
from ._core import (Tensor, _gstate, _make, broadcast_shapes, check_cast, check_inplace, commit_inplace,
                    grad_for, is_scalar, prep_binary, record, snapshot, zeros_like_grad)
from .complex import cj, not_for_complex, real as _real, sgn
from ._float32 import in_float32, round_scalar
from ._limits import check_fill

# -- binary ------------------------------------------------------------------------------------


def _binary(kname, a, b, float_result=False):
    ad, bd, dt, k, dev, shape = prep_binary(a, b, float_result)
    check = k["__check__"]
    if check is None:
        return _make(k[kname](ad, bd), dt, k, dev)
    # a backend whose results are checked: against the shape prep_binary computed (one compare)
    return _make(check[kname](ad, bd, shape), dt, k, dev)


def _sparse_ops():
    from ..sparse import _ops
    return _ops


def _rg(x):
    return x.__class__ is Tensor and x._rg or isinstance(x, Tensor) and x._rg


def _both_bfloat16(a, b):
    return getattr(a, "_dtype", None) is _dt.bfloat16 and getattr(b, "_dtype", None) is _dt.bfloat16


def add(input, other, *, alpha=1, out=None):
    """input + alpha * other, broadcast. >>> add(tensor([1., 2.]), 1) -> tensor([2., 3.])"""
    if alpha != 1:
        if _both_bfloat16(input, other):    # PyTorch: alpha in bfloat16, x + alpha * y in float32, one rounding
            return _out(add(input.float(), other.float(), alpha=round_scalar(alpha)).to(_dt.bfloat16), out)
        other = mul(other, alpha)
    try:
        r = _binary("add", input, other)
    except SparseOpError:                   # torch.add with a sparse COO operand (a zero-cost try)
        return _out(_sparse_ops().add(input, other), out)
    if _gstate.enabled and (_rg(input) or _rg(other)):
        _record_add(r, input, other)
    return _out(r, out)


def sub(input, other, *, alpha=1, out=None):
    if isinstance(input, Tensor) and input._dtype is _dt.bool_ and isinstance(other, Tensor) \
            and other._dtype is _dt.bool_:
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported. "
                           "Use the `^` or `logical_xor()` operator instead.")
    if alpha != 1:
        if _both_bfloat16(input, other):
            return _out(sub(input.float(), other.float(), alpha=round_scalar(alpha)).to(_dt.bfloat16), out)
        other = mul(other, alpha)
    try:
        r = _binary("sub", input, other)
    except SparseOpError:
        return _out(_sparse_ops().sub(input, other), out)
    if _gstate.enabled and (_rg(input) or _rg(other)):
        _record_sub(r, input, other)
    return _out(r, out)


def mul(input, other, *, out=None):
    try:
        r = _binary("mul", input, other)
    except SparseOpError:                   # a sparse COO tensor times a scalar
        s, o = (input, other) if getattr(input, "is_sparse", False) else (other, input)
        r = _sparse_ops().mul(s, o)
        if r is NotImplemented:
            raise
        return _out(r, out)
    if _gstate.enabled and (_rg(input) or _rg(other)):
        _record_mul(r, input, other)
    return _out(r, out)


def div(input, other, *, rounding_mode=None, out=None):
    if rounding_mode is None:
        try:
            r = _binary("div", input, other, float_result=True)
        except SparseOpError:
            r = _sparse_ops().div(input, other) if getattr(input, "is_sparse", False) else NotImplemented
            if r is NotImplemented:
                raise
            return _out(r, out)
        if _gstate.enabled and (_rg(input) or _rg(other)):
            _record_div(r, input, other)
        return _out(r, out)
    if rounding_mode == "trunc":
        ad, bd, dt, k, dev, _ = prep_binary(input, other)
        if dt.category == 3:
            raise not_for_complex("div_trunc_cpu", dt)
        if dt.category == 2:
            r = _make(k["trunc"](k["div"](ad, bd)), dt, k, dev)
        else:
            # integer floor division corrected toward zero where the signs differ and it is inexact
            q = floor_divide(input, other)
            inexact = remainder(input, other) != 0
            r = q + (inexact & ((input < 0) != (other < 0))).to(dt)
        return _out(_zero_grad_op("DivBackward1", r, input, other), out)
    if rounding_mode == "floor":
        return floor_divide(input, other, out=out)
    raise ValueError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found "
                     f"{rounding_mode!r}")


# The four arithmetic ops' autograd records, shared by the functions above and the operators'
# fast path (_fast_binary). A Tensor and a Python scalar get a vjp without _grads2's generic steps.
def _record_add(r, a, b):
    if a.__class__ is Tensor and b.__class__ is Tensor or isinstance(a, Tensor) and isinstance(b, Tensor):
        record("AddBackward0", r, (a, b), lambda g: _grads2(g, a, b, g, g))
    else:
        t = a if isinstance(a, Tensor) else b
        record("AddBackward0", r, (t,), lambda g: (grad_for(g, t),))


def _record_sub(r, a, b):
    if a.__class__ is Tensor and b.__class__ is Tensor or isinstance(a, Tensor) and isinstance(b, Tensor):
        record("SubBackward0", r, (a, b), lambda g: _grads2(g, a, b, g, lambda: -g))
    elif isinstance(a, Tensor):
        record("SubBackward0", r, (a,), lambda g: (grad_for(g, a),))
    else:
        record("SubBackward0", r, (b,), lambda g: (grad_for(-g, b),))


def _record_mul(r, a, b):
    if a.__class__ is Tensor and b.__class__ is Tensor or isinstance(a, Tensor) and isinstance(b, Tensor):
        def vjp(g):
            return (grad_for(g * cj(b), a) if a._rg else None, grad_for(g * cj(a), b) if b._rg else None)
        ins = (a, b)
        record("MulBackward0", r, ins, vjp, saved=ins)
    else:
        t, s = (a, b) if isinstance(a, Tensor) else (b, a)
        s = _cjs(s)
        ins = (t,)
        record("MulBackward0", r, ins, lambda g: (grad_for(g * s, t),), saved=ins)


def _record_div(r, a, b):
    if a.__class__ is Tensor and b.__class__ is Tensor or isinstance(a, Tensor) and isinstance(b, Tensor):
        record("DivBackward0", r, (a, b),
               lambda g: _grads2(g, a, b, lambda: g / _cjs(b), lambda: -g * _cjs(a / (b * b))), saved=(a, b))
    elif isinstance(a, Tensor):
        s = _cjs(b)
        record("DivBackward0", r, (a,), lambda g: (grad_for(g / s, a),), saved=(a,))
    else:
        record("DivBackward0", r, (b,), lambda g: (grad_for(-g * _cjs(a / (b * b)), b),), saved=(b,))


def _any_true(k, data) -> bool:
    if isinstance(data, (bool, int, float)):
        return bool(data)
    return bool(k["to_numpy"](k["any"](data, None, False)))


def _check_int_div(k, bd):
    zero = (bd == 0) if isinstance(bd, (bool, int, float)) else _any_true(k, k["eq"](bd, 0))
    if zero:
        raise RuntimeError("ZeroDivisionError: integer division by zero")


def floor_divide(input, other, *, out=None):
    ad, bd, dt, k, dev, _ = prep_binary(input, other)
    if dt.category != 2:
        if dt.category == 3:
            raise not_for_complex("div_floor_cpu", dt)
        _check_int_div(k, bd)
    r = _make(k["floor_divide"](ad, bd), dt, k, dev)
    return _out(_zero_grad_op("FloorDivideBackward0", r, input, other), out)


def remainder(input, other, *, out=None):
    ad, bd, dt, k, dev, _ = prep_binary(input, other)
    if dt.category != 2:
        if dt.category == 3:
            raise not_for_complex("remainder_cpu", dt)
        _check_int_div(k, bd)
    r = _make(k["remainder"](ad, bd), dt, k, dev)
    if _gstate.enabled and (_rg(input) or _rg(other)):
        a, b = input, other
        record("RemainderBackward0", r, _tensors(a, b),
               lambda g: _grads2(g, a, b, g, lambda: -g * floor_divide(a, b)), saved=_tensors(a, b))
    return _out(r, out)


def fmod(input, other, *, out=None):
    ad, bd, dt, k, dev, _ = prep_binary(input, other)
    if dt.category != 2:
        if dt.category == 3:
            raise not_for_complex("fmod_cpu", dt)
        _check_int_div(k, bd)
    r = _make(k["fmod"](ad, bd), dt, k, dev)
    if _gstate.enabled and (_rg(input) or _rg(other)):
        a, b = input, other
        record("FmodBackward0", r, _tensors(a, b),
               lambda g: _grads2(g, a, b, g, lambda: -g * div(a, b, rounding_mode="trunc")),
               saved=_tensors(a, b))
    return _out(r, out)


def pow(input, exponent, *, out=None):
    if _amp.on:
        return _amp.run("pow", pow, (input, exponent), {"out": out})
    ad, bd, dt, k, dev, _ = prep_binary(input, exponent)
    if dt.category == 1:
        negative = (bd < 0) if isinstance(bd, (bool, int)) else _any_true(k, k["lt"](bd, 0))
        if negative:
            raise RuntimeError("Integers to negative integer powers are not allowed.")
    r = _make(k["pow"](ad, bd), dt, k, dev)
    if _gstate.enabled and (_rg(input) or _rg(exponent)):
        a, b = input, exponent
        if not isinstance(b, Tensor):
            record("PowBackward0", r, (a,),
                   lambda g: (grad_for(g * cj(b * a.pow(b - 1)), a) if b != 0 else zeros_like_grad(a),),
                   saved=(a,))
        else:
            def vjp(g):
                ga = gb = None
                if _rg(a):
                    ga = grad_for(where(b == 0, 0.0, g * _cjs(b * pow(a, b - 1))), a)
                if b._rg:
                    # d/db a^b = a^b log a, defined as 0 where a == 0 and b >= 0 (Re(b) for complex b)
                    safe = where((a == 0) & (_real(b) >= 0), 1.0, a) if isinstance(a, Tensor) else a
                    lg = log(safe) if isinstance(safe, Tensor) else _log_scalar(safe)
                    gb = grad_for(g * cj(pow(a, b) * lg), b)
                return _pair(a, b, ga, gb)
            record("PowBackward1", r, _tensors(a, b), vjp, saved=_tensors(a, b))
    return _out(r, out)


def _log_scalar(v):
    if isinstance(v, complex):
        import cmath
        return cmath.log(v) if v != 0 else float("nan")
    return math.log(v) if v > 0 else float("nan")


def _cjs(x):
    """The conjugate of a tensor or a Python number (free for real ones)."""
    if isinstance(x, Tensor):
        return cj(x)
    return x.conjugate() if isinstance(x, complex) else x


def float_power(input, exponent):
    cx = any(isinstance(v, complex) or isinstance(v, Tensor) and v._dtype.category == 3 for v in (input, exponent))
    wide = _dt.complex128 if cx else _dt.float64
    a = input.to(wide) if isinstance(input, Tensor) else (complex(input) if cx else float(input))
    b = exponent.to(wide) if isinstance(exponent, Tensor) else (complex(exponent) if cx else float(exponent))
    return pow(a, b)


def _tie_split(mask_gt, eq):
    return mask_gt.to(_dt.get_default_dtype()) + 0.5 * eq.to(_dt.get_default_dtype())


def _no_complex_pair(name, a, b):
    if a._dtype.category == 3 or b._dtype.category == 3:
        raise RuntimeError(f"{name} not implemented for complex tensors.")


def maximum(input, other, *, out=None):
    if not isinstance(other, Tensor):
        raise TypeError("maximum(): argument 'other' must be Tensor")
    _no_complex_pair("maximum", input, other)
    r = _binary("maximum", input, other)
    if _gstate.enabled and (input._rg or other._rg):
        a, b = input, other

        def vjp(g):
            wa = _tie_split(a > b, a == b).to(g.dtype)
            return _grads2(g, a, b, lambda: g * wa, lambda: g * (1 - wa))
        record("MaximumBackward0", r, (a, b), vjp, saved=(a, b))
    return _out(r, out)


def minimum(input, other, *, out=None):
    if not isinstance(other, Tensor):
        raise TypeError("minimum(): argument 'other' must be Tensor")
    _no_complex_pair("minimum", input, other)
    r = _binary("minimum", input, other)
    if _gstate.enabled and (input._rg or other._rg):
        a, b = input, other

        def vjp(g):
            wa = _tie_split(a < b, a == b).to(g.dtype)
            return _grads2(g, a, b, lambda: g * wa, lambda: g * (1 - wa))
        record("MinimumBackward0", r, (a, b), vjp, saved=(a, b))
    return _out(r, out)


def fmax(input, other):
    """Elementwise maximum that ignores NaN when the other value is a number."""
    _no_complex_pair("fmax", input, other if isinstance(other, Tensor) else input)
    return where(isnan(other) | (input >= other), input, other)


def fmin(input, other):
    """Elementwise minimum that ignores NaN when the other value is a number."""
    _no_complex_pair("fmin", input, other if isinstance(other, Tensor) else input)
    return where(isnan(other) | (input <= other), input, other)


def atan2(input, other, *, out=None):
    if _amp.on:
        return _amp.run("atan2", atan2, (input, other), {"out": out})
    ad, bd, dt, k, dev, _ = prep_binary(input, other, True)
    if dt.category == 3:
        raise not_for_complex("atan2_cpu", dt)
    r = _make(k["atan2"](ad, bd), dt, k, dev)
    if _gstate.enabled and (_rg(input) or _rg(other)):
        a, b = input, other

        def vjp(g):
            denom = a * a + b * b
            return _grads2(g, a, b, lambda: g * b / denom, lambda: -g * a / denom)
        record("Atan2Backward0", r, _tensors(a, b), vjp, saved=_tensors(a, b))
    return _out(r, out)


arctan2 = atan2


def _tensors(a, b):
    if isinstance(a, Tensor):
        return (a, b) if isinstance(b, Tensor) else (a,)
    return (b,) if isinstance(b, Tensor) else ()


def _pair(a, b, ga, gb):
    out = []
    if isinstance(a, Tensor):
        out.append(ga)
    if isinstance(b, Tensor):
        out.append(gb)
    return tuple(out)


def _grads2(g, a, b, ga, gb):
    """Per-input grads (for the tensor inputs only), computed lazily and reduced to shape."""
    out = []
    if isinstance(a, Tensor):
        out.append(grad_for(ga() if callable(ga) else ga, a) if a._rg else None)
    if isinstance(b, Tensor):
        out.append(grad_for(gb() if callable(gb) else gb, b) if b._rg else None)
    return tuple(out)


def _zero_grad_op(name, r, a, b):
    """Record an op whose derivative is zero almost everywhere (floor_divide, rounding)."""
    if r._dtype.is_floating_point and _gstate.enabled and (_rg(a) or _rg(b)):
        ins = _tensors(a, b)
        record(name, r, ins, lambda g: tuple(zeros_like_grad(t) if t._rg else None for t in ins))
    return r


def _out(r, out):
    if out is None:
        return r
    if not isinstance(out, Tensor):
        raise TypeError(f"out= must be a Tensor, got {type(out).__name__}")
    if out._rg and _gstate.enabled:
        raise RuntimeError("out= arguments don't support automatic differentiation, but one of the "
                           "arguments requires grad.")
    if out._data.shape != r._data.shape:
        out._data = out._k["copy"](out._k["full"](r._data.shape, 0, out._dtype.name))
    check_cast(r._dtype, out._dtype)
    out._k["assign"](out._data, r._data)
    out._bump_version()
    return out


# -- comparisons, logical and bitwise (no gradient) -----------------------------------------------
def _nograd_binary(kname, doc, int_only=False, logical=False, ordered=False):
    cname = {"left_shift": "lshift_cpu", "right_shift": "rshift_cpu"}.get(kname, kname + "_cpu")

    def op(input, other, *, out=None):
        if logical:
            ad, bd, dt, k, dev, _ = prep_binary(input, other)
            r = _make(k[kname](ad, bd), _dt.bool_, k, dev)
            return _out(r, out)
        ad, bd, dt, k, dev, _ = prep_binary(input, other)
        if (ordered or int_only) and dt.category == 3:
            raise not_for_complex(cname, dt)       # complex numbers have no order, and no bits
        if int_only and dt.category == 2:
            raise RuntimeError(f"\"{kname}\" is only supported for integer and bool tensors, got {dt!r}")
        r = _make(k[kname](ad, bd), _dt.bool_ if not int_only else dt, k, dev)
        return _out(r, out)
    op.__name__ = kname
    op.__doc__ = doc
    return op


eq = _nograd_binary("eq", "Elementwise ==, as a bool tensor.")
ne = _nograd_binary("ne", "Elementwise !=, as a bool tensor.")
lt = _nograd_binary("lt", "Elementwise <, as a bool tensor.", ordered=True)
le = _nograd_binary("le", "Elementwise <=, as a bool tensor.", ordered=True)
gt = _nograd_binary("gt", "Elementwise >, as a bool tensor.", ordered=True)
ge = _nograd_binary("ge", "Elementwise >=, as a bool tensor.", ordered=True)
less, less_equal, greater, greater_equal, not_equal = lt, le, gt, ge, ne
logical_and = _nograd_binary("logical_and", "Elementwise logical and.", logical=True)
logical_or = _nograd_binary("logical_or", "Elementwise logical or.", logical=True)
logical_xor = _nograd_binary("logical_xor", "Elementwise logical xor.", logical=True)
bitwise_and = _nograd_binary("bitwise_and", "Elementwise & of integer/bool tensors.", int_only=True)
bitwise_or = _nograd_binary("bitwise_or", "Elementwise | of integer/bool tensors.", int_only=True)
bitwise_xor = _nograd_binary("bitwise_xor", "Elementwise ^ of integer/bool tensors.", int_only=True)
bitwise_left_shift = _nograd_binary("left_shift", "Elementwise << of integer tensors.", int_only=True)
bitwise_right_shift = _nograd_binary("right_shift", "Elementwise >> of integer tensors.", int_only=True)


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """|input - other| <= atol + rtol * |other| elementwise (infinities equal only to themselves)."""
    if not isinstance(other, Tensor):
        if not is_scalar(other):
            raise TypeError(f"isclose(): argument 'other' (position 2) must be Tensor, not {type(other).__name__}")
        other = _full_like(input, other)
    same = eq(input, other)
    if input._dtype.category < 2 and other._dtype.category < 2:
        return same
    with _no_grad():
        diff = abs(sub(input, other))
        close = le(diff, add(mul(abs(other), rtol), atol)) & isfinite(diff)
        result = same | close
        if equal_nan:
            result = result | (isnan(input) & isnan(other))
    return result


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False) -> bool:
    """True when every element pair is close (see isclose)."""
    c = isclose(input, other, rtol, atol, equal_nan)
    return bool(c._k["to_numpy"](c._k["all"](c._data, None, False)))


def equal(input, other) -> bool:
    """True if both tensors have the same shape and elements."""
    if tuple(input.shape) != tuple(other.shape):
        return False
    same = eq(input, other)
    return bool(same._k["to_numpy"](same._k["all"](same._data, None, False)))


# -- unary -----------------------------------------------------------------------------------------
def _unary(kname, name, grad_rule=None, float_only=False, saves="x", zero_grad=False, int_ok=True,
           no_complex=None, autocast=False, no_bool=None):
    """Build a unary op. grad_rule(g, x, y) -> input grad, written in Tensor ops (conjugating f'(x),
    so it holds for complex x too). no_complex: PyTorch's message for complex inputs ('{}' -> the
    dtype's C++ name), when the op has no complex version. no_bool: (exception type, message) PyTorch
    raises for a bool input, when it has no bool version. autocast: the op is on an autocast list."""
    def op(input, *, out=None):
        if autocast and _amp.on:
            return _amp.run(kname, op, (input,), {"out": out})
        k = input._k
        dt = input._dtype
        data = input._data
        if dt.category != 2:
            if dt.category == 3:
                if no_complex is not None:
                    raise NotImplementedError(no_complex.format(_CNAMES[dt.name]))
            elif float_only:
                dt = _dt._default[0]
                data = k["astype"](data, dt.name)
            elif not int_ok:
                raise RuntimeError(f"{kname}(): expected a floating-point tensor, got {dt!r}")
            elif no_bool is not None and dt.category == 0:
                raise no_bool[0](no_bool[1])
        r = _make(k[kname](data), dt if kname != "abs" or dt.category != 3 else dt.to_real(), k, input._dev)
        if input._rg and _gstate.enabled:
            record_unary(r, input)
        return _out(r, out)

    # (a function of its own, so that op itself makes no closure cells when nothing is recorded)
    if zero_grad:
        def record_unary(r, x):
            record(name, r, (x,), lambda g: (zeros_like_grad(x),))
    elif saves == "y":
        def record_unary(r, x):
            record(name, r, (x,), lambda g: (grad_rule(g, x, r),), saved=(r,))
    else:
        def record_unary(r, x):
            ins = (x,)
            record(name, r, ins, lambda g: (grad_rule(g, x, None),), saved=ins)
    op.__name__ = kname
    return op


_SQRT_PI = math.sqrt(math.pi)
_CNAMES = {"complex64": "ComplexFloat", "complex128": "ComplexDouble"}
_NO_VML = '"{kernel}" not implemented for \'{{}}\''
_BOOL_NEG = (RuntimeError, "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to "
                           "invert a mask, use the `~` or `logical_not()` operator instead.")
neg = _unary("neg", "NegBackward0", lambda g, x, y: -g, saves=None, no_bool=_BOOL_NEG)
negative = neg
abs = _unary("abs", "AbsBackward0", lambda g, x, y: g * sgn(x),
             no_bool=(NotImplementedError, "\"abs_cpu\" not implemented for 'Bool'"))
absolute = abs
sign = _unary("sign", "SignBackward0", zero_grad=True,
              no_complex="Unlike NumPy, torch.sign is not intended to support complex numbers. Please use "
                         "torch.sgn instead.")
exp = _unary("exp", "ExpBackward0", lambda g, x, y: g * cj(y), float_only=True, saves="y", autocast=True)
log = _unary("log", "LogBackward0", lambda g, x, y: g / cj(x), float_only=True, autocast=True)
sqrt = _unary("sqrt", "SqrtBackward0", lambda g, x, y: g / (2 * cj(y)), float_only=True, saves="y")
sin = _unary("sin", "SinBackward0", lambda g, x, y: g * cj(x.cos()), float_only=True)
cos = _unary("cos", "CosBackward0", lambda g, x, y: -g * cj(x.sin()), float_only=True)
tan = _unary("tan", "TanBackward0", lambda g, x, y: g * cj(1 + y * y), float_only=True, saves="y",
             autocast=True)
tanh = _unary("tanh", "TanhBackward0", lambda g, x, y: g * cj(1 - y * y), float_only=True, saves="y")
sigmoid = _unary("sigmoid", "SigmoidBackward0", lambda g, x, y: g * cj(y * (1 - y)), float_only=True, saves="y")
erf = _unary("erf", "ErfBackward0", lambda g, x, y: g * (2 / _SQRT_PI) * (-(x * x)).exp(), float_only=True,
             no_complex=_NO_VML.format(kernel="erf_vml_cpu"))
log1p = _unary("log1p", "Log1PBackward0", lambda g, x, y: g / cj(1 + x), float_only=True, autocast=True)
expm1 = _unary("expm1", "Expm1Backward0", lambda g, x, y: g * cj(y + 1), float_only=True, saves="y",
               autocast=True)
sinh = _unary("sinh", "SinhBackward0", lambda g, x, y: g * cj(x.cosh()), float_only=True, autocast=True)
cosh = _unary("cosh", "CoshBackward0", lambda g, x, y: g * cj(x.sinh()), float_only=True, autocast=True)
asin = _unary("asin", "AsinBackward0", lambda g, x, y: g / cj((1 - x * x).sqrt()), float_only=True,
              autocast=True)
acos = _unary("acos", "AcosBackward0", lambda g, x, y: -g / cj((1 - x * x).sqrt()), float_only=True,
              autocast=True)
atan = _unary("atan", "AtanBackward0", lambda g, x, y: g / cj(1 + x * x), float_only=True)
arcsin, arccos, arctan = asin, acos, atan
_NO_BOOL_VML = "\"{}_vml_cpu\" not implemented for 'Bool'"
floor = _unary("floor", "FloorBackward0", zero_grad=True, no_complex="floor is not supported for complex inputs",
               no_bool=(NotImplementedError, _NO_BOOL_VML.format("floor")))
ceil = _unary("ceil", "CeilBackward0", zero_grad=True, no_complex="ceil is not supported for complex inputs",
              no_bool=(NotImplementedError, _NO_BOOL_VML.format("ceil")))
trunc = _unary("trunc", "TruncBackward0", zero_grad=True, no_complex="trunc is not supported for complex inputs",
               no_bool=(NotImplementedError, _NO_BOOL_VML.format("trunc")))
fix = trunc
_round_half_even = _unary("round", "RoundBackward0", zero_grad=True,
                          no_complex=_NO_VML.format(kernel="round_vml_cpu"),
                          no_bool=(NotImplementedError, _NO_BOOL_VML.format("round")))


def round(input, *, decimals=0, out=None):
    """Round half to even (like PyTorch); `decimals` scales first."""
    if decimals == 0:
        return _round_half_even(input, out=out)
    scale = 10.0 ** decimals
    return _out(_round_half_even(input * scale) / scale, out)


def logical_not(input, *, out=None):
    return _out(_make(input._k["logical_not"](input._data), _dt.bool_, input._k, input._dev), out)


def bitwise_not(input, *, out=None):
    if input._dtype.category == 3:
        raise not_for_complex("bitwise_not_cpu", input._dtype)
    if input._dtype.category == 2:
        raise RuntimeError(f"bitwise_not is only supported for integer and bool tensors, got {input._dtype!r}")
    return _out(_make(input._k["bitwise_not"](input._data), input._dtype, input._k, input._dev), out)


def isnan(input):
    if input._dtype.category < 2:
        return _make(input._k["full"](input._data.shape, False, "bool"), _dt.bool_, input._k, input._dev)
    return _make(input._k["isnan"](input._data), _dt.bool_, input._k, input._dev)


def isinf(input):
    if input._dtype.category < 2:
        return _make(input._k["full"](input._data.shape, False, "bool"), _dt.bool_, input._k, input._dev)
    return _make(input._k["isinf"](input._data), _dt.bool_, input._k, input._dev)


def isfinite(input):
    if input._dtype.category < 2:
        return _make(input._k["full"](input._data.shape, True, "bool"), _dt.bool_, input._k, input._dev)
    return _make(input._k["isfinite"](input._data), _dt.bool_, input._k, input._dev)


def reciprocal(input):
    if _amp.on:
        return _amp.run("reciprocal", reciprocal, (input,))
    return div(1.0, input)


@in_float32         # bfloat16: one rounding of the float32 value, as PyTorch's kernel (also log2 ... addcdiv)
def rsqrt(input):
    if _amp.on:
        return _amp.run("rsqrt", rsqrt, (input,))
    return reciprocal(sqrt(input))


def square(input):
    if input._dtype is _dt.bool_:       # PyTorch squares bools as pow(x, 2): an int64 result
        input = input.to(_dt.int64)
    return mul(input, input)


@in_float32
def log2(input):
    if _amp.on:
        return _amp.run("log2", log2, (input,))
    return log(input) / math.log(2.0)


@in_float32
def log10(input):
    if _amp.on:
        return _amp.run("log10", log10, (input,))
    return log(input) / math.log(10.0)


def exp2(input):
    return pow(2.0, input)


def frac(input):
    if input._dtype.category == 3:
        raise not_for_complex("frac_cpu", input._dtype)
    if input._dtype is _dt.bool_:
        raise NotImplementedError("\"frac_cpu\" not implemented for 'Bool'")
    return input - trunc(input)


def relu(input):
    """max(x, 0) in one pass; the gradient passes where the output is positive."""
    if input._dtype is _dt.bool_:
        raise RuntimeError("Boolean inputs not supported for relu")
    if input._dtype.category == 3:
        raise NotImplementedError("clamp is not supported for complex types")
    k = input._k
    r = _make(k["maximum"](input._data, 0.0 if input._dtype.category == 2 else 0), input._dtype, k, input._dev)
    if input._rg and _gstate.enabled:
        y = r
        record("ReluBackward0", r, (input,), lambda g: (_pass_where_positive(g, y),), saved=(r,))
    return r


def _pass_where_positive(g, y):
    # y = relu(x) is >= 0 or NaN; PyTorch passes the gradient where not (y <= 0), i.e. where y != 0
    # (NaN included). A multiply by the 0/1 mask is branch-free: faster than a select on random signs.
    return mul(g, ne(y, 0))


def clamp(input, min=None, max=None, *, out=None):
    """Limit values to [min, max]; gradient flows where the input was inside the range."""
    if input._dtype.category == 3:
        raise NotImplementedError("clamp is not supported for complex types")
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    for name, v in (("min", min), ("max", max)):
        if v is not None and not isinstance(v, Tensor) and not is_scalar(v):
            raise TypeError(f"clamp(): argument '{name}' must be Number or Tensor, not {type(v).__name__}")
        if isinstance(v, complex):
            raise RuntimeError("value cannot be converted to type double without overflow")
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        r = input
        if min is not None:
            r = maximum(r, min if isinstance(min, Tensor) else _full_like(input, min))
        if max is not None:
            r = minimum(r, max if isinstance(max, Tensor) else _full_like(input, max))
        return _out(r, out)
    k = input._k
    dt = input._dtype
    if dt.category != 2 and (isinstance(min, float) or isinstance(max, float)):
        dt = _dt._default[0]
    data = input._data if dt is input._dtype else k["astype"](input._data, dt.name)
    r = _make(k["clip"](data, min, max), dt, k, input._dev)
    if input._rg and _gstate.enabled:
        x = input

        def vjp(g):
            mask = None
            if min is not None:
                mask = x >= min
            if max is not None:
                m2 = x <= max
                mask = m2 if mask is None else mask & m2
            return (g * mask.to(g.dtype),)
        record("ClampBackward1", r, (x,), vjp, saved=(x,))
    return _out(r, out)


clip = clamp


def clamp_min(input, min):
    return clamp(input, min=min)


def clamp_max(input, max):
    return clamp(input, max=max)


def _full_like(t, v):
    return _make(t._k["full"](t._data.shape, v, t._dtype.name), t._dtype, t._k, t._dev)


def where(condition, input=None, other=None):
    """Elements of input where condition, else other (broadcast). One argument: nonzero indices."""
    if input is None and other is None:
        return condition.nonzero(as_tuple=True)
    from ._core import as_tensor_like, broadcast_all_shapes, check_same_device
    if not isinstance(condition, Tensor):
        raise TypeError("where(): argument 'condition' must be a Tensor")
    if condition._dtype is not _dt.bool_:
        if condition._dtype is _dt.uint8:
            condition = condition.to(_dt.bool_)
        else:
            raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor with "
                               f"dtype {condition._dtype.name}")
    dt = _dt.result_type(input, other)
    a = input if isinstance(input, Tensor) else as_tensor_like(input, condition, dt)
    b = other if isinstance(other, Tensor) else as_tensor_like(other, condition, dt)
    check_same_device(condition, a, b)
    shape = broadcast_all_shapes(condition._data.shape, a._data.shape, b._data.shape)
    k = a._k
    ad = a._data if a._dtype is dt else k["astype"](a._data, dt.name)
    bd = b._data if b._dtype is dt else k["astype"](b._data, dt.name)
    data = k["where"](condition._data, ad, bd)
    if data.shape != shape:
        data = k["copy"](k["broadcast_to"](data, shape))
    r = _make(data, dt, k, a._dev)
    if _gstate.enabled and (a._rg or b._rg):
        c = condition

        def vjp(g):
            z = zeros_like_grad(g)
            return (grad_for(where(c, g, z), a) if a._rg else None,
                    grad_for(where(c, z, g), b) if b._rg else None)
        record("WhereBackward0", r, (a, b), vjp)
    return r


@in_float32
def lerp(input, end, weight):
    return input + weight * (end - input)


@in_float32
def addcmul(input, tensor1, tensor2, *, value=1):
    if _amp.on:
        return _amp.run("addcmul", addcmul, (input, tensor1, tensor2), {"value": value})
    return input + value * tensor1 * tensor2


@in_float32
def addcdiv(input, tensor1, tensor2, *, value=1):
    if _amp.on:
        return _amp.run("addcdiv", addcdiv, (input, tensor1, tensor2), {"value": value})
    return input + value * tensor1 / tensor2


def fill_(self, value):
    """Fill with a number (or a 0-d tensor's value) in place."""
    check_inplace(self)
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with "
                               f"{value.ndim} dimensions.")
        if value._rg and _gstate.enabled:
            return commit_inplace(self, value.to(self._dtype).expand(*self._data.shape))
        value = value.item()
    return commit_inplace(self, _full_like(self, check_fill(value, self._dtype)))


def zero_(self):
    return fill_(self, 0)


def copy_(self, src, non_blocking=False):
    """Copy src's values (broadcast, converted to self's dtype and device) into self."""
    check_inplace(self)
    if not isinstance(src, Tensor):
        raise TypeError(f"copy_(): argument 'src' must be Tensor, not {type(src).__name__}")
    v = src.to(device=self._dev, dtype=self._dtype)
    shape = self._data.shape
    if tuple(v.shape) != shape:
        if broadcast_shapes(shape, v._data.shape) != shape:
            raise RuntimeError(f"output with shape {list(shape)} doesn't match the broadcast shape "
                               f"{list(broadcast_shapes(shape, v._data.shape))}")
        v = v.expand(*shape)
    return commit_inplace(self, v)


# -- in-place variants -------------------------------------------------------------------------------
def _inplace(fn, kname=None, float_result=False):
    def op_(self, *args, **kwargs):
        check_inplace(self)
        if kname is not None and len(args) == 1 and not (self._rg and _gstate.enabled):
            other = args[0]
            if not (isinstance(other, Tensor) and other._rg and _gstate.enabled):
                if not kwargs:
                    return _fast_inplace(self, kname, other, float_result)
                if kname in ("add", "sub") and len(kwargs) == 1 and "alpha" in kwargs \
                        and isinstance(other, Tensor) and not _both_bfloat16(self, other):
                    # p.add_(grad, alpha=-lr) (SGD): alpha * other, then one pass into self (no
                    # out-of-place sum copied back)
                    alpha = kwargs["alpha"]
                    return _fast_inplace(self, kname, other if alpha == 1 else mul(other, alpha), float_result)
        src = snapshot(self) if (self._rg and _gstate.enabled) else self
        return commit_inplace(self, fn(src, *args, **kwargs))
    op_.__name__ = fn.__name__ + "_"
    return op_


def _fast_inplace(self, kname, other, float_result):
    ad, bd, dt, k, dev, _ = prep_binary(self, other, float_result)
    check_cast(dt, self._dtype)
    ts = self._data.shape
    if isinstance(other, Tensor):
        os_ = other._data.shape
        if os_ != ts:
            if broadcast_shapes(ts, os_) != ts:
                raise RuntimeError(f"output with shape {list(ts)} doesn't match the broadcast shape "
                                   f"{list(broadcast_shapes(ts, os_))}")
    if dt is self._dtype:
        k[kname](ad, bd, out=self._data)
    else:
        k["assign"](self._data, k[kname](ad, bd))
    self._bump_version()
    return self


def _unary_inplace(fn):
    def op_(self):
        check_inplace(self)
        src = snapshot(self) if (self._rg and _gstate.enabled) else self
        return commit_inplace(self, fn(src))
    op_.__name__ = fn.__name__ + "_"
    return op_


def _attach():
    T = Tensor
    for name in ("add", "sub", "mul", "div", "pow", "remainder", "fmod", "floor_divide", "atan2",
                 "maximum", "minimum", "fmax", "fmin", "eq", "ne", "lt", "le", "gt", "ge", "logical_and",
                 "logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor",
                 "bitwise_left_shift", "bitwise_right_shift", "neg", "negative", "abs", "absolute", "sign",
                 "exp", "log", "sqrt", "sin", "cos", "tan", "tanh", "sigmoid", "erf", "log1p", "expm1", "sinh",
                 "cosh", "asin", "acos", "atan", "arcsin", "arccos", "arctan", "floor", "ceil", "trunc", "fix",
                 "round", "logical_not", "bitwise_not", "isnan", "isinf", "isfinite", "reciprocal", "rsqrt",
                 "square", "log2", "log10", "exp2", "frac", "relu", "clamp", "clip", "clamp_min", "clamp_max",
                 "lerp", "addcmul", "addcdiv", "float_power", "arctan2", "less", "less_equal", "greater",
                 "greater_equal", "not_equal", "equal", "isclose", "allclose"):
        setattr(T, name, globals()[name])
    T.where = lambda self, condition, other: where(condition, self, other)
    T.fill_, T.zero_, T.copy_ = fill_, zero_, copy_
    T.multiply, T.subtract, T.divide, T.true_divide = mul, sub, div, div
    # operators
    T.__add__ = _fast_binary("add", add)
    T.__radd__ = _fast_binary("add", add, reflected=True)
    T.__sub__ = _fast_binary("sub", sub, min_category=1)
    T.__rsub__ = _fast_binary("sub", sub, min_category=1, reflected=True)
    T.__mul__ = _fast_binary("mul", mul)
    T.__rmul__ = _fast_binary("mul", mul, reflected=True)
    T.__truediv__ = _fast_binary("div", div, float_only=True)
    T.__rtruediv__ = _autocast_rtruediv(_fast_binary("div", div, float_only=True, reflected=True))
    T.__floordiv__ = lambda a, b: floor_divide(a, b) if _operand(b) else NotImplemented
    T.__rfloordiv__ = lambda a, b: floor_divide(b, a) if _operand(b) else NotImplemented
    T.__mod__ = lambda a, b: remainder(a, b) if _operand(b) else NotImplemented
    T.__rmod__ = lambda a, b: remainder(b, a) if _operand(b) else NotImplemented
    T.__pow__ = lambda a, b: pow(a, b) if _operand(b) else NotImplemented
    T.__rpow__ = lambda a, b: pow(b, a) if _operand(b) else NotImplemented
    T.__neg__ = neg
    T.__pos__ = lambda a: a
    T.__abs__ = abs
    T.__invert__ = lambda a: logical_not(a) if a._dtype is _dt.bool_ else bitwise_not(a)
    T.__eq__ = lambda a, b: eq(a, b) if _operand(b) else NotImplemented
    T.__ne__ = lambda a, b: ne(a, b) if _operand(b) else NotImplemented
    T.__lt__ = lambda a, b: lt(a, b) if _operand(b) else NotImplemented
    T.__le__ = lambda a, b: le(a, b) if _operand(b) else NotImplemented
    T.__gt__ = lambda a, b: gt(a, b) if _operand(b) else NotImplemented
    T.__ge__ = lambda a, b: ge(a, b) if _operand(b) else NotImplemented
    T.__and__ = lambda a, b: bitwise_and(a, b) if _operand(b) else NotImplemented
    T.__rand__ = lambda a, b: bitwise_and(b, a) if _operand(b) else NotImplemented
    T.__or__ = lambda a, b: bitwise_or(a, b) if _operand(b) else NotImplemented
    T.__ror__ = lambda a, b: bitwise_or(b, a) if _operand(b) else NotImplemented
    T.__xor__ = lambda a, b: bitwise_xor(a, b) if _operand(b) else NotImplemented
    T.__rxor__ = lambda a, b: bitwise_xor(b, a) if _operand(b) else NotImplemented
    T.__lshift__ = lambda a, b: bitwise_left_shift(a, b) if _operand(b) else NotImplemented
    T.__rlshift__ = lambda a, b: bitwise_left_shift(b, a) if _operand(b) else NotImplemented
    T.__rshift__ = lambda a, b: bitwise_right_shift(a, b) if _operand(b) else NotImplemented
    T.__rrshift__ = lambda a, b: bitwise_right_shift(b, a) if _operand(b) else NotImplemented
    # in-place
    for name, kname, fl in (("add", "add", False), ("sub", "sub", False), ("mul", "mul", False),
                            ("div", None, True), ("pow", "pow", False), ("remainder", None, False),
                            ("fmod", None, False), ("floor_divide", None, False), ("atan2", None, True),
                            ("bitwise_and", "bitwise_and", False), ("bitwise_or", "bitwise_or", False),
                            ("bitwise_xor", "bitwise_xor", False), ("maximum", None, False),
                            ("minimum", None, False), ("clamp", None, False), ("clamp_min", None, False),
                            ("clamp_max", None, False), ("lerp", None, False), ("addcmul", None, False),
                            ("addcdiv", None, False), ("eq", None, False), ("ne", None, False),
                            ("lt", None, False), ("le", None, False), ("gt", None, False), ("ge", None, False),
                            ("logical_and", None, False), ("logical_or", None, False),
                            ("logical_xor", None, False), ("bitwise_left_shift", None, False),
                            ("bitwise_right_shift", None, False)):
        setattr(T, name + "_", _inplace(globals()[name], kname, fl))
    T.clip_ = T.clamp_
    T.mul_ = _inplace(mul, "mul")
    T.div_ = _inplace(div, None, True)
    T.true_divide_ = T.divide_ = T.div_
    T.sub_ = _inplace(sub, "sub")
    T.multiply_, T.subtract_ = T.mul_, T.sub_
    for name in ("neg", "abs", "sign", "exp", "log", "sqrt", "sin", "cos", "tan", "tanh", "sigmoid", "erf",
                 "log1p", "expm1", "sinh", "cosh", "asin", "acos", "atan", "floor", "ceil", "trunc", "round",
                 "logical_not", "bitwise_not", "reciprocal", "rsqrt", "square", "log2", "log10", "exp2",
                 "frac", "relu"):
        setattr(T, name + "_", _unary_inplace(globals()[name]))
    T.negative_ = T.neg_
    T.absolute_ = T.abs_
    T.__iadd__ = lambda a, b: T.add_(a, b) if _operand(b) else NotImplemented
    T.__isub__ = lambda a, b: T.sub_(a, b) if _operand(b) else NotImplemented
    T.__imul__ = lambda a, b: T.mul_(a, b) if _operand(b) else NotImplemented
    T.__itruediv__ = lambda a, b: T.div_(a, b) if _operand(b) else NotImplemented
    T.__ifloordiv__ = lambda a, b: T.floor_divide_(a, b) if _operand(b) else NotImplemented
    T.__imod__ = lambda a, b: T.remainder_(a, b) if _operand(b) else NotImplemented
    T.__ipow__ = lambda a, b: T.pow_(a, b) if _operand(b) else NotImplemented
    T.__iand__ = lambda a, b: T.bitwise_and_(a, b) if _operand(b) else NotImplemented
    T.__ior__ = lambda a, b: T.bitwise_or_(a, b) if _operand(b) else NotImplemented
    T.__ixor__ = lambda a, b: T.bitwise_xor_(a, b) if _operand(b) else NotImplemented
    T.__ilshift__ = lambda a, b: T.bitwise_left_shift_(a, b) if _operand(b) else NotImplemented
    T.__irshift__ = lambda a, b: T.bitwise_right_shift_(a, b) if _operand(b) else NotImplemented


_new = object.__new__


def _fast_binary(kname, slow, float_only=False, min_category=0, reflected=False):
    """The operator for `a <op> b` (or `b <op> a` when reflected). Same-dtype, same-device tensors
    and Python scalars that keep the tensor's dtype skip every general step (the common case in
    tight loops), recording the op's node directly when autograd needs it; everything else takes
    the full op."""
    rec = _RECORDERS[kname]
    low = 2 if float_only else min_category

    def op(a, b):
        dt = a._dtype
        if dt.category >= low:
            cls = b.__class__
            k = a._k
            if cls is Tensor:
                if dt is b._dtype and k is b._k:
                    ad, bd = a._data, b._data
                    shape = ad.shape
                    if shape != bd.shape:
                        try:
                            shape = broadcast_shapes(shape, bd.shape)
                        except RuntimeError:    # the full op raises it (or takes utils.backcompat's fallback)
                            return slow(b, a) if reflected else slow(a, b)
                    check = k["__check__"]
                    if check is None:
                        data = k[kname](bd, ad) if reflected else k[kname](ad, bd)
                    else:                       # kernel results checked: against the shape known here
                        data = check[kname](bd, ad, shape) if reflected else check[kname](ad, bd, shape)
                    t = _new(Tensor)
                    t._data, t._dtype, t._k, t._dev = data, dt, k, a._dev
                    if (a._rg or b._rg) and _gstate.enabled:
                        if reflected:
                            rec(t, b, a)
                        else:
                            rec(t, a, b)
                    return t
            elif (cls is float and dt.category >= 2) or (cls is int and (dt.category >= 2 or (
                    dt.category == 1 and dt.itemsize >= 4 and -2**31 <= b < 2**31))) or (
                    cls is complex and dt.category == 3):
                # the scalar takes the tensor's dtype (PyTorch's rule for "wrapped numbers")
                check = k["__check__"]
                if check is None:
                    data = k[kname](b, a._data) if reflected else k[kname](a._data, b)
                else:
                    data = check[kname](b, a._data, None) if reflected else \
                        check[kname](a._data, b, None)
                t = _new(Tensor)
                t._data, t._dtype, t._k, t._dev = data, dt, k, a._dev
                if a._rg and _gstate.enabled:
                    if reflected:
                        rec(t, b, a)
                    else:
                        rec(t, a, b)
                return t
        if not _operand(b):
            return NotImplemented
        return slow(b, a) if reflected else slow(a, b)
    op.__name__ = f"__{'r' if reflected else ''}{kname}__"
    return op


_RECORDERS = {"add": _record_add, "sub": _record_sub, "mul": _record_mul, "div": _record_div}


def _autocast_rtruediv(op):
    """`number / tensor` is on the CUDA autocast list (PyTorch computes it as a reciprocal)."""
    def __rtruediv__(a, b):
        if _amp.on:
            return _amp.run("__rtruediv__", op, (a, b))
        return op(a, b)
    return __rtruediv__


def _operand(b):
    cls = b.__class__
    return cls is float or cls is int or cls is bool or isinstance(b, Tensor) or is_scalar(b)


_attach()

PUBLIC = ["add", "sub", "subtract", "mul", "multiply", "div", "divide", "true_divide", "floor_divide",
          "remainder", "fmod", "pow", "float_power", "maximum", "minimum", "fmax", "fmin", "atan2", "arctan2",
          "eq", "ne", "lt", "le", "gt", "ge", "less", "less_equal", "greater", "greater_equal", "not_equal",
          "equal", "isclose", "allclose", "logical_and", "logical_or", "logical_xor", "logical_not", "bitwise_and", "bitwise_or",
          "bitwise_xor", "bitwise_not", "bitwise_left_shift", "bitwise_right_shift", "neg", "negative", "abs",
          "absolute", "sign", "exp", "log", "sqrt", "sin", "cos", "tan", "tanh", "sigmoid", "erf", "log1p",
          "expm1", "sinh", "cosh", "asin", "acos", "atan", "arcsin", "arccos", "arctan", "floor", "ceil",
          "trunc", "fix", "round", "isnan", "isinf", "isfinite", "reciprocal", "rsqrt", "square", "log2",
          "log10", "exp2", "frac", "relu", "clamp", "clip", "clamp_min", "clamp_max", "where", "lerp",
          "addcmul", "addcdiv"]
subtract, multiply, divide, true_divide = sub, mul, div, div
