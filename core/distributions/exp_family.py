"""ExponentialFamily: distributions p(x; θ) = exp(<t(x), θ> - F(θ) + k(x)) (torch.distributions.exp_family).

A family gives its natural parameters θ, the log normaliser F and the mean carrier measure E[k(x)];
the entropy then follows from the Bregman divergence of F, H = F(θ) - <θ, ∇F(θ)> - E[k(x)], with ∇F
taken by autograd (create_graph, so the entropy stays differentiable in the parameters)."""
from __future__ import annotations

import tensorplug as tp

from .distribution import Distribution

__all__ = ["ExponentialFamily"]


class ExponentialFamily(Distribution):
    """Base class of exponential families; subclasses define `_natural_params`,
    `_log_normalizer(*natural_params)` and `_mean_carrier_measure`."""

    @property
    def _natural_params(self):
        raise NotImplementedError

    def _log_normalizer(self, *natural_params):
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self):
        raise NotImplementedError

    def entropy(self):
        """Entropy by the Bregman divergence of the log normaliser."""
        result = -self._mean_carrier_measure
        with tp.enable_grad():
            # differentiate F at the parameters themselves where they carry a graph (so the entropy
            # keeps it), at detached copies otherwise
            params = [p if p.requires_grad else p.detach().requires_grad_() for p in self._natural_params]
            lognorm = self._log_normalizer(*params)
            grads = tp.autograd.grad(lognorm.sum(), params, create_graph=True)
        result = result + lognorm
        for p, g in zip(params, grads):
            result = result - (p * g).reshape(tuple(self._batch_shape) + (-1,)).sum(-1)
        return result
