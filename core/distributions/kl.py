"""kl_divergence(p, q) and register_kl (torch.distributions.kl).

Closed forms are registered per (type_p, type_q) pair; lookup picks the most specific registered
pair by the classes' MROs (a RuntimeWarning names an ambiguity, as PyTorch does) and memoises it.

    >>> import tensorplug
    >>> from tensorplug.distributions import Normal
    >>> kl_divergence(Normal(0., 1.), Normal(0., 1.))
    tensor(0.)
"""
from __future__ import annotations

import math
import warnings
from functools import total_ordering

import tensorplug as _tp

from tensorplug.linalg import solve_triangular
from .bernoulli import Bernoulli
from .beta import Beta
from .binomial import Binomial
from .categorical import Categorical
from .cauchy import Cauchy
from .continuous_bernoulli import ContinuousBernoulli
from .dirichlet import Dirichlet
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .exponential import Exponential
from .gamma import Gamma
from .geometric import Geometric
from .gumbel import Gumbel
from .half_normal import HalfNormal
from .independent import Independent
from .laplace import Laplace
from .lowrank_multivariate_normal import (LowRankMultivariateNormal, _batch_lowrank_logdet,
                                          _batch_lowrank_mahalanobis)
from .multivariate_normal import MultivariateNormal, _batch_mahalanobis
from .normal import Normal
from .one_hot_categorical import OneHotCategorical
from .pareto import Pareto
from .poisson import Poisson
from .transformed_distribution import TransformedDistribution
from .uniform import Uniform
from .utils import _sum_rightmost, euler_constant

__all__ = ["register_kl", "kl_divergence"]

_KL_REGISTRY = {}   # (type_p, type_q) -> fn(p, q)
_KL_MEMOIZE = {}    # (type(p), type(q)) -> the fn dispatch chose


def register_kl(type_p, type_q):
    """Decorator registering `fn(p, q)` as KL(p || q) for p of type_p and q of type_q (subclasses
    included). Register the more specific pair when two registrations are ambiguous."""
    if not isinstance(type_p, type) or not issubclass(type_p, Distribution):
        raise TypeError(f"Expected type_p to be a Distribution subclass but got {type_p}")
    if not isinstance(type_q, type) or not issubclass(type_q, Distribution):
        raise TypeError(f"Expected type_q to be a Distribution subclass but got {type_q}")

    def decorator(fun):
        _KL_REGISTRY[type_p, type_q] = fun
        _KL_MEMOIZE.clear()
        return fun

    return decorator


@total_ordering
class _Match:
    """A registered (type_p, type_q) pair, ordered lexicographically by specificity."""
    __slots__ = ["types"]

    def __init__(self, *types):
        self.types = types

    def __eq__(self, other):
        return self.types == other.types

    def __le__(self, other):
        for x, y in zip(self.types, other.types):
            if not issubclass(x, y):
                return False
            if x is not y:
                break
        return True


def _dispatch_kl(type_p, type_q):
    matches = [(sp, sq) for sp, sq in _KL_REGISTRY if issubclass(type_p, sp) and issubclass(type_q, sq)]
    if not matches:
        return NotImplemented
    left_p, left_q = min(_Match(*m) for m in matches).types
    right_q, right_p = min(_Match(*reversed(m)) for m in matches).types
    left_fun = _KL_REGISTRY[left_p, left_q]
    right_fun = _KL_REGISTRY[right_p, right_q]
    if left_fun is not right_fun:
        warnings.warn(f"Ambiguous kl_divergence({type_p.__name__}, {type_q.__name__}). "
                      f"Please register_kl({left_p.__name__}, {right_q.__name__})", RuntimeWarning)
    return left_fun


def kl_divergence(p, q):
    """KL(p || q) = E_p[log p(x) - log q(x)], batched over the distributions' batch shape."""
    try:
        fun = _KL_MEMOIZE[type(p), type(q)]
    except KeyError:
        fun = _dispatch_kl(type(p), type(q))
        _KL_MEMOIZE[type(p), type(q)] = fun
    if fun is NotImplemented:
        raise NotImplementedError(f"No KL(p || q) is implemented for p type {p.__class__.__name__} and "
                                  f"q type {q.__class__.__name__}")
    return fun(p, q)


