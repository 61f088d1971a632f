"""Transformer layers: PyTorch's parameter names (state_dict keys checked against PyTorch 2.13),
values of encoder/decoder layers, stacks and the full model against float64 NumPy references
(post-norm and pre-norm, relu/gelu/callable, masks, batch_first, unbatched), causal-mask detection,
dropout in training, initialisation, errors, and gradients by finite differences."""
from __future__ import annotations

import math

import numpy as np
import pytest

import tensorplug as tp
from tensorplug import nn
from test_attention import check_module_grads, np_mha, npa, params_np, rand

INF = float("inf")
_erf = np.vectorize(math.erf)
NP_ACT = {"relu": lambda x: np.maximum(x, 0.0), "gelu": lambda x: 0.5 * x * (1 + _erf(x / math.sqrt(2))),
          "tanh": np.tanh}


# -- NumPy references (seq-first arrays; p: parameter dict with PyTorch names) -------------------------
def np_layer_norm(x, p, name, eps=1e-5):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * p[name + ".weight"] + p.get(name + ".bias", 0.0)


def sub(p, prefix):
    return {k[len(prefix):]: v for k, v in p.items() if k.startswith(prefix)}


def np_ff(p, x, act):
    h = NP_ACT[act](x @ p["linear1.weight"].T + p.get("linear1.bias", 0.0))
    return h @ p["linear2.weight"].T + p.get("linear2.bias", 0.0)


def np_attn(p, name, x, mem, H, mask, kpm):
    return np_mha(sub(p, name + "."), x, mem, mem, H, mask, kpm, safe=True)[0]


def np_encoder_layer(p, x, H, act="relu", norm_first=False, mask=None, kpm=None):
    if norm_first:
        y = np_layer_norm(x, p, "norm1")
        x = x + np_attn(p, "self_attn", y, y, H, mask, kpm)
        return x + np_ff(p, np_layer_norm(x, p, "norm2"), act)
    x = np_layer_norm(x + np_attn(p, "self_attn", x, x, H, mask, kpm), p, "norm1")
    return np_layer_norm(x + np_ff(p, x, act), p, "norm2")


def np_decoder_layer(p, x, mem, H, act="relu", norm_first=False, tgt_mask=None, memory_mask=None, tgt_kpm=None,
                     mem_kpm=None):
    if norm_first:
        y = np_layer_norm(x, p, "norm1")
        x = x + np_attn(p, "self_attn", y, y, H, tgt_mask, tgt_kpm)
        x = x + np_attn(p, "multihead_attn", np_layer_norm(x, p, "norm2"), mem, H, memory_mask, mem_kpm)
        return x + np_ff(p, np_layer_norm(x, p, "norm3"), act)
    x = np_layer_norm(x + np_attn(p, "self_attn", x, x, H, tgt_mask, tgt_kpm), p, "norm1")
    x = np_layer_norm(x + np_attn(p, "multihead_attn", x, mem, H, memory_mask, mem_kpm), p, "norm2")
    return np_layer_norm(x + np_ff(p, x, act), p, "norm3")


def randomize(m, seed=0):
    """Random values in every parameter (norms and biases included), float64."""
    m = m.double()
    g = np.random.default_rng(seed)
    with tp.no_grad():
        for p in m.parameters():
            p.copy_(tp.tensor(g.uniform(-0.6, 0.6, tuple(p.shape))))
    return m


def seq_first(x, batch_first):
    return x.transpose(1, 0, 2) if batch_first and x.ndim == 3 else x


def t(x, batch_first=False):
    return None if x is None else tp.tensor(seq_first(x, batch_first).copy())


def causal_bool(n):
    return np.triu(np.ones((n, n), bool), 1)


# -- parameters and state_dict keys ------------------------------------------------------------------
ENC_KEYS = ["self_attn.in_proj_weight", "self_attn.in_proj_bias", "self_attn.out_proj.weight",
            "self_attn.out_proj.bias", "linear1.weight", "linear1.bias", "linear2.weight", "linear2.bias",
            "norm1.weight", "norm1.bias", "norm2.weight", "norm2.bias"]
DEC_KEYS = ["self_attn.in_proj_weight", "self_attn.in_proj_bias", "self_attn.out_proj.weight",
            "self_attn.out_proj.bias", "multihead_attn.in_proj_weight", "multihead_attn.in_proj_bias",
            "multihead_attn.out_proj.weight", "multihead_attn.out_proj.bias", "linear1.weight", "linear1.bias",
            "linear2.weight", "linear2.bias", "norm1.weight", "norm1.bias", "norm2.weight", "norm2.bias",
            "norm3.weight", "norm3.bias"]


