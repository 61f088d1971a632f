"""NumPy native kernels of the loss family (specs in tensorplug.dispatch.optional_loss): cross_entropy
with class-index targets, forward and backward, each one pass over the (M, C) logits in blocks of rows
whose temporaries stay in cache.

The smoothing term needs no log-probabilities: sum_c w_c (lse - x_c) = (lse - max) sum(w) - (x - max) @ w
per row. Row maxima reuse the transformer kernels' folded maxima for short rows; row sums are GEMVs.
"""
from __future__ import annotations

import numpy as np

from . import loss_loops
from .transformer import _rowmax, _wide


def _flat(safe, c):
    """Flat indices of (row, safe[row]) in a C-contiguous (M, c) array (faster than take_along_axis)."""
    return np.arange(0, safe.shape[0] * c, c) + safe


def _rows(x, target, weight, ignore_index):
    """(safe target (M,), valid bool (M,) or None when every row counts, w_t (M,) or None for all 1)."""
    ign = target == ignore_index
    if not ign.any():
        return target, None, None if weight is None else weight[target]
    safe = np.where(ign, 0, target)
    valid = ~ign
    wt = valid.astype(x.dtype) if weight is None else weight[safe] * valid
    return safe, valid, wt


_BLOCK = 1 << 18    # elements per block of rows: temporaries stay in cache (measured at 700 x 10000: the
                    # forward several times faster than with whole-array temporaries)
_SPREAD = -20.0     # rows whose log-sum-exp is within this of the block's largest logit use that shift:
                    # the terms lost to underflow are below e^-67 of the row's sum, in float32 too