def _infinite_like(t):
    return _tp.full_like(t, math.inf)


def _x_log_x(t):
    return t * t.log()


# --- same family ---------------------------------------------------------------------------------

@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p, q):
    sp = _tp.nn.functional.softplus
    t1 = p.probs * (sp(-q.logits) - sp(-p.logits))
    t1 = _tp.where(q.probs == 0, math.inf, t1)
    t1 = _tp.where(p.probs == 0, 0.0, t1)
    t2 = (1 - p.probs) * (sp(q.logits) - sp(p.logits))
    t2 = _tp.where(q.probs == 1, math.inf, t2)
    t2 = _tp.where(p.probs == 1, 0.0, t2)
    return t1 + t2


@register_kl(Beta, Beta)
def _kl_beta_beta(p, q):
    a1, b1, a2, b2 = p.concentration1, p.concentration0, q.concentration1, q.concentration0
    s1, s2 = a1 + b1, a2 + b2
    t1 = a2.lgamma() + b2.lgamma() + s1.lgamma()
    t2 = a1.lgamma() + b1.lgamma() + s2.lgamma()
    return t1 - t2 + (a1 - a2) * a1.digamma() + (b1 - b2) * b1.digamma() + (s2 - s1) * s1.digamma()


@register_kl(Binomial, Binomial)
def _kl_binomial_binomial(p, q):
    # only defined for equal total counts (q's support must cover p's)
    if bool((p.total_count < q.total_count).any()):
        raise NotImplementedError("KL between Binomials where q.total_count > p.total_count is not implemented")
    kl = p.total_count * (p.probs * (p.logits - q.logits) + (-p.probs).log1p() - (-q.probs).log1p())
    return _tp.where(p.total_count > q.total_count, math.inf, kl)


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p, q):
    t = p.probs * (p.logits - q.logits)
    t = _tp.where((q.probs == 0).expand_as(t), math.inf, t)
    t = _tp.where((p.probs == 0).expand_as(t), 0.0, t)
    return t.sum(-1)


@register_kl(OneHotCategorical, OneHotCategorical)
def _kl_onehotcategorical_onehotcategorical(p, q):
    return _kl_categorical_categorical(p._categorical, q._categorical)


@register_kl(Cauchy, Cauchy)
def _kl_cauchy_cauchy(p, q):
    t1 = ((p.scale + q.scale).pow(2) + (p.loc - q.loc).pow(2)).log()
    return t1 - (4 * p.scale * q.scale).log()


@register_kl(Dirichlet, Dirichlet)
def _kl_dirichlet_dirichlet(p, q):
    sum_p = p.concentration.sum(-1)
    sum_q = q.concentration.sum(-1)
    t1 = sum_p.lgamma() - sum_q.lgamma()
    t2 = (p.concentration.lgamma() - q.concentration.lgamma()).sum(-1)
    t3 = p.concentration - q.concentration
    t4 = p.concentration.digamma() - sum_p.digamma().unsqueeze(-1)
    return t1 - t2 + (t3 * t4).sum(-1)


@register_kl(Exponential, Exponential)
def _kl_exponential_exponential(p, q):
    rate_ratio = q.rate / p.rate
    return -rate_ratio.log() + rate_ratio - 1


@register_kl(ExponentialFamily, ExponentialFamily)
def _kl_expfamily_expfamily(p, q):
    # the Bregman divergence of the log normaliser between the natural parameters
    if type(p) is not type(q):
        raise NotImplementedError("The cross KL-divergence between different exponential families cannot "
                                  "be computed using Bregman divergences")
    p_nparams = [n.detach().requires_grad_() for n in p._natural_params]
    q_nparams = q._natural_params
    lg_normal = p._log_normalizer(*p_nparams)
    gradients = _tp.autograd.grad(lg_normal.sum(), p_nparams, create_graph=True)
    result = q._log_normalizer(*q_nparams) - lg_normal
    # each natural parameter's inner product sums all its non-batch dims (PyTorch 2.13 sums
    # len(event_shape) dims, which mixes batch entries for a scalar parameter of a matrix family)
    batch = tuple(result.shape)
    for pnp, qnp, g in zip(p_nparams, q_nparams, gradients):
        result = result - ((qnp - pnp) * g).reshape(batch + (-1,)).sum(-1)
    return result


