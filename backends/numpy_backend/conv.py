"""NumPy native kernels of the conv family (specs in tensorplug.dispatch.optional_conv).

conv: im2col as a strided view (`as_strided`) copied once into a (groups, C/groups * K, N * Out)
matrix, then ONE matmul per group (a single batched `np.matmul`); 1x1 kernels skip im2col (a GEMM per
batch item, already in output order). conv_weight: the same column matrix times the output gradient,
one GEMM. conv_transpose: one matmul, then col2im as one strided accumulate per kernel offset; at unit
stride, when the columns are not larger, a conv with the flipped kernel instead (one copy beats Kp
accumulates). For float32 2-D convs with numba installed, im2col and col2im are conv_loops.py's loops.
max_pool (floating): a pairwise tournament of one strided slice per kernel offset (up to 32 offsets);
else a running max over those slices; beyond 32 offsets an argmax over copied windows (a gather through
`max_pool_table` where padding makes windows ragged); avg_pool: a sum of strided slices. Loops run over
kernel offsets only, never over pixels or batch items.
"""
from __future__ import annotations

import math

import numpy as np
from numpy.lib.stride_tricks import as_strided

from tensorplug.dispatch.optional_conv import _offsets, avg_pool_divisor, max_pool_table

from . import conv_loops


def _windows(x, ks, stride, dilation, out):
    """Read-only view (N, C, *out, *ks) of x's windows."""
    st = x.strides
    nd = len(ks)
    shape = x.shape[:2] + tuple(out) + tuple(ks)
    strides = st[:2] + tuple(st[2 + i] * stride[i] for i in range(nd)) \
        + tuple(st[2 + i] * dilation[i] for i in range(nd))
    return as_strided(x, shape, strides, writeable=False)


def _pad0(x, pads, value=0):
    """x zero- (or value-) padded by per-dim (before, after) pairs on its spatial dims: one write of x into
    a fresh buffer (np.pad costs several times more for these small pads)."""
    if not any(a or b for a, b in pads):
        return x
    shape = x.shape[:2] + tuple(n + a + b for n, (a, b) in zip(x.shape[2:], pads))
    out = np.full(shape, value, dtype=x.dtype) if value else np.zeros(shape, dtype=x.dtype)
    out[(slice(None), slice(None)) + tuple(slice(a, a + n) for n, (a, _) in zip(x.shape[2:], pads))] = x
    return out


def _out_size(x, ks, stride, padding, dilation):
    return tuple((n + a + b - d * (k - 1) - 1) // s + 1
                 for n, (a, b), k, s, d in zip(x.shape[2:], padding, ks, stride, dilation))


