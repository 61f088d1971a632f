"""Chi2 against scipy.stats.chi2."""
import numpy as np
from scipy import stats

import tensorplug as tp
from tensorplug.distributions import Chi2

from ._helpers import check_scipy_moments, close, req, t64

DF = np.array([1.0, 4.0, 11.0])
REF = stats.chi2(DF)


def test_values_against_scipy():
    """log_prob, entropy, moments; df round-trips; expand keeps the class."""
    d = Chi2(t64(DF))
    x = np.array([0.3, 2.0, 12.0])
    close(d.log_prob(t64(x)), REF.logpdf(x)); close(d.entropy(), REF.entropy())
    close(d.mean, REF.mean()); close(d.variance, REF.var()); close(d.df, DF)
    e = d.expand((2, 3))
    assert isinstance(e, Chi2) and e.df.shape == (2, 3)
    assert Chi2(3.0).batch_shape == ()
    assert tp.autograd.gradgradcheck(lambda df: Chi2(df).log_prob(t64(x)), (req(DF),))


def test_sampling():
    """Moments of 20000 samples."""
    tp.manual_seed(8)
    check_scipy_moments(Chi2(t64(DF)).sample((20000,)), REF)


def test_cdf_against_scipy():
    """cdf (Gamma's, through gammainc) matches scipy.stats.chi2.cdf."""
    x = np.array([0.3, 2.0, 12.0])
    close(Chi2(t64(DF)).cdf(t64(x)), REF.cdf(x), rtol=1e-12)