def test_state_dict_keys_match_pytorch():
    """The key lists PyTorch 2.13 gives for the same constructors (hard-coded from there)."""
    assert list(nn.TransformerEncoderLayer(4, 2, 8).state_dict().keys()) == ENC_KEYS
    assert list(nn.TransformerDecoderLayer(4, 2, 8).state_dict().keys()) == DEC_KEYS
    assert list(nn.TransformerDecoderLayer(4, 2, 8, bias=False).state_dict().keys()) == [
        "self_attn.in_proj_weight", "self_attn.out_proj.weight", "multihead_attn.in_proj_weight",
        "multihead_attn.out_proj.weight", "linear1.weight", "linear2.weight", "norm1.weight", "norm2.weight",
        "norm3.weight"]
    keys = list(nn.Transformer(4, 2, 2, 1, 8).state_dict().keys())
    assert keys == ([f"encoder.layers.{i}.{k}" for i in range(2) for k in ENC_KEYS]
                    + ["encoder.norm.weight", "encoder.norm.bias"]
                    + [f"decoder.layers.0.{k}" for k in DEC_KEYS] + ["decoder.norm.weight", "decoder.norm.bias"])
    assert keys[0] == "encoder.layers.0.self_attn.in_proj_weight" and keys[-1] == "decoder.norm.bias"


def test_shapes_and_submodules():
    layer = nn.TransformerDecoderLayer(8, 2, 16, dropout=0.2, layer_norm_eps=1e-3)
    shapes = {k: tuple(v.shape) for k, v in layer.state_dict().items()}
    assert shapes["self_attn.in_proj_weight"] == (24, 8) and shapes["linear1.weight"] == (16, 8)
    assert shapes["linear2.weight"] == (8, 16) and shapes["norm3.bias"] == (8,)
    assert [type(layer.dropout1), layer.dropout3.p, layer.norm2.eps, layer.self_attn.dropout] == \
        [nn.Dropout, 0.2, 1e-3, 0.2]
    assert layer.multihead_attn.num_heads == 2 and not layer.norm_first
    enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16), 3, enable_nested_tensor=False)
    assert len(enc.layers) == 3 and enc.norm is None and enc.num_layers == 3
    # deep copies: independent parameters
    assert enc.layers[0].linear1.weight is not enc.layers[1].linear1.weight
    with tp.no_grad():
        enc.layers[0].linear1.weight.fill_(1.0)
    assert not (npa(enc.layers[1].linear1.weight) == 1.0).all()


def test_generate_square_subsequent_mask():
    m = nn.Transformer.generate_square_subsequent_mask(4)
    assert m.dtype == tp.get_default_dtype() and tuple(m.shape) == (4, 4)
    expect = np.array([[0, -INF, -INF, -INF], [0, 0, -INF, -INF], [0, 0, 0, -INF], [0, 0, 0, 0]])
    np.testing.assert_array_equal(npa(m), expect)
    m = nn.Transformer.generate_square_subsequent_mask(3, dtype=tp.float64)
    assert m.dtype == tp.float64
    np.testing.assert_array_equal(npa(m), expect[:3, :3])
    np.testing.assert_array_equal(npa(nn.Transformer.generate_square_subsequent_mask(1)), [[0.0]])


def test_transformer_init():
    tp.manual_seed(0)
    m = nn.Transformer(16, 2, 1, 1, 48)
    for name, p in m.named_parameters():
        a = npa(p)
        if p.ndim > 1:                            # xavier_uniform_ everywhere
            fan_out, fan_in = p.shape
            bound = math.sqrt(6 / (fan_in + fan_out))
            assert np.abs(a).max() <= bound and np.abs(a).max() > 0.8 * bound, name
        elif "norm" in name:
            assert (a == (1.0 if name.endswith("weight") else 0.0)).all(), name
    assert (npa(m.encoder.layers[0].self_attn.in_proj_bias) == 0).all()


def test_repr():
    r = repr(nn.TransformerEncoderLayer(4, 2, 8))
    assert r.startswith("TransformerEncoderLayer(\n  (self_attn): MultiheadAttention(\n    (out_proj): "
                        "NonDynamicallyQuantizableLinear(in_features=4, out_features=4, bias=True)\n  )\n"
                        "  (linear1): Linear(in_features=4, out_features=8, bias=True)\n"
                        "  (dropout): Dropout(p=0.1, inplace=False)\n")


