"""Categorical against NumPy references and scipy.stats.entropy."""
import numpy as np
import pytest
from scipy import stats

import tensorplug as tp
from tensorplug.distributions import Categorical

from ._helpers import check_frequencies, close, req, t64

W = np.array([[1.0, 2.0, 7.0], [3.0, 3.0, 4.0]])
P = W / W.sum(-1, keepdims=True)


def test_values():
    """probs are normalised; log_prob, entropy, mode; logits give the same distribution."""
    for d in (Categorical(t64(W)), Categorical(logits=t64(np.log(W) + 5.0))):
        close(d.probs, P, rtol=1e-12)
        close(d.log_prob(tp.tensor([2, 0])), np.log([P[0, 2], P[1, 0]]), rtol=1e-12)
        close(d.entropy(), stats.entropy(P, axis=-1), rtol=1e-12)
        assert d.mode.tolist() == [2, 2] and d.batch_shape == (2,) and d.event_shape == ()
        assert np.isnan(d.mean.numpy()).all() and np.isnan(d.variance.numpy()).all()


def test_zero_probability_entropy_is_finite():
    """A zero probability contributes 0 to the entropy (not nan)."""
    close(Categorical(t64([0.0, 0.5, 0.5])).entropy(), np.log(2.0), rtol=1e-12)


def test_sampling_frequencies_and_shapes():
    """20000 samples: shapes, dtype int64, frequencies within 5 binomial SEs."""
    tp.manual_seed(2)
    d = Categorical(t64(W))
    s = d.sample((20000,))
    assert s.shape == (20000, 2) and s.dtype == tp.int64
    check_frequencies(s, P)
    assert d.sample((3, 4)).shape == (3, 4, 2)


def test_enumerate_support_expand_and_errors():
    """enumerate_support, expand, and PyTorch's errors."""
    d = Categorical(t64(W))
    assert d.enumerate_support().tolist() == [[0, 0], [1, 1], [2, 2]]
    assert d.enumerate_support(expand=False).shape == (3, 1)
    assert d.expand((4, 2)).sample().shape == (4, 2)
    with pytest.raises(ValueError, match="`probs` parameter must be at least one-dimensional."):
        Categorical(tp.tensor(1.0))
    with pytest.raises(ValueError, match="to be within the support"):
        d.log_prob(tp.tensor([3, 0]))
    with pytest.raises(ValueError, match="Expected parameter probs"):
        Categorical(tp.tensor([-0.5, 1.5]))


def test_log_prob_gradient():
    """log_prob and entropy differentiable in the logits, twice."""
    lg = req(np.log(W))
    f = lambda lg: Categorical(logits=lg).log_prob(tp.tensor([2, 1]))
    assert tp.autograd.gradcheck(f, (lg,)) and tp.autograd.gradgradcheck(f, (lg,))
    assert tp.autograd.gradgradcheck(lambda lg: Categorical(logits=lg).entropy(), (lg,))
