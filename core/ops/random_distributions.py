"""Samplers torch.distributions rests on: _standard_gamma (reparameterised), _sample_dirichlet, poisson,
binomial, and the in-place cauchy_ / log_normal_ / geometric_.

Gamma, Poisson and binomial draws are the optional backend kernels of core/dispatch/optional_random.py
(native in the NumPy and CUDA backends, rejection samplers over uniform/normal elsewhere); the rest are
transforms of uniform or normal draws. The frontend maps the edge cases as PyTorch does (alpha <= 0 or
NaN gives the smallest normal float, rates must be non-negative, prob is clamped to [0, 1]).

The gradient of a gamma sample is the implicit reparameterisation derivative dx/dalpha = -(dF/dalpha) /
(dF/dx) at fixed u = F(x; alpha), F the Gamma(alpha, 1) CDF (_standard_gamma_grad). It is written in
Tensor ops: a series for x <= 500, a Wilson-Hilferty approximation above (relative error < 2e-5 there),
so the sample's second derivative flows too.

    >>> import tensorplug as tp
    >>> a = tp.tensor([0.5, 2.0], requires_grad=True)
    >>> tp._standard_gamma(a).sum().backward()        # a.grad: d sample / d alpha
"""
from __future__ import annotations

import math

from .. import dtypes as _dt
from ._core import Tensor, _gstate, _make, broadcast_shapes, record
from .introspection import finfo
from .linalg import _C_NAMES, _tn
from .random import _fill_from, _gen, _sample

_SERIES_MAX_X = 500.0          # the series' terms reach e**x / x**alpha: it stays finite below x = 700


def _tensor(x, fname, arg="input"):
    if not isinstance(x, Tensor):
        raise TypeError(f"{fname}(): argument '{arg}' must be Tensor, not {type(x).__name__}")


def _kernel_error(kname, t):
    return NotImplementedError(f"\"{kname}_{t._dev.type}\" not implemented for '{_tn(t._dtype)}'")


def _t(t, data, dtype=None):
    dt = dtype or t._dtype
    return _make(data, dt, t._k, t._dev)


def _wide(t):
    """t's data as float32 or float64 (half types widened to float32) and that dtype."""
    if t._dtype in (_dt.float32, _dt.float64):
        return t._data, t._dtype
    return t._k["astype"](t._data, "float32"), _dt.float32


class _NotImplementedNode:
    """PyTorch's 'NotImplemented' grad_fn: the output carries history, but backward through it raises."""


def _no_derivative(op, out, inputs):
    ins = tuple(t for t in inputs if isinstance(t, Tensor) and t._rg)
    if _gstate.enabled and ins:
        def vjp(g):
            raise RuntimeError(f"derivative for aten::{op} is not implemented")
        record("NotImplemented", out, ins, vjp)
    return out


# -- gamma -----------------------------------------------------------------------------------------------
def _gamma_raw(alpha, generator):
    """Gamma(alpha, 1) draws as backend data in alpha's dtype: tiny for alpha <= 0 or NaN, inf for inf."""
    k, a = alpha._k, alpha._data
    g = _gen(generator, alpha._dev, k)
    pos = k["gt"](a, 0.0)
    ok = k["logical_and"](pos, k["lt"](a, math.inf))
    s = k["standard_gamma"](g._get(), k["where"](ok, a, k["full"]((), 1.0, alpha._dtype.name)))
    tiny = finfo(alpha._dtype).tiny
    s = k["where"](ok, s, k["where"](pos, math.inf, 0.0))
    return k["maximum"](s, tiny)             # PyTorch never returns 0: the smallest normal number instead


def _standard_gamma(input, generator=None):
    """Gamma(input, 1) samples (float32 / float64); differentiable: d sample / d input is
    _standard_gamma_grad(input, sample)."""
    _tensor(input, "_standard_gamma")
    if input._dtype not in (_dt.float32, _dt.float64):
        raise _kernel_error("gamma", input)
    out = _t(input, _gamma_raw(input, generator))
    if _gstate.enabled and input._rg:
        record("StandardGammaBackward0", out, (input,),
               lambda g: (g * _standard_gamma_grad(input, out),), saved=(input, out))
    return out