# -- values vs NumPy ----------------------------------------------------------------------------------
LAYER_COMBOS = [
    dict(),
    dict(norm_first=True),
    dict(activation="gelu"),
    dict(activation="gelu", norm_first=True, batch_first=True),
    dict(batch_first=True),
    dict(bias=False, norm_first=True),
]


def _ids(kw):
    return "-".join(f"{k}={v}" for k, v in kw.items()) or "default"


@pytest.mark.parametrize("mask", ["none", "bool", "float", "kpm", "causal+kpm"])
@pytest.mark.parametrize("kw", LAYER_COMBOS, ids=_ids)
def test_encoder_layer_matches_numpy(kw, mask):
    L, N, E, H = 5, 3, 8, 2
    m = randomize(nn.TransformerEncoderLayer(E, H, 12, dropout=0.3, **kw)).eval()
    x = rand(L, N, E, seed=1)
    am = kpm = None
    if mask == "bool":
        am = np.random.default_rng(2).random((L, L)) < 0.3
        am[:, 0] = False
    elif mask == "float":
        am = rand(L, L, seed=2)
    elif mask in ("kpm", "causal+kpm"):
        kpm = np.zeros((N, L), bool)
        kpm[1, -2:] = True
        am = causal_bool(L) if mask == "causal+kpm" else None
    ref = np_encoder_layer(params_np(m), x, H, kw.get("activation", "relu"), kw.get("norm_first", False), am, kpm)
    bf = kw.get("batch_first", False)
    out = m(t(x, bf), src_mask=t(am), src_key_padding_mask=t(kpm))
    np.testing.assert_allclose(seq_first(npa(out), bf), ref, rtol=1e-11, atol=1e-12)


@pytest.mark.parametrize("mask", ["none", "causal", "all"])
@pytest.mark.parametrize("kw", LAYER_COMBOS, ids=_ids)
def test_decoder_layer_matches_numpy(kw, mask):
    L, S, N, E, H = 4, 5, 2, 8, 2
    m = randomize(nn.TransformerDecoderLayer(E, H, 12, dropout=0.3, **kw), seed=1).eval()
    x, mem = rand(L, N, E, seed=1), rand(S, N, E, seed=2)
    masks = {}
    if mask in ("causal", "all"):
        masks["tgt_mask"] = causal_bool(L)
    if mask == "all":
        masks["memory_mask"] = rand(L, S, seed=3)
        masks["tgt_kpm"] = np.array([[False] * L, [False] * (L - 1) + [True]])
        masks["mem_kpm"] = rand(N, S, seed=4)
    ref = np_decoder_layer(params_np(m), x, mem, H, kw.get("activation", "relu"), kw.get("norm_first", False),
                           **masks)
    bf = kw.get("batch_first", False)
    out = m(t(x, bf), t(mem, bf), tgt_mask=t(masks.get("tgt_mask")), memory_mask=t(masks.get("memory_mask")),
            tgt_key_padding_mask=t(masks.get("tgt_kpm")), memory_key_padding_mask=t(masks.get("mem_kpm")))
    np.testing.assert_allclose(seq_first(npa(out), bf), ref, rtol=1e-11, atol=1e-12)


def test_callable_activation():
    L, N, E, H = 3, 2, 4, 2
    enc = randomize(nn.TransformerEncoderLayer(E, H, 6, activation=tp.tanh)).eval()
    dec = randomize(nn.TransformerDecoderLayer(E, H, 6, activation=nn.Tanh(), norm_first=True), seed=2).eval()
    assert enc.activation_relu_or_gelu == 0
    assert nn.TransformerEncoderLayer(E, H, activation=nn.GELU()).activation_relu_or_gelu == 2
    assert nn.TransformerEncoderLayer(E, H).activation_relu_or_gelu == 1
    x, mem = rand(L, N, E, seed=1), rand(L + 1, N, E, seed=2)
    np.testing.assert_allclose(npa(enc(tp.tensor(x))), np_encoder_layer(params_np(enc), x, H, "tanh"), rtol=1e-11,
                               atol=1e-12)
    np.testing.assert_allclose(npa(dec(tp.tensor(x), tp.tensor(mem))),
                               np_decoder_layer(params_np(dec), x, mem, H, "tanh", True), rtol=1e-11, atol=1e-12)


