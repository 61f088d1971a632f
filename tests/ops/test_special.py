"""Special functions (core/ops/special.py, tensorplug.special): values against float64 references
computed here (NumPy, Python's math, exact values and identities), edge values, dtypes,
broadcasting, out=, Tensor methods and in-place forms, errors. Gradients: tests/autograd/cases_special.py."""
import math

import numpy as np
import pytest

import tensorplug as torch
import tensorplug.special as S

# edge values make the NumPy backend's IEEE arithmetic warn (it silences that itself outside pytest)
pytestmark = pytest.mark.filterwarnings(r"ignore::RuntimeWarning:tensorplug\.backends\.numpy_backend")

INF, NAN = math.inf, math.nan
EULER = 0.57721566490153286061
ZETA3, ZETA5 = 1.2020569031595942854, 1.0369277551433699263


def t64(*values):
    return torch.tensor(values, dtype=torch.float64)


def npy(t):
    return t.detach().numpy()


def check(got, want, rtol, atol=0.0):
    """got (a tensor or a sequence) equals want within tolerance; NaN where NaN, infinities exact."""
    got = npy(got) if isinstance(got, torch.Tensor) else np.asarray(got)
    np.testing.assert_allclose(got.astype(np.float64), np.asarray(want, dtype=np.float64), rtol=rtol, atol=atol,
                               equal_nan=True)


def grid(lo, hi, n=200, seed=0):
    return np.random.default_rng(seed).uniform(lo, hi, n)


def signbits(t):
    return np.signbit(npy(t)).tolist()


# -- inverse hyperbolic functions ---------------------------------------------------------------------
@pytest.mark.parametrize("name, ref, xs", [
    ("acosh", np.arccosh, np.concatenate([1 + np.geomspace(1e-15, 1, 60), grid(1, 50), np.geomspace(50, 1e300, 60)])),
    ("asinh", np.arcsinh, np.concatenate([grid(-20, 20), np.geomspace(1e-300, 1e300, 80),
                                          -np.geomspace(1e-8, 1e200, 40)])),
    ("atanh", np.arctanh, np.concatenate([grid(-1, 1), 1 - np.geomspace(1e-16, 0.5, 40),
                                          np.geomspace(1e-300, 1e-3, 40)])),
])
def test_inverse_hyperbolic_float64(name, ref, xs):
    check(getattr(torch, name)(torch.tensor(xs)), ref(xs), rtol=1e-15)


@pytest.mark.parametrize("name, ref", [("acosh", np.arccosh), ("asinh", np.arcsinh), ("atanh", np.arctanh)])
def test_inverse_hyperbolic_float32_and_integers(name, ref):
    xs = np.linspace(-0.99, 0.99, 51) if name == "atanh" else np.linspace(1.0, 9.0, 51)
    x32 = torch.tensor(xs, dtype=torch.float32)
    y = getattr(torch, name)(x32)
    assert y.dtype is torch.float32
    check(y, ref(npy(x32).astype(np.float64)), rtol=1e-6)
    yi = getattr(torch, name)(torch.tensor([0, 1, 2]))
    assert yi.dtype is torch.float32
    with np.errstate(all="ignore"):
        check(yi, ref(np.array([0.0, 1.0, 2.0])), rtol=1e-6)


def test_inverse_hyperbolic_edges():
    y = torch.acosh(t64(1.0, INF, 0.5, -INF, NAN)).tolist()
    assert y[:2] == [0.0, INF] and all(math.isnan(v) for v in y[2:])
    y = torch.asinh(t64(-0.0, 0.0, INF, -INF))
    assert y.tolist() == [0.0, 0.0, INF, -INF] and signbits(y) == [True, False, False, True]
    y = torch.atanh(t64(1.0, -1.0, -0.0, 2.0))
    assert y.tolist()[:3] == [INF, -INF, 0.0] and signbits(y)[2] and math.isnan(y[3].item())
    assert torch.arccosh is torch.acosh and torch.arcsinh is torch.asinh and torch.arctanh is torch.atanh


# -- gamma family ---------------------------------------------------------------------------------------
def _nonint(xs):
    return xs[np.abs(xs - np.round(xs)) > 1e-3]


def test_lgamma_matches_math():
    xs = np.concatenate([np.geomspace(1e-300, 1, 50), grid(0, 30), np.geomspace(30, 1e300, 50),
                         _nonint(grid(-40, 0)), [0.5, 1.0, 2.0, 3.0, 1 + 1e-9, 2 - 1e-9]])
    # absolute error near the zeros lgamma has between the negative poles (reflection formula), and
    # math.lgamma itself is off by ~3e-16 right next to the zeros at 1 and 2
    check(torch.lgamma(torch.tensor(xs)), [math.lgamma(x) for x in xs], rtol=1e-13, atol=5e-15)


def test_lgamma_relative_precision_next_to_its_zeros():
    # references: mpmath at 40 digits
    xs = [1 - 1e-12, 1 + 1e-15, 2 + 1e-15, 1 + 2 ** -52, 0.999, 2.19]
    want = [5.772028958989666e-13, -6.408381213479996e-16, 3.75507922621725e-16, -1.2816762426960008e-16,
            5.7803853289138e-4, 0.09153323264631712]
    check(torch.lgamma(torch.tensor(xs, dtype=torch.float64)), want, rtol=1e-14)
    assert torch.lgamma(t64(1.0, 2.0)).tolist() == [0.0, 0.0]


def test_lgamma_poles_infinities_nan():
    y = torch.lgamma(t64(0.0, -0.0, -1.0, -7.0, -1e20, INF, -INF, NAN))
    assert y.tolist()[:7] == [INF] * 7 and math.isnan(y[7].item())


