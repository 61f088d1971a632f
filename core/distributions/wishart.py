"""Wishart distribution W_p(df, Sigma) over p x p positive-definite matrices: the law of X X^T for
df columns X_k ~ N(0, Sigma) (real df > p - 1 allowed). Sampled by the Bartlett decomposition
X = L A A^T L^T with L the Cholesky factor of Sigma, A lower-triangular with A_ii^2 ~ Chi2(df - i)
and standard normal entries below the diagonal."""
from __future__ import annotations

import math
import warnings
from numbers import Number

import tensorplug as _tp
from tensorplug.tensor import Size

from . import constraints
from tensorplug.linalg import cholesky
from .chi2 import Chi2
from .exp_family import ExponentialFamily
from .multivariate_normal import _precision_to_scale_tril
from .utils import lazy_property

__all__ = ["Wishart"]

_LOG_2 = math.log(2)


def _mvdigamma(x, p):
    """Multivariate digamma: sum_{i<p} digamma(x - i/2), the derivative of mvlgamma(x, p)."""
    if not bool(x.gt((p - 1) / 2).all()):
        raise AssertionError("Wrong domain for multivariate digamma function.")
    half = _tp.arange(p, dtype=x.dtype, device=x.device) / 2
    return _tp.digamma(x.unsqueeze(-1) - half).sum(-1)


