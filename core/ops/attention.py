"""Attention ops of nn.functional: scaled_dot_product_attention, multi_head_attention_forward.

scaled_dot_product_attention runs the backend's `sdpa` kernel (native, or its decomposition in
tensorplug.dispatch.optional_attention) and records one node: its backward is the `sdpa_backward`
kernel when the backward pass is not recorded (create_graph=False), else a Tensor-op formula, so
gradients of any order exist. A float mask that requires grad takes the composition of Tensor ops
(matmul, masked_fill, softmax, dropout), as does multi_head_attention_forward's weights path.

Masks follow PyTorch, whose two functions disagree on what a bool True means:
* scaled_dot_product_attention: bool True = *take part* in attention; a float mask is added to the
  scores. A query row with every key masked gets weights 0 (output 0), as PyTorch's math path does.
* multi_head_attention_forward: bool True = *masked out* (attn_mask and key_padding_mask); bool masks
  become float masks with -inf. With need_weights=True it computes the weights itself, and a fully
  masked row gives NaN (as PyTorch); with need_weights=False it calls scaled_dot_product_attention.

    >>> q = k = v = tensorplug.randn(2, 4, 5, 8)             # (N, heads, L, E)
    >>> F.scaled_dot_product_attention(q, k, v, is_causal=True).shape   # (2, 4, 5, 8)
"""
from __future__ import annotations

import math
import sys
import warnings

from .. import dtypes as _dt
from ..amp.state import state as _amp
from . import reduction as _red
from ._core import Tensor, _gstate, _make, broadcast_shapes, cast_data, check_same_device, grad_for, record
from .creation import ones, zeros
from .dropout import dropout
from .linear import linear
from .shape import cat

FUNCTIONAL = ["scaled_dot_product_attention", "multi_head_attention_forward"]

_NEG_INF = float("-inf")
# the fused forward hands the softmax to the backward when it holds at most this many elements
# (no recomputation of the scores; measured faster at GPT sizes), else only the row log-sum-exp
PROBS_MAX = 1 << 21


# -- scaled dot-product attention ----------------------------------------------------------------------
def _check_mask(mask, shape):
    full = broadcast_shapes(tuple(mask.shape), shape)
    if full != shape:
        raise RuntimeError(f"output with shape {list(shape)} doesn't match the broadcast shape {list(full)}")


def _softmax_weights(query, key, mask, is_causal, scale, safe):
    """softmax(query key^T * scale + mask) in Tensor ops.

    mask: None, bool (True = take part) or float (added). safe: a row whose scores are all -inf gets
    weights 0 and zero gradient (scaled_dot_product_attention) instead of NaN (MHA's weights path)."""
    L, S = query.shape[-2], key.shape[-2]
    scores = (query * scale).matmul(key.transpose(-2, -1))
    if is_causal:
        scores = scores.masked_fill(ones(L, S, dtype=_dt.bool_, device=query.device).triu(1), _NEG_INF)
    if mask is not None:
        _check_mask(mask, tuple(scores.shape))
        scores = scores.masked_fill(mask.logical_not(), _NEG_INF) if mask.dtype == _dt.bool_ else scores + mask
    if safe and mask is not None:
        # fully masked rows: softmax of zeros (finite, so its backward is too), then zeroed
        dead = (scores == _NEG_INF).all(-1, keepdim=True)
        return _red.softmax(scores.masked_fill(dead, 0.0), -1).masked_fill(dead, 0.0)
    return _red.softmax(scores, -1)


def _attend(query, key, value, mask, dropout_p, is_causal, scale, safe):
    """softmax(query key^T * scale + mask) (dropped out) @ value -> (output, weights), in Tensor ops."""
    weights = _softmax_weights(query, key, mask, is_causal, scale, safe)
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p, True)
    return weights.matmul(value), weights


