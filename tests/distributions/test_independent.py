"""Independent: batch dims reinterpreted as event dims."""
import numpy as np
import pytest
from scipy import stats

import tensorplug as tp
from tensorplug.distributions import Bernoulli, Independent, Normal

from ._helpers import close, req, seeded, t64

LOC, SCALE = np.array([[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]), np.array([[1.0, 2.0, 0.5]] * 2)


def test_shapes_log_prob_entropy():
    """event dims sum in log_prob and entropy; moments and samples are the base's."""
    base = Normal(t64(LOC), t64(SCALE))
    d = Independent(base, 1)
    assert d.batch_shape == (2,) and d.event_shape == (3,)
    x = np.zeros((2, 3))
    close(d.log_prob(t64(x)), stats.norm(LOC, SCALE).logpdf(x).sum(-1))
    close(d.entropy(), stats.norm(LOC, SCALE).entropy().sum(-1))
    close(d.mean, LOC); close(d.variance, SCALE ** 2)
    assert d.sample((4,)).shape == (4, 2, 3) and d.has_rsample
    d2 = Independent(base, 2)
    assert d2.batch_shape == () and d2.event_shape == (2, 3)
    assert repr(d).startswith("Independent(Normal(") and repr(d).endswith(", 1)")


def test_expand_support_enumerate_and_errors():
    """expand keeps the event shape; support is independent(base support); PyTorch's errors."""
    d = Independent(Normal(t64(LOC), t64(SCALE)), 1)
    e = d.expand((5, 2))
    assert e.batch_shape == (5, 2) and e.event_shape == (3,) and e.base_dist.batch_shape == (5, 2, 3)
    assert d.support.event_dim == 1
    with pytest.raises(ValueError, match=r"Expected reinterpreted_batch_ndims <= len\(base_distribution.batch_shape\), actual 3 vs 2"):
        Independent(Normal(t64(LOC), t64(SCALE)), 3)
    b = Independent(Bernoulli(t64([0.3, 0.6])), 1)
    assert not b.has_enumerate_support
    with pytest.raises(NotImplementedError, match="Enumeration over cartesian product is not implemented"):
        b.enumerate_support()
    assert Independent(Bernoulli(t64([0.3, 0.6])), 0).enumerate_support().shape == (2, 2)
    with pytest.raises(ValueError, match="to be within the support"):
        b.log_prob(t64([0.0, 0.5]))


def test_rsample_gradient():
    """rsample passes gradients through to the base's parameters."""
    f = seeded(lambda l, s: Independent(Normal(l, s), 1).rsample((2,)))
    assert tp.autograd.gradcheck(f, (req(LOC), req(SCALE)))
