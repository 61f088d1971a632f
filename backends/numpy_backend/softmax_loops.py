"""softmax and log_softmax of float32 rows, their backwards, and the row log-sum-exp they share (with
cross_entropy's loops, loss_loops.py), as numba-compiled loops (the `fast` extra).

transformer.py's NumPy formulas make five passes over the (M, C) array forward (shift, exp, row sums,
log, subtract) and four backward, each through memory once the rows outgrow the cache. Here each
block of rows (1 MiB, in L2) is read twice: exp(x - top) over the whole block in one flat loop, top
the block's largest logit (NumPy's SIMD max; a row maximum is a scalar loop, NaN rules keep it from
vectorizing), then per row its sum, log, and the row written as (x - top) - log (which keeps results
near 0 exact where x is large); the backward writes exp(out) flat, then g - exp(out) sum(g) per row.
A loop per row cost twice as much for short rows (27 or 65 classes): the vectorized exp left a
scalar remainder in every row; rows of _LONG_ROW or more take lse and the backward in one pass per
row. exp is numba_math's vectorizable float32 exp; sums run in float64.
A row whose log-sum-exp falls below top + _SPREAD (its small terms may have underflowed), or is
NaN, is redone with its own maximum. Measured on a 2-vCPU AMD EPYC, one thread, loops against the
formulas in one run: 700 x 10000 (word_language_model's decoder) forward 5.0 / 8.9 ms, backward
5.8 / 9.1 ms (PyTorch 2.13: 5.5 forward, 10.0 both, another run); 768 x 65 65 / 129 and 41 / 70 us;
512 x 27 28 / 60 and 13 / 18 us. The row log-sum-exp alone (cross_entropy's forward): 22 / 42 us
at 512 x 27, 45 / 78 at 768 x 65, 4.4 / 7.8 ms at 700 x 10000. softmax (half the row masked to -inf,
as makemore's bag of words): 512 x 16 forward 16 / 48 us, backward 5 / 12; 768 x 64 48 / 111 and
11 / 52 us.

A row whose log-sum-exp is not finite (inf or NaN logits, a row of -inf) sends the whole forward
back to the NumPy formula, whose results for those follow PyTorch. `kernels()` is None without
numba or with TENSORPLUG_NUMBA=0.
"""
from __future__ import annotations

import numpy as np

from . import numba_loops

_state = {}
_BLOCK = 1 << 18        # elements per block of rows (1 MiB of float32: in L2 between the max and the row passes)
_LONG_ROW = 512         # from this many columns, lse and the backward take each row in one pass (the flat
                        # exp pass first only pays for short rows: 700 x 10000 backward 4.5 against 5.3 ms)
_SPREAD = -20.0         # as loss.py's: rows within this of their block's top lose nothing to underflow


def kernels():
    """{"lse": f(x) -> (M,) row log-sum-exp, "log_softmax" / "softmax": f(x) -> (M, C) or None (a row
    not finite), "log_softmax_backward" / "softmax_backward": f(g, out) -> (M, C)}, for C-contiguous
    float32 (M, C) arrays, or None without numba."""
    return numba_loops.cached(_state, _build)


