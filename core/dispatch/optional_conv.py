"""Optional kernels of the conv family (specs and decompositions written in required primitives).

Each kernel named in OPTIONAL has a decomposition: a function of the same name here taking the
kernel table K first. A backend may provide the kernel natively instead.

Layout and conventions shared by the five kernels:
- `x` is batched and channels-first: (N, C, *spatial) with 1, 2 or 3 (any number of) spatial dims;
- per-dim arguments (`stride`, `dilation`, `kernel`, `padding`, `out_size`) are tuples of Python
  ints, one per spatial dim, already validated and resolved by the frontend (no 'same' strings,
  no zero strides, every output size >= 1, every pooling window touching the input);
- results have x's dtype (max_pool's indices: int64) and are new arrays.

The frontend owns every gradient: conv's backward is a conv_transpose and a conv_weight (itself a
conv, so the recorded backward of create_graph differentiates again), avg_pool's a
conv_transpose, max_pool's a scatter-add through the returned indices.

The host-side helpers `avg_pool_divisor` and `max_pool_table` (NumPy, shapes only) are shared by
the decompositions, the NumPy backend and the frontend.
"""
from __future__ import annotations

import itertools
import math

import numpy as np

OPTIONAL: dict[str, str] = {
    "conv": "conv(x, w, stride, padding, dilation, groups) -> y: N-d cross-correlation. x (N, C, *S), "
            "w (O, C/groups, *K); padding a tuple of (before, after) zero-padding pairs per spatial dim; "
            "y (N, O, *Out), Out = (S + before + after - dilation*(K-1) - 1) // stride + 1, "
            "y[n, g*Og+o, i] = sum_{c,k} xpad[n, g*Cg+c, i*stride + k*dilation] * w[g*Og+o, c, k]; no bias",
    "conv_weight": "conv_weight(x, gy, ks, stride, padding, dilation, groups) -> gw: the gradient of "
                   "conv(x, w, stride, padding, dilation, groups) wrt w (of spatial size ks) for the output "
                   "gradient gy (N, O, *Out); gw (O, C/groups, *ks), gw[g*Og+o, c, k] = "
                   "sum_{n,i} gy[n, g*Og+o, i] * xpad[n, g*Cg+c, i*stride + k*dilation]",
    "conv_transpose": "conv_transpose(x, w, stride, padding, dilation, groups, out_size) -> y: the adjoint "
                      "of conv. x (N, C, *S), w (C, O/groups, *K); full[n, g*Og+o, i*stride + k*dilation] "
                      "+= x[n, g*Cg+c, i] * w[g*Cg+c, o, k]; y (N, O, *out_size), y[..., j] = "
                      "full[..., j + padding] (padding: one int per spatial dim), 0 where full ends",
    "max_pool": "max_pool(x, kernel, stride, padding, dilation, out_size) -> (values, indices): window i "
                "covers positions i*stride - padding + j*dilation (j < kernel) inside the input (others "
                "are skipped); values: the maxima (NaN propagates), indices: int64 flat (row-major over "
                "the spatial dims) input index of the first maximum in row-major window order (of the "
                "last NaN where the window has one, as torch); both (N, C, *out_size)",
    "avg_pool": "avg_pool(x, kernel, stride, padding, out_size, count_include_pad, divisor_override) -> y: "
                "sum over window i (positions i*stride - padding + j, j < kernel, inside the input) "
                "divided by divisor_override if given, else by the count of window positions inside "
                "[-padding, S + padding) when count_include_pad, else inside [0, S); y (N, C, *out_size)",
}


# -- host-side geometry helpers (Python ints and NumPy only; no backend arrays) -----------------
def avg_pool_divisor(S, kernel, stride, padding, out_size, count_include_pad, divisor_override):
    """float64 NumPy array of shape out_size: what each avg_pool window sum is divided by."""
    if divisor_override:
        return np.full(tuple(out_size), float(divisor_override))
    div = np.ones((), dtype=np.float64)
    for n, k, s, p, o in zip(S, kernel, stride, padding, out_size):
        start = np.arange(o) * s - p
        if count_include_pad:
            cnt = np.minimum(start + k, n + p) - start
        else:
            cnt = np.minimum(start + k, n) - np.maximum(start, 0)
        div = np.multiply.outer(div, cnt.astype(np.float64))
    return div


