"""StudentT against scipy.stats.t."""
import numpy as np
from scipy import stats

import tensorplug as tp
from tensorplug.distributions import StudentT

from ._helpers import check_moments, close, req, seeded, t64

DF, LOC, SCALE = np.array([0.8, 1.5, 9.0]), np.array([0.0, 1.0, -2.0]), np.array([1.0, 2.0, 0.5])
REF = stats.t(DF, LOC, SCALE)


def test_values_against_scipy():
    """log_prob, entropy; mean nan for df <= 1, variance inf for 1 < df <= 2."""
    d = StudentT(t64(DF), t64(LOC), t64(SCALE))
    x = np.array([0.3, -4.0, -1.0])
    close(d.log_prob(t64(x)), REF.logpdf(x)); close(d.entropy(), REF.entropy(), rtol=1e-8)
    m, v = d.mean.numpy(), d.variance.numpy()
    assert np.isnan(m[0]) and np.isnan(v[0]) and np.isinf(v[1])
    close(m[1:], REF.mean()[1:]); close(v[2], REF.var()[2]); close(d.mode, LOC)
    assert tp.autograd.gradgradcheck(lambda df, l, s: StudentT(df, l, s).log_prob(t64(x)),
                                     (req(DF), req(LOC), req(SCALE)))
    assert StudentT(t64(DF)).expand((2, 3)).batch_shape == (2, 3)


def test_sampling_and_gradient():
    """Moments of 40000 samples with df = 9; rsample differentiable in loc and scale."""
    tp.manual_seed(11)
    ref = stats.t(9.0, 1.0, 2.0)
    s = StudentT(t64([9.0]), t64([1.0]), t64([2.0])).rsample((40000,))
    check_moments(s, ref.mean(), ref.var(), ref.stats(moments="k"))
    f = seeded(lambda l, sc: StudentT(t64([9.0, 4.0]), l, sc).rsample((2,)))
    assert tp.autograd.gradcheck(f, (req([0.0, 1.0]), req([1.0, 2.0])))
