"""Loss functions and loss modules: every forward against a float64 NumPy computation written from the
definition (reductions, class weights, ignore_index, label smoothing, probability targets), numerical
stability, error messages, and gradcheck + gradgradcheck on tiny float64 inputs."""
import math
import warnings

import numpy as np
import pytest

import tensorplug as torch
import tensorplug.nn as nn
import tensorplug.nn.functional as F
from tensorplug.autograd import gradcheck, gradgradcheck

RNG = np.random.default_rng(0)
A = RNG.standard_normal((4, 6))
B = RNG.standard_normal((4, 6))
C3 = RNG.standard_normal((4, 6))
P01 = RNG.uniform(0.05, 0.95, (4, 6))
T01 = RNG.uniform(0, 1, (4, 6))
LOGITS = RNG.standard_normal((4, 5))
W5 = RNG.uniform(0.5, 2, 5)
Y = np.array([1.0, -1.0, -1.0, 1.0])


def t(a, requires_grad=False):
    return torch.tensor(np.asarray(a, dtype=np.float64), requires_grad=requires_grad)


def f64(x):
    return np.asarray(x.detach().numpy(), dtype=np.float64)


def red(loss, reduction):
    return {"none": loss, "mean": loss.mean(), "sum": loss.sum()}[reduction]


def close(x, expect, atol=1e-10):
    np.testing.assert_allclose(f64(x), expect, rtol=1e-9, atol=atol)


def np_log_softmax(x, axis):
    m = x.max(axis=axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=axis, keepdims=True))


REDS = ["none", "mean", "sum"]


# -- regression losses ------------------------------------------------------------------------------
@pytest.mark.parametrize("reduction", REDS)
def test_l1_mse(reduction):
    close(F.l1_loss(t(A), t(B), reduction=reduction), red(np.abs(A - B), reduction))
    close(F.mse_loss(t(A), t(B), reduction=reduction), red((A - B) ** 2, reduction))


@pytest.mark.parametrize("reduction", REDS)
def test_smooth_l1_and_huber(reduction):
    d = np.abs(A - B)
    for beta in (0.5, 1.0, 2.0):
        expect = np.where(d < beta, 0.5 * d ** 2 / beta, d - 0.5 * beta)
        close(F.smooth_l1_loss(t(A), t(B), reduction=reduction, beta=beta), red(expect, reduction))
        expect = np.where(d < beta, 0.5 * d ** 2, beta * (d - 0.5 * beta))
        close(F.huber_loss(t(A), t(B), reduction=reduction, delta=beta), red(expect, reduction))
    close(F.smooth_l1_loss(t(A), t(B), reduction=reduction, beta=0.0), red(d, reduction))


def test_size_mismatch_warns_and_broadcasts():
    with pytest.warns(UserWarning, match="different to the input size"):
        r = F.mse_loss(t(A[:, :1]), t(B))
    close(r, ((A[:, :1] - B) ** 2).mean())
    with pytest.raises(ValueError, match="is not a valid value for reduction"):
        F.l1_loss(t(A), t(B), reduction="avg")


def test_legacy_size_average_reduce():
    with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated"):
        close(F.l1_loss(t(A), t(B), size_average=False), np.abs(A - B).sum())
    with pytest.warns(UserWarning):
        close(F.mse_loss(t(A), t(B), reduce=False), (A - B) ** 2)
    with pytest.warns(UserWarning):
        m = nn.L1Loss(size_average=False)
    assert m.reduction == "sum"


# -- nll / cross entropy ----------------------------------------------------------------------------------
def ref_nll(logp, target, weight=None, ignore_index=-100, reduction="mean"):
    """logp (N, C, ...) and target (N, ...): loss_i = -w[t_i] logp[i, t_i], 0 where ignored;
    mean = sum / sum of the weights of the kept targets."""
    lp = np.moveaxis(logp, 1, -1).reshape(-1, logp.shape[1])
    tt = target.reshape(-1)
    w = np.ones(lp.shape[1]) if weight is None else weight
    loss = np.zeros(len(tt))
    wsum = 0.0
    for i, c in enumerate(tt):
        if c == ignore_index:
            continue
        loss[i] = -w[c] * lp[i, c]
        wsum += w[c]
    if reduction == "none":
        return loss.reshape(target.shape)
    if reduction == "sum":
        return loss.sum()
    return loss.sum() / wsum