def _repeat_heads(query, t):
    """For grouped-query attention: t's heads (dim -3) repeated to the number of query heads."""
    hq, h = query.shape[-3], t.shape[-3]
    if hq == h:
        return t
    if h == 0 or hq % h:
        raise RuntimeError("Number of heads in key and value must divide the number of heads in query")
    return t.repeat_interleave(hq // h, -3)


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    """softmax(query @ key^T * scale + mask) @ value over the last two dims; query (..., L, E),
    key (..., S, E), value (..., S, Ev) -> (..., L, Ev); leading dims broadcast.

    attn_mask: bool (True = take part) or float (added), broadcastable to (..., L, S). is_causal:
    query i attends to keys j <= i (top-left aligned). scale: default 1/sqrt(E). dropout_p: dropout on
    the weights (always applied when > 0, as PyTorch). enable_gqa: key/value may have fewer heads
    (dim -3) than query, a divisor of its number; each is repeated to match."""
    if _amp.on:
        return _amp.run("scaled_dot_product_attention", scaled_dot_product_attention, (query, key, value),
                        {"attn_mask": attn_mask, "dropout_p": dropout_p, "is_causal": is_causal,
                         "scale": scale, "enable_gqa": enable_gqa})
    names = ("query", "key", "value")
    for name, t in zip(names, (query, key, value)):
        if not isinstance(t, Tensor):
            raise TypeError(f"scaled_dot_product_attention(): argument '{name}' must be Tensor, "
                            f"not {type(t).__name__}")
    if min(query.ndim, key.ndim, value.ndim) < 2:
        raise RuntimeError("Expected query, key, and value to all be at least 2 dimensional, but got "
                           f"query.dim: {query.ndim} key.dim: {key.ndim} and value.dim: {value.ndim} instead.")
    if not (query.dtype == key.dtype == value.dtype):
        raise RuntimeError("Expected query, key, and value to have the same dtype, but got query.dtype: "
                           f"{query.dtype} key.dtype: {key.dtype} and value.dtype: {value.dtype} instead.")
    if not query.dtype.is_floating_point:
        raise RuntimeError(f"scaled_dot_product_attention: expected floating-point query, key and value, "
                           f"got {query.dtype}")
    if key.shape[-1] != query.shape[-1]:
        raise RuntimeError(f"scaled_dot_product_attention: query and key must have the same last dimension, "
                           f"got query {list(query.shape)} and key {list(key.shape)}")
    if value.shape[-2] != key.shape[-2]:
        raise RuntimeError(f"scaled_dot_product_attention: key and value must have the same sequence length "
                           f"(dim -2), got key {list(key.shape)} and value {list(value.shape)}")
    if not 0.0 <= dropout_p <= 1.0:
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {dropout_p}")
    if attn_mask is not None:
        if is_causal:
            raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set when "
                               "is_causal=True")
        if attn_mask.dtype != _dt.bool_ and attn_mask.dtype != query.dtype:
            raise RuntimeError("Expected attn_mask dtype to be bool or float or to match query dtype, but got "
                               f"attn_mask.dtype: {attn_mask.dtype} and query.dtype: {query.dtype} instead.")
    if enable_gqa and query.ndim >= 3 and key.ndim >= 3 and value.ndim >= 3:
        key, value = _repeat_heads(query, key), _repeat_heads(query, value)
    if scale is None:
        scale = 1.0 / math.sqrt(query.shape[-1]) if query.shape[-1] else 1.0
    L, S = query.shape[-2], key.shape[-2]
    if L and S and not (attn_mask is not None and attn_mask._rg and _gstate.enabled) and not _exporting():
        lead = broadcast_shapes(broadcast_shapes(tuple(query.shape[:-2]), tuple(key.shape[:-2])),
                                tuple(value.shape[:-2]))
        if math.prod(lead):
            return _fused(query, key, value, attn_mask, dropout_p, is_causal, scale, lead)
    return _attend(query, key, value, attn_mask, dropout_p, is_causal, scale, safe=True)[0]


def _exporting():
    """Whether an ONNX export is tracing: it records the Tensor-op composition (ONNX before opset 23
    has no attention node), so the fused kernel is not taken."""
    tracer = sys.modules.get("tensorplug.onnx._tracer")
    return tracer is not None and tracer._active is not None


