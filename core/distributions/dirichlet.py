"""Dirichlet distribution over the probability simplex, with concentration vector α."""
from __future__ import annotations

import tensorplug as tp
import tensorplug.nn.functional as F
from tensorplug.autograd import Function
from tensorplug.tensor import Size

from . import constraints
from .exp_family import ExponentialFamily

__all__ = ["Dirichlet"]


class _Dirichlet(Function):
    """A Dirichlet draw with the implicit reparameterisation gradient (the sampler itself has none):
    d x_i / d alpha_j = D_j (delta_ij - x_i), D = _dirichlet_grad(x, alpha, alpha.sum(-1)). The backward
    is in Tensor ops on the saved sample, so higher-order gradients flow too."""

    @staticmethod
    def forward(ctx, concentration):
        x = tp._sample_dirichlet(concentration)
        ctx.save_for_backward(x, concentration)
        return x

    @staticmethod
    def backward(ctx, grad_output):
        x, concentration = ctx.saved_tensors
        total = concentration.sum(-1, True).expand_as(concentration)
        grad = tp._dirichlet_grad(x, concentration, total)
        return grad * (grad_output - (x * grad_output).sum(-1, True))


class Dirichlet(ExponentialFamily):
    """Dirichlet distribution; the last dimension of `concentration` is the event dimension.
    rsample is differentiable (implicit reparameterisation, as PyTorch's).

    >>> Dirichlet(tp.tensor([0.5, 0.5])).sample()  # a point on the 1-simplex
    """

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration, validate_args=None):
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        super().__init__(concentration.shape[:-1], concentration.shape[-1:], validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Dirichlet, batch_shape, _instance, ("concentration",))

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        return _Dirichlet.apply(self.concentration.expand(shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        c = self.concentration
        return tp.xlogy(c - 1.0, value).sum(-1) + tp.lgamma(c.sum(-1)) - tp.lgamma(c).sum(-1)

    @property
    def mean(self):
        return self.concentration / self.concentration.sum(-1, keepdim=True)

    @property
    def mode(self):
        cm1 = (self.concentration - 1).clamp(min=0.0)
        mode = cm1 / cm1.sum(-1, keepdim=True)
        # with every α < 1 the density is unbounded at every vertex: PyTorch reports the first one
        all_small = (self.concentration < 1).all(-1, keepdim=True)
        vertex = F.one_hot(cm1.argmax(-1), cm1.shape[-1]).to(mode)
        return tp.where(all_small, vertex, mode)

    @property
    def variance(self):
        c0 = self.concentration.sum(-1, keepdim=True)
        return self.concentration * (c0 - self.concentration) / (c0.pow(2) * (c0 + 1))

    def entropy(self):
        c = self.concentration
        k = c.size(-1)
        a0 = c.sum(-1)
        return (tp.lgamma(c).sum(-1) - tp.lgamma(a0) - (k - a0) * tp.digamma(a0)
                - ((c - 1.0) * tp.digamma(c)).sum(-1))

    @property
    def _natural_params(self):
        return (self.concentration,)

    def _log_normalizer(self, x):
        return x.lgamma().sum(-1) - tp.lgamma(x.sum(-1))