def max_pool_table(S, kernel, stride, padding, dilation, out_size):
    """int64 (P, Kp) table: flat input position of each window slot (P = prod(out_size) windows,
    Kp = prod(kernel) slots in row-major order). A slot outside the input holds its window's first
    valid position, so a first-maximum search over slots finds torch's index."""
    nd = len(S)
    flat = np.zeros((1,) * (2 * nd), dtype=np.int64)
    first = np.zeros((1,) * (2 * nd), dtype=np.int64)
    valid = np.ones((1,) * (2 * nd), dtype=bool)
    mul = 1
    for d in range(nd - 1, -1, -1):
        pos = (np.arange(out_size[d]) * stride[d] - padding[d])[:, None] + np.arange(kernel[d]) * dilation[d]
        ok = (pos >= 0) & (pos < S[d])
        firstpos = pos[np.arange(out_size[d]), ok.argmax(axis=1)]
        shape = [1] * (2 * nd)
        shape[d], shape[nd + d] = out_size[d], kernel[d]
        flat = flat + pos.reshape(shape) * mul
        valid = valid & ok.reshape(shape)
        fshape = [1] * (2 * nd)
        fshape[d] = out_size[d]
        first = first + firstpos.reshape(fshape) * mul
        mul *= S[d]
    table = np.where(valid, flat, first)
    return np.ascontiguousarray(table.reshape(math.prod(out_size), math.prod(kernel)))


def _offsets(sizes):
    return itertools.product(*[range(n) for n in sizes])


def _dt(x):
    return x.dtype.name if hasattr(x.dtype, "name") else str(x.dtype)


# -- decompositions ----------------------------------------------------------------------------
def _im2col(K, x, ks, stride, dilation, out):
    """(N, C, prod(ks), prod(out)) columns of the (already padded) x, by strided slices: a loop over
    kernel offsets, or over output positions when there are fewer of those."""
    N, C = x.shape[:2]
    Kp, P = math.prod(ks), math.prod(out)
    lead = (slice(None), slice(None))
    pieces = []
    if Kp <= P:
        for off in _offsets(ks):
            key = lead + tuple(slice(k * d, k * d + (o - 1) * s + 1, s)
                               for k, d, o, s in zip(off, dilation, out, stride))
            pieces.append(K["reshape"](K["slice"](x, key), (N, C, 1, P)))
        return K["concat"](pieces, 2)
    for pos in _offsets(out):
        key = lead + tuple(slice(i * s, i * s + (k - 1) * d + 1, d)
                           for i, s, k, d in zip(pos, stride, ks, dilation))
        pieces.append(K["reshape"](K["slice"](x, key), (N, C, Kp, 1)))
    return K["concat"](pieces, 3)


