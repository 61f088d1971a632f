"""The numerical family (core/ops/numerical.py): values against float64 NumPy references computed
here (np.diff, np.bincount, np.histogram, np.searchsorted, np.isin, np.quantile, np.cov, ...,
explicit loops for cdist / renorm / scatter_reduce) or exact expected results; dtype rules,
batching and (negative) dims, keepdim, empty inputs, NaN handling, out=, Tensor methods and the
errors. Gradients are in tests/autograd/cases_numerical.py (the gradient table)."""
import collections
import itertools
import math
import warnings

import numpy as np
import pytest

import tensorplug as torch

NAN = float("nan")
INF = float("inf")


def T(a, dtype=None):
    return torch.tensor(a, dtype=dtype)


def N(t):
    """A tensor's (or array's) values as a NumPy array (float64 for floating values)."""
    a = np.asarray(t.detach().numpy() if isinstance(t, torch.Tensor) else t)
    return a.astype(np.float64) if a.dtype.kind == "f" else a


def close(got, want, rtol=1e-12, atol=1e-12):
    np.testing.assert_allclose(N(got), np.asarray(want, dtype=np.float64), rtol=rtol, atol=atol, equal_nan=True)


def same(got, want, dtype=None):
    """Exact equality of values and shape (and dtype when given)."""
    want = np.asarray(want)
    assert tuple(got.shape) == want.shape
    np.testing.assert_array_equal(N(got), want)
    if dtype is not None:
        assert got.dtype is dtype


