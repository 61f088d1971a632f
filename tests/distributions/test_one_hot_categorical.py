"""OneHotCategorical and OneHotCategoricalStraightThrough."""
import numpy as np
import pytest
from scipy import stats

import tensorplug as tp
from tensorplug.distributions import OneHotCategorical, OneHotCategoricalStraightThrough

from ._helpers import check_frequencies, close, req, t64

P = np.array([0.1, 0.6, 0.3])


def test_values():
    """log_prob of a one-hot vector, entropy, mean, variance, mode, enumerate_support."""
    d = OneHotCategorical(t64(P))
    assert d.event_shape == (3,) and d.batch_shape == ()
    close(d.log_prob(t64([0.0, 0.0, 1.0])), np.log(0.3), rtol=1e-12)
    close(d.entropy(), stats.entropy(P), rtol=1e-12)
    close(d.mean, P); close(d.variance, P * (1 - P)); close(d.mode, [0.0, 1.0, 0.0], rtol=0)
    close(d.enumerate_support(), np.eye(3), rtol=0)
    assert OneHotCategorical(t64([P, P])).enumerate_support().shape == (3, 2, 3)
    with pytest.raises(ValueError, match="to be within the support"):
        d.log_prob(t64([1.0, 1.0, 0.0]))


def test_sampling():
    """20000 samples are one-hot with the category frequencies."""
    tp.manual_seed(18)
    s = OneHotCategorical(t64(P)).sample((20000,))
    assert s.shape == (20000, 3) and (s.sum(-1).numpy() == 1).all()
    check_frequencies(s.argmax(-1), P)
    assert OneHotCategorical(t64(P)).expand((4,)).sample((2,)).shape == (2, 4, 3)


def test_straight_through_gradient():
    """rsample's value is one-hot; its gradient is that of the probabilities (identity Jacobian)."""
    p = req(P)
    d = OneHotCategoricalStraightThrough(p)
    s = d.rsample()
    assert d.has_rsample and (s.detach().numpy().sum() == 1)
    w = t64([1.0, 2.0, 3.0])
    g, = tp.autograd.grad((s * w).sum(), p)
    q = P / P.sum()
    close(g, (w.numpy() - (w.numpy() * q).sum()) / P.sum(), rtol=1e-12)  # through probs = p / sum(p)
