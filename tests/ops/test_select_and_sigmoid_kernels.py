"""The NumPy backend's where (numba loops: backends/numpy_backend/select_loops.py, np.where otherwise),
sigmoid (1 / (1 + exp(-x))) and erf kernels: exact against np.where, and against float64 references."""
import math

import numpy as np
import pytest

import tensorplug as torch
from tensorplug.backends.numpy_backend import select_loops

from _numba_paths import loops_fixture

rng = np.random.default_rng(7)


def _kernels():
    return torch.zeros(1)._k


where_path = loops_fixture(select_loops, "np.where")


def _special(shape, dtype):
    x = rng.standard_normal(shape).astype(dtype)
    if np.dtype(dtype).kind == "f":
        flat = x.reshape(-1)
        flat[:6] = [np.nan, np.inf, -np.inf, -0.0, 0.0, np.finfo(dtype).tiny / 2]
    return x


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64"])
@pytest.mark.parametrize("cshape,shape", [((64, 80), (64, 80)), ((1, 1, 16, 16), (4, 3, 16, 16)),
                                          ((16, 16), (4, 3, 16, 16)), ((3, 16, 16), (4, 3, 16, 16)),
                                          ((), (50, 60)), ((6,), (6,))])
def test_where_equals_np_where(where_path, dtype, cshape, shape):
    """Every operand form (two arrays, a scalar either side, a 0-d array) and condition broadcast, bit
    for bit as np.where (NaN, infinities and signed zeros included); tiny shapes take np.where."""
    W = _kernels()["where"]
    c = np.asarray(rng.random(cshape) < 0.5)
    x, y = _special(shape, dtype), _special(shape, dtype)[::-1].copy()
    scalar = 2.5 if np.dtype(dtype).kind == "f" else np.asarray(3, dtype)
    for a, b in ((x, y), (x, scalar), (scalar, y), (np.asarray(-1.5 if dtype[0] == "f" else -2, dtype), y)):
        got, want = W(c, a, b), np.where(c, a, b)
        if where_path == "numba loops":              # the loops answer every form here but the tiny one
            assert (select_loops.kernels()["where"](c, a, b) is None) == (want.size < select_loops.MIN_ELEMENTS)
        assert got.dtype == want.dtype and got.shape == want.shape
        assert np.array_equal(got.view(np.uint8), np.ascontiguousarray(want).view(np.uint8))


def test_where_other_forms_fall_back(where_path):
    """Mixed dtypes, strided operands and a condition broadcast in a middle dimension give np.where's
    result (promotion included)."""
    W = _kernels()["where"]
    c = rng.random((40, 70)) < 0.3
    x32 = rng.standard_normal((40, 70)).astype(np.float32)
    x64 = rng.standard_normal((40, 70))
    for args in ((c, x32, x64), (c, x32.T.copy().T, x32[::-1]), (c, x32, np.float64(2.0)),
                 (c[:, :1], x32, 0.5),
                 (c.reshape(40, 1, 70), x32.reshape(40, 1, 70) * np.ones((1, 3, 1), np.float32), 0.5),
                 (c, x32.astype(np.float16), 1.0), (c, x32, 10 ** 30)):
        got, want = W(*args), np.where(*args)
        assert got.dtype == want.dtype and np.array_equal(got, want, equal_nan=True)


def test_masked_fill_and_leaky_relu_through_the_loops(where_path):
    """The frontend ops that select with where: values and gradients."""
    x = torch.tensor(rng.standard_normal((8, 4, 12, 12)).astype(np.float32), requires_grad=True)
    mask = torch.tensor(np.tril(np.ones((12, 12), bool)))[None, None]
    y = x.masked_fill(~mask, float("-inf"))
    want = np.where(np.tril(np.ones((12, 12), bool)), x.detach().numpy(), -np.inf)
    assert np.array_equal(y.detach().numpy(), want)
    y.exp().sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.exp(want), rtol=1e-6)
    x.grad = None
    z = torch.nn.functional.leaky_relu(x, 0.1)
    xd = x.detach().numpy()
    assert np.array_equal(z.detach().numpy(), np.where(xd > 0, xd, xd * np.float32(0.1)))
    z.sum().backward()
    assert np.array_equal(x.grad.numpy(), np.where(xd > 0, 1.0, np.float32(0.1)).astype(np.float32))


@pytest.mark.parametrize("dtype,rtol", [("float32", 2e-7), ("float64", 1e-15)])
def test_sigmoid_kernel_against_float64(dtype, rtol):
    """Relative accuracy down to the underflow (sigmoid(-88) in float32 is a subnormal 6e-39), exactly
    0 beyond it as PyTorch's kernel, exactly 1 far above, NaN kept; no overflow warning."""
    x = np.concatenate([np.linspace(-80, 40, 2001), [-800.0, 800.0, np.nan]]).astype(dtype)
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        got = _kernels()["sigmoid"](x)
    assert got.dtype == np.dtype(dtype)
    xf = x.astype(np.float64)
    want = 1 / (1 + np.exp(-xf[:-3]))
    np.testing.assert_allclose(got[:-3], want, rtol=rtol * 8, atol=0)
    assert got[-3] == 0.0 and got[-2] == 1.0 and np.isnan(got[-1])
    sub = np.float32(-88.0)
    assert 0 < _kernels()["sigmoid"](np.array([sub], np.float32))[0] < np.finfo(np.float32).tiny


def test_sigmoid_out_and_gradients():
    x = torch.tensor(rng.standard_normal(30), requires_grad=True)
    out = torch.empty(30, dtype=torch.float64)
    torch.sigmoid(x.detach(), out=out)
    np.testing.assert_allclose(out.numpy(), 1 / (1 + np.exp(-x.detach().numpy())), rtol=1e-15)
    assert torch.autograd.gradcheck(torch.sigmoid, (x,))
    assert torch.autograd.gradgradcheck(torch.sigmoid, (x,))


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_erf_kernel(dtype):
    x = np.concatenate([np.linspace(-6, 6, 1201), [np.inf, -np.inf, np.nan, -0.0]]).astype(dtype)
    got = _kernels()["erf"](x)
    assert got.dtype == np.dtype(dtype)
    want = np.array([math.erf(v) for v in x[:-2].astype(np.float64)])
    np.testing.assert_allclose(got[:-2].astype(np.float64), want, rtol=2 * float(np.finfo(dtype).eps), atol=0)
    assert np.isnan(got[-2]) and got[-1] == 0.0 and math.copysign(1.0, float(got[-1])) == -1.0
