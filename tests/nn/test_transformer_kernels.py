"""The transformer-block kernels (tensorplug.dispatch.optional_transformer): native NumPy kernels and
their decompositions against float64 references, and the frontend gradients through both the fused
backward kernels (create_graph off) and the Tensor-op formulas (create_graph on)."""
import math

import numpy as np
import pytest

import tensorplug as tp
import tensorplug.nn.functional as F
from tensorplug.autograd import gradcheck, gradgradcheck
from tensorplug.backends.numpy_backend import embedding_loops, gelu_loops, norm_loops
from tensorplug.dispatch import optional_transformer as OT

from _numba_paths import loops_fixture

rng = np.random.default_rng(0)


def _native():
    return tp.zeros(1)._k


class _Decomposed(dict):
    """The kernel table with the transformer kernels replaced by their decompositions."""
    def __init__(self, k):
        super().__init__(k)
        for name in OT.OPTIONAL:
            self[name] = (lambda f: lambda *a: f(self, *a))(getattr(OT, name))


TABLES = {"native": _native, "decomposed": lambda: _Decomposed(_native())}


def _erfc64(x):
    return np.vectorize(math.erfc)(x)


def gelu_ref(x, approximate):
    x = x.astype(np.float64)
    if approximate == "tanh":
        return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    return 0.5 * x * _erfc64(-x / math.sqrt(2))           # erfc: exact in the negative tail


def gelu_grad_ref(x, approximate, h=1e-6):
    x = x.astype(np.float64)
    return (gelu_ref(x + h, approximate) - gelu_ref(x - h, approximate)) / (2 * h)


@pytest.mark.parametrize("table", TABLES)
@pytest.mark.parametrize("axis", [0, 1, 2])
def test_softmax_backward_kernels(table, axis):
    """softmax / log_softmax backward kernels equal their float64 formulas on every axis."""
    K = TABLES[table]()
    x = rng.standard_normal((3, 40, 5))
    g = rng.standard_normal((3, 40, 5))
    y = np.exp(x - x.max(axis, keepdims=True))
    y /= y.sum(axis, keepdims=True)
    ly = np.log(y)
    want_s = y * (g - (g * y).sum(axis, keepdims=True))
    want_l = g - y * g.sum(axis, keepdims=True)
    for dt, tol in (("float64", 1e-12), ("float32", 2e-6)):
        got_s = K["softmax_backward"](g.astype(dt), y.astype(dt), axis)
        got_l = K["log_softmax_backward"](g.astype(dt), ly.astype(dt), axis)
        assert got_s.dtype.name == dt and got_l.dtype.name == dt
        np.testing.assert_allclose(got_s, want_s, rtol=tol, atol=tol)
        np.testing.assert_allclose(got_l, want_l, rtol=tol, atol=tol)