def test_lgamma_float32_and_integers():
    xs = torch.tensor(np.concatenate([grid(0.01, 40), _nonint(grid(-10, 0, 50))]), dtype=torch.float32)
    y = torch.lgamma(xs)
    assert y.dtype is torch.float32
    check(y, [math.lgamma(float(x)) for x in npy(xs)], rtol=1e-6, atol=1e-6)
    assert torch.lgamma(torch.tensor([1, 2, 5])).tolist() == pytest.approx([0.0, 0.0, math.log(24)], abs=1e-6)
    assert torch.lgamma(torch.tensor([5.0], dtype=torch.float16)).dtype is torch.float16


def test_digamma_exact_values():
    harmonic = np.cumsum(1.0 / np.arange(1, 21))
    xs = [1.0, 0.5, -0.5, 0.25, 0.75, *range(2, 22)]
    want = [-EULER, -EULER - 2 * math.log(2), 2 - EULER - 2 * math.log(2), -EULER - math.pi / 2 - 3 * math.log(2),
            -EULER + math.pi / 2 - 3 * math.log(2), *(harmonic - EULER)]
    # psi(-1/2) = psi(3/2) = 0.0365 sits near the root of psi: absolute error there
    check(torch.digamma(torch.tensor(xs, dtype=torch.float64)), want, rtol=1e-14, atol=1e-15)


def _richardson_derivative(f, x, h=1e-2):
    d = [(f(x + h / 2 ** k) - f(x - h / 2 ** k)) / (2 * h / 2 ** k) for k in range(4)]
    for level in range(1, 4):
        d = [(4 ** level * d[i + 1] - d[i]) / (4 ** level - 1) for i in range(len(d) - 1)]
    return d[0]


def test_digamma_against_derivative_of_math_lgamma():
    xs = np.concatenate([grid(0.1, 30, 60), _nonint(grid(-12, -0.05, 60))])
    xs = xs[np.abs(xs - np.round(xs)) > 0.05]        # the difference quotient needs room to the poles
    want = [_richardson_derivative(math.lgamma, x) for x in xs]
    check(torch.digamma(torch.tensor(xs)), want, rtol=1e-8, atol=1e-8)


def test_digamma_recurrence_and_reflection():
    xs = _nonint(grid(-30, 30, 300))
    x = torch.tensor(xs)
    check(torch.digamma(x + 1) - torch.digamma(x), 1 / xs, rtol=1e-12, atol=1e-13)
    check(torch.digamma(1 - x) - torch.digamma(x), math.pi / np.tan(math.pi * xs), rtol=1e-11, atol=1e-11)


def test_digamma_poles_and_infinities():
    y = torch.digamma(t64(0.0, -0.0, -1.0, -3.0, INF, -INF, NAN))
    assert y.tolist()[:2] == [-INF, INF] and y[4].item() == INF
    assert all(math.isnan(v) for v in y.tolist()[2:4] + y.tolist()[5:])
    assert torch.special.psi is torch.digamma


def _polygamma_reference(n, x, terms=4000):
    """(-1)^(n+1) n! sum_k (x + k)^-(n+1), the tail past `terms` by Euler-Maclaurin."""
    k = np.arange(terms, dtype=np.float64)
    y = x + terms
    s = np.sum((x + k) ** -(n + 1)) + y ** -n / n + y ** -(n + 1) / 2 + (n + 1) * y ** -(n + 2) / 12
    return (-1) ** (n + 1) * math.factorial(n) * s


@pytest.mark.parametrize("n", [1, 2, 3, 6])
def test_polygamma_against_series(n):
    xs = np.concatenate([grid(0.05, 25, 40), _nonint(grid(-8, 0, 40))])
    check(torch.polygamma(n, torch.tensor(xs)), [_polygamma_reference(n, x) for x in xs], rtol=1e-12)


def test_polygamma_exact_values():
    check(torch.polygamma(1, t64(1.0, 0.5, 5.0)),
          [math.pi ** 2 / 6, math.pi ** 2 / 2, math.pi ** 2 / 6 - sum(1 / k ** 2 for k in range(1, 5))], rtol=1e-14)
    zeta = {2: math.pi ** 2 / 6, 3: ZETA3, 4: math.pi ** 4 / 90, 5: ZETA5, 6: math.pi ** 6 / 945}
    for n in range(1, 6):
        want = (-1) ** (n + 1) * math.factorial(n) * zeta[n + 1]
        assert torch.polygamma(n, t64(1.0)).item() == pytest.approx(want, rel=1e-14)
    assert torch.polygamma(2, t64(0.5)).item() == pytest.approx(-14 * ZETA3, rel=1e-14)
    x = t64(0.3, 2.7, -1.4)
    assert torch.equal(torch.polygamma(0, x), torch.digamma(x))


def test_polygamma_poles_errors_methods():
    y = torch.polygamma(1, t64(0.0, -2.0, -INF))
    assert y.tolist()[:2] == [INF, INF] and math.isnan(y[2].item())
    assert torch.polygamma(2, t64(0.0, -1.0)).tolist() == [-INF, -INF]
    assert torch.polygamma(3, t64(-2.0)).tolist() == [INF]
    assert torch.polygamma(2, t64(INF)).item() == 0.0        # the limit (PyTorch: NaN)
    assert torch.polygamma(2, t64(-INF)).tolist() == [-INF] and torch.polygamma(3, t64(-INF)).tolist() == [INF]
    with pytest.raises(RuntimeError, match="does not support negative n"):
        torch.polygamma(-1, t64(1.0))
    with pytest.raises(TypeError, match="argument 'n' must be int"):
        torch.polygamma(1.5, t64(1.0))
    x = torch.tensor([1, 2])
    assert x.polygamma(1).dtype is torch.float32
    check(x.polygamma(1), [math.pi ** 2 / 6, math.pi ** 2 / 6 - 1], rtol=1e-6)
    y = t64(1.0, 3.0)
    y.polygamma_(2)
    check(y, [_polygamma_reference(2, 1.0), _polygamma_reference(2, 3.0)], rtol=1e-13)


