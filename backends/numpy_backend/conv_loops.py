"""im2col and col2im of 2-D float32 convolutions as numba-compiled loops (the `fast` extra).

conv.py's NumPy im2col copies a strided 6-D view of x; its inner runs are one output row (8 values
for LeNet's second conv), and NumPy pays a loop setup per run. col2im (conv_transpose, the input
gradient) is one strided accumulate per kernel offset over the same short runs. Measured on a 2-vCPU
AMD EPYC, one thread: the im2col of LeNet's convs (64x1x28x28 and 64x6x12x12, 5x5 kernels) took
271 and 592 us in NumPy and 102 and 120 us here. Padding is never materialized: the loops write
zeros where a window leaves x (im2col) and skip those positions (col2im).

Flat indices are unsigned (uintp): with signed ones numba checks every index for wraparound, which
kept the copies scalar and made them several times slower than NumPy's.

`kernels()` is None without numba or with TENSORPLUG_NUMBA=0; compiled on first use in each process.
"""
from __future__ import annotations

import numpy as np

from . import numba_loops

_state = {}
_F32 = np.dtype(np.float32)


def kernels():
    """{"im2col": f(x, ks, stride, padding, dilation, out) -> (C*kh*kw, N*oh*ow) matrix,
    "im2col_batch": the same arguments -> (N, C*kh*kw, oh*ow), each image's columns,
    "col2im": f(cols, N, C, in_size, ks, stride, padding, dilation, out_size) -> (N, C, *out_size)}
    for float32 2-D convolutions (padding as ((top, bottom), (left, right))), or None without numba."""
    return numba_loops.cached(_state, _build)


def _build(numba):
    jit = numba.njit(nogil=True, error_model="numpy")
    u = numba.uintp

    @jit
    def _valid(off, step, n, size):
        # [b0, b1): the b in [0, n) with 0 <= b*step + off < size
        b0 = 0 if off >= 0 else min(n, (step - 1 - off) // step)
        b1 = b0 if size - 1 - off < 0 else max(b0, min(n, (size - 1 - off) // step + 1))
        return b0, b1

    @numba.njit(nogil=True, error_model="numpy", inline="always")     # (a call per row kept the copies scalar)
    def _window_row(xf, cf, o, s, h, H, b0, b1, ow, sw):
        # one output row of the columns at cf[o:o + ow]: x's values from flat index s (+ b*sw), 0 outside
        if h < 0 or h >= H:
            for b in range(ow):
                cf[o + u(b)] = 0
            return
        for b in range(b0):
            cf[o + u(b)] = 0
        if sw == 1:
            for b in range(b0, b1):
                cf[o + u(b)] = xf[u(s + b)]
        else:
            for b in range(b0, b1):
                cf[o + u(b)] = xf[u(s + b * sw)]
        for b in range(b1, ow):
            cf[o + u(b)] = 0

    @jit
    def im2col_loop(x, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow, cols):
        # cols[(c*kh + i)*kw + j, (n*oh + a)*ow + b] = x[n, c, a*sh + i*dh - ph, b*sw + j*dw - pw], 0 outside x
        N, C, H, W = x.shape
        xf, cf = x.reshape(-1), cols.reshape(-1)
        P = oh * ow
        for c in range(C):
            for i in range(kh):
                for j in range(kw):
                    r = (c * kh + i) * kw + j
                    off = j * dw - pw
                    b0, b1 = _valid(off, sw, ow, W)
                    for n in range(N):
                        for a in range(oh):
                            h = a * sh + i * dh - ph       # s + b*sw >= 0 for b >= b0
                            _window_row(xf, cf, u((r * N + n) * P + a * ow), ((n * C + c) * H + h) * W + off,
                                        h, H, b0, b1, ow, sw)

    @jit
    def im2col_batch_loop(x, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow, cols):
        # cols[n, (c*kh + i)*kw + j, a*ow + b] = x[n, c, a*sh + i*dh - ph, b*sw + j*dw - pw], 0 outside x:
        # each image's (C*kh*kw, oh*ow) block written in order
        N, C, H, W = x.shape
        xf, cf = x.reshape(-1), cols.reshape(-1)
        P = oh * ow
        R = C * kh * kw
        for n in range(N):
            for c in range(C):
                for i in range(kh):
                    for j in range(kw):
                        r = (c * kh + i) * kw + j
                        off = j * dw - pw
                        b0, b1 = _valid(off, sw, ow, W)
                        for a in range(oh):
                            h = a * sh + i * dh - ph
                            _window_row(xf, cf, u((n * R + r) * P + a * ow), ((n * C + c) * H + h) * W + off,
                                        h, H, b0, b1, ow, sw)

    @jit
    def col2im_loop(cols, kh, kw, sh, sw, ph, pw, dh, dw, ih, iw, y):
        # y[n, c, a*sh + i*dh - ph, b*sw + j*dw - pw] += cols[(c*kh + i)*kw + j, (n*ih + a)*iw + b], inside y
        N, C, H, W = y.shape
        cf, yf = cols.reshape(-1), y.reshape(-1)
        P = ih * iw
        for c in range(C):
            for i in range(kh):
                for j in range(kw):
                    r = (c * kh + i) * kw + j
                    off = j * dw - pw
                    b0, b1 = _valid(off, sw, iw, W)
                    for n in range(N):
                        for a in range(ih):
                            h = a * sh + i * dh - ph
                            if h < 0 or h >= H:
                                continue
                            s = u((r * N + n) * P + a * iw)
                            d = ((n * C + c) * H + h) * W + off
                            if sw == 1:
                                for b in range(b0, b1):
                                    yf[u(d + b)] += cf[s + u(b)]
                            else:
                                for b in range(b0, b1):
                                    yf[u(d + b * sw)] += cf[s + u(b)]

    def im2col(x, ks, stride, padding, dilation, out):
        x = np.ascontiguousarray(x)
        N, C = x.shape[:2]
        cols = np.empty((C * ks[0] * ks[1], N * out[0] * out[1]), dtype=x.dtype)
        im2col_loop(x, ks[0], ks[1], stride[0], stride[1], padding[0][0], padding[1][0], dilation[0], dilation[1],
                    out[0], out[1], cols)
        return cols

    def im2col_batch(x, ks, stride, padding, dilation, out):
        x = np.ascontiguousarray(x)
        N, C = x.shape[:2]
        cols = np.empty((N, C * ks[0] * ks[1], out[0] * out[1]), dtype=x.dtype)
        im2col_batch_loop(x, ks[0], ks[1], stride[0], stride[1], padding[0][0], padding[1][0], dilation[0],
                          dilation[1], out[0], out[1], cols)
        return cols

    def col2im(cols, N, C, in_size, ks, stride, padding, dilation, out_size):
        y = np.zeros((N, C) + tuple(out_size), dtype=cols.dtype)
        col2im_loop(np.ascontiguousarray(cols), ks[0], ks[1], stride[0], stride[1], padding[0], padding[1],
                    dilation[0], dilation[1], in_size[0], in_size[1], y)
        return y

    return {"im2col": im2col, "im2col_batch": im2col_batch, "col2im": col2im}


def usable(x, ks):
    """True for what the loops take: a float32 2-D convolution."""
    return x.dtype == _F32 and len(ks) == 2
