"""Special functions and the remaining elementwise math: inverse hyperbolics, the gamma family
(lgamma digamma polygamma mvlgamma, the incomplete igamma igammac), the error-function family (erfc
erfinv and, for tensorplug.special, erfcx ndtr ndtri log_ndtr), modified Bessel i0 (i0e i1 i1e), sinc logit xlogy
hypot logaddexp heaviside nextafter ldexp frexp signbit nan_to_num gcd lcm ...

Every op is composed of Tensor ops, so every backend has it. The series and iterations run without
recording, in float64 where they approximate (`precise`: float32/float16 results are rounded from
it), else in the input's precision (float16 in float32); then one node records the derivative,
written in Tensor ops, so it can be differentiated again.

    >>> lgamma(tensor([0.5, 3.0]))     # log|Gamma(x)|: [log(sqrt(pi)), log(2)]
    tensor([0.5724, 0.6931])
"""
from __future__ import annotations

import functools
import math
import operator

from .. import dtypes as _dt
from ..amp.state import state as _amp
from ..autograd.grad_mode import no_grad as _no_grad
from ._core import (Tensor, _gstate, _make, as_tensor_like, broadcast_shapes, check_same_device, record,
                    zeros_like_grad)
from .linalg import _C_NAMES, _check_tensor, _nondiff_node, _tn
from .pointwise import (_grads2, _inplace, _out, _rg, _tensors, _unary_inplace, abs, atan2, clamp, cos, erf,
                        exp, expm1, floor, floor_divide, isinf, isnan, log, log1p, maximum, minimum, pow, remainder,
                        round, rsqrt, sigmoid, sign, sin, sqrt, tan, trunc, where)
from .reduction import _return_type

_PI = math.pi
_LN2 = math.log(2.0)
_SQRT_PI = math.sqrt(math.pi)
_SQRT1_2 = math.sqrt(0.5)
_INF = float("inf")
_NAN = float("nan")


# -- how an op is put together ----------------------------------------------------------------------
def _floating(input, name):
    """input as a floating tensor (integers and bools become the default float dtype)."""
    _check_tensor(input, name, "input")
    return input if input._dtype.category == 2 else input.to(_dt.get_default_dtype())


def _compute(fn, xs, dt, precise=False):
    """fn(*xs) without recording, as dtype dt; working in float64 when `precise`, in dt itself when
    None, else in dt with float16 and bfloat16 widened to float32."""
    wd = _dt.float64 if precise else _dt.float32 if precise is False and dt in (_dt.float16, _dt.bfloat16) else dt
    with _no_grad():
        return fn(*[x.to(wd) for x in xs]).to(dt)


def _saved(saves, x, y):
    return {"x": (x,), "y": (y,), "xy": (x, y)}[saves]


def _unary(name, node, forward, grad, precise=False, saves="x", doc="", autocast=False):
    """A float function of one tensor: values from forward(w) (Tensor ops on the working-precision
    values), derivative grad(g, x, y) recorded as `node`. autocast: the op is on an autocast list."""
    def op(input, *, out=None):
        if autocast and _amp.on:
            return _amp.run(name, op, (input,), {"out": out})
        x = _floating(input, name)
        y = _compute(forward, (x,), x._dtype, precise)
        if x._rg and _gstate.enabled:
            record(node, y, (x,), lambda g: (grad(g, x, y),), saved=_saved(saves, x, y))
        return _out(y, out)
    op.__name__, op.__doc__ = name, doc
    return op


def _operands(name, input, other, numbers=False, floats_only=False):
    """Both operands as tensors of the floating result dtype on one device (checked to broadcast).
    `numbers`: either may be a Python number; `floats_only`: integer operands raise like PyTorch."""
    if numbers:
        if not isinstance(input, Tensor) and not isinstance(other, Tensor):
            raise TypeError(f"{name}(): expected a Tensor argument, got {type(input).__name__} and "
                            f"{type(other).__name__}")
    else:
        _check_tensor(input, name, "input")
        _check_tensor(other, name, "other")
    dt = _dt.result_type(input, other)
    if dt.category != 2:
        if floats_only:
            raise NotImplementedError(f"\"{name}\" not implemented for '{_tn(dt)}'")
        dt = _dt.get_default_dtype()
    like = input if isinstance(input, Tensor) else other
    a, b = (as_tensor_like(v, like, dt).to(dt) for v in (input, other))
    check_same_device(a, b)
    broadcast_shapes(a._data.shape, b._data.shape)
    return a, b


def _binary(name, node, forward, grad_a, grad_b, numbers=False, floats_only=False, precise=False, doc=""):
    """A float function of two broadcast operands; grad_a/grad_b(g, a, b, y) in Tensor ops."""
    def op(input, other, *, out=None):
        a, b = _operands(name, input, other, numbers, floats_only)
        y = _compute(forward, (a, b), a._dtype, precise)
        if _gstate.enabled and (_rg(input) or _rg(other)):
            i, o = input, other
            record(node, y, _tensors(i, o),
                   lambda g: _grads2(g, i, o, lambda: grad_a(g, i, o, y), lambda: grad_b(g, i, o, y)),
                   saved=_tensors(i, o) + (y,))
        return _out(y, out)
    op.__name__, op.__doc__ = name, doc
    return op


def _int_arg(v, fname, argname):
    try:
        return operator.index(v)
    except TypeError:
        raise TypeError(f"{fname}(): argument '{argname}' must be int, not {type(v).__name__}") from None


# -- shared numerics (on working tensors, not recorded) ---------------------------------------------
def _horner(coeffs, t):
    """sum(c_i t^i) for coefficients listed lowest first."""
    acc = coeffs[-1]
    for c in coeffs[-2::-1]:
        acc = acc * t + c
    return acc