def test_mvlgamma():
    xs = grid(1.6, 10, 30)
    for p in (1, 2, 4):
        want = [sum(math.lgamma(x - j / 2) for j in range(p)) + p * (p - 1) / 4 * math.log(math.pi) for x in xs]
        check(torch.mvlgamma(torch.tensor(xs), p), want, rtol=1e-13)
        check(torch.special.multigammaln(torch.tensor(xs), p), want, rtol=1e-13)
    x = torch.tensor([[2.5, 3.0], [4.0, 7.5]], dtype=torch.float64)
    assert x.mvlgamma(3).shape == (2, 2) and torch.mvlgamma(t64(3.0)[0], 2).shape == ()
    with pytest.raises(RuntimeError, match="p has to be greater than or equal to 1"):
        torch.mvlgamma(x, 0)
    with pytest.raises(TypeError, match="argument 'p' must be int"):
        torch.mvlgamma(x, 1.5)


# -- error-function family --------------------------------------------------------------------------
def test_erfc_matches_math():
    xs = np.concatenate([grid(-6, 6, 300), grid(2, 26.5, 100), [2.0, 1.999999, 0.0]])
    check(torch.erfc(torch.tensor(xs)), [math.erfc(x) for x in xs], rtol=1e-13)
    assert torch.erfc(t64(INF, -INF)).tolist() == [0.0, 2.0] and math.isnan(torch.erfc(t64(NAN)).item())
    x32 = torch.tensor(grid(-4, 9, 100), dtype=torch.float32)
    check(torch.erfc(x32), [math.erfc(float(v)) for v in npy(x32)], rtol=1e-6, atol=1e-44)
    assert torch.erfc(torch.tensor([0, 1])).dtype is torch.float32


def test_erfcx():
    xs = np.concatenate([grid(-20, 26, 200), [2.0, 0.0]])
    check(S.erfcx(torch.tensor(xs)), [math.erfc(x) * math.exp(x * x) for x in xs], rtol=1e-13)
    big = np.array([1e5, 1e10, 1e300])
    with np.errstate(over="ignore"):
        want = (1 - 1 / (2 * big ** 2) + 3 / (4 * big ** 4)) / (big * math.sqrt(math.pi))
    check(S.erfcx(torch.tensor(big)), want, rtol=1e-15)
    assert S.erfcx(t64(INF, -INF, -30.0)).tolist() == [0.0, INF, INF]


def test_erfinv_inverts_erf():
    ys = np.concatenate([grid(-0.999, 0.999, 300), np.geomspace(1e-300, 0.5, 40)])
    x = torch.erfinv(torch.tensor(ys))
    check([math.erf(v) for v in npy(x)], ys, rtol=2e-16, atol=2e-16)
    # tails: the complement 1 - y is kept; erfc's relative sensitivity is 2 x^2 per relative ulp of x
    ys = 1 - np.geomspace(1e-300, 1e-3, 40)
    ys = ys[ys < 1]
    x = torch.erfinv(torch.tensor(ys))
    check([math.erfc(v) for v in npy(x)], 1 - ys, rtol=5e-13)
    assert torch.erfinv(t64(0.5)).item() == pytest.approx(0.47693627620446987338, rel=1e-15)


def test_erfinv_edges_dtypes():
    y = torch.erfinv(t64(1.0, -1.0, 0.0, -0.0, 1.5, -INF, NAN))
    assert y.tolist()[:4] == [INF, -INF, 0.0, 0.0] and signbits(y)[3]
    assert all(math.isnan(v) for v in y.tolist()[4:])
    y32 = torch.erfinv(torch.tensor([0.3, -0.99, 0.999999], dtype=torch.float32))
    assert y32.dtype is torch.float32
    check([math.erf(v) for v in npy(y32).astype(np.float64)], [0.3, -0.99, 0.999999], rtol=1e-6)
    assert torch.erfinv(torch.tensor([0, 1])).tolist() == [0.0, INF]


def test_ndtr_ndtri_log_ndtr():
    xs = np.concatenate([grid(-37, 8, 200), [0.0]])
    check(S.ndtr(torch.tensor(xs)), [0.5 * math.erfc(-x / math.sqrt(2)) for x in xs], rtol=1e-12)
    ps = np.concatenate([grid(1e-6, 1 - 1e-6, 200), np.geomspace(1e-300, 1e-3, 50)])
    q = S.ndtri(torch.tensor(ps))
    # ndtr's relative sensitivity is x^2 per relative ulp of x (x ~ -37 at 1e-300)
    check([0.5 * math.erfc(-v / math.sqrt(2)) for v in npy(q)], ps, rtol=1e-12)
    assert S.ndtri(t64(0.975)).item() == pytest.approx(1.95996398454005423552, rel=1e-14)
    assert S.ndtri(t64(0.0, 1.0, 0.5)).tolist() == [-INF, INF, 0.0]
    assert all(math.isnan(v) for v in S.ndtri(t64(-0.1, 1.1, NAN)).tolist())
    xs = grid(-1, 8, 100)
    want = [math.log(0.5 * math.erfc(-x / math.sqrt(2))) if x < 0 else math.log1p(-0.5 * math.erfc(x / math.sqrt(2)))
            for x in xs]
    check(S.log_ndtr(torch.tensor(xs)), want, rtol=1e-13)
    check(S.log_ndtr(t64(-5.0, -40.0, -1e10)), [-15.064998393988725736, -804.60844201375378817,
                                               -5e19 - math.log(1e10 * math.sqrt(2 * math.pi))], rtol=1e-14)
    assert S.log_ndtr(t64(INF, -INF)).tolist() == [0.0, -INF]
    assert S.ndtr(torch.tensor([0])).dtype is torch.float32