def randn(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


# -- diff ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int32, torch.int64])
@pytest.mark.parametrize("n, dim", [(1, -1), (2, 0), (3, 1), (1, -2)])
def test_diff_matches_numpy(dtype, n, dim):
    a = np.random.default_rng(1).integers(-20, 20, (4, 5, 3)).astype(dtype.name)
    r = torch.diff(T(a, dtype), n=n, dim=dim)
    same(r, np.diff(a, n=n, axis=dim), dtype)


def test_diff_prepend_append_and_method():
    a, p, q = randn(2, 4), randn(2, 1, seed=1), randn(2, 3, seed=2)
    close(torch.diff(T(a), 2, 1, prepend=T(p), append=T(q)), np.diff(a, 2, axis=1, prepend=p, append=q))
    close(T(a).diff(dim=0, append=T(q[:1, :1].repeat(4, 1))), np.diff(a, axis=0, append=q[:1, :1].repeat(4, 1)))
    # the joined tensors promote like cat: bool + int64 -> int64
    same(torch.diff(T([True, False]), append=T([3])), [-1, 3], torch.int64)


def test_diff_bool_uint8_and_sizes():
    b = np.array([True, False, False, True, True])
    same(torch.diff(T(b)), np.diff(b), torch.bool)                         # logical xor
    same(torch.diff(T(b), n=2), np.diff(b, n=2), torch.bool)
    same(torch.diff(T([3, 1], torch.uint8)), [254], torch.uint8)           # wraps like PyTorch
    same(torch.diff(T([1, 2, 3]), n=5), np.zeros(0, np.int64))             # n beyond the length: empty
    same(torch.diff(torch.zeros(2, 0), dim=0), np.zeros((1, 0)))
    x = T([1.0, 5.0])
    r = torch.diff(x, n=0)
    same(r, [1.0, 5.0])
    r[0] = 7.0                                                              # n=0: a copy, not x itself
    assert x[0].item() == 1.0


def test_diff_out():
    out = torch.zeros(5, dtype=torch.float64)
    r = torch.diff(T([1, 4, 9]), out=out)
    assert r is out
    same(out, [3.0, 5.0], torch.float64)


def test_diff_errors():
    with pytest.raises(RuntimeError, match="order must be non-negative but got -1"):
        torch.diff(T([1, 2]), n=-1)
    with pytest.raises(RuntimeError, match="at least one-dimensional"):
        torch.diff(T(1.0))
    with pytest.raises(RuntimeError, match="same dimension as input"):
        torch.diff(T([[1, 2, 3]]), prepend=T([1]))
    with pytest.raises(RuntimeError, match=r"input.size\(0\) = 1, but got tensor.size\(0\) = 2"):
        torch.diff(T([[1, 2, 3]]), dim=1, prepend=T([[1], [2]]))
    with pytest.raises(TypeError, match="'prepend' must be Tensor"):
        torch.diff(T([1, 2]), prepend=1)
    with pytest.raises(IndexError, match="Dimension out of range"):
        torch.diff(T([1, 2]), dim=1)


# -- trapezoid / cumulative_trapezoid --------------------------------------------------------------
def _cumtrapz_ref(y, x=None, dx=1.0, axis=-1):
    y = np.moveaxis(y, axis, -1)
    d = dx if x is None else np.diff(np.moveaxis(x, axis, -1) if np.ndim(x) > 1 else x, axis=-1)
    return np.moveaxis(np.cumsum(d * (y[..., 1:] + y[..., :-1]) / 2.0, axis=-1), -1, axis)


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_trapezoid_matches_numpy(dim):
    y = randn(3, 4, 5)
    x1 = np.cumsum(np.random.default_rng(3).uniform(0.1, 1.0, y.shape[dim]))
    xs = randn(3, 4, 5, seed=4)
    close(torch.trapezoid(T(y), dim=dim), np.trapezoid(y, axis=dim))
    close(torch.trapezoid(T(y), dx=0.25, dim=dim), np.trapezoid(y, dx=0.25, axis=dim))
    close(torch.trapezoid(T(y), T(x1), dim=dim), np.trapezoid(y, x1, axis=dim))
    close(torch.trapezoid(T(y), T(xs), dim=dim), np.trapezoid(y, xs, axis=dim))
    close(torch.trapz(T(y), T(x1), dim=dim), np.trapezoid(y, x1, axis=dim))
    close(torch.cumulative_trapezoid(T(y), dim=dim), _cumtrapz_ref(y, axis=dim))
    close(torch.cumulative_trapezoid(T(y), dx=2.5, dim=dim), _cumtrapz_ref(y, dx=2.5, axis=dim))
    close(torch.cumulative_trapezoid(T(y), T(x1), dim=dim), _cumtrapz_ref(y, x1, axis=dim))
    close(torch.cumulative_trapezoid(T(y), T(xs), dim=dim), _cumtrapz_ref(y, xs, axis=dim))


def test_trapezoid_x_broadcasts_after_differencing():
    # x with fewer dims than y is padded with leading 1s; its spacings broadcast against y's pairs
    y, x = randn(2, 3, 4), randn(3, 4, seed=1)
    close(torch.trapezoid(T(y), T(x)), np.trapezoid(y, x[None]))
    close(torch.trapezoid(T([[1.0, 2, 4], [0, 1, 0]]), T([[0.0, 1]])), [4.5, 1.0])   # PyTorch's exact result


def test_trapezoid_dtypes_and_sizes():
    r = torch.trapezoid(T([1, 2, 4]))
    assert r.dtype is torch.float32 and r.item() == 4.5
    same(torch.cumulative_trapezoid(T([1, 2, 4])), [1.5, 4.5], torch.float32)
    same(torch.trapezoid(T([1, 2, 4]), T([0, 1, 3])), np.float32(7.5), torch.float32)
    same(torch.trapezoid(torch.zeros(2, 0, dtype=torch.int64)), [0, 0], torch.int64)    # no samples: zeros
    same(torch.trapezoid(torch.ones(2, 1)), [0.0, 0.0], torch.float32)
    same(torch.cumulative_trapezoid(torch.zeros(2, 0, dtype=torch.int64)), np.zeros((2, 0)), torch.float32)
    same(torch.cumulative_trapezoid(torch.ones(2, 1)), np.zeros((2, 0)), torch.float32)
    r = torch.trapezoid(T([1.0, 2.0], torch.float64), T([0.0, 3.0], torch.float64))
    assert r.dtype is torch.float64 and r.item() == 4.5


def test_trapezoid_errors():
    with pytest.raises(RuntimeError, match="bool input for `y`"):
        torch.trapezoid(T([True, False]))
    with pytest.raises(RuntimeError, match="cumulative_trapezoid: received a bool input"):
        torch.cumulative_trapezoid(T([True, False]))
    with pytest.raises(RuntimeError, match="one `x` value for each sample point"):
        torch.trapezoid(T([1.0, 2, 4]), T([0.0, 1]))
    with pytest.raises(RuntimeError, match="cumulative_trapezoid: There must be one `x` value"):
        torch.cumulative_trapezoid(T([1.0, 2, 4]), T([0.0, 1]))
    with pytest.raises(IndexError, match="no dimensions"):
        torch.trapezoid(T(1.0))
    with pytest.raises(IndexError):
        torch.cumulative_trapezoid(T(1.0))
    with pytest.raises(TypeError):
        torch.trapezoid(T([1.0, 2.0]), T([0.0, 1.0]), dx=2.0)
    with pytest.raises(TypeError, match="'x' must be Tensor"):
        torch.trapezoid(T([1.0, 2.0]), 2.0)


# -- bincount / histc ------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [torch.uint8, torch.int8, torch.int32, torch.int64])
def test_bincount_matches_numpy(dtype):
    a = np.random.default_rng(2).integers(0, 9, 40)
    w = np.random.default_rng(3).standard_normal(40)
    same(torch.bincount(T(a, dtype)), np.bincount(a), torch.int64)
    same(torch.bincount(T(a, dtype), minlength=15), np.bincount(a, minlength=15), torch.int64)
    same(T(a, dtype).bincount(minlength=3), np.bincount(a, minlength=3), torch.int64)
    close(torch.bincount(T(a, dtype), weights=T(w, torch.float64)), np.bincount(a, weights=w))


@pytest.mark.parametrize("wdtype, rdtype", [(torch.float32, torch.float32), (torch.float64, torch.float64),
                                            (torch.float16, torch.float64), (torch.int64, torch.float64),
                                            (torch.bool, torch.float64)])
def test_bincount_weight_dtypes(wdtype, rdtype):
    r = torch.bincount(T([1, 1, 3]), weights=T([1, 2, 1], wdtype) if wdtype is not torch.bool
                       else T([True, True, False]))
    assert r.dtype is rdtype
    close(r, [0, 3, 0, 1] if wdtype is not torch.bool else [0, 2, 0, 0])


def test_bincount_empty_and_errors():
    same(torch.bincount(torch.zeros(0, dtype=torch.int64)), np.zeros(0, np.int64), torch.int64)
    same(torch.bincount(torch.zeros(0, dtype=torch.int64), minlength=3), [0, 0, 0])
    with pytest.raises(RuntimeError, match="1-d non-negative integral"):
        torch.bincount(T([1, -1, 3]))
    with pytest.raises(RuntimeError, match="1-d non-negative integral"):
        torch.bincount(T([[1, 2]]))
    with pytest.raises(NotImplementedError, match="Float"):
        torch.bincount(T([1.0, 2.0]))
    with pytest.raises(NotImplementedError, match="Bool"):
        torch.bincount(T([True]))
    with pytest.raises(RuntimeError, match="weights should be 1-d and have the same length"):
        torch.bincount(T([1, 1, 3]), weights=T([1.0, 2.0]))
    with pytest.raises(RuntimeError, match="minlength should be >= 0"):
        torch.bincount(T([1]), minlength=-1)


@pytest.mark.parametrize("bins, lo, hi", [(10, -2.0, 2.5), (7, -0.5, 0.5), (1, -3.0, 3.0)])
def test_histc_matches_numpy_histogram(bins, lo, hi):
    a = randn(500, seed=5)
    want, _ = np.histogram(a, bins, range=(lo, hi))
    same(torch.histc(T(a), bins, lo, hi), want.astype(np.float64), torch.float64)
    auto, _ = np.histogram(a, bins, range=(a.min(), a.max()))
    same(torch.histc(T(a.reshape(20, 25)), bins), auto.astype(np.float64))      # range from the data
    same(T(a).histc(bins, lo, hi), want.astype(np.float64))


def test_histc_edges_nan_and_dtypes():
    same(torch.histc(T([0.0, 1, 2, 3]), 3, 0, 3), [1, 1, 2], torch.float32)   # the maximum: last bin
    same(torch.histc(T([1.0, NAN, 1, 5]), 4, 0, 2), [0, 0, 2, 0])             # NaN and outside: ignored
    same(torch.histc(T([1.0, INF, -INF]), 2, 0, 2), [0, 1])
    same(torch.histc(T([1.0, 1.0]), 4), [0, 0, 2, 0])                         # equal data: [x - 1, x + 1]
    same(torch.histc(torch.zeros(0), 3), [0, 0, 0])
    same(torch.histc(T([1.0, 2.0], torch.float16), 4), [1, 0, 0, 1], torch.float16)
    out = torch.zeros(1)
    assert torch.histc(T([1.0, 2.0]), 2, out=out) is out
    same(out, [1.0, 1.0])


def test_histc_errors():
    with pytest.raises(NotImplementedError, match="Long"):
        torch.histc(T([1, 2]), 4, 0, 3)
    with pytest.raises(RuntimeError, match="bins must be > 0"):
        torch.histc(T([1.0]), 0)
    with pytest.raises(RuntimeError, match="max must be larger than min"):
        torch.histc(T([1.0, 2.0]), 4, 3, 0)
    with pytest.raises(RuntimeError, match=r"range of \[nan, nan\] is not finite"):
        torch.histc(T([1.0, NAN]), 4)
    with pytest.raises(RuntimeError, match=r"range of \[1, inf\] is not finite"):
        torch.histc(T([1.0, INF]), 4)
    with pytest.raises(RuntimeError, match="same dtype"):
        torch.histc(T([1.0, 2.0]), 2, out=torch.zeros(0, dtype=torch.float64))


# -- searchsorted / bucketize / isin ---------------------------------------------------------------
@pytest.mark.parametrize("side", ["left", "right"])
@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.float32, torch.float64])
def test_searchsorted_matches_numpy(side, dtype):
    g = np.random.default_rng(7)
    seq = np.sort(g.integers(0, 30, (3, 40)), axis=-1).astype(dtype.name)     # with duplicates
    vals = g.integers(-5, 35, (3, 9)).astype(dtype.name)
    want = np.stack([np.searchsorted(s, v, side=side) for s, v in zip(seq, vals)])
    same(torch.searchsorted(T(seq, dtype), T(vals, dtype), side=side), want, torch.int64)
    same(torch.searchsorted(T(seq, dtype), T(vals, dtype), right=side == "right"), want)
    same(torch.searchsorted(T(seq[0], dtype), T(vals, dtype), side=side),        # 1-d sequence, n-d values
         np.searchsorted(seq[0], vals, side=side))
    b = np.unique(seq[1])
    same(torch.bucketize(T(vals, dtype), T(b, dtype), right=side == "right"),
         np.searchsorted(b, vals, side=side), torch.int64)


@pytest.mark.parametrize("n", [1, 2, 3, 7, 8, 9, 64, 100])
def test_searchsorted_every_length(n):
    seq = np.arange(n) * 2.0
    vals = np.arange(-1, 2 * n + 1) * 1.0           # before, at and between every entry, past the end
    for side in ("left", "right"):
        same(torch.searchsorted(T(seq), T(vals), side=side), np.searchsorted(seq, vals, side=side))


