"""FisherSnedecor against scipy.stats.f."""
import numpy as np
from scipy import stats

import tensorplug as tp
from tensorplug.distributions import FisherSnedecor

from ._helpers import check_moments, close, req, t64

D1, D2 = np.array([1.0, 5.0, 12.0]), np.array([3.0, 4.5, 20.0])
REF = stats.f(D1, D2)


def test_values_against_scipy():
    """log_prob, mean, variance (nan where undefined), mode (nan for df1 <= 2)."""
    d = FisherSnedecor(t64(D1), t64(D2))
    x = np.array([0.3, 1.2, 2.0])
    close(d.log_prob(t64(x)), REF.logpdf(x)); close(d.mean, REF.mean())
    v = d.variance.numpy()
    assert np.isnan(v[:1]).all()
    close(v[1:], REF.var()[1:])
    mode = d.mode.numpy()
    assert np.isnan(mode[0])
    close(mode[1:], ((D1 - 2) / D1 * D2 / (D2 + 2))[1:])
    assert tp.autograd.gradgradcheck(lambda a, b: FisherSnedecor(a, b).log_prob(t64(x)), (req(D1), req(D2)))
    assert FisherSnedecor(t64(D1), t64(D2)).expand((2, 3)).batch_shape == (2, 3)


def test_sampling():
    """Moments of 40000 samples with finite kurtosis (df2 = 20)."""
    tp.manual_seed(12)
    ref = stats.f(12.0, 20.0)
    s = FisherSnedecor(t64([12.0]), t64([20.0])).rsample((40000,))
    check_moments(s, ref.mean(), ref.var(), ref.stats(moments="k"))