def _fused(query, key, value, mask, p, causal, scale, lead):
    """The `sdpa` kernel, with one node whose backward is `sdpa_backward` or the Tensor-op formula."""
    check_same_device(query, key, value, *(() if mask is None else (mask,)))
    K, dt, dev = query._k, query._dtype, query._dev
    L, S = query.shape[-2], key.shape[-2]
    if mask is not None:
        _check_mask(mask, lead + (L, S))

    def data(t, tail):
        shape = lead + tail
        return t._data if tuple(t.shape) == shape else K["broadcast_to"](t._data, shape)
    qd, kd, vd = data(query, (L, query.shape[-1])), data(key, (S, key.shape[-1])), data(value, (S, value.shape[-1]))
    md = None if mask is None else mask._data
    keep = None
    if p > 0.0:                    # the dropout mask, drawn as F.dropout draws it
        from .random import rand
        keep = rand(*lead, L, S, dtype=dt, device=query.device) >= p
    kd_keep = None if keep is None else keep._data
    probs = math.prod(lead) * L * S <= PROBS_MAX
    ins = (query, key, value)
    need = _gstate.enabled and (query._rg or key._rg or value._rg)
    od, lse, w = K["sdpa"](qd, kd, vd, md, kd_keep, float(p), bool(causal), float(scale), probs and need)
    out = _make(od, dt, K, dev)
    if not need:
        return out

    def vjp(g):
        if not _gstate.enabled:          # a backward that is not recorded: the fused kernel
            grads = K["sdpa_backward"](cast_data(g, dt), qd, kd, vd, od, lse, w, md, kd_keep, float(p),
                                       bool(causal), float(scale))
            return tuple(grad_for(_make(x, dt, K, dev), t) if t._rg else None for x, t in zip(grads, ins))
        return _formula_grads(g, query, key, value, mask, keep, p, causal, scale, lead)
    record("ScaledDotProductFlashAttentionForCpuBackward0", out, ins, vjp, saved=(query, key, value, out))
    return out


def _formula_grads(g, query, key, value, mask, keep, p, causal, scale, lead):
    """sdpa_backward's gradients written in Tensor ops (differentiable again, for create_graph)."""
    L, S = query.shape[-2], key.shape[-2]
    q = query.expand(*lead, L, query.shape[-1])
    k = key.expand(*lead, S, key.shape[-1])
    v = value.expand(*lead, S, value.shape[-1])
    w = _softmax_weights(q, k, mask, causal, scale, safe=True)
    drop = None if keep is None else keep.to(g.dtype) * (1.0 / (1.0 - p) if p < 1.0 else 0.0)
    dp = g.matmul(v.transpose(-2, -1))
    if drop is not None:
        dp = dp * drop
    ds = w * (dp - (dp * w).sum(-1, keepdim=True))
    grads = ((ds.matmul(k) * scale) if query._rg else None,
             (ds.transpose(-2, -1).matmul(q) * scale) if key._rg else None,
             ((w if drop is None else w * drop).transpose(-2, -1).matmul(g)) if value._rg else None)
    return tuple(None if x is None else grad_for(x, t) for x, t in zip(grads, (query, key, value)))


# -- multi-head attention ------------------------------------------------------------------------------
def _canonical_mask(mask, mask_name, other_type, other_name, target_type, check_other=True):
    """A bool mask as a float mask of target_type (-inf where True); float masks pass unchanged."""
    if mask is None:
        return None
    is_float = mask.dtype.is_floating_point
    if mask.dtype != _dt.bool_ and not is_float:
        raise AssertionError(f"only bool and floating types of {mask_name} are supported")
    if check_other and other_type is not None and mask.dtype != other_type:
        warnings.warn(f"Support for mismatched {mask_name} and {other_name} is deprecated. Use same type for "
                      "both instead.", stacklevel=3)
    if is_float:
        return mask
    return zeros(tuple(mask.shape), dtype=target_type, device=mask.device).masked_fill(mask, _NEG_INF)


def _none_or_dtype(t):
    return None if t is None else t.dtype


def _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads):
    """Whether the input is batched (3-D) or not (2-D), with PyTorch's checks."""
    nd = query.ndim
    if nd not in (2, 3):
        raise AssertionError(f"query should be unbatched 2D or batched 3D tensor but received {nd}-D query tensor")
    kind = "batched (3-D)" if nd == 3 else "unbatched (2-D)"
    if key.ndim != nd or value.ndim != nd:
        raise AssertionError(f"For {kind} `query`, expected `key` and `value` to be {nd}-D but found "
                             f"{key.ndim}-D and {value.ndim}-D tensors respectively")
    if key_padding_mask is not None and key_padding_mask.ndim != nd - 1:
        raise AssertionError(f"For {kind} `query`, expected `key_padding_mask` to be `None` or {nd - 1}-D but "
                             f"found {key_padding_mask.ndim}-D tensor instead")
    if attn_mask is not None:
        if attn_mask.ndim not in (2, 3):
            raise AssertionError(f"For {kind} `query`, expected `attn_mask` to be `None`, 2-D or 3-D but found "
                                 f"{attn_mask.ndim}-D tensor instead")
        expected = (num_heads, query.shape[0], key.shape[0])
        if nd == 2 and attn_mask.ndim == 3 and tuple(attn_mask.shape) != expected:
            raise AssertionError(f"Expected `attn_mask` shape to be {expected} but got {attn_mask.shape}")
    return nd == 3