def conv(K, x, w, stride, padding, dilation, groups):
    N, C = x.shape[:2]
    O, ks = w.shape[0], tuple(w.shape[2:])
    if any(a or b for a, b in padding):
        x = K["pad"](x, ((0, 0), (0, 0)) + tuple(tuple(p) for p in padding), "constant", 0)
    Sp = x.shape[2:]
    out = tuple((n - d * (k - 1) - 1) // s + 1 for n, k, s, d in zip(Sp, ks, stride, dilation))
    G = groups
    Cg, Og, Kp, P = C // G, O // G, math.prod(ks), math.prod(out)
    cols = K["reshape"](_im2col(K, x, ks, stride, dilation, out), (N, G, Cg * Kp, P))
    y = K["matmul"](K["reshape"](w, (G, Og, Cg * Kp)), cols)        # (N, G, Og, P)
    return K["reshape"](y, (N, O) + out)


def conv_weight(K, x, gy, ks, stride, padding, dilation, groups):
    """A conv over x's channels as the batch, with gy as the kernel (stride and dilation swapped)."""
    N, C = x.shape[:2]
    S, M = tuple(x.shape[2:]), tuple(gy.shape[2:])
    O, G, nd = gy.shape[1], groups, len(ks)
    Cg, Og = C // G, O // G
    # trim the trailing pad to what produces exactly `ks` outputs (extra input is never read)
    pads = tuple((lo, (kk - 1) * d + (mi - 1) * s + 1 - n - lo)
                 for (lo, _), kk, d, mi, s, n in zip(padding, ks, dilation, M, stride, S))
    x, pads = _crop(K, x, pads)
    S = tuple(x.shape[2:])
    sp = tuple(range(3, 3 + nd))
    xs = K["reshape"](K["permute"](K["reshape"](x, (N, G, Cg) + S), (2, 1, 0) + sp), (Cg, G * N) + S)
    gs = K["reshape"](K["permute"](K["reshape"](gy, (N, G, Og) + M), (1, 2, 0) + sp), (G * Og, N) + M)
    r = K["conv"](xs, gs, tuple(dilation), pads, tuple(stride), G)     # (Cg, O, *ks)
    return K["copy"](K["permute"](r, (1, 0) + tuple(range(2, 2 + nd))))


def _crop(K, x, pads):
    """Negative trailing pads crop x; returns (x, non-negative pads)."""
    if all(hi >= 0 for _, hi in pads):
        return x, pads
    key = (slice(None), slice(None)) + tuple(slice(0, n + min(hi, 0)) for n, (_, hi) in zip(x.shape[2:], pads))
    return K["slice"](x, key), tuple((lo, max(hi, 0)) for lo, hi in pads)


def conv_transpose(K, x, w, stride, padding, dilation, groups, out_size):
    N, C = x.shape[:2]
    S, ks = tuple(x.shape[2:]), tuple(w.shape[2:])
    G = groups
    Cg, Og = C // G, w.shape[1]
    O, Kp, P = Og * G, math.prod(ks), math.prod(S)
    wm = K["permute"](K["reshape"](w, (G, Cg, Og * Kp)), (0, 2, 1))     # (G, Og*Kp, Cg)
    cols = K["matmul"](wm, K["reshape"](x, (N, G, Cg, P)))            # (N, G, Og*Kp, P)
    cols = K["reshape"](cols, (N, O, Kp, P))
    full_size = tuple(max((n - 1) * s + d * (k - 1) + 1, p + o)
                      for n, s, d, k, p, o in zip(S, stride, dilation, ks, padding, out_size))
    full = K["full"]((N, O) + full_size, 0, _dt(x))
    lead = (slice(None), slice(None))
    if Kp <= P:                       # col2im: one strided accumulate per kernel offset
        for j, off in enumerate(_offsets(ks)):
            key = lead + tuple(slice(k * d, k * d + (n - 1) * s + 1, s)
                               for k, d, n, s in zip(off, dilation, S, stride))
            view = K["slice"](full, key)
            K["assign"](view, K["add"](view, K["reshape"](K["slice"](cols, lead + (j,)), (N, O) + S)))
    else:                             # ... or one per input position
        for j, pos in enumerate(_offsets(S)):
            key = lead + tuple(slice(i * s, i * s + (k - 1) * d + 1, d)
                               for i, s, k, d in zip(pos, stride, ks, dilation))
            view = K["slice"](full, key)
            piece = K["reshape"](K["slice"](cols, lead + (slice(None), j)), (N, O) + ks)
            K["assign"](view, K["add"](view, piece))
    return K["copy"](K["slice"](full, lead + tuple(slice(p, p + o) for p, o in zip(padding, out_size))))


def max_pool(K, x, kernel, stride, padding, dilation, out_size):
    N, C = x.shape[:2]
    S = tuple(x.shape[2:])
    table = max_pool_table(S, kernel, stride, padding, dilation, out_size)
    P, Kp = table.shape
    flat_table = K["from_numpy"](table.reshape(-1))
    xf = K["reshape"](x, (N, C, math.prod(S)))
    cols = K["reshape"](K["index"](xf, (slice(None), slice(None), flat_table)), (N, C, P, Kp))
    am = argmax_last_nan(K, cols)                                      # (N, C, P, 1)
    values = K["gather"](cols, am, 3)
    slot = K["add"](am, K["from_numpy"](np.arange(P, dtype=np.int64).reshape(P, 1) * Kp))
    indices = K["index"](flat_table, (slot,))
    shape = (N, C) + tuple(out_size)
    return K["reshape"](values, shape), K["reshape"](indices, shape)


def argmax_last_nan(K, cols):
    """Index (keepdims) along the last axis of the first maximum, or of the last NaN where there is one."""
    axis = len(cols.shape) - 1
    am = K["argmax"](cols, axis, True)
    if _dt(cols).startswith("float"):
        nan = K["isnan"](cols)
        has = K["any"](nan, (axis,), True)
        if bool(K["to_numpy"](K["any"](has, None, False))):
            flipped = K["astype"](K["flip"](nan, (axis,)), "int64")
            last = K["sub"](cols.shape[axis] - 1, K["argmax"](flipped, axis, True))
            am = K["where"](has, last, am)
    return am


def avg_pool(K, x, kernel, stride, padding, out_size, count_include_pad, divisor_override):
    S = tuple(x.shape[2:])
    hi = tuple(max(0, (o - 1) * s + k - n - p) for o, s, k, n, p in zip(out_size, stride, kernel, S, padding))
    if any(padding) or any(hi):
        x = K["pad"](x, ((0, 0), (0, 0)) + tuple(zip(padding, hi)), "constant", 0)
    lead = (slice(None), slice(None))
    acc = None
    for off in _offsets(kernel):
        piece = K["slice"](x, lead + tuple(slice(k, k + (o - 1) * s + 1, s) for k, o, s in zip(off, out_size, stride)))
        acc = K["copy"](piece) if acc is None else K["add"](acc, piece)
    div = avg_pool_divisor(S, kernel, stride, padding, out_size, count_include_pad, divisor_override)
    return K["div"](acc, K["from_numpy"](div.astype(_dt(x))))
