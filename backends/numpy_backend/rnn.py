"""NumPy native kernels of the recurrent family (specs in tensorplug.dispatch.optional_rnn).

The whole recurrence of a layer direction runs here, on preallocated outputs written in place: per
step one GEMM for the hidden projection of all gates and a few in-place ufuncs (sigmoid as
0.5 tanh(x / 2) + 0.5, so that one tanh covers all four LSTM gates). The backward precomputes every
factor that does not depend on the recurrence for all rows at once, leaving per step one GEMM and
two or three ufuncs, and gets the weight gradients from one GEMM over all rows. With numba, a float32
LSTM step is one GEMM and one loop (rnn_loops.py) each way, the backward's factors computed inside it. float16 and
bfloat16 run in float32 and round once at the end.
"""
from __future__ import annotations

import numpy as np

from . import rnn_loops

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


def _acc(dtype):
    return dtype if dtype in (np.float32, np.float64) else np.dtype(np.float32)


def _up(a, acc):
    return None if a is None else np.asarray(a, dtype=acc)


def _down(a, dtype):
    return None if a is None else np.asarray(a.astype(dtype, copy=False))


def _offsets(batch_sizes):
    offs = np.zeros(len(batch_sizes) + 1, dtype=np.int64)
    np.cumsum(batch_sizes, out=offs[1:])
    return offs.tolist()


def _prev_rows(seq, init, batch_sizes, offs, reverse):
    """(rows, ·): the state each row's step started from (see optional_rnn._prev)."""
    prev = np.empty_like(seq)
    n = len(batch_sizes)
    full = all(b == batch_sizes[0] for b in batch_sizes)
    if full:                                  # one shifted copy for a padded batch
        b = batch_sizes[0]
        if reverse:
            prev[:-b], prev[-b:] = seq[b:], init
        else:
            prev[:b], prev[b:] = init, seq[:-b]
        return prev
    for t in range(n):
        bs, o = batch_sizes[t], offs[t]
        first = t == n - 1 if reverse else t == 0
        if first:
            prev[o:o + bs] = init[:bs]
            continue
        p = t + 1 if reverse else t - 1
        k = min(bs, batch_sizes[p])
        prev[o:o + k] = seq[offs[p]:offs[p] + k]
        if k < bs:
            prev[o + k:o + bs] = init[k:bs]
    return prev


def _sigmoid_(a):
    a *= 0.5
    np.tanh(a, out=a)
    a *= 0.5
    a += 0.5