def _standard_gamma_grad(self, output):
    """d x / d alpha of x ~ Gamma(alpha, 1) at fixed CDF value: -(dF/dalpha) / (dF/dx)."""
    _tensor(self, "_standard_gamma_grad", "self")
    _tensor(output, "_standard_gamma_grad", "output")
    if output._dtype is not self._dtype:
        raise RuntimeError(f"Found dtype {_tn(output._dtype)} but expected {_tn(self._dtype)}")
    if not self._dtype.is_floating_point:
        raise _kernel_error("_standard_gamma_grad", self)
    broadcast_shapes(tuple(self.shape), tuple(output.shape))     # PyTorch's size-mismatch error
    a, x = self.to(_dt.float64), output.to(_dt.float64)
    a, x = a + x * 0, x + a * 0                                   # broadcast both
    series = x <= _SERIES_MAX_X
    xs = x.where(series, x.new_ones(()))
    grad = _series_grad(a, xs).where(series, _wilson_hilferty_grad(a, x))
    return grad.to(self._dtype)


def _series_grad(a, x):
    """-sum_n r_n (log x - psi(a + n + 1)), r_n = x**(n + 1) Gamma(a) / Gamma(a + n + 1): the ratio of
    dP/da = e**-x sum_n x**(a + n) (log x - psi(a + n + 1)) / Gamma(a + n + 1) to dP/dx."""
    from .special import digamma
    if x.numel() == 0:
        return x * 0
    xmax = float(x.detach().max())
    terms = int(xmax + 10 * math.sqrt(xmax) + 25)               # past the peak at n ~ x, 10 sd of the tail
    logx = x.log()
    r = x / a
    psi = digamma(a + 1)
    total = r * (logx - psi)
    for n in range(1, terms):
        an = a + n
        r = r * x / an
        psi = psi + 1 / an
        total = total + r * (logx - psi)
    return -total


def _wilson_hilferty_grad(a, x):
    """dx/da at fixed z of x = a (1 - 1/(9a) + z / (3 sqrt(a)))**3 (large alpha)."""
    w = (x / a) ** (1 / 3)
    z = 3 * a.sqrt() * (w - 1 + 1 / (9 * a))
    return x / a + w * w * (1 / (3 * a) - z / (2 * a.sqrt()))


# -- dirichlet ---------------------------------------------------------------------------------------------
def _sample_dirichlet(input, generator=None):
    """Dirichlet(input) samples along the last dim: gammas normalised to sum 1. Not differentiable (as
    PyTorch: Dirichlet.rsample differentiates through _dirichlet_grad instead)."""
    _tensor(input, "_sample_dirichlet")
    if input._dtype not in (_dt.float32, _dt.float64):
        raise NotImplementedError(f"\"dirichlet\" not implemented for '{_tn(input._dtype)}'")
    k = input._k
    s = _gamma_raw(input, generator)
    ax = (len(s.shape) - 1,) if s.shape else ()
    total = k["sum"](s, ax, True) if ax else s
    r = k["maximum"](k["minimum"](k["div"](s, total), 1.0), finfo(input._dtype).tiny)
    return _no_derivative("_sample_dirichlet", _t(input, r), (input,))


def _dirichlet_grad(x, alpha, total):
    """The reparameterised gradient of a Dirichlet sample through its Beta(alpha, total - alpha) marginal
    x: -(dI/dalpha) / (dI/dx) / (1 - x) at fixed beta = total - alpha, I the regularized incomplete beta
    function (Dirichlet.rsample's backward: _dirichlet_grad(x, alpha, total) * (g - (x * g).sum(-1)))."""
    for name, t in (("x", x), ("alpha", alpha), ("total", total)):
        _tensor(t, "_dirichlet_grad", name)
    for t in (alpha, total):
        if t._dtype is not x._dtype:
            raise RuntimeError(f"Found dtype {_tn(t._dtype)} but expected {_tn(x._dtype)}")
    if not x._dtype.is_floating_point:
        raise NotImplementedError(f"\"_dirichlet_grad_cpu\" not implemented for '{_tn(x._dtype)}'")
    shape = broadcast_shapes(broadcast_shapes(tuple(x.shape), tuple(alpha.shape)), tuple(total.shape))
    xx, a, t = (v.to(_dt.float64).expand(*shape) for v in (x, alpha, total))
    return _beta_grad(xx, a, t - a).to(x._dtype)