TGT = np.array([0, 4, -100, 2])


@pytest.mark.parametrize("reduction", REDS)
def test_nll_loss(reduction):
    logp = np_log_softmax(LOGITS, 1)
    tg = torch.tensor(TGT)
    close(F.nll_loss(t(logp), tg, reduction=reduction), ref_nll(logp, TGT, reduction=reduction))
    close(F.nll_loss(t(logp), tg, weight=t(W5), reduction=reduction),
          ref_nll(logp, TGT, W5, reduction=reduction))
    tg2 = np.array([0, 4, 3, 2])
    close(F.nll_loss(t(logp), torch.tensor(tg2), weight=t(W5), ignore_index=4, reduction=reduction),
          ref_nll(logp, tg2, W5, ignore_index=4, reduction=reduction))
    # (N, C, d1, d2) inputs
    x = RNG.standard_normal((3, 5, 2, 2))
    tt = RNG.integers(0, 5, (3, 2, 2))
    tt[0, 0, 0] = -100
    close(F.nll_loss(t(x), torch.tensor(tt), weight=t(W5), reduction=reduction),
          ref_nll(x, tt, W5, reduction=reduction))


@pytest.mark.filterwarnings("ignore:invalid value encountered")
def test_nll_loss_unbatched_and_all_ignored():
    x = LOGITS[0]
    close(F.nll_loss(t(x), torch.tensor(3)), -x[3])
    assert F.nll_loss(t(x), torch.tensor(3), reduction="none").shape == ()
    r = F.nll_loss(t(LOGITS), torch.tensor([-100] * 4))
    assert math.isnan(r.item())
    assert F.nll_loss(t(LOGITS), torch.tensor([-100] * 4), reduction="sum").item() == 0


def test_nll_loss_errors():
    x = t(LOGITS)
    with pytest.raises(IndexError, match="Target 5 is out of bounds."):
        F.nll_loss(x, torch.tensor([0, 5, 1, 1]))
    with pytest.raises(IndexError, match="Target -1 is out of bounds."):
        F.nll_loss(x, torch.tensor([0, -1, 1, 1]))
    with pytest.raises(ValueError, match=r"Expected input batch_size \(4\) to match target batch_size \(2\)"):
        F.nll_loss(x, torch.tensor([0, 1]))
    with pytest.raises(RuntimeError, match="weight tensor should be defined either for all 5 classes"):
        F.nll_loss(x, torch.tensor([0, 1, 1, 1]), weight=torch.ones(3, dtype=torch.float64))
    with pytest.raises(RuntimeError, match="expected target dtype to be Long"):
        F.nll_loss(x, torch.tensor([0, 1, 1, 1], dtype=torch.int32))
    with pytest.raises(RuntimeError, match=r"Expected target size \[2, 3\], got \[2, 2\]"):
        F.nll_loss(t(RNG.standard_normal((2, 4, 3))), torch.tensor([[0, 1], [1, 2]]))
    with pytest.raises(IndexError, match="Target 5 is out of bounds."):
        F.cross_entropy(x, torch.tensor([0, 5, 1, 1]))


def ref_ce(x, target, weight=None, ignore_index=-100, reduction="mean", ls=0.0):
    """Cross entropy with label smoothing from the definition (PyTorch's normalisation): the nll part
    and the uniform part (-sum_c w_c logp_c / C) both divided by the kept targets' weight sum."""
    logp = np_log_softmax(x, 1)
    c = x.shape[1]
    w = np.ones(c) if weight is None else weight
    nll = ref_nll(logp, target, weight, ignore_index, reduction)
    lp = np.moveaxis(logp, 1, -1).reshape(-1, c)
    tt = target.reshape(-1)
    keep = tt != ignore_index
    smooth = np.where(keep, -(lp * w).sum(1), 0.0)
    if reduction == "none":
        s = smooth.reshape(target.shape)
    elif reduction == "sum":
        s = smooth.sum()
    else:
        s = smooth.sum() / w[tt[keep]].sum()
    return (1 - ls) * nll + ls / c * s