def rnn_layer(mode, x, h0, c0, w_hh, b_hh, w_hr, batch_sizes, reverse):
    dtype = x.dtype
    acc = _acc(dtype)
    x, h0, c0, w_hh, b_hh, w_hr = (_up(a, acc) for a in (x, h0, c0, w_hh, b_hh, w_hr))
    G = _GATES[mode]
    H = w_hh.shape[0] // G
    P = h0.shape[1]
    rows = x.shape[0]
    offs = _offsets(batch_sizes)
    wt = np.ascontiguousarray(w_hh.T)          # h @ wt: BLAS is faster on a contiguous right operand
    wrt = None if w_hr is None else np.ascontiguousarray(w_hr.T)
    h = np.array(h0, dtype=acc)
    out = np.empty((rows, P), dtype=acc)
    lstm, gru = mode == "LSTM", mode == "GRU"
    gates = np.empty((rows, G * H), dtype=acc) if (lstm or gru) else None
    cells = np.empty((rows, H), dtype=acc) if (lstm or gru) else None
    c = np.array(c0, dtype=acc) if lstm else None
    loops = rnn_loops.kernels() if lstm and acc == np.float32 else None
    if loops is not None:
        cell = loops["lstm_cell"]
        bias = np.empty(0, acc) if b_hh is None else np.ascontiguousarray(b_hh)
        pre = None if wrt is None else np.empty((h.shape[0], H), dtype=acc)
    if lstm and loops is None:
        scale = np.full(G * H, 0.5, dtype=acc)
        scale[2 * H:3 * H] = 1.0
    for t in (range(len(batch_sizes) - 1, -1, -1) if reverse else range(len(batch_sizes))):
        bs, o = batch_sizes[t], offs[t]
        xt, ht, ot = x[o:o + bs], h[:bs], out[o:o + bs]
        if loops is not None:                       # one loop for the step's pointwise work
            g = gates[o:o + bs]
            np.matmul(ht, wt, out=g)
            if wrt is None:
                cell(g, xt, bias, c[:bs], cells[o:o + bs], ot)
            else:
                cell(g, xt, bias, c[:bs], cells[o:o + bs], pre[:bs])
                np.matmul(pre[:bs], wrt, out=ot)
        elif lstm:
            g = gates[o:o + bs]
            np.matmul(ht, wt, out=g)
            g += xt
            if b_hh is not None:
                g += b_hh
            g *= scale                              # i, f, o: sigmoid through tanh; g: tanh
            np.tanh(g, out=g)
            g[:, :2 * H] *= 0.5
            g[:, :2 * H] += 0.5
            g[:, 3 * H:] *= 0.5
            g[:, 3 * H:] += 0.5
            i, f, gg, og = g[:, :H], g[:, H:2 * H], g[:, 2 * H:3 * H], g[:, 3 * H:]
            cn = cells[o:o + bs]
            np.multiply(f, c[:bs], out=cn)
            cn += i * gg
            c[:bs] = cn
            if wrt is None:
                np.tanh(cn, out=ot)
                ot *= og
            else:
                np.matmul(og * np.tanh(cn), wrt, out=ot)
        elif gru:
            gh = ht @ wt
            if b_hh is not None:
                gh += b_hh
            g = gates[o:o + bs]
            np.add(xt[:, :2 * H], gh[:, :2 * H], out=g[:, :2 * H])
            _sigmoid_(g[:, :2 * H])
            r, z, nn = g[:, :H], g[:, H:2 * H], g[:, 2 * H:]
            cells[o:o + bs] = gh[:, 2 * H:]
            np.multiply(r, gh[:, 2 * H:], out=nn)
            nn += xt[:, 2 * H:]
            np.tanh(nn, out=nn)
            np.subtract(ht, nn, out=ot)             # h' = n + z (h - n)
            ot *= z
            ot += nn
        else:
            np.matmul(ht, wt, out=ot)
            ot += xt
            if b_hh is not None:
                ot += b_hh
            if mode == "RNN_TANH":
                np.tanh(ot, out=ot)
            else:
                np.maximum(ot, 0, out=ot)
        ht[...] = ot
    return (_down(out, dtype), _down(h, dtype), _down(c, dtype), _down(gates, dtype), _down(cells, dtype))


def _lstm_steps_backward(order, batch_sizes, offs, d_out, dh, dc, dx, gates, cells, cp, out, w_hh, w_hr, H):
    """The LSTM recurrence backward in ufuncs (no numba, float64, or a projection): the factors that do
    not depend on the recurrence for all rows at once, then per step one GEMM and a few ufuncs; dh, dc
    and dx filled in place. Returns the projection's weight gradient (None without one)."""
    rows = dx.shape[0]
    i, f, g, o = (gates[:, j * H:(j + 1) * H] for j in range(4))
    tc = np.tanh(cells)
    a = o * (1 - tc * tc)                               # dc' / dm through h = o tanh(c)
    coef = np.empty((rows, 3, H), dtype=dx.dtype)       # d(i, f, g) pre-activation / dc'
    np.multiply(g, i * (1 - i), out=coef[:, 0])
    np.multiply(cp, f * (1 - f), out=coef[:, 1])
    np.multiply(i, 1 - g * g, out=coef[:, 2])
    co = tc * o * (1 - o)                               # d(o) pre-activation / dm
    dm_all = np.empty((rows, H), dtype=dx.dtype) if w_hr is not None else None
    dht_all = np.empty_like(out) if w_hr is not None else None
    dx3 = dx.reshape(rows, 4, H)
    for t in order:
        bs, s = batch_sizes[t], slice(offs[t], offs[t] + batch_sizes[t])
        dht = dh[:bs]
        dht += d_out[s]
        if w_hr is None:
            dm = dht
        else:
            dht_all[s] = dht
            dm = dm_all[s]
            np.matmul(dht, w_hr, out=dm)
        dct = dc[:bs]
        dct += dm * a[s]
        np.multiply(dct[:, None, :], coef[s], out=dx3[s, :3])
        np.multiply(dm, co[s], out=dx3[s, 3])
        dct *= f[s]
        np.matmul(dx[s], w_hh, out=dht)
    return None if w_hr is None else dht_all.T @ (o * tc)