def _beta_grad(x, a, b):
    """(dx/da at fixed I_x(a, b) and b) / (1 - x) for x ~ Beta(a, b): PyTorch's _dirichlet_grad, which
    Dirichlet's backward multiplies by (grad - sum(x grad)). I_x(a, b) comes from the series
    I_x(p, q) = x**p (1-x)**q / (p B(p, q)) * sum_n c_n, c_0 = 1, c_n / c_{n-1} = x (p + q + n - 1) / (p + n),
    differentiated term by term; evaluated at x <= 1/2 (I_x(a, b) = 1 - I_{1-x}(b, a)), where it converges."""
    from .special import digamma, lgamma
    flip = x > 0.5
    xs = x.where(~flip, 1 - x)
    p, q = a.where(~flip, b), b.where(~flip, a)
    c, dcp, dcq = xs.new_ones(()), xs * 0, xs * 0
    s, sp, sq = c + xs * 0, dcp, dcq
    for n in range(1, _beta_terms(xs, p, q)):
        f = xs * (p + q + n - 1) / (p + n)
        dcp = dcp * f + c * (xs / (p + n) - f / (p + n))
        dcq = dcq * f + c * (xs / (p + n))
        c = c * f
        s, sp, sq = s + c, sp + dcp, sq + dcq
    logx, log1mx = xs.log(), (-xs).log1p()
    pref = (p * logx + q * log1mx - (lgamma(p) + lgamma(q) - lgamma(p + q))).exp() / p
    dpq = digamma(p + q)
    dI_dp = pref * ((logx - 1 / p - digamma(p) + dpq) * s + sp)
    dI_dq = pref * ((log1mx - digamma(q) + dpq) * s + sq)
    # dI_x(a, b) / da; flipped, I_x(a, b) = 1 - I_xs(b, a)
    dI = dI_dp.where(~flip, -dI_dq)
    pdf = ((a - 1) * x.log() + (b - 1) * (-x).log1p() - (lgamma(a) + lgamma(b) - lgamma(a + b))).exp()
    return -dI / (pdf * (1 - x))


def _beta_terms(x, p, q):
    """Terms of the series at x <= 1/2: the terms rise while x (p + q + n) > p + n (at most q terms),
    then shrink at least as fast as a ratio tending to x: ~ log(2**-56) / log(x) more."""
    if x.numel() == 0:
        return 1
    xm = min(max(float(x.detach().max()), 1e-300), 0.5)
    rise = min(float(q.detach().max()), 1e5)
    return int(2 * rise + 39.0 / -math.log(xm)) + 20


# -- poisson and binomial ---------------------------------------------------------------------------------
def poisson(input, generator=None):
    """Poisson(input) counts in input's (floating) dtype; input must be non-negative."""
    _tensor(input, "poisson")
    if not input._dtype.is_floating_point or input._dtype.is_complex:
        raise _kernel_error("poisson", input)
    k = input._k
    data, wide = _wide(input)
    bad = k["logical_not"](k["ge"](data, 0.0))                         # negative or NaN
    if bool(k["to_numpy"](k["any"](bad, None, False))):
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    g = _gen(generator, input._dev, k)
    cap = 2.0 ** 62
    s = k["poisson"](g._get(), k["minimum"](data, cap))
    # rates past int64's range give int64's minimum, as PyTorch's conversion does
    s = k["where"](k["ge"](data, 2.0 ** 63), -(2.0 ** 63), s)
    out = _t(input, k["astype"](s, input._dtype.name))
    if _gstate.enabled and input._rg:
        record("PoissonBackward0", out, (input,), lambda g: (g * 0,))
    return out


