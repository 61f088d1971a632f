"""Exact (erf) GELU of float32 arrays and its backward as numba-compiled loops (the `fast` extra).

transformer.py's NumPy formula takes about 35 passes over the array (NumPy has no erf); measured on
a 2-vCPU AMD EPYC with 196,608 float32 (nanoGPT-char's MLP activations) it was 16% of the whole
training step. Here the same formula (Numerical Recipes' erfc fit, relative error below 1.2e-7 in
the tails too) runs as one loop each way, with numba_math's vectorizable float32 exp (numba's own
calls a scalar expf): 167 us forward and 218 backward, where three passes with NumPy's np.exp
between two loops took 176 and 275 (PyTorch's GELU, with erf cancelling in the negative tail: about
90 and 240). `error_model="numpy"` keeps divisions branch-free so that LLVM vectorizes the loops; no
fast-math flags that assume finite values, so NaN and infinities propagate as in the NumPy formula.

The tanh approximation (GPT-2's GELU) is one fused loop each way, written with the sigmoid
0.5 (1 + tanh(u)) = 1 / (1 + exp(-2u)) and numba_math's vectorizable float32 exp: at minGPT-adder's
384 x 192 activations the NumPy formula's 8 passes (forward) and 14 (backward) take 61 and 137 us,
the loops 42 and 49 (with numba_math's tanh instead: 51 and 59).

`kernels()` is None when numba is not installed or TENSORPLUG_NUMBA=0. The loops are compiled in
each process on first use (about 0.4 s to import numba, 0.5 s to compile): numba's on-disk cache is
not used, since a cache entry written under one module name (this file imported as
backends.numpy_backend.gelu_loops from a checkout) fails to load under another.
"""
from __future__ import annotations

import math

import numpy as np

from . import numba_loops

_state = {}

_INV_SQRT2 = 1.0 / math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
# erfc(a) = t exp(-a^2 + P(t)), t = 1 / (1 + a/2): P's coefficients, highest power first
_ERFC_FIT = (0.17087277, -0.82215223, 1.48851587, -1.13520398, 0.27886807, -0.18628806, 0.09678418,
             0.37409196, 1.00002368, -1.26551223)


def kernels():
    """{"gelu": f(x), "gelu_backward": f(grad, x), "gelu_tanh": f(x), "gelu_tanh_backward": f(grad, x)}
    for float32 arrays, or None without numba."""
    return numba_loops.cached(_state, _build)


def _build(numba):
    from . import numba_math
    f32 = np.float32
    c = tuple(f32(v) for v in _ERFC_FIT)
    half, one, inv_sqrt2, inv_sqrt_2pi = f32(0.5), f32(1.0), f32(_INV_SQRT2), f32(_INV_SQRT_2PI)
    jit = numba.njit(nogil=True, error_model="numpy", fastmath={"contract"})
    exp = numba_math.functions()["exp"]
    c0, c1, c2, c3, c4, c5, c6, c7, c8, c9 = c

    @jit
    def erfc_parts(xi):
        # (t, P(t), a^2) for a = |x| / sqrt(2): erfc(a) = t exp(-a^2 + P(t))
        a = abs(xi) * inv_sqrt2
        t = one / (one + half * a)
        p = ((((((((c0 * t + c1) * t + c2) * t + c3) * t + c4) * t + c5) * t + c6) * t + c7) * t + c8) * t + c9
        return t, p, a * a

    @jit
    def erf_forward(x, out):
        for i in range(x.size):
            xi = x[i]
            t, p, a2 = erfc_parts(xi)
            q = half * t * exp(p - a2)                 # Phi(-|x|) = 0.5 erfc(a)
            out[i] = xi * (q if xi < 0 else one - q)

    @jit
    def erf_backward(g, x, out):
        # d/dx x Phi(x) = Phi(x) + x phi(x), phi(x) = exp(-x^2 / 2) / sqrt(2 pi) = exp(-a^2) / sqrt(2 pi)
        for i in range(x.size):
            xi = x[i]
            t, p, a2 = erfc_parts(xi)
            sq = exp(-a2)
            q = half * t * sq * exp(p)
            out[i] = g[i] * ((q if xi < 0 else one - q) + xi * sq * inv_sqrt_2pi)

    k0, k1 = f32(math.sqrt(2.0 / math.pi)), f32(0.044715 * math.sqrt(2.0 / math.pi))
    k3 = f32(3 * 0.044715 * math.sqrt(2.0 / math.pi))
    two = f32(2.0)

    # 0.5 (1 + tanh(u)) = s = sigmoid(2u), u = sqrt(2 / pi) (x + 0.044715 x^3), from e = exp(-2|u|) in
    # (0, 1] (no overflow): s = 1 / (1 + e) for u >= 0, e / (1 + e) below; one exp instead of tanh's
    # exp and division, and no cancellation in 1 + tanh(u) for x << 0
    @jit
    def tanh_forward(x, out):
        for i in range(x.size):
            xi = x[i]
            u = (k1 * xi * xi + k0) * xi
            e = exp(-two * abs(u))
            d = one / (one + e)
            out[i] = xi * (d if u >= 0 else e * d)

    @jit
    def tanh_backward(g, x, out):
        # d/dx x s = s + 2 x s (1 - s) du/dx, s (1 - s) = e / (1 + e)^2, du/dx = sqrt(2 / pi) (1 + 3 0.044715 x^2)
        for i in range(x.size):
            xi = x[i]
            x2 = xi * xi
            u = (k1 * x2 + k0) * xi
            e = exp(-two * abs(u))
            d = one / (one + e)
            sg = d if u >= 0 else e * d
            out[i] = g[i] * (sg + two * xi * e * d * d * (k3 * x2 + k0))

    return {"gelu": _forward(erf_forward), "gelu_backward": _backward(erf_backward),
            "gelu_tanh": _forward(tanh_forward), "gelu_tanh_backward": _backward(tanh_backward)}


def _forward(loop):
    """f(x): loop(x, out) over x's elements, flattened (a copy where x is not C-contiguous)."""
    def run(x):
        flat = np.ascontiguousarray(x).reshape(-1)
        out = np.empty_like(flat)
        loop(flat, out)
        return out.reshape(x.shape)
    return run


def _backward(loop):
    """f(grad, x): loop(grad, x, out) over the elements, both flattened."""
    def run(grad, x):
        flat = np.ascontiguousarray(x).reshape(-1)
        out = np.empty_like(flat)
        loop(np.ascontiguousarray(grad, dtype=np.float32).reshape(-1), flat, out)
        return out.reshape(x.shape)
    return run