@register_kl(Gamma, Gamma)
def _kl_gamma_gamma(p, q):
    t1 = q.concentration * (p.rate / q.rate).log()
    t2 = q.concentration.lgamma() - p.concentration.lgamma()
    t3 = (p.concentration - q.concentration) * p.concentration.digamma()
    t4 = (q.rate - p.rate) * (p.concentration / p.rate)
    return t1 + t2 + t3 + t4


@register_kl(Gumbel, Gumbel)
def _kl_gumbel_gumbel(p, q):
    ct1 = p.scale / q.scale
    ct2 = q.loc / q.scale
    ct3 = p.loc / q.scale
    t1 = -ct1.log() - ct2 + ct3
    t2 = ct1 * euler_constant
    t3 = (ct2 + (1 + ct1).lgamma() - ct3).exp()
    return t1 + t2 + t3 - (1 + euler_constant)


@register_kl(Geometric, Geometric)
def _kl_geometric_geometric(p, q):
    return -p.entropy() - (-q.probs).log1p() / p.probs - q.logits


@register_kl(HalfNormal, HalfNormal)
def _kl_halfnormal_halfnormal(p, q):
    return _kl_normal_normal(p.base_dist, q.base_dist)


@register_kl(Laplace, Laplace)
def _kl_laplace_laplace(p, q):
    scale_ratio = p.scale / q.scale
    loc_abs_diff = (p.loc - q.loc).abs()
    return -scale_ratio.log() + loc_abs_diff / q.scale + scale_ratio * (-loc_abs_diff / p.scale).exp() - 1


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_multivariatenormal_multivariatenormal(p, q):
    if p.event_shape != q.event_shape:
        raise ValueError("KL-divergence between two Multivariate Normals with different event shapes "
                         "cannot be computed")
    Lp, Lq = p._unbroadcasted_scale_tril, q._unbroadcasted_scale_tril
    half_term1 = Lq.diagonal(dim1=-2, dim2=-1).log().sum(-1) - Lp.diagonal(dim1=-2, dim2=-1).log().sum(-1)
    batch = _tp.broadcast_shapes(tuple(Lq.shape[:-2]), tuple(Lp.shape[:-2]))
    n = p.event_shape[0]
    Lq = Lq.expand(tuple(batch) + (n, n))
    Lp = Lp.expand(tuple(batch) + (n, n))
    term2 = solve_triangular(Lq, Lp, upper=False).pow(2).sum((-2, -1))   # tr(Sq^-1 Sp)
    term3 = _batch_mahalanobis(Lq, q.loc - p.loc)
    return half_term1 + 0.5 * (term2 + term3 - n)


@register_kl(Normal, Normal)
def _kl_normal_normal(p, q):
    var_ratio = (p.scale / q.scale).pow(2)
    t1 = ((p.loc - q.loc) / q.scale).pow(2)
    return 0.5 * (var_ratio + t1 - 1 - var_ratio.log())


@register_kl(Pareto, Pareto)
def _kl_pareto_pareto(p, q):
    # q's support [q.scale, inf) must cover p's
    scale_ratio = p.scale / q.scale
    alpha_ratio = q.alpha / p.alpha
    result = q.alpha * scale_ratio.log() - alpha_ratio.log() + alpha_ratio - 1
    return _tp.where(p.scale < q.scale, math.inf, result)


@register_kl(Poisson, Poisson)
def _kl_poisson_poisson(p, q):
    return p.rate * (p.rate.log() - q.rate.log()) - (p.rate - q.rate)


@register_kl(TransformedDistribution, TransformedDistribution)
def _kl_transformed_transformed(p, q):
    if p.transforms != q.transforms:
        raise NotImplementedError
    if p.event_shape != q.event_shape:
        raise NotImplementedError
    return kl_divergence(p.base_dist, q.base_dist)


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p, q):
    result = ((q.high - q.low) / (p.high - p.low)).log()
    return _tp.where((q.low > p.low) | (q.high < p.high), math.inf, result)


