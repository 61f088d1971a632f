"""LayerNorm of float32 rows and its backward as numba-compiled loops (the `fast` extra).

transformer.py's NumPy formulas make about 8 passes (forward) and 12 (backward) over the (M, n)
array, each a NumPy call; at nanoGPT-char's shapes (768 x 64) those calls cost more than the
arithmetic: measured on a 2-vCPU AMD EPYC, one thread, the forward took 69–90 us and the backward
123–157 us, five of each per training step; these loops take 23–31 and 34–39 us. Each row is read
while it is in L1: two passes for the forward's statistics and one to write, two for the backward.

Sums run in float64 (mean, variance, the backward's two row means, and the weight and bias
gradients over the rows), so results are at least as accurate as the float32 formulas; the
"reassoc" flag lets LLVM vectorize those sums (the order of additions is not NumPy's). No flag
that assumes finite values: NaN and infinities propagate as in the formulas.

`kernels()` is None without numba or with TENSORPLUG_NUMBA=0; compiled on first use in each process.
"""
from __future__ import annotations

import numpy as np

from . import numba_loops

_state = {}
_F32 = np.dtype(np.float32)


def kernels():
    """{"layer_norm": f(x, w, b, eps), "layer_norm_backward": f(g, x, mean, rstd, w)} for C-contiguous
    float32 (M, n) arrays (w, b: (n,) float32 or None), or None without numba."""
    return numba_loops.cached(_state, _build)


def _build(numba):
    jit = numba.njit(nogil=True, error_model="numpy", fastmath={"reassoc", "contract"})
    f32 = np.float32

    @jit
    def forward(x, eps, w, b, y, mean, rstd):
        # w, b: (n,) arrays, or empty for none
        m, n = x.shape
        has_w, has_b = w.size > 0, b.size > 0
        for i in range(m):
            s = 0.0
            for j in range(n):
                s += x[i, j]
            mu = s / n
            v = 0.0
            for j in range(n):
                d = x[i, j] - mu
                v += d * d
            mean[i] = mu
            rstd[i] = 1.0 / np.sqrt(v / n + eps)
            mu32, r32 = mean[i], rstd[i]          # normalized with the float32 statistics returned
            for j in range(n):
                t = (x[i, j] - mu32) * r32
                if has_w:
                    t = t * w[j]
                if has_b:
                    t = t + b[j]
                y[i, j] = t

    @jit
    def backward(g, x, mean, rstd, w, dx, dw, db):
        # dx = rstd (gx - mean(gx) - xhat mean(gx xhat)), gx = g w; dw = sum_rows g xhat, db = sum_rows g
        m, n = x.shape
        has_w = w.size > 0
        for i in range(m):
            mu, r = mean[i], rstd[i]
            sa = 0.0
            sb = 0.0
            for j in range(n):
                xh = (x[i, j] - mu) * r
                gj = g[i, j]
                gx = gj * w[j] if has_w else gj
                sa += gx
                sb += gx * xh
                dw[j] += gj * xh
                db[j] += gj
            a, c = f32(sa / n), f32(sb / n)
            for j in range(n):
                xh = (x[i, j] - mu) * r
                gx = g[i, j] * w[j] if has_w else g[i, j]
                dx[i, j] = (gx - a - xh * c) * r

    empty = np.empty(0, np.float32)

    def layer_norm(x, w, b, eps):
        x = np.ascontiguousarray(x)
        m = x.shape[0]
        mean, rstd = np.empty(m, np.float32), np.empty(m, np.float32)
        y = np.empty_like(x)
        forward(x, float(eps), empty if w is None else w, empty if b is None else b, y, mean, rstd)
        return y, mean, rstd

    def layer_norm_backward(g, x, mean, rstd, w):
        g, x = np.ascontiguousarray(g), np.ascontiguousarray(x)
        n = x.shape[1]
        dx = np.empty_like(x)
        dw, db = np.zeros(n), np.zeros(n)
        backward(g, x, mean, rstd, empty if w is None else w, dx, dw, db)
        return dx, dw.astype(np.float32), db.astype(np.float32)

    return {"layer_norm": layer_norm, "layer_norm_backward": layer_norm_backward}


def usable(*arrays):
    """True when every array given (None skipped) is float32: what the loops take."""
    return all(a is None or (a.dtype == _F32) for a in arrays)
