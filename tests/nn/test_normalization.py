"""Normalization: batch_norm (training statistics, running-stat updates with momentum and the
unbiased variance, eval mode), layer_norm, group_norm, instance_norm and local_response_norm
against float64 NumPy references; the optional `batch_norm` kernel native vs its decomposition;
first and second gradients; BatchNorm/LayerNorm/GroupNorm/InstanceNorm modules."""
import numpy as np
import pytest

import tensorplug as torch
import tensorplug.nn as nn
import tensorplug.nn.functional as F
from tensorplug.autograd import gradcheck, gradgradcheck
from tensorplug.backends.numpy_backend import norm as np_norm
from tensorplug.dispatch.decompositions import DECOMPOSITIONS


def f64(t):
    return np.asarray(t.detach().numpy(), dtype=np.float64)


def randn(*shape, seed=0, requires_grad=False, dtype=torch.float64):
    rng = np.random.default_rng(seed)
    return torch.tensor(rng.standard_normal(shape) * 1.5 + 0.3, dtype=dtype, requires_grad=requires_grad)


def ref_bn(a, mean, var, w=None, b=None, eps=1e-5):
    shape = (1, a.shape[1]) + (1,) * (a.ndim - 2)
    y = (a - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + eps)
    if w is not None:
        y = y * w.reshape(shape)
    if b is not None:
        y = y + b.reshape(shape)
    return y


def batch_axes(a):
    return (0,) + tuple(range(2, a.ndim))


