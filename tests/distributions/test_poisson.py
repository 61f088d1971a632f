"""Poisson against scipy.stats.poisson."""
import numpy as np
import pytest
from scipy import stats

import tensorplug as tp
from tensorplug.distributions import Poisson

from ._helpers import check_scipy_moments, close, req, t64

RATE = np.array([0.0, 0.7, 4.0, 30.0])
REF = stats.poisson(RATE)


def test_values_against_scipy():
    """log_prob (rate 0 included), moments, mode."""
    d = Poisson(t64(RATE))
    for k in (0.0, 3.0, 25.0):
        close(d.log_prob(t64([k] * 4)), REF.logpmf(k))
    close(d.mean, RATE); close(d.variance, RATE); close(d.mode, np.floor(RATE))
    r = req(RATE[1:])
    assert tp.autograd.gradgradcheck(lambda r: Poisson(r).log_prob(t64([1.0, 2.0, 40.0])), (r,))
    with pytest.raises(ValueError, match="to be within the support"):
        d.log_prob(t64([0.5] * 4))
    assert Poisson(t64(RATE)).expand((2, 4)).batch_shape == (2, 4)


def test_sampling():
    """Moments of 20000 samples (rate > 0)."""
    tp.manual_seed(13)
    check_scipy_moments(Poisson(t64(RATE[1:])).sample((20000,)), stats.poisson(RATE[1:]))
