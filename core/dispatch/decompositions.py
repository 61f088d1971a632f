"""Fallbacks for optional kernels, written only in required primitives (or other fallbacks, never in a cycle).

Each function takes the backend's kernel table `K` first; `complete_table` binds
them for every optional kernel a backend does not implement natively.
"""
from __future__ import annotations

import functools

from .backend_api import OPTIONAL


def sigmoid(K, x):
    one = K["full"]((), 1, _dt(K, x))
    return K["div"](one, K["add"](one, K["exp"](K["neg"](x))))


def log1p(K, x):
    # log(u) * x / (u - 1) with u = 1 + x recovers the precision lost in forming u.
    u = K["add"](x, 1)
    d = K["sub"](u, 1)
    small = K["eq"](d, 0)
    # u - 1 == 0 (tiny x) and u == inf (x == inf) both make the identity 0/0: use x itself there
    exact_x = K["logical_or"](small, K["eq"](x, float("inf")))
    safe_d = K["where"](exact_x, K["full"]((), 1, _dt(K, x)), d)
    # x / (u - 1) is close to 1, so this never overflows where log(u) * x would
    return K["where"](exact_x, x, K["mul"](K["log"](u), K["div"](x, safe_d)))


def expm1(K, x):
    u = K["exp"](x)
    um1 = K["sub"](u, 1)
    logu = K["log"](u)
    bad = K["logical_or"](K["eq"](um1, 0), K["eq"](logu, 0))
    safe_log = K["where"](bad, K["full"]((), 1, _dt(K, x)), logu)
    exact = K["div"](K["mul"](um1, x), safe_log)
    # for large |x| the identity is inexact (u overflows or u - 1 == u); use u - 1 there
    big = K["gt"](K["abs"](x), 1)
    return K["where"](bad, x, K["where"](big, um1, exact))


def sinh(K, x):
    return K["div"](K["sub"](K["exp"](x), K["exp"](K["neg"](x))), 2)


def cosh(K, x):
    return K["div"](K["add"](K["exp"](x), K["exp"](K["neg"](x))), 2)


def _sqrt_one_minus_sq(K, x):
    return K["sqrt"](K["mul"](K["sub"](1, x), K["add"](x, 1)))


def asin(K, x):
    if _dt(K, x).startswith("complex"):         # -i log(iz + sqrt(1 - z^2)) (atan2 is real-only)
        return K["mul"](K["log"](K["add"](K["mul"](x, 1j), _sqrt_one_minus_sq(K, x))), -1j)
    return K["atan2"](x, _sqrt_one_minus_sq(K, x))


def acos(K, x):
    if _dt(K, x).startswith("complex"):         # pi/2 - asin(z)
        return K["sub"](K["full"]((), complex(1.5707963267948966), _dt(K, x)), asin(K, x))
    return K["atan2"](_sqrt_one_minus_sq(K, x), x)


def atan(K, x):
    if _dt(K, x).startswith("complex"):         # (i/2) log((i + z) / (i - z))
        return K["mul"](K["log"](K["div"](K["add"](x, 1j), K["sub"](1j, x))), 0.5j)
    return K["atan2"](x, K["full"]((), 1, _dt(K, x)))


def isinf(K, x):
    if _dt(K, x).startswith("complex"):         # inf in either part
        return K["logical_or"](isinf(K, K["real"](x)), isinf(K, K["imag"](x)))
    return K["logical_and"](K["eq"](K["abs"](x), float("inf")), K["logical_not"](K["isnan"](x)))


def isfinite(K, x):
    if _dt(K, x).startswith("complex"):
        return K["logical_and"](isfinite(K, K["real"](x)), isfinite(K, K["imag"](x)))
    return K["logical_not"](K["logical_or"](K["isnan"](x), K["eq"](K["abs"](x), float("inf"))))


def clip(K, x, lo, hi):
    if lo is not None:
        x = K["where"](K["lt"](x, lo), lo, x)
    if hi is not None:
        x = K["where"](K["gt"](x, hi), hi, x)
    if lo is None and hi is None:
        x = K["copy"](x)
    return x


