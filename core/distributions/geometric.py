"""Geometric distribution: the number of failures before the first success in Bernoulli(p) trials."""
from __future__ import annotations

from numbers import Number

import tensorplug as tp
import tensorplug.nn.functional as F
from tensorplug.tensor import Size

from . import constraints
from .distribution import Distribution
from .utils import broadcast_all, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["Geometric"]


class Geometric(Distribution):
    """Geometric distribution on {0, 1, 2, ...}: P(k) = (1 - p)^k p.

    >>> Geometric(tp.tensor([0.3])).sample()
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, probs=None, logits=None, validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            (self.probs,) = broadcast_all(probs)
        else:
            (self.logits,) = broadcast_all(logits)
        given = probs if probs is not None else logits
        param = self.probs if probs is not None else self.logits
        super().__init__(Size() if isinstance(given, Number) else param.size(), validate_args=validate_args)
        if self._validate_args and probs is not None:
            # p = 0 lies in unit_interval but never succeeds: PyTorch rejects it separately
            value = self.probs
            valid = value > 0
            if not bool(valid.all()):
                raise ValueError(f"Expected parameter probs ({type(value).__name__} of shape "
                                 f"{tuple(value.shape)}) of distribution {self!r} to be positive but "
                                 f"found invalid values:\n{value.detach()[~valid]}")

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Geometric, batch_shape, _instance, ("probs", "logits"))

    @property
    def mean(self):
        return 1.0 / self.probs - 1.0

    @property
    def mode(self):
        return tp.zeros_like(self.probs)

    @property
    def variance(self):
        return (1.0 / self.probs - 1.0) / self.probs

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=True)

    def sample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        tiny = tp.finfo(self.probs.dtype).tiny
        with tp.no_grad():
            u = tp.empty(shape, dtype=self.probs.dtype, device=self.probs.device).uniform_(tiny, 1)
            return (u.log() / (-self.probs).log1p()).floor()

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value, probs = broadcast_all(value, self.probs)
        # p = 1 at k = 0: 0 * log(0) is 0 here, not nan
        probs = tp.where((probs == 1) & (value == 0), tp.zeros_like(probs), probs)
        return value * (-probs).log1p() + self.probs.log()

    def entropy(self):
        return F.binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none") / self.probs
