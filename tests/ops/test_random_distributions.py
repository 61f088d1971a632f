"""_standard_gamma, _sample_dirichlet, poisson, binomial and the in-place samplers cauchy_, log_normal_,
geometric_ (core/ops/random_distributions.py), checked against SciPy's distributions at fixed seeds:
moments within 5 standard errors, a KS or chi-square test, reproducibility, dtypes, PyTorch's errors,
and the reparameterised gradients against finite differences of SciPy's inverse CDFs (float64)."""
import math

import numpy as np
import pytest
from scipy import special, stats

import tensorplug as torch
from tensorplug.dispatch import optional_random

N = 20000


def _cpu_table():
    return torch.zeros(1)._k


def _ks_ok(v, cdf):
    # a fixed seed makes the statistic a fixed number: p > 1e-3 is a check that cannot flake
    assert stats.kstest(v, cdf).pvalue > 1e-3


def _chi2_ok(v, pmf):
    """Pearson's chi-square over bins with expected count >= 20 (the tail pooled), p > 1e-3."""
    ks = np.arange(int(v.max()) + 1)
    e = len(v) * pmf(ks)
    keep = e >= 20
    o = np.bincount(v.astype(np.int64), minlength=ks.size)[:ks.size]
    obs, exp = np.append(o[keep], len(v) - o[keep].sum()), np.append(e[keep], len(v) - e[keep].sum())
    assert stats.chisquare(obs, exp).pvalue > 1e-3


def _moments_ok(v, mean, var):
    assert abs(v.mean() - mean) <= 5 * math.sqrt(var / len(v))


# -- gamma -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("alpha", [0.05, 0.6, 1.0, 3.5, 80.0])
def test_standard_gamma_matches_scipy(alpha):
    """Gamma(alpha, 1) samples: mean, variance, KS against scipy.stats.gamma."""
    torch.manual_seed(1)
    v = torch._standard_gamma(torch.full((N,), alpha, dtype=torch.float64)).numpy()
    _moments_ok(v, alpha, alpha)
    assert abs(v.var() - alpha) <= 5 * math.sqrt((2 * alpha ** 2 + 6 * alpha) / N)
    _ks_ok(v, stats.gamma(alpha).cdf)


@pytest.mark.parametrize("alpha", [0.05, 0.6, 3.5, 80.0])
def test_standard_gamma_decomposition_matches_scipy(alpha):
    """The rejection sampler other backends run (in primitives), on the NumPy backend's table."""
    K = _cpu_table()
    v = np.asarray(optional_random.standard_gamma(K, K["rng_new"](2), np.full(N, alpha)))
    _moments_ok(v, alpha, alpha)
    _ks_ok(v, stats.gamma(alpha).cdf)


def test_standard_gamma_edge_values_dtypes_and_shapes():
    """alpha <= 0 or NaN gives the smallest normal float, inf gives inf; float32 stays float32."""
    a = torch.tensor([-1.0, 0.0, float("nan"), float("inf"), 1e-30, 2.0])
    s = torch._standard_gamma(a)
    tiny = np.finfo(np.float32).tiny
    assert s.dtype is torch.float32 and s.shape == (6,)
    assert s[:3].tolist() == [tiny] * 3 and s[3].item() == math.inf and s[4].item() == tiny and s[5].item() > 0
    assert torch._standard_gamma(torch.tensor(2.0, dtype=torch.float64)).shape == ()
    assert torch._standard_gamma(torch.ones(0, 3)).shape == (0, 3)


def test_standard_gamma_errors():
    with pytest.raises(NotImplementedError, match="\"gamma_cpu\" not implemented for 'Long'"):
        torch._standard_gamma(torch.tensor([1, 2]))
    with pytest.raises(NotImplementedError, match="'Half'"):
        torch._standard_gamma(torch.ones(2, dtype=torch.float16))
    with pytest.raises(TypeError, match="must be Tensor"):
        torch._standard_gamma([1.0])


# -- reparameterised gradients ------------------------------------------------------------------------------
def _icdf_gamma_grad(a, u):
    h = 1e-5 * a
    return (special.gammaincinv(a + h, u) - special.gammaincinv(a - h, u)) / (2 * h)


@pytest.mark.parametrize("alpha", [0.01, 0.3, 1.0, 4.0, 60.0, 300.0, 2000.0, 1e5])
def test_standard_gamma_grad_is_the_inverse_cdf_derivative(alpha):
    """d x / d alpha at fixed u = F(x; alpha), against central differences of SciPy's gammaincinv."""
    u = np.array([1e-3, 0.1, 0.5, 0.9, 0.999])
    x = special.gammaincinv(alpha, u)
    got = torch._standard_gamma_grad(torch.full((5,), alpha, dtype=torch.float64),
                                     torch.tensor(x, dtype=torch.float64)).numpy()
    # the series (x <= 500) is exact to rounding; Wilson-Hilferty above stays within 2e-5; at alpha 0.01
    # x reaches 1e-296, where differences of gammaincinv itself are good to ~1e-5
    rtol = 2e-5 if x.max() > 500 or alpha < 0.1 else 1e-6
    np.testing.assert_allclose(got, _icdf_gamma_grad(alpha, u), rtol=rtol)