def _odd(x, r):
    """An odd function's value from r = f(|x|); zeros (and their sign) pass through."""
    return where(x < 0, -r, where(x == 0, x, r))


def _pi_reduce(x):
    """(r, s) with x = n + r, n an integer, |r| <= 1/2 (exact) and s = (-1)^n: sin(pi x) = s sin(pi r),
    cos(pi x) = s cos(pi r) without the rounding of pi * x."""
    n = round(x)
    s = 1 - 4 * (n / 2 - floor(n / 2))
    return x - n, s


def _scale2(x, e):
    """x * 2**e in three factors, so intermediate powers of two neither overflow nor underflow."""
    e = clamp(e, -3000.0, 3000.0)
    e1 = trunc(e / 3)
    e2 = trunc((e - e1) / 2)
    return x * pow(2.0, e1) * pow(2.0, e2) * pow(2.0, e - e1 - e2)


def _signbit(x):
    # atan2(+-0, -1) = +-pi carries the sign of zero (NaN's sign bit is out of reach: False)
    return atan2(x, -1.0) < 0


# -- inverse hyperbolic functions -----------------------------------------------------------------
def _acosh(x):
    t = x - 1
    return where(x > 2.0 ** 28, log(x) + _LN2, log1p(t + sqrt(t * (t + 2))))


def _asinh(x):
    a = abs(x)
    return _odd(x, where(a > 2.0 ** 28, log(a) + _LN2, log1p(a + a * a / (1 + sqrt(1 + a * a)))))


def _atanh(x):
    a = abs(x)
    return _odd(x, 0.5 * log1p(2 * a / (1 - a)))


acosh = _unary("acosh", "AcoshBackward0", _acosh, lambda g, x, y: g * rsqrt(x * x - 1),
               doc="Inverse hyperbolic cosine (NaN below 1). >>> acosh(tensor([1., 2.])) -> [0., 1.3170]")
asinh = _unary("asinh", "AsinhBackward0", _asinh, lambda g, x, y: g * rsqrt(x * x + 1),
               doc="Inverse hyperbolic sine. >>> asinh(tensor([0., 1.])) -> [0., 0.8814]")
atanh = _unary("atanh", "AtanhBackward0", _atanh, lambda g, x, y: g / (1 - x * x),
               doc="Inverse hyperbolic tangent (+-inf at +-1). >>> atanh(tensor([0.5])) -> [0.5493]")
arccosh, arcsinh, arctanh = acosh, asinh, atanh


# -- the gamma family ------------------------------------------------------------------------------
# m-th derivative of lgamma: m = 0 lgamma, 1 digamma, m >= 2 polygamma(m - 1). For x >= 0 the
# recurrence moves x up to where the asymptotic (Stirling) series reaches double precision; x < 0
# uses the reflection formula.
_BERNOULLI = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510, 43867 / 798,
              -174611 / 330)        # B_2 .. B_20
_B22 = 854513 / 138


@functools.lru_cache(maxsize=None)
def _stirling(m):
    """(c_j, y0): the series sum_j c_j y^-(2j+m-1) of the m-th derivative of lgamma, and the y from
    which its ten terms leave out less than 1e-17 of the value."""
    fact, lg = math.factorial, math.lgamma
    c = tuple((-1) ** m * b * fact(2 * j + m - 2) / fact(2 * j) for j, b in enumerate(_BERNOULLI, 1))
    log_rest = math.log(_B22) + lg(21 + m) - lg(23)        # first term left out: this / y^(m + 21)

    def log_value(y):
        return math.log(y * math.log(y)) if m == 0 else math.log(math.log(y)) if m == 1 else \
            lg(m - 1) - (m - 1) * math.log(y)
    y = 3
    while log_rest - (m + 21) * math.log(y) > math.log(1e-17) + log_value(y):
        y += 1
    return c, y


def _gamma_positive(m, x):
    """The m-th derivative of lgamma at x >= 0 (float64)."""
    c, y0 = _stirling(m)
    small = x < y0
    y = where(small, x + y0, x)
    shift = 0.0         # sum over k < y0 of the m-th derivative of log(x + k)
    for k in range(y0):
        shift = shift + (log(x + k) if m == 0 else (x + k) ** -m)
    if m:
        shift = shift * ((-1) ** (m - 1) * math.factorial(m - 1))
    r = 1 / (y * y)
    s = 0.0
    for cj in reversed(c):
        s = (s + cj) * r
    if m == 0:
        series = (y - 0.5) * log(y) - y + 0.5 * math.log(2 * _PI) + s * y
    elif m == 1:
        series = log(y) - 0.5 / y + s
    else:
        series = (s + (-1) ** m * (math.factorial(m - 2) + math.factorial(m - 1) / (2 * y))) * y ** (1 - m)
    return series - where(small, shift, 0.0)


@functools.lru_cache(maxsize=None)
def _lgamma_taylor(a):
    """Taylor coefficients (lowest first, 27 terms) of lgamma(a + e): lgamma(a), psi^(k-1)(a) / k!."""
    from .creation import tensor
    at = tensor([float(a)], dtype=_dt.float64)
    return (math.lgamma(a),) + tuple(_gamma_positive(k, at).item() / math.factorial(k) for k in range(1, 27))


def _lgamma_near_zeros(x, f):
    # on [0.75, 2.25] (zeros at 1 and 2) the shifted sum keeps only absolute precision: Taylor series
    for a in (1.0, 1.5, 2.0):
        f = where(abs(x - a) <= 0.25, _horner(_lgamma_taylor(a), x - a), f)
    return f


@functools.lru_cache(maxsize=None)
def _cot_derivative(n):
    """Coefficients (lowest first) of P_n with d^n/dx^n cot(pi x) = pi^n P_n(cot(pi x))."""
    p = [0, 1]
    for _ in range(n):
        d = [i * p[i] for i in range(1, len(p))]
        q = [0] * (len(d) + 2)
        for i, v in enumerate(d):      # P' times -(1 + c^2)
            q[i] -= v
            q[i + 2] -= v
        p = q
    return tuple(float(v) for v in p)


