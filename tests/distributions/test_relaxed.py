"""RelaxedBernoulli and RelaxedOneHotCategorical (no SciPy counterpart): densities against their
closed forms, normalisation by numerical integration, reparameterised gradients, sampling."""
import math

import numpy as np
import pytest
import scipy.integrate as si
import scipy.special as sp

import tensorplug as tp
from tensorplug.distributions import RelaxedBernoulli, RelaxedOneHotCategorical


def _t(a):
    return tp.tensor(np.asarray(a, dtype=np.float64))


def test_relaxed_bernoulli_density():
    t, p = 0.7, 0.3
    d = RelaxedBernoulli(_t(t), probs=_t(p))
    a = p / (1 - p)

    def pdf(y):  # binary Concrete density (Maddison et al. 2017)
        return t * a * y ** (-t - 1) * (1 - y) ** (-t - 1) / (a * y ** -t + (1 - y) ** -t) ** 2
    y = np.array([0.1, 0.5, 0.8])
    assert np.allclose(d.log_prob(_t(y)).numpy(), np.log(pdf(y)), rtol=1e-10)
    f = lambda v: math.exp(d.log_prob(_t(v)).item())
    assert np.isclose(si.quad(f, 0, 1, limit=200)[0], 1.0, atol=1e-6)
    tp.manual_seed(0)
    s = d.sample((20000,)).numpy()
    # P(Y > 1/2) = p exactly (the logistic noise is symmetric)
    assert abs((s > 0.5).mean() - p) < 5 * math.sqrt(p * (1 - p) / 20000)
    assert d.support.check(_t(s)).all()


def test_relaxed_one_hot_density_and_sampling():
    t = 0.6
    probs = np.array([0.2, 0.3, 0.5])
    d = RelaxedOneHotCategorical(_t(t), probs=_t(probs))

    def log_pdf(y):  # Concrete density on the simplex
        k = len(probs)
        return (sp.gammaln(k) + (k - 1) * np.log(t) + np.sum(np.log(probs) - (t + 1) * np.log(y))
                - k * np.log(np.sum(probs * y ** -t)))
    y = np.array([0.1, 0.3, 0.6])
    assert np.isclose(d.log_prob(_t(y)).item(), log_pdf(y), rtol=1e-10)
    tp.manual_seed(1)
    s = d.sample((20000,)).numpy()
    assert np.allclose(s.sum(-1), 1.0)
    # the argmax of a Concrete sample is Categorical(probs) exactly (Gumbel-max)
    freq = np.bincount(s.argmax(-1), minlength=3) / 20000
    assert np.all(np.abs(freq - probs) < 5 * np.sqrt(probs * (1 - probs) / 20000))


def test_rsample_gradients():
    def f(logits):
        tp.manual_seed(2)
        return RelaxedOneHotCategorical(_t(0.5), logits=logits).rsample((2,))
    assert tp.autograd.gradcheck(f, (_t([0.1, -0.3, 0.4]).requires_grad_(),))

    def g(probs):
        tp.manual_seed(3)
        return RelaxedBernoulli(_t(0.5), probs=probs).rsample((3,))
    assert tp.autograd.gradcheck(g, (_t([0.3, 0.6]).requires_grad_(),))
    d = RelaxedBernoulli(tp.tensor(0.5), logits=tp.zeros(2)).expand((4, 2))
    assert d.batch_shape == (4, 2) and d.rsample().shape == (4, 2) and d.rsample().dtype == tp.float32