# -- batch_norm ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(5, 3), (4, 3, 6), (2, 3, 4, 5), (2, 2, 3, 2, 2)])
def test_batch_norm_training_forward_and_running_stats(shape):
    """Training: per-channel batch statistics (biased variance) normalize the input; running_mean
    and running_var move by `momentum` toward the batch mean and the *unbiased* batch variance."""
    x = randn(*shape, seed=1)
    c = shape[1]
    w, b = randn(c, seed=2), randn(c, seed=3)
    rm, rv = randn(c, seed=4), randn(c, seed=5).abs() + 0.5
    rm0, rv0 = f64(rm).copy(), f64(rv).copy()
    y = F.batch_norm(x, rm, rv, w, b, training=True, momentum=0.3, eps=1e-3)
    a = f64(x)
    ax = batch_axes(a)
    mean, var = a.mean(ax), a.var(ax)
    np.testing.assert_allclose(f64(y), ref_bn(a, mean, var, f64(w), f64(b), 1e-3), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(f64(rm), 0.7 * rm0 + 0.3 * mean, rtol=1e-12)
    np.testing.assert_allclose(f64(rv), 0.7 * rv0 + 0.3 * a.var(ax, ddof=1), rtol=1e-12)


def test_batch_norm_eval_uses_running_stats():
    """Eval: normalize with running_mean / running_var, which stay untouched."""
    x = randn(4, 3, 2, seed=6)
    rm, rv = randn(3, seed=7), randn(3, seed=8).abs() + 0.5
    before = f64(rm).copy(), f64(rv).copy()
    w, b = randn(3, seed=9), randn(3, seed=10)
    y = F.batch_norm(x, rm, rv, w, b, training=False)
    np.testing.assert_allclose(f64(y), ref_bn(f64(x), before[0], before[1], f64(w), f64(b)), rtol=1e-12)
    np.testing.assert_array_equal(f64(rm), before[0])
    np.testing.assert_array_equal(f64(rv), before[1])


def test_batch_norm_without_running_stats_and_affine():
    """Training without running stats and without weight/bias: plain standardization."""
    x = randn(6, 2, seed=11)
    a = f64(x)
    y = F.batch_norm(x, None, None, training=True)
    np.testing.assert_allclose(f64(y), ref_bn(a, a.mean(0), a.var(0)), rtol=1e-10)


def test_batch_norm_float32():
    """float32 input gives float32 output close to the float64 reference."""
    x = randn(8, 4, 3, seed=12, dtype=torch.float32)
    rm, rv = torch.zeros(4), torch.ones(4)
    y = F.batch_norm(x, rm, rv, training=True)
    assert y.dtype == torch.float32 and rm.dtype == torch.float32
    a = f64(x)
    np.testing.assert_allclose(f64(y), ref_bn(a, a.mean((0, 2)), a.var((0, 2))), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(f64(rv), 0.9 + 0.1 * a.var((0, 2), ddof=1), rtol=1e-5)


def test_batch_norm_errors():
    with pytest.raises(ValueError, match="Expected more than 1 value per channel when training"):
        F.batch_norm(torch.randn(1, 3), torch.zeros(3), torch.ones(3), training=True)
    with pytest.raises(RuntimeError, match="running_mean must be defined in evaluation mode"):
        F.batch_norm(torch.randn(4, 3), None, None, training=False)
    with pytest.raises(RuntimeError, match="should contain 3 elements"):
        F.batch_norm(torch.randn(4, 3), torch.zeros(2), torch.ones(3))


@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_gradcheck_gradgradcheck(training):
    """Gradients w.r.t. input, weight and bias, first and second order, training and eval."""
    x = randn(3, 2, 2, seed=13, requires_grad=True)
    w = randn(2, seed=14, requires_grad=True)
    b = randn(2, seed=15, requires_grad=True)
    rm, rv = randn(2, seed=16), randn(2, seed=17).abs() + 0.5

    def fn(x, w, b):
        return F.batch_norm(x, rm.clone(), rv.clone(), w, b, training=training)
    assert gradcheck(fn, (x, w, b))
    assert gradgradcheck(fn, (x, w, b))


def test_batch_norm_gradient_only_for_weight():
    """The input need not require grad for weight/bias gradients (and vice versa)."""
    x = randn(4, 3, seed=18)
    w = randn(3, seed=19, requires_grad=True)
    assert gradcheck(lambda w: F.batch_norm(x, None, None, w, None, training=True), (w,))
    xg = randn(4, 3, seed=18, requires_grad=True)
    assert gradgradcheck(lambda x: F.batch_norm(x, None, None, None, None, training=True), (xg,))


@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm_backward_paths_agree(training, affine):
    """The plain backward (kernel-level, create_graph=False) and the recorded one
    (create_graph=True, statistics recomputed differentiably) give the same gradients, also for a
    broadcast (expanded) incoming gradient."""
    x = randn(4, 3, 5, seed=50, requires_grad=True)
    w = randn(3, seed=51, requires_grad=True) if affine else None
    b = randn(3, seed=52, requires_grad=True) if affine else None
    rm, rv = randn(3, seed=53), randn(3, seed=54).abs() + 0.5
    inputs = tuple(t for t in (x, w, b) if t is not None)
    for g in (randn(4, 3, 5, seed=55), torch.tensor(2.0, dtype=torch.float64).expand(4, 3, 5)):
        y = F.batch_norm(x, rm.clone(), rv.clone(), w, b, training=training)
        plain = torch.autograd.grad(y, inputs, g, retain_graph=True)
        recorded = torch.autograd.grad(y, inputs, g, create_graph=True)
        for p, q in zip(plain, recorded):
            np.testing.assert_allclose(f64(p), f64(q), rtol=1e-10, atol=1e-12)


# -- the optional kernel: native vs decomposition ----------------------------------------------------------
def _kernel_table():
    return torch.zeros(1)._k


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(5, 3), (4, 3, 6), (2, 3, 4, 5)])
@pytest.mark.parametrize("stats", ["batch", "given"])
@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm_kernel_native_equals_decomposition(dtype, shape, stats, affine):
    """The NumPy kernel and the decomposition in required primitives agree (and match NumPy)."""
    rng = np.random.default_rng(20)
    x = rng.standard_normal(shape).astype(dtype) * 2 + 1
    c = shape[1]
    w = rng.standard_normal(c).astype(dtype) if affine else None
    b = rng.standard_normal(c).astype(dtype) if affine else None
    mean = rng.standard_normal(c).astype(dtype) if stats == "given" else None
    var = (rng.random(c) + 0.5).astype(dtype) if stats == "given" else None
    native = np_norm.batch_norm(x, w, b, mean, var, 1e-5)
    decomposed = DECOMPOSITIONS["batch_norm"](_kernel_table(), x, w, b, mean, var, 1e-5)
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == "float32" else dict(rtol=1e-12, atol=1e-12)
    for n, d in zip(native, decomposed):
        assert n.dtype == np.dtype(dtype) and d.dtype == np.dtype(dtype)
        assert n.shape == d.shape
        np.testing.assert_allclose(n, d, **tol)
    a = x.astype(np.float64)
    m = a.mean(batch_axes(a)) if mean is None else mean.astype(np.float64)
    v = a.var(batch_axes(a)) if var is None else var.astype(np.float64)
    ref = ref_bn(a, m, v, None if w is None else w.astype(np.float64), None if b is None else b.astype(np.float64))
    np.testing.assert_allclose(native[0], ref, **tol)
    np.testing.assert_allclose(native[1], m, **tol)
    np.testing.assert_allclose(native[2], v, **tol)