def test_searchsorted_sorter_scalars_dtypes_and_out():
    g = np.random.default_rng(8)
    s = g.permutation(20).astype(np.float64)
    order = np.argsort(s)
    v = g.uniform(-1, 21, 10)
    same(torch.searchsorted(T(s), T(v), sorter=T(order)), np.searchsorted(s, v, sorter=order))
    s2 = g.standard_normal((2, 6))
    o2 = np.argsort(s2, axis=1)
    v2 = g.standard_normal((2, 3))
    same(torch.searchsorted(T(s2), T(v2), sorter=T(o2)),
         np.stack([np.searchsorted(a, b, sorter=c) for a, b, c in zip(s2, v2, o2)]))
    r = torch.searchsorted(T([1, 3, 5]), 4)                                   # a Python number: 0-d
    assert r.shape == () and r.item() == 2
    assert torch.searchsorted(T([1, 2]), 1.5).item() == 1                    # compared as float
    same(torch.searchsorted(T([1, 3, 5]), T([3.0, 4.5])), [1, 2])
    r = torch.bucketize(T([3, 6, 9]), T([1, 3, 5, 7, 9]), out_int32=True)
    same(r, [1, 3, 4], torch.int32)
    assert torch.bucketize(3.5, T([1, 3, 5])).item() == 2
    same(torch.searchsorted(torch.zeros(0), T([3.0])), [0])
    same(torch.searchsorted(T([1.0, 2]), torch.zeros(0, 2)), np.zeros((0, 2), np.int64))
    out = torch.zeros(0, dtype=torch.int64)
    assert torch.searchsorted(T([1.0, 2]), T([1.5, 3]), out=out) is out
    same(out, [1, 2])


def test_searchsorted_nan():
    # NaN values, and a NaN tail of the sequence, sort last (PyTorch's comparisons)
    same(torch.bucketize(T([NAN, 2.0, 10.0]), T([1.0, 3.0, NAN])), [3, 1, 3])
    same(torch.searchsorted(T([1.0, 3.0, NAN]), T([NAN, 0.0]), right=True), [3, 0])


def test_searchsorted_errors():
    with pytest.raises(RuntimeError, match="side can only be 'left' or 'right'"):
        torch.searchsorted(T([1, 3]), T([3]), side="foo")
    with pytest.raises(RuntimeError, match="side and right can't be set to opposites"):
        torch.searchsorted(T([1, 3]), T([3]), side="left", right=True)
    with pytest.raises(RuntimeError, match="first N-1 dimensions"):
        torch.searchsorted(T([[1, 3, 5]]), T([[3, 4], [0, 9]]))
    with pytest.raises(RuntimeError, match="first N-1 dimensions"):
        torch.searchsorted(T([[1, 3, 5]]), T([3, 4]))
    with pytest.raises(RuntimeError, match="scalar only when boundaries tensor dimension is 1"):
        torch.searchsorted(T([[1, 3, 5]]), 4)
    with pytest.raises(RuntimeError, match="positive dimension"):
        torch.searchsorted(T(1), T([3]))
    with pytest.raises(RuntimeError, match="sorter must be a tensor of long dtype"):
        torch.searchsorted(T([5, 1]), T([3]), sorter=T([1, 0], torch.int32))
    with pytest.raises(RuntimeError, match="boundary and sorter must have the same size"):
        torch.searchsorted(T([5, 1]), T([3]), sorter=T([1]))
    with pytest.raises(RuntimeError, match="sorter index out of range"):
        torch.searchsorted(T([5, 1]), T([3]), sorter=T([1, 2]))
    with pytest.raises(RuntimeError, match="output tensor's dtype is wrong"):
        torch.searchsorted(T([1.0, 2]), T([1.5]), out=torch.zeros(1, dtype=torch.int32))
    with pytest.raises(NotImplementedError, match="Bool"):
        torch.searchsorted(T([False, True]), T([True]))
    with pytest.raises(RuntimeError, match=r"boundaries tensor must be 1 dimension, but got dim\(2\)"):
        torch.bucketize(T([3]), T([[1, 2]]))


def test_isin_matches_numpy():
    g = np.random.default_rng(9)
    a, b = g.integers(0, 30, (5, 6)), g.integers(0, 30, 12)
    same(torch.isin(T(a), T(b)), np.isin(a, b), torch.bool)
    same(torch.isin(T(a), T(b), invert=True), np.isin(a, b, invert=True))
    same(torch.isin(T(a), T(np.unique(b)), assume_unique=True), np.isin(a, b))
    af = g.integers(0, 8, 20) / 2.0
    same(torch.isin(T(af), T([1, 2, 3])), np.isin(af, [1, 2, 3]))              # compared in float
    same(torch.isin(T([1, 2], torch.int8), T([258, 2])), [False, True])       # no wrap-around of 258
    r = torch.isin(2, T([2, 3]))
    assert r.shape == () and r.item() is True
    same(torch.isin(T([2, 3]), 3), [False, True])
    same(torch.isin(T([2, 3]), 2.5), [False, False])
    same(torch.isin(T([NAN, 1.0, 2.0]), T([NAN, 1.0])), [False, True, False])   # NaN is never in
    same(torch.isin(T([1, 2]), torch.zeros(0, dtype=torch.int64)), [False, False])
    same(torch.isin(torch.zeros(0, 3), T([1.0])), np.zeros((0, 3), bool))
    out = torch.zeros(0, dtype=torch.bool)
    assert torch.isin(T([1, 2]), T([2]), out=out) is out
    same(out, [False, True])


def test_isin_errors():
    with pytest.raises(RuntimeError, match="Unsupported input type encountered for isin\\(\\): Bool"):
        torch.isin(T([True]), T([True]))
    with pytest.raises(TypeError):
        torch.isin(2, 3)
    with pytest.raises(RuntimeError, match="dtype bool"):
        torch.isin(T([1]), T([1]), out=torch.zeros(1, dtype=torch.int64))


# -- unravel_index / tril_indices / triu_indices ---------------------------------------------------
@pytest.mark.parametrize("shape", [(3, 3), (2, 3, 4), (7,), (1, 5, 1, 2)])
def test_unravel_index_matches_numpy(shape):
    flat = np.random.default_rng(4).integers(0, math.prod(shape), (2, 5))
    got = torch.unravel_index(T(flat), shape)
    want = np.unravel_index(flat, shape)
    assert isinstance(got, tuple) and len(got) == len(shape)
    for g_, w in zip(got, want):
        same(g_, w, torch.int64)


def test_unravel_index_wraps_and_shapes():
    # out-of-range and negative indices wrap like PyTorch: (i // stride) % size
    flat = np.array([9, -1, -10, 100])
    got = torch.unravel_index(T(flat), (3, 3))
    same(got[0], np.floor_divide(flat, 3) % 3)
    same(got[1], flat % 3)
    r = torch.unravel_index(T([1], torch.int32), 3)
    assert len(r) == 1 and r[0].dtype is torch.int64 and r[0].tolist() == [1]
    assert torch.unravel_index(T([0]), ()) == ()
    r = torch.unravel_index(T(5), [3, 3])
    assert r[0].shape == () and (r[0].item(), r[1].item()) == (1, 2)


def test_unravel_index_errors():
    with pytest.raises(TypeError, match="integer dtype"):
        torch.unravel_index(T([1.0]), (3, 3))
    with pytest.raises(TypeError, match="only contain ints"):
        torch.unravel_index(T([1]), (3.0, 3))
    with pytest.raises(ValueError, match="cannot have negative values"):
        torch.unravel_index(T([1]), (-1, 3))
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        torch.unravel_index(T([0]), (0, 3))


@pytest.mark.parametrize("row, col, offset", [(3, 3, 0), (4, 3, -1), (3, 5, 2), (3, 4, 10), (3, 4, -10),
                                              (0, 4, 0), (5, 0, 1), (1, 1, 0), (6, 2, -3)])
