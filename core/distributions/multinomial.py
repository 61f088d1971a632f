"""Multinomial distribution: counts of `total_count` draws from a Categorical."""
from __future__ import annotations

import tensorplug as tp
from tensorplug.tensor import Size

from . import constraints
from .binomial import Binomial
from .categorical import Categorical
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["Multinomial"]


class Multinomial(Distribution):
    """Multinomial distribution; `total_count` is one integer shared by the batch (log_prob accepts
    any counts, as PyTorch's does).

    >>> Multinomial(100, tp.tensor([1.0, 1.0, 1.0, 1.0])).sample()  # counts summing to 100
    """

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.independent(constraints.real, 1)}
    total_count: int

    @property
    def mean(self):
        return self.probs * self.total_count

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        if not isinstance(total_count, int):
            raise NotImplementedError("inhomogeneous total_count is not supported")
        self.total_count = total_count
        self._categorical = Categorical(probs=probs, logits=logits)
        self._binomial = Binomial(total_count=total_count, probs=self.probs)
        super().__init__(self._categorical.batch_shape, self._categorical.param_shape[-1:],
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Multinomial, _instance)
        batch_shape = Size(batch_shape)
        new.total_count = self.total_count
        new._categorical = self._categorical.expand(batch_shape)
        new._binomial = Binomial(total_count=self.total_count, probs=new._categorical.probs)
        Distribution.__init__(new, batch_shape, self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _new(self, *args, **kwargs):
        return self._categorical._new(*args, **kwargs)

    @constraints.dependent_property(is_discrete=True, event_dim=1)
    def support(self):
        return constraints.multinomial(self.total_count)

    @property
    def logits(self):
        return self._categorical.logits

    @property
    def probs(self):
        return self._categorical.probs

    @property
    def param_shape(self):
        return self._categorical.param_shape

    def sample(self, sample_shape=Size()):
        sample_shape = Size(sample_shape)
        draws = self._categorical.sample(Size((self.total_count,) + tuple(sample_shape)))
        # (total_count, *sample, *batch) -> (*sample, *batch, total_count), then count per category
        draws = draws.permute(*range(1, draws.dim()), 0)
        counts = tp.zeros(self._extended_shape(sample_shape), dtype=draws.dtype, device=draws.device)
        counts.scatter_add_(-1, draws, tp.ones_like(draws))
        return counts.type_as(self.probs)

    def entropy(self):
        n = tp.tensor(self.total_count, dtype=self.probs.dtype, device=self.probs.device)
        term1 = n * self._categorical.entropy() - tp.lgamma(n + 1)
        # E[sum_i log(x_i!)], each x_i ~ Binomial(n, p_i)
        support = self._binomial.enumerate_support(expand=False)[1:]
        binomial_probs = tp.exp(self._binomial.log_prob(support))
        term2 = (binomial_probs * tp.lgamma(support + 1)).sum([0, -1])
        return term1 + term2

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        log_factorial_n = tp.lgamma(value.sum(-1) + 1)
        log_factorial_xs = tp.lgamma(value + 1).sum(-1)
        # a category with probability 0 drawn 0 times contributes 0, not 0 * -inf
        logits = tp.where((value == 0) & (logits == float("-inf")), tp.zeros_like(logits), logits)
        return log_factorial_n - log_factorial_xs + (logits * value).sum(-1)