# -- modified Bessel functions ------------------------------------------------------------------------
def _bessel_integral(nu, x, scaled, n=2000):
    """(1/pi) int_0^pi exp(x (cos t - 1)) cos(nu t) dt (times e^|x| unless scaled): trapezoidal rule,
    exponentially accurate for this periodic integrand."""
    t = np.linspace(0, np.pi, n + 1)
    ax = abs(x)
    f = np.exp(ax * (np.cos(t) - 1)) * np.cos(nu * t)
    v = (f.sum() - (f[0] + f[-1]) / 2) / n
    v = v if scaled else v * math.exp(ax / 2) * math.exp(ax / 2)
    return math.copysign(v, x) if nu else v


def test_i0_matches_numpy():
    xs = np.concatenate([grid(-40, 40, 300), grid(-705, 705, 100), [0.0, 18.0, -18.0]])
    check(torch.i0(torch.tensor(xs)), np.i0(xs), rtol=5e-15)
    assert torch.i0(t64(710.0)).item() == pytest.approx(_bessel_integral(0, 710.0, False), rel=1e-14)


@pytest.mark.parametrize("nu, scaled, fn", [(0, True, S.i0e), (1, False, S.i1), (1, True, S.i1e)])
def test_bessel_i_family(nu, scaled, fn):
    xs = np.concatenate([grid(-60, 60, 120), [0.0, 18.0, -18.0, 0.3]])
    check(fn(torch.tensor(xs)), [_bessel_integral(nu, x, scaled) for x in xs], rtol=2e-14, atol=1e-300)
    if scaled:          # far out: the leading terms of the asymptotic series
        big = np.array([1e6, 1e12])
        mu = 4 * nu * nu
        want = (1 - (mu - 1) / (8 * big) + (mu - 1) * (mu - 9) / (128 * big ** 2)) / np.sqrt(2 * np.pi * big)
        check(fn(torch.tensor(big)), want, rtol=1e-15)


def test_bessel_edges():
    assert torch.i0(t64(0.0, INF, -INF)).tolist() == [1.0, INF, INF]     # PyTorch gives NaN at +-inf
    assert S.i1(t64(0.0, INF, -INF)).tolist() == [0.0, INF, -INF]
    assert S.i0e(t64(INF, -INF)).tolist() == [0.0, 0.0] and S.i1e(t64(INF)).tolist() == [0.0]
    assert math.isnan(torch.i0(t64(NAN)).item())
    assert torch.i0(torch.tensor([0, 1])).dtype is torch.float32
    check(torch.i0(torch.tensor([1.5, -2.0], dtype=torch.float32)), np.i0([1.5, -2.0]), rtol=1e-6)


# -- sinc, logit, xlogy family ----------------------------------------------------------------------
def test_sinc():
    xs = np.concatenate([grid(-50, 50, 300), np.geomspace(1e-12, 1e-3, 20), [0.5, -2.5]])
    check(torch.sinc(torch.tensor(xs)), np.sinc(xs), rtol=1e-12, atol=1e-15)
    y = torch.sinc(t64(0.0, 1.0, -2.0, 1e6, INF, NAN))
    assert y[0].item() == 1.0 and max(abs(v) for v in y.tolist()[1:4]) < 1e-16
    assert math.isnan(y[4].item()) and math.isnan(y[5].item())
    yi = torch.sinc(torch.tensor([0, 1, 2]))
    assert yi.dtype is torch.float32 and yi[0].item() == 1.0
    check(torch.sinc(torch.tensor([0.25, 1.5], dtype=torch.float32)), np.sinc([0.25, 1.5]), rtol=1e-6)


def test_logit():
    ps = np.concatenate([np.geomspace(1e-300, 0.5, 80), 1 - np.geomspace(1e-16, 0.5, 40),
                         0.5 + np.geomspace(1e-12, 1e-2, 20)])
    check(torch.logit(torch.tensor(ps)), np.log(ps) - np.log1p(-ps), rtol=1e-12, atol=1e-15)
    y = torch.logit(t64(0.0, 1.0, 1.5, -0.1, NAN))
    assert y.tolist()[:2] == [-INF, INF] and all(math.isnan(v) for v in y.tolist()[2:])
    eps = 0.1
    ps = np.array([0.0, 0.05, 0.3, 0.95, 1.0, 1.5])
    clipped = np.clip(ps, eps, 1 - eps)
    check(torch.logit(torch.tensor(ps), eps=eps), np.log(clipped / (1 - clipped)), rtol=1e-14)
    check(torch.logit(torch.tensor(ps), eps), np.log(clipped / (1 - clipped)), rtol=1e-14)
    assert torch.logit(t64(0.3), eps=-0.1).item() == pytest.approx(math.log(0.3 / 0.7), rel=1e-15)
    assert torch.logit(torch.tensor([0, 1])).tolist() == [-INF, INF]
    assert S.logit is torch.logit