def softmax(K, x, axis):
    e = K["exp"](K["sub"](x, K["max"](x, (axis,), True)))
    return K["div"](e, K["sum"](e, (axis,), True))


def log_softmax(K, x, axis):
    shifted = K["sub"](x, K["max"](x, (axis,), True))
    return K["sub"](shifted, K["log"](K["sum"](K["exp"](shifted), (axis,), True)))


def randint(K, state, low, high, shape, dtype):
    u = K["uniform"](state, shape, "float64")
    r = K["floor"](K["add"](K["mul"](u, float(high - low)), float(low)))
    # guard the rounding edge u * span == span
    r = K["minimum"](r, float(high - 1))
    return K["astype"](r, dtype)


def randperm(K, state, n, dtype):
    keys = K["uniform"](state, (n,), "float64")
    return K["astype"](K["argsort"](keys, 0, False, True), dtype)


def bernoulli(K, state, p):
    dtype = _dt(K, p)
    # draw in float64: uniform draws rounded to float16 can reach 1.0 and bias the result
    u = K["uniform"](state, p.shape, "float64")
    return K["astype"](K["lt"](u, K["astype"](p, "float64")), dtype)


# -- version 1's required pointwise kernels, decomposed (API version 2) ---------------------------
# Each takes K first and accepts out= like the kernel it replaces. Integer results are exact (two's
# complement wraps as the kernels do); float results follow the IEEE/C99 values at edge inputs.
# Complex abs/sqrt/tan/tanh run NumPy on a host copy, as optional_complex does for its parts: their
# C99 edge values (infinite and NaN parts) have no short expression in the primitives.
_FLOATS = ("float16", "bfloat16", "float32", "float64")
_DEMOTED: dict = {}


def _demoted(fn):
    """Register fn as the decomposition of the kernel named like it (a trailing _ dropped), with out=."""
    @functools.wraps(fn)
    def kernel(K, *args, out=None):
        r = fn(K, *args)
        if out is None:
            return r
        K["assign"](out, r)         # after computing: out may alias an input (in-place ops)
        return out
    _DEMOTED[fn.__name__.rstrip("_")] = kernel
    return kernel


def _is_array(x):
    return hasattr(x, "shape") and hasattr(x, "dtype")


def _arrays(K, x, y):
    """Both operands as arrays (a Python scalar becomes a 0-d array of the other's dtype), and the dtype."""
    if _is_array(x):
        dt = _dt(K, x)
    elif _is_array(y):
        dt = _dt(K, y)
    else:
        dt = {bool: "bool", int: "int64", float: "float64", complex: "complex128"}[type(x)]
    if not _is_array(x):
        x = K["full"]((), x, dt)
    if not _is_array(y):
        y = K["full"]((), y, dt)
    return x, y, dt


def _const(K, v, dt):
    return K["full"]((), v, dt)


def _host(K, fn, x):
    import numpy as np
    with np.errstate(all="ignore"):
        return K["from_numpy"](np.array(fn(np.asarray(K["to_numpy"](x)))))


def _in_float32(K, fn, x, *more):
    """fn computed in float32 for float16 / bfloat16 inputs (rounded once at the end)."""
    dt = _dt(K, x)
    if dt not in ("float16", "bfloat16"):
        return fn(K, x, *more)
    return K["astype"](fn(K, K["astype"](x, "float32"), *(K["astype"](m, "float32") for m in more)), dt)


def _truth(K, x):
    return x if _dt(K, x) == "bool" else K["ne"](x, _const(K, 0, _dt(K, x)))


@_demoted
def abs_(K, x):
    dt = _dt(K, x)
    if dt.startswith("complex"):
        import numpy as np
        return _host(K, np.abs, x)
    r = K["where"](K["lt"](x, _const(K, 0, dt)), K["neg"](x), x)
    return K["add"](r, _const(K, 0, dt)) if dt in _FLOATS else r     # -0.0 + 0.0 is +0.0