@pytest.mark.parametrize("n", [3, 20, 33, 64, 65])
def test_native_softmax_rows(n):
    """The native last-axis softmax / log_softmax (folded row maxima, GEMV row sums) match float64,
    including rows holding -inf and a NaN row."""
    K = _native()
    x = rng.standard_normal((7, n)) * 4
    x[1, 0] = -np.inf
    want = np.exp(x - x.max(1, keepdims=True))
    want /= want.sum(1, keepdims=True)
    for dt, tol in (("float64", 1e-13), ("float32", 2e-6)):
        np.testing.assert_allclose(K["softmax"](x.astype(dt), 1), want, rtol=tol, atol=tol)
        np.testing.assert_allclose(np.exp(K["log_softmax"](x.astype(dt), 1)), want, rtol=tol, atol=tol)
    xn = x.copy()
    xn[2, n // 2] = np.nan
    assert np.isnan(K["softmax"](xn, 1)[2]).all() and not np.isnan(K["softmax"](xn, 1)[3]).any()


norm_path = loops_fixture(norm_loops, "numpy formula")


@pytest.mark.parametrize("table", TABLES)
@pytest.mark.parametrize("affine", [True, False])
def test_layer_norm_kernels(table, affine, norm_path):
    """layer_norm forward (y, mean, rstd) and backward (dx, dw, db) against float64 formulas."""
    K = TABLES[table]()
    m, n, eps = 6, 37, 1e-5
    x = rng.standard_normal((m, n)) * 3 + 1
    w = rng.standard_normal(n) if affine else None
    b = rng.standard_normal(n) if affine else None
    g = rng.standard_normal((m, n))
    mu = x.mean(1, keepdims=True)
    rs = 1 / np.sqrt(((x - mu) ** 2).mean(1, keepdims=True) + eps)
    xh = (x - mu) * rs
    y = xh * (1 if w is None else w) + (0 if b is None else b)
    gx = g * (1 if w is None else w)
    dx = rs * (gx - gx.mean(1, keepdims=True) - xh * (gx * xh).mean(1, keepdims=True))
    for dt, tol in (("float64", 1e-11), ("float32", 2e-5)):
        c = (lambda a: None if a is None else a.astype(dt))
        yk, mk, rk = K["layer_norm"](c(x), c(w), c(b), eps)
        np.testing.assert_allclose(yk, y, rtol=tol, atol=tol)
        np.testing.assert_allclose(mk, mu[:, 0], rtol=tol, atol=tol)
        np.testing.assert_allclose(rk, rs[:, 0], rtol=tol, atol=tol)
        dxk, dwk, dbk = K["layer_norm_backward"](c(g), c(x), c(mu[:, 0]), c(rs[:, 0]), c(w))
        np.testing.assert_allclose(dxk, dx, rtol=tol, atol=tol)
        np.testing.assert_allclose(dwk, (g * xh).sum(0), rtol=tol, atol=tol)
        np.testing.assert_allclose(dbk, g.sum(0), rtol=tol, atol=tol)
        assert (yk.dtype, mk.dtype, rk.dtype, dxk.dtype, dwk.dtype, dbk.dtype) == (np.dtype(dt),) * 6


def test_layer_norm_float32_large_offset_nan_and_noncontiguous(norm_path):
    """float32 rows far from zero (the variance is a small difference), a NaN row, a transposed input."""
    K = _native()
    x = rng.standard_normal((40, 96)) * 0.1 + 100.0
    x[3, 5] = np.nan
    w, b, g = rng.standard_normal(96), rng.standard_normal(96), rng.standard_normal((40, 96))
    mu = x.mean(1, keepdims=True)
    rs = 1 / np.sqrt(((x - mu) ** 2).mean(1, keepdims=True) + 1e-5)
    xh = (x - mu) * rs
    f = np.float32
    xf = np.asfortranarray(x.astype(f))                      # not C-contiguous
    yk, mk, rk = K["layer_norm"](xf, w.astype(f), b.astype(f), 1e-5)
    ok = ~np.isnan(x).any(1)
    assert np.isnan(yk[3]).all() and np.isnan(mk[3]) and not np.isnan(yk[ok]).any()
    # float32 inputs near 100 carry 4e-6 of rounding (4e-5 of their spread), and so does the float32
    # mean the normalization subtracts: compare with the float64 statistics of those inputs
    x32 = x.astype(f).astype(np.float64)
    mu32 = x32.mean(1, keepdims=True)
    rs32 = 1 / np.sqrt(((x32 - mu32) ** 2).mean(1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(yk[ok], ((x32 - mu32) * rs32 * w + b)[ok], rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(rk[ok], rs32[ok, 0], rtol=1e-4)
    np.testing.assert_allclose(mk[ok], mu32[ok, 0], rtol=3e-7)          # 2 float32 ulps at 100
    dxk, dwk, dbk = K["layer_norm_backward"](g.astype(f), xf, mk, rk, w.astype(f))
    assert np.isnan(dxk[3]).all() and np.isnan(dwk).all() and not np.isnan(dbk).any()
    assert xh.shape == dxk.shape


# the NumPy backend's two ways to exact float32 GELU (backends/numpy_backend/gelu_loops.py)
gelu_path = loops_fixture(gelu_loops, "numpy formula")


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_float32_strided_and_special_values(approximate, gelu_path):
    """A transposed (non-contiguous) input keeps its shape; NaN stays NaN, gelu(inf) = inf, and the
    backward's exp(-x^2 / 2) (tanh: 1 - tanh(u)^2) underflows to 0 for large |x| (grad passes through
    above, not below)."""
    K = _native()
    x = np.array([[np.nan, np.inf, 30.0], [-30.0, 0.0, -1.5], [2.5, -0.25, 1e-3], [7.0, -7.0, 0.5]])
    xs = x.astype(np.float32).T                      # (3, 4), F-ordered
    got = K["gelu"](xs, approximate)
    assert got.shape == (3, 4) and got.dtype == np.float32
    fin = np.isfinite(xs)
    np.testing.assert_allclose(got[fin], gelu_ref(x.T[fin], approximate), rtol=3e-6, atol=1e-7)
    assert np.isnan(got[0, 0]) and got[1, 0] == np.inf
    g = np.ones_like(xs)
    gb = K["gelu_backward"](g, xs, approximate)
    np.testing.assert_allclose(gb[fin], gelu_grad_ref(x.T[fin], approximate), rtol=1e-4, atol=5e-6)
    assert gb[2, 0] == 1.0 and gb[0, 1] == 0.0       # x = 30 and x = -30


@pytest.mark.parametrize("table", TABLES)
@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_kernels(table, approximate, gelu_path):
    """gelu and gelu_backward against float64 (tails included: relative accuracy where gelu is tiny)."""
    K = TABLES[table]()
    x = np.concatenate([np.linspace(-12, 8, 4001), rng.standard_normal(500)])
    g = rng.standard_normal(x.shape)
    want = gelu_ref(x, approximate)
    wantg = g * gelu_grad_ref(x, approximate)
    # (float32 backward: 1 + tanh(u) and 1 - tanh(u)^2 cancel for x << 0, as in PyTorch's formula)
    for dt, rtol, atol, gatol in (("float64", 1e-12, 1e-13, 1e-8), ("float32", 3e-6, 1e-6, 5e-6)):
        got = K["gelu"](x.astype(dt), approximate)
        assert got.dtype.name == dt
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)
        np.testing.assert_allclose(K["gelu_backward"](g.astype(dt), x.astype(dt), approximate), wantg,
                                   rtol=max(rtol, 1e-8), atol=gatol)
    if approximate == "none" and table == "native":
        # float32 tail: the native kernel keeps relative accuracy where 1 + erf(x / sqrt 2) cancels
        xt = np.linspace(-12, -4, 50)
        got = K["gelu"](xt.astype("float32"), "none").astype(np.float64)
        np.testing.assert_allclose(got, gelu_ref(xt, "none"), rtol=3e-5)


embedding_path = loops_fixture(embedding_loops, "numpy formula")


@pytest.mark.parametrize("table", TABLES)
@pytest.mark.parametrize("num", [5, 300])          # the one-hot GEMM and the sort + reduceat paths
@pytest.mark.parametrize("padding_idx", [None, 2])
def test_embedding_backward_kernel(table, num, padding_idx, embedding_path):
    """Row sums of grad by index (duplicates summed, padding row zero), and no indices at all."""
    K = TABLES[table]()
    idx = rng.integers(0, num, 200)
    idx[:10] = 2
    g = rng.standard_normal((200, 4))
    want = np.zeros((num, 4))
    for i, r in zip(idx, g):
        want[i] += r
    if padding_idx is not None:
        want[padding_idx] = 0
    for dt, tol in (("float64", 1e-12), ("float32", 1e-5)):
        got = K["embedding_backward"](g.astype(dt), idx, num, padding_idx)
        assert got.shape == (num, 4) and got.dtype.name == dt
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    empty = K["embedding_backward"](np.zeros((0, 4)), np.zeros(0, np.int64), num, padding_idx)
    assert empty.shape == (num, 4) and not empty.any()


def test_embedding_backward_float32_strided_rows_and_bad_index(embedding_path):
    """Gradient rows that are a column slice of a wider array (cat's backward) or a transposed view give
    the float64 row sums; an index outside the table is an IndexError on the loops' path."""
    K = _native()
    wide = rng.standard_normal((120, 3 * 8)).astype(np.float32)
    idx = rng.integers(0, 7, 120)
    for g in (wide[:, 8:16], np.asarray(wide[:, :8].T.copy().T), wide[::2, :8]):
        i = idx[:g.shape[0]]
        want = np.zeros((7, 8))
        np.add.at(want, i, g.astype(np.float64))
        got = K["embedding_backward"](g, i, 7, None)
        assert got.dtype == np.float32
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    if embedding_path == "numba loops":
        with pytest.raises(IndexError, match="outside the table"):
            K["embedding_backward"](wide[:, :8], np.full(120, 7), 7, None)


# -- the frontend: fused backward kernels (create_graph off) == Tensor-op formulas (create_graph on) ----
def _both_paths(fn, *inputs):
    """Gradients of sum(fn(*inputs) * v) without and with create_graph; they must agree."""
    out = fn(*inputs)
    v = tp.tensor(rng.standard_normal(tuple(out.shape)), dtype=out.dtype)
    fast = tp.autograd.grad((out * v).sum(), inputs)
    out = fn(*inputs)
    slow = tp.autograd.grad((out * v).sum(), inputs, create_graph=True)
    for a, b in zip(fast, slow):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-10, atol=1e-12)


def _t(*shape):
    return tp.tensor(rng.standard_normal(shape), dtype=tp.float64, requires_grad=True)


CASES = {
    "softmax_last": (lambda x: F.softmax(x, -1), lambda: (_t(3, 4, 5),)),
    "softmax_mid": (lambda x: F.softmax(x, 1), lambda: (_t(3, 4, 5),)),
    "log_softmax": (lambda x: F.log_softmax(x, -1), lambda: (_t(4, 6),)),
    "layer_norm_affine": (lambda x, w, b: F.layer_norm(x, (2, 3), w, b), lambda: (_t(4, 2, 3), _t(2, 3), _t(2, 3))),
    "layer_norm_weight": (lambda x, w: F.layer_norm(x, (5,), w), lambda: (_t(3, 5), _t(5))),
    "layer_norm_plain": (lambda x: F.layer_norm(x, (5,), eps=0.1), lambda: (_t(2, 3, 5),)),
    "gelu": (lambda x: F.gelu(x), lambda: (_t(3, 4),)),
    "gelu_tanh": (lambda x: F.gelu(x, approximate="tanh"), lambda: (_t(3, 4),)),
    "embedding": (lambda w: F.embedding(tp.tensor([[0, 2], [2, 3]]), w, padding_idx=4), lambda: (_t(5, 2),)),
    "embedding_padded": (lambda w: F.embedding(tp.tensor([[0, 2], [2, 3]]), w, padding_idx=3) * w.sum(),
                         lambda: (_t(5, 2),)),
    "cross_entropy": (lambda x: F.cross_entropy(x, tp.tensor([1, 0, 3]), label_smoothing=0.1).reshape(1),
                      lambda: (_t(3, 4),)),
}


@pytest.mark.parametrize("name", CASES)
def test_fused_backward_equals_tensor_ops(name):
    """The fused backward kernel (no graph of the backward) gives the Tensor-op formula's gradient."""
    fn, make = CASES[name]
    _both_paths(fn, *make())


# (embedding_padded left out: padding_idx's row gets no gradient by definition, not a derivative)
@pytest.mark.parametrize("name", [n for n in CASES if n != "embedding_padded"])
def test_gradcheck_and_gradgradcheck(name):
    """First and second derivatives against finite differences."""
    fn, make = CASES[name]
    assert gradcheck(fn, make())
    assert gradgradcheck(fn, make())


def test_frontend_values_float32():
    """The frontend ops on float32 equal float64 NumPy references to float32 rounding."""
    x = rng.standard_normal((8, 16)).astype(np.float32)
    w = rng.standard_normal(16).astype(np.float32)
    b = rng.standard_normal(16).astype(np.float32)
    xt = tp.tensor(x)
    x64 = x.astype(np.float64)
    mu = x64.mean(1, keepdims=True)
    ln = (x64 - mu) / np.sqrt(((x64 - mu) ** 2).mean(1, keepdims=True) + 1e-5) * w + b
    np.testing.assert_allclose(F.layer_norm(xt, (16,), tp.tensor(w), tp.tensor(b)).numpy(), ln, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(F.gelu(xt).numpy(), gelu_ref(x64, "none"), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(F.gelu(xt, approximate="tanh").numpy(), gelu_ref(x64, "tanh"), rtol=1e-6, atol=1e-7)
    with pytest.raises(RuntimeError, match="approximate argument must be either none or tanh"):
        F.gelu(xt, approximate="erf")


def test_embedding_weight_grad_matches_reference():
    """The weight gradient of F.embedding (fused kernel) sums each row's output gradients."""
    w = tp.tensor(rng.standard_normal((300, 3)), requires_grad=True)
    idx = rng.integers(0, 300, (20, 7))
    g = rng.standard_normal((20, 7, 3))
    F.embedding(tp.tensor(idx), w, padding_idx=5).backward(tp.tensor(g))
    want = np.zeros((300, 3))
    np.add.at(want, idx.reshape(-1), g.reshape(-1, 3))
    want[5] = 0
    np.testing.assert_allclose(w.grad.numpy(), want, rtol=1e-12, atol=1e-12)
