"""F.cross_entropy with class-index targets through the fused loss kernels (tensorplug.dispatch.optional_loss):
values and gradients against float64 NumPy references, finite differences, the decomposition, and the
fused backward kernel against the create_graph Tensor-op formula."""
import functools

import numpy as np
import pytest

import tensorplug as tp
import tensorplug.nn as nn
import tensorplug.nn.functional as F
from tensorplug.autograd import gradcheck, gradgradcheck
from tensorplug.dispatch import optional_loss as OL

rng = np.random.default_rng(0)


def ref(x, t, w, ignore_index, s, reduction):
    """(loss, d loss / d x) in float64 for x (N, C, ...) or (C,), t (N, ...) or 0-d."""
    x = np.asarray(x, np.float64)
    one, scalar = x.ndim == 1, np.ndim(t) == 0
    if one:
        x, t = x[None], np.asarray(t).reshape(1)
    c = x.shape[1]
    xr = np.moveaxis(x, 1, -1).reshape(-1, c)
    tr = np.asarray(t).reshape(-1)
    w = np.ones(c) if w is None else np.asarray(w, np.float64)
    valid = tr != ignore_index
    safe = np.where(valid, tr, 0)
    logp = xr - xr.max(1, keepdims=True)
    logp -= np.log(np.exp(logp).sum(1, keepdims=True))
    wt = w[safe] * valid
    rows = -(1 - s) * wt * logp[np.arange(len(tr)), safe] - (s / c) * valid * (logp * w).sum(1)
    onehot = np.eye(c)[safe]
    drows = (1 - s) * wt[:, None] * (np.exp(logp) - onehot) + (s / c) * valid[:, None] * (w.sum() * np.exp(logp) - w)
    if reduction == "none":
        loss, scale = rows, np.ones(len(tr))     # (gradient of loss.sum())
    elif reduction == "sum":
        loss, scale = rows.sum(), np.ones(len(tr))
    else:
        loss, scale = rows.sum() / wt.sum(), np.full(len(tr), 1 / wt.sum())
    dx = drows * scale[:, None]
    lead = (x.shape[0],) + x.shape[2:]
    if reduction == "none":
        loss = loss.reshape(() if scalar else lead)
    dx = np.moveaxis(dx.reshape(lead + (c,)), -1, 1)
    return loss, dx[0] if one else dx


SHAPES = {"2d": ((7, 5), (7,)), "1d": ((5,), ()), "1d_batch1": ((5,), (1,)), "4d": ((3, 4, 2, 3), (3, 2, 3))}


def _case(shape_name, ignored, weighted, ignore_index=-100):
    xs, ts = SHAPES[shape_name]
    c = xs[0] if len(xs) == 1 else xs[1]
    x = rng.standard_normal(xs) * 2
    t = rng.integers(0, c, ts)
    if ignored and t.size > 1:
        t.reshape(-1)[::3] = ignore_index
    w = rng.uniform(0.2, 2.0, c) if weighted else None
    return x, t, w


@pytest.mark.parametrize("dtype,tol", [("float64", 1e-12), ("float32", 3e-6)])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("ignored", [False, True])
@pytest.mark.parametrize("s", [0.0, 0.25])
def test_values_and_gradients_match_reference(dtype, tol, shape, reduction, weighted, ignored, s):
    """Loss and input gradient (of loss.sum()) equal the float64 formulas; dtype and shape kept."""
    x, t, w = _case(shape, ignored, weighted)
    xt = tp.tensor(x.astype(dtype), requires_grad=True)
    wt = None if w is None else tp.tensor(w.astype(dtype))
    loss = F.cross_entropy(xt, tp.tensor(t), weight=wt, reduction=reduction, label_smoothing=s)
    want, want_dx = ref(x.astype(dtype), t, None if w is None else w.astype(dtype), -100, s, reduction)
    assert loss.dtype == xt.dtype and tuple(loss.shape) == np.shape(want)
    assert loss.grad_fn.name() == "NllLossBackward0"
    np.testing.assert_allclose(loss.detach().numpy(), want, rtol=tol, atol=tol)
    loss.sum().backward()
    assert xt.grad.dtype == xt.dtype
    np.testing.assert_allclose(xt.grad.numpy(), want_dx, rtol=tol, atol=tol)