class Wishart(ExponentialFamily):
    """Wishart distribution with `df` degrees of freedom and exactly one of `covariance_matrix`,
    `precision_matrix`, `scale_tril` (the Cholesky factor of the scale matrix; the cheapest).

    >>> import tensorplug
    >>> m = Wishart(tensorplug.tensor(3.0), covariance_matrix=tensorplug.eye(2))
    >>> m.sample().shape                    # E[X] = df * I
    tensorplug.Size([2, 2])
    """
    support = constraints.positive_definite
    has_rsample = True
    _mean_carrier_measure = 0

    @property
    def arg_constraints(self):
        return {"covariance_matrix": constraints.positive_definite,
                "precision_matrix": constraints.positive_definite,
                "scale_tril": constraints.lower_cholesky,
                "df": constraints.greater_than(self.event_shape[-1] - 1)}

    def __init__(self, df, covariance_matrix=None, precision_matrix=None, scale_tril=None, validate_args=None):
        given = [(n, m) for n, m in (("covariance_matrix", covariance_matrix), ("precision_matrix", precision_matrix),
                                     ("scale_tril", scale_tril)) if m is not None]
        if len(given) != 1:
            raise AssertionError("Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.")
        name, param = given[0]
        if param.dim() < 2:
            raise ValueError("scale_tril must be at least two-dimensional, with optional leading batch dimensions")
        if isinstance(df, Number):
            batch_shape = Size(param.shape[:-2])
            self.df = _tp.tensor(df, dtype=param.dtype, device=param.device)
        else:
            batch_shape = Size(_tp.broadcast_shapes(tuple(param.shape[:-2]), tuple(df.shape)))
            self.df = df.expand(batch_shape)
        event_shape = Size(param.shape[-2:])
        p = event_shape[-1]
        if bool(self.df.le(p - 1).any()):
            raise ValueError(f"Value of df={df} expected to be greater than ndim - 1 = {p - 1}.")
        setattr(self, name, param.expand(tuple(batch_shape) + (-1, -1)))
        if bool(self.df.lt(p).any()):
            warnings.warn("Low df values detected. Singular samples are highly likely to occur for "
                          "ndim - 1 < df < ndim.", stacklevel=2)
        super().__init__(batch_shape, event_shape, validate_args=validate_args)
        self._batch_dims = [-(i + 1) for i in range(len(self._batch_shape))]
        if name == "scale_tril":
            self._unbroadcasted_scale_tril = param
        elif name == "covariance_matrix":
            self._unbroadcasted_scale_tril = cholesky(param)
        else:
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(param)
        self._dist_chi2 = self._chi2(batch_shape)

    def _chi2(self, batch_shape):
        # the Bartlett factor's squared diagonal: A_ii^2 ~ Chi2(df - i), i = 0..p-1
        L = self._unbroadcasted_scale_tril
        steps = _tp.arange(self._event_shape[-1], dtype=L.dtype, device=L.device)
        return Chi2(self.df.unsqueeze(-1) - steps.expand(tuple(batch_shape) + (-1,)))

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Wishart, _instance)
        batch_shape = Size(batch_shape)
        cov_shape = tuple(batch_shape) + tuple(self._event_shape)
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril.expand(cov_shape)
        new.df = self.df.expand(batch_shape)
        new._batch_dims = [-(i + 1) for i in range(len(batch_shape))]
        for name in ("covariance_matrix", "scale_tril", "precision_matrix"):
            if name in self.__dict__:
                setattr(new, name, self.__dict__[name].expand(cov_shape))
        ExponentialFamily.__init__(new, batch_shape, self._event_shape, validate_args=False)
        new._dist_chi2 = new._chi2(batch_shape)
        new._validate_args = self._validate_args
        return new

    def _full(self, t):
        return t.expand(tuple(self._batch_shape) + tuple(self._event_shape))

    @lazy_property
    def scale_tril(self):
        return self._full(self._unbroadcasted_scale_tril)

    @lazy_property
    def covariance_matrix(self):
        L = self._unbroadcasted_scale_tril
        return self._full(L @ L.mT)

    @lazy_property
    def precision_matrix(self):
        return self._full(_tp.cholesky_inverse(self._unbroadcasted_scale_tril))

    def _df_matrix(self, t=None):
        return (self.df if t is None else t).reshape(tuple(self._batch_shape) + (1, 1))

    @property
    def mean(self):
        return self._df_matrix() * self.covariance_matrix

    @property
    def mode(self):
        # (df - p - 1) Sigma, undefined (nan) where df <= p + 1
        factor = self.df - self._event_shape[-1] - 1
        factor = _tp.where(factor <= 0, math.nan, factor)
        return self._df_matrix(factor) * self.covariance_matrix

    @property
    def variance(self):
        # Var X_ij = df (Sigma_ij^2 + Sigma_ii Sigma_jj)
        V = self.covariance_matrix
        d = V.diagonal(dim1=-2, dim2=-1)
        return self._df_matrix() * (V.pow(2) + d.unsqueeze(-1) * d.unsqueeze(-2))

    def _bartlett_sampling(self, sample_shape=Size()):
        shape = tuple(sample_shape) + tuple(self._batch_shape) + tuple(self._event_shape)
        eps = _tp.finfo(self.df.dtype).eps
        diag = self._dist_chi2.rsample(sample_shape).sqrt().clamp(min=eps)
        below = _tp.randn(shape, dtype=diag.dtype, device=diag.device).tril(-1)
        chol = self._unbroadcasted_scale_tril @ (below + _tp.diag_embed(diag))
        return chol @ chol.mT

    def rsample(self, sample_shape=Size(), max_try_correction=None):
        """Bartlett sampling. For df close to p - 1 a sample can be numerically singular; such draws
        (a whole batch at a sample index) are redrawn up to `max_try_correction` times (default 10),
        with a "Singular sample detected." warning, and may still be singular after that (log_prob
        then gives -inf). Unlike PyTorch 2.13, which warns on every call, the warning and redraws
        happen only when a sample really is singular (pytorch/pytorch#122021)."""
        if max_try_correction is None:
            max_try_correction = 10
        sample_shape = Size(sample_shape)
        sample = self._bartlett_sampling(sample_shape)
        is_singular = self._singular(sample)
        if bool(is_singular.any()):
            warnings.warn("Singular sample detected.", stacklevel=2)
            mask_shape = tuple(sample_shape) + (1,) * (len(self._batch_shape) + 2)
            for _ in range(max_try_correction):
                sample = _tp.where(is_singular.reshape(mask_shape), self._bartlett_sampling(sample_shape), sample)
                is_singular = self._singular(sample)
                if not bool(is_singular.any()):
                    break
        return sample

    def _singular(self, sample):
        # one flag per sample index: any matrix of its batch not positive-definite
        bad = ~self.support.check(sample.detach())
        return bad.amax(self._batch_dims) if self._batch_dims else bad

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        nu, p = self.df, self._event_shape[-1]
        L = self._unbroadcasted_scale_tril
        half_log_det_sigma = L.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        trace_term = _tp.cholesky_solve(value, L).diagonal(dim1=-2, dim2=-1).sum(-1)
        return (-nu * (p * _LOG_2 / 2 + half_log_det_sigma) - _tp.mvlgamma(nu / 2, p)
                + (nu - p - 1) / 2 * _tp.linalg.slogdet(value).logabsdet - trace_term / 2)

    def entropy(self):
        nu, p = self.df, self._event_shape[-1]
        half_log_det_sigma = self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        return ((p + 1) * (p * _LOG_2 / 2 + half_log_det_sigma) + _tp.mvlgamma(nu / 2, p)
                - (nu - p - 1) / 2 * _mvdigamma(nu / 2, p) + nu * p / 2)

    @property
    def _natural_params(self):
        return -self.precision_matrix / 2, (self.df - self._event_shape[-1] - 1) / 2

    def _log_normalizer(self, x, y):
        p = self._event_shape[-1]
        return ((y + (p + 1) / 2) * (-_tp.linalg.slogdet(-2 * x).logabsdet + _LOG_2 * p)
                + _tp.mvlgamma(y + (p + 1) / 2, p))
