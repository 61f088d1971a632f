"""Geometric against scipy.stats.geom (shifted: PyTorch counts failures, SciPy trials)."""
import numpy as np
import pytest
from scipy import stats

import tensorplug as tp
from tensorplug.distributions import Geometric

from ._helpers import check_scipy_moments, close, req, t64

P = np.array([0.1, 0.5, 1.0])
REF = stats.geom(P, loc=-1)


def test_values_against_scipy():
    """log_prob (p = 1 included), entropy, moments."""
    d = Geometric(t64(P))
    for k in (0.0, 2.0):
        close(d.log_prob(t64([k] * 3)), REF.logpmf(k))
    inner = stats.geom(P[:2], loc=-1)           # SciPy's entropy and moment formulas divide by 0 at p = 1
    close(d.entropy()[:2], inner.entropy(), rtol=1e-9)
    close(d.mean, (1 - P) / P); close(d.variance, (1 - P) / P ** 2); close(d.mode, 0.0)
    close(d.mean[:2], inner.mean()); close(d.variance[:2], inner.var())
    dl = Geometric(logits=t64(np.log(P[:2] / (1 - P[:2]))))
    close(dl.log_prob(t64([3.0, 3.0])), REF.logpmf(3.0)[:2])


def test_sampling_gradient_validation():
    """Moments of 20000 samples; log_prob gradient; p = 0 rejected with PyTorch's message."""
    tp.manual_seed(15)
    check_scipy_moments(Geometric(t64(P[:2])).sample((20000,)), stats.geom(P[:2], loc=-1))
    assert tp.autograd.gradgradcheck(lambda p: Geometric(p).log_prob(t64([0.0, 4.0])), (req(P[:2]),))
    with pytest.raises(ValueError, match=r"Expected parameter probs \(Tensor of shape \(2,\)\) of distribution "
                                         r"Geometric\(probs: .*\) to be positive but found invalid values:\n"):
        Geometric(tp.tensor([0.0, 0.5]))
    assert Geometric(t64(P)).expand((2, 3)).sample().shape == (2, 3)