@register_kl(Independent, Independent)
def _kl_independent_independent(p, q):
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError
    return _sum_rightmost(kl_divergence(p.base_dist, q.base_dist), p.reinterpreted_batch_ndims)


# --- across families -----------------------------------------------------------------------------

def _register_infinite(type_p, types_q, param):
    # q's support misses a region of positive p-probability
    def fn(p, q):
        return _infinite_like(getattr(p, param))
    for type_q in types_q:
        register_kl(type_p, type_q)(fn)


_register_infinite(Beta, (Pareto,), "concentration0")
_register_infinite(ContinuousBernoulli, (Pareto,), "probs")
_register_infinite(Exponential, (Uniform, Pareto, Beta, ContinuousBernoulli), "rate")
_register_infinite(Gamma, (Uniform, Pareto, Beta, ContinuousBernoulli), "concentration")
_register_infinite(Gumbel, (Uniform, Pareto, Gamma, Exponential, Beta, ContinuousBernoulli), "loc")
_register_infinite(Laplace, (Uniform, Pareto, Gamma, Exponential, Beta, ContinuousBernoulli), "loc")
_register_infinite(Normal, (Uniform, Pareto, Gamma, Exponential, Beta, ContinuousBernoulli), "loc")
_register_infinite(Pareto, (Uniform, Beta, ContinuousBernoulli), "scale")
_register_infinite(Poisson, (Binomial, Bernoulli), "rate")


def _normal_cross_entropy(mean, second_moment, q):
    # -E_p[log N(x; q.loc, q.scale)] from p's first two moments
    var_q = q.scale.pow(2)
    return 0.5 * (2 * math.pi * var_q).log() + (second_moment - 2 * q.loc * mean + q.loc.pow(2)) / (2 * var_q)


@register_kl(Exponential, Gamma)
def _kl_exponential_gamma(p, q):
    # E_p[log x] = -euler - log(rate), E_p[x] = 1 / rate
    e_log_x = -euler_constant - p.rate.log()
    cross = -(q.concentration * q.rate.log() - q.concentration.lgamma()
              + (q.concentration - 1) * e_log_x - q.rate / p.rate)
    return cross - p.entropy()


@register_kl(Exponential, Normal)
def _kl_exponential_normal(p, q):
    return _normal_cross_entropy(1 / p.rate, 2 / p.rate.pow(2), q) - p.entropy()


@register_kl(Gamma, Exponential)
def _kl_gamma_exponential(p, q):
    return -q.rate.log() + q.rate * p.concentration / p.rate - p.entropy()


@register_kl(Gamma, Normal)
def _kl_gamma_normal(p, q):
    mean = p.concentration / p.rate
    return _normal_cross_entropy(mean, p.concentration * (p.concentration + 1) / p.rate.pow(2), q) - p.entropy()


@register_kl(Laplace, Normal)
def _kl_laplace_normal(p, q):
    return _normal_cross_entropy(p.loc, 2 * p.scale.pow(2) + p.loc.pow(2), q) - p.entropy()


@register_kl(Normal, Laplace)
def _kl_normal_laplace(p, q):
    # E|x - m| for x ~ N(mu, s): s sqrt(2/pi) exp(-d^2 / 2s^2) + d erf(d / (s sqrt 2)), d = mu - m
    d = p.loc - q.loc
    e_abs = (p.scale * math.sqrt(2 / math.pi) * (-d.pow(2) / (2 * p.scale.pow(2))).exp()
             + d * _tp.erf(d / (p.scale * math.sqrt(2))))
    return (2 * q.scale).log() + e_abs / q.scale - p.entropy()


@register_kl(Uniform, Normal)
def _kl_uniform_normal(p, q):
    a, b = p.low, p.high
    return _normal_cross_entropy((a + b) / 2, (a.pow(2) + a * b + b.pow(2)) / 3, q) - (b - a).log()


@register_kl(Uniform, Exponential)
def _kl_uniform_exponential(p, q):
    result = -q.rate.log() + q.rate * (p.high + p.low) / 2 - (p.high - p.low).log()
    return _tp.where(p.low < 0, math.inf, result)


