"""NegativeBinomial against scipy.stats.nbinom (SciPy's p is PyTorch's 1 - probs)."""
import numpy as np
import pytest
from scipy import stats

import tensorplug as tp
from tensorplug.distributions import NegativeBinomial

from ._helpers import check_scipy_moments, close, req, t64

R, P = np.array([1.0, 4.5, 10.0]), np.array([0.3, 0.6, 0.1])
REF = stats.nbinom(R, 1 - P)


def test_values_against_scipy():
    """log_prob (probs and logits), moments, mode; total_count 0 gives P(0) = 1."""
    for d in (NegativeBinomial(t64(R), t64(P)), NegativeBinomial(t64(R), logits=t64(np.log(P / (1 - P))))):
        for k in (0.0, 2.0, 9.0):
            close(d.log_prob(t64([k] * 3)), REF.logpmf(k), rtol=1e-9)
        close(d.mean, REF.mean()); close(d.variance, REF.var())
        close(d.mode, np.maximum(np.floor((R - 1) * P / (1 - P)), 0))
    close(NegativeBinomial(t64([0.0]), t64([0.5])).log_prob(t64([0.0])), [0.0])
    assert tp.autograd.gradgradcheck(lambda r, p: NegativeBinomial(r, p).log_prob(t64([0.0, 2.0, 9.0])),
                                     (req(R), req(P)))
    with pytest.raises(ValueError, match="Expected parameter probs"):
        NegativeBinomial(t64([1.0]), t64([1.0]))
    assert NegativeBinomial(t64(R), t64(P)).expand((2, 3)).batch_shape == (2, 3)


def test_sampling():
    """Moments of 20000 samples (a Gamma-Poisson mixture)."""
    tp.manual_seed(16)
    check_scipy_moments(NegativeBinomial(t64(R), t64(P)).sample((20000,)), REF)