def test_tril_triu_indices_match_numpy(row, col, offset):
    same(torch.tril_indices(row, col, offset), np.stack(np.tril_indices(row, offset, col)).reshape(2, -1),
         torch.int64)
    same(torch.triu_indices(row, col, offset), np.stack(np.triu_indices(row, offset, col)).reshape(2, -1),
         torch.int64)


def test_tril_indices_dtype_and_errors():
    same(torch.tril_indices(3, 3, dtype=torch.int32), np.stack(np.tril_indices(3)), torch.int32)
    with pytest.raises(RuntimeError, match="row must be non-negative"):
        torch.tril_indices(-1, 4)
    with pytest.raises(RuntimeError, match="col must be non-negative"):
        torch.triu_indices(3, -4)
    with pytest.raises(NotImplementedError, match="Float"):
        torch.tril_indices(3, 3, dtype=torch.float32)


# -- cartesian_prod / combinations -----------------------------------------------------------------
def test_cartesian_prod_matches_itertools():
    a, b, c = [1, 2], [3, 4, 5], [7, 8]
    same(torch.cartesian_prod(T(a), T(b), T(c)), np.array(list(itertools.product(a, b, c))), torch.int64)
    same(torch.cartesian_prod(T([1.0, 2]), torch.zeros(0)), np.zeros((0, 2)))
    x = T([1.0, 2.0])
    assert torch.cartesian_prod(x) is x                                        # one tensor: itself
    with pytest.raises(RuntimeError, match="Expect a 1D vector, but got shape \\[1, 2\\]"):
        torch.cartesian_prod(T([[1, 2]]), T([1]))
    with pytest.raises(RuntimeError, match="same dtype"):
        torch.cartesian_prod(T([1, 2]), T([1.0]))
    with pytest.raises(RuntimeError, match="non-empty"):
        torch.cartesian_prod()


@pytest.mark.parametrize("n", [0, 1, 3, 5])
@pytest.mark.parametrize("r", [1, 2, 3, 4])
@pytest.mark.parametrize("repl", [False, True])
def test_combinations_match_itertools(n, r, repl):
    vals = np.arange(10, 10 + n, dtype=np.float64)
    make = itertools.combinations_with_replacement if repl else itertools.combinations
    want = np.array(list(make(vals, r)), dtype=np.float64).reshape(-1, r)
    same(torch.combinations(T(vals), r, with_replacement=repl), want, torch.float64)


def test_combinations_r0_and_errors():
    same(torch.combinations(T([1, 2, 3]), 0), np.zeros(0, np.int64), torch.int64)
    with pytest.raises(RuntimeError, match="Expect a non-negative number, but got -1"):
        torch.combinations(T([1, 2]), -1)
    with pytest.raises(RuntimeError, match="Expect a 1D vector"):
        torch.combinations(T(1.0))


# -- block_diag / diagflat / vander / rot90 --------------------------------------------------------
def _block_diag_ref(*arrays):
    mats = [np.atleast_2d(a) for a in arrays]
    out = np.zeros((sum(m.shape[0] for m in mats), sum(m.shape[1] for m in mats)))
    i = j = 0
    for m in mats:
        out[i:i + m.shape[0], j:j + m.shape[1]] = m
        i, j = i + m.shape[0], j + m.shape[1]
    return out


def test_block_diag_matches_reference():
    parts = [randn(2, 3), np.array(5.0), randn(2, seed=1), np.zeros((2, 0)), np.zeros((0, 2)), randn(3, 1, seed=2)]
    same(torch.block_diag(*[T(p) for p in parts]), _block_diag_ref(*parts), torch.float64)
    same(torch.block_diag(T([[1, 2]]), T([[3]], torch.float16)), _block_diag_ref([[1, 2]], [[3]]), torch.float16)
    same(torch.block_diag(T([True]), T([True])), np.eye(2, dtype=bool), torch.bool)
    same(torch.block_diag(), np.zeros((1, 0)), torch.float32)
    with pytest.raises(RuntimeError, match="Input 0 has 3 dimensions"):
        torch.block_diag(torch.zeros(1, 1, 1))


@pytest.mark.parametrize("offset", [-2, 0, 1, 3])
def test_diagflat_matches_numpy(offset):
    a = randn(2, 3)
    same(torch.diagflat(T(a), offset), np.diagflat(a, offset), torch.float64)
    same(T([1, 2]).diagflat(offset), np.diagflat([1, 2], offset), torch.int64)
    same(torch.diagflat(torch.zeros(0), offset), np.diagflat(np.zeros(0), offset))
    same(torch.diagflat(T(3.0)), [[3.0]])


@pytest.mark.parametrize("N", [None, 0, 1, 2, 5])
@pytest.mark.parametrize("increasing", [False, True])
def test_vander_matches_numpy(N, increasing):
    x = np.array([0.5, -1.5, 0.0, 2.0])
    same(torch.vander(T(x), N, increasing), np.vander(x, N, increasing), torch.float64)
    xi = np.array([2, -3, 0])
    same(torch.vander(T(xi, torch.int32), N, increasing), np.vander(xi, N, increasing), torch.int64)


def test_vander_dtypes_and_errors():
    same(torch.vander(T([True, False])), [[1, 1], [0, 1]], torch.int64)
    same(torch.vander(T([1.0, 2], torch.float16)), [[1, 1], [2, 1]], torch.float16)
    same(torch.vander(torch.zeros(0)), np.zeros((0, 0)), torch.float32)
    with pytest.raises(RuntimeError, match="N must be non-negative"):
        torch.vander(T([1, 2]), N=-1)
    with pytest.raises(RuntimeError, match="one-dimensional"):
        torch.vander(T([[1, 2]]))


@pytest.mark.parametrize("k", [-5, -1, 0, 1, 2, 3, 6])
@pytest.mark.parametrize("dims", [(0, 1), (1, 0), (-1, 0), (2, 0)])
def test_rot90_matches_numpy(k, dims):
    a = np.arange(24).reshape(2, 3, 4)
    r = torch.rot90(T(a), k, dims)
    same(r, np.rot90(a, k, dims), torch.int64)
    r.add_(1000)                                    # a new tensor: writing it leaves the input alone
    assert T(a).sum().item() == a.sum()


def test_rot90_method_and_errors():
    same(T([[1, 2], [3, 4]]).rot90(), np.rot90([[1, 2], [3, 4]]))
    with pytest.raises(RuntimeError, match="total rotation dims == 2, but got dims = 3"):
        torch.rot90(torch.zeros(2, 2), 1, [0, 1, 2])
    with pytest.raises(RuntimeError, match="total dims >= 2"):
        torch.rot90(T([1, 2]))
    with pytest.raises(RuntimeError, match="dim0 = 0 and dim1 = -2"):
        torch.rot90(torch.zeros(2, 2), 1, [0, -2])
    with pytest.raises(IndexError):
        torch.rot90(torch.zeros(2, 2), 1, [0, 2])


