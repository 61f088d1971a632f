"""CuPy kernels of the conv family (specs in tensorplug.dispatch.optional_conv); no cuDNN.

conv: im2col as a strided view (`as_strided`) copied once into a (groups, C/groups * K, N * Out)
matrix (one copy kernel), then ONE batched matmul (cuBLAS) for all groups. conv_transpose: one
batched matmul, then col2im as one strided accumulate per kernel offset. max_pool: a running max
over one strided slice per kernel offset, each step one fused kernel that also tracks the winning
offset (no NaN test on the host, no synchronisation); avg_pool: a sum of strided slices. Loops run
over kernel offsets only, never over pixels or batch items.
"""
from __future__ import annotations

import importlib
import math

import numpy as np

from tensorplug.backends.numpy_backend import conv as numpy_conv      # conv_transpose is array-module generic
from tensorplug.dispatch.optional_conv import _offsets, avg_pool_divisor


def build(xp, fusion) -> dict:
    try:
        as_strided = xp.lib.stride_tricks.as_strided
    except AttributeError:                     # cupy.lib not imported as an attribute yet
        as_strided = importlib.import_module(xp.__name__ + ".lib.stride_tricks").as_strided
    consts = {}

    def const(key, make):
        """A small device array made from host tables, cached per device: copying it from host
        memory each call would stall the stream (a pageable host-to-device copy synchronises)."""
        key = (int(xp.cuda.runtime.getDevice()),) + key
        a = consts.get(key)
        if a is None:
            if len(consts) > 512:
                consts.clear()
            a = consts[key] = tuple(xp.asarray(t) for t in make())
        return a

    def pad_const(x, lo, hi, value):
        """x padded with `value` by lo / hi elements on each spatial dim (a new array)."""
        shape = x.shape[:2] + tuple(n + a + b for n, a, b in zip(x.shape[2:], lo, hi))
        out = xp.full(shape, value, dtype=x.dtype)
        out[(slice(None), slice(None)) + tuple(slice(a, a + n) for n, a in zip(x.shape[2:], lo))] = x
        return out

    def windows(x, ks, stride, dilation, out):
        """View (N, C, *out, *ks) of x's windows (x must be contiguous: strides are computed from it)."""
        st = x.strides
        nd = len(ks)
        shape = x.shape[:2] + tuple(out) + tuple(ks)
        strides = st[:2] + tuple(st[2 + i] * stride[i] for i in range(nd)) \
            + tuple(st[2 + i] * dilation[i] for i in range(nd))
        return as_strided(x, shape, strides)

    def conv(x, w, stride, padding, dilation, groups):
        if any(a or b for a, b in padding):
            x = pad_const(x, [p[0] for p in padding], [p[1] for p in padding], 0)
        else:
            x = xp.ascontiguousarray(x)
        N, C = x.shape[:2]
        O, ks = w.shape[0], tuple(w.shape[2:])
        nd = len(ks)
        out = tuple((n - d * (k - 1) - 1) // s + 1 for n, k, s, d in zip(x.shape[2:], ks, stride, dilation))
        G = groups
        Cg, Og, Kp, P = C // G, O // G, math.prod(ks), math.prod(out)
        win = windows(x, ks, stride, dilation, out)
        # (C, *ks, N, *out): rows of the column matrix are (channel, kernel offset), columns (batch, pixel)
        cols = win.transpose((1,) + tuple(range(2 + nd, 2 + 2 * nd)) + (0,) + tuple(range(2, 2 + nd)))
        cols = cols.reshape(G, Cg * Kp, N * P)                                 # the one im2col copy
        y = xp.matmul(xp.ascontiguousarray(w).reshape(G, Og, Cg * Kp), cols)    # (G, Og, N*P)
        return xp.ascontiguousarray(y.reshape((O, N) + out).swapaxes(0, 1))

    def conv_transpose(x, w, stride, padding, dilation, groups, out_size):
        return numpy_conv.conv_transpose(x, w, stride, padding, dilation, groups, out_size, xp=xp)

    def max_pool(x, kernel, stride, padding, dilation, out_size):
        S = tuple(x.shape[2:])
        hi = tuple(max(0, (o - 1) * s + d * (k - 1) + 1 - n - p)
                   for o, s, d, k, n, p in zip(out_size, stride, dilation, kernel, S, padding))
        kind = x.dtype.kind
        low = -np.inf if kind == "f" else (np.iinfo(x.dtype).min if kind in "iu" else False)
        if any(padding) or any(hi):
            x = pad_const(x, padding, hi, low)
        lead = (slice(None), slice(None))
        shape = x.shape[:2] + tuple(out_size)
        best = xp.full(shape, low, dtype=x.dtype)
        first, start, offs = const(("max_pool", S, tuple(kernel), tuple(stride), tuple(padding), tuple(dilation),
                                    tuple(out_size)), lambda: _pool_tables(S, kernel, stride, padding, dilation,
                                                                           out_size))
        slot = xp.broadcast_to(first, shape).copy()
        for j, off in enumerate(_offsets(kernel)):
            v = x[lead + tuple(slice(k * d, k * d + (o - 1) * s + 1, s)
                               for k, d, o, s in zip(off, dilation, out_size, stride))]
            fusion.pool_step(v, j, best, slot)
        idx = start + offs[slot]
        return best, idx

    def avg_pool(x, kernel, stride, padding, out_size, count_include_pad, divisor_override):
        S = tuple(x.shape[2:])
        hi = tuple(max(0, (o - 1) * s + k - n - p) for o, s, k, n, p in zip(out_size, stride, kernel, S, padding))
        if any(padding) or any(hi):
            x = pad_const(x, padding, hi, 0)
        lead = (slice(None), slice(None))
        acc = None
        for off in _offsets(kernel):
            piece = x[lead + tuple(slice(k, k + (o - 1) * s + 1, s) for k, o, s in zip(off, out_size, stride))]
            if acc is None:
                acc = piece.copy()
            else:
                xp.add(acc, piece, out=acc)
        div, = const(("avg_pool", S, tuple(kernel), tuple(stride), tuple(padding), tuple(out_size),
                      bool(count_include_pad), divisor_override, x.dtype.name),
                     lambda: (avg_pool_divisor(S, kernel, stride, padding, out_size, count_include_pad,
                                               divisor_override).astype(x.dtype),))
        xp.true_divide(acc, div, out=acc)
        return acc

    return {"conv": conv, "conv_transpose": conv_transpose, "max_pool": max_pool, "avg_pool": avg_pool}


def _pool_tables(S, kernel, stride, padding, dilation, out_size):
    """Host tables of max_pool (shapes only): each window's first in-range slot (int32), each
    window's flat start position, and the flat offset of each kernel slot (int64)."""
    first = np.zeros((), dtype=np.int64)
    start = np.zeros((), dtype=np.int64)
    offs = np.zeros((), dtype=np.int64)
    for o, s, p, d, k, n in zip(out_size, stride, padding, dilation, kernel, S):
        begin = np.arange(o, dtype=np.int64) * s - p
        kfirst = np.maximum(0, -(begin // d))
        first = np.add.outer(first * k, kfirst)
        start = np.add.outer(start * n, begin)
        offs = np.add.outer(offs * n, np.arange(k, dtype=np.int64) * d)
    return first.astype(np.int32), start, offs.reshape(-1)
