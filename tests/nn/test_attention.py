"""scaled_dot_product_attention and MultiheadAttention: values against independent float64 NumPy
references (masks of both kinds, causal, key padding, batch_first, unbatched input, kdim/vdim,
add_bias_kv, add_zero_attn, averaged and per-head weights, fully masked rows), PyTorch's parameter
names, init and errors, dropout, and gradients by finite differences.

The NumPy references here (np_sdpa, np_mha, ...) are also used by test_transformer.py."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import tensorplug as tp
import tensorplug.nn.functional as F
from tensorplug import nn
from tensorplug.autograd import gradcheck, gradgradcheck

INF = float("inf")


# -- NumPy references -------------------------------------------------------------------------------
def np_softmax(s, safe):
    """Row softmax; rows that are all -inf give NaN (safe=False) or 0 (safe=True)."""
    with np.errstate(invalid="ignore"):
        e = np.exp(s - s.max(-1, keepdims=True))
        w = e / e.sum(-1, keepdims=True)
    if safe:
        w = np.where(np.isneginf(s).all(-1, keepdims=True), 0.0, w)
    return w


def np_sdpa(q, k, v, mask=None, causal=False, scale=None):
    """SDPA semantics: a bool mask marks the keys that take part; a float mask is added."""
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    s = np.matmul(q, np.swapaxes(k, -1, -2)) * scale
    if causal:
        L, S = s.shape[-2:]
        s = np.where(np.tril(np.ones((L, S), bool)), s, -INF)
    if mask is not None:
        s = np.where(mask, s, -INF) if mask.dtype == bool else s + mask
    return np.matmul(np_softmax(s, True), v)


def as_additive(mask):
    """MHA semantics: bool True = masked out (-inf); a float mask is added."""
    return np.where(mask, -INF, 0.0) if mask.dtype == bool else mask


def np_mha(p, query, key, value, H, attn_mask=None, kpm=None, add_zero_attn=False, safe=False):
    """Multi-head attention from a module's parameters (dict of arrays, PyTorch names), seq-first
    (L, N, E) / (S, N, Ek) / (S, N, Ev) arrays, one head and one batch entry at a time.
    Returns (output (L, N, E), per-head weights (N, H, L, S'))."""
    E = query.shape[-1]
    if "in_proj_weight" in p:
        wq, wk, wv = np.split(p["in_proj_weight"], 3)
    else:
        wq, wk, wv = p["q_proj_weight"], p["k_proj_weight"], p["v_proj_weight"]
    bq, bk, bv = np.split(p["in_proj_bias"], 3) if "in_proj_bias" in p else (0.0, 0.0, 0.0)
    q, k, v = query @ wq.T + bq, key @ wk.T + bk, value @ wv.T + bv
    L, N, _ = q.shape
    extra = []                                    # columns appended to the keys (never masked)
    if "bias_k" in p:
        k = np.concatenate([k, np.broadcast_to(p["bias_k"], (1, N, E))])
        v = np.concatenate([v, np.broadcast_to(p["bias_v"], (1, N, E))])
        extra.append(0)
    if add_zero_attn:
        k = np.concatenate([k, np.zeros((1, N, E))])
        v = np.concatenate([v, np.zeros((1, N, E))])
        extra.append(0)
    S = k.shape[0]
    hd = E // H
    out = np.zeros((L, N, E))
    weights = np.zeros((N, H, L, S))
    for n in range(N):
        for h in range(H):
            sl = slice(h * hd, (h + 1) * hd)
            s = q[:, n, sl] @ k[:, n, sl].T / math.sqrt(hd)
            if attn_mask is not None:
                m = attn_mask if attn_mask.ndim == 2 else attn_mask[n * H + h]
                s = s + np.concatenate([as_additive(m), np.zeros((L, len(extra)))], 1)
            if kpm is not None:
                s = s + np.concatenate([as_additive(kpm[n]), np.zeros(len(extra))])[None]
            w = np_softmax(s, safe)
            weights[n, h] = w
            out[:, n, sl] = w @ v[:, n, sl]
    out = out @ p["out_proj.weight"].T + p.get("out_proj.bias", 0.0)
    return out, weights


def params_np(m):
    return {n: p.detach().numpy().astype(np.float64) for n, p in m.named_parameters()}


def npa(t):
    return t.detach().numpy()


def rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def with_params(module, names, params, fn):
    """fn() with the module's parameters `names` (dotted) replaced by the tensors `params`."""
    saved = []
    for name, p in zip(names, params):
        path, _, leaf = name.rpartition(".")
        owner = module.get_submodule(path)
        saved.append((owner, leaf, owner._parameters[leaf]))
        owner._parameters[leaf] = p
    try:
        return fn()
    finally:
        for owner, leaf, p in saved:
            owner._parameters[leaf] = p


def check_module_grads(m, inputs, call, second_order=False):
    """gradcheck of call(*inputs) wrt the inputs and every parameter of m."""
    names = [n for n, _ in m.named_parameters()]
    params = [p.detach().clone().requires_grad_() for p in m.parameters()]
    k = len(inputs)

    def f(*args):
        return with_params(m, names, args[k:], lambda: call(*args[:k]))

    args = tuple(inputs) + tuple(params)
    assert gradcheck(f, args, eps=1e-6, atol=1e-7, rtol=1e-5)
    if second_order:
        assert gradgradcheck(f, args, eps=1e-6, atol=1e-6, rtol=1e-4)


# -- scaled_dot_product_attention -------------------------------------------------------------------
def _bool_mask(shape, seed):
    m = np.random.default_rng(seed).random(shape) > 0.4
    m[..., 0] = True                              # no fully masked rows here
    return m


SDPA_CASES = {
    "plain-3d": dict(q=(2, 3, 4), k=(2, 5, 4), v=(2, 5, 6)),
    "unbatched-2d": dict(q=(3, 4), k=(5, 4), v=(5, 2)),
    "heads-4d": dict(q=(2, 3, 4, 8), k=(2, 3, 6, 8), v=(2, 3, 6, 5)),
    "broadcast-batch": dict(q=(2, 3, 4, 8), k=(1, 3, 6, 8), v=(3, 6, 5)),
    "bool-mask-2d": dict(q=(2, 3, 4, 8), k=(2, 3, 6, 8), v=(2, 3, 6, 5), mask=("bool", (4, 6))),
    "bool-mask-4d": dict(q=(2, 3, 4, 8), k=(2, 3, 6, 8), v=(2, 3, 6, 5), mask=("bool", (2, 3, 4, 6))),
    "float-mask": dict(q=(2, 3, 4, 8), k=(2, 3, 6, 8), v=(2, 3, 6, 5), mask=("float", (2, 1, 4, 6))),
    "causal-square": dict(q=(2, 5, 4), k=(2, 5, 4), v=(2, 5, 3), causal=True),
    "causal-L<S": dict(q=(2, 3, 4), k=(2, 6, 4), v=(2, 6, 3), causal=True),
    "causal-L>S": dict(q=(2, 6, 4), k=(2, 3, 4), v=(2, 3, 3), causal=True),
    "scale": dict(q=(2, 3, 4), k=(2, 5, 4), v=(2, 5, 6), scale=0.37),
}


@pytest.mark.parametrize("case", list(SDPA_CASES), ids=list(SDPA_CASES))
def test_sdpa_matches_numpy(case):
    c = SDPA_CASES[case]
    q, k, v = rand(*c["q"], seed=1), rand(*c["k"], seed=2), rand(*c["v"], seed=3)
    mask = None
    if "mask" in c:
        kind, shape = c["mask"]
        mask = _bool_mask(shape, 4) if kind == "bool" else rand(*shape, seed=4)
    ref = np_sdpa(q, k, v, mask, c.get("causal", False), c.get("scale"))
    got = F.scaled_dot_product_attention(tp.tensor(q), tp.tensor(k), tp.tensor(v),
                                         None if mask is None else tp.tensor(mask),
                                         is_causal=c.get("causal", False), scale=c.get("scale"))
    assert tuple(got.shape) == ref.shape
    np.testing.assert_allclose(npa(got), ref, rtol=1e-12, atol=1e-13)


def test_sdpa_bool_mask_equals_float_mask():
    q, k, v = (tp.tensor(rand(2, 4, 3, seed=s)) for s in (1, 2, 3))
    m = _bool_mask((4, 4), 5)
    a = F.scaled_dot_product_attention(q, k, v, tp.tensor(m))
    b = F.scaled_dot_product_attention(q, k, v, tp.tensor(np.where(m, 0.0, -INF)))
    np.testing.assert_array_equal(npa(a), npa(b))
    # causal flag = the lower-triangular bool mask
    c = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    d = F.scaled_dot_product_attention(q, k, v, tp.tensor(np.tril(np.ones((4, 4), bool))))
    np.testing.assert_array_equal(npa(c), npa(d))


def test_sdpa_fully_masked_row_is_zero_with_zero_gradient():
    """PyTorch's math path: a query row with no key to attend to gives 0 (not NaN), and no gradient."""
    m = _bool_mask((3, 5), 6)
    m[1] = False
    fm = np.where(m, 0.0, -INF)
    q = tp.tensor(rand(2, 3, 4, seed=1), requires_grad=True)
    k = tp.tensor(rand(2, 5, 4, seed=2), requires_grad=True)
    v = tp.tensor(rand(2, 5, 4, seed=3), requires_grad=True)
    for mask in (m, fm):
        out = F.scaled_dot_product_attention(q, k, v, tp.tensor(mask))
        ref = np_sdpa(npa(q), npa(k), npa(v), mask)
        assert (ref[:, 1] == 0).all()
        np.testing.assert_allclose(npa(out), ref, rtol=1e-12, atol=1e-13)
        q.grad = k.grad = v.grad = None
        out.pow(2).sum().backward()
        for t in (q, k, v):
            assert np.isfinite(npa(t.grad)).all()
        assert (npa(q.grad)[:, 1] == 0).all() and np.abs(npa(q.grad)[:, 0]).max() > 0


def test_sdpa_grouped_query_attention():
    q, k, v = rand(2, 6, 3, 4, seed=1), rand(2, 2, 5, 4, seed=2), rand(2, 3, 5, 7, seed=3)
    got = F.scaled_dot_product_attention(tp.tensor(q), tp.tensor(k), tp.tensor(v), enable_gqa=True)
    ref = np_sdpa(q, np.repeat(k, 3, axis=1), np.repeat(v, 2, axis=1))
    np.testing.assert_allclose(npa(got), ref, rtol=1e-12, atol=1e-13)
    with pytest.raises(RuntimeError, match="must divide the number of heads in query"):
        F.scaled_dot_product_attention(tp.tensor(q), tp.tensor(rand(2, 4, 5, 4)), tp.tensor(v), enable_gqa=True)
    with pytest.raises(RuntimeError):          # without enable_gqa the head counts must broadcast
        F.scaled_dot_product_attention(tp.tensor(q), tp.tensor(k), tp.tensor(rand(2, 2, 5, 7)))


def test_sdpa_errors():
    q, k, v = tp.randn(2, 3, 4), tp.randn(2, 5, 4), tp.randn(2, 5, 6)
    with pytest.raises(RuntimeError, match="Explicit attn_mask should not be set when is_causal=True"):
        F.scaled_dot_product_attention(q, k, v, tp.zeros(3, 5), is_causal=True)
    with pytest.raises(RuntimeError, match="to have the same dtype"):
        F.scaled_dot_product_attention(q, k.double(), v)
    with pytest.raises(RuntimeError, match="Expected attn_mask dtype to be bool or float"):
        F.scaled_dot_product_attention(q, k, v, tp.zeros(3, 5, dtype=tp.int64))
    with pytest.raises(RuntimeError, match="Expected attn_mask dtype to be bool or float"):
        F.scaled_dot_product_attention(q, k, v, tp.zeros(3, 5, dtype=tp.float64))
    with pytest.raises(RuntimeError, match="at least 2 dimensional"):
        F.scaled_dot_product_attention(tp.randn(4), k, v)
    with pytest.raises(RuntimeError, match="between 0 and 1"):
        F.scaled_dot_product_attention(q, k, v, dropout_p=1.5)
    with pytest.raises(RuntimeError, match="floating-point"):
        F.scaled_dot_product_attention(q.long(), k.long(), v.long())
    with pytest.raises(RuntimeError, match="same last dimension"):
        F.scaled_dot_product_attention(q, tp.randn(2, 5, 3), v)
    with pytest.raises(RuntimeError, match="same sequence length"):
        F.scaled_dot_product_attention(q, k, tp.randn(2, 4, 6))
    with pytest.raises(RuntimeError, match="must match the size of tensor b"):
        F.scaled_dot_product_attention(q, k, v, tp.zeros(3, 4))
    with pytest.raises(RuntimeError, match=r"doesn't match the broadcast shape \[7, 2, 3, 5\]"):
        F.scaled_dot_product_attention(q, k, v, tp.zeros(7, 2, 1, 5))
    with pytest.raises(TypeError, match="argument 'key' must be Tensor"):
        F.scaled_dot_product_attention(q, [1.0], v)


def test_sdpa_dropout_statistics_and_seed():
    """Uniform weights 1/S (q = 0) times value = I: the output is the dropped-out weight matrix."""
    S, p = 40, 0.3
    q = tp.zeros(8, 25, 4, dtype=tp.float64)
    k = tp.randn(8, S, 4, dtype=tp.float64)
    v = tp.eye(S, dtype=tp.float64).expand(8, S, S)
    tp.manual_seed(7)
    a = npa(F.scaled_dot_product_attention(q, k, v, dropout_p=p))
    tp.manual_seed(7)
    b = npa(F.scaled_dot_product_attention(q, k, v, dropout_p=p))
    np.testing.assert_array_equal(a, b)
    zero = a == 0
    assert abs(zero.mean() - p) < 0.03
    np.testing.assert_allclose(a[~zero], 1 / (S * (1 - p)), rtol=1e-12)
    c = npa(F.scaled_dot_product_attention(q, k, v, dropout_p=p))
    assert (a != c).any()
    assert (npa(F.scaled_dot_product_attention(q, k, v, dropout_p=1.0)) == 0).all()
    np.testing.assert_allclose(npa(F.scaled_dot_product_attention(q, k, v)), 1 / S, rtol=1e-12)


def test_sdpa_float32():
    q, k, v = rand(2, 3, 4, 8, seed=1), rand(2, 3, 6, 8, seed=2), rand(2, 3, 6, 8, seed=3)
    got = F.scaled_dot_product_attention(*(tp.tensor(x, dtype=tp.float32) for x in (q, k, v)), is_causal=True)
    assert got.dtype == tp.float32
    np.testing.assert_allclose(npa(got), np_sdpa(q, k, v, causal=True), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("mask", [None, "bool", "float", "causal"])
def test_sdpa_gradcheck(mask):
    q = tp.tensor(rand(2, 3, 4, seed=1), requires_grad=True)
    k = tp.tensor(rand(2, 5, 4, seed=2), requires_grad=True)
    v = tp.tensor(rand(2, 5, 3, seed=3), requires_grad=True)
    m = None
    if mask == "bool":
        b = _bool_mask((3, 5), 8)
        b[2] = False                              # a fully masked row: zero gradient, still smooth
        m = tp.tensor(b)
    elif mask == "float":
        m = tp.tensor(rand(3, 5, seed=8))
    causal = mask == "causal"
    f = lambda q, k, v: F.scaled_dot_product_attention(q, k, v, m, is_causal=causal)  # noqa: E731
    assert gradcheck(f, (q, k, v), eps=1e-6, atol=1e-7, rtol=1e-5)
    if mask == "bool":
        assert gradgradcheck(f, (q, k, v), eps=1e-6, atol=1e-6, rtol=1e-4)


# -- MultiheadAttention: parameters ------------------------------------------------------------------
def test_mha_parameters_and_state_dict_keys():
    """Key lists and shapes as PyTorch 2.13's (checked there)."""
    m = nn.MultiheadAttention(4, 2)
    assert list(m.state_dict().keys()) == ["in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"]
    assert [tuple(p.shape) for p in m.parameters()] == [(12, 4), (12,), (4, 4), (4,)]
    assert m.q_proj_weight is None and m.bias_k is None and m.bias_v is None and m._qkv_same_embed_dim
    m = nn.MultiheadAttention(4, 2, add_bias_kv=True, kdim=3, vdim=5)
    assert [(n, tuple(p.shape)) for n, p in m.named_parameters()] == [
        ("q_proj_weight", (4, 4)), ("k_proj_weight", (4, 3)), ("v_proj_weight", (4, 5)), ("in_proj_bias", (12,)),
        ("bias_k", (1, 1, 4)), ("bias_v", (1, 1, 4)), ("out_proj.weight", (4, 4)), ("out_proj.bias", (4,))]
    m = nn.MultiheadAttention(4, 2, bias=False, add_bias_kv=True, kdim=3, vdim=5)
    assert list(m.state_dict().keys()) == ["q_proj_weight", "k_proj_weight", "v_proj_weight", "bias_k", "bias_v",
                                           "out_proj.weight"]
    assert m.in_proj_weight is None and m.in_proj_bias is None and m.out_proj.bias is None
    assert (m.embed_dim, m.kdim, m.vdim, m.num_heads, m.head_dim) == (4, 3, 5, 2, 2)
    assert not m._qkv_same_embed_dim
    assert isinstance(m.out_proj, nn.Linear)


def test_mha_repr_and_dtype():
    m = nn.MultiheadAttention(4, 2)
    assert repr(m) == ("MultiheadAttention(\n  (out_proj): NonDynamicallyQuantizableLinear(in_features=4, "
                       "out_features=4, bias=True)\n)")
    m = nn.MultiheadAttention(4, 2, kdim=3, dtype=tp.float64)
    assert all(p.dtype == tp.float64 for p in m.parameters())


def test_mha_init():
    tp.manual_seed(0)
    E = 64
    m = nn.MultiheadAttention(E, 4, add_bias_kv=True)
    w = npa(m.in_proj_weight)
    bound = math.sqrt(6 / (E + 3 * E))            # xavier_uniform_ on (3E, E)
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.95 * bound
    assert np.std(w) == pytest.approx(bound / math.sqrt(3), rel=0.05)
    assert (npa(m.in_proj_bias) == 0).all() and (npa(m.out_proj.bias) == 0).all()
    wo = npa(m.out_proj.weight)                   # Linear's own init: U(-1/sqrt(E), 1/sqrt(E))
    assert np.abs(wo).max() <= 1 / math.sqrt(E) and np.abs(wo).max() > 0.9 / math.sqrt(E)
    bk = np.concatenate([npa(m.bias_k).ravel(), npa(m.bias_v).ravel()])   # xavier_normal_: std 1/sqrt(E)
    assert np.std(bk) == pytest.approx(1 / math.sqrt(E), rel=0.3)
    m = nn.MultiheadAttention(E, 4, kdim=16, vdim=32)
    kb = math.sqrt(6 / (E + 16))
    assert np.abs(npa(m.k_proj_weight)).max() <= kb and np.abs(npa(m.k_proj_weight)).max() > 0.9 * kb


def test_mha_constructor_errors():
    with pytest.raises(AssertionError, match="embed_dim must be divisible by num_heads"):
        nn.MultiheadAttention(5, 2)
    with pytest.raises(ValueError, match="embed_dim and num_heads must be greater than 0"):
        nn.MultiheadAttention(0, 2)


# -- MultiheadAttention: forward vs NumPy -----------------------------------------------------------
def make_mha(E=8, H=2, seed=0, randomize_biases=True, **kw):
    tp.manual_seed(seed)
    m = nn.MultiheadAttention(E, H, **kw).double()
    if randomize_biases:                           # init zeroes them; make them count
        with tp.no_grad():
            for n, p in m.named_parameters():
                if n in ("in_proj_bias", "out_proj.bias"):
                    p.copy_(tp.randn(*p.shape, dtype=tp.float64))
    return m


def _masks(kind, L, S, N, H, seed):
    """(attn_mask, key_padding_mask) numpy arrays for a mask kind; no row fully masked."""
    rng = np.random.default_rng(seed)
    if kind == "none":
        return None, None
    if kind == "bool2d":
        m = rng.random((L, S)) < 0.3
        m[:, 0] = False
        return m, None
    if kind == "float2d":
        return rng.standard_normal((L, S)), None
    if kind == "bool3d":
        m = rng.random((N * H, L, S)) < 0.3
        m[..., 0] = False
        return m, None
    if kind == "float3d":
        return rng.standard_normal((N * H, L, S)), None
    if kind == "kpm-bool":
        kpm = np.zeros((N, S), bool)
        kpm[0, -2:] = True
        return None, kpm
    if kind == "kpm-float":
        return None, rng.standard_normal((N, S))
    if kind == "both-bool":
        m = rng.random((L, S)) < 0.3
        m[:, 0] = False
        kpm = np.zeros((N, S), bool)
        kpm[-1, -1] = True
        return m, kpm
    if kind == "both-float":
        return rng.standard_normal((L, S)), rng.standard_normal((N, S))
    raise ValueError(kind)


MASK_KINDS = ["none", "bool2d", "float2d", "bool3d", "float3d", "kpm-bool", "kpm-float", "both-bool", "both-float"]


def run_mha(m, q, k, v, am, kpm, batch_first=False, self_attn=False, **kw):
    """The module on numpy seq-first inputs; returns numpy (output seq-first, weights)."""
    def t(x):
        return None if x is None else tp.tensor(x)
    tq, tk, tv = (t(x.transpose(1, 0, 2).copy() if batch_first and x.ndim == 3 else x) for x in (q, k, v))
    if self_attn:
        tk = tv = tq
    out, w = m(tq, tk, tv, key_padding_mask=t(kpm), attn_mask=t(am), **kw)
    out = npa(out)
    if batch_first and out.ndim == 3:
        out = out.transpose(1, 0, 2)
    return out, None if w is None else npa(w)


@pytest.mark.parametrize("need_weights", [True, False], ids=["weights", "no-weights"])
@pytest.mark.parametrize("mask", MASK_KINDS)
def test_mha_masks_match_numpy(mask, need_weights):
    L, S, N, E, H = 4, 5, 3, 8, 2
    m = make_mha(E, H)
    q, k, v = rand(L, N, E, seed=1), rand(S, N, E, seed=2), rand(S, N, E, seed=3)
    am, kpm = _masks(mask, L, S, N, H, seed=4)
    ref, ref_w = np_mha(params_np(m), q, k, v, H, am, kpm)
    with warnings.catch_warnings():
        warnings.simplefilter("error")            # masks of the same kind: no deprecation warning
        out, w = run_mha(m, q, k, v, am, kpm, need_weights=need_weights)
    np.testing.assert_allclose(out, ref, rtol=1e-12, atol=1e-12)
    if need_weights:
        np.testing.assert_allclose(w, ref_w.mean(1), rtol=1e-12, atol=1e-14)
    else:
        assert w is None


@pytest.mark.parametrize("kw,self_attn", [
    (dict(), True),
    (dict(batch_first=True), True),
    (dict(batch_first=True), False),
    (dict(kdim=3, vdim=5), False),
    (dict(kdim=3, vdim=5, batch_first=True), False),
    (dict(add_bias_kv=True), False),
    (dict(add_zero_attn=True), True),
    (dict(add_bias_kv=True, add_zero_attn=True, kdim=6, vdim=6), False),
    (dict(bias=False), True),
    (dict(bias=False, add_bias_kv=True, add_zero_attn=True), False),
], ids=lambda v: v if isinstance(v, bool) else "-".join(f"{a}={b}" for a, b in v.items()) or "default")
@pytest.mark.parametrize("mask", ["none", "both-bool", "float3d"])
def test_mha_options_match_numpy(kw, self_attn, mask):
    L, S, N, E, H = 4, 5, 2, 8, 2
    if self_attn:
        S = L
    m = make_mha(E, H, **kw)
    q = rand(L, N, E, seed=1)
    k, v = rand(S, N, m.kdim, seed=2), rand(S, N, m.vdim, seed=3)
    if self_attn:
        k = v = q
    am, kpm = _masks(mask, L, S, N, H, seed=5)
    ref, ref_w = np_mha(params_np(m), q, k, v, H, am, kpm, add_zero_attn=kw.get("add_zero_attn", False))
    bf = kw.get("batch_first", False)
    out, w = run_mha(m, q, k, v, am, kpm, batch_first=bf, self_attn=self_attn, average_attn_weights=False)
    np.testing.assert_allclose(out, ref, rtol=1e-12, atol=1e-12)
    extra = kw.get("add_bias_kv", False) + kw.get("add_zero_attn", False)
    assert w.shape == (N, H, L, S + extra)
    np.testing.assert_allclose(w, ref_w, rtol=1e-12, atol=1e-14)
    out2, w2 = run_mha(m, q, k, v, am, kpm, batch_first=bf, self_attn=self_attn, need_weights=False)
    assert w2 is None
    np.testing.assert_allclose(out2, ref, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("mask", ["none", "bool2d", "float3d", "kpm"])
def test_mha_unbatched(mask, batch_first):
    L, S, E, H = 4, 5, 8, 2
    m = make_mha(E, H, kdim=3, add_bias_kv=True, batch_first=batch_first)
    q, k, v = rand(L, E, seed=1), rand(S, 3, seed=2), rand(S, E, seed=3)
    am = kpm = None
    if mask == "bool2d":
        am = _masks("bool2d", L, S, 1, H, seed=6)[0]
    elif mask == "float3d":
        am = rand(H, L, S, seed=6)
    elif mask == "kpm":
        kpm = np.array([False, True, False, False, True])
    ref, ref_w = np_mha(params_np(m), q[:, None], k[:, None], v[:, None], H, am,
                        None if kpm is None else kpm[None])
    out, w = m(tp.tensor(q), tp.tensor(k), tp.tensor(v), attn_mask=None if am is None else tp.tensor(am),
               key_padding_mask=None if kpm is None else tp.tensor(kpm))
    assert tuple(out.shape) == (L, E) and tuple(w.shape) == (L, S + 1)
    np.testing.assert_allclose(npa(out), ref[:, 0], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(npa(w), ref_w[0].mean(0), rtol=1e-12, atol=1e-14)
    _, wh = m(tp.tensor(q), tp.tensor(k), tp.tensor(v), average_attn_weights=False)
    assert tuple(wh.shape) == (H, L, S + 1)


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")   # NumPy kernel on -inf rows
def test_mha_fully_masked_row():
    """As PyTorch: NaN on the weights path (need_weights=True); on the need_weights=False path
    (scaled_dot_product_attention) the row's attention is 0, so the output is out_proj.bias."""
    L, N, E, H = 3, 2, 8, 2
    m = make_mha(E, H)
    x = rand(L, N, E, seed=1)
    kpm = np.zeros((N, L), bool)
    kpm[0] = True
    out, w = run_mha(m, x, x, x, None, kpm, self_attn=True)
    ref, ref_w = np_mha(params_np(m), x, x, x, H, None, kpm)
    assert np.isnan(out[:, 0]).all() and np.isnan(w[0]).all() and np.isnan(ref[:, 0]).all()
    np.testing.assert_allclose(out[:, 1], ref[:, 1], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(w[1], ref_w[1].mean(0), rtol=1e-12)
    out, _ = run_mha(m, x, x, x, None, kpm, self_attn=True, need_weights=False)
    ref, _ = np_mha(params_np(m), x, x, x, H, None, kpm, safe=True)
    np.testing.assert_allclose(out[:, 0], np.broadcast_to(npa(m.out_proj.bias), (L, E)), rtol=1e-12)
    np.testing.assert_allclose(out, ref, rtol=1e-12, atol=1e-12)


def test_mha_is_causal():
    L, N, E, H = 5, 2, 8, 2
    m = make_mha(E, H, batch_first=True)
    x = tp.tensor(rand(N, L, E, seed=1))
    causal = nn.Transformer.generate_square_subsequent_mask(L, dtype=tp.float64)
    ref, _ = np_mha(params_np(m), npa(x).transpose(1, 0, 2), *(npa(x).transpose(1, 0, 2),) * 2, H,
                    np.triu(np.ones((L, L), bool), 1))
    ref = ref.transpose(1, 0, 2)
    for nw in (True, False):
        out, _ = m(x, x, x, attn_mask=causal, is_causal=True, need_weights=nw)
        np.testing.assert_allclose(npa(out), ref, rtol=1e-12, atol=1e-12)
    # the hint takes the place of the mask on the need_weights=False path (as PyTorch)
    out, _ = m(x, x, x, attn_mask=tp.zeros(L, L, dtype=tp.float64), is_causal=True, need_weights=False)
    np.testing.assert_allclose(npa(out), ref, rtol=1e-12, atol=1e-12)
    with pytest.raises(RuntimeError, match="Need attn_mask if specifying the is_causal hint"):
        m(x, x, x, is_causal=True)


def test_mha_errors():
    m = nn.MultiheadAttention(4, 2)
    x = tp.randn(3, 2, 4)
    with pytest.raises(RuntimeError, match=r"The shape of the 2D attn_mask is .*\[3, 4\].*, but should be \(3, 3\)"):
        m(x, x, x, attn_mask=tp.zeros(3, 4))
    with pytest.raises(RuntimeError, match=r"The shape of the 3D attn_mask is .*, but should be \(4, 3, 3\)"):
        m(x, x, x, attn_mask=tp.zeros(3, 3, 3))
    with pytest.raises(AssertionError, match="only bool and floating types of attn_mask are supported"):
        m(x, x, x, attn_mask=tp.zeros(3, 3, dtype=tp.int64))
    with pytest.raises(AssertionError, match=r"Expected key_padded_mask.shape\[1\] to be 3, but got 4"):
        m(x, x, x, key_padding_mask=tp.zeros(2, 4, dtype=tp.bool))
    with pytest.raises(AssertionError, match=r"Expected key_padded_mask.shape\[0\] to be 2, but got 3"):
        m(x, x, x, key_padding_mask=tp.zeros(3, 3, dtype=tp.bool))
    with pytest.raises(AssertionError, match="expected `key_padding_mask` to be `None` or 2-D"):
        m(x, x, x, key_padding_mask=tp.zeros(3, dtype=tp.bool))
    with pytest.raises(AssertionError, match="does not match value shape"):
        m(x, x[:2], x)
    with pytest.raises(AssertionError, match="expected `key` and `value` to be 2-D"):
        m(x[0], x, x)
    with pytest.raises(AssertionError, match="was expecting embedding dimension of 4, but got 3"):
        y = x[..., :3]
        m(y, y, y)
    with pytest.raises(AssertionError, match="received 4-D query tensor"):
        m(tp.randn(1, 3, 2, 4), x, x)
    with pytest.raises(AssertionError, match=r"Expected `attn_mask` shape to be \(2, 3, 3\)"):
        m(x[:, 0], x[:, 0], x[:, 0], attn_mask=tp.zeros(4, 3, 3))
    with pytest.warns(UserWarning, match="Support for mismatched key_padding_mask and attn_mask is deprecated"):
        m(x, x, x, attn_mask=tp.zeros(3, 3, dtype=tp.bool), key_padding_mask=tp.zeros(2, 3))


def test_mha_eval_and_training_dropout():
    """Eval: no dropout, the NumPy values. Training: about a fraction p of the per-head weights is
    zeroed (in_proj_weight = 0 makes them uniform, 1/S), survivors scaled by 1/(1-p); seeded."""
    L, S, N, E, H, p = 25, 40, 4, 8, 2, 0.3
    m = make_mha(E, H, dropout=p)
    q, k, v = rand(L, N, E, seed=1), rand(S, N, E, seed=2), rand(S, N, E, seed=3)
    m.eval()
    ref, ref_w = np_mha(params_np(m), q, k, v, H)
    out, w = run_mha(m, q, k, v, None, None, average_attn_weights=False)
    np.testing.assert_allclose(out, ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(w, ref_w, rtol=1e-12, atol=1e-14)
    m.train()
    with tp.no_grad():
        m.in_proj_weight.zero_()
    runs = []
    for nw in (True, True, False, False):
        tp.manual_seed(3)
        runs.append(run_mha(m, q, k, v, None, None, average_attn_weights=False, need_weights=nw))
    np.testing.assert_array_equal(runs[0][0], runs[1][0])
    np.testing.assert_array_equal(runs[0][1], runs[1][1])
    np.testing.assert_array_equal(runs[2][0], runs[3][0])
    w = runs[0][1]
    zero = w == 0
    assert abs(zero.mean() - p) < 0.03
    np.testing.assert_allclose(w[~zero], 1 / (S * (1 - p)), rtol=1e-12)
    # the output is the dropped-out weights applied to the projected values
    pn = params_np(m)
    vp = v @ np.split(pn["in_proj_weight"], 3)[2].T + np.split(pn["in_proj_bias"], 3)[2]
    hd = E // H
    heads = np.concatenate([w[:, h] @ vp.transpose(1, 0, 2)[:, :, h * hd:(h + 1) * hd] for h in range(H)], -1)
    ref = heads.transpose(1, 0, 2) @ pn["out_proj.weight"].T + pn["out_proj.bias"]
    np.testing.assert_allclose(runs[0][0], ref, rtol=1e-12, atol=1e-12)
    tp.manual_seed(4)
    assert (run_mha(m, q, k, v, None, None)[0] != runs[0][0]).any()


def test_functional_static_kv():
    """multi_head_attention_forward with static_k/static_v: they replace the projected key/value."""
    L, S, N, E, H = 3, 4, 2, 8, 2
    m = make_mha(E, H)
    pn = params_np(m)
    q = rand(L, N, E, seed=1)
    sk, sv = rand(N * H, S, E // H, seed=2), rand(N * H, S, E // H, seed=3)
    out, w = F.multi_head_attention_forward(
        tp.tensor(q), tp.tensor(rand(S, N, E)), tp.tensor(rand(S, N, E)), E, H, m.in_proj_weight, m.in_proj_bias,
        None, None, False, 0.0, m.out_proj.weight, m.out_proj.bias, static_k=tp.tensor(sk), static_v=tp.tensor(sv),
        average_attn_weights=False)
    qp = (q @ np.split(pn["in_proj_weight"], 3)[0].T + np.split(pn["in_proj_bias"], 3)[0]) / math.sqrt(E // H)
    qh = qp.reshape(L, N * H, E // H).transpose(1, 0, 2)
    ref_w = np_softmax(qh @ sk.transpose(0, 2, 1), False)
    heads = (ref_w @ sv).transpose(1, 0, 2).reshape(L, N, E)
    ref = heads @ pn["out_proj.weight"].T + pn["out_proj.bias"]
    np.testing.assert_allclose(npa(out), ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(npa(w), ref_w.reshape(N, H, L, S), rtol=1e-12, atol=1e-14)


# -- gradients ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("kw,mask", [
    (dict(), "both-bool"),
    (dict(batch_first=True, kdim=3, vdim=2), "float3d"),
    (dict(add_bias_kv=True, add_zero_attn=True), "kpm-float"),
], ids=["packed", "separate", "bias_kv-zero_attn"])
def test_mha_gradcheck(kw, mask):
    L, S, N, E, H = 3, 4, 2, 4, 2
    m = make_mha(E, H, **kw)
    am, kpm = _masks(mask, L, S, N, H, seed=9)
    bf = kw.get("batch_first", False)

    def x(*shape, seed):
        return tp.tensor(rand(*shape, seed=seed), requires_grad=True)
    q = x(*((N, L, E) if bf else (L, N, E)), seed=1)
    k = x(*((N, S, m.kdim) if bf else (S, N, m.kdim)), seed=2)
    v = x(*((N, S, m.vdim) if bf else (S, N, m.vdim)), seed=3)
    tam = None if am is None else tp.tensor(am)
    tkpm = None if kpm is None else tp.tensor(kpm)
    check_module_grads(m, (q, k, v), lambda q, k, v: m(q, k, v, attn_mask=tam, key_padding_mask=tkpm))


def test_mha_self_attention_gradgradcheck():
    m = make_mha(4, 2)
    x = tp.tensor(rand(3, 1, 4, seed=1), requires_grad=True)
    check_module_grads(m, (x,), lambda x: m(x, x, x, need_weights=False)[0], second_order=True)
