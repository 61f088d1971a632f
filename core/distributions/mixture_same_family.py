"""MixtureSameFamily: a mixture whose components are the rightmost batch dimension of one
distribution, with mixture weights from a Categorical."""
from __future__ import annotations

import tensorplug as tp
from tensorplug.tensor import Size

from . import constraints
from .categorical import Categorical
from .distribution import Distribution

__all__ = ["MixtureSameFamily"]


class MixtureSameFamily(Distribution):
    """Mixture of the K components of `component_distribution` (batch shape (..., K)), weighted by
    `mixture_distribution` (a Categorical over K).

    >>> mix = Categorical(tp.ones(5)); comp = Normal(tp.randn(5), tp.rand(5))
    >>> MixtureSameFamily(mix, comp).log_prob(tp.zeros(()))
    """

    arg_constraints = {}
    has_rsample = False

    def __init__(self, mixture_distribution, component_distribution, validate_args=None):
        self._mixture_distribution = mixture_distribution
        self._component_distribution = component_distribution
        if not isinstance(mixture_distribution, Categorical):
            raise ValueError(" The Mixture distribution needs to be an  instance of torch.distributions.Categorical")
        if not isinstance(component_distribution, Distribution):
            raise ValueError("The Component distribution need to be an instance of torch.distributions.Distribution")
        mdbs = mixture_distribution.batch_shape
        cdbs = component_distribution.batch_shape[:-1]
        for s1, s2 in zip(reversed(mdbs), reversed(cdbs)):
            if s1 != 1 and s2 != 1 and s1 != s2:
                raise ValueError(f"`mixture_distribution.batch_shape` ({mdbs}) is not compatible with "
                                 f"`component_distribution.batch_shape`({cdbs})")
        km = mixture_distribution.logits.shape[-1]
        kc = component_distribution.batch_shape[-1]
        if km != kc:
            raise ValueError(f"`mixture_distribution component` ({km}) does not equal "
                             f"`component_distribution.batch_shape[-1]` ({kc})")
        self._num_component = km
        event_shape = component_distribution.event_shape
        self._event_ndims = len(event_shape)
        super().__init__(cdbs, event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        batch_shape = Size(batch_shape)
        new = self._get_checked_instance(MixtureSameFamily, _instance)
        new._component_distribution = self._component_distribution.expand(
            tuple(batch_shape) + (self._num_component,))
        new._mixture_distribution = self._mixture_distribution.expand(batch_shape)
        new._num_component = self._num_component
        new._event_ndims = self._event_ndims
        Distribution.__init__(new, batch_shape, new._component_distribution.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property
    def support(self):
        return self._component_distribution.support

    @property
    def mixture_distribution(self):
        return self._mixture_distribution

    @property
    def component_distribution(self):
        return self._component_distribution

    def _pad_weights(self, x):
        # mixture weights (..., K) -> (..., K, 1 per event dim): broadcastable with component values
        return x.reshape(tuple(x.shape) + (1,) * self._event_ndims)

    def _pad(self, x):
        # a value (..., *event) -> (..., 1, *event): broadcast over the K components
        return x.unsqueeze(-1 - self._event_ndims)

    @property
    def mean(self):
        probs = self._pad_weights(self.mixture_distribution.probs)
        return (probs * self.component_distribution.mean).sum(-1 - self._event_ndims)

    @property
    def variance(self):
        # law of total variance: E[Var(X | k)] + Var(E[X | k])
        probs = self._pad_weights(self.mixture_distribution.probs)
        dim = -1 - self._event_ndims
        mean_cond_var = (probs * self.component_distribution.variance).sum(dim)
        var_cond_mean = (probs * (self.component_distribution.mean - self._pad(self.mean)).pow(2.0)).sum(dim)
        return mean_cond_var + var_cond_mean

    def cdf(self, x):
        cdf_x = self.component_distribution.cdf(self._pad(x))
        return (cdf_x * self.mixture_distribution.probs).sum(-1)

    def log_prob(self, x):
        if self._validate_args:
            self._validate_sample(x)
        log_prob_x = self.component_distribution.log_prob(self._pad(x))
        log_mix_prob = tp.log_softmax(self.mixture_distribution.logits, dim=-1)
        return tp.logsumexp(log_prob_x + log_mix_prob, dim=-1)

    def sample(self, sample_shape=Size()):
        with tp.no_grad():
            sample_shape = Size(sample_shape)
            gather_dim = len(sample_shape) + len(self.batch_shape)
            es = tuple(self.event_shape)
            mix_sample = self.mixture_distribution.sample(sample_shape)   # (*sample, *batch)
            comp_samples = self.component_distribution.sample(sample_shape)  # (*sample, *batch, K, *event)
            index = mix_sample.reshape(tuple(mix_sample.shape) + (1,) * (len(es) + 1))
            index = index.expand(tuple(mix_sample.shape) + (1,) + es)
            return tp.gather(comp_samples, gather_dim, index).squeeze(gather_dim)

    def __repr__(self):
        return f"MixtureSameFamily(\n  {self.mixture_distribution},\n  {self.component_distribution})"
