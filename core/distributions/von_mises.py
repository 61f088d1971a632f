"""von Mises distribution: the circular analogue of the normal, density exp(κ cos(x - μ)) / (2π I0(κ))."""
from __future__ import annotations

import math

import tensorplug as tp
import tensorplug.special as special
from tensorplug.tensor import Size

from . import constraints
from .distribution import Distribution
from .utils import broadcast_all, lazy_property

__all__ = ["VonMises"]


def _log_i0(k):
    # log I0(k) through the exponentially scaled Bessel function: no overflow for large κ
    return tp.log(special.i0e(k)) + k


class VonMises(Distribution):
    """von Mises distribution on the circle; samples lie in [-π, π). Sampling is by the rejection
    method of Best & Fisher (1979), run in float64 as PyTorch does; it has no rsample.

    >>> VonMises(tp.tensor([1.0]), tp.tensor([1.0])).sample()
    """

    arg_constraints = {"loc": constraints.real, "concentration": constraints.positive}
    support = constraints.real
    has_rsample = False

    def __init__(self, loc, concentration, validate_args=None):
        self.loc, self.concentration = broadcast_all(loc, concentration)
        super().__init__(self.loc.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expand_params(VonMises, batch_shape, _instance, ("loc", "concentration"))
        return new

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        k = self.concentration
        return k * tp.cos(value - self.loc) - math.log(2 * math.pi) - _log_i0(k)

    @lazy_property
    def _loc(self):
        return self.loc.to(tp.double)

    @lazy_property
    def _concentration(self):
        return self.concentration.to(tp.double)

    @lazy_property
    def _proposal_r(self):
        k = self._concentration
        tau = 1 + (1 + 4 * k ** 2).sqrt()
        rho = (tau - (2 * tau).sqrt()) / (2 * k)
        r = (1 + rho ** 2) / (2 * rho)
        # for tiny κ the formula above cancels catastrophically; r ~ 1/κ + κ there
        return tp.where(k < 1e-5, 1 / k + k, r)

    @tp.no_grad()
    def sample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        k = self._concentration.expand(shape)
        r = self._proposal_r.expand(shape)
        x = tp.zeros(shape, dtype=tp.double, device=self.loc.device)
        done = tp.zeros(shape, dtype=tp.bool, device=self.loc.device)
        while not bool(done.all()):
            u = tp.rand((3,) + tuple(shape), dtype=tp.double, device=self.loc.device)
            u1, u2, u3 = u.unbind()
            z = tp.cos(math.pi * u1)
            f = (1 + r * z) / (r + z)
            c = k * (r - f)
            accept = ((c * (2 - c) - u2) > 0) | ((c / u2).log() + 1 - c >= 0)
            take = accept & ~done
            x = tp.where(take, (u3 - 0.5).sign() * f.acos(), x)
            done = done | accept
        # wrap μ + x into [-π, π)
        return ((x + math.pi + self._loc) % (2 * math.pi) - math.pi).to(self.loc.dtype)

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @lazy_property
    def variance(self):
        k = self.concentration
        return 1 - special.i1e(k) / special.i0e(k)  # the circular variance 1 - I1(κ)/I0(κ)
