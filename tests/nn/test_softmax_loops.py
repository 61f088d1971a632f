"""The NumPy backend's numba log_softmax loops (backends/numpy_backend/softmax_loops.py): float32 rows
through both paths (transformer.py's NumPy formula, the loops) against float64 references, rows far
below their block's largest logit, non-finite rows (the formula's results on both paths), and the
gradient through the frontend."""
from __future__ import annotations

import numpy as np
import pytest

import tensorplug as tp
import tensorplug.nn.functional as F
from tensorplug.backends.numpy_backend import softmax_loops
from tensorplug.backends.numpy_backend import transformer as nptr

from _numba_paths import loops_fixture

path = loops_fixture(softmax_loops, "numpy formula")
rng = np.random.default_rng(11)


def ref(x, g):
    """float64 log_softmax of x's rows and its gradient for the output gradient g."""
    x = x.astype(np.float64)
    m = x.max(axis=1, keepdims=True)
    y = x - m - np.log(np.exp(x - m).sum(axis=1, keepdims=True))
    return y, g - np.exp(y) * g.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("m,c", [(1, 1), (9, 5), (768, 65), (300, 1000)])   # (300, 1000): two blocks
@pytest.mark.parametrize("spread", [0.0, 120.0])
def test_float32_values_and_gradient(m, c, spread, path):
    """Rows 0-`spread` below the block's largest logit: within 20 of it shifted by it, the others by their
    own maximum; the results equal the float64 reference to float32 rounding either way."""
    x = (rng.standard_normal((m, c)) * 3).astype(np.float32)
    x += rng.uniform(-spread, 0, (m, 1)).astype(np.float32)
    g = rng.standard_normal((m, c)).astype(np.float32)
    y = nptr.log_softmax(x, 1)
    want_y, want_d = ref(x, g.astype(np.float64))
    assert y.dtype == np.float32 and y.shape == (m, c)
    np.testing.assert_allclose(y, want_y, rtol=2e-6, atol=4e-6)
    d = nptr.log_softmax_backward(g, y, 1)
    assert d.dtype == np.float32
    np.testing.assert_allclose(d, want_d, rtol=2e-5, atol=2e-5 * np.abs(want_d).max())
    loops = softmax_loops.kernels()
    if loops is not None:                  # the loop itself (a row it got wrong as -inf would hide in the fallback)
        np.testing.assert_allclose(loops["log_softmax"](x), want_y, rtol=2e-6, atol=4e-6)


def test_large_logits_keep_small_results_exact(path):
    """Logits near +-1000: the result (x - shift) - log(sum) keeps values near 0 to float32's relative
    precision (x - lse with lse rounded to float32 would lose the digits below 1000's ulp, 6e-5)."""
    x = (np.array([[1000.0, 999.5, 990.0], [-1000.0, -1000.3, -1001.0]]) + rng.uniform(0, 1, (2, 1))).astype(np.float32)
    y = nptr.log_softmax(x, 1)
    np.testing.assert_allclose(y, ref(x, np.zeros((2, 3)))[0], rtol=1e-6, atol=1e-7)


def test_backward_with_probabilities_zero_and_large_gradients(path):
    """out = -inf (probability 0) and gradients of 1e30: the same elementwise rules as the formula."""
    with np.errstate(divide="ignore"):
        out = np.log(np.array([[0.5, 0.5, 0.0], [0.2, 0.3, 0.5]], dtype=np.float32))
    g = np.array([[1.0, 2.0, 3.0], [1e30, -1e30, 1e30]], dtype=np.float32)
    d = nptr.log_softmax_backward(g, out, 1)
    want = g.astype(np.float64) - np.exp(out.astype(np.float64)) * g.astype(np.float64).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(d, want, rtol=1e-6)


