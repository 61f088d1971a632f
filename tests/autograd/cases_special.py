"""Gradient cases of the special-functions family (core/ops/special.py), appended to the table of
test_op_gradients.py: each runs gradcheck and gradgradcheck. Inputs stay in each function's smooth
domain (away from poles, kinks such as |x| at 0 in i0e, and powers of two for frexp)."""
from opcases import Case, nc, pos, r

import tensorplug as torch
import tensorplug.special as S


def v(*values):
    """A float64 leaf requiring grad holding `values`."""
    return torch.tensor(values, dtype=torch.float64, requires_grad=True)


GAMMA_X = (-2.5, -0.7, 0.3, 1.4, 3.2, 7.9, 12.5)          # negatives take the reflection formula
BESSEL_X = (-25.0, -3.2, -0.4, 1.7, 19.5)                   # both sides of the series/asymptotic split

CASES = [
    Case("acosh", lambda a: torch.acosh(a + 1), lambda: (pos(2, 3),)),
    Case("asinh", lambda a: a.asinh(), lambda: (r(2, 3, low=-3, high=3),)),
    Case("atanh", torch.atanh, lambda: (nc(3, 2, low=-0.8, high=0.8),)),
    Case("erfc", torch.erfc, lambda: (v(-1.5, 0.3, 1.9, 2.2, 4.0),)),          # both sides of x = 2
    Case("erfinv", torch.erfinv, lambda: (v(-0.95, -0.3, 0.0, 0.4, 0.7, 0.99),)),
    Case("lgamma", torch.lgamma, lambda: (v(*GAMMA_X),)),
    Case("digamma", torch.digamma, lambda: (v(*GAMMA_X),)),
    Case("polygamma_1", lambda a: torch.polygamma(1, a), lambda: (v(*GAMMA_X),)),
    Case("polygamma_2", lambda a: a.polygamma(2), lambda: (pos(4),)),
    Case("mvlgamma", lambda a: torch.mvlgamma(a + 1.5, 3), lambda: (pos(2, 3),)),
    Case("i0", torch.i0, lambda: (v(*BESSEL_X, 0.0),)),
    Case("special_i0e", S.i0e, lambda: (v(*BESSEL_X),)),
    Case("special_i1", S.i1, lambda: (v(*BESSEL_X, 0.0),)),
    Case("special_i1e", S.i1e, lambda: (v(*BESSEL_X),)),
    Case("sinc", torch.sinc, lambda: (v(-2.7, -0.4, 0.3, 1.5, 3.25),)),
    Case("logit", torch.logit, lambda: (pos(2, 3) / 2.5,)),
    Case("logit_eps", lambda a: torch.logit(a, eps=0.1), lambda: (v(0.05, 0.3, 0.6, 0.97),)),
    Case("xlogy", torch.xlogy, lambda: (r(3, 4), pos(4))),
    Case("igamma_x", lambda x: torch.igamma(torch.tensor([0.6, 2.0, 12.0], dtype=torch.float64), x),
         lambda: (v(0.4, 2.5, 11.0),)),                     # differentiable in x only, as PyTorch
    Case("igammac_x", lambda x: torch.igammac(torch.tensor([0.6, 2.0, 12.0], dtype=torch.float64), x),
         lambda: (v(0.4, 2.5, 11.0),)),
    Case("xlogy_scalar_input", lambda b: torch.xlogy(2.5, b), lambda: (pos(5),)),
    Case("special_xlog1py", S.xlog1py, lambda: (r(3), pos(3))),
    Case("special_entr", S.entr, lambda: (pos(5),)),
    Case("hypot", torch.hypot, lambda: (r(3, 4), r(4, seed=1))),
    Case("logaddexp", torch.logaddexp, lambda: (r(3, 1), r(4, seed=1))),
    Case("logaddexp2", lambda a, b: a.logaddexp2(b), lambda: (nc(2, 3), r(2, 3, seed=1))),
    Case("nextafter", torch.nextafter, lambda: (r(4), r(4, seed=1))),
    Case("frexp", lambda a: torch.frexp(a).mantissa, lambda: (v(-5.3, -0.3, 0.7, 3.1, 1000.5),)),
    Case("ldexp", lambda a, e: torch.ldexp(a, e), lambda: (r(3), r(3, seed=1) * 3)),
    Case("special_erfcx", S.erfcx, lambda: (v(-1.5, 0.3, 1.9, 2.2, 6.0),)),
    Case("special_ndtr", S.ndtr, lambda: (r(5, low=-3, high=3),)),
    Case("special_ndtri", S.ndtri, lambda: (v(1e-3, 0.2, 0.5, 0.9),)),
    Case("special_log_ndtr", S.log_ndtr, lambda: (v(-30.0, -5.0, -1.5, -0.5, 0.5, 3.0),)),
    Case("nan_to_num", lambda a: torch.nan_to_num(a, posinf=7.0),
         lambda: (v(-0.5, float("inf"), -float("inf"), float("nan"), 2.0),)),
    Case("deg2rad", lambda a: torch.rad2deg(torch.deg2rad(a) * a), lambda: (r(4),)),
]
