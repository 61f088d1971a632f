"""Records of the optional kernels of the conv and norm families (tensorplug.dispatch.optional_conv,
optional_norm): conv, conv_weight, conv_transpose, max_pool, avg_pool, batch_norm, embedding_bag. References are
direct float64 loops over kernel offsets / windows / bags."""
from __future__ import annotations

import numpy as np

from ._base import FLOAT, A, ErrorCase, OpRecord, Sample, register, values

NN_TOL = {"float16": (1e-2, 1e-2), "bfloat16": (2e-2, 2e-2), "float32": (1e-5, 1e-5), "float64": (1e-10, 1e-11)}


def _F():
    import tensorplug.nn.functional as F
    return F


# -- conv ------------------------------------------------------------------------------------------
def conv_ref(x, w, stride, padding, dilation, groups):
    nd = x.ndim - 2
    xp = np.pad(x, [(0, 0), (0, 0)] + [tuple(p) for p in padding])
    N, C = x.shape[:2]
    O, ks = w.shape[0], w.shape[2:]
    out = tuple((xp.shape[2 + d] - dilation[d] * (ks[d] - 1) - 1) // stride[d] + 1 for d in range(nd))
    Cg, Og = C // groups, O // groups
    y = np.zeros((N, O) + out)
    for off in np.ndindex(*ks):
        sl = tuple(slice(off[d] * dilation[d], off[d] * dilation[d] + (out[d] - 1) * stride[d] + 1, stride[d])
                   for d in range(nd))
        patch = xp[(slice(None), slice(None)) + sl]
        for g in range(groups):
            wk = w[(slice(g * Og, (g + 1) * Og), slice(None)) + off]          # (Og, Cg)
            y[:, g * Og:(g + 1) * Og] += np.einsum("nc...,oc->no...", patch[:, g * Cg:(g + 1) * Cg], wk)
    return y


def _conv_samples(dt, rng):
    v = lambda *s: values(rng, dt, s, -2, 2)  # noqa: E731
    return [
        Sample((A(v(2, 3, 7)), A(v(4, 3, 3)), (1,), ((0, 0),), (1,), 1), desc="1-d"),
        Sample((A(v(1, 2, 8)), A(v(2, 2, 2)), (2,), ((1, 2),), (2,), 1),
               desc="1-d, stride 2, padding (1, 2), dilation 2"),
        Sample((A(v(2, 4, 5, 5)), A(v(4, 2, 3, 3)), (1, 2), ((1, 1), (0, 1)), (1, 1), 2),
               desc="2-d, 2 groups"),
        Sample((A(v(1, 2, 4, 6), "T"), A(v(3, 2, 2, 3)), (1, 1), ((0, 0), (0, 0)), (1, 1), 1),
               desc="2-d, transposed x"),
        Sample((A(v(1, 2, 4, 4, 4)), A(v(2, 1, 2, 2, 2), "S"), (2, 1, 1), ((0, 0), (1, 0), (0, 1)), (1, 2, 1), 2),
               desc="3-d, depthwise-ish groups, strided w"),
        Sample((A(v(0, 2, 5)), A(v(3, 2, 2)), (1,), ((0, 0),), (1,), 1), desc="empty batch"),
    ]


register(OpRecord("conv", "nn", FLOAT, _conv_samples, ref=conv_ref, tol=NN_TOL,
                  errors=[ErrorCase("conv1d with 3 input channels for a weight of 2",
                                    lambda T: _F().conv1d(T([[[1.0] * 5] * 3]), T([[[1.0, 1.0]] * 2])))],
                  doc="N-d cross-correlation with per-side zero padding, dilation and groups"))


def conv_weight_ref(x, gy, ks, stride, padding, dilation, groups):
    nd = x.ndim - 2
    xp = np.pad(x, [(0, 0), (0, 0)] + [tuple(p) for p in padding])
    C, O, out = x.shape[1], gy.shape[1], gy.shape[2:]
    Cg, Og = C // groups, O // groups
    gw = np.zeros((O, Cg) + tuple(ks))
    for off in np.ndindex(*ks):
        sl = tuple(slice(off[d] * dilation[d], off[d] * dilation[d] + (out[d] - 1) * stride[d] + 1, stride[d])
                   for d in range(nd))
        patch = xp[(slice(None), slice(None)) + sl]
        for g in range(groups):
            P = int(np.prod(out))
            a = gy[:, g * Og:(g + 1) * Og].reshape(gy.shape[0], Og, P)
            b = patch[:, g * Cg:(g + 1) * Cg].reshape(gy.shape[0], Cg, P)
            gw[(slice(g * Og, (g + 1) * Og), slice(None)) + off] = np.einsum("nop,ncp->oc", a, b)
    return gw


def _conv_weight_samples(dt, rng):
    v = lambda *s: values(rng, dt, s, -2, 2)  # noqa: E731
    return [
        Sample((A(v(2, 3, 7)), A(v(2, 4, 5)), (3,), (1,), ((0, 0),), (1,), 1), desc="1-d"),
        Sample((A(v(1, 2, 8)), A(v(1, 2, 5)), (2,), (2,), ((1, 2),), (2,), 1),
               desc="1-d, stride 2, padding (1, 2), dilation 2"),
        Sample((A(v(2, 4, 5, 5)), A(v(2, 4, 5, 2)), (3, 3), (1, 2), ((1, 1), (0, 1)), (1, 1), 2),
               desc="2-d, 2 groups"),
        Sample((A(v(2, 4, 5, 5)), A(v(2, 6, 3, 3)), (1, 1), (2, 2), ((0, 0), (0, 0)), (1, 1), 2),
               desc="2-d, 1x1 kernel, stride 2, 2 groups"),
        Sample((A(v(1, 2, 4, 6), "T"), A(v(1, 3, 3, 4), "T"), (2, 3), (1, 1), ((0, 0), (0, 0)), (1, 1), 1),
               desc="2-d, transposed x and gy"),
        Sample((A(v(1, 2, 4, 4, 4)), A(v(1, 2, 2, 3, 4)), (2, 2, 2), (2, 1, 1), ((0, 0), (1, 0), (0, 1)),
                (1, 2, 1), 2), desc="3-d, groups, dilation"),
        Sample((A(v(0, 2, 5)), A(v(0, 3, 4)), (2,), (1,), ((0, 0),), (1,), 1), desc="empty batch"),
    ]


register(OpRecord("conv_weight", "nn", FLOAT, _conv_weight_samples, ref=conv_weight_ref, tol=NN_TOL,
                  doc="the weight gradient of conv for an output gradient gy"))


def conv_transpose_ref(x, w, stride, padding, dilation, groups, out_size):
    nd = x.ndim - 2
    N, C = x.shape[:2]
    S, ks = x.shape[2:], w.shape[2:]
    Cg, Og = C // groups, w.shape[1]
    O = Og * groups
    full_size = tuple(max((S[d] - 1) * stride[d] + dilation[d] * (ks[d] - 1) + 1, padding[d] + out_size[d])
                      for d in range(nd))
    full = np.zeros((N, O) + full_size)
    for off in np.ndindex(*ks):
        sl = tuple(slice(off[d] * dilation[d], off[d] * dilation[d] + (S[d] - 1) * stride[d] + 1, stride[d])
                   for d in range(nd))
        for g in range(groups):
            wk = w[(slice(g * Cg, (g + 1) * Cg), slice(None)) + off]          # (Cg, Og)
            full[(slice(None), slice(g * Og, (g + 1) * Og)) + sl] += np.einsum(
                "nc...,co->no...", x[:, g * Cg:(g + 1) * Cg], wk)
    return full[(slice(None), slice(None)) + tuple(slice(p, p + o) for p, o in zip(padding, out_size))]


def _conv_t_samples(dt, rng):
    v = lambda *s: values(rng, dt, s, -2, 2)  # noqa: E731
    return [
        Sample((A(v(2, 3, 4)), A(v(3, 2, 3)), (1,), (0,), (1,), 1, (6,)), desc="1-d"),
        Sample((A(v(1, 2, 4)), A(v(2, 3, 2)), (2,), (1,), (1,), 1, (7,)), desc="1-d, stride 2, padding 1"),
        Sample((A(v(1, 2, 4)), A(v(2, 3, 2)), (2,), (0,), (1,), 1, (9,)), desc="1-d, output padding 1"),
        Sample((A(v(1, 4, 3, 3)), A(v(4, 1, 2, 2)), (2, 1), (0, 1), (1, 2), 2, (6, 3)), desc="2-d, 2 groups, dilation"),
        Sample((A(v(1, 2, 3, 2), "T"), A(v(2, 2, 2, 2)), (1, 1), (0, 0), (1, 1), 1, (4, 3)), desc="2-d, transposed x"),
        Sample((A(v(1, 2, 2, 2, 2)), A(v(2, 1, 2, 2, 2)), (1, 2, 1), (0, 0, 0), (1, 1, 1), 1, (3, 4, 3)), desc="3-d"),
    ]


register(OpRecord("conv_transpose", "nn", FLOAT, _conv_t_samples, ref=conv_transpose_ref, tol=NN_TOL,
                  doc="the adjoint of conv, cropped by padding to out_size"))


# -- pooling ---------------------------------------------------------------------------------------
def _positions(S, kernel, stride, padding, dilation, pos):
    """Row-major window slots of output position `pos`: (flat input index or None, in-input)."""
    out = []
    for j in np.ndindex(*kernel):
        coords = [pos[d] * stride[d] - padding[d] + j[d] * dilation[d] for d in range(len(S))]
        inside = all(0 <= c < n for c, n in zip(coords, S))
        out.append((int(np.ravel_multi_index(coords, S)) if inside else None, coords))
    return out


def max_pool_ref(x, kernel, stride, padding, dilation, out_size):
    N, C = x.shape[:2]
    S = x.shape[2:]
    vals = np.zeros((N, C) + tuple(out_size))
    idx = np.zeros((N, C) + tuple(out_size), dtype=np.int64)
    flat = x.reshape(N, C, -1)
    for pos in np.ndindex(*out_size):
        slots = [f for f, _ in _positions(S, kernel, stride, padding, dilation, pos) if f is not None]
        for n in range(N):
            for c in range(C):
                w = flat[n, c, slots]
                nan = np.isnan(w)
                k = int(np.argmax(nan)) if nan.any() else int(np.argmax(w))
                vals[(n, c) + pos] = w[k]
                idx[(n, c) + pos] = slots[k]
    return vals, idx


def pool_out(S, kernel, stride, padding, dilation=None, ceil=False):
    dilation = dilation or (1,) * len(S)
    out = []
    for n, k, s, p, d in zip(S, kernel, stride, padding, dilation):
        span = n + 2 * p - d * (k - 1) - 1
        o = (-(-span // s) if ceil else span // s) + 1
        if ceil and (o - 1) * s >= n + p:
            o -= 1
        out.append(o)
    return tuple(out)


def _pool_cases(dt, rng, with_dilation):
    v = lambda *s: values(rng, dt, s)  # noqa: E731
    cases = [
        (A(v(2, 3, 7)), (2,), (2,), (0,), (1,), False, "1-d, kernel 2 stride 2"),
        (A(v(1, 2, 7)), (3,), (2,), (1,), (2,) if with_dilation else (1,), True, "1-d, padding 1, ceil mode"),
        (A(v(1, 2, 5, 6), "T"), (2, 3), (1, 2), (1, 1), (1, 1), False, "2-d, transposed x"),
        (A(v(1, 1, 5, 5)), (3, 3), (2, 2), (1, 1), (2, 1) if with_dilation else (1, 1), True, "2-d, ceil mode"),
        (A(v(1, 2, 3, 4, 4), "S"), (2, 2, 2), (1, 2, 2), (0, 1, 0), (1, 1, 1), False, "3-d, strided x"),
    ]
    return cases


def _max_pool_samples(dt, rng):
    out = []
    for x, k, s, p, d, ceil, desc in _pool_cases(dt, rng, True):
        out.append(Sample((x, k, s, p, d, pool_out(x.value.shape[2:], k, s, p, d, ceil)), desc=desc))
    nanx = values(rng, dt, (1, 1, 6))
    nanx[0, 0, [1, 4]] = [np.nan, np.nan]
    out.append(Sample((A(nanx), (3,), (3,), (0,), (1,), (2,)), desc="NaN propagates (its index is returned)"))
    ties = np.array([[[1.0, 2.0, 2.0, 0.0, 2.0, 2.0]]], dtype=dt)
    out.append(Sample((A(ties), (3,), (2,), (1,), (1,), (3,)), desc="ties: the first maximum's index"))
    return out


register(OpRecord("max_pool", "nn", FLOAT, _max_pool_samples, ref=max_pool_ref, out_dtype=lambda dt, s: (dt, "int64"),
                  errors=[ErrorCase("max_pool1d with a kernel larger than the padded input",
                                    lambda T: _F().max_pool1d(T([[[1.0, 2.0]]]), 5), (RuntimeError, ValueError))],
                  doc="values and int64 flat indices of the first maximum; NaN propagates"))


def avg_pool_ref(x, kernel, stride, padding, out_size, count_include_pad, divisor_override):
    N, C = x.shape[:2]
    S = x.shape[2:]
    flat = x.reshape(N, C, -1)
    y = np.zeros((N, C) + tuple(out_size))
    for pos in np.ndindex(*out_size):
        slots = _positions(S, kernel, stride, padding, (1,) * len(S), pos)
        inside = [f for f, _ in slots if f is not None]
        if divisor_override:
            div = divisor_override
        elif count_include_pad:
            div = sum(all(-p <= c < n + p for c, n, p in zip(coords, S, padding)) for _, coords in slots)
        else:
            div = len(inside)
        y[(slice(None), slice(None)) + pos] = flat[:, :, inside].sum(axis=2) / div
    return y


def _avg_pool_samples(dt, rng):
    out = []
    for i, (x, k, s, p, d, ceil, desc) in enumerate(_pool_cases(dt, rng, False)):
        o = pool_out(x.value.shape[2:], k, s, p, None, ceil)
        out.append(Sample((x, k, s, p, o, True, None), desc=desc + ", count_include_pad"))
        out.append(Sample((A(x.value, x.layout), k, s, p, o, False, None), desc=desc + ", padding not counted"))
    x = A(values(rng, dt, (1, 2, 5)))
    out.append(Sample((x, (2,), (2,), (1,), (3,), True, 3), desc="divisor_override 3"))
    return out


register(OpRecord("avg_pool", "nn", FLOAT, _avg_pool_samples, ref=avg_pool_ref, tol=NN_TOL,
                  doc="window sums divided by divisor_override, or the count of positions (with or without padding)"))


# -- batch_norm ------------------------------------------------------------------------------------
def batch_norm_ref(x, weight, bias, mean, var, eps):
    axes = (0,) + tuple(range(2, x.ndim))
    bshape = (1, x.shape[1]) + (1,) * (x.ndim - 2)
    if mean is None:
        mean = x.mean(axis=axes)
        var = ((x - mean.reshape(bshape)) ** 2).mean(axis=axes)
    y = (x - mean.reshape(bshape)) / np.sqrt(var.reshape(bshape) + eps)
    if weight is not None:
        y = y * weight.reshape(bshape)
    if bias is not None:
        y = y + bias.reshape(bshape)
    return y, mean, var


def _bn_samples(dt, rng):
    v = lambda *s, lo=-3, hi=3: values(rng, dt, s, lo, hi)  # noqa: E731
    w, b = A(v(3)), A(v(3))
    return [
        Sample((A(v(4, 3)), w, b, None, None, 1e-5), desc="(N, C), batch statistics"),
        Sample((A(v(2, 3, 5)), None, None, None, None, 1e-3), desc="(N, C, L), no weight or bias"),
        Sample((A(v(2, 3, 2, 2), "T"), w, None, None, None, 1e-5), desc="(N, C, H, W) transposed, weight only"),
        Sample((A(v(2, 3, 4)), w, b, A(v(3)), A(v(3, lo=0.5, hi=2)), 1e-5), desc="given mean and var"),
        Sample((A(v(1, 3, 4), "S"), None, b, A(v(3)), A(v(3, lo=0.5, hi=2)), 0.1), desc="given statistics, strided x"),
        Sample((A(v(5, 3)), w, b, None, None, 1e-5), desc="(N, C)"),
    ]


register(OpRecord("batch_norm", "nn", FLOAT, _bn_samples, ref=batch_norm_ref, tol=NN_TOL,
                  errors=[ErrorCase("batch_norm with a weight of the wrong size",
                                    lambda T: _F().batch_norm(T([[1.0, 2.0], [3.0, 4.0]]), None, None,
                                                              T([1.0, 2.0, 3.0]), training=True),
                                    (RuntimeError, ValueError))],
                  doc="normalizes over every axis but 1; returns (y, mean, var)"))


# -- embedding_bag ---------------------------------------------------------------------------------
def embedding_bag_ref(weight, idx, offsets, weights, mode):
    n, B, D = idx.shape[0], offsets.shape[0], weight.shape[1]
    bounds = list(offsets) + [n]
    out = np.zeros((B, D))
    count = np.zeros(B, dtype=np.int64)
    arg = np.zeros((B, D), dtype=np.int64) if mode == "max" else None
    for b in range(B):
        members = list(range(bounds[b], bounds[b + 1]))
        count[b] = len(members)
        if not members:
            continue
        rows = np.stack([weight[idx[i]] * (weights[i] if weights is not None else 1.0) for i in members])
        if mode == "max":
            for d in range(D):
                col = rows[:, d]
                nan = np.isnan(col)
                k = int(np.argmax(nan)) if nan.any() else int(np.argmax(col))
                out[b, d], arg[b, d] = col[k], members[k]
        else:
            out[b] = rows.sum(axis=0) / (len(members) if mode == "mean" else 1)
    return out, count, arg


def _eb_samples(dt, rng):
    w = lambda: A(values(rng, dt, (5, 3)))  # noqa: E731

    def i(*v):
        return A(np.array(v, dtype=np.int64))
    out = []
    for mode in ("sum", "mean", "max"):
        out += [
            Sample((w(), i(0, 2, 2, 4, 1), i(0, 2, 2), None, mode), desc=f"{mode}: an empty middle bag, repeats"),
            Sample((A(values(rng, dt, (3, 5)).T.copy(), "T"), i(4, 0, 1), i(0, 3, 3), None, mode),
                   desc=f"{mode}: transposed weight, an empty last bag"),
            Sample((w(), A(np.zeros(0, np.int64)), i(0, 0), None, mode), desc=f"{mode}: no elements"),
        ]
    out.append(Sample((w(), i(1, 3, 3, 0), i(0, 1), A(values(rng, dt, (4,))), "sum"), desc="per-element weights"))
    nanw = values(rng, dt, (4, 2))
    nanw[2, 1] = np.nan
    out.append(Sample((A(nanw), i(0, 2, 1, 3), i(0, 2), None, "max"), desc="max: NaN propagates"))
    tie = np.array([[1.0, 5.0], [1.0, 5.0], [0.0, 5.0]], dtype=dt)
    out.append(Sample((A(tie), i(2, 0, 1), i(0,), None, "max"), desc="max: ties give the first position"))
    return out


def _eb_dtypes(dt, sample):
    return (dt, "int64", "int64" if sample.args[4] == "max" else None)


register(OpRecord("embedding_bag", "nn", FLOAT, _eb_samples, ref=embedding_bag_ref, out_dtype=_eb_dtypes,
                  tol=NN_TOL, doc="bag sums / means / maxima with counts and the maxima's positions"))