def test_frontend_float32_log_softmax_and_gradient(path):
    """F.log_softmax over the last dim of a 3-d float32 tensor, and its gradient, against float64."""
    xn = (rng.standard_normal((3, 5, 70)) * 4).astype(np.float32)
    gn = rng.standard_normal((3, 5, 70)).astype(np.float32)
    x = tp.tensor(xn, requires_grad=True)
    y = F.log_softmax(x, dim=-1)
    y.backward(tp.tensor(gn))
    want_y, want_d = ref(xn.reshape(-1, 70), gn.reshape(-1, 70).astype(np.float64))
    np.testing.assert_allclose(y.detach().numpy().reshape(-1, 70), want_y, rtol=2e-6, atol=4e-6)
    np.testing.assert_allclose(x.grad.numpy().reshape(-1, 70), want_d, rtol=2e-5, atol=2e-5)


def sref(x, g):
    """float64 softmax of x's rows and its gradient for the output gradient g."""
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    y = e / e.sum(axis=1, keepdims=True)
    return y, y * (g - (g * y).sum(axis=1, keepdims=True))


@pytest.mark.parametrize("m,c", [(1, 1), (512, 16), (768, 65), (300, 1000)])
@pytest.mark.parametrize("spread", [0.0, 120.0])
def test_softmax_values_and_gradient(m, c, spread, path):
    x = (rng.standard_normal((m, c)) * 3).astype(np.float32)
    x += rng.uniform(-spread, 0, (m, 1)).astype(np.float32)
    if c >= 16:                                  # a causal mask's -inf entries (makemore's bag of words)
        x[:, c // 2:] = np.where(rng.random((m, c - c // 2)) < 0.5, -np.inf, x[:, c // 2:])
    g = rng.standard_normal((m, c)).astype(np.float32)
    y = nptr.softmax(x, 1)
    want_y, want_d = sref(x, g.astype(np.float64))
    assert y.dtype == np.float32
    np.testing.assert_allclose(y, want_y, rtol=2e-6, atol=1e-7)
    d = nptr.softmax_backward(g, y, 1)
    np.testing.assert_allclose(d, want_d, rtol=2e-5, atol=2e-6)
    loops = softmax_loops.kernels()
    if loops is not None:                  # the loop itself (a row it got wrong as 0 / 0 would hide in the fallback)
        np.testing.assert_allclose(loops["softmax"](x), want_y, rtol=2e-6, atol=1e-7)


@pytest.mark.parametrize("kind", ["log_softmax", "softmax"])
@pytest.mark.parametrize("row", ["inf", "nan", "all -inf"])
def test_non_finite_rows_give_the_formulas_results(kind, row, monkeypatch):
    """A row holding +inf / NaN, or all -inf: the loops hand the forward back to the formula, so both
    paths give the same values (NaN where the formula gives NaN), and the other rows are unaffected."""
    if softmax_loops.kernels() is None:
        pytest.skip("numba is not installed (the fast extra) or TENSORPLUG_NUMBA=0: the loops are not used")
    x = rng.standard_normal((4, 6)).astype(np.float32)
    x[1] = {"inf": [np.inf, 0, 1, 2, 3, 4], "nan": [np.nan, 0, 1, 2, 3, 4], "all -inf": [-np.inf] * 6}[row]
    assert softmax_loops.kernels()[kind](x) is None
    fast = getattr(nptr, kind)(x, 1)
    monkeypatch.setitem(softmax_loops._state, "k", None)
    with np.errstate(invalid="ignore"):
        slow = getattr(nptr, kind)(x, 1)
    np.testing.assert_array_equal(fast, slow)
    keep = [0, 2, 3]
    want = (ref if kind == "log_softmax" else sref)(x[keep], np.zeros((3, 6)))[0]
    np.testing.assert_allclose(fast[keep], want, rtol=2e-6, atol=4e-6 if kind == "log_softmax" else 1e-7)


def test_frontend_float32_softmax_gradient(path):
    xn = (rng.standard_normal((4, 3, 20)) * 2).astype(np.float32)
    gn = rng.standard_normal((4, 3, 20)).astype(np.float32)
    x = tp.tensor(xn, requires_grad=True)
    F.softmax(x, dim=-1).backward(tp.tensor(gn))
    np.testing.assert_allclose(x.grad.numpy().reshape(-1, 20), sref(xn.reshape(-1, 20), gn.reshape(-1, 20))[1],
                               rtol=2e-5, atol=2e-6)