@register_kl(Uniform, Gamma)
def _kl_uniform_gamma(p, q):
    a, b = p.low, p.high
    # E_p[log x] = (b log b - a log a) / (b - a) - 1
    e_log_x = (_tp.xlogy(b, b) - _tp.xlogy(a, a)) / (b - a) - 1
    cross = -(q.concentration * q.rate.log() - q.concentration.lgamma()
              + (q.concentration - 1) * e_log_x - q.rate * (a + b) / 2)
    return _tp.where(a < 0, math.inf, cross - (b - a).log())


def _beta_e_log(p):
    # E[log x], E[log(1 - x)] for x ~ Beta(a, b)
    a, b = p.concentration1, p.concentration0
    d = (a + b).digamma()
    return a.digamma() - d, b.digamma() - d


def _uniform_e_log(low, high):
    # E[log x] for x ~ Uniform(low, high), 0 <= low: (h log h - l log l) / (h - l) - 1
    return (_tp.xlogy(high, high) - _tp.xlogy(low, low)) / (high - low) - 1


def _gamma_cross_entropy(e_x, e_log_x, q):
    # -E_p[log Gamma(x; q)] from E_p[x] and E_p[log x]
    return q.concentration.lgamma() - q.concentration * q.rate.log() - (q.concentration - 1) * e_log_x + q.rate * e_x


def _gumbel_cross_entropy(e_x, e_exp, q):
    # -E_p[log Gumbel(x; q)] = log scale + E[z] + E[exp(-z)], z = (x - loc) / scale, from E_p[x] and
    # e_exp = E_p[exp(-x / scale)]
    return q.scale.log() + (e_x - q.loc) / q.scale + (q.loc / q.scale).exp() * e_exp


def _cont_bern_cross_entropy(e_x, q):
    # -E_p[log CB(x; q)]: log CB(x) = x logits + log(1 - probs) + log C
    return -e_x * q.logits - (-q.probs).log1p() - q._cont_bern_log_norm()


def _outside(mask, result):
    return _tp.where(mask, math.inf, result)


@register_kl(Bernoulli, Poisson)
def _kl_bernoulli_poisson(p, q):
    # log x! = 0 on {0, 1}
    return -p.entropy() - (p.probs * q.rate.log() - q.rate)


@register_kl(Beta, ContinuousBernoulli)
def _kl_beta_continuous_bernoulli(p, q):
    return _cont_bern_cross_entropy(p.mean, q) - p.entropy()


@register_kl(Beta, Exponential)
def _kl_beta_exponential(p, q):
    return -q.rate.log() + q.rate * p.mean - p.entropy()


@register_kl(Beta, Gamma)
def _kl_beta_gamma(p, q):
    return _gamma_cross_entropy(p.mean, _beta_e_log(p)[0], q) - p.entropy()


@register_kl(Beta, Normal)
def _kl_beta_normal(p, q):
    return _normal_cross_entropy(p.mean, p.variance + p.mean.pow(2), q) - p.entropy()


@register_kl(Beta, Uniform)
def _kl_beta_uniform(p, q):
    return _outside((q.low > 0) | (q.high < 1), (q.high - q.low).log() - p.entropy())


@register_kl(ContinuousBernoulli, ContinuousBernoulli)
def _kl_continuous_bernoulli_continuous_bernoulli(p, q):
    return _cont_bern_cross_entropy(p.mean, q) - p.entropy()


@register_kl(ContinuousBernoulli, Exponential)
def _kl_continuous_bernoulli_exponential(p, q):
    return -q.rate.log() + q.rate * p.mean - p.entropy()


@register_kl(ContinuousBernoulli, Normal)
def _kl_continuous_bernoulli_normal(p, q):
    return _normal_cross_entropy(p.mean, p.variance + p.mean.pow(2), q) - p.entropy()


@register_kl(ContinuousBernoulli, Uniform)
def _kl_continuous_bernoulli_uniform(p, q):
    # infinite unless q covers [0, 1] (PyTorch 2.13 also gives inf when q.low == 0 or q.high == 1)
    return _outside((q.low > 0) | (q.high < 1), (q.high - q.low).log() - p.entropy())


