"""embedding_backward of float32 gradients as a numba-compiled loop (the `fast` extra).

transformer.py's NumPy formulas sum the gradient rows of each index with a one-hot GEMM (few rows) or
argsort + reduceat (more); both cost more than the sum itself. makemore's MLP runs 16 of them per step
on a 28 x 64 table from 512 rows each: measured on a 2-vCPU AMD EPYC, one thread, 22-32 us per call
for the one-hot GEMM and 9 us for this loop (with a copy of the strided gradient), which adds each
gradient row into its index's row in the order of the rows (the result does not depend on the
table's size). With a 50,000-row table and 768 rows: 410 us (argsort + reduceat) and 150 us.

`kernels()` is None without numba or with TENSORPLUG_NUMBA=0; compiled on first use in each process.
"""
from __future__ import annotations

import numpy as np

from . import numba_loops

_state = {}
_F32 = np.dtype(np.float32)


def kernels():
    """{"embedding_backward": f(grad (n, D) float32, idx (n,) int64, num_weights) -> (num_weights, D)},
    or None without numba. An index outside [0, num_weights) raises IndexError."""
    return numba_loops.cached(_state, _build)


def _build(numba):
    jit = numba.njit(nogil=True)
    u = numba.uintp

    @jit
    def scatter_rows(g, idx, out):
        n, d = g.shape
        v = out.shape[0]
        gf, of = g.reshape(-1), out.reshape(-1)
        for k in range(n):
            r = idx[k]
            if r < 0 or r >= v:
                raise IndexError("embedding_backward: an index is outside the table")
            o, s = u(r * d), u(k * d)
            for j in range(d):
                of[o + u(j)] += gf[s + u(j)]

    def embedding_backward(grad, idx, num_weights):
        out = np.zeros((num_weights, grad.shape[1]), dtype=grad.dtype)
        # a column slice (cat's backward) is copied: cheaper than numba's loop over a strided array
        scatter_rows(np.ascontiguousarray(grad), np.ascontiguousarray(idx, dtype=np.int64), out)
        return out

    return {"embedding_backward": embedding_backward}
