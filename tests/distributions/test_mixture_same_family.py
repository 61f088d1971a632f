"""MixtureSameFamily against mixture densities computed with SciPy."""
import numpy as np
import pytest
from scipy import stats

import tensorplug as tp
from tensorplug.distributions import Categorical, Independent, MixtureSameFamily, Normal

from ._helpers import check_moments, close, req, t64

W = np.array([0.2, 0.5, 0.3])
LOC, SCALE = np.array([-2.0, 0.0, 3.0]), np.array([0.5, 1.0, 0.7])


def make(w=W, loc=LOC, scale=SCALE):
    return MixtureSameFamily(Categorical(t64(w)), Normal(t64(loc), t64(scale)))


def test_log_prob_cdf_moments():
    """log_prob, cdf, mean and variance (law of total variance) of a Gaussian mixture."""
    d = make()
    x = np.array([-2.1, 0.4, 5.0])
    ref_pdf = (W * stats.norm(LOC, SCALE).pdf(x[:, None])).sum(-1)
    close(d.log_prob(t64(x)), np.log(ref_pdf)); close(d.cdf(t64(x)), (W * stats.norm(LOC, SCALE).cdf(x[:, None])).sum(-1))
    mean = (W * LOC).sum()
    close(d.mean, mean); close(d.variance, (W * (SCALE ** 2 + LOC ** 2)).sum() - mean ** 2)
    assert tp.autograd.gradgradcheck(lambda l, s: MixtureSameFamily(Categorical(t64(W)), Normal(l, s)).log_prob(t64(x)),
                                     (req(LOC), req(SCALE)))


def test_sampling_and_shapes():
    """20000 samples have the mixture's mean and variance; batched and multivariate shapes."""
    tp.manual_seed(21)
    d = make()
    s = d.sample((20000,))
    assert s.shape == (20000,)
    m = (W * LOC).sum()
    var = (W * (SCALE ** 2 + LOC ** 2)).sum() - m ** 2
    mu4 = (W * stats.norm(LOC - m, SCALE).moment(4)).sum()
    check_moments(s, m, var, mu4 / var ** 2 - 3)
    comp = Independent(Normal(t64(np.zeros((4, 3, 2))), t64(np.ones((4, 3, 2)))), 1)
    mv = MixtureSameFamily(Categorical(t64(np.ones((4, 3)))), comp)
    assert mv.batch_shape == (4,) and mv.event_shape == (2,)
    assert mv.sample((5,)).shape == (5, 4, 2) and mv.log_prob(t64(np.zeros((4, 2)))).shape == (4,)
    assert mv.mean.shape == (4, 2)
    assert make().expand((2,)).sample().shape == (2,)


def test_errors():
    """PyTorch's errors for a non-Categorical mixture and mismatched component counts."""
    with pytest.raises(ValueError, match="The Mixture distribution needs to be an  instance of torch.distributions.Categorical"):
        MixtureSameFamily(Normal(0.0, 1.0), Normal(t64(LOC), t64(SCALE)))
    with pytest.raises(ValueError, match="does not equal `component_distribution.batch_shape\\[-1\\]`"):
        MixtureSameFamily(Categorical(t64([0.5, 0.5])), Normal(t64(LOC), t64(SCALE)))