@pytest.mark.parametrize("reduction", REDS)
@pytest.mark.parametrize("ls", [0.0, 0.2])
def test_cross_entropy(reduction, ls):
    tg = torch.tensor(TGT)
    close(F.cross_entropy(t(LOGITS), tg, reduction=reduction, label_smoothing=ls),
          ref_ce(LOGITS, TGT, reduction=reduction, ls=ls))
    close(F.cross_entropy(t(LOGITS), tg, weight=t(W5), reduction=reduction, label_smoothing=ls),
          ref_ce(LOGITS, TGT, W5, reduction=reduction, ls=ls))
    x = RNG.standard_normal((3, 5, 2))
    tt = RNG.integers(0, 5, (3, 2))
    tt[1, 1] = 2
    close(F.cross_entropy(t(x), torch.tensor(tt), weight=t(W5), ignore_index=2, reduction=reduction,
                          label_smoothing=ls),
          ref_ce(x, tt, W5, ignore_index=2, reduction=reduction, ls=ls))


@pytest.mark.parametrize("reduction", REDS)
def test_cross_entropy_probability_targets(reduction):
    p = RNG.dirichlet(np.ones(5), 4)
    logp = np_log_softmax(LOGITS, 1)
    for ls in (0.0, 0.3):
        q = p * (1 - ls) + ls / 5
        loss = -(logp * W5 * q).sum(1)
        expect = {"none": loss, "sum": loss.sum(), "mean": loss.sum() / 4}[reduction]
        close(F.cross_entropy(t(LOGITS), t(p), weight=t(W5), reduction=reduction, label_smoothing=ls), expect)
    with pytest.raises(RuntimeError, match="ignore_index is not supported for floating point target"):
        F.cross_entropy(t(LOGITS), t(p), ignore_index=1)
    with pytest.raises(RuntimeError, match="label_smoothing must be between 0.0 and 1.0"):
        F.cross_entropy(t(LOGITS), torch.tensor([0, 1, 2, 3]), label_smoothing=1.5)


def test_cross_entropy_unbatched_and_float32():
    close(F.cross_entropy(t(LOGITS[1]), torch.tensor(2)), -np_log_softmax(LOGITS[1], 0)[2])
    r = F.cross_entropy(torch.tensor(LOGITS, dtype=torch.float32), torch.tensor([0, 1, 2, 3]))
    assert r.dtype == torch.float32
    np.testing.assert_allclose(r.item(), ref_ce(LOGITS, np.array([0, 1, 2, 3])), rtol=1e-5)


# -- likelihood losses -------------------------------------------------------------------------------------
@pytest.mark.parametrize("reduction", REDS)
def test_poisson_nll_loss(reduction):
    tg = np.abs(B) * 2
    tg[0, 0] = 0.5
    stirling = np.where(tg > 1, tg * np.log(tg) - tg + 0.5 * np.log(2 * np.pi * tg), 0.0)
    close(F.poisson_nll_loss(t(A), t(tg), reduction=reduction), red(np.exp(A) - tg * A, reduction))
    close(F.poisson_nll_loss(t(A), t(tg), full=True, reduction=reduction),
          red(np.exp(A) - tg * A + stirling, reduction))
    close(F.poisson_nll_loss(t(P01), t(tg), log_input=False, eps=1e-3, reduction=reduction),
          red(P01 - tg * np.log(P01 + 1e-3), reduction))


@pytest.mark.parametrize("reduction", REDS)
def test_gaussian_nll_loss(reduction):
    var = P01.copy()
    var[0, 0] = 1e-9
    v = np.maximum(var, 1e-6)
    expect = 0.5 * (np.log(v) + (A - B) ** 2 / v) + 0.5 * np.log(2 * np.pi)
    close(F.gaussian_nll_loss(t(A), t(B), t(var), full=True, reduction=reduction), red(expect, reduction))
    # homoscedastic: var with one dim less
    v1 = P01[:, 0]
    expect = 0.5 * (np.log(v1)[:, None] + (A - B) ** 2 / v1[:, None])
    close(F.gaussian_nll_loss(t(A), t(B), t(v1), reduction=reduction), red(expect, reduction))