@pytest.mark.parametrize("batch_first", [False, True])
def test_unbatched_layers(batch_first):
    L, S, E, H = 4, 3, 8, 2
    enc = randomize(nn.TransformerEncoderLayer(E, H, 12, batch_first=batch_first)).eval()
    dec = randomize(nn.TransformerDecoderLayer(E, H, 12, batch_first=batch_first), seed=3).eval()
    x, mem = rand(L, E, seed=1), rand(S, E, seed=2)
    kpm = np.array([False, False, True, False])
    out = enc(tp.tensor(x), src_mask=t(causal_bool(L)), src_key_padding_mask=t(kpm))
    assert tuple(out.shape) == (L, E)
    ref = np_encoder_layer(params_np(enc), x[:, None], H, mask=causal_bool(L), kpm=kpm[None])[:, 0]
    np.testing.assert_allclose(npa(out), ref, rtol=1e-11, atol=1e-12)
    out = dec(tp.tensor(x), tp.tensor(mem), tgt_mask=t(causal_bool(L)))
    ref = np_decoder_layer(params_np(dec), x[:, None], mem[:, None], H, tgt_mask=causal_bool(L))[:, 0]
    np.testing.assert_allclose(npa(out), ref, rtol=1e-11, atol=1e-12)


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("norm_first", [False, True])
def test_transformer_matches_numpy(norm_first, batch_first):
    S, L, N, E, H = 5, 4, 2, 8, 2
    m = randomize(nn.Transformer(E, H, 2, 2, 12, dropout=0.2, activation="gelu", norm_first=norm_first,
                                 batch_first=batch_first)).eval()
    p = params_np(m)
    src, tgt = rand(S, N, E, seed=1), rand(L, N, E, seed=2)
    src_kpm = np.array([[False] * S, [False] * (S - 2) + [True] * 2])
    tgt_mask = nn.Transformer.generate_square_subsequent_mask(L, dtype=tp.float64)
    x = src
    for i in range(2):
        x = np_encoder_layer(sub(p, f"encoder.layers.{i}."), x, H, "gelu", norm_first, kpm=src_kpm)
    mem = np_layer_norm(x, p, "encoder.norm")
    y = tgt
    for i in range(2):
        y = np_decoder_layer(sub(p, f"decoder.layers.{i}."), y, mem, H, "gelu", norm_first, tgt_mask=npa(tgt_mask),
                             mem_kpm=src_kpm)
    ref = np_layer_norm(y, p, "decoder.norm")
    out = m(t(src, batch_first), t(tgt, batch_first), tgt_mask=tgt_mask, src_key_padding_mask=t(src_kpm),
            memory_key_padding_mask=t(src_kpm))
    assert tuple(out.shape) == ((N, L, E) if batch_first else (L, N, E))
    np.testing.assert_allclose(seq_first(npa(out), batch_first), ref, rtol=1e-10, atol=1e-11)
    # the stacks on their own
    enc_out = m.encoder(t(src, batch_first), src_key_padding_mask=t(src_kpm))
    np.testing.assert_allclose(seq_first(npa(enc_out), batch_first), mem, rtol=1e-10, atol=1e-11)
    dec_out = m.decoder(t(tgt, batch_first), enc_out, tgt_mask=tgt_mask, memory_key_padding_mask=t(src_kpm))
    np.testing.assert_allclose(seq_first(npa(dec_out), batch_first), ref, rtol=1e-10, atol=1e-11)


def test_custom_encoder_decoder_and_flags():
    E, H = 8, 2
    enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(E, H, 12), 1, enable_nested_tensor=True, mask_check=False)
    dec = nn.TransformerDecoder(nn.TransformerDecoderLayer(E, H, 12), 1)
    m = nn.Transformer(E, H, custom_encoder=enc, custom_decoder=dec).double().eval()
    assert m.encoder is enc and m.decoder is dec and enc.norm is None
    src, tgt = rand(3, 2, E, seed=1), rand(4, 2, E, seed=2)
    p = params_np(m)
    mem = np_encoder_layer(sub(p, "encoder.layers.0."), src, H)
    ref = np_decoder_layer(sub(p, "decoder.layers.0."), tgt, mem, H)
    np.testing.assert_allclose(npa(m(tp.tensor(src), tp.tensor(tgt))), ref, rtol=1e-11, atol=1e-12)


