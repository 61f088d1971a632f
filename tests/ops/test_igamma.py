"""The regularized incomplete gamma functions igamma / igammac (tensorplug.special.gammainc / gammaincc)
against SciPy in float64, PyTorch's edge values, errors and the derivative in x."""
import numpy as np
import pytest
import scipy.special as sc

import tensorplug as tp

A = np.array([1e-6, 1e-3, 0.1, 0.5, 1.0, 2.5, 9.9, 10.0, 20.0, 50.0, 150.0, 1e3, 1e4, 1e5])
X = np.array([1e-8, 1e-3, 0.1, 0.5, 0.9, 1.05, 1.5, 3.0, 9.0, 10.0, 11.0, 30.0, 100.0, 1e3, 1e4, 1.1e4, 1e5, 1e6])


def _grid():
    a, x = np.meshgrid(A, X)
    return a.ravel(), x.ravel()


@pytest.mark.parametrize("fn, ref", [(tp.special.gammainc, sc.gammainc), (tp.special.gammaincc, sc.gammaincc),
                                     (tp.igamma, sc.gammainc), (tp.igammac, sc.gammaincc)])
def test_values_against_scipy_over_a_wide_range(fn, ref):
    """Relative error below 5e-13 for a from 1e-6 to 1e5 and x from 1e-8 to 1e6 (tails down to 1e-300)."""
    a, x = _grid()
    got = fn(tp.tensor(a), tp.tensor(x)).numpy()
    want = ref(a, x)
    normal = want > 1e-300
    np.testing.assert_allclose(got[normal], want[normal], rtol=5e-13, atol=0)
    np.testing.assert_allclose(got[~normal], want[~normal], rtol=0, atol=1e-300)


def test_edge_values_as_pytorch():
    """a = 0, x = 0, infinities, NaN and negative arguments give PyTorch's values; P + Q = 1 elsewhere."""
    nan, inf = float("nan"), float("inf")
    a = tp.tensor([0.0, 0.0, 1.0, inf, inf, 2.0, -1.0, 2.0, nan, 2.0, -0.0, 1.0])
    x = tp.tensor([0.0, 1.0, 0.0, 1.0, inf, inf, 1.0, -1.0, 1.0, nan, 1.0, -0.0])
    p = [nan, 1, 0, 0, nan, 1, nan, nan, nan, nan, 1, 0]
    np.testing.assert_array_equal(tp.igamma(a, x).numpy(), np.array(p, np.float32))
    np.testing.assert_array_equal(tp.igammac(a, x).numpy(), 1 - np.array(p, np.float32))
    a, x = _grid()
    total = tp.igamma(tp.tensor(a), tp.tensor(x)) + tp.igammac(tp.tensor(a), tp.tensor(x))
    np.testing.assert_allclose(total.numpy(), 1.0, rtol=0, atol=1e-14)


def test_dtypes_broadcasting_methods_and_out():
    """Float dtypes promote and broadcast; half types are rounded from the exact value; Tensor methods
    (also in place) and out= work."""
    a, x = tp.tensor([[0.5], [3.0]]), tp.tensor([0.2, 1.0, 4.0], dtype=tp.float64)
    r = tp.igamma(a, x)
    assert r.dtype == tp.float64 and r.shape == (2, 3)
    np.testing.assert_allclose(r.numpy(), sc.gammainc([[0.5], [3.0]], [0.2, 1.0, 4.0]), rtol=1e-7)
    assert tp.igamma(tp.tensor([1.0]), tp.tensor([1])).dtype == tp.float32
    h = tp.igamma(tp.tensor([1.0], dtype=tp.float16), tp.tensor([1.0], dtype=tp.float16))
    assert h.dtype == tp.float16 and h.item() == float(np.float16(sc.gammainc(1.0, 1.0)))
    t = tp.tensor([2.0, 3.0])
    np.testing.assert_allclose(t.igammac(tp.tensor([1.0, 2.0])).numpy(), sc.gammaincc([2, 3], [1, 2]), rtol=1e-6)
    t.igamma_(tp.tensor([1.0, 2.0], dtype=tp.float64))
    assert t.dtype == tp.float32
    np.testing.assert_allclose(t.numpy(), sc.gammainc([2, 3], [1, 2]), rtol=1e-6)
    out = tp.empty(2)
    tp.special.gammaincc(tp.ones(2), tp.ones(2), out=out)
    np.testing.assert_allclose(out.numpy(), np.exp(-1.0), rtol=1e-6)


