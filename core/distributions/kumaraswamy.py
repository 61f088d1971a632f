"""Kumaraswamy distribution on (0, 1): a Beta look-alike with a closed-form cdf."""
from __future__ import annotations

import math

import tensorplug as _tp

from . import constraints
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, PowerTransform
from .uniform import Uniform
from .utils import broadcast_all, euler_constant

__all__ = ["Kumaraswamy"]


def _moment(a, b, n):
    # E[X^n] = b B(1 + n/a, b)
    arg1 = 1 + n / a
    return b * _tp.exp(_tp.lgamma(arg1) + _tp.lgamma(b) - _tp.lgamma(arg1 + b))


class Kumaraswamy(TransformedDistribution):
    """Kumaraswamy(concentration1 = a, concentration0 = b): density a b x^(a-1) (1 - x^a)^(b-1);
    X = (1 - U^(1/b))^(1/a) with U ~ Uniform(0, 1)."""
    arg_constraints = {"concentration1": constraints.positive, "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args=None):
        self.concentration1, self.concentration0 = broadcast_all(concentration1, concentration0)
        base_dist = Uniform(_tp.full_like(self.concentration0, 0), _tp.full_like(self.concentration0, 1),
                            validate_args=validate_args)
        transforms = [PowerTransform(exponent=self.concentration0.reciprocal()),
                      AffineTransform(loc=1.0, scale=-1.0),
                      PowerTransform(exponent=self.concentration1.reciprocal())]
        super().__init__(base_dist, transforms, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Kumaraswamy, _instance)
        c1 = self.concentration1.expand(batch_shape)
        c0 = self.concentration0.expand(batch_shape)
        Kumaraswamy.__init__(new, c1, c0, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        return _moment(self.concentration1, self.concentration0, 1)

    @property
    def mode(self):
        # ((a - 1) / (a b - 1))^(1/a), defined for a >= 1 and b >= 1
        a, b = self.concentration1, self.concentration0
        log_mode = a.reciprocal() * ((a - 1).log() - (a * b - 1).log())
        return _tp.where((a < 1) | (b < 1), math.nan, log_mode.exp())

    @property
    def variance(self):
        return _moment(self.concentration1, self.concentration0, 2) - self.mean.pow(2)

    def entropy(self):
        a, b = self.concentration1, self.concentration0
        harmonic_b = _tp.digamma(b + 1) + euler_constant
        return (1 - b.reciprocal()) + (1 - a.reciprocal()) * harmonic_b - a.log() - b.log()
