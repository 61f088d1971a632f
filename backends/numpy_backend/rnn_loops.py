"""The LSTM cell's pointwise work per time step as numba-compiled loops (the `fast` extra), float32.

rnn.py's recurrence runs per step one GEMM and about a dozen in-place ufuncs on (batch, 4H) arrays
(forward: bias, gate activations, cell and hidden update; backward: five). At word_language_model's
sizes (batch 20, H 200) each ufunc call costs more than its arithmetic. Here each step's pointwise
work is one loop: the gates' sigmoid / tanh are numba_math's vectorizable float32 functions, with
the NumPy path's formula for sigmoid (0.5 tanh(x / 2) + 0.5). The backward loop computes its factors
(tanh(c), the gates' derivatives) from the saved gates and cells as it goes: precomputed for all rows
in NumPy they took ten passes over (rows, H) arrays, 2 ms of the 2x200 LSTM benchmark's 36 ms step.

`kernels()` is None without numba or with TENSORPLUG_NUMBA=0 (rnn.py then runs its ufuncs).
"""
from __future__ import annotations

import numpy as np

from . import numba_loops

_state = {}


def kernels():
    """{"lstm_cell": f(g, x, b, c, cells, h), "lstm_cell_backward": f(dh, d_out, dc, gates, cells, c_prev, dx)}
    for float32 arrays, or None without numba."""
    return numba_loops.cached(_state, _build)


def _build(numba):
    from . import numba_math
    tanh = numba_math.functions()["tanh"]
    jit = numba.njit(nogil=True, error_model="numpy")
    half = np.float32(0.5)

    @jit
    def lstm_cell(g, x, b, c, cells, h):
        # g: (B, 4H) = h_prev @ W_hh^T on entry; gates i, f, g, o activated in place (the backward reads
        # them); x: (B, 4H) input projection; b: (4H,) or empty; c: (B, H) cell, updated in place;
        # cells: (B, H) the new cell, saved; h: (B, H) o tanh(c)
        rows, H = c.shape
        has_b = b.size > 0
        for r in range(rows):
            for j in range(4 * H):
                v = g[r, j] + x[r, j]
                if has_b:
                    v = v + b[j]
                g[r, j] = v
            # one view per gate: with the offsets H + j, ... into one row, LLVM could not tell the
            # gates apart and left the loop scalar (10x slower)
            gi, gf, gg, go = g[r, :H], g[r, H:2 * H], g[r, 2 * H:3 * H], g[r, 3 * H:]
            cr, cellr, hr = c[r], cells[r], h[r]
            for j in range(H):
                i = tanh(gi[j] * half) * half + half
                f = tanh(gf[j] * half) * half + half
                u = tanh(gg[j])
                o = tanh(go[j] * half) * half + half
                gi[j], gf[j], gg[j], go[j] = i, f, u, o
                cn = f * cr[j] + i * u
                cr[j] = cn
                cellr[j] = cn
                hr[j] = o * tanh(cn)

    @jit
    def lstm_cell_backward(dh, d_out, dc, gates, cells, cp, dx):
        # one step, the factors from the saved activations in the same pass (precomputing them for
        # all rows took ten NumPy passes, half the backward's non-GEMM time):
        # d = dh + d_out; dc' = dc + d o (1 - tanh(c)^2); dx = dc' (g i(1-i), c_prev f(1-f), i (1-g^2)),
        # d tanh(c) o(1-o); dc = dc' f
        rows, H = dh.shape
        one = np.float32(1.0)
        for r in range(rows):
            dxi, dxf, dxg, dxo = dx[r, :H], dx[r, H:2 * H], dx[r, 2 * H:3 * H], dx[r, 3 * H:]
            gi, gf, gg, go = gates[r, :H], gates[r, H:2 * H], gates[r, 2 * H:3 * H], gates[r, 3 * H:]
            dhr, dor, dcr, cr, cpr = dh[r], d_out[r], dc[r], cells[r], cp[r]
            for j in range(H):
                i, f, g, o = gi[j], gf[j], gg[j], go[j]
                tc = tanh(cr[j])
                d = dhr[j] + dor[j]
                dcj = dcr[j] + d * (o * (one - tc * tc))
                dxi[j] = dcj * (g * (i * (one - i)))
                dxf[j] = dcj * (cpr[j] * (f * (one - f)))
                dxg[j] = dcj * (i * (one - g * g))
                dxo[j] = d * (tc * (o * (one - o)))
                dcr[j] = dcj * f

    return {"lstm_cell": lstm_cell, "lstm_cell_backward": lstm_cell_backward}
