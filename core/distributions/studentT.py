"""Student's t distribution with `df` degrees of freedom, location `loc` and scale `scale`."""
from __future__ import annotations

import math

import tensorplug as tp
from tensorplug.tensor import Size

from . import constraints
from .chi2 import Chi2
from .distribution import Distribution
from .utils import _standard_normal, broadcast_all

__all__ = ["StudentT"]


class StudentT(Distribution):
    """Student's t distribution; rsample is loc + scale * X / sqrt(Z / df) with X normal and Z
    chi-squared, so gradients reach df through the Gamma sampler.

    >>> StudentT(tp.tensor([2.0])).sample()
    """

    arg_constraints = {"df": constraints.positive, "loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, df, loc=0.0, scale=1.0, validate_args=None):
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale)
        self._chi2 = Chi2(self.df)
        super().__init__(self.df.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expand_params(StudentT, batch_shape, _instance, ("df", "loc", "scale"))
        new._chi2 = self._chi2.expand(batch_shape)
        return new

    @property
    def mean(self):
        return tp.where(self.df <= 1, tp.full_like(self.loc, float("nan")), self.loc)

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        df = self.df
        finite = self.scale.pow(2) * df / (df - 2)
        return tp.where(df > 2, finite, tp.where(df > 1, tp.full_like(df, float("inf")),
                                                 tp.full_like(df, float("nan"))))

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        x = _standard_normal(shape, dtype=self.df.dtype, device=self.df.device)
        z = self._chi2.rsample(sample_shape)
        return self.loc + self.scale * x * tp.rsqrt(z / self.df)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        y = (value - self.loc) / self.scale
        df = self.df
        log_z = (self.scale.log() + 0.5 * df.log() + 0.5 * math.log(math.pi)
                 + tp.lgamma(0.5 * df) - tp.lgamma(0.5 * (df + 1.0)))
        return -0.5 * (df + 1.0) * tp.log1p(y ** 2.0 / df) - log_z

    def entropy(self):
        df = self.df
        lbeta = tp.lgamma(0.5 * df) + math.lgamma(0.5) - tp.lgamma(0.5 * (df + 1))
        return (self.scale.log() + 0.5 * (df + 1) * (tp.digamma(0.5 * (df + 1)) - tp.digamma(0.5 * df))
                + 0.5 * df.log() + lbeta)