def rnn_layer_backward(mode, d_out, d_hn, d_cn, h0, c0, w_hh, w_hr, out, gates, cells, batch_sizes, reverse):
    dtype = d_out.dtype
    acc = _acc(dtype)
    d_out, h0, c0, w_hh, w_hr, out, gates, cells = (
        _up(a, acc) for a in (d_out, h0, c0, w_hh, w_hr, out, gates, cells))
    G = _GATES[mode]
    H = w_hh.shape[0] // G
    rows = d_out.shape[0]
    offs = _offsets(batch_sizes)
    order = range(len(batch_sizes)) if reverse else range(len(batch_sizes) - 1, -1, -1)
    hp = _prev_rows(out, h0, batch_sizes, offs, reverse)
    dh = np.array(d_hn, dtype=acc)
    dx = np.empty((rows, G * H), dtype=acc)
    dc = dw_hr = None
    if mode == "LSTM":
        dc = np.array(d_cn, dtype=acc)
        cp = _prev_rows(cells, c0, batch_sizes, offs, reverse)
        loops = rnn_loops.kernels() if acc == np.float32 and w_hr is None else None
        if loops is not None:                       # per step one loop for all the pointwise work
            cell_backward = loops["lstm_cell_backward"]
            for t in order:
                bs, s = batch_sizes[t], slice(offs[t], offs[t] + batch_sizes[t])
                dht = dh[:bs]
                cell_backward(dht, d_out[s], dc[:bs], gates[s], cells[s], cp[s], dx[s])
                np.matmul(dx[s], w_hh, out=dht)
        else:
            dw_hr = _lstm_steps_backward(order, batch_sizes, offs, d_out, dh, dc, dx, gates, cells, cp, out,
                                         w_hh, w_hr, H)
        dgh = dx
    elif mode == "GRU":
        r, z, nn = (gates[:, j * H:(j + 1) * H] for j in range(3))
        cn = (1 - z) * (1 - nn * nn)                        # dn pre-activation / dh'
        coef = np.empty((rows, 3, H), dtype=acc)            # dgh / dh' (n block: times r)
        np.multiply(cn * cells, r * (1 - r), out=coef[:, 0])
        np.multiply(hp - nn, z * (1 - z), out=coef[:, 1])
        np.multiply(cn, r, out=coef[:, 2])
        dgh = np.empty((rows, G * H), dtype=acc)
        dgh3 = dgh.reshape(rows, 3, H)
        dht_all = np.empty_like(out)
        for t in order:
            bs, s = batch_sizes[t], slice(offs[t], offs[t] + batch_sizes[t])
            dht = dh[:bs]
            dht += d_out[s]
            dht_all[s] = dht
            np.multiply(dht[:, None, :], coef[s], out=dgh3[s])
            dht *= z[s]
            dht += dgh[s] @ w_hh
        dx[:, :2 * H] = dgh[:, :2 * H]
        np.multiply(dht_all, cn, out=dx[:, 2 * H:])
    else:
        coef = 1 - out * out if mode == "RNN_TANH" else (out > 0).astype(acc)
        for t in order:
            bs, s = batch_sizes[t], slice(offs[t], offs[t] + batch_sizes[t])
            dht = dh[:bs]
            dht += d_out[s]
            np.multiply(dht, coef[s], out=dx[s])
            np.matmul(dx[s], w_hh, out=dht)
        dgh = dx
    dw_hh = dgh.T @ hp
    db_hh = dgh.sum(0)
    return (_down(dx, dtype), _down(dh, dtype), _down(dc, dtype), _down(dw_hh, dtype), _down(db_hh, dtype),
            _down(dw_hr, dtype))


def build() -> dict:
    return {"rnn_layer": rnn_layer, "rnn_layer_backward": rnn_layer_backward}