def test_numpy_backend_reports_native_batch_norm():
    """The NumPy backend implements batch_norm natively; the kernel table carries it."""
    from tensorplug.dispatch.backend_api import OPTIONAL
    assert "batch_norm" in OPTIONAL and "embedding_bag" in OPTIONAL
    assert _kernel_table()["batch_norm"] is np_norm.batch_norm


def test_batch_norm_through_decomposition_end_to_end(monkeypatch):
    """With the kernel table's batch_norm replaced by the decomposition, F.batch_norm (and its
    gradients) give the same results."""
    import functools
    k = _kernel_table()
    x = randn(4, 3, 2, seed=21, requires_grad=True)
    w = randn(3, seed=22, requires_grad=True)
    y1 = F.batch_norm(x, None, None, w, None, training=True)
    g1 = torch.autograd.grad(y1.sum() + (y1 * y1).sum(), (x, w))
    monkeypatch.setitem(k, "batch_norm", functools.partial(DECOMPOSITIONS["batch_norm"], k))
    y2 = F.batch_norm(x, None, None, w, None, training=True)
    g2 = torch.autograd.grad(y2.sum() + (y2 * y2).sum(), (x, w))
    np.testing.assert_allclose(f64(y1), f64(y2), rtol=1e-12, atol=1e-12)
    for a, b in zip(g1, g2):
        np.testing.assert_allclose(f64(a), f64(b), rtol=1e-10, atol=1e-12)


# -- layer / group / instance / local response norm ---------------------------------------------------------
def test_layer_norm_forward_and_gradients():
    """Normalize over the trailing normalized_shape dims; elementwise affine of that shape."""
    x = randn(2, 3, 4, seed=23, requires_grad=True)
    w, b = randn(3, 4, seed=24, requires_grad=True), randn(3, 4, seed=25, requires_grad=True)
    a = f64(x)
    m, v = a.mean((1, 2), keepdims=True), a.var((1, 2), keepdims=True)
    ref = (a - m) / np.sqrt(v + 1e-5) * f64(w) + f64(b)
    np.testing.assert_allclose(f64(F.layer_norm(x, (3, 4), w, b)), ref, rtol=1e-10, atol=1e-12)
    m1, v1 = a.mean(2, keepdims=True), a.var(2, keepdims=True)
    np.testing.assert_allclose(f64(F.layer_norm(x, 4, eps=1e-3)), (a - m1) / np.sqrt(v1 + 1e-3), rtol=1e-10)
    xs = randn(2, 3, seed=26, requires_grad=True)
    ws, bs = randn(3, seed=27, requires_grad=True), randn(3, seed=28, requires_grad=True)
    fn = lambda x, w, b: F.layer_norm(x, (3,), w, b)  # noqa: E731
    assert gradcheck(fn, (xs, ws, bs)) and gradgradcheck(fn, (xs, ws, bs))
    with pytest.raises(RuntimeError, match="normalized_shape"):
        F.layer_norm(x, (3,))


def test_group_norm_forward_and_gradients():
    """Channels split into groups; each sample's group normalized; per-channel affine."""
    x = randn(2, 4, 3, seed=29, requires_grad=True)
    w, b = randn(4, seed=30, requires_grad=True), randn(4, seed=31, requires_grad=True)
    a = f64(x).reshape(2, 2, -1)
    ref = ((a - a.mean(2, keepdims=True)) / np.sqrt(a.var(2, keepdims=True) + 1e-5)).reshape(2, 4, 3)
    ref = ref * f64(w)[None, :, None] + f64(b)[None, :, None]
    np.testing.assert_allclose(f64(F.group_norm(x, 2, w, b)), ref, rtol=1e-10, atol=1e-12)
    fn = lambda x, w, b: F.group_norm(x, 2, w, b)  # noqa: E731
    assert gradcheck(fn, (x, w, b)) and gradgradcheck(fn, (x, w, b))
    with pytest.raises(RuntimeError, match="divisible by num_groups"):
        F.group_norm(x, 3)