def test_ignore_index_that_is_a_class_and_module():
    """ignore_index may name a real class; nn.CrossEntropyLoss takes the same path."""
    x, t, w = _case("2d", False, True)
    t[:3] = 2
    xt = tp.tensor(x, requires_grad=True)
    mod = nn.CrossEntropyLoss(weight=tp.tensor(w), ignore_index=2, label_smoothing=0.1)
    loss = mod(xt, tp.tensor(t))
    loss.backward()
    want, want_dx = ref(x, t, w, 2, 0.1, "mean")
    np.testing.assert_allclose(loss.item(), want, rtol=1e-12)
    np.testing.assert_allclose(xt.grad.numpy(), want_dx, rtol=1e-12, atol=1e-14)
    assert not xt.grad.numpy()[:3].any()                 # ignored rows get exactly 0


def test_one_node_whose_input_is_the_logits():
    """One autograd node between the loss and the logits (no log_softmax / nll / div nodes)."""
    xt = tp.tensor(rng.standard_normal((4, 3)), requires_grad=True)
    h = xt * 2
    loss = F.cross_entropy(h, tp.tensor([0, 2, 1, 1]))
    (nxt, _), = loss.grad_fn.next_functions
    assert nxt is h.grad_fn


def test_all_rows_ignored():
    """mean over no target is NaN (0 / 0) and the gradient is all zeros, as in PyTorch; sum is 0."""
    xt = tp.tensor(rng.standard_normal((3, 4)), requires_grad=True)
    t = tp.tensor([-100, -100, -100])
    loss = F.cross_entropy(xt, t)
    assert np.isnan(loss.item())
    loss.backward()
    assert not xt.grad.numpy().any()
    assert F.cross_entropy(xt, t, reduction="sum").item() == 0.0


def test_float16_computed_in_float32():
    """float16 logits: the loss and gradient are the float32 computation rounded once."""
    x, t, w = _case("2d", True, True)
    x16 = x.astype(np.float16)
    xt = tp.tensor(x16, requires_grad=True)
    loss = F.cross_entropy(xt, tp.tensor(t), weight=tp.tensor(w.astype(np.float16)), label_smoothing=0.1)
    loss.backward()
    want, want_dx = ref(x16.astype(np.float64), t, w.astype(np.float16), -100, 0.1, "mean")
    assert loss.dtype == tp.float16 and xt.grad.dtype == tp.float16
    np.testing.assert_allclose(float(loss.item()), want, rtol=2e-3)
    np.testing.assert_allclose(xt.grad.numpy().astype(np.float64), want_dx, rtol=2e-2, atol=2e-4)


GRAD_CASES = [("2d", False, False, 0.0, "mean"), ("2d", True, True, 0.2, "mean"), ("4d", True, False, 0.1, "sum"),
              ("1d", False, True, 0.3, "none"), ("4d", False, True, 0.0, "none")]


@pytest.mark.parametrize("shape,ignored,weighted,s,reduction", GRAD_CASES)
def test_gradcheck_and_gradgradcheck(shape, ignored, weighted, s, reduction):
    """First and second derivatives against finite differences (float64)."""
    x, t, w = _case(shape, ignored, weighted)
    tt, wt = tp.tensor(t), None if w is None else tp.tensor(w)

    def fn(x):
        return F.cross_entropy(x, tt, weight=wt, reduction=reduction, label_smoothing=s)
    xt = tp.tensor(x, requires_grad=True)
    assert gradcheck(fn, (xt,))
    assert gradgradcheck(fn, (xt,))


@pytest.mark.parametrize("shape,ignored,weighted,s,reduction", GRAD_CASES)
def test_fused_backward_equals_create_graph_formula(shape, ignored, weighted, s, reduction):
    """The fused backward kernel (create_graph off) and the Tensor-op formula (create_graph on) agree."""
    x, t, w = _case(shape, ignored, weighted)
    tt, wt = tp.tensor(t), None if w is None else tp.tensor(w)
    xt = tp.tensor(x, requires_grad=True)
    out = F.cross_entropy(xt, tt, weight=wt, reduction=reduction, label_smoothing=s)
    v = tp.tensor(rng.standard_normal(tuple(out.shape)))
    fast, = tp.autograd.grad((out * v).sum(), (xt,))
    out = F.cross_entropy(xt, tt, weight=wt, reduction=reduction, label_smoothing=s)
    slow, = tp.autograd.grad((out * v).sum(), (xt,), create_graph=True)
    assert slow.requires_grad
    np.testing.assert_allclose(fast.numpy(), slow.detach().numpy(), rtol=1e-12, atol=1e-14)