def _blocks(m, c):
    rb = max(1, _BLOCK // c)
    return [(i, min(m, i + rb)) for i in range(0, m, rb)]


def _shifted(xb, e, shift, smooth, w, ones, sw):
    """(log sum exp(xb - shift), the smoothing term) of rows xb, e a scratch array of xb's shape."""
    np.subtract(xb, shift, out=e)
    sm = (e @ w) if smooth else None            # shifted: no cancellation for large logits
    np.exp(e, out=e)
    with np.errstate(divide="ignore"):
        lz = np.log(e @ ones)
    if smooth:
        sm = lz * sw - sm
    return lz, sm


def _lse(x, smooth, weight):
    """(row log-sum-exp (M,), and when smooth the rows' sum_c w_c (lse - x_c), else None).

    Each block is shifted by its largest element (one fast reduction and a scalar subtraction, where a
    row maximum costs a short inner loop per row); rows whose sum falls below e^_SPREAD of it lose
    precision that way and are redone with their own maximum."""
    m, c = x.shape
    lse = np.empty(m, x.dtype)
    sm = np.empty(m, x.dtype) if smooth else None
    ones = np.ones(c, x.dtype)
    w = ones if weight is None else weight
    sw = c if weight is None else weight.sum()
    blocks = _blocks(m, c)
    buf = np.empty((blocks[0][1], c), x.dtype)
    for i, j in blocks:
        xb, e = x[i:j], buf[:j - i]
        top = xb.max()
        if np.isfinite(top):
            lz, smb = _shifted(xb, e, top, smooth, w, ones, sw)
            lz += top
            far = np.flatnonzero(lz < top + _SPREAD)
        else:                                   # inf / NaN: every row on its own
            lz, smb, far = np.empty(j - i, x.dtype), np.empty(j - i, x.dtype), np.arange(j - i)
        if far.size:
            xf = xb[far]
            mx = _rowmax(xf)
            lf, sf = _shifted(xf, np.empty_like(xf), mx, smooth, w, ones, sw)
            lz[far] = lf + mx[:, 0]
            if smooth:
                smb[far] = sf
        lse[i:j] = lz
        if smooth:
            sm[i:j] = smb
    return lse, sm


_F32 = np.dtype(np.float32)


def _loops_lse(x):
    """loss_loops' row log-sum-exp of float32 x, or None (another dtype, no numba, a row not finite)."""
    if x.dtype != _F32 or (loops := loss_loops.kernels()) is None:
        return None
    lse = loops["lse"](x)
    return lse if np.isfinite(lse).all() else None


@_wide
def cross_entropy_loss(x, target, weight, ignore_index, label_smoothing, reduction):
    x = np.ascontiguousarray(x)
    m, c = x.shape
    s = float(label_smoothing)
    safe, valid, wt = _rows(x, target, weight, ignore_index)
    lse = _loops_lse(x) if s == 0 else None
    if lse is None:
        lse, smooth = _lse(x, s > 0, weight)
    loss = lse - x.reshape(-1)[_flat(safe, c)]
    if wt is not None:
        loss *= wt
    if s > 0:
        loss *= 1.0 - s
        loss += smooth * (s / c)
    if valid is not None:
        loss = np.where(valid, loss, x.dtype.type(0))   # 0 even where an ignored row holds inf / NaN
    denom = np.asarray(m if wt is None else wt.sum(), x.dtype)
    if reduction == "sum":
        loss = np.asarray(loss.sum(), x.dtype)
    elif reduction == "mean":
        with np.errstate(invalid="ignore", divide="ignore"):
            loss = np.asarray(loss.sum() / denom, x.dtype)
    return loss, lse, denom


@_wide
def cross_entropy_loss_backward(grad, x, target, weight, lse, denom, ignore_index, label_smoothing, reduction):
    x = np.ascontiguousarray(x)
    m, c = x.shape
    s = float(label_smoothing)
    safe, valid, wt = _rows(x, target, weight, ignore_index)
    with np.errstate(invalid="ignore", divide="ignore"):
        g = np.asarray(grad / denom if reduction == "mean" else grad, x.dtype)
    if s == 0 and x.dtype == _F32 and (loops := loss_loops.kernels()) is not None:
        # a = g (times the target's weight or 0 for an ignored row), one value per row
        a = np.full(m, g, _F32) if g.ndim == 0 and wt is None else \
            np.ascontiguousarray(np.broadcast_to(g if wt is None else g * wt, (m,)), dtype=_F32)
        if np.isfinite(lse).all() and np.isfinite(a).all():
            return loops["backward"](x, lse, a, np.ascontiguousarray(safe, dtype=np.int64), a)
    g = np.broadcast_to(g, (m,))
    # row i: p_i coef_i, minus a_i at column target_i, minus b_i weight when smoothing
    a = g * (1.0 - s) if wt is None else g * wt * (1.0 - s)
    b = None
    coef = a
    if s > 0:
        b = g * (s / c) if valid is None else g * valid * (s / c)
        coef = a + b * (c if weight is None else weight.sum())
    p = np.empty_like(x)
    finite = True
    for i, j in _blocks(m, c):
        q, xb, lb = p[i:j], x[i:j], lse[i:j]
        top = xb.max()
        finite = finite and bool(np.isfinite(top))
        if np.isfinite(top) and lb.min() > top + _SPREAD:
            # exp(x - lse) = exp(x - top) exp(top - lse): a scalar shift, the row factor folded into coef
            np.subtract(xb, top, out=q)
            np.exp(q, out=q)
            q *= (coef[i:j] * np.exp(top - lb))[:, None]
        else:
            np.subtract(xb, lb[:, None], out=q)
            np.exp(q, out=q)
            q *= coef[i:j, None]
        if b is not None:
            q -= b[i:j, None] if weight is None else b[i:j, None] * weight
    p.reshape(-1)[_flat(safe, c)] -= a   # one element per row: no duplicate indices
    if valid is not None and not (finite and np.isfinite(coef).all() and np.isfinite(lse).all()):
        p[~valid] = 0                    # exactly 0 even where x holds inf / NaN or denom is 0
    return p


def build() -> dict:
    return {"cross_entropy_loss": cross_entropy_loss, "cross_entropy_loss_backward": cross_entropy_loss_backward}
