"""Reductions, scans and sorting: values against float64 NumPy references over dims and keepdim
(contiguous, permuted, 0-d and empty inputs), dtype rules, NaN handling, return types, and
gradients against finite differences (first and second order)."""
import math
import pickle

import numpy as np
import pytest

import tensorplug as torch
from tensorplug.autograd import gradcheck, gradgradcheck
from tensorplug.ops import reduction

# `norm` is also defined by ops/linalg.py (which is exported later and so wins as tensorplug.norm /
# Tensor.norm); these tests exercise the reduction family's own implementation.
norm = reduction.norm

NAN = float("nan")
INF = float("inf")


def f64(t):
    return np.asarray(t.detach().numpy(), dtype=np.float64)


def randn(*shape, seed=0, requires_grad=False):
    rng = np.random.default_rng(seed)
    return torch.tensor(rng.standard_normal(shape), dtype=torch.float64, requires_grad=requires_grad)


def distinct(*shape, seed=0, requires_grad=False, positive=False):
    """float64 values without ties (and away from zero when positive), for gradient checks."""
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    vals = rng.permutation(n).astype(np.float64) / n + 0.25
    if not positive:
        vals = vals * rng.choice([-1.0, 1.0], size=n)
    return torch.tensor(vals.reshape(shape), dtype=torch.float64, requires_grad=requires_grad)


def inputs_for_values():
    """(name, tensor, its numpy array): contiguous, non-contiguous (permuted) and 0-d inputs."""
    rng = np.random.default_rng(1)
    a = rng.standard_normal((2, 3, 4))
    b = rng.standard_normal((4, 2, 3))
    return [("contiguous", torch.tensor(a), a),
            ("permuted", torch.tensor(b).permute(1, 2, 0), b.transpose(1, 2, 0))]


def np_axis(dim, ndim):
    if dim is None or dim == ():
        return None
    if isinstance(dim, int):
        return dim % ndim if ndim else None
    return tuple(sorted(d % ndim for d in dim))


