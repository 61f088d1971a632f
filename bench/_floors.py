"""GEMM floors of whole training steps (from the former bench/nn_steps.py).

* GEMM floor: the NumPy (float32) time of the matrix products a step needs: for every
  convolution the im2col GEMM of the forward and the two GEMMs of the backward (input and weight
  gradients), for every linear layer (and LSTM gate projection) its three products. It leaves out
  im2col itself, pooling, normalisation, pointwise ops and Python overhead: a lower bound for an
  implementation that computes convolutions as NumPy matrix products of these shapes (thin
  shapes, like LeNet's, run far below the CPU's peak).
* FLOP floor: the same FLOPs at the rate of a large square NumPy GEMM (the CPU's practical peak).
"""
from __future__ import annotations

import numpy as np

import _harness as H


def gemm_shapes(model, run_forward):
    """(m, k, n) of every matrix product of a forward + backward, from the shapes seen by hooks."""
    import tensorplug as tp
    import tensorplug.nn as nn
    shapes = []

    def conv_hook(mod, args, out):
        x = args[0]
        n = x.shape[0]
        cout, cin_g, kh, kw = mod.weight.shape
        g = mod.groups
        ho, wo = out.shape[2], out.shape[3]
        m, k, c = n * ho * wo, cin_g * kh * kw, cout // g
        for _ in range(g):
            shapes.extend([(m, k, c), (m, c, k), (k, m, c)])   # forward, grad input, grad weight

    def linear_hook(mod, args, out):
        x = args[0]
        m = int(np.prod(x.shape[:-1]))
        k, c = mod.in_features, mod.out_features
        shapes.extend([(m, k, c), (m, c, k), (k, m, c)])

    handles = []
    for mod in model.modules():
        if isinstance(mod, nn.Conv2d):
            handles.append(mod.register_forward_hook(conv_hook))
        elif isinstance(mod, nn.Linear):
            handles.append(mod.register_forward_hook(linear_hook))
    with tp.no_grad():
        run_forward()
    for h in handles:
        h.remove()
    return shapes


def lstm_gemm_shapes(steps, batch, inp, hidden, layers):
    shapes = []
    for layer in range(layers):
        fin = inp if layer == 0 else hidden
        m = steps * batch
        shapes += [(m, fin, 4 * hidden), (m, 4 * hidden, fin), (fin, m, 4 * hidden)]   # input projection
        for _ in range(steps):                                                       # recurrence
            shapes += [(batch, hidden, 4 * hidden), (batch, 4 * hidden, hidden), (hidden, batch, 4 * hidden)]
    return shapes


def peak_gemm_rate(repeat, n=1024):
    """FLOP/s of a large square float32 NumPy GEMM: the best this CPU does through NumPy."""
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((n, n), dtype=np.float32), rng.standard_normal((n, n), dtype=np.float32)
    return 2 * n ** 3 / H.median_time(lambda: np.matmul(a, b), repeat)


def gemm_floor_fn(shapes):
    """(a function running the step's matrix products in NumPy, their FLOPs)."""
    rng = np.random.default_rng(0)
    cache = {}
    for s in set(shapes):
        m, k, n = s
        cache[s] = (rng.standard_normal((m, k), dtype=np.float32), rng.standard_normal((k, n), dtype=np.float32))

    def run():
        for s in shapes:
            a, b = cache[s]
            np.matmul(a, b)
    return run, sum(2 * m * k * n for m, k, n in shapes)
