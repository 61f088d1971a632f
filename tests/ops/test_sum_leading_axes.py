"""The NumPy backend's sum over the leading (and trailing) axes of a C-contiguous float array (a bias
gradient, batch_norm's per-channel sums) as GEMVs: values against float64 for every shape of keepdims /
axes it takes, the cases it leaves to np.add.reduce, NaN and inf, and the frontend's bias gradient."""
from __future__ import annotations

import numpy as np
import pytest

import tensorplug as tp
from tensorplug.backends.numpy_backend import kernels as npk

rng = np.random.default_rng(5)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape,axes", [((700, 300), (0,)), ((12, 64, 256), (0, 1)), ((16, 8, 40), (0,)),
                                        ((64, 2, 3, 20), (0, 1)), ((8, 512, 2, 2), (0, 2, 3)),
                                        ((8, 64, 16, 16), (0, 2, 3)), ((1, 64, 16, 16), (0, 2, 3)),
                                        ((1, 4096), (0,)), ((4, 6, 5, 7, 9), (0, 1, 4)), ((64, 3, 200), (0, 2))])
@pytest.mark.parametrize("keepdims", [False, True])
def test_leading_axes_sum_equals_reference(dtype, shape, axes, keepdims):
    x = rng.standard_normal(shape).astype(dtype)
    got = npk._sum(x, axes, keepdims)
    want = x.astype(np.float64).sum(axis=axes, keepdims=keepdims)
    assert got.dtype == dtype and got.shape == want.shape
    assert not np.shares_memory(got, x)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.sqrt(np.prod([shape[a] for a in axes])))


@pytest.mark.parametrize("case", ["transposed", "trailing axes", "middle axis", "axes with a gap", "float16",
                                  "int64", "small", "dtype"])
def test_other_sums_are_numpys(case):
    """Sums the GEMV does not take give exactly np.add.reduce's result."""
    x = rng.standard_normal((64, 128)).astype(np.float32)
    axes, kw = (0,), {}
    if case == "transposed":
        x = x.T
    elif case == "trailing axes":
        axes = (1,)
    elif case == "middle axis":
        x, axes = x.reshape(8, 8, 128), (1,)
    elif case == "axes with a gap":
        x, axes = x.reshape(8, 8, 16, 8), (0, 2)
    elif case == "float16":
        x = x.astype(np.float16)
    elif case == "int64":
        x = (x * 100).astype(np.int64)
    elif case == "small":
        x = x[:4]
    else:
        kw = {"dtype": np.dtype(np.float64)}
    got = npk._sum(x, axes, False, **kw)
    want = np.add.reduce(x, axis=axes, dtype=kw.get("dtype", x.dtype))
    np.testing.assert_array_equal(got, want)
    assert got.dtype == want.dtype


def test_nan_and_inf_propagate():
    x = np.ones((100, 60), np.float32)
    x[3, 0], x[5, 1], x[7, 2], x[9, 2] = np.nan, np.inf, np.inf, -np.inf
    got = npk._sum(x, (0,), False)
    assert np.isnan(got[0]) and got[1] == np.inf and np.isnan(got[2])
    assert (got[3:] == 100).all()


def test_linear_bias_gradient():
    """linear's bias gradient (the rows of the output gradient summed) against float64."""
    x = tp.tensor(rng.standard_normal((500, 20)).astype(np.float32))
    w = tp.tensor(rng.standard_normal((30, 20)).astype(np.float32), requires_grad=True)
    b = tp.tensor(rng.standard_normal(30).astype(np.float32), requires_grad=True)
    g = rng.standard_normal((500, 30)).astype(np.float32)
    tp.nn.functional.linear(x, w, b).backward(tp.tensor(g))
    np.testing.assert_allclose(b.grad.numpy(), g.astype(np.float64).sum(0), rtol=1e-5, atol=1e-4)
