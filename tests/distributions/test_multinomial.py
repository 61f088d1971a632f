"""Multinomial against scipy.stats.multinomial."""
import numpy as np
import pytest
from scipy import stats

import tensorplug as tp
from tensorplug.distributions import Multinomial

from ._helpers import check_moments, close, req, t64

P = np.array([0.2, 0.3, 0.5])
REF = stats.multinomial(6, P)


def test_values_against_scipy():
    """log_prob, entropy, mean, variance; a zero-probability category counted 0 times."""
    d = Multinomial(6, t64(P))
    x = np.array([1.0, 2.0, 3.0])
    assert d.event_shape == (3,) and d.batch_shape == ()
    close(d.log_prob(t64(x)), REF.logpmf(x), rtol=1e-10); close(d.entropy(), REF.entropy(), rtol=1e-9)
    close(d.mean, 6 * P); close(d.variance, 6 * P * (1 - P))
    close(Multinomial(3, t64([0.0, 0.5, 0.5])).log_prob(t64([0.0, 1.0, 2.0])),
          stats.multinomial(3, [0.0, 0.5, 0.5]).logpmf([0, 1, 2]), rtol=1e-10)


def test_sampling_and_errors():
    """20000 samples sum to total_count with the right moments; PyTorch's errors."""
    tp.manual_seed(17)
    s = Multinomial(6, t64(P)).sample((20000,))
    assert s.shape == (20000, 3) and (s.sum(-1).numpy() == 6).all()
    binom = stats.binom(6, P)
    check_moments(s, binom.mean(), binom.var(), binom.stats(moments="k"))
    assert Multinomial(4, t64([P, P])).sample((5,)).shape == (5, 2, 3)
    with pytest.raises(NotImplementedError, match="inhomogeneous total_count is not supported"):
        Multinomial(tp.tensor([6]), t64(P))
    with pytest.raises(ValueError, match="to be within the support"):
        Multinomial(6, t64(P)).log_prob(t64([1.0, 2.0, 7.0]))  # sum above total_count
    assert tp.autograd.gradgradcheck(lambda p: Multinomial(6, p).log_prob(t64([1.0, 2.0, 3.0])), (req(P),))
    e = Multinomial(6, t64(P)).expand((2,))
    assert e.batch_shape == (2,) and e.sample().shape == (2, 3)
