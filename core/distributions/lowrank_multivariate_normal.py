"""LowRankMultivariateNormal: N(loc, W W^T + diag(D)) for a factor W (n x m) and a positive
diagonal D. Log-densities and entropy only factorise the small m x m capacitance matrix
C = I + W^T D^-1 W (Woodbury identity and the matrix determinant lemma), never the n x n covariance."""
from __future__ import annotations

import math

import tensorplug as _tp
from tensorplug.tensor import Size

from . import constraints
from tensorplug.linalg import cholesky, solve_triangular
from .distribution import Distribution
from .multivariate_normal import _batch_mahalanobis, _batch_mv
from .utils import _standard_normal, lazy_property

__all__ = ["LowRankMultivariateNormal"]


def _eye_like(n, like):
    return _tp.eye(n, dtype=like.dtype, device=like.device)


def _batch_capacitance_tril(W, D):
    """Lower Cholesky factor of C = I + W^T D^-1 W."""
    Wt_Dinv = W.mT / D.unsqueeze(-2)
    return cholesky(_tp.matmul(Wt_Dinv, W) + _eye_like(W.shape[-1], W))


def _batch_lowrank_logdet(W, D, capacitance_tril):
    """log det(W W^T + D) = log det C + log det D."""
    return 2 * capacitance_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1) + D.log().sum(-1)


def _batch_lowrank_mahalanobis(W, D, x, capacitance_tril):
    """x^T (W W^T + D)^-1 x = x^T D^-1 x - |L_C^-1 W^T D^-1 x|^2 (Woodbury)."""
    Wt_Dinv_x = _batch_mv(W.mT / D.unsqueeze(-2), x)
    return (x.pow(2) / D).sum(-1) - _batch_mahalanobis(capacitance_tril, Wt_Dinv_x)


class LowRankMultivariateNormal(Distribution):
    """Multivariate normal with covariance `cov_factor @ cov_factor.mT + diag(cov_diag)`.

    loc: batch_shape + (n,); cov_factor: batch_shape + (n, m); cov_diag: batch_shape + (n,).

    >>> import tensorplug
    >>> m = LowRankMultivariateNormal(tensorplug.zeros(2), tensorplug.tensor([[1.0], [0.0]]), tensorplug.ones(2))
    >>> m.sample().shape
    tensorplug.Size([2])
    """
    arg_constraints = {"loc": constraints.real_vector,
                       "cov_factor": constraints.independent(constraints.real, 2),
                       "cov_diag": constraints.independent(constraints.positive, 1)}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, cov_factor, cov_diag, validate_args=None):
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        event_shape = Size(loc.shape[-1:])
        if cov_factor.dim() < 2:
            raise ValueError("cov_factor must be at least two-dimensional, with optional leading batch dimensions")
        if Size(cov_factor.shape[-2:-1]) != event_shape:
            raise ValueError(f"cov_factor must be a batch of matrices with shape {event_shape[0]} x m")
        if Size(cov_diag.shape[-1:]) != event_shape:
            raise ValueError(f"cov_diag must be a batch of vectors with shape {event_shape}")
        try:
            loc_, self.cov_factor, cov_diag_ = _tp.broadcast_tensors(loc.unsqueeze(-1), cov_factor,
                                                                     cov_diag.unsqueeze(-1))
        except RuntimeError as e:
            raise ValueError(f"Incompatible batch shapes: loc {loc.shape}, cov_factor {cov_factor.shape}, "
                             f"cov_diag {cov_diag.shape}") from e
        self.loc = loc_[..., 0]
        self.cov_diag = cov_diag_[..., 0]
        batch_shape = self.loc.shape[:-1]
        self._unbroadcasted_cov_factor = cov_factor
        self._unbroadcasted_cov_diag = cov_diag
        super().__init__(batch_shape, event_shape, validate_args=validate_args)
        # after validation: a bad cov_diag gets the constraint's error, not a factorisation failure
        self._capacitance_tril = _batch_capacitance_tril(cov_factor, cov_diag)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LowRankMultivariateNormal, _instance)
        batch_shape = Size(batch_shape)
        loc_shape = tuple(batch_shape) + tuple(self._event_shape)
        new.loc = self.loc.expand(loc_shape)
        new.cov_diag = self.cov_diag.expand(loc_shape)
        new.cov_factor = self.cov_factor.expand(loc_shape + tuple(self.cov_factor.shape[-1:]))
        new._unbroadcasted_cov_factor = self._unbroadcasted_cov_factor
        new._unbroadcasted_cov_diag = self._unbroadcasted_cov_diag
        new._capacitance_tril = self._capacitance_tril
        Distribution.__init__(new, batch_shape, self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _full(self, t, matrix=True):
        tail = tuple(self._event_shape) * (2 if matrix else 1)
        return t.expand(tuple(self._batch_shape) + tail)

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @lazy_property
    def variance(self):
        return self._full(self._unbroadcasted_cov_factor.pow(2).sum(-1) + self._unbroadcasted_cov_diag, False)

    @lazy_property
    def scale_tril(self):
        # Sigma = D^1/2 (I + D^-1/2 W W^T D^-1/2) D^1/2: factor the bracket, which is well conditioned
        n = self._event_shape[0]
        sqrt_d = self._unbroadcasted_cov_diag.sqrt().unsqueeze(-1)
        Dinvsqrt_W = self._unbroadcasted_cov_factor / sqrt_d
        K = _tp.matmul(Dinvsqrt_W, Dinvsqrt_W.mT) + _eye_like(n, Dinvsqrt_W)
        return self._full(sqrt_d * cholesky(K))

    @lazy_property
    def covariance_matrix(self):
        W = self._unbroadcasted_cov_factor
        return self._full(_tp.matmul(W, W.mT) + _tp.diag_embed(self._unbroadcasted_cov_diag))

    @lazy_property
    def precision_matrix(self):
        # Woodbury: D^-1 - D^-1 W C^-1 W^T D^-1 = D^-1 - A^T A with A = L_C^-1 W^T D^-1
        Wt_Dinv = self._unbroadcasted_cov_factor.mT / self._unbroadcasted_cov_diag.unsqueeze(-2)
        A = solve_triangular(self._capacitance_tril, Wt_Dinv, upper=False)
        return self._full(_tp.diag_embed(self._unbroadcasted_cov_diag.reciprocal()) - A.mT @ A)

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        W_shape = tuple(shape[:-1]) + tuple(self.cov_factor.shape[-1:])
        eps_W = _standard_normal(W_shape, dtype=self.loc.dtype, device=self.loc.device)
        eps_D = _standard_normal(shape, dtype=self.loc.dtype, device=self.loc.device)
        return (self.loc + _batch_mv(self._unbroadcasted_cov_factor, eps_W)
                + self._unbroadcasted_cov_diag.sqrt() * eps_D)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        diff = value - self.loc
        W, D, C = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag, self._capacitance_tril
        M = _batch_lowrank_mahalanobis(W, D, diff, C)
        log_det = _batch_lowrank_logdet(W, D, C)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + log_det + M)

    def entropy(self):
        log_det = _batch_lowrank_logdet(self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag,
                                        self._capacitance_tril)
        H = 0.5 * (self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + log_det)
        if len(self._batch_shape) == 0:
            return H
        return H.expand(self._batch_shape)