# -- quantile / nanquantile ------------------------------------------------------------------------
METHODS = ["linear", "lower", "higher", "midpoint", "nearest"]


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("dim, keepdim", [(None, False), (None, True), (1, False), (-1, True), (0, False)])
def test_quantile_matches_numpy(method, dim, keepdim):
    a = randn(4, 7, 3, seed=11)
    q = np.array([0.0, 0.1, 0.25, 0.5, 0.77, 1.0])
    close(torch.quantile(T(a), T(q), dim, keepdim, interpolation=method),
          np.quantile(a, q, axis=dim, keepdims=keepdim, method=method))
    close(torch.quantile(T(a), 0.3, dim, keepdim, interpolation=method),
          np.quantile(a, 0.3, axis=dim, keepdims=keepdim, method=method))
    a32 = a.astype(np.float32)
    close(T(a32).quantile(T(q, torch.float32), dim, keepdim, interpolation=method),
          np.quantile(a32.astype(np.float64), q, axis=dim, keepdims=keepdim, method=method), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("method", METHODS)
def test_quantile_ranks_halfway_and_ties(method):
    # positions q * (n - 1) = 0.5, 1.5, 2.5 exercise rounding (nearest: half to even, like np.around)
    a = np.array([0.0, 1.0, 2.0, 3.0, 4.0])
    q = np.array([0.125, 0.375, 0.625, 0.875])
    close(torch.quantile(T(a), T(q), interpolation=method), np.quantile(a, q, method=method))
    t = np.array([1.0, 1.0, 2.0, 2.0, 2.0])
    close(torch.quantile(T(t), T(q), interpolation=method), np.quantile(t, q, method=method))


@pytest.mark.parametrize("method", METHODS)
def test_nanquantile_matches_numpy(method):
    a = randn(5, 6, seed=12)
    a[0, [1, 4]] = NAN
    a[2, :] = NAN                                   # an all-NaN row gives NaN
    a[3, 5] = NAN
    q = np.array([0.0, 0.3, 0.5, 1.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)           # NumPy warns about the all-NaN row
        want = np.nanquantile(a, q, axis=1, method=method)
        want_t = np.nanquantile(a, 0.4, axis=0, keepdims=True, method=method)
    close(torch.nanquantile(T(a), T(q), 1, interpolation=method), want)
    close(T(a).nanquantile(0.4, 0, True, interpolation=method), want_t)
    # quantile: a slice holding NaN gives NaN, the others are unaffected
    got = N(torch.quantile(T(a), 0.5, dim=1))
    assert np.isnan(got[[0, 2, 3]]).all()
    close(got[[1, 4]], np.quantile(a[[1, 4]], 0.5, axis=1))


def test_quantile_shapes_and_out():
    assert torch.quantile(T(3.0), 0.5).shape == ()
    r = torch.quantile(T(3.0), T([0.5, 0.1]), dim=0, keepdim=True)
    same(r, [3.0, 3.0])
    x = T(randn(2, 3))
    assert torch.quantile(x, T(0.5, torch.float64), dim=0).shape == (3,)     # a 0-d q adds no dimension
    assert torch.quantile(x, T([0.5], torch.float64), dim=0).shape == (1, 3)
    out = torch.zeros(0, dtype=torch.float64)
    assert torch.quantile(x, 0.5, dim=1, out=out) is out
    close(out, np.quantile(N(x), 0.5, axis=1))


def test_quantile_errors():
    x = T([[0.0, 1.0], [2.0, 3.0]])
    with pytest.raises(RuntimeError, match="must be either float or double"):
        torch.quantile(T([1, 2]), 0.5)
    with pytest.raises(RuntimeError, match="must be either float or double"):
        torch.quantile(T([1.0, 2.0], torch.float16), 0.5)
    with pytest.raises(RuntimeError, match="non-empty"):
        torch.quantile(torch.zeros(0), 0.5)
    with pytest.raises(RuntimeError, match=r"q must be in the range \[0, 1\] but got 1.5"):
        torch.quantile(x, 1.5)
    with pytest.raises(RuntimeError, match=r"but got nan"):
        torch.nanquantile(x, NAN)
    with pytest.raises(RuntimeError, match=r"q values must be in the range \[0, 1\]"):
        torch.quantile(x, T([-0.5, 0.5]))
    with pytest.raises(RuntimeError, match="scalar or 1D tensor"):
        torch.quantile(x, T([[0.5]]))
    with pytest.raises(RuntimeError, match="q tensor must be same dtype"):
        torch.quantile(x, T([0.5], torch.float64))
    with pytest.raises(RuntimeError, match="interpolation must be one of"):
        torch.quantile(x, 0.5, interpolation="foo")
    with pytest.raises(RuntimeError, match="out tensor must be same dtype"):
        torch.quantile(x, 0.5, out=torch.zeros(0, dtype=torch.float64))
    with pytest.raises(TypeError):
        torch.quantile(x, [0.5])


# -- cov / corrcoef --------------------------------------------------------------------------------
@pytest.mark.parametrize("correction", [0, 1, 2])
def test_cov_matches_numpy(correction):
    a = randn(3, 8, seed=13)
    fw = np.random.default_rng(1).integers(1, 4, 8)
    aw = np.random.default_rng(2).uniform(0.5, 2.0, 8)
    close(torch.cov(T(a), correction=correction), np.cov(a, ddof=correction))
    close(torch.cov(T(a), correction=correction, fweights=T(fw)), np.cov(a, ddof=correction, fweights=fw))
    close(torch.cov(T(a), correction=correction, aweights=T(aw)), np.cov(a, ddof=correction, aweights=aw))
    close(T(a).cov(correction=correction, fweights=T(fw), aweights=T(aw)),
          np.cov(a, ddof=correction, fweights=fw, aweights=aw))
    close(torch.cov(T(a[0]), correction=correction), np.cov(a[0], ddof=correction))     # 1-d: one variable


def test_cov_dtypes_and_degenerate():
    r = torch.cov(T([[1, 2, 4], [0, 1, 5]]))
    assert r.dtype is torch.float32
    close(r, np.cov([[1, 2, 4], [0, 1, 5]]), rtol=1e-6)
    r = torch.cov(T([[0.0, 1, 2], [2, 1, 0.5]]), aweights=T([0.5, 1, 2], torch.float64))
    assert r.dtype is torch.float64                                          # promoted by the weights
    assert torch.cov(torch.zeros(0, 3)).shape == (0, 0)
    with pytest.warns(UserWarning, match="degrees of freedom is <= 0"):
        r = torch.cov(T([[1.0, 2, 4]]), correction=5)
    assert math.isinf(r.item())
    with pytest.warns(UserWarning, match="degrees of freedom is <= 0"):
        r = torch.cov(torch.zeros(2, 0))
    assert np.isnan(N(r)).all() and r.shape == (2, 2)


def test_cov_errors():
    x = T([[0.0, 1, 2], [2, 1, 0.5]])
    cases = [
        (dict(), torch.zeros(1, 1, 1), RuntimeError, "two or fewer dimensions"),
        (dict(), T([[True, False]]), RuntimeError, "bool dtype is not supported"),
        (dict(fweights=T([1.0, 2, 3])), x, RuntimeError, "fweights to have integral dtype"),
        (dict(fweights=T([1, -2, 3])), x, RuntimeError, "fweights cannot be negative"),
        (dict(fweights=T([[1, 2, 3]])), x, RuntimeError, "fweights to have one or fewer dimensions"),
        (dict(fweights=T([1, 2])), x, RuntimeError, "same numel as there are observations in the input but got 2 != 3"),
        (dict(aweights=T([1, 1, 2])), x, RuntimeError, "aweights to have floating point dtype"),
        (dict(aweights=T([1.0, -1, 2])), x, RuntimeError, "aweights cannot be negative"),
        (dict(fweights=T([0, 0, 0])), x, RuntimeError, "weights sum to zero"),
        (dict(correction=0.5), x, TypeError, "must be int"),
    ]
    for kwargs, inp, exc, msg in cases:
        with pytest.raises(exc, match=msg):
            torch.cov(inp, **kwargs)


def test_corrcoef_matches_numpy():
    a = randn(4, 9, seed=14)
    close(torch.corrcoef(T(a)), np.corrcoef(a))
    close(T(a).corrcoef(), np.corrcoef(a))
    close(torch.corrcoef(T([[1, 2, 4], [1, 0, 3]])), np.corrcoef([[1, 2, 4], [1, 0, 3]]), rtol=1e-6)
    assert torch.corrcoef(T([1.0, 2, 4])).item() == 1.0                       # 1-d: a 0-d result
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = np.corrcoef([[1.0, 1, 1], [1, 2, 3]])                          # constant row: NaN
    close(torch.corrcoef(T([[1.0, 1, 1], [1, 2, 3]])), want)
    with pytest.raises(RuntimeError, match="corrcoef\\(\\): expected input to have two or fewer dimensions"):
        torch.corrcoef(torch.zeros(1, 1, 1))


# -- cdist / dist / renorm -------------------------------------------------------------------------
def _minkowski(u, v, p):
    d = np.abs(u - v)
    if p == 0:
        return float(np.count_nonzero(d))
    if p == INF:
        return float(d.max()) if d.size else 0.0
    return float((d ** p).sum() ** (1.0 / p))


def _cdist_ref(a, b, p):
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a = np.broadcast_to(a, batch + a.shape[-2:])
    b = np.broadcast_to(b, batch + b.shape[-2:])
    out = np.zeros(batch + (a.shape[-2], b.shape[-2]))
    for idx in np.ndindex(*batch):
        for i in range(a.shape[-2]):
            for j in range(b.shape[-2]):
                out[idx + (i, j)] = _minkowski(a[idx + (i,)], b[idx + (j,)], p)
    return out


@pytest.mark.parametrize("p", [0, 0.5, 1, 1.5, 2, 3, INF])
def test_cdist_matches_loop(p):
    a, b = randn(2, 1, 3, 4, seed=15), randn(5, 2, 4, seed=16)
    a[0, 0, 1, 2] = b[1, 0, 2]                      # a shared coordinate: p = 0 counts it out
    close(torch.cdist(T(a), T(b), p), _cdist_ref(a, b, p), rtol=1e-10, atol=1e-12)
    close(torch.cdist(T(a, torch.float32), T(b, torch.float32), p), _cdist_ref(a, b, p), rtol=1e-5, atol=1e-5)


def test_cdist_matrix_product_path():
    # p = 2 with more than 25 rows (or use_mm_for_euclid_dist) uses the matrix-product formulation
    a, b = randn(30, 5, seed=17), randn(4, 5, seed=18)
    want = _cdist_ref(a, b, 2)
    close(torch.cdist(T(a), T(b)), want, rtol=1e-9, atol=1e-9)
    close(torch.cdist(T(a[:3]), T(b), compute_mode="use_mm_for_euclid_dist"), want[:3], rtol=1e-9, atol=1e-9)
    close(torch.cdist(T(a), T(b), compute_mode="donot_use_mm_for_euclid_dist"), want, rtol=1e-12)
    d = N(torch.cdist(T(a), T(a)))                 # identical points: >= 0, 0 up to rounding
    assert (d >= 0).all() and np.abs(np.diag(d)).max() < 1e-6


def test_cdist_empty_and_errors():
    same(torch.cdist(torch.zeros(0, 4), torch.zeros(3, 4)), np.zeros((0, 3)))
    same(torch.cdist(torch.zeros(2, 0), torch.zeros(3, 0)), np.zeros((2, 3)))
    same(torch.cdist(torch.zeros(2, 2, 0), torch.zeros(3, 0), INF), np.zeros((2, 2, 3)))
    cases = [((T([1.0]), torch.zeros(2, 1)), {}, RuntimeError, "at least 2D tensors, X1 got: 1D"),
             ((torch.zeros(2, 2), torch.zeros(2, 3)), {}, RuntimeError, "same number of columns. X1: 2 X2: 3"),
             ((T([[1, 2]]), T([[1, 2]])), {}, RuntimeError, "floating-point dtypes, X1 got: Long"),
             ((torch.zeros(2, 2), torch.zeros(2, 2, dtype=torch.float64)), {}, RuntimeError, "expected scalar type"),
             ((torch.zeros(2, 2), torch.zeros(2, 2)), dict(p=-1), RuntimeError, "non-negative p values"),
             ((torch.zeros(2, 2), torch.zeros(2, 2)), dict(compute_mode="foo"), ValueError, "not a valid value"),
             ((torch.zeros(2, 3, 4), torch.zeros(3, 2, 4)), {}, RuntimeError, "must match the size"),
             ((torch.zeros(2, 2, dtype=torch.float16),) * 2, {}, NotImplementedError, "Half")]
    for args, kwargs, exc, msg in cases:
        with pytest.raises(exc, match=msg):
            torch.cdist(*args, **kwargs)


@pytest.mark.parametrize("p", [0, 1, 2, 3.5, INF, -1])
def test_dist_matches_numpy(p):
    a, b = randn(3, 4, seed=19), randn(4, seed=20)
    d = (a - b).ravel()
    want = np.linalg.norm(d, p) if p != 0 else np.count_nonzero(d)
    r = torch.dist(T(a), T(b), p)
    assert r.shape == ()
    close(r, want)
    close(T(a).dist(T(b), T(float(p))), want)


def test_dist_dtypes_and_errors():
    r = torch.dist(T([1.0, 2]), T([0, 0]))
    assert r.dtype is torch.float32
    close(r, math.sqrt(5), rtol=1e-6)
    with pytest.raises(RuntimeError, match="floating point"):
        torch.dist(T([1, 2]), T([0, 0]))


def _renorm_ref(a, p, dim, maxnorm):
    out = a.copy()
    for i in range(a.shape[dim]):
        s = np.take(a, i, axis=dim)
        n = np.abs(s).max() if p == INF else (np.abs(s) ** p).sum() ** (1 / p)
        if n > maxnorm:
            idx = [slice(None)] * a.ndim
            idx[dim] = i
            out[tuple(idx)] = s * (maxnorm / (n + 1e-7))
    return out


@pytest.mark.parametrize("p", [0.5, 1, 2, 3, INF])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_renorm_matches_loop(p, dim):
    a = randn(3, 4, 5, seed=21) * 2
    maxnorm = 1.5 if p != 0.5 else 30.0
    want = _renorm_ref(a, p, dim, maxnorm)
    assert not np.allclose(want, a)                 # some slices are scaled
    close(torch.renorm(T(a), p, dim, maxnorm), want)
    x = T(a)
    assert x.renorm_(p, dim, maxnorm) is x
    close(x, want)
    out = torch.zeros(0, dtype=torch.float64)
    assert torch.renorm(T(a), p, dim, maxnorm, out=out) is out
    close(out, want)


def test_renorm_errors():
    with pytest.raises(RuntimeError, match="non-positive-norm not supported"):
        torch.renorm(torch.ones(2, 2), 0, 0, 1)
    with pytest.raises(RuntimeError, match="maxnorm to be >= 0 but got -1"):
        torch.renorm(torch.ones(2, 2), 2, 0, -1)
    with pytest.raises(RuntimeError, match="at least 2 dimensions, got 1 dimensions"):
        torch.renorm(T([1.0, 2.0]), 2, 0, 1)
    with pytest.raises(RuntimeError, match="floating point"):
        torch.renorm(T([[1, 2]]), 2, 0, 1)
    with pytest.raises(IndexError):
        torch.renorm(torch.ones(2, 2), 2, 2, 1)


# -- scatter_reduce --------------------------------------------------------------------------------
def _scatter_reduce_ref(x, dim, index, src, reduce, include_self):
    out = x.copy()
    groups = collections.defaultdict(list)
    for pos in np.ndindex(*index.shape):
        tgt = list(pos)
        tgt[dim] = index[pos]
        groups[tuple(tgt)].append(src[pos])
    for tgt, vals in groups.items():
        if include_self:
            vals = [x[tgt]] + vals
        if reduce == "sum":
            v = np.sum(vals, dtype=x.dtype) if x.dtype != bool else any(vals)
        elif reduce == "prod":
            v = np.prod(vals, dtype=x.dtype) if x.dtype != bool else all(vals)
        elif reduce == "mean":
            v = np.sum(vals) // len(vals) if x.dtype.kind in "iu" else np.mean(vals)
        elif reduce == "amax":
            v = np.max(vals)                         # NaN propagates
        else:
            v = np.min(vals)
        out[tgt] = v
    return out


REDUCES = ["sum", "prod", "mean", "amax", "amin"]


@pytest.mark.parametrize("reduce", REDUCES)
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_scatter_reduce_matches_loop(reduce, include_self, dim):
    g = np.random.default_rng(22)
    x = g.standard_normal((3, 4, 5))
    d = dim % 3
    ishape = [2, 3, 4]
    ishape[d] = 7                                   # longer than x along dim: targets repeat
    index = g.integers(0, x.shape[d], ishape)
    src = g.standard_normal(tuple(s + 1 for s in ishape))          # larger than index: only a corner is read
    r = torch.scatter_reduce(T(x), dim, T(index), T(src), reduce, include_self=include_self)
    close(r, _scatter_reduce_ref(x, d, index, src, reduce, include_self), rtol=1e-12, atol=1e-12)
    r2 = T(x).scatter_reduce(dim, T(index, torch.int32), T(src), reduce=reduce, include_self=include_self)
    close(r2, N(r))


@pytest.mark.parametrize("reduce", REDUCES)
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("dtype", [torch.int64, torch.int16, torch.uint8])
def test_scatter_reduce_integers(reduce, include_self, dtype):
    g = np.random.default_rng(23)
    x = g.integers(0, 9, (3, 4)).astype(dtype.name)
    index = g.integers(0, 4, (3, 6))
    src = g.integers(0, 9, (3, 6)).astype(dtype.name)
    if dtype is torch.int64:
        x, src = x - 4, src - 4                     # negatives: integer mean rounds down
    r = torch.scatter_reduce(T(x, dtype), 1, T(index), T(src, dtype), reduce, include_self=include_self)
    same(r, _scatter_reduce_ref(x, 1, index, src, reduce, include_self), dtype)


@pytest.mark.parametrize("reduce", ["sum", "prod", "amax", "amin"])
def test_scatter_reduce_bool(reduce):
    x = np.array([True, False, True, False])
    index = np.array([0, 1, 1, 2, 3, 3])
    src = np.array([False, True, False, False, True, True])
    for inc in (True, False):
        same(torch.scatter_reduce(T(x), 0, T(index), T(src), reduce, include_self=inc),
             _scatter_reduce_ref(x, 0, index, src, reduce, inc), torch.bool)


def test_scatter_reduce_nan_empty_0d_inplace_and_out():
    same(torch.scatter_reduce(T([0.0, 0]), 0, T([0, 0, 1]), T([NAN, 1.0, 2.0]), "amax"), [NAN, 2.0])
    same(torch.scatter_reduce(T([0.0, 0]), 0, T([0, 0, 1]), T([1.0, NAN, 2.0]), "amin"), [NAN, 0.0])
    same(torch.scatter_reduce(T([NAN, 0]), 0, T([0, 1]), T([1.0, 2.0]), "amax"), [NAN, 2.0])
    x = T([1.0, 2.0, 3.0])
    same(torch.scatter_reduce(x, 0, torch.zeros(0, dtype=torch.int64), T([5.0]), "amax", include_self=False),
         [1.0, 2.0, 3.0])
    same(torch.scatter_reduce(T(1.0), 0, T(0), T(5.0), "sum"), np.float64(6.0))
    same(torch.scatter_reduce(torch.zeros(3), 0, T(0), T(1.0), "sum"), [1.0, 0.0, 0.0])   # 0-d counts as 1-d
    same(torch.scatter_reduce(T([1.0, 2], torch.float16), 0, T([1, 1]), T([2.0, 3], torch.float16), "mean",
                              include_self=False), [1.0, 2.5], torch.float16)
    y = T([1.0, 2.0, 3.0, 4.0])
    assert y.scatter_reduce_(0, T([0, 1, 0]), T([2.0, 3.0, 4.0]), "prod") is y
    same(y, [8.0, 6.0, 3.0, 4.0])
    out = torch.zeros(4)
    assert torch.scatter_reduce(torch.ones(4), 0, T([3]), T([2.0]), "sum", out=out) is out
    same(out, [1.0, 1.0, 1.0, 3.0])


def test_scatter_reduce_errors():
    x, i, s = T([1.0, 2.0]), T([0, 1]), T([1.0, 2.0])
    cases = [((x, 0, i, s, "foo"), RuntimeError, "must be either sum, prod, mean, amax or amin, got foo"),
             ((x, 0, i, s.double(), "sum"), RuntimeError, "Expected self.dtype to be equal to src.dtype"),
             ((x, 0, i.float(), s, "sum"), RuntimeError, "Expected dtype int32/int64 for index"),
             ((x, 0, T([0, 9]), s, "sum"), RuntimeError, "index 9 is out of bounds for dimension 0 with size 2"),
             ((x, 0, T([0, -1]), s, "sum"), RuntimeError, "index -1 is out of bounds"),
             ((x, 0, T([[0]]), s, "sum"), RuntimeError, "same number of dimensions as self"),
             ((x, 0, T([0, 0, 0]), s, "sum"), RuntimeError, "no larger size than src"),
             ((T([True]), 0, T([0]), T([True]), "mean"), NotImplementedError, "Bool"),
             ((x, 0, i, 1.0, "sum"), TypeError, "'src'"),
             ((x, 1, i, s, "sum"), IndexError, "Dimension out of range")]
    for args, exc, msg in cases:
        with pytest.raises(exc, match=msg):
            torch.scatter_reduce(*args)
    with pytest.raises(RuntimeError, match="dtype"):
        torch.scatter_reduce(x, 0, i, s, "sum", out=torch.zeros(2, dtype=torch.float64))


# -- select_scatter / slice_scatter / diagonal_scatter ---------------------------------------------
def test_select_scatter_matches_numpy():
    a, s = randn(3, 4, 5), randn(3, 5, seed=1)
    want = a.copy()
    want[:, -1] = s
    x = T(a)
    r = torch.select_scatter(x, T(s), 1, -1)
    same(r, want, torch.float64)
    r[0, 0, 0] = 100.0                              # a new tensor: x is untouched
    same(x, a)
    s2 = randn(3, 4, seed=2)
    same(T(a).select_scatter(T(s2), 2, 0), np.concatenate([s2[..., None], a[..., 1:]], -1))
    same(torch.select_scatter(torch.zeros(2, 2, dtype=torch.int64), T([1.5, 2.7]), 1, 0), [[1, 0], [2, 0]])


@pytest.mark.parametrize("dim, start, end, step", [(0, 1, 3, 1), (1, None, None, 2), (1, 1, None, 3),
                                                   (-1, -3, -1, 1), (1, 4, 100, 1), (1, 4, 2, 1), (0, None, 2, 5)])
def test_slice_scatter_matches_numpy(dim, start, end, step):
    a = randn(4, 6)
    key = [slice(None)] * 2
    key[dim] = slice(start, end, step)
    s = randn(*a[tuple(key)].shape, seed=3)
    want = a.copy()
    want[tuple(key)] = s
    same(torch.slice_scatter(T(a), T(s), dim, start, end, step), want)
    out = torch.zeros(0, dtype=torch.float64)
    assert torch.slice_scatter(T(a), T(s), dim, start, end, step, out=out) is out
    same(out, want)


@pytest.mark.parametrize("offset, d1, d2", [(0, 0, 1), (1, 0, 1), (-1, 0, 1), (2, 2, 0), (-1, 1, 2), (0, -1, -3)])
def test_diagonal_scatter_matches_numpy(offset, d1, d2):
    a = randn(3, 4, 5)
    want = a.copy()
    view = np.diagonal(want, offset, d1, d2)            # read-only; write through index arrays instead
    s = randn(*view.shape, seed=4)
    moved = np.moveaxis(want, (d1 % 3, d2 % 3), (-2, -1))
    r0, c0 = max(-offset, 0), max(offset, 0)
    for i in range(view.shape[-1]):
        moved[..., i + r0, i + c0] = s[..., i]
    same(torch.diagonal_scatter(T(a), T(s), offset, d1, d2), want)
    same(T(a).diagonal_scatter(T(s), offset, d1, d2), want)


def test_scatter_variants_cast_and_errors():
    same(torch.diagonal_scatter(torch.zeros(3, 3), T([1, 2, 3])), np.diag([1.0, 2, 3]), torch.float32)
    same(torch.slice_scatter(torch.zeros(2, 2), torch.ones(2, 2, dtype=torch.int64)), np.ones((2, 2)), torch.float32)
    same(torch.diagonal_scatter(torch.zeros(3, 3), torch.zeros(0), 5), np.zeros((3, 3)))
    with pytest.raises(RuntimeError, match=r"src size = \[3\], slice size = \[2\]"):
        torch.select_scatter(torch.zeros(2, 3), T([1.0, 2, 3]), 1, 0)
    with pytest.raises(RuntimeError, match="equal to the slice of self"):
        torch.select_scatter(torch.zeros(2, 3), T([1.0]), 1, 0)          # no broadcasting
    with pytest.raises(IndexError, match="out of range"):
        torch.select_scatter(torch.zeros(2, 3), T([1.0, 2]), 1, 3)
    with pytest.raises(IndexError, match="0-dim"):
        torch.select_scatter(T(1.0), T(2.0), 0, 0)
    with pytest.raises(RuntimeError, match=r"src size = \[2, 3\], slice size = \[2, 2\]"):
        torch.slice_scatter(torch.zeros(2, 6), torch.ones(2, 3), 1, 4, 100)
    with pytest.raises(RuntimeError, match="slice step must be positive"):
        torch.slice_scatter(torch.zeros(2, 6), torch.ones(2, 0), 1, step=0)
    with pytest.raises(IndexError, match="0-dim"):
        torch.slice_scatter(T(1.0), T(2.0))
    with pytest.raises(RuntimeError, match=r"src size = \[2\], slice size = \[3\]"):
        torch.diagonal_scatter(torch.zeros(3, 4), T([1.0, 2.0]))
    with pytest.raises(RuntimeError, match="diagonal dimensions cannot be identical"):
        torch.diagonal_scatter(torch.zeros(3, 3), T([1.0, 2, 3]), 0, 1, 1)


# -- broadcast_shapes / exports --------------------------------------------------------------------
@pytest.mark.parametrize("shapes", [((2, 1), (3, 1, 4)), (2, (3, 1)), (), ((0, 3), (1, 3)), ((0,), (1,)),
                                    ((5, 1, 1), [1, 4, 1], (3,)), ((),)])
def test_broadcast_shapes_matches_numpy(shapes):
    r = torch.broadcast_shapes(*shapes)
    assert isinstance(r, torch.Size)
    assert tuple(r) == np.broadcast_shapes(*[(s,) if isinstance(s, int) else tuple(s) for s in shapes])


def test_broadcast_shapes_errors():
    with pytest.raises(RuntimeError, match=r"dimension of length 3 at -2! Mismatching argument at index 2 had "
                                           r"\(3, 3\); but expected shape should be broadcastable to \[2, 3\]"):
        torch.broadcast_shapes((2, 1), (1, 3), (3, 3))
    with pytest.raises(ValueError, match="negative length"):
        torch.broadcast_shapes((-1, 3), (1, 3))
    with pytest.raises(RuntimeError, match="Input shapes should be of type ints"):
        torch.broadcast_shapes(T(2))


def test_exports():
    assert torch.pdist is torch.nn.functional.pdist
    assert torch.trapz is torch.trapezoid
    for name in ("diff", "bincount", "histc", "rot90", "quantile", "nanquantile", "cov", "corrcoef", "dist",
                 "renorm", "renorm_", "scatter_reduce", "scatter_reduce_", "select_scatter", "slice_scatter",
                 "diagonal_scatter", "diagflat"):
        assert callable(getattr(torch.Tensor, name)), name


# -- another backend ---------------------------------------------------------------------------------
@pytest.fixture
def standin():
    """The CUDA backend over tests/cuda's NumPy-based CuPy stand-in, as device "fakecuda" (it rejects
    NumPy arrays where device arrays are expected, so an op reaching into _data with NumPy fails)."""
    import os
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "cuda"))
    import fake_cupy
    from _standin import make_standin, register
    fake_cupy.reset(devices=2)
    yield register(make_standin())
    fake_cupy.reset(devices=2)