def _in_projection(query, key, value, w, b, w_q, w_k, w_v):
    """q, k, v projections: from the packed (3E, E) weight w, or from separate w_q/w_k/w_v."""
    E = query.shape[-1]
    if w is not None:
        if key is value and query is key:          # self-attention: one product
            return linear(query, w, b).chunk(3, -1)
        if key is value:                           # encoder-decoder attention: k and v in one product
            w_q, w_kv = w.split([E, 2 * E])
            b_q, b_kv = (None, None) if b is None else b.split([E, 2 * E])
            return (linear(query, w_q, b_q),) + linear(key, w_kv, b_kv).chunk(2, -1)
        w_q, w_k, w_v = w.chunk(3)
    else:
        Ek, Ev = key.shape[-1], value.shape[-1]
        for name, t, shape in (("query", w_q, (E, E)), ("key", w_k, (E, Ek)), ("value", w_v, (E, Ev))):
            if tuple(t.shape) != shape:
                raise AssertionError(f"expecting {name} weights shape of {shape}, but got {t.shape}")
    b_q, b_k, b_v = (None, None, None) if b is None else b.chunk(3)
    return linear(query, w_q, b_q), linear(key, w_k, b_k), linear(value, w_v, b_v)


def _pad_last(mask):
    """One more key column (for bias_k / the zero attention), not masked."""
    return None if mask is None else cat([mask, zeros(tuple(mask.shape[:-1]) + (1,), dtype=mask.dtype,
                                                      device=mask.device)], -1)