def _decomposed(monkeypatch):
    K = tp.zeros(1)._k
    for name in OL.OPTIONAL:
        monkeypatch.setitem(K, name, functools.partial(getattr(OL, name), K))


@pytest.mark.parametrize("dtype,tol", [("float64", 1e-12), ("float32", 3e-6)])
@pytest.mark.parametrize("shape,ignored,weighted,s,reduction", GRAD_CASES)
def test_decomposition_equals_native(monkeypatch, dtype, tol, shape, ignored, weighted, s, reduction):
    """With the fused kernels replaced by their decompositions the op gives the native values and grads."""
    x, t, w = _case(shape, ignored, weighted)

    def run():
        xt = tp.tensor(x.astype(dtype), requires_grad=True)
        out = F.cross_entropy(xt, tp.tensor(t), weight=None if w is None else tp.tensor(w.astype(dtype)),
                              reduction=reduction, label_smoothing=s)
        out.sum().backward()
        return out.detach().numpy(), xt.grad.numpy()
    native = run()
    _decomposed(monkeypatch)
    decomposed = run()
    for a, b in zip(native, decomposed):
        assert a.dtype == b.dtype == np.dtype(dtype)
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def test_native_kernels_large_rows_blocked():
    """Many long rows (the blocked path, several blocks) against float64, with smoothing and weight."""
    K = tp.zeros(1)._k
    m, c = 70, 9000
    x = (rng.standard_normal((m, c)) * 3 + 50).astype(np.float32)        # large logits: no cancellation
    t = rng.integers(0, c, m)
    t[5] = -100
    w = rng.uniform(0.5, 1.5, c).astype(np.float32)
    loss, lse, denom = K["cross_entropy_loss"](x, t, w, -100, 0.1, "none")
    want, _ = ref(x, t, w, -100, 0.1, "none")
    np.testing.assert_allclose(loss, want, rtol=1e-5, atol=1e-5)
    g = rng.standard_normal(m).astype(np.float32)
    dx = K["cross_entropy_loss_backward"](g, x, t, w, lse, denom, -100, 0.1, "none")
    _, want_dx = ref(x, t, w, -100, 0.1, "none")
    np.testing.assert_allclose(dx, want_dx * g[:, None].astype(np.float64), rtol=1e-4, atol=1e-8)


def test_probability_targets_and_weight_requiring_grad_keep_the_composition():
    """Class-probability targets and a weight that requires grad take the log_softmax path (weight gets
    its gradient there)."""
    x = tp.tensor(rng.standard_normal((4, 3)), requires_grad=True)
    p = tp.tensor(rng.dirichlet(np.ones(3), 4))
    assert F.cross_entropy(x, p).grad_fn.name() != "NllLossBackward0"
    w = tp.tensor(rng.uniform(0.5, 2, 3), requires_grad=True)
    F.cross_entropy(x, tp.tensor([0, 1, 2, 1]), weight=w).backward()
    assert w.grad is not None


@pytest.mark.parametrize("decomposed", [False, True])
def test_ignored_rows_with_inf_or_nan_logits_are_zero(monkeypatch, decomposed):
    """Ignored rows count as nothing even when their logits are -inf or NaN (as in PyTorch): loss 0,
    gradient 0, and the other rows' mean is unaffected."""
    if decomposed:
        _decomposed(monkeypatch)
    x = rng.standard_normal((4, 3))
    x[1] = -np.inf
    x[2, 0] = np.nan
    t = np.array([0, -100, -100, 2])
    xt = tp.tensor(x, requires_grad=True)
    loss = F.cross_entropy(xt, tp.tensor(t), reduction="none", label_smoothing=0.1)
    want, want_dx = ref(x[[0, 3]], t[[0, 3]], None, -100, 0.1, "none")
    np.testing.assert_allclose(loss.detach().numpy(), [want[0], 0, 0, want[1]], rtol=1e-12)
    loss.sum().backward()
    np.testing.assert_allclose(xt.grad.numpy()[[0, 3]], want_dx, rtol=1e-12, atol=1e-14)
    assert not xt.grad.numpy()[[1, 2]].any()
    mean = F.cross_entropy(xt, tp.tensor(t))
    np.testing.assert_allclose(mean.item(), ref(x[[0, 3]], t[[0, 3]], None, -100, 0.0, "mean")[0], rtol=1e-12)