@register_kl(Exponential, Gumbel)
def _kl_exponential_gumbel(p, q):
    # E[exp(-x / s)] = rate / (rate + 1 / s)
    rs = p.rate * q.scale
    return _gumbel_cross_entropy(1 / p.rate, rs / (rs + 1), q) - p.entropy()


@register_kl(Gamma, Gumbel)
def _kl_gamma_gumbel(p, q):
    # E[exp(-x / s)] = (1 + 1 / (rate s))^-concentration
    e_exp = (1 + (p.rate * q.scale).reciprocal()).pow(-p.concentration)
    return _gumbel_cross_entropy(p.concentration / p.rate, e_exp, q) - p.entropy()


@register_kl(Gumbel, Normal)
def _kl_gumbel_normal(p, q):
    mean = p.loc + p.scale * euler_constant
    var = (math.pi * p.scale).pow(2) / 6
    return _normal_cross_entropy(mean, var + mean.pow(2), q) - p.entropy()


@register_kl(Normal, Gumbel)
def _kl_normal_gumbel(p, q):
    # E[exp(-x / s)] = exp(-mu / s + sigma^2 / (2 s^2))
    e_exp = (-p.loc / q.scale + 0.5 * (p.scale / q.scale).pow(2)).exp()
    return _gumbel_cross_entropy(p.loc, e_exp, q) - p.entropy()


@register_kl(Uniform, Gumbel)
def _kl_uniform_gumbel(p, q):
    # E[exp(-x / s)] = s (exp(-low / s) - exp(-high / s)) / (high - low)
    width = p.high - p.low
    e_exp = q.scale * ((-p.low / q.scale).exp() - (-p.high / q.scale).exp()) / width
    return _gumbel_cross_entropy((p.low + p.high) / 2, e_exp, q) - width.log()


@register_kl(Uniform, Beta)
def _kl_uniform_beta(p, q):
    a, b = p.low, p.high
    e_log_x = _uniform_e_log(a, b)
    e_log_1mx = _uniform_e_log(1 - b, 1 - a)
    a1, a0 = q.concentration1, q.concentration0
    cross = a1.lgamma() + a0.lgamma() - (a1 + a0).lgamma() - (a1 - 1) * e_log_x - (a0 - 1) * e_log_1mx
    return _outside((a < 0) | (b > 1), cross - (b - a).log())


@register_kl(Uniform, ContinuousBernoulli)
def _kl_uniform_continuous_bernoulli(p, q):
    # infinite unless [low, high] lies in [0, 1] (PyTorch 2.13 also when low == 0 or high == 1)
    result = _cont_bern_cross_entropy(p.mean, q) - p.entropy()
    return _outside((p.low < 0) | (p.high > 1), result)


@register_kl(Uniform, Pareto)
def _kl_uniform_pareto(p, q):
    # -log q(x) = -log alpha - alpha log scale + (alpha + 1) log x on [scale, inf)
    cross = -q.alpha.log() - q.alpha * q.scale.log() + (q.alpha + 1) * _uniform_e_log(p.low, p.high)
    return _outside(p.low < q.scale, cross - (p.high - p.low).log())


def _pareto_moments(p):
    # E[x] (finite for alpha > 1), E[x^2] (alpha > 2), E[log x] = log scale + 1 / alpha; callers
    # mask the infinite cases
    a, s = p.alpha, p.scale
    return a * s / (a - 1), a * s.pow(2) / (a - 2), s.log() + a.reciprocal()


@register_kl(Pareto, Exponential)
def _kl_pareto_exponential(p, q):
    e_x, _, _ = _pareto_moments(p)
    return _outside(p.alpha <= 1, -q.rate.log() + q.rate * e_x - p.entropy())


@register_kl(Pareto, Gamma)
def _kl_pareto_gamma(p, q):
    e_x, _, e_log_x = _pareto_moments(p)
    return _outside(p.alpha <= 1, _gamma_cross_entropy(e_x, e_log_x, q) - p.entropy())


@register_kl(Pareto, Normal)
def _kl_pareto_normal(p, q):
    e_x, e_x2, _ = _pareto_moments(p)
    return _outside(p.alpha <= 2, _normal_cross_entropy(e_x, e_x2, q) - p.entropy())


