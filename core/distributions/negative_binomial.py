"""Negative binomial distribution: the number of successes before `total_count` failures, where
each trial succeeds with probability `probs`."""
from __future__ import annotations

import tensorplug as tp
import tensorplug.nn.functional as F
from tensorplug.tensor import Size

from . import constraints
from .distribution import Distribution
from .gamma import Gamma
from .utils import broadcast_all, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["NegativeBinomial"]


class NegativeBinomial(Distribution):
    """Negative binomial distribution (`total_count` may be any non-negative real).

    >>> NegativeBinomial(tp.tensor([5.0]), tp.tensor([0.3])).sample()
    """

    arg_constraints = {"total_count": constraints.greater_than_eq(0),
                       "probs": constraints.half_open_interval(0.0, 1.0), "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, total_count, probs=None, logits=None, validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            self.total_count, self.probs = broadcast_all(total_count, probs)
            self.total_count = self.total_count.type_as(self.probs)
        else:
            self.total_count, self.logits = broadcast_all(total_count, logits)
            self.total_count = self.total_count.type_as(self.logits)
        self._param = self.probs if probs is not None else self.logits
        super().__init__(self._param.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expand_params(NegativeBinomial, batch_shape, _instance, ("total_count", "probs", "logits"))
        new._param = new.probs if "probs" in self.__dict__ else new.logits
        return new

    def _new(self, *args, **kwargs):
        return self._param.new(*args, **kwargs)

    @property
    def mean(self):
        return self.total_count * tp.exp(self.logits)

    @property
    def mode(self):
        return ((self.total_count - 1) * self.logits.exp()).floor().clamp(min=0.0)

    @property
    def variance(self):
        return self.mean / tp.sigmoid(-self.logits)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def param_shape(self):
        return self._param.size()

    @lazy_property
    def _gamma(self):
        # the negative binomial is a Gamma-Poisson mixture: rate ~ Gamma(r, (1 - p) / p)
        return Gamma(concentration=self.total_count, rate=tp.exp(-self.logits), validate_args=False)

    def sample(self, sample_shape=Size()):
        with tp.no_grad():
            return tp.poisson(self._gamma.sample(sample_shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        r = self.total_count
        unnormalised = r * F.logsigmoid(-self.logits) + value * F.logsigmoid(self.logits)
        log_norm = -tp.lgamma(r + value) + tp.lgamma(1.0 + value) + tp.lgamma(r)
        # r = 0 and k = 0: the lgamma terms are inf - inf, but P(0) = 1
        log_norm = log_norm.masked_fill(r + value == 0.0, 0.0)
        return unnormalised - log_norm