def _cotpi(r):
    """cot(pi r) for |r| <= 1/2, accurate near +-1/2 too."""
    a = abs(r)
    return where(a < 0.25, 1 / tan(_PI * r), sign(r) * tan(_PI * (0.5 - a)))


def _gamma_family(m, x):
    """lgamma (m = 0), digamma (1) or polygamma(m - 1) of a float64 tensor. At the poles (x a
    non-positive integer) and at -inf PyTorch's values; at +inf the limits (polygamma(n >= 2) gives 0
    where PyTorch gives NaN)."""
    neg = x < 0
    xr = where(neg, 1 - x, x)
    f = _gamma_positive(m, xr) if m else _lgamma_near_zeros(xr, _gamma_positive(0, xr))
    r, _ = _pi_reduce(x)
    pole = (r == 0) & (x <= 0) | ((x == -_INF) if m > 2 else False)     # PyTorch: -inf a pole from n = 2
    r = where(r == 0, 0.5, r)      # integers never take the reflection branch: keep it finite there
    if m == 0:
        refl = math.log(_PI) - log(sin(_PI * abs(r))) - f        # log|pi / sin(pi x)| - lgamma(1 - x)
        return where(pole | isinf(x), _INF, where(neg, refl, f))
    n = m - 1       # psi^(n)(x) = (-1)^n psi^(n)(1 - x) - pi^(n+1) P_n(cot(pi x))
    refl = (-1) ** n * f - _PI ** (n + 1) * _horner(_cot_derivative(n), _cotpi(r))
    if m == 1:      # digamma: -inf at +0, +inf at -0, NaN at the negative integers
        at_pole = where(x == 0, where(_signbit(x), _INF, -_INF), _NAN)
    else:
        at_pole = (-1) ** m * _INF
    return where(pole, at_pole, where(neg, refl, f))


lgamma = _unary("lgamma", "LgammaBackward0", lambda w: _gamma_family(0, w), lambda g, x, y: g * digamma(x),
                precise=True, doc="log|Gamma(x)| (inf at the poles). >>> lgamma(tensor([4.])) -> [1.7918]")
digamma = _unary("digamma", "DigammaBackward0", lambda w: _gamma_family(1, w),
                 lambda g, x, y: g * polygamma(1, x), precise=True,
                 doc="psi(x) = d/dx lgamma(x). >>> digamma(tensor([1.])) -> [-0.5772]")


@functools.lru_cache(maxsize=None)
def _polygamma_op(n):
    return _unary("polygamma", "PolygammaBackward0", lambda w: _gamma_family(n + 1, w),
                  lambda g, x, y: g * polygamma(n + 1, x), precise=True)


def polygamma(n, input, *, out=None):
    """The n-th derivative of digamma. >>> polygamma(1, tensor([1.])) -> [1.6449] (pi^2 / 6)"""
    n = _int_arg(n, "polygamma", "n")
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    return _polygamma_op(n)(input, out=out)


def mvlgamma(input, p, *, out=None):
    """Multivariate log-gamma of dimension p: sum_j lgamma(x - j/2) + p(p-1)/4 log(pi)."""
    p = _int_arg(p, "mvlgamma", "p")
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    x = _floating(input, "mvlgamma")
    from .creation import tensor
    half_steps = tensor([j / 2 for j in range(p)], dtype=x._dtype, device=x._dev)
    return _out(lgamma(x.unsqueeze(-1) - half_steps).sum(-1) + p * (p - 1) / 4 * math.log(_PI), out)


# -- the incomplete gamma functions ----------------------------------------------------------------
# P(a, x) = gamma(a, x) / Gamma(a) and Q = 1 - P by Cephes' (SciPy's) three methods, without its
# asymptotic series for large a near x: the power series of P where x <= max(1, a), the continued
# fraction of Q for x > max(1.1, a), the series of Q for small a at x <= 1.1; the other one of the
# pair as 1 minus. Iterations run until every element has converged (~9 sqrt(a) steps at x ~ a).
_EULER = 0.5772156649015329
_EPS = 2.0 ** -52


@functools.lru_cache(maxsize=None)
def _lgamma1p_taylor():
    """Coefficients (lowest first) of lgamma(1 + a) = -euler a + sum_k>1 (-1)^k zeta(k) a^k / k, |a| <= 1/2."""
    def zeta(k):            # Euler-Maclaurin from n = 10 (error < 1e-18)
        n, rising = 10, k
        s = sum(m ** -k for m in range(1, n)) + n ** (1 - k) / (k - 1) + n ** -k / 2
        for j, b in enumerate(_BERNOULLI, 1):
            s += b / math.factorial(2 * j) * rising * n ** (-k - 2 * j + 1)
            rising *= (k + 2 * j - 1) * (k + 2 * j)
        return s
    return (0.0, -_EULER) + tuple((-1) ** k * zeta(k) / k for k in range(2, 61))


def _lgamma1p(a):
    # lgamma(1 + a) without rounding 1 + a (small a would lose its digits there)
    small = abs(a) <= 0.5
    return where(small, _horner(_lgamma1p_taylor(), where(small, a, 0.0)), lgamma(1 + a))


def _log1pmx(d):
    """log(1 + d) - d without cancellation, for |d| <= 1/2: -d t + 2 sum_k>0 t^(2k+1) / (2k+1), t = d / (2 + d)."""
    t = d / (2 + d)
    t2 = t * t
    return -d * t + 2 * t * t2 * _horner([1 / (2 * k + 3) for k in range(18)], t2)