def _heads(t, bsz, num_heads, head_dim, static=None, name=""):
    """(S, N, E) -> (N, heads, S, head_dim); or a given static (N * heads, S, head_dim) tensor."""
    if static is None:
        return t.reshape(t.shape[0], bsz, num_heads, head_dim).permute(1, 2, 0, 3)
    if static.shape[0] != bsz * num_heads:
        raise AssertionError(f"expecting static_{name}.size(0) of {bsz * num_heads}, but got {static.shape[0]}")
    if static.shape[2] != head_dim:
        raise AssertionError(f"expecting static_{name}.size(2) of {head_dim}, but got {static.shape[2]}")
    return static.reshape(bsz, num_heads, static.shape[1], head_dim)


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias,
                                 bias_k, bias_v, add_zero_attn, dropout_p, out_proj_weight, out_proj_bias,
                                 training=True, key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None, k_proj_weight=None,
                                 v_proj_weight=None, static_k=None, static_v=None, average_attn_weights=True,
                                 is_causal=False):
    """Multi-head attention (MultiheadAttention's forward, with its parameters passed in).

    query (L, N, E) or (L, E); key (S, N, Ek), value (S, N, Ev) (or 2-D). Masks: attn_mask (L, S) or
    (N * heads, L, S), key_padding_mask (N, S) or (S,); bool True = masked out, float = added.
    Returns (output (L, N, E), weights (N, L, S) averaged over heads, or (N, heads, L, S), or None)."""
    is_batched = _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads)
    if not is_batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    src_len = key.shape[0]

    key_padding_mask = _canonical_mask(key_padding_mask, "key_padding_mask", _none_or_dtype(attn_mask),
                                       "attn_mask", query.dtype)
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the Transformer module "
                           "method `generate_square_subsequent_mask` to create this mask.")
    if is_causal and key_padding_mask is None and not need_weights:
        attn_mask = None        # the hint stands for the mask: scaled_dot_product_attention's is_causal
    else:
        attn_mask = _canonical_mask(attn_mask, "attn_mask", None, "", query.dtype, check_other=False)
        if key_padding_mask is not None:
            is_causal = False   # the merged mask is no longer causal

    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but got {embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if use_separate_proj_weight:
        if tuple(key.shape[:2]) != tuple(value.shape[:2]):
            raise AssertionError(f"key's sequence and batch dims {key.shape[:2]} do not match value's "
                                 f"{value.shape[:2]}")
        for name, w in (("q", q_proj_weight), ("k", k_proj_weight), ("v", v_proj_weight)):
            if w is None:
                raise AssertionError(f"use_separate_proj_weight is True but {name}_proj_weight is None")
        q, k, v = _in_projection(query, key, value, None, in_proj_bias, q_proj_weight, k_proj_weight, v_proj_weight)
    else:
        if tuple(key.shape) != tuple(value.shape):
            raise AssertionError(f"key shape {key.shape} does not match value shape {value.shape}")
        if in_proj_weight is None:
            raise AssertionError("use_separate_proj_weight is False but in_proj_weight is None")
        q, k, v = _in_projection(query, key, value, in_proj_weight, in_proj_bias, None, None, None)

    if attn_mask is not None:
        if attn_mask.ndim == 2:
            if tuple(attn_mask.shape) != (tgt_len, src_len):
                raise RuntimeError(f"The shape of the 2D attn_mask is {attn_mask.shape}, but should be "
                                   f"{(tgt_len, src_len)}.")
            attn_mask = attn_mask.unsqueeze(0)
        elif attn_mask.ndim == 3:
            if tuple(attn_mask.shape) != (bsz * num_heads, tgt_len, src_len):
                raise RuntimeError(f"The shape of the 3D attn_mask is {attn_mask.shape}, but should be "
                                   f"{(bsz * num_heads, tgt_len, src_len)}.")
        else:
            raise RuntimeError(f"attn_mask's dimension {attn_mask.ndim} is not supported")

    if bias_k is not None and bias_v is not None:
        if static_k is not None:
            raise AssertionError("bias cannot be added to static key.")
        if static_v is not None:
            raise AssertionError("bias cannot be added to static value.")
        k = cat([k, bias_k.expand(1, bsz, embed_dim)])
        v = cat([v, bias_v.expand(1, bsz, embed_dim)])
        attn_mask, key_padding_mask = _pad_last(attn_mask), _pad_last(key_padding_mask)
    elif bias_k is not None:
        raise AssertionError("bias_k is set but bias_v is None")
    elif bias_v is not None:
        raise AssertionError("bias_v is set but bias_k is None")

    # (N, heads, len, head_dim) from here on
    q = _heads(q, bsz, num_heads, head_dim)
    k = _heads(k, bsz, num_heads, head_dim, static_k, "k")
    v = _heads(v, bsz, num_heads, head_dim, static_v, "v")
    if add_zero_attn:
        z = zeros((bsz, num_heads, 1, head_dim), dtype=k.dtype, device=k.device)
        k, v = cat([k, z], 2), cat([v, z], 2)
        attn_mask, key_padding_mask = _pad_last(attn_mask), _pad_last(key_padding_mask)
    src_len = k.shape[2]

    if key_padding_mask is not None:
        if key_padding_mask.shape[0] != bsz:
            raise AssertionError(f"Expected key_padded_mask.shape[0] to be {bsz}, but got "
                                 f"{key_padding_mask.shape[0]}")
        if key_padding_mask.shape[1] != src_len:
            raise AssertionError(f"Expected key_padded_mask.shape[1] to be {src_len}, but got "
                                 f"{key_padding_mask.shape[1]}")
        key_padding_mask = key_padding_mask.reshape(bsz, 1, 1, src_len)
    if attn_mask is not None:     # (1 or N * heads, L, S) -> (1 or N, 1 or heads, L, S)
        attn_mask = attn_mask.unsqueeze(0) if attn_mask.shape[0] == 1 else \
            attn_mask.reshape(bsz, num_heads, tgt_len, src_len)
        if key_padding_mask is not None:
            attn_mask = attn_mask + key_padding_mask
    elif key_padding_mask is not None:
        attn_mask = key_padding_mask
    if not training:
        dropout_p = 0.0

    if need_weights:       # is_causal only matters without a mask, which was refused above
        out, weights = _attend(q, k, v, attn_mask, dropout_p, False, 1.0 / math.sqrt(head_dim), safe=False)
    else:
        out = scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal)
        weights = None
    out = linear(out.permute(2, 0, 1, 3).reshape(tgt_len * bsz, embed_dim), out_proj_weight, out_proj_bias)
    out = out.reshape(tgt_len, bsz, out.shape[1])
    if weights is not None and average_attn_weights:
        weights = weights.mean(1)
    if not is_batched:
        out = out.squeeze(1)
        weights = None if weights is None else weights.squeeze(0)
    return out, weights