def test_errors():
    """Integer, bool and complex inputs, non-tensors and shapes that do not broadcast raise as in PyTorch."""
    with pytest.raises(NotImplementedError, match="\"igamma_cpu\" not implemented for 'Long'"):
        tp.special.gammainc(tp.tensor([1, 2]), tp.tensor([1, 2]))
    with pytest.raises(NotImplementedError, match="\"igammac_cpu\" not implemented for 'Bool'"):
        tp.igammac(tp.ones(2, dtype=tp.bool), tp.ones(2, dtype=tp.bool))
    with pytest.raises(NotImplementedError, match="not implemented for 'ComplexFloat'"):
        tp.igamma(tp.ones(2, dtype=tp.complex64), tp.ones(2, dtype=tp.complex64))
    with pytest.raises(TypeError, match="argument 'other' must be Tensor, not float"):
        tp.igamma(tp.ones(1), 2.0)
    with pytest.raises(RuntimeError, match="The size of tensor a"):
        tp.igamma(tp.ones(2), tp.ones(3))


def test_gradient_in_x_only():
    """d/dx P = x^(a-1) e^-x / Gamma(a) (Q: minus that), checked by finite differences to second order;
    the derivative in a raises PyTorch's NotImplementedError at backward."""
    a = tp.tensor([0.7, 2.0, 15.0], dtype=tp.float64)
    x = tp.tensor([0.3, 2.5, 12.0], dtype=tp.float64, requires_grad=True)
    for fn in (tp.igamma, tp.igammac):
        assert tp.autograd.gradcheck(lambda v: fn(a, v), (x,))
        assert tp.autograd.gradgradcheck(lambda v: fn(a, v), (x,))
    g, = tp.autograd.grad(tp.igamma(a, x).sum(), x)
    xv, av = x.detach().numpy(), a.numpy()
    np.testing.assert_allclose(g.numpy(), np.exp((av - 1) * np.log(xv) - xv - sc.gammaln(av)), rtol=1e-13)
    edge = tp.tensor([0.0, 0.0, 0.0], dtype=tp.float64, requires_grad=True)
    g, = tp.autograd.grad(tp.igamma(tp.tensor([0.5, 1.0, 2.0], dtype=tp.float64), edge).sum(), edge)
    np.testing.assert_array_equal(g.numpy(), [np.inf, np.nan, 0.0])         # PyTorch's values at x = 0
    ar = a.clone().requires_grad_()
    with pytest.raises(NotImplementedError, match="the derivative for 'igamma: input' is not implemented."):
        tp.igamma(ar, x).sum().backward()


def test_iterations_converge_on_random_arguments(monkeypatch):
    """On 4000 random (a, x) in (0, 20)^2 every element's iteration meets its stopping test within 2000
    steps (rounding must not keep one running), and the values match SciPy."""
    import tensorplug.ops.special as S
    inner = S._iterate

    def bounded(step, state, done, limit=None):
        state = inner(step, state, done, limit=2000)
        assert bool(done(state).all()), step.__qualname__
        return state
    monkeypatch.setattr(S, "_iterate", bounded)
    rng = np.random.default_rng(0)
    a, x = rng.random(4000) * 20, rng.random(4000) * 20
    for fn, ref in ((tp.igamma, sc.gammainc), (tp.igammac, sc.gammaincc)):
        np.testing.assert_allclose(fn(tp.tensor(a), tp.tensor(x)).numpy(), ref(a, x), rtol=5e-13, atol=1e-300)