def test_xlogy_values_and_conventions():
    x = np.array([[0.0], [1.5], [-2.0]])
    y = np.array([0.0, 0.5, 3.0, INF])
    with np.errstate(divide="ignore"):
        want = np.where(x == 0, 0.0, x * np.log(np.where(x == 0, 1.0, y)))
    got = torch.xlogy(torch.tensor(x), torch.tensor(y))
    assert got.shape == (3, 4)
    check(got, want, rtol=1e-15)
    r = torch.xlogy(t64(0.0, 0.0, 2.0), t64(NAN, 0.0, 0.0)).tolist()
    assert math.isnan(r[0]) and r[1:] == [0.0, -INF]


def test_xlogy_scalars_dtypes_out():
    b = torch.tensor([1, 3])
    assert torch.xlogy(2, b).tolist() == pytest.approx([0.0, 2 * math.log(3)], rel=1e-6)
    assert torch.xlogy(b, 2.5).dtype is torch.float32
    check(torch.xlogy(b, 2.5), [math.log(2.5), 3 * math.log(2.5)], rtol=1e-6)
    assert torch.xlogy(torch.tensor([3]), t64(4.0)).dtype is torch.float64
    with pytest.raises(TypeError, match="expected a Tensor"):
        torch.xlogy(2, 3)
    out = torch.empty(2, dtype=torch.float64)
    assert torch.xlogy(t64(1.0, 2.0), t64(2.0, 2.0), out=out) is out
    check(out, [math.log(2), 2 * math.log(2)], rtol=1e-15)
    with pytest.raises(RuntimeError, match="can't be cast"):
        torch.xlogy(t64(1.0), t64(1.0), out=torch.empty(1, dtype=torch.int64))
    a = t64(2.0, 0.0)
    a.xlogy_(t64(3.0, 0.0))
    check(a, [2 * math.log(3), 0.0], rtol=1e-15)
    with pytest.raises(RuntimeError, match="must match"):
        torch.xlogy(t64(1.0, 2.0), t64(1.0, 2.0, 3.0))


def test_xlog1py_and_entr():
    x, y = grid(-3, 3, 50), grid(-0.9, 5, 50, seed=1)
    check(S.xlog1py(torch.tensor(x), torch.tensor(y)), x * np.log1p(y), rtol=1e-14)
    r = S.xlog1py(t64(0.0, 0.0, 1.0), t64(-1.0, NAN, -1.0)).tolist()
    assert r[0] == 0.0 and math.isnan(r[1]) and r[2] == -INF
    xs = np.geomspace(1e-300, 1e3, 60)
    check(S.entr(torch.tensor(xs)), -xs * np.log(xs), rtol=1e-15)
    r = S.entr(t64(0.0, -1.0, INF, NAN)).tolist()
    assert r[:3] == [0.0, -INF, -INF] and math.isnan(r[3])
    assert S.entr(torch.tensor([0, 2])).dtype is torch.float32


# -- binary float functions ---------------------------------------------------------------------------
@pytest.mark.parametrize("name, ref", [("hypot", np.hypot), ("logaddexp", np.logaddexp),
                                       ("logaddexp2", np.logaddexp2)])
def test_binary_float_functions(name, ref):
    a, b = grid(-30, 30, 60).reshape(3, 20, 1), grid(-30, 30, 20, seed=1)
    got = getattr(torch, name)(torch.tensor(a), torch.tensor(b))
    assert got.shape == (3, 20, 20)
    check(got, ref(a, b), rtol=1e-15, atol=1e-300)
    edge = [0.0, 1e300, -1e300, 1e-300, INF, -INF, NAN, 3.0]
    ea, eb = np.meshgrid(edge, edge)
    with np.errstate(all="ignore"):
        check(getattr(torch, name)(torch.tensor(ea), torch.tensor(eb)), ref(ea, eb), rtol=1e-15)
    a32, b32 = torch.tensor([1.5, -2.0], dtype=torch.float32), torch.tensor([0.25], dtype=torch.float32)
    assert getattr(torch, name)(a32, b32).dtype is torch.float32
    check(getattr(a32, name)(b32), ref(npy(a32).astype(np.float64), 0.25), rtol=1e-6)
    assert getattr(torch, name)(torch.tensor([3.0], dtype=torch.float16), torch.tensor([4])).dtype is torch.float16
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        getattr(torch, name)(torch.tensor([3]), torch.tensor([4]))
    with pytest.raises(TypeError, match="argument 'other' must be Tensor"):
        getattr(torch, name)(a32, 2.0)


def test_hypot_inplace_and_out():
    a = t64(3.0, 5.0)
    a.hypot_(t64(4.0, 12.0))
    assert a.tolist() == [5.0, 13.0]
    out = torch.empty(1, dtype=torch.float64)
    torch.hypot(t64(8.0), t64(15.0), out=out)
    assert out.tolist() == [17.0]


def test_heaviside():
    x = np.array([-1.5, -0.0, 0.0, 2.0, INF, -INF])
    vals = np.array([0.25, 0.75, 0.5, 0.1, 0.2, 0.3])
    check(torch.heaviside(torch.tensor(x), torch.tensor(vals)), np.heaviside(x, vals), rtol=0)
    check(torch.tensor(x).heaviside(t64(0.5)), np.heaviside(x, 0.5), rtol=0)        # values broadcast
    assert torch.heaviside(t64(NAN), t64(0.5)).tolist() == [0.0]                       # as PyTorch (NumPy: NaN)
    assert torch.heaviside(torch.tensor([-3, 0, 7]), torch.tensor([9])).tolist() == [0, 9, 1]
    with pytest.raises(RuntimeError, match="different dtypes"):
        torch.heaviside(torch.tensor([1, 0]), torch.tensor([5.0]))
    with pytest.raises(TypeError, match="argument 'values' must be Tensor"):
        torch.heaviside(t64(1.0), 0.5)
    y = t64(-1.0, 0.0, 1.0)
    y.heaviside_(t64(0.5))
    assert y.tolist() == [0.0, 0.5, 1.0]
    x = t64(1.0, 0.0).requires_grad_()
    z = torch.heaviside(x, t64(0.5))
    assert z.requires_grad
    with pytest.raises(RuntimeError, match="derivative of heaviside is not implemented"):
        z.sum().backward()