def test_standard_gamma_backward_and_float32():
    """backward of a sample is _standard_gamma_grad(alpha, sample); float32 in, float32 gradient."""
    a = torch.tensor([0.5, 1.0, 2.0, 9.0], requires_grad=True)
    torch.manual_seed(3)
    s = torch._standard_gamma(a)
    assert s.grad_fn.name() == "StandardGammaBackward0"
    (s * torch.tensor([1.0, 2.0, 3.0, 4.0])).sum().backward()
    a64, s64 = a.detach().numpy().astype(np.float64), s.detach().numpy().astype(np.float64)
    ref = _icdf_gamma_grad(a64, special.gammainc(a64, s64))
    assert a.grad.dtype is torch.float32
    np.testing.assert_allclose(a.grad.numpy(), ref * [1, 2, 3, 4], rtol=1e-4)
    with pytest.raises(RuntimeError, match="Found dtype Float but expected Long"):
        torch._standard_gamma_grad(torch.tensor([1, 2]), torch.tensor([0.3, 1.0]))
    with pytest.raises(RuntimeError, match="must match the size"):
        torch._standard_gamma_grad(torch.ones(3), torch.ones(2))


def _icdf_beta_grad(x, a, b):
    u = special.betainc(a, b, x)
    h = 1e-6 * a
    return (special.betaincinv(a + h, b, u) - special.betaincinv(a - h, b, u)) / (2 * h)


@pytest.mark.parametrize("x,alpha,total", [(0.2, 0.5, 3.5), (0.3, 1.0, 3.5), (0.5, 2.0, 3.5), (0.9, 2.0, 3.0),
                                           (0.01, 0.1, 50.0), (0.6, 30.0, 60.0), (0.99, 5.0, 5.5),
                                           (1e-5, 0.01, 0.02), (0.3, 200.0, 700.0)])
def test_dirichlet_grad_is_the_beta_inverse_cdf_derivative(x, alpha, total):
    """_dirichlet_grad(x, alpha, total) * (1 - x) = d x / d alpha at fixed u and beta = total - alpha."""
    f64 = lambda v: torch.tensor([v], dtype=torch.float64)  # noqa: E731
    got = torch._dirichlet_grad(f64(x), f64(alpha), f64(total)).item()
    np.testing.assert_allclose(got * (1 - x), _icdf_beta_grad(x, alpha, total - alpha), rtol=1e-6)


def test_dirichlet_grad_values_dtype_and_errors():
    """PyTorch's values for a float32 example (0.4998, 0.3780, 0.3183), broadcasting total."""
    g = torch._dirichlet_grad(torch.tensor([0.2, 0.3, 0.5]), torch.tensor([0.5, 1.0, 2.0]), torch.tensor([3.5]))
    assert g.dtype is torch.float32
    np.testing.assert_allclose(g.numpy(), [0.4998, 0.3780, 0.3183], atol=1e-4)
    with pytest.raises(RuntimeError, match="Found dtype Float but expected Double"):
        torch._dirichlet_grad(torch.ones(3, dtype=torch.float64) / 3, torch.ones(3), torch.ones(3) * 3)


# -- dirichlet ----------------------------------------------------------------------------------------------
def test_sample_dirichlet_marginals_are_beta():
    """Rows sum to 1, each coordinate is Beta(alpha_i, sum - alpha_i) (KS), the output does not
    differentiate (as PyTorch, whose Dirichlet.rsample goes through _dirichlet_grad)."""
    alpha = np.array([0.4, 1.0, 3.0])
    torch.manual_seed(4)
    d = torch._sample_dirichlet(torch.tensor(np.tile(alpha, (N, 1))))
    v = d.numpy()
    assert d.dtype is torch.float64 and d.shape == (N, 3)
    np.testing.assert_allclose(v.sum(1), 1.0, rtol=1e-12)
    for i, a in enumerate(alpha):
        _ks_ok(v[:, i], stats.beta(a, alpha.sum() - a).cdf)
    assert torch._sample_dirichlet(torch.tensor(2.0)).item() == 1.0
    assert torch._sample_dirichlet(torch.tensor([-1.0, 2.0])).tolist() == [np.finfo(np.float32).tiny, 1.0]
    a = torch.tensor([1.0, 2.0], requires_grad=True)
    out = torch._sample_dirichlet(a)
    assert out.requires_grad
    with pytest.raises(RuntimeError, match="derivative for aten::_sample_dirichlet is not implemented"):
        out.sum().backward()
    with pytest.raises(NotImplementedError, match="\"dirichlet\" not implemented for 'Long'"):
        torch._sample_dirichlet(torch.tensor([1, 2]))


