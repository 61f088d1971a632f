"""Exact (erf) GELU of float32 arrays and its backward as numba-compiled loops (the `fast` extra).

transformer.py's NumPy formula takes about 35 passes over the array (NumPy has no erf); measured on
a 2-vCPU AMD EPYC with 196,608 float32 (nanoGPT-char's MLP activations) it was 16% of the whole
training step. Here the same formula (Numerical Recipes' erfc fit, relative error below 1.2e-7 in
the tails too) runs as three passes: a compiled loop writes the exponent, NumPy's SIMD `np.exp`
takes it (numba without Intel's SVML calls a scalar expf, 10x slower), a second loop finishes.
`error_model="numpy"` keeps divisions branch-free so that LLVM vectorizes both loops; no
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

    @jit
    def exponent(x, out, sq):
        # out = -a^2 + P(t) (log of erfc(a) / t), a = |x| / sqrt(2); sq (if not empty) = -a^2
        for i in range(x.size):
            a = abs(x[i]) * inv_sqrt2
            t = one / (one + half * a)
            p = c[0]
            for k in range(1, 10):
                p = p * t + c[k]
            out[i] = p - a * a
            if sq.size:
                sq[i] = -a * a

    @jit
    def phi(xi, e):
        # Phi(x) from e = exp(exponent): 0.5 erfc(|x| / sqrt(2)) below 0, one minus it above
        t = one / (one + half * abs(xi) * inv_sqrt2)
        p = half * t * e
        return p if xi < 0 else one - p

    @jit
    def finish_forward(x, e):
        for i in range(x.size):
            e[i] = x[i] * phi(x[i], e[i])

    @jit
    def finish_backward(g, x, e, pdf):
        # d/dx x Phi(x) = Phi(x) + x phi(x), phi(x) = exp(-x^2 / 2) / sqrt(2 pi)
        for i in range(x.size):
            e[i] = g[i] * (phi(x[i], e[i]) + x[i] * pdf[i] * inv_sqrt_2pi)

    empty = np.empty(0, np.float32)

    def gelu(x):
        flat = np.ascontiguousarray(x).reshape(-1)
        out = np.empty_like(flat)
        exponent(flat, out, empty)
        np.exp(out, out=out)
        finish_forward(flat, out)
        return out.reshape(x.shape)

    def gelu_backward(grad, x):
        flat = np.ascontiguousarray(x).reshape(-1)
        g = np.ascontiguousarray(grad, dtype=np.float32).reshape(-1)
        out = np.empty_like(flat)
        pdf = np.empty_like(flat)
        exponent(flat, out, pdf)
        np.exp(out, out=out)
        np.exp(pdf, out=pdf)
        finish_backward(g, flat, out, pdf)
        return out.reshape(x.shape)

    exp = numba_math.functions()["exp"]
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

    def gelu_tanh(x):
        flat = np.ascontiguousarray(x).reshape(-1)
        out = np.empty_like(flat)
        tanh_forward(flat, out)
        return out.reshape(x.shape)

    def gelu_tanh_backward(grad, x):
        flat = np.ascontiguousarray(x).reshape(-1)
        g = np.ascontiguousarray(grad, dtype=np.float32).reshape(-1)
        out = np.empty_like(flat)
        tanh_backward(g, flat, out)
        return out.reshape(x.shape)

    return {"gelu": gelu, "gelu_backward": gelu_backward, "gelu_tanh": gelu_tanh,
            "gelu_tanh_backward": gelu_tanh_backward}