@pytest.mark.parametrize("reduction", REDS)
def test_binary_cross_entropy(reduction):
    expect = -(T01 * np.log(P01) + (1 - T01) * np.log(1 - P01))
    close(F.binary_cross_entropy(t(P01), t(T01), reduction=reduction), red(expect, reduction))
    w = RNG.uniform(0.5, 2, 6)
    close(F.binary_cross_entropy(t(P01), t(T01), weight=t(w), reduction=reduction), red(expect * w, reduction))


def test_binary_cross_entropy_clamps_log():
    p = t([0.0, 1.0, 0.5])
    y = t([1.0, 0.0, 1.0])
    close(F.binary_cross_entropy(p, y, reduction="none"), [100.0, 100.0, math.log(2)])
    p.requires_grad_(True)
    F.binary_cross_entropy(p, y).backward()
    assert np.all(np.isfinite(f64(p.grad)))
    with pytest.raises(RuntimeError, match="all elements of input should be between 0 and 1"):
        F.binary_cross_entropy(t([1.5]), t([1.0]))
    with pytest.raises(ValueError, match="Please ensure they have the same size"):
        F.binary_cross_entropy(t(P01), t(T01[:, :1]))


def ref_bce_logits(x, y, w=None, pw=None):
    sig = 1 / (1 + np.exp(-x))
    pw = 1.0 if pw is None else pw
    loss = -(pw * y * np.log(sig) + (1 - y) * np.log(1 - sig))
    return loss if w is None else loss * w


@pytest.mark.parametrize("reduction", REDS)
def test_binary_cross_entropy_with_logits(reduction):
    w = RNG.uniform(0.5, 2, (4, 6))
    pw = RNG.uniform(0.5, 3, 6)
    close(F.binary_cross_entropy_with_logits(t(A), t(T01), reduction=reduction),
          red(ref_bce_logits(A, T01), reduction))
    close(F.binary_cross_entropy_with_logits(t(A), t(T01), weight=t(w), pos_weight=t(pw), reduction=reduction),
          red(ref_bce_logits(A, T01, w, pw), reduction))
    with pytest.raises(ValueError, match="must be the same as input size"):
        F.binary_cross_entropy_with_logits(t(A), t(T01[:, :1]))


def test_binary_cross_entropy_with_logits_is_stable():
    x = t([100.0, -100.0, 100.0, -100.0, 0.0], requires_grad=True)
    y = t([0.0, 1.0, 1.0, 0.0, 1.0])
    loss = F.binary_cross_entropy_with_logits(x, y, reduction="none")
    # exact: softplus(x) - x y = max(x, 0) - x y + log1p(exp(-|x|))
    xs = np.array([100.0, -100.0, 100.0, -100.0, 0.0])
    ys = f64(y)
    close(loss, np.maximum(xs, 0) - xs * ys + np.log1p(np.exp(-np.abs(xs))), atol=1e-12)
    loss.sum().backward()
    close(x.grad, 1 / (1 + np.exp(-xs)) - ys, atol=1e-12)
    x1 = torch.tensor([1000.0, -1000.0])
    assert np.all(np.isfinite(F.binary_cross_entropy_with_logits(x1, torch.tensor([0.0, 1.0]),
                                                                  reduction="none").numpy()))


@pytest.mark.parametrize("reduction", ["none", "sum", "batchmean", "mean"])
def test_kl_div(reduction):
    p = RNG.dirichlet(np.ones(5), 4)
    q = RNG.dirichlet(np.ones(5), 4)
    p[0, 0] = 0.0
    logq = np.log(q)
    with np.errstate(divide="ignore", invalid="ignore"):
        pointwise = np.where(p > 0, p * np.log(np.where(p > 0, p, 1)), 0.0) - p * logq
    expect = {"none": pointwise, "sum": pointwise.sum(), "batchmean": pointwise.sum() / 4,
              "mean": pointwise.mean()}[reduction]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        close(F.kl_div(t(logq), t(p), reduction=reduction), expect)
        lp = np.log(RNG.dirichlet(np.ones(5), 4))
        pointwise = np.exp(lp) * (lp - logq)
        expect = {"none": pointwise, "sum": pointwise.sum(), "batchmean": pointwise.sum() / 4,
                  "mean": pointwise.mean()}[reduction]
        close(F.kl_div(t(logq), t(lp), reduction=reduction, log_target=True), expect)