def _igam_fac(a, x):
    """x^a e^-x / Gamma(a). From a = 10 on in Stirling's form sqrt(a / 2 pi) exp(a log1pmx((x - a) / a) -
    stirlerr(a)), which keeps the a log(x) - x - lgamma(a) cancellation out of the result."""
    big = a >= 10
    ab, an = where(big, a, 10.0), where(big, 1.0, a)
    stirlerr = _horner([b / (2 * j * (2 * j - 1)) for j, b in enumerate(_BERNOULLI, 1)], 1 / (ab * ab)) / ab
    d = (x - ab) / ab
    near_a = abs(d) <= 0.5
    lm = where(near_a, _log1pmx(where(near_a, d, 0.0)), log(x / ab) - d)    # log(x / a) - (x - a) / a
    far = sqrt(ab / (2 * _PI)) * exp(ab * lm - stirlerr)
    return where(big, far, exp(an * log(x) - x - lgamma(an)))


def _iterate(step, state, done, limit=200000):
    """state = step(n, state) for n = 1, 2, ... until done(state) holds everywhere (checked every 16 steps)."""
    n = 0
    while n < limit:
        for _ in range(16):
            n += 1
            state = step(n, state)
        if bool(done(state).all()):
            break
    return state


def _p_series(a, x):
    # P = x^a e^-x / Gamma(a + 1) sum_n x^n / ((a + 1) ... (a + n))
    def step(n, s):
        c = s[0] * x / (a + n)
        return c, s[1] + c
    one = x * 0 + 1
    _, total = _iterate(step, (one, one), lambda s: s[0] <= _EPS * s[1])
    return total * _igam_fac(a, x) / a


def _q_cfrac(a, x):
    # Q = x^a e^-x / Gamma(a) / (x + 1 - a - 1 (1 - a) / (x + 3 - a - 2 (2 - a) / ...)), modified Lentz;
    # x >= a makes every denominator positive. An element stops where its factor is 1 to a few ulps
    # (once converged, the factors only wander by rounding around 1).
    tiny = 1e-300
    b = x + 1 - a

    def step(n, s):
        b, c, d, h, done = s
        an = -n * (n - a)
        b = b + 2
        d = an * d + b
        d = 1 / where(abs(d) < tiny, tiny, d)
        c = b + an / c
        c = where(abs(c) < tiny, tiny, c)
        delta = d * c
        return b, c, d, where(done, h, h * delta), done | (abs(delta - 1) <= 4 * _EPS)
    s = _iterate(step, (b, b * 0 + 1 / tiny, 1 / b, 1 / b, b != b), lambda s: s[4])
    return s[3] * _igam_fac(a, x)


def _q_series(a, x):
    # Q = -expm1(a log x - lgamma(1 + a)) - x^a / Gamma(a) sum_n>0 (-x)^n / (n! (a + n)), small a, x <= 1.1
    def step(n, s):
        fac = s[0] * -x / n
        term = fac / (a + n)
        return fac, s[1] + term, term
    _, total, _ = _iterate(step, (x * 0 + 1, x * 0, x * 0 + 1), lambda s: abs(s[2]) <= _EPS * abs(s[1]))
    logx = log(x)
    return -expm1(a * logx - _lgamma1p(a)) - exp(a * logx - lgamma(a)) * total


def _igamma(a, x, upper):
    """P(a, x), or Q(a, x) when `upper`, of float64 tensors, with PyTorch's values at the edges."""
    shape = broadcast_shapes(a._data.shape, x._data.shape)
    a, x = a.expand(shape), x.expand(shape)
    nan = isnan(a) | isnan(x) | (a < 0) | (x < 0) | ((a == 0) & (x == 0)) | (isinf(a) & isinf(x))
    ok = (a > 0) & (x > 0) & ~isinf(a) & ~isinf(x)
    if upper:
        small_x = where(x <= 0.5, a > -0.4 / log(where(x < 0.5, x, 0.5)), a > 1.1 * x)
        by_p = where(x > 1.1, x < a, small_x)
        by_cf = (x > 1.1) & ~by_p
    else:
        by_p = (x <= 1) | (x <= a)
        by_cf = ~by_p & (x > 1.1)
    methods = ((_p_series, ok & by_p, 1.0, 0.5, not upper), (_q_cfrac, ok & by_cf, 1.0, 2.0, upper),
               (_q_series, ok & ~by_p & ~by_cf, 0.5, 0.5, upper))
    edge = where((x == 0) | isinf(a), 0.0, 1.0)     # P where a == 0, x == 0, a == inf or x == inf
    r = 1 - edge if upper else edge
    for method, use, a0, x0, direct in methods:        # (a0, x0): stand-ins where the method is not used
        if bool(use.any()):
            v = method(where(use, a, a0), where(use, x, x0))
            r = where(use, v if direct else 1 - v, r)
    return where(nan, _NAN, r)


def _igamma_op(name, node, upper):
    # the derivative in x (`other`) only; in a (`input`) PyTorch has none either
    def grad_x(g, a, x, y):
        d = exp((a - 1) * log(x) - x - lgamma(a))
        return -g * d if upper else g * d

    def grad_a(g, a, x, y):
        raise NotImplementedError(f"the derivative for '{name}: input' is not implemented.")
    inner = _binary(name, node, lambda a, x: _igamma(a, x, upper), grad_a, grad_x, floats_only=True, precise=True)

    def op(input, other, *, out=None):
        _check_tensor(input, name, "input")
        _check_tensor(other, name, "other")
        dt = _dt.result_type(input, other)
        if dt.category != 2:
            raise NotImplementedError(f"\"{name}_{input._dev.type}\" not implemented for '{_tn(dt)}'")
        return inner(input, other, out=out)
    op.__name__ = name
    return op


