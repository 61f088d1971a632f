"""Bernoulli against scipy.stats.bernoulli."""
import numpy as np
import pytest
from scipy import stats

import tensorplug as tp
from tensorplug.distributions import Bernoulli

from ._helpers import check_frequencies, close, req, t64

P = np.array([0.1, 0.5, 0.85])


def test_values_against_scipy():
    """log_prob, entropy, moments, mode; probs and logits give the same distribution."""
    ref = stats.bernoulli(P)
    for d in (Bernoulli(t64(P)), Bernoulli(logits=t64(np.log(P / (1 - P))))):
        for x in (0.0, 1.0):
            close(d.log_prob(t64([x] * 3)), ref.logpmf(x), rtol=1e-10)
        close(d.entropy(), ref.entropy(), rtol=1e-10)
        close(d.mean, ref.mean(), rtol=1e-12); close(d.variance, ref.var(), rtol=1e-10)
    mode = Bernoulli(t64(P)).mode.numpy()
    assert mode[0] == 0 and np.isnan(mode[1]) and mode[2] == 1


def test_sampling_and_support():
    """Frequencies of 20000 samples; enumerate_support is {0, 1} over the batch."""
    tp.manual_seed(1)
    d = Bernoulli(t64(P))
    s = d.sample((20000,))
    assert set(np.unique(s.numpy())) <= {0.0, 1.0}
    check_frequencies(s, np.stack([1 - P, P], -1))
    close(d.enumerate_support(), np.array([[0.0] * 3, [1.0] * 3]), rtol=0)
    assert d.enumerate_support(expand=False).shape == (2, 1)


def test_log_prob_gradient_and_validation():
    """log_prob differentiable in probs; values outside {0, 1} and probs outside [0, 1] rejected."""
    p = req(P)
    assert tp.autograd.gradcheck(lambda p: Bernoulli(p).log_prob(t64([1.0, 0.0, 1.0])), (p,))
    assert tp.autograd.gradgradcheck(lambda p: Bernoulli(p).entropy(), (p,))
    with pytest.raises(ValueError, match="to be within the support"):
        Bernoulli(t64(P)).log_prob(t64([0.5, 0.0, 1.0]))
    with pytest.raises(ValueError, match="Expected parameter probs"):
        Bernoulli(tp.tensor([1.5]))
    assert Bernoulli(tp.tensor([0.2])).expand((4, 1)).sample().shape == (4, 1)