def test_kl_div_mean_warns():
    with pytest.warns(UserWarning, match="batchmean"):
        F.kl_div(t(A), t(P01))


# -- margin / embedding losses ---------------------------------------------------------------------------
@pytest.mark.parametrize("reduction", REDS)
def test_margin_losses(reduction):
    x1, x2 = A[:, 0], B[:, 0]
    close(F.margin_ranking_loss(t(x1), t(x2), t(Y), margin=0.3, reduction=reduction),
          red(np.maximum(0, -Y * (x1 - x2) + 0.3), reduction))
    ys = np.sign(B)
    close(F.hinge_embedding_loss(t(A), t(ys), margin=0.7, reduction=reduction),
          red(np.where(ys == 1, A, np.maximum(0, 0.7 - A)), reduction))
    close(F.soft_margin_loss(t(A), t(ys), reduction=reduction), red(np.log1p(np.exp(-ys * A)), reduction))
    cos = (A * B).sum(1) / np.sqrt((A * A).sum(1) * (B * B).sum(1))
    close(F.cosine_embedding_loss(t(A), t(B), t(Y), margin=0.1, reduction=reduction),
          red(np.where(Y == 1, 1 - cos, np.maximum(0, cos - 0.1)), reduction))


@pytest.mark.parametrize("reduction", REDS)
def test_triplet_margin_loss(reduction):
    def dist(u, v, p):
        return (np.abs(u - v + 1e-6) ** p).sum(-1) ** (1 / p)
    for p, swap in ((2, False), (1, True), (3, True)):
        dn = dist(A, C3, p)
        if swap:
            dn = np.minimum(dn, dist(B, C3, p))
        expect = np.maximum(dist(A, B, p) - dn + 0.5, 0)
        close(F.triplet_margin_loss(t(A), t(B), t(C3), margin=0.5, p=p, swap=swap, reduction=reduction),
              red(expect, reduction))


def test_multilabel_and_multi_margin():
    x = A[:, :4]
    tg = np.array([[3, 0, -1, 1], [0, 1, 2, 3], [1, -1, 2, 2], [-1, 0, 1, 2]])
    expect = []
    for i in range(4):
        ys = []
        for v in tg[i]:
            if v == -1:
                break
            ys.append(v)
        s = sum(max(0, 1 - (x[i, j] - x[i, k])) for j in ys for k in range(4) if k not in ys)
        expect.append(s / 4)
    close(F.multilabel_margin_loss(t(x), torch.tensor(tg), reduction="none"), np.array(expect))
    tgt = np.array([0, 5, 2, 3])
    w = RNG.uniform(0.5, 2, 6)
    expect = [sum(w[tgt[i]] * max(0, 0.8 - A[i, tgt[i]] + A[i, k]) ** 2 for k in range(6) if k != tgt[i]) / 6
              for i in range(4)]
    close(F.multi_margin_loss(t(A), torch.tensor(tgt), p=2, margin=0.8, weight=t(w)), np.mean(expect))
    sig = 1 / (1 + np.exp(-A))
    expect = (-(T01 * np.log(sig) + (1 - T01) * np.log(1 - sig)) * w).mean(1)
    close(F.multilabel_soft_margin_loss(t(A), t(T01), weight=t(w), reduction="none"), expect)
    close(nn.MultiLabelSoftMarginLoss(weight=t(w))(t(A), t(T01)), expect.mean())


# -- gradients ---------------------------------------------------------------------------------------------
def g(*shape, lo=-1.0, hi=1.0, seed=1):
    return t(np.random.default_rng(seed + sum(shape)).uniform(lo, hi, shape), requires_grad=True)


