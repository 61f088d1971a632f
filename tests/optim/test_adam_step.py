"""The `adam_step` kernel (tensorplug.dispatch.optional_optim): the NumPy backend's loop equals the
decomposition bit for bit (float32, float64, AMSGrad, decoupled decay, both lerp forms, layouts the loop
leaves to the decomposition), both equal a float64 reference of PyTorch's algorithm over several steps,
and optim.Adam / AdamW run through it."""
from __future__ import annotations

import numpy as np
import pytest

import tensorplug as tp
from tensorplug.backends.numpy_backend import optim_loops
from tensorplug.dispatch import optional_optim

rng = np.random.default_rng(4)
K = tp.ones(1)._k


def _state(dtype, shape=(37, 5), amsgrad=False):
    p, g = (rng.standard_normal(shape).astype(dtype) for _ in range(2))
    m = (rng.standard_normal(shape) * 0.1).astype(dtype)
    v = rng.uniform(0, 0.01, shape).astype(dtype)
    vmax = (v * rng.uniform(0.5, 1.5, shape)).astype(dtype) if amsgrad else None
    return p, g, m, v, vmax


def _reference(p, g, m, v, vmax, lr, beta1, beta2, eps, decay, step):
    """PyTorch's Adam step in float64 (the same formula, no rounding between operations)."""
    p, g, m, v = (a.astype(np.float64) for a in (p, g, m, v))
    p = p * (1 - decay)
    m = m + (1 - beta1) * (g - m)
    v = v * beta2 + (1 - beta2) * g * g
    den_v = v if vmax is None else np.maximum(vmax.astype(np.float64), v)
    d = np.sqrt(den_v) / np.sqrt(1 - beta2 ** step) + eps
    return p - lr / (1 - beta1 ** step) * m / d, m, v, den_v


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("amsgrad", [False, True])
@pytest.mark.parametrize("beta1,decay", [(0.9, 0.0), (0.9, 1e-3), (0.3, 0.0)])   # 0.3: lerp's other form
def test_loop_equals_decomposition_bit_for_bit(dtype, amsgrad, beta1, decay):
    if optim_loops.kernels() is None:
        pytest.skip("numba is not installed (the fast extra) or TENSORPLUG_NUMBA=0: the loop is not used")
    a = _state(dtype, amsgrad=amsgrad)
    b = tuple(None if x is None else x.copy() for x in a)
    args = (1e-2, beta1, 0.999, 1e-8, decay)
    for step in (1, 2, 3):
        K["adam_step"](*a, *args, step)
        optional_optim.adam_step(K, *b, *args, step)
    for x, y in zip(a, b):
        if x is not None:
            np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("layout", ["transposed", "mixed dtype"])
def test_other_layouts_take_the_decomposition(layout):
    p, g, m, v, _ = _state(np.float32, (6, 8))
    if layout == "transposed":
        p = np.ascontiguousarray(p.T).T                  # F-ordered parameter: the decomposition's path
    else:
        g = g.astype(np.float64)
    want = _reference(p, g, m, v, None, 1e-2, 0.9, 0.999, 1e-8, 0.0, 1)
    K["adam_step"](p, g, m, v, None, 1e-2, 0.9, 0.999, 1e-8, 0.0, 1)
    np.testing.assert_allclose(p, want[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(m, want[1], rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("amsgrad", [False, True])
def test_values_against_float64_reference(amsgrad):
    p, g, m, v, vmax = _state(np.float64, amsgrad=amsgrad)
    want = _reference(p, g, m, v, vmax, 3e-3, 0.8, 0.99, 1e-8, 2e-4, 4)
    K["adam_step"](p, g, m, v, vmax, 3e-3, 0.8, 0.99, 1e-8, 2e-4, 4)
    np.testing.assert_allclose(p, want[0], rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(m, want[1], rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(v, want[2], rtol=1e-13, atol=1e-18)
    if amsgrad:
        np.testing.assert_allclose(vmax, want[3], rtol=1e-13, atol=1e-18)


def test_nan_in_v_propagates_through_amsgrad_maximum():
    p, g, m, v, vmax = _state(np.float32, (4,), amsgrad=True)
    g[1] = np.nan
    K["adam_step"](p, g, m, v, vmax, 1e-2, 0.9, 0.999, 1e-8, 0.0, 1)
    assert np.isnan(vmax[1]) and np.isnan(p[1]) and np.isfinite(p[[0, 2, 3]]).all()


@pytest.mark.parametrize("cls,kw", [(tp.optim.Adam, {}), (tp.optim.Adam, {"amsgrad": True, "weight_decay": 0.1}),
                                    (tp.optim.AdamW, {"weight_decay": 0.05})])
def test_optimizers_over_steps(cls, kw):
    """Three steps of the optimizer on a float32 parameter against the float64 reference of each step."""
    p0 = rng.standard_normal((5, 3)).astype(np.float32)
    w = tp.tensor(p0.copy(), requires_grad=True)
    opt = cls([w], lr=1e-2, **kw)
    ref_p, m, v, vmax = p0.astype(np.float64), np.zeros((5, 3)), np.zeros((5, 3)), np.zeros((5, 3))
    amsgrad, wd = kw.get("amsgrad", False), kw.get("weight_decay", 0.01 if cls is tp.optim.AdamW else 0.0)
    for step in (1, 2, 3):
        gn = rng.standard_normal((5, 3)).astype(np.float32)
        w.grad = tp.tensor(gn)
        opt.step()
        g = gn.astype(np.float64)
        decay = 1e-2 * wd if cls is tp.optim.AdamW else 0.0
        if cls is tp.optim.Adam and wd:
            g = g + wd * ref_p
        ref_p, m, v, den = _reference(ref_p, g, m, v, vmax if amsgrad else None, 1e-2, 0.9, 0.999, 1e-8, decay, step)
        vmax = den
        np.testing.assert_allclose(w.detach().numpy(), ref_p, rtol=2e-5, atol=2e-6)