def _columns(x, ks, stride, padding, dilation, groups):
    """(cols (G, C/G * prod(ks), N * prod(out)), out): the im2col matrix of x, one copy of its windows;
    rows are (channel, kernel offset), columns (batch, pixel)."""
    N, C = x.shape[:2]
    nd = len(ks)
    out = _out_size(x, ks, stride, padding, dilation)
    if conv_loops.usable(x, ks) and (loops := conv_loops.kernels()) is not None:
        return loops["im2col"](x, ks, stride, padding, dilation, out).reshape(groups, -1, N * math.prod(out)), out
    x = _pad0(x, padding)
    win = _windows(x, ks, stride, dilation, out)
    cols = win.transpose((1,) + tuple(range(2 + nd, 2 + 2 * nd)) + (0,) + tuple(range(2, 2 + nd)))
    return cols.reshape(groups, C // groups * math.prod(ks), N * math.prod(out)), out


def _batch_columns(x, ks, stride, padding, dilation, groups, out):
    """(N, G, C/G * prod(ks), prod(out)): each image's im2col matrix (conv's layout when the output is
    made per image)."""
    N, C = x.shape[:2]
    if conv_loops.usable(x, ks) and (loops := conv_loops.kernels()) is not None:
        cols = loops["im2col_batch"](x, ks, stride, padding, dilation, out)
    else:
        nd = len(ks)
        win = _windows(_pad0(x, padding), ks, stride, dilation, out)           # (N, C, *out, *ks)
        cols = win.transpose((0, 1) + tuple(range(2 + nd, 2 + 2 * nd)) + tuple(range(2, 2 + nd)))
    return cols.reshape(N, groups, C // groups * math.prod(ks), math.prod(out))


def _per_image(Og, P):
    """conv's product per image ((Og, C*K) @ (C*K, P), N of them) rather than one (Og, C*K) @ (C*K, N*P)
    and a transpose of the result: OpenBLAS is slow with few rows against a long N*P (LeNet's 6 x 25 @
    25 x 36864: 537 us against 135 for 64 per-image products), and the per-image result is already in
    (N, O, P) order; with few pixels per image (ResNet-18's last layers, P = 4-64) one product wins."""
    return P >= 128 or (Og <= 32 and P >= 16)


def _pointwise(x, ks, stride, padding):
    """x's strided samples when conv is a plain GEMM per batch item (1x1 kernel, no padding), else None."""
    if any(k != 1 for k in ks) or any(a or b for a, b in padding):
        return None
    return x[(slice(None), slice(None)) + tuple(slice(None, None, s) for s in stride)]


def conv(x, w, stride, padding, dilation, groups):
    N, C = x.shape[:2]
    O, ks = w.shape[0], w.shape[2:]
    G = groups
    Cg, Og = C // G, O // G
    xs = _pointwise(x, ks, stride, padding)
    if xs is not None:                      # 1x1: (Og, Cg) @ (Cg, P) per item, already in (N, O, P) order
        out = xs.shape[2:]
        y = np.matmul(w.reshape(G, Og, Cg), xs.reshape(N, G, Cg, math.prod(out)))
        return y.reshape((N, O) + out)
    out = _out_size(x, ks, stride, padding, dilation)
    if _per_image(Og, math.prod(out)):
        y = np.matmul(w.reshape(G, Og, -1), _batch_columns(x, ks, stride, padding, dilation, G, out))
        return y.reshape((N, O) + out)                                  # (N, G, Og, P)
    cols, out = _columns(x, ks, stride, padding, dilation, G)
    y = np.matmul(w.reshape(G, Og, -1), cols)                          # (G, Og, N*P)
    return np.ascontiguousarray(y.reshape((O, N) + out).swapaxes(0, 1))


def conv_weight(x, gy, ks, stride, padding, dilation, groups):
    """One GEMM per group: gy as (Og, N*P) times the transposed im2col matrix of x."""
    N, C = x.shape[:2]
    O, out = gy.shape[1], gy.shape[2:]
    G = groups
    Cg, Og, P = C // G, O // G, math.prod(out)
    xs = _pointwise(x, ks, stride, padding)
    if xs is None and P >= 256 and Cg * math.prod(ks) <= 160:
        # a first layer (1-3 input channels): per image (Cg*Kp, P) @ (P, Og), summed over the images; one
        # (Cg*Kp, N*P) @ (N*P, Og) product is slow in OpenBLAS with so few rows: LeNet's conv1 806 -> 452
        # us, ResNet-18's 7x7 conv1 3.5 -> 3.3 ms (not for more channels: LeNet's conv2 738 -> 983)
        cols = _batch_columns(x, ks, stride, padding, dilation, G, tuple(out))       # (N, G, Cg*Kp, P)
        part = np.matmul(cols, gy.reshape(N, G, Og, P).transpose(0, 1, 3, 2))       # (N, G, Cg*Kp, Og)
        return np.ascontiguousarray(part.sum(0).transpose(0, 2, 1)).reshape((O, Cg) + tuple(ks))
    g = gy.reshape(N, G, Og, P).transpose(1, 2, 0, 3).reshape(G, Og, N * P)
    if xs is not None:
        cols = xs.reshape(N, G, Cg, P).transpose(1, 2, 0, 3).reshape(G, Cg, N * P)
    else:
        cols, _ = _columns(x, ks, stride, padding, dilation, G)
    if N * P >= 4 * Og:
        # OpenBLAS is slow with few rows against a long inner dimension: (Cg*Kp, Og), then transposed, took
        # half the time for LeNet's convs (Og 6 and 16; N*P 36864 and 4096) and 0.8-0.95 for ResNet-18's
        gw = np.matmul(cols, g.transpose(0, 2, 1)).transpose(0, 2, 1)
    else:
        # few pixels (deep layers): the product lands in gw's layout, transposing a large result costs more
        gw = np.matmul(g, cols.transpose(0, 2, 1))                                  # (G, Og, Cg*Kp)
    return gw.reshape((O, Cg) + tuple(ks))


def conv_transpose(x, w, stride, padding, dilation, groups, out_size, xp=np):
    """Also the CUDA backend's (xp = CuPy): one batched matmul, then col2im as one strided
    accumulate per kernel offset, or per input position when there are fewer of those."""
    N, C = x.shape[:2]
    S, ks = tuple(x.shape[2:]), tuple(w.shape[2:])
    nd = len(ks)
    G = groups
    Cg, Og = C // G, w.shape[1]
    O, Kp, P = Og * G, math.prod(ks), math.prod(S)
    # im2col copies C * prod(out_size) * Kp values where col2im accumulates O * P * Kp (slower per value);
    # it also needs a permuted copy of w, which only pays when w is small next to the columns
    Pout = math.prod(out_size)
    if xp is np and all(s == 1 for s in stride) and Kp <= P and C * Pout <= 2 * O * P and 4 * Og <= N * Pout:
        return _conv_transpose_as_conv(x, w, padding, dilation, groups, out_size)
    xm = x.reshape(N, G, Cg, P).transpose(1, 2, 0, 3).reshape(G, Cg, N * P)
    wm = w.reshape(G, Cg, Og * Kp).transpose(0, 2, 1)
    cols = xp.matmul(wm, xm)                                           # (G, Og*Kp, N*P)
    if xp is np and conv_loops.usable(cols, ks) and (loops := conv_loops.kernels()) is not None:
        return loops["col2im"](cols.reshape(O * Kp, N * P), N, O, S, ks, stride, padding, dilation, out_size)
    cols = cols.reshape((O,) + ks + (N,) + S)                          # (O, *ks, N, *S)
    full_size = tuple(max((n - 1) * s + d * (k - 1) + 1, p + o)
                      for n, s, d, k, p, o in zip(S, stride, dilation, ks, padding, out_size))
    full = xp.zeros((O, N) + full_size, dtype=x.dtype)
    lead = (slice(None), slice(None))
    if Kp <= P:
        for off in _offsets(ks):
            key = lead + tuple(slice(k * d, k * d + (n - 1) * s + 1, s)
                               for k, d, n, s in zip(off, dilation, S, stride))
            view = full[key]
            xp.add(view, cols[(slice(None),) + off], out=view)
    else:
        for pos in _offsets(S):
            key = lead + tuple(slice(i * s, i * s + (k - 1) * d + 1, d)
                               for i, s, k, d in zip(pos, stride, ks, dilation))
            view = full[key]
            xp.add(view, xp.moveaxis(cols[(Ellipsis,) + pos], nd + 1, 1), out=view)
    y = full[lead + tuple(slice(p, p + o) for p, o in zip(padding, out_size))]
    return xp.ascontiguousarray(y.swapaxes(0, 1))


def _conv_transpose_as_conv(x, w, padding, dilation, groups, out_size):
    """Unit-stride conv_transpose as a conv of x, padded by d*(k-1) - padding (negative: cropped), with
    the flipped, channel-swapped kernel: one im2col copy instead of a col2im accumulate per offset."""
    C, Og, ks = w.shape[0], w.shape[1], tuple(w.shape[2:])
    G, nd = groups, len(ks)
    Cg = C // G
    pads = tuple((d * (k - 1) - p, o + p - n)
                 for d, k, p, o, n in zip(dilation, ks, padding, out_size, x.shape[2:]))
    if any(lo < 0 or hi < 0 for lo, hi in pads):
        x = x[(slice(None), slice(None)) + tuple(slice(max(-lo, 0), n + min(hi, 0))
                                               for (lo, hi), n in zip(pads, x.shape[2:]))]
        pads = tuple((max(lo, 0), max(hi, 0)) for lo, hi in pads)
    flip = (slice(None),) * 3 + (slice(None, None, -1),) * nd
    wc = w.reshape((G, Cg, Og) + ks).swapaxes(1, 2)[flip].reshape((G * Og, Cg) + ks)
    return conv(x, wc, (1,) * nd, pads, dilation, G)


def _max_pool_by_offsets(x, kernel, stride, padding, dilation, out_size):
    """Running max over one strided slice per kernel offset (no window copy). Padding holds the lowest
    value and a slot only wins when strictly greater (or NaN), starting from each window's
    first in-range slot: torch's rule, also for windows whose values are all -inf."""
    S = x.shape[2:]
    hi = tuple(max(0, (o - 1) * s + d * (k - 1) + 1 - n - p)
               for o, s, d, k, n, p in zip(out_size, stride, dilation, kernel, S, padding))
    floating = x.dtype.kind == "f"
    low = -np.inf if floating else (np.iinfo(x.dtype).min if x.dtype.kind in "iu" else 0)
    if any(padding) or any(hi):
        x = _pad0(x, tuple(zip(padding, hi)), low)
    lead = (slice(None), slice(None))
    best = np.full(x.shape[:2] + tuple(out_size), low, dtype=x.dtype)
    # slot (row-major over the kernel) of each window's first in-range position
    first = np.zeros((), dtype=np.int64)
    start = np.zeros((), dtype=np.int64)
    offs = np.zeros((), dtype=np.int64)
    for o, s, p, d, k, n in zip(out_size, stride, padding, dilation, kernel, S):
        begin = np.arange(o, dtype=np.int64) * s - p
        kfirst = np.maximum(0, -(begin // d))            # smallest j with begin + j*d >= 0
        first = np.add.outer(first * k, kfirst)
        start = np.add.outer(start * n, begin)
        offs = np.add.outer(offs * n, np.arange(k, dtype=np.int64) * d)
    has_nan = floating and bool(np.isnan(x).any())
    slot = np.broadcast_to(first.astype(np.int32), best.shape).copy()
    # masked selects (np.where, copyto(where=)) are several times slower than arithmetic here
    for j, off in enumerate(_offsets(kernel)):
        v = x[lead + tuple(slice(k * d, k * d + (o - 1) * s + 1, s)
                           for k, d, o, s in zip(off, dilation, out_size, stride))]
        upd = v > best
        if has_nan:
            upd |= np.isnan(v)                          # the last NaN of a window wins, as in torch
        np.maximum(best, v, out=best)                   # NaN propagates
        slot += upd * (np.int32(j) - slot)
    idx = start + offs.reshape(-1)[slot]
    return best, idx


def _max_pool_tournament(x, kernel, stride, padding, dilation, out_size):
    """Floating x: a pairwise tournament of the strided slices (one per kernel offset, row-major, the right
    one winning only when strictly greater, so the first maximum wins) with int8 slots, about half the
    passes of the running max. Padding holds -inf, so a finite winner is always inside the input; None
    where a window's maximum is -inf or NaN (the running max applies torch's rules there)."""
    S = x.shape[2:]
    hi = tuple(max(0, (o - 1) * s + d * (k - 1) + 1 - n - p)
               for o, s, d, k, n, p in zip(out_size, stride, dilation, kernel, S, padding))
    x = _pad0(x, tuple(zip(padding, hi)), -np.inf)
    lead = (slice(None), slice(None))
    items = [(x[lead + tuple(slice(k * d, k * d + (o - 1) * s + 1, s)
                             for k, d, o, s in zip(off, dilation, out_size, stride))], np.int8(j))
             for j, off in enumerate(_offsets(kernel))]
    while len(items) > 1:
        nxt = []
        for (va, sa), (vb, sb) in zip(items[0::2], items[1::2]):
            take = vb > va
            nxt.append((np.maximum(va, vb), sa + take * (sb - sa)))
        if len(items) % 2:
            nxt.append(items[-1])
        items = nxt
    best, slot = items[0]
    if best.base is not None or not isinstance(slot, np.ndarray):      # a 1-slot kernel: a view of x
        best = best.copy()
        slot = np.zeros(best.shape, dtype=np.int8)
    if not np.isfinite(best.min()) and (np.isnan(best).any() or (best == -np.inf).any()):
        return None
    start = np.zeros((), dtype=np.int64)
    offs = np.zeros((), dtype=np.int64)
    for o, s, d, k, n, p in zip(out_size, stride, dilation, kernel, S, padding):
        start = np.add.outer(start * n, np.arange(o, dtype=np.int64) * s - p)
        offs = np.add.outer(offs * n, np.arange(k, dtype=np.int64) * d)
    return best, start + offs.reshape(-1)[slot]


def _argmax(cols):
    """First maximum along the last axis, or the last NaN where there is one."""
    am = cols.argmax(axis=-1)
    if cols.dtype.kind == "f":
        nan = np.isnan(cols)
        if nan.any():
            last = cols.shape[-1] - 1 - nan[..., ::-1].argmax(axis=-1)
            am = np.where(nan.any(axis=-1), last, am)
    return am


def max_pool(x, kernel, stride, padding, dilation, out_size):
    N, C = x.shape[:2]
    S = x.shape[2:]
    P, Kp = math.prod(out_size), math.prod(kernel)
    inside = all((o - 1) * s + d * (k - 1) + 1 <= n for o, s, d, k, n in zip(out_size, stride, dilation, kernel, S))
    if Kp <= 32:
        if x.dtype.kind == "f":
            r = _max_pool_tournament(x, kernel, stride, padding, dilation, out_size)
            if r is not None:
                return r
        return _max_pool_by_offsets(x, kernel, stride, padding, dilation, out_size)
    if not any(padding) and inside:
        cols = _windows(x, kernel, stride, dilation, out_size).reshape(N, C, P, Kp)
        am = _argmax(cols)
        # flat index = window start + offset of the winning slot
        start = np.zeros((), dtype=np.int64)
        off = np.zeros((), dtype=np.int64)
        for n, o, s, k, d in zip(S, out_size, stride, kernel, dilation):
            start = np.add.outer(start * n, np.arange(o, dtype=np.int64) * s)
            off = np.add.outer(off * n, np.arange(k, dtype=np.int64) * d)
        idx = start.reshape(P) + off.reshape(Kp)[am]
    else:
        table = max_pool_table(S, kernel, stride, padding, dilation, out_size)
        cols = x.reshape(N, C, math.prod(S))[:, :, table]                     # (N, C, P, Kp)
        am = _argmax(cols)
        idx = table[np.arange(P), am]
    values = np.take_along_axis(cols, am[..., None], axis=-1)
    shape = (N, C) + tuple(out_size)
    return values.reshape(shape), idx.reshape(shape).astype(np.int64, copy=False)


def avg_pool(x, kernel, stride, padding, out_size, count_include_pad, divisor_override):
    S = x.shape[2:]
    hi = tuple(max(0, (o - 1) * s + k - n - p) for o, s, k, n, p in zip(out_size, stride, kernel, S, padding))
    if any(padding) or any(hi):
        x = _pad0(x, tuple(zip(padding, hi)))
    lead = (slice(None), slice(None))
    acc = None
    for off in _offsets(kernel):
        piece = x[lead + tuple(slice(k, k + (o - 1) * s + 1, s) for k, o, s in zip(off, out_size, stride))]
        if acc is None:
            acc = piece.copy()
        else:
            acc += piece
    div = avg_pool_divisor(S, kernel, stride, padding, out_size, count_include_pad, divisor_override)
    acc /= div.astype(x.dtype)
    return acc


def build() -> dict:
    from .bfloat16 import in_float32        # bfloat16.build widens the other four; this one is new
    return {"conv": conv, "conv_weight": in_float32(conv_weight), "conv_transpose": conv_transpose, "max_pool": max_pool, "avg_pool": avg_pool}
