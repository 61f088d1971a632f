"""cross_entropy with class-index targets on float32 logits as numba-compiled loops (the `fast` extra).

loss.py's NumPy kernels make several passes over each block of rows (shift, exp, a GEMV for the
sums, a gather of the targets); at nanoGPT-char's 768 x 65 logits the calls cost more than the
arithmetic. Here each row is read while it is in L1: the forward is softmax_loops.py's row log-sum-exp
(exp(x - top) summed, top the largest logit of the row's block; a row far below top redone with its
own maximum, as loss.py's blocks are); the backward writes exp(x - lse) coef and subtracts the
target's share. Measured on a 2-vCPU AMD EPYC, one thread, forward + backward (bench/cross_entropy.py):
134-153 us at 768 x 65 against 158-198 for loss.py's kernels (PyTorch 116-121); 7.4 ms at 700 x 10000
against 9.5-12.3 (PyTorch 11.5). A row maximum per row instead of the block's (a scalar loop) cost
nanoGPT-char's 768 x 65 forward 20 us more.

Taken: label_smoothing 0, any class weights and ignore_index. A row whose log-sum-exp is not finite
(inf or NaN logits, a row of -inf) sends the whole call back to loss.py's kernels, whose rules for
those follow PyTorch. `kernels()` is None without numba or with TENSORPLUG_NUMBA=0.
"""
from __future__ import annotations

import numpy as np

from . import numba_loops, softmax_loops

_state = {}


def kernels():
    """{"lse": f(x (M, C) float32 C-contiguous) -> (M,) float32 log-sum-exp per row,
    "backward": f(x, lse, coef (M,), target (M,) int64, a (M,)) -> (M, C)}, or None without numba."""
    return numba_loops.cached(_state, _build)


def _build(numba):
    from . import numba_math
    exp = numba_math.functions()["exp"]
    jit = numba.njit(nogil=True, error_model="numpy", fastmath={"reassoc"})

    @jit
    def backward_rows(x, lse, coef, target, a, p):
        # p[i, j] = exp(x[i, j] - lse[i]) coef[i], minus a[i] at j = target[i]
        m, c = x.shape
        for i in range(m):
            r, q = x[i], p[i]
            lz, k = lse[i], coef[i]
            for j in range(c):
                q[j] = exp(r[j] - lz) * k
            t = target[i]
            if t < 0 or t >= c:         # no bounds checks in compiled code: a bad target would write astray
                raise IndexError("cross_entropy: a target is outside [0, C)")
            q[t] -= a[i]

    def backward(x, lse, coef, target, a):
        p = np.empty_like(x)
        backward_rows(x, lse, coef, target, a, p)
        return p

    # (softmax_loops switched off alone, as a test does: its loops built for this module anyway)
    shared = softmax_loops.kernels() or softmax_loops._build(numba)
    return {"lse": shared["lse"], "backward": backward}