igamma = _igamma_op("igamma", "IgammaBackward0", False)
igamma.__doc__ = """The regularized lower incomplete gamma function P(input, other) (torch.special.gammainc);
differentiable in `other` only. >>> igamma(tensor([2.]), tensor([1.])) -> [0.2642]"""
igammac = _igamma_op("igammac", "IgammacBackward0", True)
igammac.__doc__ = """The regularized upper incomplete gamma function Q = 1 - P, accurate where it is small
(torch.special.gammaincc). >>> igammac(tensor([2.]), tensor([1.])) -> [0.7358]"""


# -- the error-function family ---------------------------------------------------------------------
def _erfc(x, scaled, erf_x=None):
    """erfc(x), or erfcx(x) = exp(x^2) erfc(x) when `scaled` (float64). Below 2: 1 - erf(x); from 2:
    the continued fraction 1/(x + (1/2)/(x + 1/(x + (3/2)/(x + ...)))) / sqrt(pi), 60 levels."""
    xf = clamp(x, min=2.0)       # each branch sees only values of its own range: no 1/0, no overflow
    t = xf
    for k in range(60, 0, -1):
        t = xf + (k / 2) / t
    far = 1 / (_SQRT_PI * t)
    xn = clamp(x, max=2.0)
    near = 1 - (erf(xn) if erf_x is None else erf_x)
    if scaled:
        return where(x < 2, exp(xn * xn) * near, far)
    return where(x < 2, near, far * exp(-(xf * xf)))


def _inv_erf(a, c):
    """x >= 0 with erf(x) = a, given c = 1 - a (exact from the caller, so the tail keeps precision):
    Winitzki's approximation (relative error < 2e-3), then three Newton steps on erf(x) - a below
    a = 1/2 and on log(erfc(x)) - log(c) above."""
    inside = (c > 0) & (a <= 1)
    end = c == 0
    a, c = where(inside, a, 0.5), where(inside, c, 0.5)    # the ends and outside: set below
    lg = log(c * (1 + a))
    b = 2 / (_PI * 0.147) + lg / 2
    x = sqrt(sqrt(b * b - lg / 0.147) - b)
    for _ in range(3):
        ex = erf(x)
        central = x - (ex - a) * (_SQRT_PI / 2) * exp(x * x)
        e = _erfc(x, True, ex)
        tail = x + (log(e) - x * x - log(c)) * e * (_SQRT_PI / 2)
        x = where(a < 0.5, central, tail)
    return where(inside, x, where(end, _INF, _NAN))


def _erfinv(y):
    a = abs(y)
    return _odd(y, _inv_erf(a, 1 - a))


def _ndtri(p):
    lower = p < 0.5
    v = math.sqrt(2) * _inv_erf(where(lower, 1 - 2 * p, 2 * p - 1), where(lower, 2 * p, 2 - 2 * p))
    return where(lower, -v, v)


def _log_ndtr(x):
    lo, hi = clamp(x, max=-1.0) * _SQRT1_2, clamp(x, min=-1.0) * _SQRT1_2     # each branch on its own range
    return where(x < -1, log(_erfc(-lo, scaled=True) / 2) - lo * lo, log1p(-_erfc(hi, scaled=False) / 2))


erfc = _unary("erfc", "ErfcBackward0", lambda w: _erfc(w, False),
              lambda g, x, y: g * (-2 / _SQRT_PI) * exp(-(x * x)), precise=True,
              doc="1 - erf(x), accurate in the tail. >>> erfc(tensor([3.])) -> [2.2090e-05]")
erfcx = _unary("erfcx", "SpecialErfcxBackward0", lambda w: _erfc(w, True),
               lambda g, x, y: g * (2 * x * y - 2 / _SQRT_PI), precise=True, saves="xy",
               doc="exp(x^2) erfc(x), without overflow. >>> erfcx(tensor([30.])) -> [0.0188]")
erfinv = _unary("erfinv", "ErfinvBackward0", _erfinv, lambda g, x, y: g * (_SQRT_PI / 2) * exp(y * y),
                precise=True, saves="y", doc="Inverse of erf on [-1, 1]. >>> erfinv(tensor([0.5])) -> [0.4769]",
                autocast=True)
ndtri = _unary("ndtri", "SpecialNdtriBackward0", _ndtri,
               lambda g, x, y: g * math.sqrt(2 * _PI) * exp(y * y / 2), precise=True, saves="y",
               doc="Inverse of the standard normal CDF. >>> ndtri(tensor([0.975])) -> [1.9600]")
log_ndtr = _unary("log_ndtr", "SpecialLogNdtrBackward0", _log_ndtr,
                  lambda g, x, y: g * math.sqrt(2 / _PI) / erfcx(x * -_SQRT1_2), precise=True,
                  doc="log of the standard normal CDF. >>> log_ndtr(tensor([-40.])) -> [-804.6084]")


def ndtr(input, *, out=None):
    """Standard normal CDF, 0.5 erfc(-x / sqrt(2)). >>> ndtr(tensor([0.])) -> [0.5]"""
    x = _floating(input, "ndtr")
    # in float64: rounding -x / sqrt(2) to float32 would cost up to 2 x^2 ulps in the tail
    return _out((0.5 * erfc(x.to(_dt.float64) * -_SQRT1_2)).to(x._dtype), out)


# -- modified Bessel functions of the first kind --------------------------------------------------
_BESSEL_SPLIT = 18.0        # power series (34 terms) below, asymptotic series (36 terms) above


@functools.lru_cache(maxsize=None)
def _bessel_asymptotic(nu):
    """Coefficients a_k (k = 0..36) of I_nu(x) e^-x sqrt(2 pi x) ~ sum_k a_k x^-k."""
    a = [1.0]
    for k in range(1, 37):
        a.append(-a[-1] * (4 * nu * nu - (2 * k - 1) ** 2) / (8 * k))
    return tuple(a)


