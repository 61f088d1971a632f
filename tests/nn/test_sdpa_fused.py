"""The fused scaled_dot_product_attention (the `sdpa` / `sdpa_backward` kernels): values and gradients
against float64 NumPy references (masks, causal, scale, GQA, broadcast batch dims, dropout with a fixed
seed), its tiling and its exact-maximum fallback, the decomposition against the native kernels, the
fused backward against the Tensor-op formula, gradcheck and gradgradcheck, and the modules using it."""
from __future__ import annotations

import numpy as np
import pytest

import tensorplug as tp
import tensorplug.nn.functional as F
from tensorplug import nn
from tensorplug.autograd import gradcheck, gradgradcheck
from tensorplug.backends.numpy_backend import attention as native
from tensorplug.dispatch import optional_attention
from tensorplug.testing.conformance.opdb.attention import _weights

NODE = "ScaledDotProductFlashAttentionForCpuBackward0"


def rand(*shape, seed=0, dtype=np.float64):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def ref(q, k, v, g, mask=None, causal=False, scale=None, drop=None):
    """float64 output and q/k/v gradients of sum(out * g); drop: the keep multiplier (0 or 1/(1-p))."""
    scale = 1 / np.sqrt(q.shape[-1]) if scale is None else scale
    w = _weights(q, k, mask, causal, scale)[0]           # the conformance record's float64 softmax weights
    d = 1.0 if drop is None else drop
    out = (w * d) @ v
    dv = np.swapaxes(w * d, -1, -2) @ g
    dp = (g @ np.swapaxes(v, -1, -2)) * d
    ds = w * (dp - (dp * w).sum(-1, keepdims=True)) * scale
    return out, ds @ k, np.swapaxes(ds, -1, -2) @ q, dv


def sum_to(x, shape):
    while x.ndim > len(shape):
        x = x.sum(0)
    return x.sum(tuple(i for i, n in enumerate(shape) if n == 1 and x.shape[i] != 1), keepdims=True)


def run(q, k, v, g, dtype=tp.float32, **kw):
    ts = [tp.tensor(a, dtype=dtype, requires_grad=True) for a in (q, k, v)]
    out = F.scaled_dot_product_attention(*ts, **kw)
    out.backward(tp.tensor(g, dtype=dtype))
    return out, [t.grad.float().numpy() if dtype == tp.bfloat16 else t.grad.numpy() for t in ts]


BOOL = np.random.default_rng(7).random((6, 9)) > 0.4
BOOL[:, 0] = True
DEAD = BOOL.copy()
DEAD[3] = False
CASES = {
    "plain 4-d": dict(shape=((2, 3, 6, 5), (2, 3, 9, 5), (2, 3, 9, 4)), kw={}),
    "causal": dict(shape=((2, 3, 7, 4), (2, 3, 7, 4), (2, 3, 7, 4)), kw=dict(is_causal=True)),
    "causal L > S": dict(shape=((2, 8, 4), (2, 5, 4), (2, 5, 3)), kw=dict(is_causal=True)),
    "bool mask": dict(shape=((2, 3, 6, 5), (2, 3, 9, 5), (2, 3, 9, 4)), kw=dict(attn_mask=BOOL)),
    "bool mask, dead row": dict(shape=((2, 6, 5), (2, 9, 5), (2, 9, 4)), kw=dict(attn_mask=DEAD)),
    "float mask, scale": dict(shape=((2, 6, 5), (2, 9, 5), (2, 9, 4)),
                              kw=dict(attn_mask=rand(6, 9, seed=9), scale=0.3)),
    "per-batch bool mask": dict(shape=((2, 3, 6, 5), (2, 3, 9, 5), (2, 3, 9, 4)),
                                kw=dict(attn_mask=np.random.default_rng(3).random((2, 1, 6, 9)) > 0.3)),
    "broadcast batch dims": dict(shape=((2, 1, 6, 5), (1, 3, 9, 5), (3, 9, 4)), kw={}),
}