@_demoted
def sign(K, x):
    dt = _dt(K, x)
    zero = _const(K, 0, dt)
    pos = K["where"](K["gt"](x, zero), _const(K, 1, dt), zero)       # NaN -> 0 (PyTorch's sign)
    return pos if dt == "uint8" else K["where"](K["lt"](x, zero), _const(K, -1, dt), pos)


@_demoted
def sqrt(K, x):
    dt = _dt(K, x)
    if dt.startswith("complex"):
        import numpy as np
        return _host(K, np.sqrt, x)
    # pow(-inf, 0.5) is +inf in C99, sqrt(-inf) NaN
    return K["where"](K["lt"](x, _const(K, 0, dt)), _const(K, float("nan"), dt), K["pow"](x, 0.5))


def _tan(K, x):
    return K["div"](K["sin"](x), K["cos"](x))


@_demoted
def tan(K, x):
    if _dt(K, x).startswith("complex"):
        import numpy as np
        return _host(K, np.tan, x)
    return _in_float32(K, _tan, x)


def _tanh(K, x):
    # tanh|x| = -u / (u + 2), u = expm1(-2|x|) in (-1, 0]: no cancellation near 0, exactly 1 at large |x|
    dt = _dt(K, x)
    u = K["expm1"](K["mul"](K["abs"](x), _const(K, -2, dt)))
    t = K["div"](K["neg"](u), K["add"](u, _const(K, 2, dt)))
    return K["where"](K["lt"](x, _const(K, 0, dt)), K["neg"](t), t)


@_demoted
def tanh(K, x):
    if _dt(K, x).startswith("complex"):
        import numpy as np
        return _host(K, np.tanh, x)
    return _in_float32(K, _tanh, x)


@_demoted
def ceil(K, x):
    if _dt(K, x) not in _FLOATS:
        return K["copy"](x)
    return K["neg"](K["floor"](K["neg"](x)))


@_demoted
def trunc(K, x):
    if _dt(K, x) not in _FLOATS:
        return K["copy"](x)
    return K["where"](K["lt"](x, _const(K, 0, _dt(K, x))), K["ceil"](x), K["floor"](x))


@_demoted
def round_(K, x):
    dt = _dt(K, x)
    if dt not in _FLOATS:
        return K["copy"](x)
    # half to even; d = x - floor(x) is exact (Sterbenz), or rounds only where it decides nothing
    f = K["floor"](x)
    d = K["sub"](x, f)
    half = _const(K, 0.5, dt)
    odd = K["ne"](K["mul"](K["floor"](K["mul"](f, half)), _const(K, 2, dt)), f)      # exact
    up = K["add"](K["lt"](half, d), K["mul"](K["eq"](d, half), odd))                 # inf, NaN: d is NaN
    return K["add"](f, K["astype"](up, dt))


@_demoted
def logical_not(K, x):
    return K["eq"](x, _const(K, 0, _dt(K, x)))


@_demoted
def bitwise_not(K, x):
    dt = _dt(K, x)
    if dt == "bool":
        return K["logical_not"](x)
    # ~x == -x - 1 in two's complement (for unsigned, -1 is the largest value)
    return K["add"](K["neg"](x), _const(K, 255 if dt == "uint8" else -1, dt))


@_demoted
def isnan(K, x):
    return K["ne"](x, x)


@_demoted
def sub(K, x, y):
    x, y, dt = _arrays(K, x, y)
    return K["add"](x, K["neg"](y))          # exact: x - y == x + (-y) in IEEE and in two's complement


@_demoted
def ne(K, x, y):
    return K["eq"](K["eq"](x, y), _const(K, False, "bool"))


@_demoted
def gt(K, x, y):
    return K["lt"](y, x)


@_demoted
def le(K, x, y):
    x, y, _ = _arrays(K, x, y)
    return K["add"](K["lt"](x, y), K["eq"](x, y))          # bool add is or


@_demoted
def ge(K, x, y):
    return K["le"](y, x)


