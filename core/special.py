"""tensorplug.special, like torch.special: the special functions under their SciPy-style names.

    >>> tensorplug.special.gammaln(tensor([0.5]))     # log(sqrt(pi))
    tensor([0.5724])

Aliases of the ops (core/ops/special.py, pointwise.py, reduction.py) plus the functions only this
namespace has (erfcx, i0e, i1, i1e, ndtr, ndtri, log_ndtr, entr, xlog1py).
"""
from __future__ import annotations

from .ops import reduction as _reduction
from .ops.pointwise import _out, erf, expm1, exp2 as _exp2, log1p, round, sigmoid as expit  # noqa: F401
from .ops.special import (digamma, entr, erfc, erfcx, erfinv, i0, i0e, i1, i1e, lgamma as gammaln,  # noqa: F401
                          log_ndtr, logit, mvlgamma as multigammaln, ndtr, ndtri, polygamma, sinc, xlog1py, xlogy)
from .ops.special import igamma as gammainc, igammac as gammaincc  # noqa: F401

psi = digamma

__all__ = ["digamma", "entr", "erf", "erfc", "erfcx", "erfinv", "exp2", "expit", "expm1", "gammainc", "gammaincc",
           "gammaln", "i0",
           "i0e", "i1", "i1e", "log1p", "log_ndtr", "log_softmax", "logit", "logsumexp", "multigammaln", "ndtr",
           "ndtri", "polygamma", "psi", "round", "sinc", "softmax", "xlog1py", "xlogy"]


def exp2(input, *, out=None):
    """2 ** input."""
    return _out(_exp2(input), out)


def logsumexp(input, dim, keepdim=False, *, out=None):
    """log(sum(exp(input), dim)), computed stably."""
    return _out(_reduction.logsumexp(input, dim, keepdim), out)


def softmax(input, dim, *, dtype=None):
    return _reduction.softmax(input, dim, dtype)


def log_softmax(input, dim, *, dtype=None):
    return _reduction.log_softmax(input, dim, dtype)


def _public():
    # functions only this namespace has get the public argument check too (_argcheck); the aliases of
    # tensorplug functions are the very objects tensorplug exports
    import inspect

    from .ops._argcheck import tensor_typed
    g = globals()
    for name in __all__:
        fn = g[name]
        if inspect.isfunction(fn):
            g[name] = tensor_typed(fn, name)


_public()
