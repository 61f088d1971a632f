"""Gamma distribution with shape `concentration` α and `rate` β: density β^α x^(α-1) e^(-β x) / Γ(α)."""
from __future__ import annotations

from numbers import Number

import tensorplug as tp
from tensorplug.tensor import Size

from . import constraints
from .exp_family import ExponentialFamily
from .utils import broadcast_all

__all__ = ["Gamma"]


class Gamma(ExponentialFamily):
    """Gamma distribution; rsample differentiates through the sampler (implicit reparameterisation
    of `tensorplug._standard_gamma`), so gradients reach `concentration` as well as `rate`.

    >>> Gamma(tp.tensor([1.0]), tp.tensor([1.0])).sample()
    """

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, concentration, rate, validate_args=None):
        self.concentration, self.rate = broadcast_all(concentration, rate)
        scalar = isinstance(concentration, Number) and isinstance(rate, Number)
        super().__init__(Size() if scalar else self.concentration.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Gamma, batch_shape, _instance, ("concentration", "rate"))

    @property
    def mean(self):
        return self.concentration / self.rate

    @property
    def mode(self):
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self):
        return self.concentration / self.rate.pow(2)

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        value = tp._standard_gamma(self.concentration.expand(shape)) / self.rate.expand(shape)
        # keep samples off 0, where log_prob and the gradients of later ops would be infinite
        tiny = tp.finfo(value.dtype).tiny
        if not value.requires_grad:
            return value.clamp(min=tiny)
        return value + (value.detach().clamp(min=tiny) - value.detach())      # the clamp without its gradient

    def log_prob(self, value):
        value = tp.as_tensor(value, dtype=self.rate.dtype, device=self.rate.device)
        if self._validate_args:
            self._validate_sample(value)
        c = self.concentration
        return tp.xlogy(c, self.rate) + tp.xlogy(c - 1, value) - self.rate * value - tp.lgamma(c)

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return tp.special.gammainc(self.concentration, self.rate * value)

    def entropy(self):
        c = self.concentration
        return c - tp.log(self.rate) + tp.lgamma(c) + (1.0 - c) * tp.digamma(c)

    @property
    def _natural_params(self):
        return (self.concentration - 1, -self.rate)

    def _log_normalizer(self, x, y):
        return tp.lgamma(x + 1) + (x + 1) * tp.log(-y.reciprocal())