# `where` is the costly primitive (NumPy's runs ~20x slower than `add` on a random mask): the
# decompositions below pick with one `where` at most, and combine bool masks with add (or) / mul (and).
def _extreme(K, x, y, take_y):
    x, y, dt = _arrays(K, x, y)
    pick_y = take_y(x, y)
    if dt in _FLOATS:                        # NaN propagates from either side: y where only y is NaN
        pick_y = K["add"](pick_y, K["mul"](K["ne"](y, y), K["eq"](x, x)))
    return K["where"](pick_y, y, x)


@_demoted
def maximum(K, x, y):
    return _extreme(K, x, y, K["lt"])


@_demoted
def minimum(K, x, y):
    return _extreme(K, x, y, lambda a, b: K["lt"](b, a))


@_demoted
def fmod(K, x, y):
    x, y, dt = _arrays(K, x, y)
    zero = _const(K, 0, dt)
    if dt in _FLOATS:
        # remainder of the magnitudes is exact (no sign adjustment), then x's sign: C's fmod
        r = K["remainder"](K["abs"](x), K["abs"](y))
        return K["where"](K["lt"](x, zero), K["neg"](r), r)
    r = K["remainder"](x, y)                 # integers: floor's remainder has y's sign; C's has x's
    if dt == "uint8":
        return r
    differ = K["ne"](K["lt"](x, zero), K["lt"](y, zero))
    adjust = K["bitwise_and"](differ, K["ne"](r, zero))
    return K["where"](adjust, K["sub"](r, y), r)


def _atan2(K, y, x):
    dt = _dt(K, y)
    c = lambda v: _const(K, v, dt)  # noqa: E731
    zero, one = c(0), c(1)
    ay, ax = K["abs"](y), K["abs"](x)
    swap = K["lt"](ax, ay)
    hi, lo = K["where"](swap, ay, ax), K["where"](swap, ax, ay)
    both_inf = K["bitwise_and"](K["eq"](hi, c(float("inf"))), K["eq"](lo, c(float("inf"))))
    t = K["div"](lo, K["where"](K["eq"](hi, zero), one, hi))        # in [0, 1]; 0/0 -> 0
    t = K["where"](both_inf, one, t)                                 # atan2(inf, inf) = pi/4
    # a first guess within 4e-3 (t * pi/4 + 0.273 t (1 - t)), then one exact correction: the guess
    # is off by atan(r), r = (t cos g - sin g) / (cos g + t sin g), |r| < 4e-3, atan(r) by its series
    g = K["mul"](t, K["add"](c(0.7853981633974483 + 0.273), K["mul"](t, c(-0.273))))
    cg, sg = K["cos"](g), K["sin"](g)
    r = K["div"](K["sub"](K["mul"](t, cg), sg), K["add"](cg, K["mul"](t, sg)))
    r2 = K["mul"](r, r)
    series = K["add"](c(-1 / 3), K["mul"](r2, K["add"](c(1 / 5), K["mul"](r2, c(-1 / 7)))))
    theta = K["add"](g, K["add"](r, K["mul"](K["mul"](r, r2), series)))      # in [0, pi/4]
    theta = K["where"](swap, K["sub"](c(1.5707963267948966), theta), theta)
    # signs, zeros included: atan2(+-0, -0) = +-pi, atan2(-0, x > 0) = -0 (1/x < 0 tells -0 from +0)
    x_neg = K["add"](K["lt"](x, zero), K["lt"](K["div"](one, x), zero))
    theta = K["where"](x_neg, K["sub"](c(3.141592653589793), theta), theta)
    y_neg = K["add"](K["lt"](y, zero), K["lt"](K["div"](one, y), zero))
    theta = K["where"](y_neg, K["neg"](theta), theta)
    return K["where"](K["isnan"](y), y, K["where"](K["isnan"](x), x, theta))


@_demoted
def atan2(K, y, x):
    y, x, _ = _arrays(K, y, x)
    return _in_float32(K, _atan2, y, x)