@pytest.mark.parametrize("dtype, np_dtype", [(torch.float64, np.float64), (torch.float32, np.float32),
                                             (torch.float16, np.float16)])
def test_nextafter_bit_exact(dtype, np_dtype):
    fi = np.finfo(np_dtype)
    special = [0.0, -0.0, 1.0, -1.0, 2.0, 0.5, 3.0, float(fi.tiny), float(fi.smallest_subnormal),
               -float(fi.smallest_subnormal), float(fi.max), -float(fi.max), INF, -INF, 1e-3, 12345.678]
    a = np.array(special, dtype=np_dtype)
    for b in (np.array([INF], dtype=np_dtype), np.array([-INF], dtype=np_dtype), np.zeros(1, np_dtype),
              np.array([NAN], dtype=np_dtype), a[::-1].copy()):
        with np.errstate(over="ignore"):
            want = np.where(a == b, b, np.nextafter(a, b))     # C's rule (NumPy's float16 returns a at +-0)
        got = npy(torch.nextafter(torch.tensor(a, dtype=dtype), torch.tensor(b, dtype=dtype)))
        assert got.dtype == np_dtype
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(np.signbit(got[~np.isnan(got)]), np.signbit(want[~np.isnan(want)]))
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        torch.nextafter(torch.tensor([1]), torch.tensor([2]))


def test_nextafter_promotes_and_inplace():
    r = torch.nextafter(torch.tensor([1.0], dtype=torch.float32), t64(2.0))
    assert r.dtype is torch.float64 and r.item() == np.nextafter(1.0, 2.0)
    x = t64(1.0)
    x.nextafter_(t64(0.0))
    assert x.item() == np.nextafter(1.0, 0.0)


def test_ldexp():
    m = np.array([0.5, -0.75, 1.0, 3.0, 2.0 ** -1074, 0.0, 1.5])
    e = np.array([1024, 3, -1074, -1080, 2000, 5000, 0])
    with np.errstate(all="ignore"):
        check(torch.ldexp(torch.tensor(m), torch.tensor(e)), np.ldexp(m, e), rtol=0)
    check(torch.ldexp(t64(2.0, 1.0), t64(2.5, -0.5)), [2 * 2 ** 2.5, 2 ** -0.5], rtol=1e-15)
    r = torch.ldexp(torch.tensor([1, 3]), torch.tensor([2, -1]))
    assert r.dtype is torch.float32 and r.tolist() == [4.0, 1.5]
    h = torch.ldexp(torch.tensor([1.0, 3.0], dtype=torch.float16), torch.tensor([20, -26]))
    assert h.dtype is torch.float16 and npy(h).tolist() == [INF, np.float16(3.0 * 2.0 ** -26)]
    with pytest.raises(TypeError, match="argument 'other' must be Tensor"):
        torch.ldexp(t64(1.0), 3)
    x = t64(1.0, 2.0)
    x.ldexp_(torch.tensor([3, 4]))
    assert x.tolist() == [8.0, 32.0]


@pytest.mark.parametrize("dtype, np_dtype", [(torch.float64, np.float64), (torch.float32, np.float32),
                                             (torch.float16, np.float16)])
def test_frexp_matches_numpy(dtype, np_dtype):
    fi = np.finfo(np_dtype)
    xs = np.concatenate([np.random.default_rng(0).standard_normal(50) * 10.0 ** np.arange(-5, 5).repeat(5),
                         [0.0, -0.0, 1.0, 2.0, 0.5, -4.0, 3.0, float(fi.max), -float(fi.max), float(fi.tiny),
                          float(fi.smallest_subnormal), 3 * float(fi.smallest_subnormal), INF, -INF, NAN]])
    with np.errstate(all="ignore"):
        a = xs.astype(np_dtype)
    m_want, e_want = np.frexp(a)
    m, e = torch.frexp(torch.tensor(a, dtype=dtype))
    assert m.dtype is dtype and e.dtype is torch.int32
    np.testing.assert_array_equal(npy(m), m_want)
    np.testing.assert_array_equal(np.signbit(npy(m)), np.signbit(m_want))
    finite = np.isfinite(a)
    np.testing.assert_array_equal(npy(e)[finite], e_want[finite])
    assert (npy(e)[~finite] == 0).all()


def test_frexp_api():
    r = torch.frexp(t64(8.0))
    assert r.mantissa.tolist() == [0.5] and r.exponent.tolist() == [4] and "frexp" in repr(r)
    m_out, e_out = torch.empty(1, dtype=torch.float64), torch.empty(1, dtype=torch.int32)
    r = torch.frexp(t64(-3.0), out=(m_out, e_out))
    assert r[0] is m_out and m_out.tolist() == [-0.75] and e_out.tolist() == [2]
    with pytest.raises(RuntimeError, match="expects exponent to have int dtype but got long int"):
        torch.frexp(t64(1.0), out=(m_out, torch.empty(1, dtype=torch.int64)))
    with pytest.raises(RuntimeError, match="expects mantissa to have dtype double but got float"):
        torch.frexp(t64(1.0), out=(torch.empty(1), e_out))
    with pytest.raises(RuntimeError, match="only supports floating-point dtypes"):
        torch.frexp(torch.tensor([1, 2]))
    assert t64(3.0).frexp().exponent.tolist() == [2]