_G = np.random.default_rng(30)
_X, _IX = _G.standard_normal((4, 6)), _G.integers(0, 6, (4, 9))
STANDIN_CASES = [
    ("bincount", lambda a, w: torch.bincount(a, w, minlength=9), _G.integers(0, 7, 30), _G.standard_normal(30)),
    ("histc", lambda a: torch.histc(a, 7), _X),
    ("searchsorted", lambda s, v: torch.searchsorted(s, v, side="right"), np.sort(_G.integers(0, 9, (4, 11))),
     _G.integers(-1, 10, (4, 5))),
    ("searchsorted_sorter", lambda s, v, o: torch.searchsorted(s, v, sorter=o), _X[0], _X[1], np.argsort(_X[0])),
    ("bucketize", lambda s, v: torch.bucketize(v, s, out_int32=True), np.sort(_G.standard_normal(13)), _X),
    ("isin", lambda a, b: torch.isin(a, b, invert=True), _G.integers(0, 9, (3, 4)), _G.integers(0, 9, 5)),
    ("isin_scalar", lambda a: torch.isin(a, 3), _G.integers(0, 9, (3, 4))),
    ("unravel_index", lambda a: torch.unravel_index(a, (3, 4, 5)), _G.integers(0, 60, 7)),
    ("combinations", lambda a: torch.combinations(a, 3), _G.standard_normal(5)),
    ("vander_int", lambda a: torch.vander(a, 4), _G.integers(-3, 3, 5)),
    ("quantile", lambda a: torch.quantile(a, 0.3, 1, interpolation="nearest"), _X),
    ("nanquantile", lambda a, q: torch.nanquantile(a, q, 0), np.where(_X > 1, np.nan, _X), np.array([0.2, 0.9])),
    ("cov_fweights", lambda a, f: torch.cov(a, fweights=f), _X, _G.integers(1, 3, 6)),
    ("cdist_mm", lambda a, b: torch.cdist(a, b, compute_mode="use_mm_for_euclid_dist"), _X, _X[:2]),
    *[(f"scatter_reduce_{red}_int", lambda a, i, s, red=red: torch.scatter_reduce(a, 1, i, s, red),
       _G.integers(-5, 5, (4, 6)), _IX, _G.integers(-5, 5, (4, 9))) for red in REDUCES],
    ("diagonal_scatter", lambda a, s: torch.diagonal_scatter(a, s, 1), _X, _G.standard_normal(4)),
]


@pytest.mark.parametrize("case", STANDIN_CASES, ids=lambda c: c[0])
def test_ops_on_another_backend(standin, case):
    _, fn, *arrays = case
    want = fn(*[T(a) for a in arrays])
    got = fn(*[T(a).to("fakecuda") for a in arrays])
    want, got = (want, got) if isinstance(want, tuple) else ((want,), (got,))
    for w, g_ in zip(want, got):
        assert g_.device == torch.device("fakecuda:0") and g_.dtype is w.dtype
        same(g_.cpu(), N(w))


def test_tri_indices_on_another_backend(standin):
    r = torch.triu_indices(4, 5, 1, dtype=torch.int32, device="fakecuda")
    assert r.device == torch.device("fakecuda:0") and r.dtype is torch.int32
    same(r.cpu(), np.stack(np.triu_indices(4, 1, 5)))