def _case(name, dtype=np.float64):
    c = CASES[name]
    q, k, v = (rand(*s, seed=i, dtype=dtype) for i, s in enumerate(c["shape"]))
    kw = dict(c["kw"])
    lead = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    g = rand(*lead, q.shape[-2], v.shape[-1], seed=5, dtype=dtype)
    return q, k, v, g, kw


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("dtype", [tp.float32, tp.float64])
def test_values_and_gradients_match_numpy(name, dtype):
    """Forward and the fused backward against the float64 reference, to the dtype's rounding."""
    q, k, v, g, kw = _case(name)
    want = ref(q, k, v, g, kw.get("attn_mask"), kw.get("is_causal", False), kw.get("scale"))
    m = kw.get("attn_mask")
    if m is not None:
        kw["attn_mask"] = tp.tensor(m, dtype=tp.bool if m.dtype == bool else dtype)
    out, grads = run(q, k, v, g, dtype, **kw)
    assert out.grad_fn.name() == NODE
    tol = dict(rtol=2e-5, atol=2e-6) if dtype == tp.float32 else dict(rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose(out.detach().numpy(), want[0], **tol)
    for got, w, a in zip(grads, want[1:], (q, k, v)):
        np.testing.assert_allclose(got, sum_to(w, a.shape), **tol)


def test_gqa_matches_repeated_heads():
    """enable_gqa: key/value heads repeated to the query's (each serves hq / h consecutive heads)."""
    q, k, v = rand(2, 4, 5, 3, seed=1), rand(2, 2, 6, 3, seed=2), rand(2, 2, 6, 2, seed=3)
    g = rand(2, 4, 5, 2, seed=4)
    kr, vr = np.repeat(k, 2, axis=1), np.repeat(v, 2, axis=1)
    out, (gq, gk, gv) = run(q, k, v, g, tp.float64, enable_gqa=True, is_causal=True)
    o, dq, dk, dv = ref(q, kr, vr, g, causal=True)
    np.testing.assert_allclose(out.detach().numpy(), o, rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose(gq, dq, rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose(gk, dk.reshape(2, 2, 2, 6, 3).sum(2), rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose(gv, dv.reshape(2, 2, 2, 6, 2).sum(2), rtol=1e-11, atol=1e-12)


def test_dropout_with_fixed_seed_is_the_seeded_keep_mask():
    """dropout_p: the keep mask is rand(..., L, S) >= p from the default generator (as F.dropout draws it),
    kept weights scaled by 1 / (1 - p); output and gradients equal the reference with that mask."""
    q, k, v = rand(2, 3, 6, 4, seed=1), rand(2, 3, 7, 4, seed=2), rand(2, 3, 7, 3, seed=3)
    g = rand(2, 3, 6, 3, seed=4)
    p = 0.3
    tp.manual_seed(123)
    keep = tp.rand(2, 3, 6, 7, dtype=tp.float64).numpy() >= p
    tp.manual_seed(123)
    out, grads = run(q, k, v, g, tp.float64, dropout_p=p, is_causal=True)
    want = ref(q, k, v, g, causal=True, drop=keep / (1 - p))
    np.testing.assert_allclose(out.detach().numpy(), want[0], rtol=1e-11, atol=1e-12)
    for got, w in zip(grads, want[1:]):
        np.testing.assert_allclose(got, w, rtol=1e-11, atol=1e-12)
    tp.manual_seed(123)
    again = F.scaled_dot_product_attention(*(tp.tensor(a) for a in (q, k, v)), dropout_p=p, is_causal=True)
    np.testing.assert_array_equal(again.numpy(), out.detach().numpy())


def test_dropout_statistics():
    """Uniform weights 1/S and v = 1: each output is the kept fraction / (1 - p), mean 1; about p of the
    weights are dropped (4000 rows x 50 keys, fixed seed: within 4 standard deviations)."""
    L, S, p = 4000, 50, 0.2
    q, k, v = tp.zeros(1, L, 4), tp.zeros(1, S, 4), tp.ones(1, S, 1)
    tp.manual_seed(0)
    out = F.scaled_dot_product_attention(q, k, v, dropout_p=p).numpy()[0, :, 0]
    kept = out * (1 - p) * S                              # kept keys per row: integers
    np.testing.assert_allclose(kept, np.round(kept), atol=1e-3)
    frac = kept.sum() / (L * S)
    assert abs(frac - (1 - p)) < 4 * np.sqrt(p * (1 - p) / (L * S))
    assert abs(out.mean() - 1.0) < 4 * np.sqrt(p / (1 - p) / (L * S))
    assert F.scaled_dot_product_attention(q, k, v, dropout_p=1.0).abs().max().item() == 0.0


@pytest.mark.parametrize("name", ["causal", "bool mask, dead row", "float mask, scale", "broadcast batch dims"])
def test_fused_backward_equals_tensor_op_formula(name):
    """create_graph=False runs sdpa_backward, create_graph=True the Tensor-op formula: same gradients
    (with dropout too: both use the forward's keep mask)."""
    q, k, v, g, kw = _case(name)
    m = kw.get("attn_mask")
    if m is not None:
        kw["attn_mask"] = tp.tensor(m)
    ts = [tp.tensor(a, requires_grad=True) for a in (q, k, v)]
    tp.manual_seed(5)
    out = F.scaled_dot_product_attention(*ts, dropout_p=0.25, **kw)
    fused = tp.autograd.grad(out, ts, tp.tensor(g), retain_graph=True)
    formula = tp.autograd.grad(out, ts, tp.tensor(g), create_graph=True)
    assert all(f.grad_fn is not None for f in formula)
    for a, b in zip(fused, formula):
        np.testing.assert_allclose(a.numpy(), b.detach().numpy(), rtol=1e-12, atol=1e-13)


GRAD_CASES = {
    "causal": lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
    "bool mask, dead row": lambda q, k, v: F.scaled_dot_product_attention(q, k, v, tp.tensor(DEAD[:4, :5])),
    "float mask, scale": lambda q, k, v: F.scaled_dot_product_attention(q, k, v, tp.tensor(rand(4, 5, seed=3)),
                                                                       scale=0.7),
    "dropout, fixed seed": lambda q, k, v: (tp.manual_seed(11),
                                            F.scaled_dot_product_attention(q, k, v, dropout_p=0.3))[1],
}


@pytest.mark.parametrize("name", list(GRAD_CASES))
def test_gradcheck_and_gradgradcheck(name):
    q = tp.tensor(rand(2, 4, 3, seed=1), requires_grad=True)
    k = tp.tensor(rand(2, 5, 3, seed=2), requires_grad=True)
    v = tp.tensor(rand(2, 5, 2, seed=3), requires_grad=True)
    fn = GRAD_CASES[name]
    assert fn(q, k, v).grad_fn.name() == NODE
    assert gradcheck(fn, (q, k, v))
    assert gradgradcheck(fn, (q, k, v))


def test_gqa_gradgradcheck():
    q = tp.tensor(rand(1, 4, 3, 2, seed=1), requires_grad=True)
    k = tp.tensor(rand(1, 2, 3, 2, seed=2), requires_grad=True)
    v = tp.tensor(rand(1, 2, 3, 2, seed=3), requires_grad=True)

    def fn(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    assert gradcheck(fn, (q, k, v)) and gradgradcheck(fn, (q, k, v))


def test_float_mask_requiring_grad_gets_its_gradient():
    """A float mask that requires grad takes the Tensor-op composition: d out / d mask = d scores."""
    q, k, v, g = rand(2, 4, 3, seed=1), rand(2, 5, 3, seed=2), rand(2, 5, 2, seed=3), rand(2, 4, 2, seed=4)
    m = tp.tensor(rand(4, 5, seed=5), requires_grad=True)
    out = F.scaled_dot_product_attention(tp.tensor(q), tp.tensor(k), tp.tensor(v), m)
    out.backward(tp.tensor(g))
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(3) + m.detach().numpy()
    w = np.exp(s - s.max(-1, keepdims=True))
    w /= w.sum(-1, keepdims=True)
    dp = g @ np.swapaxes(v, -1, -2)
    ds = w * (dp - (dp * w).sum(-1, keepdims=True))
    np.testing.assert_allclose(m.grad.numpy(), ds.sum(0), rtol=1e-11, atol=1e-12)


# -- the kernels ------------------------------------------------------------------------------------
def _kernel_args(rng, n=3, L=6, S=9, E=4, dt=np.float32, causal=False, mask=None, keep=None):
    q, k, v = (rng.standard_normal(s).astype(dt) for s in ((n, L, E), (n, S, E), (n, S, E + 1)))
    return q, k, v, mask, keep, 0.0 if keep is None else 0.3, causal, 0.5


@pytest.mark.parametrize("probs", [False, True])
@pytest.mark.parametrize("variant", ["plain", "causal", "bool", "float", "keep"])
def test_native_kernels_equal_the_decomposition(variant, probs):
    rng = np.random.default_rng(0)
    mask = {"bool": rng.random((6, 9)) > 0.3, "float": rng.standard_normal((6, 9)).astype(np.float32)}.get(variant)
    keep = rng.random((3, 6, 9)) >= 0.3 if variant == "keep" else None
    args = _kernel_args(rng, causal=variant == "causal", mask=mask, keep=keep)
    K = tp.tensor([1.0])._k
    a = native.sdpa(*args, probs)
    b = optional_attention.sdpa(K, *args, probs)
    for x, y in zip(a, b):
        assert (x is None) == (y is None)
        if x is not None:
            np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-6)
    g = rng.standard_normal(a[0].shape).astype(np.float32)
    q, k, v, mask, keep, p, causal, scale = args
    for x, y in zip(native.sdpa_backward(g, q, k, v, *a, mask, keep, p, causal, scale),
                    optional_attention.sdpa_backward(K, g, q, k, v, *b, mask, keep, p, causal, scale)):
        np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-6)


def test_tiles_and_causal_key_truncation(monkeypatch):
    """Tiles smaller than a head's score matrix (rows split, causal tiles stop at their last key)."""
    monkeypatch.setattr(native, "_TILE", 40)
    q, k, v, g = rand(2, 13, 3, seed=1), rand(2, 13, 3, seed=2), rand(2, 13, 2, seed=3), rand(2, 13, 2, seed=4)
    for causal in (False, True):
        out, grads = run(q, k, v, g, tp.float64, is_causal=causal)
        want = ref(q, k, v, g, causal=causal)
        np.testing.assert_allclose(out.detach().numpy(), want[0], rtol=1e-11, atol=1e-12)
        for got, w in zip(grads, want[1:]):
            np.testing.assert_allclose(got, w, rtol=1e-11, atol=1e-12)


@pytest.mark.parametrize("L,S", [(64, 64), (33, 33), (40, 24), (20, 50)])
@pytest.mark.parametrize("drop", [False, True])
def test_causal_row_bands(L, S, drop, monkeypatch):
    """Causal attention with whole rows per tile, from _CAUSAL_SPLIT rows on: two bands of rows, the first
    reading only its keys; 64 x 64 at the default split, the others with the split lowered to 2 (odd rows,
    L > S, L < S). Values and gradients against the reference; with dropout, the seeded keep mask."""
    if L != 64:
        monkeypatch.setattr(native, "_CAUSAL_SPLIT", 2)
    bands = list(native._tiles(6, L, S, True))
    assert {(r0, r1) for _, _, r0, r1, _ in bands} == {(0, L // 2), (L // 2, L)}
    q, k, v = rand(2, 3, L, 4, seed=1), rand(2, 3, S, 4, seed=2), rand(2, 3, S, 3, seed=3)
    g = rand(2, 3, L, 3, seed=4)
    p = 0.3 if drop else 0.0
    keep = None
    if drop:
        tp.manual_seed(7)
        keep = tp.rand(2, 3, L, S, dtype=tp.float64).numpy() >= p
        tp.manual_seed(7)
    out, grads = run(q, k, v, g, tp.float64, dropout_p=p, is_causal=True)
    want = ref(q, k, v, g, causal=True, drop=None if keep is None else keep / (1 - p))
    np.testing.assert_allclose(out.detach().numpy(), want[0], rtol=1e-11, atol=1e-12)
    for got, w in zip(grads, want[1:]):
        np.testing.assert_allclose(got, w, rtol=1e-11, atol=1e-12)


def test_exact_maximum_fallback():
    """Large, nearly orthogonal q and k: the norm bound is far above the row maxima (exp would underflow),
    so the tile is redone with the exact maxima; float32 results stay finite and right."""
    q = np.zeros((1, 3, 2))
    q[0, :, 0] = 60.0
    k = np.zeros((1, 4, 2))
    k[0, :, 1] = 60.0
    k[0, :, 0] = [0.0, 0.01, 0.02, 0.03]
    v, g = rand(1, 4, 2, seed=3), rand(1, 3, 2, seed=4)
    out, grads = run(q, k, v, g, tp.float32, scale=1.0)
    want = ref(q, k, v, g, scale=1.0)
    np.testing.assert_allclose(out.detach().numpy(), want[0], rtol=1e-5, atol=1e-5)
    for got, w in zip(grads, want[1:]):
        np.testing.assert_allclose(got, w, rtol=1e-4, atol=1e-4)


def test_lse_path_equals_saved_weights_path(monkeypatch):
    """The backward from the row log-sum-exp (large inputs) equals the one from the saved weights."""
    q, k, v, g = rand(2, 3, 6, 4, seed=1), rand(2, 3, 8, 4, seed=2), rand(2, 3, 8, 3, seed=3), rand(2, 3, 6, 3, seed=4)
    a = run(q, k, v, g, tp.float64, is_causal=True)[1]
    import tensorplug.ops.attention as A
    monkeypatch.setattr(A, "PROBS_MAX", 0)
    b = run(q, k, v, g, tp.float64, is_causal=True)[1]
    for x, y in zip(a, b):
        np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("dtype,tol", [(tp.float16, 1e-2), (tp.bfloat16, 4e-2)])
def test_low_precision_is_computed_in_float32(dtype, tol):
    q, k, v, g, kw = _case("causal")
    want = ref(q, k, v, g, causal=True)
    out, grads = run(q, k, v, g, dtype, is_causal=True)
    assert out.dtype == dtype
    np.testing.assert_allclose(out.detach().float().numpy(), want[0], rtol=tol, atol=tol)
    for got, w in zip(grads, want[1:]):
        np.testing.assert_allclose(np.asarray(got, dtype=np.float64), w, rtol=tol, atol=3 * tol)


def _nodes(t):
    seen, stack, names = set(), [t.grad_fn], set()
    while stack:
        n = stack.pop()
        if n is None or id(n) in seen:
            continue
        seen.add(id(n))
        names.add(n.name())
        stack.extend(e[0] for e in n.edges if e is not None)
    return names


def test_modules_use_the_fused_kernel():
    """MultiheadAttention(need_weights=False) and TransformerEncoderLayer run the fused node."""
    tp.manual_seed(0)
    mha = nn.MultiheadAttention(8, 2, batch_first=True)
    x = tp.randn(2, 5, 8)
    mask = nn.Transformer.generate_square_subsequent_mask(5)
    out, w = mha(x, x, x, need_weights=False, attn_mask=mask, is_causal=True)
    assert w is None and NODE in _nodes(out)
    layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True)
    assert NODE in _nodes(layer(x))
