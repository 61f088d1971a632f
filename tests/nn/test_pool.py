"""Pooling: max/avg/lp/adaptive pools and max_unpool, functional and modules, against float64 NumPy
references written from the definitions; the pooling kernels natively and through their
decompositions; torch's flat-index convention; first and second gradients."""
import math

import numpy as np
import pytest

import tensorplug as torch
import tensorplug.nn as nn
import tensorplug.nn.functional as F
from tensorplug.autograd import gradcheck, gradgradcheck
from tensorplug.dispatch.decompositions import DECOMPOSITIONS

CONV_KERNELS = ("conv", "conv_transpose", "max_pool", "avg_pool")


def f64(t):
    return np.asarray(t.detach().cpu().numpy(), dtype=np.float64)


def rnd(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def T(a, requires_grad=False, device=None, dtype=torch.float64):
    return torch.tensor(a, dtype=dtype, requires_grad=requires_grad, device=device)


def tup(v, n):
    return tuple(v) if isinstance(v, (tuple, list)) else (v,) * n


# -- references from the definitions ----------------------------------------------------------------
def out_size(n, k, p, s, d, ceil):
    num = n + 2 * p - d * (k - 1) - 1
    o = (-(-num // s) if ceil else num // s) + 1
    if ceil and (o - 1) * s >= n + p:          # the last window must start inside the input or left padding
        o -= 1
    return o


def ref_max_pool(x, k, s, p, d, ceil):
    """(values, flat indices): scan each window's in-range positions in row-major order and keep the
    first strictly greater value (torch's rule)."""
    N, C = x.shape[:2]
    S = x.shape[2:]
    nd = len(S)
    out = [out_size(S[i], k[i], p[i], s[i], d[i], ceil) for i in range(nd)]
    vals, idx = np.zeros((N, C, *out)), np.zeros((N, C, *out), dtype=np.int64)
    for n in range(N):
        for c in range(C):
            for pos in np.ndindex(*out):
                best, at = -np.inf, None
                for kk in np.ndindex(*k):
                    src = tuple(pos[i] * s[i] - p[i] + kk[i] * d[i] for i in range(nd))
                    if not all(0 <= src[i] < S[i] for i in range(nd)):
                        continue
                    v = x[(n, c) + src]
                    if at is None or v > best:
                        best, at = v, np.ravel_multi_index(src, S)
                vals[(n, c) + pos], idx[(n, c) + pos] = best, at
    return vals, idx


def ref_avg_pool(x, k, s, p, ceil, count_include_pad, divisor_override=None):
    N, C = x.shape[:2]
    S = x.shape[2:]
    nd = len(S)
    out = [out_size(S[i], k[i], p[i], s[i], 1, ceil) for i in range(nd)]
    y = np.zeros((N, C, *out))
    for pos in np.ndindex(*out):
        start = [pos[i] * s[i] - p[i] for i in range(nd)]
        end = [min(start[i] + k[i], S[i] + p[i]) for i in range(nd)]
        pool_size = math.prod(end[i] - start[i] for i in range(nd))
        lo = [max(a, 0) for a in start]
        hi = [min(b, S[i]) for i, b in enumerate(end)]
        window = x[(slice(None), slice(None)) + tuple(slice(a, b) for a, b in zip(lo, hi))]
        count = math.prod(b - a for a, b in zip(lo, hi))
        div = divisor_override or (pool_size if count_include_pad else count)
        y[(slice(None), slice(None)) + pos] = window.sum(axis=tuple(range(2, 2 + nd))) / div
    return y


def adaptive_windows(n, o):
    return [(math.floor(i * n / o), math.ceil((i + 1) * n / o)) for i in range(o)]


def ref_adaptive(x, out, op):
    N, C = x.shape[:2]
    S = x.shape[2:]
    wins = [adaptive_windows(S[i], out[i]) for i in range(len(S))]
    y = np.zeros((N, C, *out))
    idx = np.zeros((N, C, *out), dtype=np.int64)
    for pos in np.ndindex(*out):
        box = tuple(slice(*wins[i][pos[i]]) for i in range(len(S)))
        win = x[(slice(None), slice(None)) + box]
        if op == "avg":
            y[(slice(None), slice(None)) + pos] = win.mean(axis=tuple(range(2, 2 + len(S))))
        else:
            flat = win.reshape(N, C, -1)
            am = flat.argmax(-1)
            y[(slice(None), slice(None)) + pos] = flat.max(-1)
            local = np.unravel_index(am, win.shape[2:])
            glob = tuple(local[i] + wins[i][pos[i]][0] for i in range(len(S)))
            idx[(slice(None), slice(None)) + pos] = np.ravel_multi_index(glob, S)
    return y, idx


# -- max pooling ----------------------------------------------------------------------------------
MAX_CASES = [
    # nd, shape, kernel, stride, padding, dilation, ceil_mode
    (1, (2, 3, 9), 3, 2, 1, 1, False),
    (1, (1, 2, 8), 2, None, 0, 1, True),
    (1, (1, 2, 7), 2, 1, 1, 2, False),
    (1, (1, 1, 10), 4, 3, 2, 1, True),
    (2, (2, 2, 6, 7), 2, None, 0, 1, False),
    (2, (1, 2, 7, 6), (3, 2), (2, 1), (1, 1), 1, True),
    (2, (1, 3, 8, 7), 3, 2, 1, (2, 1), False),
    (2, (1, 1, 5, 5), 3, 2, 0, 1, True),
    (3, (1, 2, 4, 5, 4), 2, (1, 2, 1), (1, 0, 0), 1, True),
    (3, (1, 1, 5, 4, 4), (3, 2, 2), 2, 1, (1, 1, 2), False),
    # more than 32 window slots: the NumPy kernel's strided-window / gather paths
    (2, (1, 2, 9, 8), 6, 2, 0, 1, False),
    (2, (1, 1, 8, 8), (6, 6), 1, 3, 1, True),
    (3, (1, 1, 5, 4, 4), (4, 3, 3), 1, 1, 1, False),
]


@pytest.mark.parametrize("case", MAX_CASES)
def test_max_pool_values_and_indices_match_reference(case):
    """max_poolNd values and flat indices over kernel/stride/padding/dilation/ceil_mode."""
    nd, shape, k, s, p, d, ceil = case
    x = rnd(*shape, seed=1)
    fn = {1: F.max_pool1d, 2: F.max_pool2d, 3: F.max_pool3d}[nd]
    v, i = fn(T(x), k, s, p, d, ceil_mode=ceil, return_indices=True)
    rv, ri = ref_max_pool(x, tup(k, nd), tup(s if s is not None else k, nd), tup(p, nd), tup(d, nd), ceil)
    assert v.shape == rv.shape and i.dtype == torch.int64
    np.testing.assert_array_equal(f64(v), rv)
    np.testing.assert_array_equal(i.numpy(), ri)
    assert fn(T(x), k, s, p, d, ceil).shape == rv.shape


@pytest.mark.parametrize("case", MAX_CASES)
def test_max_pool_kernel_native_and_decomposed_agree(case):
    """`max_pool` natively (strided windows or the padded gather) and decomposed: same values and indices,
    including ties, an all -inf window reached through padding, and integer inputs."""
    nd, shape, k, s, p, d, ceil = case
    k, s, p, d = tup(k, nd), tup(s if s is not None else k, nd), tup(p, nd), tup(d, nd)
    S = shape[2:]
    out = tuple(out_size(S[i], k[i], p[i], s[i], d[i], ceil) for i in range(nd))
    K = torch.zeros(1)._k
    ints = np.random.default_rng(2).integers(-3, 3, size=shape)          # many ties
    ints_inf = ints.astype(np.float64)
    ints_inf[(0, 0) + (slice(0, 2),) * nd] = -np.inf
    for x in (rnd(*shape, seed=3), ints_inf, ints):
        rv, ri = ref_max_pool(x.astype(np.float64), k, s, p, d, ceil)
        for v, i in (K["max_pool"](x, k, s, p, d, out), DECOMPOSITIONS["max_pool"](K, x, k, s, p, d, out)):
            np.testing.assert_array_equal(v, rv)
            np.testing.assert_array_equal(i, ri)
            assert v.dtype == x.dtype and i.dtype == np.int64


def test_max_pool_indices_match_torch_examples():
    """Flat indices as PyTorch 2.13 returns them (checked by hand against torch, hard-coded here)."""
    x = T([[[1., 5., 2., 5., 0., 3., 3.]]])
    v, i = F.max_pool1d(x, 3, 2, 1, return_indices=True)
    assert v.tolist() == [[[5., 5., 5., 3.]]] and i.tolist() == [[[1, 1, 3, 5]]]
    v, i = F.max_pool1d(x, 2, 2, 0, ceil_mode=True, return_indices=True)
    assert v.tolist() == [[[5., 5., 3., 3.]]] and i.tolist() == [[[1, 3, 5, 6]]]
    v, i = F.max_pool1d(x, 2, 1, 1, dilation=2, return_indices=True)
    assert i.tolist() == [[[1, 2, 1, 2, 3, 6, 5]]]
    x2 = T([[[[1., 2., 9., 0.], [4., 9., 1., 1.], [7., 7., 3., 8.]]]])
    v, i = F.max_pool2d(x2, 2, return_indices=True)
    assert v.tolist() == [[[[9., 9.]]]] and i.tolist() == [[[[5, 2]]]]
    v, i = F.max_pool2d(x2, 2, ceil_mode=True, return_indices=True)
    assert v.tolist() == [[[[9., 9.], [7., 8.]]]] and i.tolist() == [[[[5, 2], [8, 11]]]]
    v, i = F.max_pool2d(x2, 3, 1, 1, return_indices=True)
    assert i.tolist() == [[[[5, 2, 2, 2], [5, 2, 2, 2], [5, 5, 5, 11]]]]
    xm = torch.full((1, 1, 2, 3), float("-inf"), dtype=torch.float64)
    v, i = F.max_pool2d(xm, 2, 1, 1, return_indices=True)
    assert i.tolist() == [[[[0, 0, 1, 2], [0, 0, 1, 2], [3, 3, 4, 5]]]]
    v, i = F.adaptive_max_pool2d(x2, (2, 3), return_indices=True)
    assert v.tolist() == [[[[9., 9., 9.], [9., 9., 8.]]]] and i.tolist() == [[[[5, 2, 2], [5, 5, 11]]]]
    v, i = F.adaptive_max_pool1d(x, 3, return_indices=True)
    assert v.tolist() == [[[5., 5., 3.]]] and i.tolist() == [[[1, 3, 5]]]
    v, i = F.max_pool2d(x2, 2, return_indices=True)
    assert F.max_unpool2d(v, i, 2).tolist() == [[[[0., 0., 9., 0.], [0., 9., 0., 0.]]]]
    assert F.max_unpool2d(v, i, 2, output_size=(3, 5)).tolist() == [[[[0., 0., 9., 0., 0.], [9., 0., 0., 0., 0.],
                                                                      [0., 0., 0., 0., 0.]]]]


def test_max_pool_integer_and_unbatched_inputs():
    """Integer inputs keep their dtype; an unbatched (C, H, W) input gives (C, oh, ow)."""
    x = torch.arange(16).reshape(1, 4, 4)
    v, i = F.max_pool2d(x, 2, return_indices=True)
    assert v.dtype == torch.int64 and v.tolist() == [[[5, 7], [13, 15]]] and i.tolist() == [[[5, 7], [13, 15]]]
    assert F.max_pool1d(torch.arange(6.).reshape(1, 6), 2).tolist() == [[1., 3., 5.]]


@pytest.mark.parametrize("fn,shape,kw", [
    (F.max_pool1d, (2, 2, 7), dict(kernel_size=3, stride=2, padding=1)),
    (F.max_pool1d, (1, 2, 6), dict(kernel_size=2, stride=1, dilation=2, ceil_mode=True)),
    (F.max_pool2d, (1, 2, 5, 6), dict(kernel_size=2)),
    (F.max_pool2d, (1, 2, 5, 5), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
    (F.max_pool2d, (1, 1, 6, 5), dict(kernel_size=(2, 3), stride=1, dilation=(2, 1))),
    (F.max_pool3d, (1, 1, 3, 4, 4), dict(kernel_size=2, stride=1)),
])
def test_max_pool_gradcheck_and_gradgradcheck(fn, shape, kw):
    """Gradients of max pooling scatter into the argmax positions (overlapping windows accumulate)."""
    x = T(rnd(*shape, seed=4), requires_grad=True)
    assert gradcheck(lambda t: fn(t, **kw), (x,))
    assert gradgradcheck(lambda t: fn(t, **kw), (x,))


def test_max_pool_overlapping_windows_accumulate_gradient():
    """An element that is the max of several windows receives the sum of their gradients."""
    x = T([[[0., 9., 1., 2.]]], requires_grad=True)
    F.max_pool1d(x, 3, 1, 1).sum().backward()       # windows [.,0,9], [0,9,1], [9,1,2], [1,2,.]
    assert x.grad.tolist() == [[[0., 3., 0., 1.]]]


# -- average pooling ------------------------------------------------------------------------------
AVG_CASES = [
    # nd, shape, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override
    (1, (2, 3, 9), 3, 2, 1, False, True, None),
    (1, (1, 2, 8), 3, 2, 1, True, False, None),
    (1, (1, 2, 7), 2, None, 0, True, True, None),
    (2, (2, 2, 6, 7), 2, None, 0, False, True, None),
    (2, (1, 2, 7, 6), (3, 2), (2, 1), (1, 1), True, True, None),
    (2, (1, 2, 7, 6), (3, 2), (2, 1), (1, 1), True, False, None),
    (2, (1, 1, 5, 5), 3, 2, 1, False, True, 4),
    (3, (1, 2, 4, 5, 4), 2, (1, 2, 1), (1, 0, 0), True, True, None),
    (3, (1, 1, 5, 4, 4), (3, 2, 2), 2, 1, False, False, 3),
]


@pytest.mark.parametrize("case", AVG_CASES)
def test_avg_pool_matches_reference(case):
    """avg_poolNd over kernel/stride/padding/ceil_mode/count_include_pad/divisor_override."""
    nd, shape, k, s, p, ceil, cip, div = case
    x = rnd(*shape, seed=5)
    fn = {1: F.avg_pool1d, 2: F.avg_pool2d, 3: F.avg_pool3d}[nd]
    extra = {} if nd == 1 else {"divisor_override": div}
    if nd == 1 and div:
        pytest.skip("avg_pool1d has no divisor_override")
    y = fn(T(x), k, s, p, ceil, cip, **extra)
    ref = ref_avg_pool(x, tup(k, nd), tup(s if s is not None else k, nd), tup(p, nd), ceil, cip, div)
    assert y.shape == ref.shape
    np.testing.assert_allclose(f64(y), ref, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("case", AVG_CASES)
def test_avg_pool_kernel_native_and_decomposed_agree(case):
    """`avg_pool` natively and decomposed give the reference."""
    nd, shape, k, s, p, ceil, cip, div = case
    k, s, p = tup(k, nd), tup(s if s is not None else k, nd), tup(p, nd)
    S = shape[2:]
    out = tuple(out_size(S[i], k[i], p[i], s[i], 1, ceil) for i in range(nd))
    x = rnd(*shape, seed=6)
    ref = ref_avg_pool(x, k, s, p, ceil, cip, div)
    K = torch.zeros(1)._k
    np.testing.assert_allclose(K["avg_pool"](x, k, s, p, out, cip, div), ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(DECOMPOSITIONS["avg_pool"](K, x, k, s, p, out, cip, div), ref, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("fn,shape,kw", [
    (F.avg_pool1d, (2, 2, 7), dict(kernel_size=3, stride=2, padding=1)),
    (F.avg_pool1d, (1, 2, 6), dict(kernel_size=4, stride=3, padding=2, ceil_mode=True, count_include_pad=False)),
    (F.avg_pool2d, (1, 2, 5, 6), dict(kernel_size=2)),
    (F.avg_pool2d, (1, 2, 5, 5), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False)),
    (F.avg_pool2d, (1, 1, 4, 5), dict(kernel_size=(2, 3), stride=1, divisor_override=5)),
    (F.avg_pool3d, (1, 1, 3, 4, 4), dict(kernel_size=2, stride=1, padding=1)),
    (F.avg_pool3d, (1, 2, 3, 3, 4), dict(kernel_size=(2, 2, 3), stride=2, ceil_mode=True)),
])
def test_avg_pool_gradcheck_and_gradgradcheck(fn, shape, kw):
    """avg_pool's gradient is its adjoint (a depthwise conv_transpose), differentiable again."""
    x = T(rnd(*shape, seed=7), requires_grad=True)
    assert gradcheck(lambda t: fn(t, **kw), (x,))
    assert gradgradcheck(lambda t: fn(t, **kw), (x,))


# -- lp pooling -----------------------------------------------------------------------------------
@pytest.mark.parametrize("nd,p,k,s,ceil", [(1, 2.0, 3, 2, False), (1, 1.5, 2, None, True), (2, 2.0, 2, None, False),
                                            (2, 3.0, (2, 3), (1, 2), True)])
def test_lp_pool_matches_reference(nd, p, k, s, ceil):
    """lp_pool: (sum over the window of x ** p) ** (1 / p)."""
    shape = (1, 2, 7) if nd == 1 else (2, 2, 5, 7)
    x = np.abs(rnd(*shape, seed=8)) + 0.1
    fn = F.lp_pool1d if nd == 1 else F.lp_pool2d
    y = fn(T(x), p, k, s, ceil)
    kt = tup(k, nd)
    sums = ref_avg_pool(x ** p, kt, tup(s if s is not None else k, nd), (0,) * nd, ceil, True) * math.prod(kt)
    np.testing.assert_allclose(f64(y), sums ** (1 / p), rtol=1e-12)


def test_lp_pool2d_gradcheck_and_gradgradcheck():
    x = T(np.abs(rnd(1, 2, 4, 5, seed=9)) + 0.5, requires_grad=True)
    assert gradcheck(lambda t: F.lp_pool2d(t, 2, 2, 1), (x,))
    assert gradgradcheck(lambda t: F.lp_pool2d(t, 2, 2, 1), (x,))
    assert gradgradcheck(lambda t: F.lp_pool1d(t[:, :, 0], 3, 2), (x,))


# -- adaptive pooling ------------------------------------------------------------------------------
@pytest.mark.parametrize("nd,shape,out", [
    (1, (2, 3, 7), (3,)), (1, (1, 2, 5), (5,)), (1, (1, 1, 4), (6,)),
    (2, (2, 2, 7, 5), (3, 2)), (2, (1, 3, 6, 6), (1, 1)), (2, (1, 1, 5, 8), (5, 3)),
    (3, (1, 2, 5, 4, 3), (2, 3, 2)),
])
def test_adaptive_pools_match_reference(nd, shape, out):
    """adaptive avg/max pools use windows [floor(i*n/o), ceil((i+1)*n/o)); indices are flat per plane."""
    x = rnd(*shape, seed=10)
    avg = {1: F.adaptive_avg_pool1d, 2: F.adaptive_avg_pool2d, 3: F.adaptive_avg_pool3d}[nd]
    mx = {1: F.adaptive_max_pool1d, 2: F.adaptive_max_pool2d, 3: F.adaptive_max_pool3d}[nd]
    ra, _ = ref_adaptive(x, out, "avg")
    rm, ri = ref_adaptive(x, out, "max")
    arg = out[0] if nd == 1 else out
    np.testing.assert_allclose(f64(avg(T(x), arg)), ra, rtol=1e-12, atol=1e-12)
    v, i = mx(T(x), arg, return_indices=True)
    np.testing.assert_array_equal(f64(v), rm)
    np.testing.assert_array_equal(i.numpy(), ri)


def test_adaptive_pool_none_entries_and_unbatched():
    """None in output_size keeps that input size; unbatched inputs work."""
    x = T(rnd(2, 6, 5, seed=11))
    assert F.adaptive_avg_pool2d(x, (3, None)).shape == (2, 3, 5)
    assert F.adaptive_max_pool2d(x, (None, 2)).shape == (2, 6, 2)
    assert nn.AdaptiveAvgPool2d(1)(x).shape == (2, 1, 1)


@pytest.mark.parametrize("fn,shape,out", [
    (F.adaptive_avg_pool1d, (2, 2, 7), 3), (F.adaptive_avg_pool2d, (1, 2, 5, 4), (3, 3)),
    (F.adaptive_avg_pool3d, (1, 1, 3, 4, 5), (2, 3, 2)), (F.adaptive_max_pool1d, (2, 2, 7), 3),
    (F.adaptive_max_pool2d, (1, 2, 5, 4), (3, 3)),
])
def test_adaptive_pool_gradcheck_and_gradgradcheck(fn, shape, out):
    x = T(rnd(*shape, seed=12), requires_grad=True)
    assert gradcheck(lambda t: fn(t, out), (x,))
    assert gradgradcheck(lambda t: fn(t, out), (x,))


# -- max unpooling ---------------------------------------------------------------------------------
def test_max_unpool_inverts_max_pool_and_differentiates():
    """max_unpool puts each value at its index (zeros elsewhere); its gradient gathers at the indices."""
    x = rnd(2, 3, 6, 5, seed=13)
    v, i = F.max_pool2d(T(x), 2, return_indices=True)
    u = F.max_unpool2d(v, i, 2, output_size=(6, 5))
    ref = np.zeros_like(x).reshape(2, 3, -1)
    np.put_along_axis(ref, i.numpy().reshape(2, 3, -1), f64(v).reshape(2, 3, -1), axis=2)
    np.testing.assert_array_equal(f64(u), ref.reshape(x.shape))
    vt = T(rnd(1, 2, 3, seed=14), requires_grad=True)
    idx = torch.tensor([[[0, 3, 5], [1, 2, 4]]])
    assert F.max_unpool1d(vt, idx, 2).shape == (1, 2, 6)
    assert gradcheck(lambda t: F.max_unpool1d(t, idx, 2), (vt,))
    assert gradgradcheck(lambda t: F.max_unpool1d(t, idx, 2), (vt,))
    with pytest.raises(RuntimeError, match="Found an invalid max index: 100"):
        F.max_unpool2d(v[:1, :1, :1, :1], torch.tensor([[[[100]]]]), 2)


# -- through a backend without native pooling kernels ----------------------------------------------
def test_pool_ops_through_decompositions(add_backend):
    """max_pool2d (+ indices) and avg_pool2d on a backend whose pooling kernels are decomposed."""
    backend = add_backend("numpy_nopool", device_type="nopool", drop=CONV_KERNELS)
    assert backend.kernel_status()["max_pool"] == "decomposed"
    x = rnd(1, 2, 5, 6, seed=15)
    xt = T(x, requires_grad=True, device="nopool")
    v, i = F.max_pool2d(xt, 3, 2, 1, ceil_mode=True, return_indices=True)
    rv, ri = ref_max_pool(x, (3, 3), (2, 2), (1, 1), (1, 1), True)
    np.testing.assert_array_equal(f64(v), rv)
    np.testing.assert_array_equal(i.cpu().numpy(), ri)
    assert gradgradcheck(lambda t: F.max_pool2d(t, 3, 2, 1, ceil_mode=True), (xt,))
    assert gradgradcheck(lambda t: F.avg_pool2d(t, 3, 2, 1, count_include_pad=False), (xt,))
    np.testing.assert_allclose(f64(F.avg_pool2d(xt, 2, 1, 1)), ref_avg_pool(x, (2, 2), (1, 1), (1, 1), False, True))


# -- errors ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("call,msg", [
    (lambda: F.max_pool2d(torch.randn(1, 4, 8, 8), 3, padding=2),
     "pad should be at most half of effective kernel size, but got pad=2, kernel_size=3 and dilation=1"),
    (lambda: F.max_pool2d(torch.randn(1, 4, 2, 2), 3),
     "Given input size: (4x2x2). Calculated output size: (4x0x0). Output size is too small"),
    (lambda: F.max_pool2d(torch.randn(1, 4, 8, 8), 3, stride=0), "stride should not be zero"),
    (lambda: F.avg_pool2d(torch.randn(1, 4, 8, 8), 3, padding=2),
     "pad should be at most half of effective kernel size"),
    (lambda: F.max_pool2d(torch.randn(4, 8), 3), "3D or 4D (batch mode) tensor expected for input"),
    (lambda: F.max_pool2d(torch.randn(1, 4, 8, 8), 3, dilation=0), "dilation should be greater than zero"),
    (lambda: F.avg_pool2d(torch.randn(1, 4, 8, 8), 2, divisor_override=0), "divisor must be not zero"),
])
def test_pool_errors(call, msg):
    with pytest.raises(RuntimeError) as e:
        call()
    assert msg in str(e.value)


# -- modules ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("module,text", [
    (nn.MaxPool1d(2), "MaxPool1d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)"),
    (nn.MaxPool2d(3, stride=2, padding=1, ceil_mode=True, return_indices=True),
     "MaxPool2d(kernel_size=3, stride=2, padding=1, dilation=1, ceil_mode=True)"),
    (nn.MaxPool3d(2), "MaxPool3d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)"),
    (nn.AvgPool1d(3), "AvgPool1d(kernel_size=(3,), stride=(3,), padding=(0,))"),
    (nn.AvgPool2d(2), "AvgPool2d(kernel_size=2, stride=2, padding=0)"),
    (nn.AvgPool2d((2, 3), count_include_pad=False, divisor_override=3),
     "AvgPool2d(kernel_size=(2, 3), stride=(2, 3), padding=0)"),
    (nn.AvgPool3d(2, ceil_mode=True), "AvgPool3d(kernel_size=2, stride=2, padding=0)"),
    (nn.LPPool1d(2, 3), "LPPool1d(norm_type=2, kernel_size=3, stride=None, ceil_mode=False)"),
    (nn.LPPool2d(1.5, 2, stride=1), "LPPool2d(norm_type=1.5, kernel_size=2, stride=1, ceil_mode=False)"),
    (nn.AdaptiveAvgPool1d(3), "AdaptiveAvgPool1d(output_size=3)"),
    (nn.AdaptiveAvgPool2d((5, None)), "AdaptiveAvgPool2d(output_size=(5, None))"),
    (nn.AdaptiveAvgPool3d(1), "AdaptiveAvgPool3d(output_size=1)"),
    (nn.AdaptiveMaxPool1d(2), "AdaptiveMaxPool1d(output_size=2)"),
    (nn.AdaptiveMaxPool2d((2, 3), return_indices=True), "AdaptiveMaxPool2d(output_size=(2, 3))"),
    (nn.MaxUnpool1d(2), "MaxUnpool1d(kernel_size=(2,), stride=(2,), padding=(0,))"),
    (nn.MaxUnpool2d(2, stride=1, padding=1), "MaxUnpool2d(kernel_size=(2, 2), stride=(1, 1), padding=(1, 1))"),
    (nn.MaxUnpool3d(2), "MaxUnpool3d(kernel_size=(2, 2, 2), stride=(2, 2, 2), padding=(0, 0, 0))"),
])
def test_pool_module_reprs(module, text):
    """Reprs exactly as PyTorch prints them; pooling layers have no parameters."""
    assert repr(module) == text
    assert list(module.parameters()) == []


def test_pool_modules_forward_and_gradients():
    """Each module runs its functional form; MaxPool2d(return_indices) feeds MaxUnpool2d; second gradients."""
    x = T(rnd(1, 2, 6, 6, seed=16), requires_grad=True)
    pool = nn.MaxPool2d(2, return_indices=True)
    v, i = pool(x)
    np.testing.assert_array_equal(f64(v), ref_max_pool(f64(x), (2, 2), (2, 2), (0, 0), (1, 1), False)[0])
    u = nn.MaxUnpool2d(2)(v, i)
    assert u.shape == x.shape and float((u != 0).sum()) == 18
    for m in (nn.MaxPool2d(3, 2, 1, ceil_mode=True), nn.AvgPool2d(3, 2, 1, count_include_pad=False),
              nn.LPPool2d(2, 2), nn.AdaptiveAvgPool2d((4, 3)), nn.AdaptiveMaxPool2d(2), nn.AvgPool1d(2)):
        t = x if not isinstance(m, nn.AvgPool1d) else x[:, :, 0]
        if isinstance(m, nn.LPPool2d):
            t = x.abs() + 0.5
        assert gradgradcheck(lambda a, m=m, t=t: m(t * a), (T(1.5, requires_grad=True),))
    assert gradgradcheck(lambda t: nn.AvgPool3d(2, 1)(t), (T(rnd(1, 1, 3, 3, 3), requires_grad=True),))
    assert gradgradcheck(lambda t: nn.MaxPool1d(2, 1)(t), (T(rnd(1, 2, 5), requires_grad=True),))


def test_max_pool_nan_propagates_with_torch_index():
    """A NaN is the max of its window; with several, the last one's index (PyTorch 2.13's answer)."""
    nan = float("nan")
    x = T([[[1., nan, 2., nan, 0., 5.]]])
    v, i = F.max_pool1d(x, 4, 2, return_indices=True)
    assert np.isnan(f64(v)).all() and i.tolist() == [[[3, 3]]]
    v, i = F.max_pool1d(x, 3, 3, return_indices=True)
    assert i.tolist() == [[[1, 3]]]
    v, i = F.max_pool2d(x.reshape(1, 1, 2, 3), 2, 1, return_indices=True)
    assert i.tolist() == [[[[3, 1]]]]
    v, i = F.adaptive_max_pool1d(x, 2, return_indices=True)
    assert i.tolist() == [[[1, 3]]]
    K = torch.zeros(1)._k
    xn = rnd(1, 2, 9, 9, seed=30)
    xn[0, 0, 2:5, 3] = nan
    for k, p in (((2, 2), (0, 0)), ((3, 3), (1, 1)), ((6, 6), (0, 0)), ((6, 6), (3, 3))):
        out = tuple(out_size(9, kk, pp, 1, 1, False) for kk, pp in zip(k, p))
        a = K["max_pool"](xn, k, (1, 1), p, (1, 1), out)
        b = DECOMPOSITIONS["max_pool"](K, xn, k, (1, 1), p, (1, 1), out)
        np.testing.assert_array_equal(a[0], b[0])
        np.testing.assert_array_equal(a[1], b[1])
        assert np.isnan(a[0]).any()