# -- sign bits, classification, conversions ---------------------------------------------------------
def test_signbit_sgn():
    xs = np.array([1.5, -2.0, 0.0, -0.0, INF, -INF, 1e-310, -1e-310])
    for dt in (torch.float64, torch.float32, torch.float16):
        x = torch.tensor(xs, dtype=dt)
        r = torch.signbit(x)
        assert r.dtype is torch.bool and r.tolist() == np.signbit(xs).tolist()
    assert torch.signbit(torch.tensor([3, -1, 0])).tolist() == [False, True, False]
    assert torch.signbit(torch.tensor([True, False])).tolist() == [False, False]
    assert torch.signbit(t64(NAN)).tolist() == [False]       # NaN's sign bit cannot be read through kernels
    out = torch.empty(2, dtype=torch.bool)
    assert torch.signbit(t64(-1.0, 1.0), out=out) is out and out.tolist() == [True, False]
    check(torch.sgn(torch.tensor(xs)), np.sign(xs), rtol=0)
    assert torch.sgn(t64(NAN)).tolist() == [0.0]              # as PyTorch
    assert torch.sgn(torch.tensor([-3, 0, 4])).tolist() == [-1, 0, 1]
    y = t64(-2.0, 5.0)
    y.sgn_()
    assert y.tolist() == [-1.0, 1.0] and t64(-7.0).sgn().tolist() == [-1.0]


def test_deg2rad_rad2deg():
    xs = grid(-720, 720, 50)
    check(torch.deg2rad(torch.tensor(xs)), np.deg2rad(xs), rtol=1e-15)
    check(torch.rad2deg(torch.tensor(xs)), np.rad2deg(xs), rtol=1e-15)
    r = torch.deg2rad(torch.tensor([180, 90]))
    assert r.dtype is torch.float32
    check(r, [math.pi, math.pi / 2], rtol=1e-7)
    assert torch.rad2deg(torch.tensor([1.0], dtype=torch.float16)).dtype is torch.float16
    x = t64(math.pi)
    x.rad2deg_()
    assert x.item() == pytest.approx(180.0, rel=1e-15)
    with pytest.raises(RuntimeError, match="can't be cast"):
        torch.tensor([1, 2]).deg2rad_()


@pytest.mark.parametrize("dtype, np_dtype", [(torch.float64, np.float64), (torch.float32, np.float32),
                                             (torch.float16, np.float16)])
def test_nan_to_num(dtype, np_dtype):
    xs = np.array([NAN, INF, -INF, 1.5, -0.0], dtype=np_dtype)
    x = torch.tensor(xs, dtype=dtype)
    np.testing.assert_array_equal(npy(torch.nan_to_num(x)), np.nan_to_num(xs))
    np.testing.assert_array_equal(npy(x.nan_to_num(nan=2.0, posinf=3.0, neginf=-4.0)),
                                  np.nan_to_num(xs, nan=2.0, posinf=3.0, neginf=-4.0))
    x.nan_to_num_(posinf=9.0)
    np.testing.assert_array_equal(npy(x), np.nan_to_num(xs, posinf=9.0))


def test_nan_to_num_integers_and_classification():
    i = torch.tensor([1, -2])
    r = torch.nan_to_num(i)
    assert r.tolist() == [1, -2] and r.dtype is torch.int64 and r is not i
    xs = np.array([INF, -INF, NAN, 0.0, -3.0])
    assert torch.isposinf(torch.tensor(xs)).tolist() == np.isposinf(xs).tolist()
    assert torch.isneginf(torch.tensor(xs)).tolist() == np.isneginf(xs).tolist()
    assert torch.tensor(xs).isneginf().tolist() == np.isneginf(xs).tolist()
    assert torch.isposinf(torch.tensor([1, 2])).tolist() == [False, False]
    out = torch.empty(5, dtype=torch.bool)
    assert torch.isneginf(torch.tensor(xs), out=out) is out and out.tolist() == np.isneginf(xs).tolist()
    assert torch.isreal(torch.tensor(xs)).tolist() == [True] * 5
    assert torch.tensor([[1, 2]]).isreal().tolist() == [[True, True]]


# -- integer functions ------------------------------------------------------------------------------
@pytest.mark.parametrize("name, ref", [("gcd", np.gcd), ("lcm", np.lcm)])
def test_gcd_lcm(name, ref):
    rng = np.random.default_rng(3)
    a = rng.integers(-10000, 10000, (4, 30))
    b = rng.integers(-10000, 10000, 30)
    a[0, :3], b[:3] = [0, 0, 12], [0, 7, 0]
    got = getattr(torch, name)(torch.tensor(a), torch.tensor(b))
    assert got.dtype is torch.int64 and got.shape == (4, 30)
    np.testing.assert_array_equal(npy(got), ref(a, b))
    fib = np.array([832040, 1346269])                 # consecutive Fibonacci numbers: Euclid's worst case
    assert getattr(torch, name)(torch.tensor(fib[:1]), torch.tensor(fib[1:])).tolist() == ref(fib[:1], fib[1:]).tolist()
    r = getattr(torch, name)(torch.tensor([12, -18], dtype=torch.int32), torch.tensor([-8], dtype=torch.int32))
    assert r.dtype is torch.int32 and r.tolist() == ref([12, -18], [-8]).tolist()
    r = getattr(torch, name)(torch.tensor([12, 18], dtype=torch.uint8), torch.tensor([8, 4], dtype=torch.int8))
    assert r.dtype is torch.int16 and r.tolist() == ref([12, 18], [8, 4]).tolist()
    with pytest.raises(NotImplementedError, match=f"\"{name}\" not implemented for 'Float'"):
        getattr(torch, name)(torch.tensor([2]), torch.tensor([1.0]))
    with pytest.raises(NotImplementedError, match="'Bool'"):
        getattr(torch, name)(torch.tensor([True]), torch.tensor([True]))
    with pytest.raises(TypeError, match="argument 'other' must be Tensor"):
        getattr(torch, name)(torch.tensor([2]), 4)
    x = torch.tensor([12, 18])
    getattr(x, name + "_")(torch.tensor([8, 4]))
    assert x.tolist() == ref([12, 18], [8, 4]).tolist()