def _blocks(x):
    """(row slice, the block's largest element) per block of _BLOCK elements."""
    m, c = x.shape
    rb = max(1, _BLOCK // max(c, 1))
    for i in range(0, m, rb):
        xb = x[i:i + rb]
        yield slice(i, i + rb), (xb.max() if xb.size else np.float32(0))


def _build(numba):
    from . import numba_math
    exp = numba_math.functions()["exp"]
    jit = numba.njit(nogil=True, error_model="numpy", fastmath={"reassoc"})
    spread = np.float32(_SPREAD)
    long_row = _LONG_ROW

    @jit
    def flat_exp(x, shift, e):
        # e = exp(x - shift) over the whole C-contiguous block in one loop: per row, a short row (27 or 65
        # classes) left a scalar remainder of exps, 2x the time
        xf, ef = x.reshape(-1), e.reshape(-1)
        for i in range(xf.shape[0]):
            ef[i] = exp(xf[i] - shift)

    @jit
    def row_sum(er):
        s = 0.0
        for j in range(er.shape[0]):
            s += er[j]
        return s

    @jit
    def exact_shift_log(r):
        # (the row's maximum, log sum exp(r - max)): a row far below its block's top, or with NaN
        mx = r[0]
        for j in range(1, r.shape[0]):
            mx = max(mx, r[j])
        s = 0.0
        for j in range(r.shape[0]):
            s += exp(r[j] - mx)
        return np.float64(mx), np.log(s)

    @jit
    def row_exp_sum(r, top):
        s = 0.0
        for j in range(r.shape[0]):
            s += exp(r[j] - top)
        return s

    @jit
    def lse_rows(x, top, out, e):
        long_rows = x.shape[1] >= long_row
        if not long_rows:
            flat_exp(x, top, e)
        t64 = np.float64(top)
        for i in range(x.shape[0]):
            ls = np.log(row_exp_sum(x[i], top) if long_rows else row_sum(e[i]))
            if ls >= spread:
                out[i] = t64 + ls
            else:
                mx, ls = exact_shift_log(x[i])
                out[i] = mx + ls

    @jit
    def log_softmax_rows(x, top, y):
        # y serves as exp's scratch first; returns how many rows have a log-sum-exp that is not finite.
        # y = (x - shift) - log sum: small results stay exact where x is large
        flat_exp(x, top, y)
        bad = 0
        t64 = np.float64(top)
        for i in range(x.shape[0]):
            r, yr = x[i], y[i]
            shift, ls = t64, np.log(row_sum(yr))
            if not ls >= spread:
                shift, ls = exact_shift_log(r)
            if not np.isfinite(shift + ls):
                bad += 1
            sh, l32 = np.float32(shift), np.float32(ls)
            for j in range(r.shape[0]):
                yr[j] = (r[j] - sh) - l32
        return bad

    @jit
    def log_softmax_backward_rows(g, o, d):
        # g - exp(out) sum(g) per row; short rows with exp(out) written flat first
        long_rows = g.shape[1] >= long_row
        if not long_rows:
            flat_exp(o, np.float32(0), d)
        for i in range(g.shape[0]):
            gr, dr, orow = g[i], d[i], o[i]
            s32 = np.float32(row_sum(gr))
            if long_rows:
                for j in range(gr.shape[0]):
                    dr[j] = gr[j] - exp(orow[j]) * s32
            else:
                for j in range(gr.shape[0]):
                    dr[j] = gr[j] - dr[j] * s32

    @jit
    def softmax_rows(x, top, y):
        # y = exp(x - shift) / sum per row, exp written flat first; returns the rows not finite
        flat_exp(x, top, y)
        bad = 0
        for i in range(x.shape[0]):
            r, yr = x[i], y[i]
            s = row_sum(yr)
            if not np.log(s) >= spread:         # far below top, or NaN: the row's own maximum
                mx = r[0]
                for j in range(1, r.shape[0]):
                    mx = max(mx, r[j])
                for j in range(r.shape[0]):
                    yr[j] = exp(r[j] - mx)
                s = row_sum(yr)
            if not (np.isfinite(s) and s > 0):
                bad += 1
            inv = np.float32(1.0 / s)
            for j in range(r.shape[0]):
                yr[j] *= inv
        return bad

    @jit
    def softmax_backward_rows(g, o, d):
        # out (g - sum(g out)) per row
        for i in range(g.shape[0]):
            gr, orow, dr = g[i], o[i], d[i]
            s = 0.0
            for j in range(gr.shape[0]):
                s += gr[j] * orow[j]
            s32 = np.float32(s)
            for j in range(gr.shape[0]):
                dr[j] = orow[j] * (gr[j] - s32)

    def by_blocks(rows_fn, x):
        """rows_fn(x block, its top, y block) over the blocks into a new y; None if a block had a row not finite."""
        y = np.empty_like(x)
        for rows, top in _blocks(x):
            if rows_fn(x[rows], top, y[rows]):
                return None
        return y

    def pairwise(rows_fn, g, out):
        d = np.empty_like(g)
        rows_fn(g, out, d)
        return d

    def lse(x):
        out = np.empty(x.shape[0], np.float32)
        e = None
        for rows, top in _blocks(x):
            xb = x[rows]
            if e is None:
                e = np.empty_like(xb)
            lse_rows(xb, top, out[rows], e[:xb.shape[0]])
        return out

    return {"lse": lse,
            "log_softmax": lambda x: by_blocks(log_softmax_rows, x),
            "log_softmax_backward": lambda g, out: pairwise(log_softmax_backward_rows, g, out),
            "softmax": lambda x: by_blocks(softmax_rows, x),
            "softmax_backward": lambda g, out: pairwise(softmax_backward_rows, g, out)}