def test_causal_mask_detection_and_is_causal():
    """A mask equal to the causal mask is used as the is_causal hint (same values either way);
    is_causal=True needs the mask (as PyTorch)."""
    L, N, E, H = 5, 2, 8, 2
    enc = nn.TransformerEncoder(randomize(nn.TransformerEncoderLayer(E, H, 12)), 2).eval()
    x = rand(L, N, E, seed=1)
    p = params_np(enc)
    ref = x
    for i in range(2):
        ref = np_encoder_layer(sub(p, f"layers.{i}."), ref, H, mask=causal_bool(L))
    causal = nn.Transformer.generate_square_subsequent_mask(L, dtype=tp.float64)
    for mask, flag in ((causal, None), (causal, True), (tp.tensor(causal_bool(L)), None)):
        np.testing.assert_allclose(npa(enc(tp.tensor(x), mask=mask, is_causal=flag)), ref, rtol=1e-11, atol=1e-12)
    with pytest.raises(RuntimeError, match="Need attn_mask if specifying the is_causal hint"):
        enc.layers[0](tp.tensor(x), is_causal=True)
    dec = nn.TransformerDecoder(randomize(nn.TransformerDecoderLayer(E, H, 12)), 1).eval()
    mem = rand(3, N, E, seed=2)
    ref = np_decoder_layer(sub(params_np(dec), "layers.0."), x, mem, H, tgt_mask=causal_bool(L))
    for mask in (causal, tp.tensor(causal_bool(L))):
        np.testing.assert_allclose(npa(dec(tp.tensor(x), tp.tensor(mem), tgt_mask=mask)), ref, rtol=1e-11,
                                   atol=1e-12)


def test_dropout_training_mode():
    """Training: dropout active (output differs from eval, reproducible under manual_seed); eval and
    dropout=0 in training give the deterministic values."""
    E, H = 8, 2
    m = randomize(nn.Transformer(E, H, 1, 1, 12, dropout=0.5))
    src, tgt = tp.tensor(rand(5, 3, E, seed=1)), tp.tensor(rand(4, 3, E, seed=2))
    m.eval()
    ev = npa(m(src, tgt))
    np.testing.assert_array_equal(npa(m(src, tgt)), ev)
    m.train()
    tp.manual_seed(5)
    a = npa(m(src, tgt))
    tp.manual_seed(5)
    b = npa(m(src, tgt))
    np.testing.assert_array_equal(a, b)
    assert np.abs(a - ev).max() > 1e-3
    z = randomize(nn.Transformer(E, H, 1, 1, 12, dropout=0.0))
    z.train()
    out_train = npa(z(src, tgt))
    z.eval()
    np.testing.assert_array_equal(out_train, npa(z(src, tgt)))


def test_errors():
    m = nn.Transformer(8, 2, 1, 1, 12)
    with pytest.raises(RuntimeError, match="the batch number of src and tgt must be equal"):
        m(tp.randn(3, 2, 8), tp.randn(3, 1, 8))
    with pytest.raises(RuntimeError, match="the feature number of src and tgt must be equal to d_model"):
        m(tp.randn(3, 2, 8), tp.randn(3, 2, 5))
    with pytest.raises(RuntimeError, match="the batch number of src and tgt must be equal"):
        nn.Transformer(8, 2, 1, 1, 12, batch_first=True)(tp.randn(2, 3, 8), tp.randn(1, 3, 8))
    with pytest.raises(RuntimeError, match="activation should be relu/gelu, not tanh"):
        nn.TransformerEncoderLayer(8, 2, activation="tanh")
    with pytest.raises(AssertionError, match="embed_dim must be divisible by num_heads"):
        nn.TransformerDecoderLayer(6, 4)
    with pytest.raises(AssertionError, match="only bool and floating types of src_key_padding_mask"):
        nn.TransformerEncoderLayer(8, 2)(tp.randn(3, 2, 8), src_key_padding_mask=tp.zeros(2, 3, dtype=tp.int64))


# -- gradients ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_layer_gradcheck(norm_first):
    L, N, E, H = 3, 2, 4, 2
    m = randomize(nn.TransformerEncoderLayer(E, H, 6, dropout=0.0, activation="gelu", norm_first=norm_first))
    x = tp.tensor(rand(L, N, E, seed=1), requires_grad=True)
    kpm = tp.tensor(np.array([[False, False, True], [False, False, False]]))
    check_module_grads(m, (x,), lambda x: m(x, src_mask=tp.tensor(causal_bool(L)), src_key_padding_mask=kpm))


def test_decoder_layer_gradcheck():
    L, S, N, E, H = 3, 2, 1, 4, 2
    m = randomize(nn.TransformerDecoderLayer(E, H, 5, dropout=0.0))
    x = tp.tensor(rand(L, N, E, seed=1), requires_grad=True)
    mem = tp.tensor(rand(S, N, E, seed=2), requires_grad=True)
    check_module_grads(m, (x, mem), lambda x, mem: m(x, mem, tgt_mask=tp.tensor(causal_bool(L))))