# -- across the unary ops: methods, in-place forms, out=, dtypes ------------------------------------
UNARY = ["acosh", "asinh", "atanh", "arccosh", "arcsinh", "arctanh", "erfc", "erfinv", "lgamma", "digamma", "i0",
         "sinc", "sgn", "deg2rad", "rad2deg"]


def _domain(name):
    return t64(1.2, 1.7, 3.0) if name in ("acosh", "arccosh") else t64(-0.6, 0.1, 0.45)


@pytest.mark.parametrize("name", UNARY)
def test_unary_method_inplace_out(name):
    fn = getattr(torch, name)
    x = _domain(name)
    want = fn(x)
    assert torch.equal(getattr(x, name)(), want)
    y = x.clone()
    assert getattr(y, name + "_")() is y and torch.equal(y, want)
    out = torch.empty(3, dtype=torch.float64)
    assert fn(x, out=out) is out and torch.equal(out, want)
    h = fn(x.to(torch.float16))       # float16 computes wider and rounds back
    assert h.dtype is torch.float16
    np.testing.assert_allclose(npy(h).astype(np.float64), npy(want), rtol=2e-3, atol=1e-3)


@pytest.mark.parametrize("name", ["erfc", "erfinv", "lgamma", "digamma", "i0", "sinc", "acosh", "asinh", "atanh"])
def test_unary_integer_input_gives_default_float(name):
    y = getattr(torch, name)(torch.tensor([0, 1]))
    assert y.dtype is torch.float32
    with np.errstate(all="ignore"):
        ref = getattr(torch, name)(t64(0.0, 1.0))
    check(y, npy(ref), rtol=1e-6)
    torch.set_default_dtype(torch.float64)
    try:
        assert getattr(torch, name)(torch.tensor([1])).dtype is torch.float64
    finally:
        torch.set_default_dtype(torch.float32)
    with pytest.raises(RuntimeError, match="can't be cast"):
        getattr(torch.tensor([1, 2]), name + "_")()
    with pytest.raises(TypeError, match="argument 'input' must be Tensor"):
        getattr(torch, name)(0.5)


def test_lgamma_backward_is_digamma():
    x = t64(-2.5, 0.5, 3.0, 12.0).requires_grad_()
    torch.lgamma(x).sum().backward()
    check(x.grad, npy(torch.digamma(x.detach())), rtol=1e-15)
    assert torch.lgamma(x).grad_fn.name() == "LgammaBackward0"


def test_inplace_on_leaf_requiring_grad_refused():
    x = t64(0.5).requires_grad_()
    with pytest.raises(RuntimeError, match="leaf Variable"):
        x.lgamma_()


# -- tensorplug.special -------------------------------------------------------------------------------
def test_special_namespace_aliases():
    x = t64(0.3, 1.7, 4.0)
    assert S.gammaln is torch.lgamma and S.psi is S.digamma is torch.digamma and S.polygamma is torch.polygamma
    assert S.erfinv is torch.erfinv and S.i0 is torch.i0 and S.sinc is torch.sinc and S.xlogy is torch.xlogy
    check(S.gammaln(x), [math.lgamma(v) for v in (0.3, 1.7, 4.0)], rtol=1e-14)
    check(S.expit(x), 1 / (1 + np.exp(-npy(x))), rtol=1e-15)
    check(S.erf(x), [math.erf(v) for v in (0.3, 1.7, 4.0)], rtol=1e-15)
    check(S.erfc(x), [math.erfc(v) for v in (0.3, 1.7, 4.0)], rtol=1e-14)
    check(S.expm1(x), np.expm1(npy(x)), rtol=1e-15)
    check(S.log1p(x), np.log1p(npy(x)), rtol=1e-15)
    out = torch.empty(3, dtype=torch.float64)
    assert S.exp2(x, out=out) is out
    check(out, 2 ** npy(x), rtol=1e-15)
    assert S.exp2(torch.tensor([3])).tolist() == [8.0]
    check(S.round(t64(1.234, 5.678), decimals=1), [1.2, 5.7], rtol=1e-15)
    m = torch.tensor(grid(-3, 3, 12).reshape(3, 4))
    ref = np.log(np.exp(npy(m)).sum(1))
    check(S.logsumexp(m, 1), ref, rtol=1e-15)
    out = torch.empty(3, dtype=torch.float64)
    assert S.logsumexp(m, 1, out=out) is out
    check(out, ref, rtol=1e-15)
    e = np.exp(npy(m) - npy(m).max(0))
    check(S.softmax(m, 0), e / e.sum(0), rtol=1e-14)
    check(S.log_softmax(m, 0), np.log(e / e.sum(0)), rtol=1e-14)
    assert S.softmax(m, 1, dtype=torch.float32).dtype is torch.float32
    assert set(S.__all__) <= set(dir(S))


def test_special_is_an_attribute_of_the_package():
    import tensorplug
    assert tensorplug.special is S
    assert "special" not in tensorplug.ops._api.__all__
