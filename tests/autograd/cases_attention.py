"""Gradient-table cases of the attention ops (tests/autograd/test_op_gradients.py appends CASES).

The ops record no node of their own (they compose matmul, masked_fill, softmax, linear, ...); the
cases check their first and second derivatives, and tests/cuda runs them on the CUDA stand-in.
Masks are made by `make`, so they move to the device with the other arguments."""
import numpy as np

import tensorplug as torch
import tensorplug.nn.functional as F
from opcases import Case, nc, r


def _bool(*shape, seed=0, dead_row=None):
    m = np.random.default_rng(seed).random(shape) > 0.4
    m[..., 0] = True
    if dead_row is not None:
        m[..., dead_row, :] = False                # a fully masked query row
    return torch.tensor(m)


def _mha(q, k, v, w_in, b_in, bias_k, bias_v, w_out, b_out, am, kpm):
    return F.multi_head_attention_forward(q, k, v, 4, 2, w_in, b_in, bias_k, bias_v, True, 0.0, w_out, b_out,
                                          key_padding_mask=kpm, attn_mask=am, average_attn_weights=False)


def _mha_args():
    kpm = torch.tensor(np.array([[0.0, 0.0, -1.0], [0.5, 0.0, 0.0]]))
    return (r(2, 2, 4, seed=1), r(3, 2, 4, seed=2), r(3, 2, 4, seed=3), r(12, 4, seed=4), r(12, seed=5),
            r(1, 1, 4, seed=6), r(1, 1, 4, seed=7), r(4, 4, seed=8), r(4, seed=9), r(2, 3, seed=10).detach(), kpm)


CASES = [
    Case("sdpa", lambda q, k, v: F.scaled_dot_product_attention(q, k, v),
         lambda: (r(2, 3, 4, seed=1), nc(2, 5, 4, seed=2), r(2, 5, 3, seed=3))),
    Case("sdpa_bool_mask_dead_row", lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, m),
         lambda: (r(2, 3, 4, seed=1), r(2, 5, 4, seed=2), r(2, 5, 3, seed=3), _bool(3, 5, seed=4, dead_row=1))),
    Case("sdpa_float_mask_scale", lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, m, scale=0.7),
         lambda: (r(2, 3, 4, seed=1), r(2, 5, 4, seed=2), r(2, 5, 3, seed=3), r(3, 5, seed=4).detach())),
    Case("sdpa_causal_gqa",
         lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True),
         lambda: (r(1, 4, 3, 2, seed=1), r(1, 2, 3, 2, seed=2), r(1, 2, 3, 2, seed=3))),
    Case("multi_head_attention_forward", _mha, _mha_args),
]