GRAD_CASES = {
    "l1_loss": (lambda a, b: F.l1_loss(a, b), lambda: (g(2, 3), g(2, 3, seed=2))),
    "mse_loss": (lambda a, b: F.mse_loss(a, b, reduction="sum"), lambda: (g(2, 3), g(2, 3, seed=2))),
    "nll_loss": (lambda a: F.nll_loss(a, torch.tensor([0, 2, -100, 1]), weight=t([1.0, 2.0, 0.5])),
                 lambda: (g(4, 3),)),
    "nll_loss_ignore": (lambda a: F.nll_loss(a, torch.tensor([[0, 2], [1, 1]]), ignore_index=1, reduction="sum"),
                        lambda: (g(2, 3, 2),)),
    "cross_entropy": (lambda a: F.cross_entropy(a, torch.tensor([0, 2, 1]), weight=t([1.0, 2.0, 0.5]),
                                                label_smoothing=0.1), lambda: (g(3, 3),)),
    "cross_entropy_probs": (lambda a, p: F.cross_entropy(a, p), lambda: (g(2, 3), g(2, 3, lo=0, seed=3))),
    "poisson_nll_loss": (lambda a, b: F.poisson_nll_loss(a, b, full=True),
                         lambda: (g(2, 3), g(2, 3, lo=0.5, hi=3))),
    "poisson_nll_loss_linear": (lambda a: F.poisson_nll_loss(a, t([[1.0, 2.0, 3.0]]), log_input=False),
                                lambda: (g(1, 3, lo=0.2, hi=2),)),
    "binary_cross_entropy": (lambda a, b: F.binary_cross_entropy(a, b, weight=t([1.0, 2.0, 3.0])),
                             lambda: (g(2, 3, lo=0.1, hi=0.9), g(2, 3, lo=0, hi=1, seed=4))),
    "bce_with_logits": (lambda a, b: F.binary_cross_entropy_with_logits(a, b, pos_weight=t([0.5, 1.0, 2.0])),
                        lambda: (g(2, 3, lo=-3, hi=3), g(2, 3, lo=0, hi=1, seed=5))),
    "smooth_l1_loss": (lambda a, b: F.smooth_l1_loss(a, b, beta=0.5), lambda: (g(2, 3), g(2, 3, seed=6))),
    "huber_loss": (lambda a, b: F.huber_loss(a, b, delta=0.7), lambda: (g(2, 3), g(2, 3, seed=6))),
    "kl_div": (lambda a, b: F.kl_div(a, b, reduction="batchmean"), lambda: (g(2, 3), g(2, 3, lo=0.1, seed=7))),
    "kl_div_log_target": (lambda a, b: F.kl_div(a, b, reduction="sum", log_target=True),
                          lambda: (g(2, 3), g(2, 3, seed=7))),
    "margin_ranking_loss": (lambda a, b: F.margin_ranking_loss(a, b, t([1.0, -1.0, 1.0]), margin=0.1),
                            lambda: (g(3), g(3, seed=8))),
    "cosine_embedding_loss": (lambda a, b: F.cosine_embedding_loss(a, b, t([1.0, -1.0, -1.0]), margin=-0.5),
                              lambda: (g(3, 4), g(3, 4, seed=9))),
    "hinge_embedding_loss": (lambda a: F.hinge_embedding_loss(a, t([1.0, -1.0, -1.0])), lambda: (g(3),)),
    "soft_margin_loss": (lambda a: F.soft_margin_loss(a, t([1.0, -1.0, -1.0])), lambda: (g(3),)),
    "triplet_margin_loss": (lambda a, b, c: F.triplet_margin_loss(a, b, c, margin=2.0),
                            lambda: (g(2, 3), g(2, 3, seed=10), g(2, 3, seed=11))),
    "multilabel_margin_loss": (lambda a: F.multilabel_margin_loss(a, torch.tensor([[3, 0, -1, 1], [1, 2, 3, -1]])),
                               lambda: (g(2, 4),)),
    "multi_margin_loss": (lambda a: F.multi_margin_loss(a, torch.tensor([3, 0]), p=2), lambda: (g(2, 4),)),
    "multilabel_soft_margin_loss": (lambda a, b: F.multilabel_soft_margin_loss(a, b),
                                    lambda: (g(2, 3), g(2, 3, lo=0, seed=13))),
    "gaussian_nll_loss": (lambda a, v: F.gaussian_nll_loss(a, t([[0.1, 0.2, 0.3]]), v),
                          lambda: (g(1, 3), g(1, 3, lo=0.5, seed=12))),
}