@_demoted
def logical_and(K, x, y):
    x, y, _ = _arrays(K, x, y)
    return K["bitwise_and"](_truth(K, x), _truth(K, y))


@_demoted
def logical_or(K, x, y):
    x, y, _ = _arrays(K, x, y)
    return K["add"](_truth(K, x), _truth(K, y))


@_demoted
def logical_xor(K, x, y):
    x, y, _ = _arrays(K, x, y)
    return K["ne"](_truth(K, x), _truth(K, y))


@_demoted
def bitwise_or(K, x, y):
    x, y, dt = _arrays(K, x, y)
    if dt == "bool":
        return K["add"](x, y)
    return K["sub"](K["add"](x, y), K["bitwise_and"](x, y))             # x + y == (x | y) + (x & y)


@_demoted
def bitwise_xor(K, x, y):
    x, y, dt = _arrays(K, x, y)
    if dt == "bool":
        return K["ne"](x, y)
    return K["sub"](K["add"](x, y), K["mul"](K["bitwise_and"](x, y), _const(K, 2, dt)))


def _pow2(K, s, dt):
    """2**s in dt, wrapped (2**(bits-1) is the most negative value of a signed dtype)."""
    import numpy as np
    bits = np.iinfo(dt).bits
    table = np.array([(1 << k) - ((1 << bits) if dt != "uint8" and k == bits - 1 else 0) for k in range(bits)],
                     dtype=dt)
    return K["index"](K["from_numpy"](table), (K["astype"](s, "int64"),))


@_demoted
def left_shift(K, x, s):
    x, s, dt = _arrays(K, x, s)
    return K["mul"](x, _pow2(K, s, dt))                               # wraps like the shift


@_demoted
def right_shift(K, x, s):
    x, s, dt = _arrays(K, x, s)
    # arithmetic shift = floor division by 2**s, in two halves so 2**s fits a signed dtype
    s1 = K["floor_divide"](s, _const(K, 2, dt))
    x = K["floor_divide"](x, _pow2(K, s1, dt))
    return K["floor_divide"](x, _pow2(K, K["sub"](s, s1), dt))


# the version-1 pointwise kernels decomposed above (bench/decompositions.py times them)
POINTWISE = tuple(_DEMOTED)

def _backend_name(K):
    b = K.get("__backend__")
    return getattr(b, "name", "?") if b is not None else "?"


def rng_get_state(K, state):
    raise NotImplementedError(f"backend {_backend_name(K)!r} cannot export generator state: it does not "
                              "implement the optional kernel rng_get_state")


def rng_set_state(K, data):
    raise NotImplementedError(f"backend {_backend_name(K)!r} cannot import generator state: it does not "
                              "implement the optional kernel rng_set_state")


def _dt(K, x):
    return x.dtype.name if hasattr(x.dtype, "name") else str(x.dtype)


def _collect():
    import importlib

    from .backend_api import OPTIONAL_FAMILIES, STRUCTURAL
    found = {name: fn for name, fn in globals().items() if name in OPTIONAL}
    found.update({name: fn for name, fn in _DEMOTED.items() if name in OPTIONAL})
    try:
        structural = importlib.import_module(f"{__package__}.decompositions_structural")
    except ModuleNotFoundError as e:
        if e.name != f"{__package__}.decompositions_structural":
            raise
    else:
        found.update({name: getattr(structural, name) for name in STRUCTURAL if name in OPTIONAL})
    for fam in OPTIONAL_FAMILIES:
        mod = importlib.import_module(f"{__package__}.{fam}")
        found.update({name: getattr(mod, name) for name in mod.OPTIONAL})
    missing = set(OPTIONAL) - set(found)
    assert not missing, f"optional kernels without a decomposition: {sorted(missing)}"
    return found


DECOMPOSITIONS = _collect()


def complete_table(native: dict) -> dict:
    """Native kernels, plus each missing optional kernel bound to its decomposition."""
    table = dict(native)
    for name, fn in DECOMPOSITIONS.items():
        if name not in table:
            table[name] = functools.partial(fn, table)
    return table