def np_logsumexp(a, axis=None, keepdims=False):
    m = np.max(a, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    r = np.log(np.sum(np.exp(a - m), axis=axis, keepdims=True)) + m
    return r if keepdims else np.squeeze(r, axis=axis) if axis is not None else r.reshape(())


def np_norm(p):
    def ref(a, axis=None, keepdims=False):
        ab = np.abs(a)
        if p == INF:
            return np.max(ab, axis=axis, keepdims=keepdims)
        if p == -INF:
            return np.min(ab, axis=axis, keepdims=keepdims)
        if p == 0:
            return np.sum(a != 0, axis=axis, keepdims=keepdims).astype(np.float64)
        return np.sum(ab ** p, axis=axis, keepdims=keepdims) ** (1.0 / p)
    return ref


# (our op, NumPy reference) with signature (x, dim, keepdim) / (a, axis, keepdims)
REDUCTIONS = {
    "sum": (lambda x, d, k: torch.sum(x, d, k), np.sum),
    "mean": (lambda x, d, k: torch.mean(x, d, k), np.mean),
    "nansum": (lambda x, d, k: torch.nansum(x, d, k), np.nansum),
    "nanmean": (lambda x, d, k: torch.nanmean(x, d, k), np.nanmean),
    "prod": (lambda x, d, k: torch.prod(x, d, k), np.prod),
    "amax": (lambda x, d, k: torch.amax(x, () if d is None else d, k), np.max),
    "amin": (lambda x, d, k: x.amin(() if d is None else d, k), np.min),
    "var": (lambda x, d, k: torch.var(x, d, keepdim=k),
            lambda a, axis, keepdims: np.var(a, axis=axis, ddof=1, keepdims=keepdims)),
    "var_biased": (lambda x, d, k: x.var(d, unbiased=False, keepdim=k), np.var),
    "std": (lambda x, d, k: x.std(d, keepdim=k),
            lambda a, axis, keepdims: np.std(a, axis=axis, ddof=1, keepdims=keepdims)),
    "std_correction2": (lambda x, d, k: x.std(d, keepdim=k, correction=2),
                        lambda a, axis, keepdims: np.std(a, axis=axis, ddof=2, keepdims=keepdims)),
    "logsumexp": (lambda x, d, k: torch.logsumexp(x, d, k), np_logsumexp),
    "norm_2": (lambda x, d, k: norm(x, 2, dim=d, keepdim=k), np_norm(2.0)),
    "norm_1": (lambda x, d, k: norm(x, 1, d, k), np_norm(1.0)),
    "norm_3": (lambda x, d, k: norm(x, 3, d, k), np_norm(3.0)),
    "norm_0.5": (lambda x, d, k: norm(x, 0.5, d, k), np_norm(0.5)),
    "norm_inf": (lambda x, d, k: norm(x, INF, d, k), np_norm(INF)),
    "norm_-inf": (lambda x, d, k: norm(x, -INF, d, k), np_norm(-INF)),
    "norm_0": (lambda x, d, k: norm(x, 0, d, k), np_norm(0)),
    "any": (lambda x, d, k: (x > 0.5).any(d, k),
            lambda a, axis, keepdims: np.any(a > 0.5, axis=axis, keepdims=keepdims)),
    "all": (lambda x, d, k: (x > -1.5).all(d, k),
            lambda a, axis, keepdims: np.all(a > -1.5, axis=axis, keepdims=keepdims)),
}
DIMS = [None, 0, 1, -1, (0, 2), (-1, 0), (0, 1, 2), [1]]


@pytest.mark.filterwarnings("ignore:.*degrees of freedom")    # std with correction=2 over a size-2 dim
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("name", sorted(REDUCTIONS))
@pytest.mark.parametrize("keepdim", [False, True])
def test_reduction_values(name, keepdim):
    """Each reduction matches its NumPy reference over every dim form, with and without keepdim."""
    op, ref = REDUCTIONS[name]
    for layout, x, a in inputs_for_values():
        for dim in DIMS:
            got = op(x, dim, keepdim)
            want = np.asarray(ref(a, axis=np_axis(dim, a.ndim), keepdims=keepdim))
            assert tuple(got.shape) == want.shape, (name, layout, dim, keepdim)
            np.testing.assert_allclose(f64(got), want, rtol=1e-10, atol=1e-12, err_msg=f"{name} {layout} {dim}")


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_reduction_of_0d(name):
    """A 0-d input reduces to a 0-d result over dim None, 0 and -1."""
    op, ref = REDUCTIONS[name]
    a = np.array(0.75)
    x = torch.tensor(a)
    for dim in (None, 0, -1):
        for keepdim in (False, True):
            if name.startswith(("var", "std")):
                continue  # one element: degrees of freedom <= 0 (checked separately)
            got = op(x, dim, keepdim)
            assert got.shape == ()
            np.testing.assert_allclose(f64(got), np.asarray(ref(a, axis=None, keepdims=False)), rtol=1e-12)
    with pytest.raises(IndexError):
        op(x, 1, False)


def test_dim_out_of_range_raises_index_error():
    x = torch.zeros(2, 3)
    for fn in (lambda: x.sum(2), lambda: x.mean(-3), lambda: x.max(2), lambda: x.argmax(5),
               lambda: x.cumsum(2), lambda: x.sort(2), lambda: x.softmax(3), lambda: x.amax((0, 2))):
        with pytest.raises(IndexError, match="Dimension out of range"):
            fn()
    with pytest.raises(RuntimeError, match="appears multiple times"):
        x.sum((0, 0))


# -- seed statements -----------------------------------------------------------------------------
def test_seed_keepdim_false_by_default():
    """keepdim=False is the default: a full sum is 0-d, sum(1) of (2, 3) has shape (2,)."""
    assert torch.sum(torch.randn(10, 20)).shape == ()
    x = torch.randn(2, 3)
    assert x.sum(1).shape == (2,)
    assert x.sum(1, keepdim=True).shape == (2, 1)
    for name in ("mean", "prod", "var", "std", "amax", "amin", "logsumexp", "norm", "nansum", "count_nonzero"):
        assert getattr(x, name)(dim=1).shape == (2,), name
    assert x.max(1).values.shape == (2,) and x.min(0)[1].shape == (3,)
    assert x.median(1).values.shape == (2,)
    assert x.argmax(1).shape == (2,)
    assert x.any(1).shape == (2,) and x.all(0).shape == (3,)


def test_seed_keepdim_false_avoids_accidental_broadcast():
    """Seed 000: sum(1) of ones(2, 3) is [3, 3]; keepdim=True would broadcast against ones(4)."""
    assert torch.sum(torch.ones(2, 3), 1).tolist() == [3.0, 3.0]
    r = torch.add(torch.ones(4), torch.ones(4, 4).sum(dim=1, keepdim=True))
    assert r.shape == (4, 4) and r.tolist() == [[5.0] * 4] * 4
    r = torch.add(torch.ones(4), torch.ones(4, 4).sum(dim=1, keepdim=False))
    assert r.shape == (4,) and r.tolist() == [5.0] * 4


def test_seed_var_std_unbiased():
    x = torch.tensor([1.0, 2.0, 3.0, 4.0])
    assert math.isclose(x.var().item(), 5 / 3, rel_tol=1e-6)
    assert math.isclose(x.var(unbiased=False).item(), 1.25, rel_tol=1e-6)
    assert math.isclose(x.var(False).item(), 1.25, rel_tol=1e-6)       # legacy positional unbiased
    assert math.isclose(x.std(unbiased=True).item(), math.sqrt(5 / 3), rel_tol=1e-6)
    assert math.isclose(x.std(correction=0).item(), math.sqrt(1.25), rel_tol=1e-6)
    m = torch.tensor([[1.0, 2.0], [3.0, 5.0]])
    assert np.allclose(f64(torch.var(m, 1, True, True)), [[0.5], [2.0]])
    assert np.allclose(f64(m.var(0, unbiased=False)), [1.0, 2.25])
    with pytest.raises(RuntimeError, match="both"):
        x.var(unbiased=True, correction=1)


def test_seed_median_without_argument_reduces_everything():
    x = torch.tensor([[5.0, 1.0, 4.0], [2.0, 3.0, 6.0]])
    m = x.median()
    assert m.shape == () and m.item() == 3.0            # lower median of 6 values
    assert torch.tensor([1, 2, 3, 4]).median().item() == 2
    assert torch.median(torch.tensor([3.0, 1.0, 2.0])).item() == 2.0
    r = x.median(1)
    assert r.values.tolist() == [4.0, 3.0] and r.indices.tolist() == [2, 1]


def test_sum_of_ints_is_int64_and_argmax_on_ints():
    for dt in (torch.int8, torch.int32, torch.int64, torch.uint8, torch.bool):
        x = torch.tensor([[1, 0, 1], [1, 1, 0]], dtype=dt)
        assert x.sum().dtype is torch.int64 and x.sum().item() == 4
        assert x.prod(1).dtype is torch.int64
        assert x.cumsum(1).dtype is torch.int64
    i = torch.tensor([[3, 9, 2], [7, 1, 7]])
    assert i.argmax().item() == 1
    assert i.argmax(1).tolist() == [1, 0]          # first maximum on ties
    assert i.argmin(0).tolist() == [0, 1, 0]
    assert i.max().item() == 9 and i.max().dtype is torch.int64
    assert i.max(1).values.tolist() == [9, 7] and i.max(1).indices.tolist() == [1, 0]
    assert i.sort(1).values.tolist() == [[2, 3, 9], [1, 7, 7]]
    assert i.median().item() == 3
    assert i.sum(dtype=torch.float64).dtype is torch.float64
    assert i.count_nonzero().item() == 6
    assert i.mean(dtype=torch.float32).item() == pytest.approx(29 / 6)


def test_float_only_reductions_reject_ints():
    i = torch.tensor([1, 2, 3])
    with pytest.raises(RuntimeError, match=r"mean\(\): could not infer output dtype.*Got: Long"):
        i.mean()
    with pytest.raises(RuntimeError, match="could not infer output dtype"):
        torch.tensor([1.0]).mean(dtype=torch.int64)
    with pytest.raises(RuntimeError, match="std and var only support floating point"):
        i.var()
    with pytest.raises(RuntimeError, match="Expected a floating point"):
        norm(i)
    # integer inputs to logsumexp / softmax compute in the default float type
    assert i.logsumexp(0).dtype is torch.float32
    assert i.softmax(0).dtype is torch.float32


# -- empty inputs ------------------------------------------------------------------------------------
def test_empty_reductions():
    e = torch.zeros(0)
    assert e.sum().item() == 0 and e.sum().shape == ()
    assert e.prod().item() == 1
    assert math.isnan(e.mean().item())
    assert math.isnan(e.median().item())
    assert norm(e).item() == 0
    assert e.logsumexp(0).item() == -INF
    assert e.any().item() is False and e.all().item() is True
    assert e.count_nonzero().item() == 0
    with pytest.raises(RuntimeError, match=r"max\(\): Expected reduction dim to be specified for input.numel\(\) == 0"):
        e.max()
    with pytest.raises(RuntimeError, match="numel"):
        e.min()
    with pytest.raises(RuntimeError, match="numel"):
        e.argmax()
    m = torch.zeros(0, 3)
    assert m.sum(0).tolist() == [0, 0, 0] and m.sum(1).shape == (0,)
    assert m.prod(0).tolist() == [1, 1, 1]
    assert all(math.isnan(v) for v in m.mean(0).tolist()) and m.mean(1).shape == (0,)
    with pytest.raises(IndexError, match=r"max\(\): Expected reduction dim 0 to have non-zero size"):
        m.max(0)
    with pytest.raises(IndexError, match="non-zero size"):
        m.amax(0)
    with pytest.raises(IndexError, match="non-zero size"):
        m.median(0)
    v, i = m.max(1)
    assert v.shape == (0,) and i.shape == (0,) and i.dtype is torch.int64
    assert m.amax(1).shape == (0,)
    assert m.cumsum(0).shape == (0, 3) and m.cumprod(1).shape == (0, 3)
    assert m.sort(0).values.shape == (0, 3)
    assert m.softmax(0).shape == (0, 3) and m.log_softmax(1).shape == (0, 3)
    assert m.topk(0, 0).values.shape == (0, 3)
    assert m.cummax(0).values.shape == (0, 3)
    assert torch.unique(e).shape == (0,)


def test_var_with_no_degrees_of_freedom():
    with pytest.warns(UserWarning, match="degrees of freedom"):
        assert math.isnan(torch.tensor([1.0]).std().item())
    with pytest.warns(UserWarning, match="degrees of freedom"):
        assert torch.tensor([1.0, 2.0]).var(correction=3).item() == INF


# -- max / min and their return types -------------------------------------------------------------
def test_max_min_with_dim_values_and_indices():
    for layout, x, a in inputs_for_values():
        for dim in (0, 1, 2, -1):
            for keepdim in (False, True):
                for op, vref, iref in ((torch.max, np.max, np.argmax), (torch.min, np.min, np.argmin)):
                    v, i = op(x, dim, keepdim)
                    np.testing.assert_array_equal(f64(v), vref(a, axis=dim, keepdims=keepdim))
                    np.testing.assert_array_equal(i.numpy(), iref(a, axis=dim, keepdims=keepdim))
                    assert i.dtype is torch.int64
        np.testing.assert_array_equal(f64(x.max()), a.max())
        np.testing.assert_array_equal(f64(x.min()), a.min())
        assert x.argmax().item() == np.argmax(a) and x.argmin().item() == np.argmin(a)
        assert x.argmax(keepdim=True).shape == (1, 1, 1)
        np.testing.assert_array_equal(x.argmin(1, keepdim=True).numpy(), np.argmin(a, 1, keepdims=True))


def test_max_return_type_is_named_tuple():
    x = torch.tensor([[1.0, 5.0, 2.0], [7.0, 0.0, 3.0]])
    r = x.max(dim=1)
    assert r.values.tolist() == [5.0, 7.0] and r.indices.tolist() == [1, 0]
    v, i = r
    assert r[0] is v and r[1] is i and len(r) == 2
    assert repr(r).startswith("tensorplug.return_types.max(\nvalues=tensor(")
    assert type(torch.sort(x)).__name__ == "sort"
    assert isinstance(r, tuple) and type(r) is torch.return_types.max
    assert pickle.loads(pickle.dumps(r)).indices.tolist() == [1, 0]
    mm = torch.aminmax(x)
    assert mm.min.item() == 0.0 and mm.max.item() == 7.0
    assert torch.aminmax(x, dim=0).max.tolist() == [7.0, 5.0, 3.0]


def test_max_binary_form_delegates_to_maximum():
    a = torch.tensor([1.0, 5.0, 2.0])
    b = torch.tensor([3.0, 4.0, 2.5])
    assert torch.max(a, b).tolist() == [3.0, 5.0, 2.5]
    assert torch.min(a, b).tolist() == [1.0, 4.0, 2.0]
    assert a.max(b).tolist() == [3.0, 5.0, 2.5]
    assert torch.max(a, other=b).tolist() == [3.0, 5.0, 2.5]


def test_max_on_0d():
    x = torch.tensor(2.5)
    assert x.max().item() == 2.5
    v, i = x.max(0)
    assert v.shape == () and i.shape == () and v.item() == 2.5 and i.item() == 0
    assert x.argmax(0).item() == 0 and x.argmax().item() == 0


def test_nan_propagates_in_max_min():
    x = torch.tensor([[1.0, NAN, 3.0], [2.0, 5.0, 0.0]])
    assert math.isnan(x.max().item()) and math.isnan(x.min().item())
    v, i = x.max(1)
    assert math.isnan(v[0].item()) and v[1].item() == 5.0 and i.tolist() == [1, 1]
    v, i = x.min(1)
    assert math.isnan(v[0].item()) and i.tolist() == [1, 2]
    am = x.amax(1)
    assert math.isnan(am[0].item()) and am[1].item() == 5.0
    assert x.argmax().item() == 1
    assert math.isnan(x.median().item())
    assert x.nanmedian().item() == 2.0
    assert math.isnan(x.median(1).values[0].item()) and x.median(1).indices[0].item() == 1
    assert x.nanmedian(1).values.tolist() == [1.0, 2.0]
    assert x.nansum().item() == 11.0 and x.nanmean().item() == pytest.approx(2.2)
    assert math.isnan(x.sum().item()) and math.isnan(x.logsumexp(1)[0].item())
    c = torch.tensor([1.0, NAN, 3.0, 1.0]).cummax(0)
    assert c.indices.tolist() == [0, 1, 1, 1] and math.isnan(c.values[3].item())


# -- scans -----------------------------------------------------------------------------------------------
def test_cumsum_cumprod_values():
    for layout, x, a in inputs_for_values():
        for dim in (0, 1, 2, -1):
            np.testing.assert_allclose(f64(x.cumsum(dim)), np.cumsum(a, axis=dim), rtol=1e-12)
            np.testing.assert_allclose(f64(torch.cumprod(x, dim=dim)), np.cumprod(a, axis=dim), rtol=1e-12)
    x = torch.tensor([1.0, 2.0, 3.0])
    assert x.cumsum(0, dtype=torch.float64).dtype is torch.float64
    assert torch.tensor(3.0).cumsum(0).item() == 3.0 and torch.tensor(3.0).cumprod(0).shape == ()
    assert torch.tensor([True, True, False]).cumsum(0).tolist() == [1, 2, 2]


def np_cumext(a, dim, better):
    a = np.moveaxis(a, dim, -1)
    vals = np.empty_like(a)
    idx = np.empty(a.shape, dtype=np.int64)
    for pos in np.ndindex(*a.shape[:-1]):
        best, bi = a[pos + (0,)], 0
        for j in range(a.shape[-1]):
            if better(a[pos + (j,)], best):
                best, bi = a[pos + (j,)], j
            vals[pos + (j,)], idx[pos + (j,)] = best, bi
    return np.moveaxis(vals, -1, dim), np.moveaxis(idx, -1, dim)


def test_cummax_cummin_values_and_tie_indices():
    rng = np.random.default_rng(3)
    a = rng.integers(0, 4, size=(3, 5)).astype(np.float64)   # many ties
    x = torch.tensor(a)
    for dim in (0, 1, -1):
        v, i = x.cummax(dim)
        rv, ri = np_cumext(a, dim % 2, lambda u, b: u >= b)   # ties move to the later index
        np.testing.assert_array_equal(f64(v), rv)
        np.testing.assert_array_equal(i.numpy(), ri)
        v, i = torch.cummin(x, dim)
        rv, ri = np_cumext(a, dim % 2, lambda u, b: u <= b)
        np.testing.assert_array_equal(f64(v), rv)
        np.testing.assert_array_equal(i.numpy(), ri)
    assert torch.tensor([1, 3, 3, 1]).cummax(0).indices.tolist() == [0, 1, 2, 2]


def test_logcumsumexp_is_stable():
    a = np.array([[1000.0, 1001.0, 999.0], [-1.0, 2.0, 0.5]])
    got = f64(torch.logcumsumexp(torch.tensor(a), 1))
    want = np.logaddexp.accumulate(a, axis=1)
    np.testing.assert_allclose(got, want, rtol=1e-12)


# -- sorting and selection --------------------------------------------------------------------------------
def test_sort_values_indices_and_stability():
    for layout, x, a in inputs_for_values():
        for dim in (0, 1, -1):
            v, i = x.sort(dim)
            np.testing.assert_array_equal(f64(v), np.sort(a, axis=dim))
            np.testing.assert_array_equal(i.numpy(), np.argsort(a, axis=dim, kind="stable"))
            v, i = torch.sort(x, dim, descending=True)
            np.testing.assert_array_equal(f64(v), -np.sort(-a, axis=dim))
            np.testing.assert_array_equal(torch.argsort(x, dim).numpy(), np.argsort(a, axis=dim, kind="stable"))
    t = torch.tensor([2, 1, 2, 1, 2, 0])
    v, i = t.sort(stable=True)
    assert v.tolist() == [0, 1, 1, 2, 2, 2] and i.tolist() == [5, 1, 3, 0, 2, 4]
    v, i = t.sort(descending=True, stable=True)      # ties keep their original order
    assert v.tolist() == [2, 2, 2, 1, 1, 0] and i.tolist() == [0, 2, 4, 1, 3, 5]
    assert t.argsort(descending=True).tolist() == [0, 2, 4, 1, 3, 5]
    f = torch.tensor([3.0, NAN, 1.0, INF])
    assert f.sort().indices.tolist() == [2, 0, 3, 1]                  # NaN sorts last
    assert f.sort(descending=True).indices.tolist() == [1, 3, 0, 2]   # and first when descending
    assert torch.msort(torch.tensor([[3, 1], [1, 2]])).tolist() == [[1, 1], [3, 2]]
    z = torch.tensor(4.0).sort()
    assert z.values.item() == 4.0 and z.indices.item() == 0


def test_topk_and_kthvalue():
    for layout, x, a in inputs_for_values():
        for dim in (0, 1, -1):
            n = a.shape[dim]
            for k in range(n + 1):
                v, i = x.topk(k, dim)
                np.testing.assert_array_equal(f64(v), np.take(-np.sort(-a, axis=dim), range(k), axis=dim))
                np.testing.assert_array_equal(f64(v), np.take_along_axis(a, i.numpy(), axis=dim))
                v, i = torch.topk(x, k, dim, largest=False)
                np.testing.assert_array_equal(f64(v), np.take(np.sort(a, axis=dim), range(k), axis=dim))
            for k in range(1, n + 1):
                for keepdim in (False, True):
                    v, i = x.kthvalue(k, dim, keepdim)
                    want = np.take(np.sort(a, axis=dim), [k - 1], axis=dim)
                    np.testing.assert_array_equal(f64(v), want if keepdim else want.squeeze(dim))
                    np.testing.assert_array_equal(np.take_along_axis(a, i.numpy().reshape(want.shape), axis=dim), want)
    assert torch.topk(torch.tensor([1.0, 5.0, 5.0, 2.0]), 2).values.tolist() == [5.0, 5.0]
    with pytest.raises(RuntimeError, match="k out of range"):
        torch.tensor([1.0, 2.0]).topk(3)
    with pytest.raises(RuntimeError, match="k out of range"):
        torch.tensor([1.0, 2.0]).kthvalue(0)


def test_median_values_over_dims():
    for layout, x, a in inputs_for_values():
        flat = np.sort(a.reshape(-1))
        assert x.median().item() == flat[(flat.size - 1) // 2]
        for dim in (0, 1, 2, -1):
            for keepdim in (False, True):
                v, i = x.median(dim, keepdim)
                s = np.sort(a, axis=dim)
                want = np.take(s, [(a.shape[dim] - 1) // 2], axis=dim)
                np.testing.assert_array_equal(f64(v), want if keepdim else want.squeeze(dim))
                got_at_i = np.take_along_axis(a, i.numpy().reshape(want.shape), axis=dim)
                np.testing.assert_array_equal(got_at_i, want)


def test_mode():
    r = torch.tensor([3, 1, 3, 1, 2]).mode()
    assert r.values.item() == 1 and r.indices.item() == 3     # smallest most-frequent, last occurrence
    r = torch.tensor([[1, 2, 2], [3, 3, 1]]).mode(1)
    assert r.values.tolist() == [2, 3] and r.indices.tolist() == [2, 1]
    r = torch.tensor([[1.0, 2.0], [1.0, 3.0]]).mode(0, keepdim=True)
    assert r.values.tolist() == [[1.0, 2.0]] and r.indices.shape == (1, 2)


def test_unique():
    x = torch.tensor([[3, 1], [3, 2]])
    assert torch.unique(x).tolist() == [1, 2, 3]
    u, inv, cnt = torch.unique(x, return_inverse=True, return_counts=True)
    assert u.tolist() == [1, 2, 3] and inv.tolist() == [[2, 0], [2, 1]] and cnt.tolist() == [1, 1, 2]
    assert inv.dtype is torch.int64 and u.dtype is torch.int64
    u, cnt = x.unique(return_counts=True)
    assert cnt.tolist() == [1, 1, 2]
    rows = torch.tensor([[1, 2], [1, 2], [0, 1]])
    u, inv = torch.unique(rows, dim=0, return_inverse=True)
    assert u.tolist() == [[0, 1], [1, 2]] and inv.tolist() == [1, 1, 0]
    assert torch.unique(torch.tensor([2.5, 0.5, 2.5])).tolist() == [0.5, 2.5]
    u, inv, cnt = torch.unique_consecutive(torch.tensor([1, 1, 2, 2, 3, 1, 1, 2]), return_inverse=True,
                                           return_counts=True)
    assert u.tolist() == [1, 2, 3, 1, 2] and inv.tolist() == [0, 0, 1, 1, 2, 3, 3, 4]
    assert cnt.tolist() == [2, 2, 1, 2, 1]


def test_count_nonzero_any_all():
    x = torch.tensor([[0.0, 1.0, 2.0], [0.0, 0.0, 3.0]])
    assert x.count_nonzero().item() == 3 and x.count_nonzero().dtype is torch.int64
    assert x.count_nonzero(1).tolist() == [2, 1] and torch.count_nonzero(x, (0, 1)).item() == 3
    assert x.any().item() is True and x.all().item() is False
    assert x.any(0).tolist() == [False, True, True] and x.all(1, keepdim=True).tolist() == [[False], [False]]
    assert x.any(1).dtype is torch.bool
    assert torch.tensor([1, 2], dtype=torch.uint8).all().item() is True


def test_var_mean_std_mean():
    rng = np.random.default_rng(5)
    a = rng.standard_normal((3, 4))
    x = torch.tensor(a)
    v, m = torch.var_mean(x, 1)
    np.testing.assert_allclose(f64(v), a.var(1, ddof=1))
    np.testing.assert_allclose(f64(m), a.mean(1))
    s, m = torch.std_mean(x, unbiased=False)
    np.testing.assert_allclose(f64(s), a.std())
    np.testing.assert_allclose(f64(m), a.mean())
    s, m = torch.std_mean(x, 0, correction=0, keepdim=True)
    assert s.shape == (1, 4) and m.shape == (1, 4)


# -- softmax and logsumexp -------------------------------------------------------------------------------
def np_softmax(a, axis):
    e = np.exp(a - a.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def test_softmax_log_softmax_values():
    for layout, x, a in inputs_for_values():
        for dim in (0, 1, -1):
            np.testing.assert_allclose(f64(torch.softmax(x, dim)), np_softmax(a, dim), rtol=1e-12)
            np.testing.assert_allclose(f64(x.log_softmax(dim)), np.log(np_softmax(a, dim)), rtol=1e-12)
    big = torch.tensor([1000.0, 1001.0, 1002.0])
    assert np.allclose(f64(big.softmax(0)), np_softmax(np.array([0.0, 1.0, 2.0]), 0))
    assert np.isfinite(f64(big.log_softmax(0))).all()
    assert big.logsumexp(0).item() == pytest.approx(1002.0 + math.log(1 + math.exp(-1) + math.exp(-2)))
    assert torch.tensor([-INF, -INF]).logsumexp(0).item() == -INF
    assert torch.tensor([INF, 1.0]).logsumexp(0).item() == INF
    x = torch.tensor([1.0, 2.0], dtype=torch.float32)
    assert torch.softmax(x, 0, dtype=torch.float64).dtype is torch.float64
    assert x.log_softmax(0, dtype=torch.float64).dtype is torch.float64
    assert torch.tensor(3.0).softmax(0).item() == 1.0


# -- gradients -------------------------------------------------------------------------------------------
GRAD_CASES = {
    "sum_all": (lambda x: x.sum(), {}),
    "sum_dim": (lambda x: x.sum(1), {}),
    "sum_tuple_keepdim": (lambda x: torch.sum(x, (0, 2), keepdim=True), {}),
    "mean_all": (lambda x: x.mean(), {}),
    "mean_dim": (lambda x: x.mean(-1, keepdim=True), {}),
    "nansum": (lambda x: x.nansum(0), {}),
    "nanmean": (lambda x: x.nanmean(1), {}),
    "prod_all": (lambda x: x.prod(), {"positive": True}),
    "prod_dim": (lambda x: x.prod(1), {}),
    "prod_keepdim": (lambda x: x.prod(0, keepdim=True), {}),
    "max_all": (lambda x: x.max(), {}),
    "min_all": (lambda x: x.min(), {}),
    "max_dim": (lambda x: x.max(1)[0], {}),
    "min_dim_keepdim": (lambda x: x.min(0, keepdim=True).values, {}),
    "amax": (lambda x: x.amax((0, 2)), {}),
    "amin": (lambda x: x.amin(-1), {}),
    "var_all": (lambda x: x.var(), {}),
    "var_dim": (lambda x: x.var(1, unbiased=False), {}),
    "std_all": (lambda x: x.std(), {}),
    "std_dim": (lambda x: x.std((0, 2), keepdim=True), {}),
    "var_mean": (lambda x: torch.var_mean(x, 0)[0] + torch.var_mean(x, 0)[1], {}),
    "median_all": (lambda x: x.median(), {}),
    "median_dim": (lambda x: x.median(1).values, {}),
    "nanmedian_dim": (lambda x: x.nanmedian(0).values, {}),
    "kthvalue": (lambda x: x.kthvalue(2, 1)[0], {}),
    "mode": (lambda x: x.mode(1)[0], {}),
    "logsumexp": (lambda x: x.logsumexp(1), {}),
    "logsumexp_all": (lambda x: torch.logsumexp(x, (0, 1, 2)), {}),
    "norm_fro": (lambda x: norm(x), {}),
    "norm_2_dim": (lambda x: norm(x, dim=1), {}),
    "norm_fro_2dims": (lambda x: norm(x, "fro", dim=(0, 2)), {}),
    "norm_1": (lambda x: norm(x, 1, dim=0), {}),
    "norm_3": (lambda x: norm(x, 3), {}),
    "norm_1.5": (lambda x: norm(x, 1.5, dim=-1), {}),
    "norm_0.5": (lambda x: norm(x, 0.5), {}),
    "norm_inf": (lambda x: norm(x, INF, dim=1), {}),
    "norm_-inf": (lambda x: norm(x, -INF), {}),
    "cumsum": (lambda x: x.cumsum(1), {}),
    "cumprod": (lambda x: x.cumprod(1), {}),
    "cumprod_dim0": (lambda x: torch.cumprod(x, 0), {}),
    "cummax": (lambda x: x.cummax(1)[0], {}),
    "cummin": (lambda x: x.cummin(-1).values, {}),
    "logcumsumexp": (lambda x: torch.logcumsumexp(x, 2), {}),
    "sort": (lambda x: x.sort(1)[0], {}),
    "sort_descending": (lambda x: x.sort(0, descending=True).values, {}),
    "topk": (lambda x: x.topk(2)[0], {}),
    "topk_smallest": (lambda x: x.topk(1, 1, largest=False).values, {}),
    "softmax": (lambda x: x.softmax(1), {}),
    "log_softmax": (lambda x: torch.log_softmax(x, -1), {}),
}


@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_gradcheck_and_gradgradcheck(name):
    """First and second derivatives match finite differences (float64, inputs without ties)."""
    fn, opts = GRAD_CASES[name]
    x = distinct(2, 3, 2, seed=len(name), requires_grad=True, positive=opts.get("positive", False))
    assert gradcheck(fn, (x,))
    assert gradgradcheck(fn, (x,))


def test_gradcheck_on_permuted_and_0d_inputs():
    base = distinct(3, 2, seed=7, requires_grad=True)
    for fn in (lambda b: b.permute(1, 0).max(1)[0], lambda b: b.permute(1, 0).cumprod(1),
               lambda b: b.permute(1, 0).std(0), lambda b: b.permute(1, 0).sort(1)[0]):
        assert gradcheck(fn, (base,)) and gradgradcheck(fn, (base,))
    s = torch.tensor(0.7, dtype=torch.float64, requires_grad=True)
    for fn in (lambda s: s.sum(0), lambda s: s.prod(), lambda s: s.max(0)[0], lambda s: s.cumprod(0),
               lambda s: s.softmax(0), lambda s: s.logsumexp(0), lambda s: norm(s), lambda s: norm(s, 3, 0), lambda s: s.sort()[0]):
        assert gradcheck(fn, (s,)) and gradgradcheck(fn, (s,))


def test_prod_gradient_with_zeros():
    x = torch.tensor([[2.0, 0.0, 3.0], [0.0, 4.0, 0.0], [1.0, 2.0, 3.0]], dtype=torch.float64,
                     requires_grad=True)
    x.prod(1).sum().backward()
    assert x.grad.tolist() == [[0.0, 6.0, 0.0], [0.0, 0.0, 0.0], [6.0, 3.0, 2.0]]
    y = torch.tensor([2.0, 0.0, 3.0], dtype=torch.float64, requires_grad=True)
    assert gradcheck(lambda y: y.prod(), (y,)) and gradgradcheck(lambda y: y.prod(), (y,))
    (g,) = torch.autograd.grad(y.prod(), y)
    assert g.tolist() == [0.0, 6.0, 0.0]


def test_cumprod_gradient_with_zeros():
    for vals in ([2.0, 0.0, 3.0, 0.0, 5.0], [0.0, 3.0, 4.0], [1.5, 2.0, 0.0]):
        x = torch.tensor(vals, dtype=torch.float64, requires_grad=True)
        assert gradcheck(lambda x: x.cumprod(0), (x,))
    x = torch.tensor([2.0, 0.0, 3.0], dtype=torch.float64, requires_grad=True)
    x.cumprod(0).sum().backward()
    assert x.grad.tolist() == [1.0, 8.0, 0.0]


def test_value_selecting_gradients():
    x = torch.tensor([1.0, 3.0, 3.0, 2.0], requires_grad=True)
    x.max().backward()
    assert x.grad.tolist() == [0.0, 0.5, 0.5, 0.0]          # split evenly among ties
    x.grad = None
    x.amax(0).backward()
    assert x.grad.tolist() == [0.0, 0.5, 0.5, 0.0]
    x.grad = None
    x.max(0).values.backward()
    assert x.grad.tolist() == [0.0, 1.0, 0.0, 0.0]          # to the selected index
    m = torch.tensor([[4.0, 1.0, 2.0], [0.0, 5.0, 9.0]], requires_grad=True)
    m.median(1).values.sum().backward()
    assert m.grad.tolist() == [[0.0, 0.0, 1.0], [0.0, 1.0, 0.0]]
    s = torch.tensor([3.0, 1.0, 2.0], requires_grad=True)
    (s.sort()[0] * torch.tensor([1.0, 10.0, 100.0])).sum().backward()
    assert s.grad.tolist() == [100.0, 1.0, 10.0]
    t = torch.tensor([3.0, 1.0, 2.0], requires_grad=True)
    (t.topk(2)[0] * torch.tensor([1.0, 10.0])).sum().backward()
    assert t.grad.tolist() == [1.0, 0.0, 10.0]


def test_norm_and_std_gradient_at_zero_is_zero():
    z = torch.zeros(3, dtype=torch.float64, requires_grad=True)
    (g,) = torch.autograd.grad(norm(z), z)
    assert g.tolist() == [0.0, 0.0, 0.0]
    (g,) = torch.autograd.grad(z.std(), z)
    assert g.tolist() == [0.0, 0.0, 0.0]
    m = torch.tensor([[0.0, 0.0], [3.0, 4.0]], dtype=torch.float64, requires_grad=True)
    norm(m, dim=1).sum().backward()
    assert m.grad.tolist() == [[0.0, 0.0], [0.6, 0.8]]
    (g,) = torch.autograd.grad(norm(m, 1), m)                   # p=1: sign, 0 at 0
    assert g.tolist() == [[0.0, 0.0], [1.0, 1.0]]
    v = torch.tensor([1.0, -3.0, 3.0], dtype=torch.float64, requires_grad=True)
    (g,) = torch.autograd.grad(norm(v, INF), v)                 # inf: split among the maxima
    assert g.tolist() == [0.0, -0.5, 0.5]


def test_norm_arguments():
    x = torch.tensor([[3.0, 4.0], [0.0, 0.0]])
    assert norm(x).item() == 5.0 and norm(x, "fro", dim=(0, 1)).item() == 5.0
    assert norm(x, None, 1).tolist() == [5.0, 0.0]
    assert norm(x, 0).item() == 2.0 and norm(x, 0).dtype is torch.float32
    assert norm(x, dtype=torch.float64).dtype is torch.float64
    assert norm(torch.tensor(-2.0), 3, 0).item() == 2.0
    with pytest.raises(RuntimeError, match="2-tuple"):
        norm(torch.zeros(2, 2, 2), "fro", dim=(0, 1, 2))
    with pytest.raises(RuntimeError, match="Expected a floating point"):
        norm(torch.tensor([1, 2]))
    # the public tensorplug.norm agrees on ordinary inputs
    rng = np.random.default_rng(2)
    y = torch.tensor(rng.standard_normal((3, 4)))
    for p in (2, 1, 3, INF, -INF, 0):
        for dim in (None, 1, (0, 1)):
            np.testing.assert_allclose(f64(torch.norm(y, p, dim)), f64(norm(y, p, dim)), rtol=1e-12)


def test_inplace_scans_and_saved_output_check():
    x = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert x.cumsum_(1) is x and x.tolist() == [[1.0, 3.0], [3.0, 7.0]]
    x.cumprod_(0)
    assert x.tolist() == [[1.0, 3.0], [3.0, 21.0]]
    with pytest.raises(RuntimeError, match="leaf Variable"):
        torch.ones(2, requires_grad=True).cumsum_(0)
    w = torch.tensor([1.0, 2.0], requires_grad=True)
    y = (w * 1).softmax(0)
    y.mul_(2)                                # softmax's backward reads its output
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_grad_fn_names_and_no_grad():
    x = distinct(2, 3, requires_grad=True)
    assert x.sum().grad_fn.name() == "SumBackward0" and x.sum(0).grad_fn.name() == "SumBackward1"
    assert x.max(1).values.grad_fn.name() == "MaxBackward0" and x.max().grad_fn.name() == "MaxBackward1"
    assert x.softmax(1).grad_fn.name() == "SoftmaxBackward0"
    assert x.max(1).indices.grad_fn is None and not x.argmax().requires_grad
    with torch.no_grad():
        assert not x.sum().requires_grad and not x.sort(0).values.requires_grad
    assert not x.detach().prod().requires_grad


def test_double_backward_hessian_vector_product():
    """d/dx of (d logsumexp / dx) . v equals the softmax Jacobian times v."""
    rng = np.random.default_rng(11)
    a = rng.standard_normal(4)
    v = rng.standard_normal(4)
    x = torch.tensor(a, requires_grad=True)
    (g,) = torch.autograd.grad(x.logsumexp(0), x, create_graph=True)
    (hv,) = torch.autograd.grad((g * torch.tensor(v)).sum(), x)
    s = np_softmax(a, 0)
    np.testing.assert_allclose(f64(hv), (np.diag(s) - np.outer(s, s)) @ v, rtol=1e-10)
