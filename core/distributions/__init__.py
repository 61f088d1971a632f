"""tensorplug.distributions: torch.distributions' API (parameterizable probability distributions and
sampling functions). Each family lives in the file PyTorch names (so pickles and `torch.distributions.normal.Normal`
resolve), and loads on first use."""
from __future__ import annotations

import importlib

# public name -> the module (in this package) that defines it
_WHERE = {
    "Bernoulli": "bernoulli",
    "Beta": "beta",
    "Binomial": "binomial",
    "Categorical": "categorical",
    "Cauchy": "cauchy",
    "Chi2": "chi2",
    "ContinuousBernoulli": "continuous_bernoulli",
    "Dirichlet": "dirichlet",
    "Exponential": "exponential",
    "FisherSnedecor": "fishersnedecor",
    "Gamma": "gamma",
    "Geometric": "geometric",
    "Gumbel": "gumbel",
    "HalfCauchy": "half_cauchy",
    "HalfNormal": "half_normal",
    "Independent": "independent",
    "Kumaraswamy": "kumaraswamy",
    "Laplace": "laplace",
    "LKJCholesky": "lkj_cholesky",
    "LogNormal": "log_normal",
    "LogisticNormal": "logistic_normal",
    "LowRankMultivariateNormal": "lowrank_multivariate_normal",
    "MixtureSameFamily": "mixture_same_family",
    "Multinomial": "multinomial",
    "MultivariateNormal": "multivariate_normal",
    "NegativeBinomial": "negative_binomial",
    "Normal": "normal",
    "OneHotCategorical": "one_hot_categorical",
    "OneHotCategoricalStraightThrough": "one_hot_categorical",
    "Pareto": "pareto",
    "Poisson": "poisson",
    "RelaxedBernoulli": "relaxed_bernoulli",
    "RelaxedOneHotCategorical": "relaxed_categorical",
    "StudentT": "studentT",
    "TransformedDistribution": "transformed_distribution",
    "Uniform": "uniform",
    "VonMises": "von_mises",
    "Weibull": "weibull",
    "Wishart": "wishart",
    "Distribution": "distribution",
    "ExponentialFamily": "exp_family",
    "kl_divergence": "kl",
    "register_kl": "kl",
    "biject_to": "constraint_registry",
    "transform_to": "constraint_registry",
    "AbsTransform": "transforms",
    "AffineTransform": "transforms",
    "CatTransform": "transforms",
    "ComposeTransform": "transforms",
    "CorrCholeskyTransform": "transforms",
    "CumulativeDistributionTransform": "transforms",
    "ExpTransform": "transforms",
    "IndependentTransform": "transforms",
    "LowerCholeskyTransform": "transforms",
    "PositiveDefiniteTransform": "transforms",
    "PowerTransform": "transforms",
    "ReshapeTransform": "transforms",
    "SigmoidTransform": "transforms",
    "SoftplusTransform": "transforms",
    "TanhTransform": "transforms",
    "SoftmaxTransform": "transforms",
    "StackTransform": "transforms",
    "StickBreakingTransform": "transforms",
    "Transform": "transforms",
    "identity_transform": "transforms",
}
_SUBMODULES = ("constraints", "constraint_registry", "transforms", "kl", "utils", "distribution",
               "exp_family", "bernoulli", "beta", "binomial", "categorical", "cauchy", "chi2",
               "continuous_bernoulli", "dirichlet", "exponential", "fishersnedecor", "gamma", "geometric",
               "gumbel", "half_cauchy", "half_normal", "independent", "kumaraswamy", "laplace",
               "lkj_cholesky", "log_normal", "logistic_normal", "lowrank_multivariate_normal",
               "mixture_same_family", "multinomial", "multivariate_normal", "negative_binomial", "normal",
               "one_hot_categorical", "pareto", "poisson", "relaxed_bernoulli", "relaxed_categorical",
               "studentT", "transformed_distribution", "uniform", "von_mises", "weibull", "wishart")
# PyTorch 2.13's torch.distributions.__all__, in its order, less GeneralizedPareto and InverseGamma (not here yet)
__all__ = ["Bernoulli", "Beta", "Binomial", "Categorical", "Cauchy", "Chi2", "ContinuousBernoulli", "Dirichlet",
           "Distribution", "Exponential", "ExponentialFamily", "FisherSnedecor", "Gamma", "Geometric", "Gumbel",
           "HalfCauchy", "HalfNormal", "Independent", "Kumaraswamy", "LKJCholesky", "Laplace", "LogNormal",
           "LogisticNormal", "LowRankMultivariateNormal", "MixtureSameFamily", "Multinomial", "MultivariateNormal",
           "NegativeBinomial", "Normal", "OneHotCategorical", "OneHotCategoricalStraightThrough", "Pareto",
           "RelaxedBernoulli", "RelaxedOneHotCategorical", "StudentT", "Poisson", "Uniform", "VonMises", "Weibull",
           "Wishart", "TransformedDistribution", "biject_to", "kl_divergence", "register_kl", "transform_to",
           "AbsTransform", "AffineTransform", "CatTransform", "ComposeTransform", "CorrCholeskyTransform",
           "CumulativeDistributionTransform", "ExpTransform", "IndependentTransform", "LowerCholeskyTransform",
           "PositiveDefiniteTransform", "PowerTransform", "ReshapeTransform", "SigmoidTransform", "SoftplusTransform",
           "TanhTransform", "SoftmaxTransform", "StackTransform", "StickBreakingTransform", "Transform",
           "identity_transform"]


def __getattr__(name):
    where = _WHERE.get(name)
    if where is not None:
        value = getattr(importlib.import_module(f"{__name__}.{where}"), name)
        globals()[name] = value
        return value
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'tensorplug.distributions' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_WHERE) | set(_SUBMODULES))
