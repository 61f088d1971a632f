"""The NumPy backend's numba cross-entropy loops (backends/numpy_backend/loss_loops.py): float32 logits
with class-index targets through both paths (loss.py's blocked NumPy kernels, the loops) against the
float64 reference of test_cross_entropy_fused, the non-finite rows that send a call back to NumPy, and
gradients through the frontend."""
from __future__ import annotations

import numpy as np
import pytest

import tensorplug as tp
import tensorplug.nn.functional as F
from tensorplug.backends.numpy_backend import loss as nploss
from tensorplug.backends.numpy_backend import loss_loops

from _numba_paths import loops_fixture
from test_cross_entropy_fused import ref

loss_path = loops_fixture(loss_loops, "numpy blocks")
rng = np.random.default_rng(7)


@pytest.mark.parametrize("m,c", [(1, 1), (9, 5), (768, 65), (40, 3000)])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("ignored", [False, True])
def test_float32_values_and_gradient(m, c, reduction, weighted, ignored, loss_path):
    x = (rng.standard_normal((m, c)) * 4).astype(np.float32)
    x[0] += 60                                   # a row of large logits: the shift by its maximum matters
    t = rng.integers(0, c, m)
    if ignored and m > 1:
        t[1::3] = -100
    w = rng.uniform(0.2, 2.0, c).astype(np.float32) if weighted else None
    loss, lse, denom = nploss.cross_entropy_loss(x, t, w, -100, 0.0, reduction)
    want, want_dx = ref(x, t, w, -100, 0.0, reduction)
    assert loss.dtype == lse.dtype == np.float32
    np.testing.assert_allclose(loss, want, rtol=3e-6, atol=3e-6)
    g = rng.standard_normal(m).astype(np.float32) if reduction == "none" else np.float32(0.7)
    dx = nploss.cross_entropy_loss_backward(g, x, t, w, lse, denom, -100, 0.0, reduction)
    scale = g[:, None] if reduction == "none" else g
    assert dx.dtype == np.float32 and dx.shape == (m, c)
    want_dx = want_dx * scale
    # the target's p - 1 cancels: float32's error in x - lse (~eps |x|) is absolute, on the gradient's scale
    np.testing.assert_allclose(dx, want_dx, rtol=2e-5, atol=1e-5 * np.abs(want_dx).max())
    if ignored and m > 1:
        assert not dx[1::3].any()


@pytest.mark.parametrize("m,c", [(64, 65), (300, 1000)])     # (300, 1000): two blocks of rows
def test_rows_spread_below_the_block_top(m, c, loss_path):
    """Rows whose logits sit 0-120 below the block's largest: those within 20 of it are shifted by it,
    the others by their own maximum (no row loses its small terms to underflow)."""
    x = rng.standard_normal((m, c)).astype(np.float32)
    x += rng.uniform(-120, 0, (m, 1)).astype(np.float32)
    x[m // 2, 3] = 30.0                         # the top of the second block when there are two
    t = rng.integers(0, c, m)
    loss, lse, denom = nploss.cross_entropy_loss(x, t, None, -100, 0.0, "none")
    want, want_dx = ref(x, t, None, -100, 0.0, "none")
    want_lse = want + x.astype(np.float64)[np.arange(m), t]
    np.testing.assert_allclose(lse, want_lse, rtol=2e-6, atol=2e-6)
    np.testing.assert_allclose(loss, want, rtol=3e-6, atol=3e-5)
    dx = nploss.cross_entropy_loss_backward(np.ones(m, np.float32), x, t, None, lse, denom, -100, 0.0, "none")
    np.testing.assert_allclose(dx, want_dx, rtol=2e-5, atol=1e-7)
    loops = loss_loops.kernels()
    if loops is not None:                       # the loop itself (a non-finite row would hide in the fallback)
        np.testing.assert_allclose(loops["lse"](x), want_lse, rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("row", ["inf", "nan", "all -inf"])
def test_non_finite_rows_take_numpy_rules(row, loss_path):
    """A +inf / NaN logit or a row of -inf gives the same loss and gradient on both paths (the loops hand
    the call back to loss.py); in an ignored row it counts as nothing."""
    x = rng.standard_normal((5, 4)).astype(np.float32)
    x[2] = {"inf": [np.inf, 0, 1, 2], "nan": [np.nan, 0, 1, 2], "all -inf": [-np.inf] * 4}[row]
    t = np.array([0, 1, 3, 2, 1])
    loss, lse, denom = nploss.cross_entropy_loss(x, t, None, -100, 0.0, "none")
    dx = nploss.cross_entropy_loss_backward(np.ones(5, np.float32), x, t, None, lse, denom, -100, 0.0, "none")
    keep = [0, 1, 3, 4]
    want, want_dx = ref(x[keep], t[keep], None, -100, 0.0, "none")
    np.testing.assert_allclose(loss[keep], want, rtol=3e-6, atol=3e-6)
    np.testing.assert_allclose(dx[keep], want_dx, rtol=2e-5, atol=1e-7)
    assert not np.isfinite(loss[2])
    t[2] = -100
    loss, lse, denom = nploss.cross_entropy_loss(x, t, None, -100, 0.0, "mean")
    dx = nploss.cross_entropy_loss_backward(np.float32(1), x, t, None, lse, denom, -100, 0.0, "mean")
    want, want_dx = ref(x[keep], t[keep], None, -100, 0.0, "mean")
    np.testing.assert_allclose(loss, want, rtol=3e-6)
    np.testing.assert_allclose(dx[keep], want_dx, rtol=2e-5, atol=1e-7)
    assert not dx[2].any()


def test_backward_loop_rejects_target_outside_classes():
    loops = loss_loops.kernels()
    if loops is None:
        pytest.skip("numba is not installed (the fast extra) or TENSORPLUG_NUMBA=0: the loops are not used")
    x = np.zeros((3, 4), np.float32)
    lse, a = loops["lse"](x), np.ones(3, np.float32)
    with pytest.raises(IndexError, match="outside"):
        loops["backward"](x, lse, a, np.array([0, 4, 1]), a)


def test_frontend_gradient_against_finite_differences(loss_path):
    """d mean cross_entropy / d logits of float32 logits through autograd, against central differences of
    the float64 reference loss."""
    x = rng.standard_normal((6, 5))
    t = np.array([4, 0, -100, 2, 2, 1])
    w = rng.uniform(0.5, 1.5, 5)
    xt = tp.tensor(x.astype(np.float32), requires_grad=True)
    F.cross_entropy(xt, tp.tensor(t), weight=tp.tensor(w.astype(np.float32))).backward()
    h, fd = 1e-6, np.empty_like(x)
    for idx in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[idx] = h
        fd[idx] = (ref(x + e, t, w, -100, 0.0, "mean")[0] - ref(x - e, t, w, -100, 0.0, "mean")[0]) / (2 * h)
    np.testing.assert_allclose(xt.grad.numpy(), fd, rtol=1e-4, atol=1e-6)
