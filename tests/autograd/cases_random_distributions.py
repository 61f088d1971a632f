"""Gradient cases of the random-distribution family (core/ops/random_distributions.py), appended to the
table of test_op_gradients.py. A gamma sample's gradient is the derivative of the inverse CDF at a fixed
u, so its case draws through the inverse CDF itself (SciPy's gammaincinv at fixed u stands in for the
backend's kernel): finite differences of that are what the backward rule must match, to second order."""
import contextlib

import numpy as np
from opcases import Case, pos
from scipy import special

import tensorplug as torch


@contextlib.contextmanager
def _inverse_cdf_gamma(table):
    """The kernel table's standard_gamma replaced by x = F^-1(u; alpha) with u fixed by alpha's shape."""
    orig = table["standard_gamma"]

    def icdf(state, alpha):                      # through the table's own transfers: any backend
        a = np.asarray(table["to_numpy"](alpha))
        u = np.random.default_rng(0).random(a.shape)
        return table["from_numpy"](special.gammaincinv(a, u).astype(a.dtype))
    table["standard_gamma"] = icdf
    try:
        yield
    finally:
        table["standard_gamma"] = orig


def _gamma_icdf(a):
    with _inverse_cdf_gamma(a._k):
        return torch._standard_gamma(a)


def _poisson(a):
    # rate 0 draws 0 on every backend; the gradient through the rate is zero (as PyTorch's)
    return torch.poisson(a * 0) + a


def _alphas():
    return (torch.tensor([0.3, 1.0, 2.5, 7.0, 40.0], dtype=torch.float64, requires_grad=True),)


CASES = [
    Case("standard_gamma_icdf", _gamma_icdf, _alphas, atol=1e-5, rtol=1e-4),
    Case("poisson", _poisson, lambda: (pos(5),)),
]
