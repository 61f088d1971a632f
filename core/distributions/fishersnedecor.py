"""Fisher-Snedecor (F) distribution with `df1` and `df2` degrees of freedom."""
from __future__ import annotations

from numbers import Number

import tensorplug as tp
from tensorplug.tensor import Size

from . import constraints
from .distribution import Distribution
from .gamma import Gamma
from .utils import broadcast_all

__all__ = ["FisherSnedecor"]


class FisherSnedecor(Distribution):
    """F distribution: the ratio (X1 / df1) / (X2 / df2) of chi-squared variables, sampled as a ratio
    of Gammas (so rsample differentiates to both degrees of freedom).

    >>> FisherSnedecor(tp.tensor([1.0]), tp.tensor([2.0])).sample()
    """

    arg_constraints = {"df1": constraints.positive, "df2": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, df1, df2, validate_args=None):
        self.df1, self.df2 = broadcast_all(df1, df2)
        self._gamma1 = Gamma(self.df1 * 0.5, self.df1)
        self._gamma2 = Gamma(self.df2 * 0.5, self.df2)
        scalar = isinstance(df1, Number) and isinstance(df2, Number)
        super().__init__(Size() if scalar else self.df1.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expand_params(FisherSnedecor, batch_shape, _instance, ("df1", "df2"))
        new._gamma1 = self._gamma1.expand(batch_shape)
        new._gamma2 = self._gamma2.expand(batch_shape)
        return new

    @property
    def mean(self):
        df2 = self.df2
        return tp.where(df2 > 2, df2 / (df2 - 2), tp.full_like(df2, float("nan")))

    @property
    def mode(self):
        mode = (self.df1 - 2) / self.df1 * self.df2 / (self.df2 + 2)
        return tp.where(self.df1 > 2, mode, tp.full_like(mode, float("nan")))

    @property
    def variance(self):
        df1, df2 = self.df1, self.df2
        var = 2 * df2.pow(2) * (df1 + df2 - 2) / (df1 * (df2 - 2).pow(2) * (df2 - 4))
        return tp.where(df2 > 4, var, tp.full_like(var, float("nan")))

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        # Gammas with rate df give X / df directly; the clamps keep the ratio finite and positive
        x1 = self._gamma1.rsample(sample_shape).view(shape)
        x2 = self._gamma2.rsample(sample_shape).view(shape)
        tiny = tp.finfo(x2.dtype).tiny
        return (x1 / x2.clamp(min=tiny)).clamp(min=tiny)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        ct1 = self.df1 * 0.5
        ct2 = self.df2 * 0.5
        ct3 = self.df1 / self.df2
        t1 = (ct1 + ct2).lgamma() - ct1.lgamma() - ct2.lgamma()
        t2 = ct1 * ct3.log() + (ct1 - 1) * tp.log(value)
        t3 = (ct1 + ct2) * tp.log1p(ct3 * value)
        return t1 + t2 - t3