# -- poisson -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("rate", [0.3, 4.0, 9.9, 10.0, 55.0])
def test_poisson_matches_scipy(rate):
    """Both sides of the algorithm switch at rate 10, native and decomposed: chi-square against the pmf."""
    torch.manual_seed(5)
    v = torch.poisson(torch.full((N,), rate, dtype=torch.float64)).numpy()
    K = _cpu_table()
    w = np.asarray(optional_random.poisson(K, K["rng_new"](5), np.full(N, rate)))
    for s in (v, w):
        _moments_ok(s, rate, rate)
        _chi2_ok(s, stats.poisson(rate).pmf)


def test_poisson_dtypes_edges_grad_and_errors():
    assert torch.poisson(torch.zeros(5)).tolist() == [0.0] * 5
    assert torch.poisson(torch.tensor([float("inf"), 1e20])).tolist() == [-2.0 ** 63] * 2    # as PyTorch
    for dt in (torch.float16, torch.bfloat16, torch.float32):
        assert torch.poisson(torch.full((3,), 2.0, dtype=dt)).dtype is dt
    big = torch.poisson(torch.full((N,), 1e7, dtype=torch.float64)).numpy()
    _moments_ok(big, 1e7, 1e7)
    r = torch.tensor([1.0, 3.0], requires_grad=True)
    out = torch.poisson(r)
    assert out.grad_fn.name() == "PoissonBackward0"
    out.sum().backward()
    assert r.grad.tolist() == [0.0, 0.0]
    for bad in (-1.0, float("nan")):
        with pytest.raises(RuntimeError, match="invalid Poisson rate, expected rate to be non-negative"):
            torch.poisson(torch.tensor([1.0, bad]))
    with pytest.raises(NotImplementedError, match="\"poisson_cpu\" not implemented for 'Long'"):
        torch.poisson(torch.tensor([1, 2]))
    with pytest.raises(TypeError, match="must be Tensor"):
        torch.poisson([1.0])


# -- binomial ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("n,p", [(10, 0.3), (5, 0.9), (40, 0.25), (60, 0.5), (300, 0.8)])
def test_binomial_matches_scipy(n, p):
    """Inversion (n p < 10) and BTRS, p above and below 1/2, native and decomposed: chi-square."""
    torch.manual_seed(6)
    c, q = torch.full((N,), float(n), dtype=torch.float64), torch.full((N,), p, dtype=torch.float64)
    v = torch.binomial(c, q).numpy()
    K = _cpu_table()
    w = np.asarray(optional_random.binomial(K, K["rng_new"](6), np.full(N, float(n)), np.full(N, p)))
    for s in (v, w):
        assert s.min() >= 0 and s.max() <= n
        _moments_ok(s, n * p, n * p * (1 - p))
        _chi2_ok(s, stats.binom(n, p).pmf)


def test_binomial_large_count_edges_broadcast_and_errors():
    K = _cpu_table()
    w = np.asarray(optional_random.binomial(K, K["rng_new"](7), np.full(N, 1e6), np.full(N, 0.3)))
    _moments_ok(w, 3e5, 2.1e5)
    out = torch.binomial(torch.tensor([0.0, 12.0, 12.0, 10.0, 5.0, float("inf"), float("nan"), -3.0]),
                         torch.tensor([0.5, 0.0, 1.0, 1.5, -0.2, 0.5, 0.5, 0.5]))
    assert out.tolist()[:6] == [0.0, 0.0, 12.0, 10.0, 0.0, math.inf] and math.isnan(out[6].item())
    assert out[7].item() == 0.0
    assert torch.binomial(torch.ones(1, 3) * 4, torch.full((2, 1), 0.5)).shape == (2, 3)
    p = torch.tensor([0.5, 0.2], requires_grad=True)
    s = torch.binomial(torch.tensor([10.0, 5.0]), p)
    with pytest.raises(RuntimeError, match="derivative for aten::binomial is not implemented"):
        s.sum().backward()
    with pytest.raises(ValueError, match="binomial only supports floating-point dtypes for count, got: Long"):
        torch.binomial(torch.tensor([10, 5]), torch.tensor([0.5, 0.2]))
    with pytest.raises(RuntimeError, match="Found dtype Double but expected Float"):
        torch.binomial(torch.tensor([10.0, 5.0]), torch.tensor([0.5, 0.2], dtype=torch.float64))