@pytest.mark.parametrize("name", list(GRAD_CASES))
def test_loss_gradients(name):
    fn, make = GRAD_CASES[name]
    args = make()
    assert gradcheck(fn, args)
    assert gradgradcheck(fn, args)


# -- modules ----------------------------------------------------------------------------------------------
def test_loss_modules_forward_and_repr():
    logp = np_log_softmax(LOGITS, 1)
    tg = torch.tensor(TGT)
    m = nn.NLLLoss(weight=t(W5), reduction="sum")
    assert repr(m) == "NLLLoss()" and m.ignore_index == -100 and m.reduction == "sum"
    assert [n for n, _ in m.named_buffers()] == ["weight"]
    close(m(t(logp), tg), ref_nll(logp, TGT, W5, reduction="sum"))
    m = nn.CrossEntropyLoss(label_smoothing=0.2)
    assert repr(m) == "CrossEntropyLoss()" and list(m.named_buffers()) == [] and m.weight is None
    close(m(t(LOGITS), tg), ref_ce(LOGITS, TGT, ls=0.2))
    m = nn.BCEWithLogitsLoss(pos_weight=t(np.full(6, 2.0)))
    assert [n for n, _ in m.named_buffers()] == ["pos_weight"]
    close(m(t(A), t(T01)), ref_bce_logits(A, T01, pw=2.0).mean())
    pairs = [
        (nn.L1Loss(), (t(A), t(B)), np.abs(A - B).mean()),
        (nn.MSELoss(reduction="none"), (t(A), t(B)), (A - B) ** 2),
        (nn.BCELoss(weight=t(np.full(6, 0.5))), (t(P01), t(T01)),
         (-0.5 * (T01 * np.log(P01) + (1 - T01) * np.log(1 - P01))).mean()),
        (nn.SmoothL1Loss(beta=0.5), (t(A), t(B)), F.smooth_l1_loss(t(A), t(B), beta=0.5).item()),
        (nn.HuberLoss(delta=2.0), (t(A), t(B)), F.huber_loss(t(A), t(B), delta=2.0).item()),
        (nn.PoissonNLLLoss(), (t(A), t(np.abs(B))), (np.exp(A) - np.abs(B) * A).mean()),
        (nn.KLDivLoss(reduction="batchmean", log_target=True), (t(A), t(B)), (np.exp(B) * (B - A)).sum() / 4),
        (nn.MarginRankingLoss(0.2), (t(A[:, 0]), t(B[:, 0]), t(Y)),
         np.maximum(0, -Y * (A[:, 0] - B[:, 0]) + 0.2).mean()),
        (nn.HingeEmbeddingLoss(), (t(A), t(np.sign(B))), np.where(B > 0, A, np.maximum(0, 1 - A)).mean()),
        (nn.SoftMarginLoss(), (t(A), t(np.sign(B))), np.log1p(np.exp(-np.sign(B) * A)).mean()),
        (nn.CosineEmbeddingLoss(), (t(A), t(B), t(Y)), F.cosine_embedding_loss(t(A), t(B), t(Y)).item()),
        (nn.TripletMarginLoss(margin=0.5), (t(A), t(B), t(C3)), F.triplet_margin_loss(t(A), t(B), t(C3), 0.5).item()),
        (nn.GaussianNLLLoss(), (t(A), t(B), t(P01)), F.gaussian_nll_loss(t(A), t(B), t(P01)).item()),
    ]
    for m, args, expect in pairs:
        assert repr(m) == type(m).__name__ + "()"
        close(m(*args), expect)
    assert nn.SmoothL1Loss(beta=0.5).beta == 0.5 and nn.KLDivLoss(log_target=True).log_target
    assert nn.TripletMarginLoss().p == 2.0 and nn.PoissonNLLLoss(full=True).full


def test_loss_module_backward():
    x = t(LOGITS, requires_grad=True)
    loss = nn.CrossEntropyLoss()(x, torch.tensor([0, 1, 2, 3]))
    loss.backward()
    sm = np.exp(np_log_softmax(LOGITS, 1))
    onehot = np.eye(5)[[0, 1, 2, 3]]
    close(x.grad, (sm - onehot) / 4)