def _bessel_i(nu, x, scaled):
    """I_nu(x) for nu = 0 or 1, times exp(-|x|) when `scaled` (float64)."""
    ax = abs(x)
    xs, xb = clamp(ax, max=_BESSEL_SPLIT), clamp(ax, min=_BESSEL_SPLIT)     # each branch on its own range
    q = xs * xs / 4
    t = s = 1.0 / math.factorial(nu)
    for k in range(1, 35):
        t = t * q / (k * (k + nu))
        s = s + t
    series = s * (xs / 2) ** nu
    big = _horner(_bessel_asymptotic(nu), 1 / xb) / sqrt(2 * _PI * xb)      # already scaled
    if scaled:
        v = where(ax <= _BESSEL_SPLIT, series * exp(-xs), big)
    else:
        half = exp(ax / 2)          # e^x in two halves: finite as long as I_nu is
        v = where(isinf(ax), _INF, where(ax <= _BESSEL_SPLIT, series, big * half * half))
    return v * sign(x) if nu % 2 else v


def _i1_grad(g, x, y, scaled):
    # d/dx I1 = I0 - I1/x (1/2 at 0); scaled: I0e - I1e (sgn(x) + 1/x)
    safe = where(x == 0, 1.0, x)
    d = i0e(x) - y * (sign(x) + 1 / safe) if scaled else i0(x) - y / safe
    return g * where(x == 0, 0.5, d)


i0 = _unary("i0", "I0Backward0", lambda w: _bessel_i(0, w, False), lambda g, x, y: g * i1(x), precise=True,
            doc="Modified Bessel function I0. >>> i0(tensor([1.])) -> [1.2661]")
i0e = _unary("i0e", "SpecialI0EBackward0", lambda w: _bessel_i(0, w, True),
             lambda g, x, y: g * (i1e(x) - sign(x) * y), precise=True, saves="xy",
             doc="exp(-|x|) I0(x). >>> i0e(tensor([1.])) -> [0.4658]")
i1 = _unary("i1", "SpecialI1Backward0", lambda w: _bessel_i(1, w, False),
            lambda g, x, y: _i1_grad(g, x, y, False), precise=True, saves="xy",
            doc="Modified Bessel function I1. >>> i1(tensor([1.])) -> [0.5652]")
i1e = _unary("i1e", "SpecialI1EBackward0", lambda w: _bessel_i(1, w, True),
             lambda g, x, y: _i1_grad(g, x, y, True), precise=True, saves="xy",
             doc="exp(-|x|) I1(x). >>> i1e(tensor([1.])) -> [0.2079]")


# -- sinc, logit, entropy terms ------------------------------------------------------------------
def _sinc(x):
    safe = where(x == 0, 1.0, x)
    r, s = _pi_reduce(safe)
    return where(x == 0, 1.0, s * sin(_PI * r) / (_PI * safe))


def _sinc_grad(g, x, y):
    # (cos(pi x) - sinc(x)) / x, 0 at x = 0
    safe = where(x == 0, 1.0, x)
    r, s = _pi_reduce(safe)
    return g * where(x == 0, 0.0, (s * cos(_PI * r) - y) / safe)


sinc = _unary("sinc", "SincBackward0", _sinc, _sinc_grad, saves="xy",
              doc="sin(pi x) / (pi x), 1 at 0. >>> sinc(tensor([0.5])) -> [0.6366]")


def logit(input, eps=None, *, out=None):
    """log(x / (1 - x)); with eps, x is first limited to [eps, 1 - eps]. >>> logit(tensor([0.25])) -> [-1.0986]"""
    x = _floating(input, "logit")
    lo = None if eps is None or eps < 0 else float(eps)

    def forward(w):
        if lo is not None:
            w = where(w < lo, lo, where(w > 1 - lo, 1 - lo, w))
        # from 1/4 on, 2x - 1 is exact and atanh keeps the precision near x = 1/2
        return where(w < 0.25, log(w / (1 - w)), 2 * _atanh(2 * w - 1))
    y = _compute(forward, (x,), x._dtype)
    if x._rg and _gstate.enabled:
        def vjp(g):
            if lo is None:
                return (g / (x * (1 - x)),)
            outside = (x < lo) | (x > 1 - lo)
            safe = where(outside, 0.5, x)
            return (where(outside, 0.0, g / (safe * (1 - safe))),)
        record("LogitBackward0", y, (x,), vjp, saved=(x,))
    return _out(y, out)


def _xlog(x, y, f):
    # 0 where x == 0 (unless y is NaN), like PyTorch
    return where(isnan(y), _NAN, where(x == 0, 0.0, x * f(where(x == 0, 1.0, y))))


xlogy = _binary("xlogy", "XlogyBackward0", lambda a, b: _xlog(a, b, log),
                lambda g, a, b, y: g * xlogy(a != 0, b), lambda g, a, b, y: g * a / b, numbers=True,
                doc="x * log(y), 0 where x == 0. >>> xlogy(tensor([0., 2.]), tensor([0., 3.])) -> [0., 2.1972]")
xlog1py = _binary("xlog1py", "SpecialXlog1PyBackward0", lambda a, b: _xlog(a, b, log1p),
                  lambda g, a, b, y: g * xlog1py(a != 0, b), lambda g, a, b, y: g * a / (1 + b), numbers=True,
                  doc="x * log1p(y), 0 where x == 0. >>> xlog1py(tensor([2.]), tensor([1.])) -> [1.3863]")


def _entr(x):
    return where(x > 0, -x * log(where(x > 0, x, 1.0)), where(x == 0, 0.0, where(isnan(x), x, -_INF)))


