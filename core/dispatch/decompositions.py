"""Fallbacks for optional kernels, written only in required primitives.

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

    from .backend_api import OPTIONAL_FAMILIES
    found = {name: fn for name, fn in globals().items() if name in OPTIONAL}
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
