"""Continuous Bernoulli distribution on [0, 1] (Loaiza-Ganem & Cunningham, 2019): density
C(λ) λ^x (1 - λ)^(1 - x), with the normaliser C(λ) expanded in a Taylor series near λ = 1/2,
where its closed form is 0 / 0."""
from __future__ import annotations

import math
from numbers import Number

import tensorplug as tp
import tensorplug.nn.functional as F
from tensorplug.tensor import Size

from . import constraints
from .exp_family import ExponentialFamily
from .utils import broadcast_all, clamp_probs, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["ContinuousBernoulli"]


class ContinuousBernoulli(ExponentialFamily):
    """Continuous Bernoulli distribution; `lims` is the interval around 1/2 where the Taylor
    expansions are used.

    >>> ContinuousBernoulli(tp.tensor([0.3])).sample()  # in [0, 1]
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    _mean_carrier_measure = 0
    has_rsample = True

    def __init__(self, probs=None, logits=None, lims=(0.499, 0.501), validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            (p,) = broadcast_all(probs)
            if validate_args is not None and not bool(self.arg_constraints["probs"].check(p).all()):
                raise ValueError("The parameter probs has invalid values")
            self.probs = clamp_probs(p)
            given, self._param = probs, self.probs
        else:
            (self.logits,) = broadcast_all(logits)
            given, self._param = logits, self.logits
        self._lims = lims
        super().__init__(Size() if isinstance(given, Number) else self._param.size(),
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expand_params(ContinuousBernoulli, batch_shape, _instance, ("probs", "logits"))
        new._lims = self._lims
        new._param = new.probs if "probs" in self.__dict__ else new.logits
        return new

    def _new(self, *args, **kwargs):
        return self._param.new(*args, **kwargs)

    def _outside_unstable_region(self):
        return (self.probs <= self._lims[0]) | (self.probs > self._lims[1])

    def _cut_probs(self):
        # probs inside the unstable region replaced by a safe value; the Taylor branch is used there
        return tp.where(self._outside_unstable_region(), self.probs,
                        self._lims[0] * tp.ones_like(self.probs))

    def _cont_bern_log_norm(self):
        """log C(λ): log(|2 artanh(1 - 2λ)| / |1 - 2λ|), Taylor-expanded near λ = 1/2."""
        cut = self._cut_probs()
        below = tp.where(cut <= 0.5, cut, tp.zeros_like(cut))
        above = tp.where(cut >= 0.5, cut, tp.ones_like(cut))
        log_norm = tp.log(tp.abs(tp.log1p(-cut) - tp.log(cut))) - tp.where(
            cut <= 0.5, tp.log1p(-2.0 * below), tp.log(2.0 * above - 1.0))
        x = (self.probs - 0.5).pow(2)
        taylor = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * x) * x
        return tp.where(self._outside_unstable_region(), log_norm, taylor)

    @property
    def mean(self):
        cut = self._cut_probs()
        mus = cut / (2.0 * cut - 1.0) + 1.0 / (tp.log1p(-cut) - tp.log(cut))
        x = self.probs - 0.5
        taylor = 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * x.pow(2)) * x
        return tp.where(self._outside_unstable_region(), mus, taylor)

    @property
    def stddev(self):
        return tp.sqrt(self.variance)

    @property
    def variance(self):
        cut = self._cut_probs()
        var = cut * (cut - 1.0) / (1.0 - 2.0 * cut).pow(2) + 1.0 / (tp.log1p(-cut) - tp.log(cut)).pow(2)
        x = (self.probs - 0.5).pow(2)
        taylor = 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * x) * x
        return tp.where(self._outside_unstable_region(), var, taylor)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return clamp_probs(logits_to_probs(self.logits, is_binary=True))

    @property
    def param_shape(self):
        return self._param.size()

    def sample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        u = tp.rand(shape, dtype=self.probs.dtype, device=self.probs.device)
        with tp.no_grad():
            return self.icdf(u)

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        return self.icdf(tp.rand(shape, dtype=self.probs.dtype, device=self.probs.device))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return -F.binary_cross_entropy_with_logits(logits, value, reduction="none") + self._cont_bern_log_norm()

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        cut = self._cut_probs()
        cdfs = (cut.pow(value) * (1.0 - cut).pow(1.0 - value) + cut - 1.0) / (2.0 * cut - 1.0)
        inside = tp.where(self._outside_unstable_region(), cdfs, value)
        return tp.where(value <= 0.0, tp.zeros_like(value), tp.where(value >= 1.0, tp.ones_like(value), inside))

    def icdf(self, value):
        cut = self._cut_probs()
        exact = ((tp.log1p(-cut + value * (2.0 * cut - 1.0)) - tp.log1p(-cut))
                 / (tp.log(cut) - tp.log1p(-cut)))
        return tp.where(self._outside_unstable_region(), exact, value)

    def entropy(self):
        log_p0 = tp.log1p(-self.probs)
        log_p1 = tp.log(self.probs)
        return self.mean * (log_p0 - log_p1) - self._cont_bern_log_norm() - log_p0

    @property
    def _natural_params(self):
        return (self.logits,)

    def _log_normalizer(self, x):
        """log ∫ exp(x t) dt over [0, 1] = log((e^x - 1) / x), Taylor-expanded near x = 0."""
        outside = (x <= self._lims[0] - 0.5) | (x > self._lims[1] - 0.5)
        cut = tp.where(outside, x, (self._lims[0] - 0.5) * tp.ones_like(x))
        log_norm = tp.log(tp.abs(tp.exp(cut) - 1.0)) - tp.log(tp.abs(cut))
        taylor = 0.5 * x + x.pow(2) / 24.0 - x.pow(4) / 2880.0
        return tp.where(outside, log_norm, taylor)