entr = _unary("entr", "SpecialEntrBackward0", _entr, lambda g, x, y: -g * (1 + log(x)),
              doc="-x log(x) (0 at 0, -inf below). >>> entr(tensor([0.5])) -> [0.3466]")


# -- binary float functions --------------------------------------------------------------------------
def _hypot(a, b):
    a, b = abs(a), abs(b)
    hi, lo = maximum(a, b), minimum(a, b)
    r = hi * sqrt(1 + (lo / where(hi == 0, 1.0, hi)) ** 2)
    return where(isinf(a) | isinf(b), _INF, r)


def _logaddexp(a, b, base2):
    s = _LN2 if base2 else 1.0          # base 2: log2(2^a + 2^b)
    r = maximum(a, b) + log1p(exp(-abs(a - b) * s)) / s
    return where(a == b, a + _LN2 / s, r)       # equal (also equal infinities): no inf - inf


hypot = _binary("hypot", "HypotBackward0", _hypot, lambda g, a, b, y: g * a / y, lambda g, a, b, y: g * b / y,
                floats_only=True, doc="sqrt(a^2 + b^2) without overflow. >>> hypot(tensor([3.]), tensor([4.])) -> [5.]")
logaddexp = _binary("logaddexp", "LogaddexpBackward0", lambda a, b: _logaddexp(a, b, False),
                    lambda g, a, b, y: g * sigmoid(a - b), lambda g, a, b, y: g * sigmoid(b - a), floats_only=True,
                    doc="log(exp(a) + exp(b)), stable. >>> logaddexp(tensor([0.]), tensor([0.])) -> [0.6931]")
logaddexp2 = _binary("logaddexp2", "Logaddexp2Backward0", lambda a, b: _logaddexp(a, b, True),
                     lambda g, a, b, y: g * sigmoid((a - b) * _LN2), lambda g, a, b, y: g * sigmoid((b - a) * _LN2),
                     floats_only=True, doc="log2(2^a + 2^b). >>> logaddexp2(tensor([1.]), tensor([1.])) -> [2.]")


# (bits of precision, smallest subnormal, largest finite) per float dtype
_LAYOUT = {"float16": (11, 2.0 ** -24, 65504.0), "bfloat16": (8, 2.0 ** -133, 3.3895313892515355e38),
           "float32": (24, 2.0 ** -149, 3.4028234663852886e38),
           "float64": (53, 2.0 ** -1074, 1.7976931348623157e308)}


def _nextafter(a, b):
    bits, tiny, big = _LAYOUT[a._dtype.name]
    mant, e = frexp(a)                              # |a| = |mant| 2^e, |mant| in [1/2, 1)
    up = clamp(pow(2.0, (e - bits).to(_dt.float64)), min=tiny)      # the spacing above |a|
    down = where(abs(mant) == 0.5, clamp(up / 2, min=tiny), up)    # below a power of two: half
    step = where((b > a) != (a > 0), down, up)
    r = where(a == 0, where(b > 0, a + tiny, a - tiny), a + where(b > a, step, -step).to(a._dtype))
    r = where(isinf(a), sign(a) * big, where(r == 0, a * 0.0, r))     # from +-tiny to zero: keep the sign
    return where(isnan(a) | isnan(b), _NAN, where(a == b, b, r)).to(a._dtype)


nextafter = _binary("nextafter", "NextafterBackward0", _nextafter, lambda g, a, b, y: g,
                    lambda g, a, b, y: zeros_like_grad(g), floats_only=True, precise=None,
                    doc="The next float after input toward other (same dtype, bit-exact). "
                        ">>> nextafter(tensor([1.]), tensor([2.])) - 1 -> [1.1921e-07]")


def heaviside(input, values, *, out=None):
    """0 where input < 0, values where input == 0, 1 where input > 0 (same dtypes; NaN gives 0)."""
    _check_tensor(input, "heaviside", "input")
    _check_tensor(values, "heaviside", "values")
    if input._dtype is not values._dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes.")
    with _no_grad():
        r = where(input == 0, values, (input > 0).to(input._dtype))
    _nondiff_node("heaviside", [r], [input, values])
    return _out(r, out)


def ldexp(input, other, *, out=None):
    """input * 2^other, exact for integer exponents (no intermediate overflow).
    >>> ldexp(tensor([1.]), tensor([3])) -> [8.]"""
    a, b = _operands("ldexp", input, other)
    dt = a._dtype
    f64 = _dt.float64
    return _out(_scale2(a.to(f64), b.to(f64)).to(dt), out)


_frexp_t = _return_type("frexp", ("mantissa", "exponent"))


def frexp(input, *, out=None):
    """(mantissa, exponent) with input = mantissa * 2^exponent, |mantissa| in [1/2, 1), exponent int32."""
    _check_tensor(input, "frexp", "input")
    if input._dtype.category != 2:
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    with _no_grad():
        x = input.to(_dt.float64)          # holds every float exactly, subnormals of float32/16 too
        ok = (x != 0) & ~isinf(x) & ~isnan(x)
        a = where(ok, abs(x), 1.0)
        e = floor(log(a) / _LN2) + 1      # may be one off next to a power of two: corrected below
        m = _scale2(a, -e)
        hi, lo = m >= 1, m < 0.5
        e = where(hi, e + 1, where(lo, e - 1, e))
        m = where(hi, m / 2, where(lo, m * 2, m))
        mant = where(ok, where(x < 0, -m, m), x).to(input._dtype)
        expo = where(ok, e, 0.0).to(_dt.int32)
    if input._rg and _gstate.enabled:
        # d mantissa / d input = 2^-exponent (as a power, it stays finite wherever it is representable)
        record("FrexpBackward0", mant, (input,), lambda g: (g * pow(2.0, (-expo).to(g._dtype)),), saved=(expo,))
    if out is None:
        return _frexp_t(mant, expo)
    m_out, e_out = out
    if m_out._dtype is not input._dtype:
        raise RuntimeError(f"torch.frexp() expects mantissa to have dtype {_C_NAMES[input._dtype.name]} but got "
                           f"{_C_NAMES[m_out._dtype.name]}")
    if e_out._dtype is not _dt.int32:
        raise RuntimeError(f"torch.frexp() expects exponent to have int dtype but got {_C_NAMES[e_out._dtype.name]}")
    return _frexp_t(_out(mant, m_out), _out(expo, e_out))