def binomial(count, prob, generator=None):
    """Binomial(count, prob) counts in count's (floating) dtype; count and prob broadcast. Non-integral
    counts are truncated, negative ones give 0, prob is clamped to [0, 1]; NaN in either gives NaN."""
    _tensor(count, "binomial", "count")
    _tensor(prob, "binomial", "prob")
    if not count._dtype.is_floating_point or count._dtype.is_complex:
        raise ValueError(f"binomial only supports floating-point dtypes for count, got: {_tn(count._dtype)}")
    if prob._dtype is not count._dtype:
        raise RuntimeError(f"Found dtype {_tn(prob._dtype)} but expected {_tn(count._dtype)}")
    if prob._k is not count._k:
        from ._core import check_same_device
        check_same_device(count, prob)
    k = count._k
    shape = broadcast_shapes(tuple(count.shape), tuple(prob.shape))
    n, wide = _wide(count)
    p, _ = _wide(prob)
    n, p = k["copy"](k["broadcast_to"](n, shape)), k["copy"](k["broadcast_to"](p, shape))
    nan = k["logical_or"](k["isnan"](n), k["isnan"](p))
    inf = k["eq"](n, math.inf)
    n_ok = k["where"](k["logical_or"](nan, inf), 0.0, k["minimum"](k["maximum"](k["floor"](n), 0.0), 2.0 ** 62))
    p_ok = k["where"](nan, 0.0, k["minimum"](k["maximum"](p, 0.0), 1.0))
    g = _gen(generator, count._dev, k)
    s = k["binomial"](g._get(), n_ok, p_ok)
    s = k["where"](nan, math.nan, k["where"](inf, math.inf, s))
    out = _t(count, k["astype"](s, count._dtype.name))
    return _no_derivative("binomial", out, (count, prob))


# -- in-place samplers ------------------------------------------------------------------------------------
def _draw_dtype(t):
    return _dt.float64 if t._dtype is _dt.float64 else _dt.float32


def cauchy_(self, median=0, sigma=1, *, generator=None):
    """Fill with Cauchy(median, sigma) samples: median + sigma tan(pi (u - 1/2))."""
    if not self._dtype.is_floating_point or self._dtype.is_complex:
        raise RuntimeError("Cauchy distribution is a continuous probability distribution. dtype must be a "
                           f"floating point but you specified {_C_NAMES[self._dtype.name]}")
    if not sigma > 0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={float(sigma):g}")
    u = _sample("uniform", tuple(self.shape), generator, _draw_dtype(self), self._dev, False)
    return _fill_from(self, ((u - 0.5) * math.pi).tan() * sigma + median)


def log_normal_(self, mean=1, std=2, *, generator=None):
    """Fill with exp(N(mean, std**2)) samples (mean and std of the underlying normal)."""
    if not self._dtype.is_floating_point or self._dtype.is_complex:
        raise _kernel_error("log_normal", self)
    if not std > 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={float(std):g}")
    z = _sample("normal", tuple(self.shape), generator, _draw_dtype(self), self._dev, False)
    return _fill_from(self, (z * std + mean).exp())


def geometric_(self, p, *, generator=None):
    """Fill with the number of Bernoulli(p) trials up to the first success (1, 2, ...)."""
    if self._dtype is _dt.bool_ or self._dtype.is_complex:
        raise _kernel_error("geometric", self)
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={float(p):g}")
    u = _sample("uniform", tuple(self.shape), generator, _dt.float64, self._dev, False)
    # 1 - u lies in (0, 1]: log(1 - u) / log(1 - p) >= 0, and its ceiling >= 1
    trials = ((1 - u).log() / math.log1p(-p)).ceil().clamp(min=1)
    return _fill_from(self, trials)


def _attach():
    Tensor.cauchy_, Tensor.log_normal_, Tensor.geometric_ = cauchy_, log_normal_, geometric_


_attach()

PUBLIC = ["poisson", "binomial"]
