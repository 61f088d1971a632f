"""LKJCholesky: the LKJ distribution over Cholesky factors L of correlation matrices M = L L^T,
with density proportional to det(M)^(eta - 1) (eta = `concentration`; eta = 1 is uniform over
correlation matrices). Sampled by the onion method (Lewandowski, Kurowicka & Joe 2009, section 3)."""
from __future__ import annotations

import math

import tensorplug as _tp
from tensorplug.tensor import Size

from . import constraints
from .beta import Beta
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["LKJCholesky"]


class LKJCholesky(Distribution):
    """LKJ distribution of the lower Cholesky factor of a `dim` x `dim` correlation matrix.

    >>> import tensorplug
    >>> L = LKJCholesky(3, 0.5).sample()
    >>> (L @ L.T).diagonal()            # a correlation matrix: ones on the diagonal
    tensor([1.0000, 1.0000, 1.0000])
    """
    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(self, dim, concentration=1.0, validate_args=None):
        if dim < 2:
            raise ValueError(f"Expected dim to be an integer greater than or equal to 2. Found dim={dim}.")
        self.dim = dim
        (self.concentration,) = broadcast_all(concentration)
        batch_shape = self.concentration.size()
        # onion method: row i (i >= 1) of L has squared off-diagonal norm y_i ~ Beta(i/2, eta + (dim-1-i)/2);
        # row 0 gets a placeholder Beta(1/2, .) that the sampler multiplies by zero. (PyTorch 2.13 uses
        # i - 1/2 as the first concentration, which skews rows i >= 2; see the tests' marginal check.)
        c = self.concentration
        i = _tp.arange(dim, dtype=c.dtype, device=c.device)
        conc1 = 0.5 * i.clamp(min=1)
        conc0 = (c + 0.5 * (dim - 1)).unsqueeze(-1) - conc1
        self._beta = Beta(conc1, conc0)
        super().__init__(batch_shape, Size((dim, dim)), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LKJCholesky, _instance)
        batch_shape = Size(batch_shape)
        new.dim = self.dim
        new.concentration = self.concentration.expand(batch_shape)
        new._beta = self._beta.expand(tuple(batch_shape) + (self.dim,))
        Distribution.__init__(new, batch_shape, self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def sample(self, sample_shape=Size()):
        with _tp.no_grad():
            y = self._beta.sample(sample_shape).unsqueeze(-1)
            shape = self._extended_shape(sample_shape)
            u = _tp.randn(shape, dtype=y.dtype, device=y.device).tril(-1)
            # each row's direction uniform on its sphere; row 0 is empty (norm 0), so divide it by 1
            norm = u.norm(dim=-1, keepdim=True)
            first_row = (_tp.arange(self.dim, device=y.device) == 0).to(y.dtype).unsqueeze(-1)
            w = y.sqrt() * (u / (norm + first_row))
            tiny = _tp.finfo(w.dtype).tiny
            diag = (1 - w.pow(2).sum(-1)).clamp(min=tiny).sqrt()
            return w + _tp.diag_embed(diag)

    def log_prob(self, value):
        # log p(L) = sum_{i=2..dim} (dim - i + 2 (eta - 1)) log L_ii - log c(dim, eta), where
        # log c = (dim-1)/2 log pi + mvlgamma(eta + (dim-2)/2, dim-1) - (dim-1) lgamma(eta + (dim-1)/2)
        if self._validate_args:
            self._validate_sample(value)
        diag = value.diagonal(dim1=-2, dim2=-1)[..., 1:]
        order = _tp.arange(2, self.dim + 1, dtype=self.concentration.dtype, device=self.concentration.device)
        order = 2 * (self.concentration - 1).unsqueeze(-1) + self.dim - order
        unnormalized = (order * diag.log()).sum(-1)
        dm1 = self.dim - 1
        alpha = self.concentration + 0.5 * dm1
        log_norm = 0.5 * dm1 * math.log(math.pi) + _tp.mvlgamma(alpha - 0.5, dm1) - dm1 * _tp.lgamma(alpha)
        return unnormalized - log_norm