# -- sign bits, classification, conversions ----------------------------------------------------------
def signbit(input, *, out=None):
    """True where the sign bit is set (-0.0 included; NaN reads as False)."""
    _check_tensor(input, "signbit", "input")
    with _no_grad():
        r = _signbit(input) if input._dtype.category == 2 else input < 0
    return _out(r, out)


def sgn(input, *, out=None):
    """z / |z| for complex tensors (0 at 0); for real ones sign itself (0 at NaN).
    >>> sgn(tensor([-2., 0., 3.])) -> [-1., 0., 1.]"""
    from .complex import sgn as complex_sgn
    return _out(complex_sgn(input), out)


def deg2rad(input, *, out=None):
    return _out(_floating(input, "deg2rad") * (_PI / 180), out)


def rad2deg(input, *, out=None):
    return _out(_floating(input, "rad2deg") * (180 / _PI), out)


def nan_to_num(input, nan=0.0, posinf=None, neginf=None, *, out=None):
    """NaN -> nan, +inf -> posinf, -inf -> neginf (default: the dtype's largest / lowest finite value)."""
    _check_tensor(input, "nan_to_num", "input")
    if input._dtype.category != 2:
        return _out(input.clone(), out)
    big = _LAYOUT[input._dtype.name][2]
    posinf = big if posinf is None else posinf
    neginf = -big if neginf is None else neginf
    r = where(isnan(input), nan, where(input == _INF, posinf, where(input == -_INF, neginf, input)))
    return _out(r, out)


def isposinf(input, *, out=None):
    _check_tensor(input, "isposinf", "input")
    return _out(isinf(input) & (input > 0), out)


def isneginf(input, *, out=None):
    _check_tensor(input, "isneginf", "input")
    return _out(isinf(input) & (input < 0), out)


def isreal(input):
    """True where the imaginary part is 0 (everywhere for real tensors)."""
    _check_tensor(input, "isreal", "input")
    if input._dtype.category == 3:
        return input.imag == 0
    return _make(input._k["full"](input._data.shape, True, "bool"), _dt.bool_, input._k, input._dev)


# -- integer functions -------------------------------------------------------------------------------
def _int_operands(name, input, other):
    _check_tensor(input, name, "input")
    _check_tensor(other, name, "other")
    dt = _dt.result_type(input, other)
    if dt.category != 1:
        raise NotImplementedError(f"\"{name}\" not implemented for '{_tn(dt)}'")
    shape = broadcast_shapes(input._data.shape, other._data.shape)
    return input.to(dt).expand(*shape), other.to(dt).expand(*shape)


def gcd(input, other, *, out=None):
    """Greatest common divisor (>= 0) of integer tensors. >>> gcd(tensor([12, 18]), tensor([8, -4])) -> [4, 2]"""
    a, b = _int_operands("gcd", input, other)
    a, b = abs(a), abs(b)
    while bool((b != 0).any()):     # Euclid, on every element at once
        nz = b != 0
        r = remainder(a, where(nz, b, 1))
        a, b = where(nz, b, a), where(nz, r, 0)
    return _out(a, out)


def lcm(input, other, *, out=None):
    """Least common multiple (>= 0) of integer tensors. >>> lcm(tensor([4]), tensor([6])) -> [12]"""
    a, b = _int_operands("lcm", input, other)
    g = gcd(a, b)
    return _out(abs(floor_divide(a, where(g == 0, 1, g)) * b), out)


# -- Tensor methods ----------------------------------------------------------------------------------
def _polygamma_method(self, n):
    return polygamma(n, self)


_polygamma_method.__name__ = "polygamma"


def _attach():
    T = Tensor
    unary_inplace = ("acosh", "asinh", "atanh", "erfc", "erfinv", "lgamma", "digamma", "i0", "sinc", "sgn",
                     "deg2rad", "rad2deg")
    for name in unary_inplace:
        setattr(T, name, globals()[name])
        setattr(T, name + "_", _unary_inplace(globals()[name]))
    T.arccosh, T.arcsinh, T.arctanh = T.acosh, T.asinh, T.atanh
    T.arccosh_, T.arcsinh_, T.arctanh_ = T.acosh_, T.asinh_, T.atanh_
    for name in ("mvlgamma", "logit", "nan_to_num", "xlogy", "hypot", "heaviside", "nextafter", "ldexp", "gcd",
                 "lcm", "igamma", "igammac"):
        setattr(T, name, globals()[name])
        setattr(T, name + "_", _inplace(globals()[name]))
    for name in ("logaddexp", "logaddexp2", "frexp", "signbit", "isneginf", "isposinf", "isreal"):
        setattr(T, name, globals()[name])
    T.polygamma = _polygamma_method
    T.polygamma_ = _inplace(_polygamma_method)


_attach()

PUBLIC = ["acosh", "asinh", "atanh", "arccosh", "arcsinh", "arctanh", "erfc", "erfinv", "lgamma", "digamma",
          "polygamma", "mvlgamma", "i0", "sinc", "logit", "xlogy", "hypot", "logaddexp", "logaddexp2",
          "heaviside", "nextafter", "ldexp", "frexp", "signbit", "sgn", "deg2rad", "rad2deg", "nan_to_num",
          "gcd", "lcm", "isneginf", "isposinf", "isreal", "igamma", "igammac"]