# --- Gaussians with a low-rank-plus-diagonal covariance ------------------------------------------
# KL = 1/2 (log det Sq - log det Sp + tr(Sq^-1 Sp) + (mq - mp)^T Sq^-1 (mq - mp) - n); for a low-rank q,
# Sq^-1 = Dq^-1 - A^T A with A = Lc^-1 Wq^T Dq^-1 (Woodbury), so tr(Sq^-1 M M^T) = |Dq^-1/2 M|^2 - |A M|^2.

def _sq_norm(x):
    return x.pow(2).sum((-2, -1))


def _lowrank_inverse_factor(q):
    Wt_Dinv = q._unbroadcasted_cov_factor.mT / q._unbroadcasted_cov_diag.unsqueeze(-2)
    return solve_triangular(q._capacitance_tril, Wt_Dinv, upper=False)


def _trace_lowrank_inv(q, M):
    """tr(Sq^-1 M M^T) for a low-rank q."""
    return _sq_norm(M * q._unbroadcasted_cov_diag.rsqrt().unsqueeze(-1)) - _sq_norm(_lowrank_inverse_factor(q) @ M)


def _lowrank_logdet(d):
    return _batch_lowrank_logdet(d._unbroadcasted_cov_factor, d._unbroadcasted_cov_diag, d._capacitance_tril)


def _lowrank_mahalanobis(q, x):
    return _batch_lowrank_mahalanobis(q._unbroadcasted_cov_factor, q._unbroadcasted_cov_diag, x, q._capacitance_tril)


def _check_event(p, q):
    if p.event_shape != q.event_shape:
        raise ValueError("KL-divergence between two (Low Rank) Multivariate Normals with different event shapes "
                         "cannot be computed")


@register_kl(LowRankMultivariateNormal, LowRankMultivariateNormal)
def _kl_lowrankmultivariatenormal_lowrankmultivariatenormal(p, q):
    _check_event(p, q)
    log_det = _lowrank_logdet(q) - _lowrank_logdet(p)
    # Sp = Wp Wp^T + Dp: the trace splits into the factor part and the diagonal part
    Dp = p._unbroadcasted_cov_diag
    A = _lowrank_inverse_factor(q)
    trace = (_trace_lowrank_inv(q, p._unbroadcasted_cov_factor)
             + (Dp / q._unbroadcasted_cov_diag).sum(-1) - _sq_norm(A * Dp.sqrt().unsqueeze(-2)))
    return 0.5 * (log_det + trace + _lowrank_mahalanobis(q, q.loc - p.loc) - p.event_shape[0])


@register_kl(MultivariateNormal, LowRankMultivariateNormal)
def _kl_multivariatenormal_lowrankmultivariatenormal(p, q):
    _check_event(p, q)
    Lp = p._unbroadcasted_scale_tril
    log_det = _lowrank_logdet(q) - 2 * Lp.diagonal(dim1=-2, dim2=-1).log().sum(-1)
    trace = _trace_lowrank_inv(q, Lp)
    return 0.5 * (log_det + trace + _lowrank_mahalanobis(q, q.loc - p.loc) - p.event_shape[0])


@register_kl(LowRankMultivariateNormal, MultivariateNormal)
def _kl_lowrankmultivariatenormal_multivariatenormal(p, q):
    _check_event(p, q)
    Lq = q._unbroadcasted_scale_tril
    log_det = 2 * Lq.diagonal(dim1=-2, dim2=-1).log().sum(-1) - _lowrank_logdet(p)
    # tr(Sq^-1 Sp) = |Lq^-1 Wp|^2 + |Lq^-1 Dp^1/2|^2
    sqrt_dp = p._unbroadcasted_cov_diag.sqrt().diag_embed()
    trace = (_sq_norm(solve_triangular(Lq, p._unbroadcasted_cov_factor, upper=False))
             + _sq_norm(solve_triangular(Lq, sqrt_dp, upper=False)))
    return 0.5 * (log_det + trace + _batch_mahalanobis(Lq, q.loc - p.loc) - p.event_shape[0])