# -- reproducibility ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("draw", [
    lambda g: torch._standard_gamma(torch.full((50,), 0.7), generator=g),
    lambda g: torch._sample_dirichlet(torch.ones(10, 4), generator=g),
    lambda g: torch.poisson(torch.full((50,), 20.0), generator=g),
    lambda g: torch.binomial(torch.full((50,), 30.0), torch.full((50,), 0.4), generator=g),
    lambda g: torch.empty(50).cauchy_(generator=g),
    lambda g: torch.empty(50).log_normal_(generator=g),
    lambda g: torch.empty(50).geometric_(0.3, generator=g),
    lambda g: torch.empty(50).exponential_(generator=g),
], ids=["gamma", "dirichlet", "poisson", "binomial", "cauchy", "log_normal", "geometric", "exponential"])
def test_reproducible_under_manual_seed_and_generator(draw):
    torch.manual_seed(11)
    a = draw(None)
    torch.manual_seed(11)
    b = draw(None)
    c = draw(None)
    assert torch.equal(a, b) and not torch.equal(b, c)
    g1, g2 = torch.Generator().manual_seed(5), torch.Generator().manual_seed(5)
    assert torch.equal(draw(g1), draw(g2)) and not torch.equal(draw(g1), draw(torch.Generator().manual_seed(6)))


# -- in-place samplers -------------------------------------------------------------------------------------
def test_cauchy_log_normal_geometric_exponential_match_scipy():
    torch.manual_seed(8)
    _ks_ok(torch.empty(N, dtype=torch.float64).cauchy_(1.5, 0.5).numpy(), stats.cauchy(1.5, 0.5).cdf)
    _ks_ok(torch.empty(N, dtype=torch.float64).log_normal_(0.5, 0.75).numpy(),
           stats.lognorm(0.75, scale=math.exp(0.5)).cdf)
    _ks_ok(torch.empty(N, dtype=torch.float64).exponential_(2.5).numpy(), stats.expon(scale=0.4).cdf)
    g = torch.empty(N, dtype=torch.int64).geometric_(0.3)
    assert g.dtype is torch.int64 and g.min().item() >= 1
    _chi2_ok(g.numpy(), stats.geom(0.3).pmf)
    f = torch.empty(4, dtype=torch.float16).cauchy_()
    assert f.dtype is torch.float16 and torch.isfinite(f).all()
    assert torch.empty(3, dtype=torch.float32).log_normal_().dtype is torch.float32


@pytest.mark.parametrize("call,error,match", [
    (lambda: torch.empty(3).cauchy_(0, 0), RuntimeError, r"cauchy_ expects sigma > 0.0, but found sigma=0"),
    (lambda: torch.empty(3, dtype=torch.int64).cauchy_(), RuntimeError, "you specified long int"),
    (lambda: torch.empty(3).log_normal_(1, -1), RuntimeError, r"log_normal_ expects std > 0.0, but found std=-1"),
    (lambda: torch.empty(3, dtype=torch.int64).log_normal_(), NotImplementedError, "\"log_normal_cpu\""),
    (lambda: torch.empty(3).geometric_(1), RuntimeError, r"geometric_ expects p to be in \(0, 1\), but got p=1"),
    (lambda: torch.empty(3).geometric_(-0.5), RuntimeError, "but got p=-0.5"),
    (lambda: torch.empty(3, dtype=torch.bool).geometric_(0.3), NotImplementedError, "'Bool'"),
    (lambda: torch.empty(3).exponential_(0), RuntimeError, r"exponential_ expects lambda > 0.0, but found lambda=0"),
    (lambda: torch.empty(3, dtype=torch.int64).exponential_(), RuntimeError, "you specified Long"),
    (lambda: torch.empty(3).uniform_(2, 1), RuntimeError, r"\[from, to\) range, but found from=2 > to=1"),
    (lambda: torch.empty(3, dtype=torch.int64).uniform_(), NotImplementedError, "check_uniform_bounds"),
    (lambda: torch.empty(3).normal_(0, -1), RuntimeError, "normal expects std >= 0.0, but found std -1"),
    (lambda: torch.empty(3, dtype=torch.int64).normal_(), NotImplementedError, "\"normal_kernel_cpu\""),
])
def test_in_place_sampler_errors(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_in_place_samplers_keep_the_other_methods():
    """uniform_, normal_, random_, bernoulli_ exist and fill in place with values in range."""
    t = torch.empty(1000)
    assert t.uniform_(2, 3) is t and 2 <= t.min().item() and t.max().item() < 3
    assert t.normal_(5, 0.0).tolist() == [5.0] * 1000
    r = torch.empty(1000, dtype=torch.int64).random_(3, 7)
    assert set(r.tolist()) == {3, 4, 5, 6}
    assert set(torch.empty(1000).bernoulli_(0.5).tolist()) == {0.0, 1.0}