def test_instance_norm_forward_running_stats_and_gradients():
    """Each (sample, channel) slice normalized on its own; running stats get the mean over the batch
    of the per-instance updates."""
    x = randn(3, 2, 5, seed=32, requires_grad=True)
    a = f64(x)
    ref = (a - a.mean(2, keepdims=True)) / np.sqrt(a.var(2, keepdims=True) + 1e-5)
    rm, rv = torch.zeros(2, dtype=torch.float64), torch.ones(2, dtype=torch.float64)
    np.testing.assert_allclose(f64(F.instance_norm(x, rm, rv, momentum=0.2)), ref, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(f64(rm), 0.2 * a.mean(2).mean(0), rtol=1e-10)
    np.testing.assert_allclose(f64(rv), 0.8 + 0.2 * a.var(2, ddof=1).mean(0), rtol=1e-10)
    # eval with running stats
    y = F.instance_norm(x, rm, rv, use_input_stats=False)
    np.testing.assert_allclose(f64(y), ref_bn(a, f64(rm), f64(rv)), rtol=1e-10)
    w = randn(2, seed=33, requires_grad=True)
    xs = randn(2, 2, 3, seed=34, requires_grad=True)
    fn = lambda x, w: F.instance_norm(x, weight=w, bias=w * 2)  # noqa: E731
    assert gradcheck(fn, (xs, w)) and gradgradcheck(fn, (xs, w))


def test_local_response_norm():
    """x / (k + alpha/size * sum of x^2 over a zero-padded window of `size` channels) ** beta."""
    x = randn(2, 5, 3, seed=35, requires_grad=True)
    a = f64(x)
    size, alpha, beta, k = 3, 0.1, 0.75, 2.0
    sq = np.pad(a * a, ((0, 0), (size // 2, (size - 1) // 2), (0, 0)))
    window = sum(sq[:, i:i + 5] for i in range(size))
    ref = a / (k + alpha / size * window) ** beta
    np.testing.assert_allclose(f64(F.local_response_norm(x, size, alpha, beta, k)), ref, rtol=1e-10)
    fn = lambda x: F.local_response_norm(x, 2, alpha, beta, k)  # noqa: E731
    xs = randn(1, 3, 2, seed=36, requires_grad=True)
    assert gradcheck(fn, (xs,)) and gradgradcheck(fn, (xs,))


# -- modules -----------------------------------------------------------------------------------------------
def test_batchnorm_module_state_and_modes():
    """BatchNorm2d: weight 1, bias 0, running stats 0/1, num_batches_tracked counts training
    batches; eval uses the running statistics."""
    bn = nn.BatchNorm2d(3, momentum=0.2).double()
    assert f64(bn.weight).tolist() == [1, 1, 1] and f64(bn.bias).tolist() == [0, 0, 0]
    assert sorted(bn.state_dict()) == ["bias", "num_batches_tracked", "running_mean", "running_var", "weight"]
    x = randn(4, 3, 2, 2, seed=37)
    a = f64(x)
    y = bn(x)
    np.testing.assert_allclose(f64(y), ref_bn(a, a.mean((0, 2, 3)), a.var((0, 2, 3))), rtol=1e-10)
    np.testing.assert_allclose(f64(bn.running_mean), 0.2 * a.mean((0, 2, 3)), rtol=1e-12)
    np.testing.assert_allclose(f64(bn.running_var), 0.8 + 0.2 * a.var((0, 2, 3), ddof=1), rtol=1e-12)
    assert bn.num_batches_tracked.item() == 1
    bn.eval()
    y = bn(x)
    np.testing.assert_allclose(f64(y), ref_bn(a, f64(bn.running_mean), f64(bn.running_var)), rtol=1e-10)
    assert bn.num_batches_tracked.item() == 1
    with pytest.raises(ValueError, match="expected 4D input"):
        bn(torch.randn(2, 3, 4))


def test_batchnorm_momentum_none_is_cumulative_average():
    """momentum=None: running stats are the plain average over every batch seen."""
    bn = nn.BatchNorm1d(2, momentum=None).double()
    xs = [randn(5, 2, seed=40 + i) for i in range(3)]
    for x in xs:
        bn(x)
    np.testing.assert_allclose(f64(bn.running_mean), np.mean([f64(x).mean(0) for x in xs], 0), rtol=1e-12)
    np.testing.assert_allclose(f64(bn.running_var), np.mean([f64(x).var(0, ddof=1) for x in xs], 0),
                               rtol=1e-12)
    assert bn.num_batches_tracked.item() == 3


def test_batchnorm_no_tracking_and_no_affine():
    """track_running_stats=False: batch statistics in both modes, no buffers; affine=False: no
    parameters."""
    bn = nn.BatchNorm1d(3, affine=False, track_running_stats=False)
    assert list(bn.parameters()) == [] and bn.running_mean is None and bn.num_batches_tracked is None
    assert list(bn.state_dict()) == []
    x = randn(6, 3, 4, seed=44, dtype=torch.float32)
    a = f64(x)
    bn.eval()
    np.testing.assert_allclose(f64(bn(x)), ref_bn(a, a.mean((0, 2)), a.var((0, 2))), rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="expected 2D or 3D input"):
        bn(torch.randn(2, 3, 4, 5))


@pytest.mark.parametrize("make", [lambda: nn.BatchNorm2d(3, bias=False), lambda: nn.SyncBatchNorm(3, bias=False),
                                  lambda: nn.InstanceNorm2d(3, affine=True, bias=False),
                                  lambda: nn.GroupNorm(3, 3, bias=False)])
def test_norm_layers_bias_false_keep_only_the_weight(make):
    """bias=False (keyword-only, as in PyTorch): a weight and no bias, in parameters and state_dict;
    the output is the normalized input times the weight."""
    m = make().double()
    assert m.bias is None and [n for n, _ in m.named_parameters()] == ["weight"]
    assert "bias" not in m.state_dict() and "weight" in m.state_dict()
    with torch.no_grad():
        m.weight.copy_(torch.tensor([0.5, 2.0, -1.0], dtype=torch.float64))
    x = randn(4, 3, 2, 5, seed=61)
    a = f64(x)
    axes = (0, 2, 3) if "BatchNorm" in type(m).__name__ else (2, 3)
    ref = (a - a.mean(axes, keepdims=True)) / np.sqrt(a.var(axes, keepdims=True) + m.eps)
    np.testing.assert_allclose(f64(m(x)), ref * np.array([0.5, 2.0, -1.0])[None, :, None, None],
                               rtol=1e-10, atol=1e-12)


def test_batchnorm_module_gradcheck():
    bn = nn.BatchNorm1d(2).double()
    x = randn(3, 2, seed=45, requires_grad=True)
    assert gradcheck(lambda x: bn(x), (x,)) and gradgradcheck(lambda x: bn(x), (x,))
    bn(x).pow(2).sum().backward()
    assert bn.weight.grad.shape == (2,) and bn.bias.grad.shape == (2,)


def test_batchnorm_load_old_state_dict_without_num_batches_tracked():
    """A state dict saved before num_batches_tracked existed (version 1) still loads."""
    bn = nn.BatchNorm1d(2)
    sd = bn.state_dict()
    del sd["num_batches_tracked"]
    sd._metadata[""]["version"] = 1
    nn.BatchNorm1d(2).load_state_dict(sd)


def test_other_norm_modules():
    """LayerNorm / GroupNorm / InstanceNorm layers compute their functional forms."""
    x = randn(2, 4, 3, seed=46)
    ln = nn.LayerNorm(3).double()
    np.testing.assert_allclose(f64(ln(x)), f64(F.layer_norm(x, (3,))))
    assert [tuple(p.shape) for p in ln.parameters()] == [(3,), (3,)]
    assert nn.LayerNorm(3, bias=False).bias is None
    gn = nn.GroupNorm(2, 4).double()
    np.testing.assert_allclose(f64(gn(x)), f64(F.group_norm(x, 2)))
    inn = nn.InstanceNorm1d(4)
    np.testing.assert_allclose(f64(inn(x)), f64(F.instance_norm(x)))
    np.testing.assert_allclose(f64(inn(x[0])), f64(F.instance_norm(x[:1]))[0])
    tracked = nn.InstanceNorm1d(4, track_running_stats=True).double()
    tracked(x)
    assert abs(f64(tracked.running_mean)).sum() > 0
    tracked.eval()
    np.testing.assert_allclose(f64(tracked(x)), f64(F.instance_norm(x, tracked.running_mean,
                                                                    tracked.running_var, use_input_stats=False)))
    lrn = nn.LocalResponseNorm(2)
    np.testing.assert_allclose(f64(lrn(x)), f64(F.local_response_norm(x, 2)))
    for m in (ln, gn):
        xs = randn(2, 4, 3, seed=47, requires_grad=True)
        assert gradcheck(m, (xs,)) and gradgradcheck(m, (xs,))


@pytest.mark.parametrize("m, text", [
    (nn.BatchNorm2d(16),
     "BatchNorm2d(16, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)"),
    (nn.BatchNorm1d(3, momentum=None, affine=False),
     "BatchNorm1d(3, eps=1e-05, momentum=None, affine=False, bias=False, track_running_stats=True)"),
    (nn.BatchNorm3d(4, eps=1e-3),
     "BatchNorm3d(4, eps=0.001, momentum=0.1, affine=True, bias=True, track_running_stats=True)"),
    (nn.LayerNorm([4, 5]), "LayerNorm((4, 5), eps=1e-05, elementwise_affine=True, bias=True)"),
    (nn.GroupNorm(2, 4), "GroupNorm(2, 4, eps=1e-05, affine=True, bias=True)"),
    (nn.InstanceNorm2d(3),
     "InstanceNorm2d(3, eps=1e-05, momentum=0.1, affine=False, bias=False, track_running_stats=False)"),
    (nn.LocalResponseNorm(2), "LocalResponseNorm(2, alpha=0.0001, beta=0.75, k=1.0)"),
    (nn.BatchNorm2d(2, bias=False), "BatchNorm2d(2, eps=1e-05, momentum=0.1, affine=True, bias=False, "
                                    "track_running_stats=True)"),
    (nn.GroupNorm(2, 4, bias=False), "GroupNorm(2, 4, eps=1e-05, affine=True, bias=False)"),
    (nn.LayerNorm(3, bias=False), "LayerNorm((3,), eps=1e-05, elementwise_affine=True, bias=False)"),
])
def test_norm_reprs(m, text):
    assert repr(m) == text


def _rms_ref(x, dims, weight=None, eps=None):
    eps = np.finfo(x.dtype).eps if eps is None else eps
    y = x / np.sqrt((x.astype(np.float64) ** 2).mean(axis=dims, keepdims=True) + eps)
    return y if weight is None else y * weight


@pytest.mark.parametrize("shape,ns", [((2, 3), (3,)), ((2, 3, 4), (3, 4)), ((5, 4), 4)])
def test_rms_norm_matches_numpy(shape, ns):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape)
    k = 1 if isinstance(ns, int) else len(ns)
    dims = tuple(range(len(shape) - k, len(shape)))
    w = rng.standard_normal(shape[len(shape) - k:])
    got = F.rms_norm(torch.tensor(x), ns, torch.tensor(w), eps=1e-6)
    np.testing.assert_allclose(got.numpy(), _rms_ref(x, dims, w, 1e-6), rtol=1e-12)
    got = F.rms_norm(torch.tensor(x, dtype=torch.float32), ns)         # eps: float32's epsilon
    np.testing.assert_allclose(got.numpy(), _rms_ref(x.astype(np.float32), dims), rtol=1e-5)


def test_rms_norm_module_gradients_and_errors():
    m = nn.RMSNorm(3)
    assert repr(m) == "RMSNorm((3,), eps=None, elementwise_affine=True)" and list(m.state_dict()) == ["weight"]
    assert m.weight.tolist() == [1.0, 1.0, 1.0]
    assert nn.RMSNorm([2, 3], elementwise_affine=False).weight is None
    x = torch.tensor([[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]])
    np.testing.assert_allclose(m(x).detach().numpy(), _rms_ref(x.numpy(), (1,)), rtol=1e-6)
    a = torch.tensor([[0.3, -1.2, 0.7], [1.5, 0.2, -0.4]], dtype=torch.float64, requires_grad=True)
    w = torch.tensor([0.5, 2.0, -1.0], dtype=torch.float64, requires_grad=True)
    assert gradcheck(lambda a, w: F.rms_norm(a, (3,), w, eps=1e-5), (a, w))
    assert gradgradcheck(lambda a, w: F.rms_norm(a, (3,), w, eps=1e-5), (a, w))
    with pytest.raises(RuntimeError, match=r"expected input with shape \[\*4\]"):
        F.rms_norm(x, (4,))
    with pytest.raises(RuntimeError, match="expected weight of shape"):
        F.rms_norm(x, (3,), torch.ones(2))
