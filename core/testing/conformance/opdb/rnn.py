"""Records of the optional kernels of the recurrent family (tensorplug.dispatch.optional_rnn):
rnn_layer and rnn_layer_backward. References run each sequence of the packed batch on its own,
one float64 vector step at a time (forward, and the chain rule backwards through the steps)."""
from __future__ import annotations

import numpy as np

from ._base import FLOAT, A, OpRecord, Sample, register, values

RNN_TOL = {"float16": (2e-2, 2e-2), "bfloat16": (1e-1, 1e-1), "float32": (1e-5, 1e-5), "float64": (1e-10, 1e-11)}
_G = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


def _sig(a):
    return 1 / (1 + np.exp(-a))


def _sequences(batch_sizes, reverse):
    """For each sequence, its packed rows in the order its steps run."""
    offs = np.concatenate([[0], np.cumsum(batch_sizes)[:-1]]).astype(int)
    seqs = []
    for b in range(batch_sizes[0]):
        rows = [int(offs[t]) + b for t in range(len(batch_sizes)) if batch_sizes[t] > b]
        seqs.append(rows[::-1] if reverse else rows)
    return seqs


def rnn_layer_ref(mode, x, h0, c0, w_hh, b_hh, w_hr, batch_sizes, reverse):
    H = w_hh.shape[0] // _G[mode]
    rows = x.shape[0]
    bias = np.zeros(w_hh.shape[0]) if b_hh is None else b_hh
    out, gates, cells = np.zeros((rows, h0.shape[1])), np.zeros((rows, w_hh.shape[0])), np.zeros((rows, H))
    hn, cn = np.zeros(h0.shape), None if c0 is None else np.zeros(c0.shape)
    for b, seq in enumerate(_sequences(batch_sizes, reverse)):
        h = h0[b]
        c = None if c0 is None else c0[b]
        for r in seq:
            gh = w_hh @ h + bias
            if mode == "LSTM":
                a = x[r] + gh
                i, f, g, o = _sig(a[:H]), _sig(a[H:2 * H]), np.tanh(a[2 * H:3 * H]), _sig(a[3 * H:])
                c = f * c + i * g
                h = o * np.tanh(c)
                if w_hr is not None:
                    h = w_hr @ h
                gates[r], cells[r] = np.concatenate([i, f, g, o]), c
            elif mode == "GRU":
                rr, z = _sig(x[r][:H] + gh[:H]), _sig(x[r][H:2 * H] + gh[H:2 * H])
                n = np.tanh(x[r][2 * H:] + rr * gh[2 * H:])
                h = (1 - z) * n + z * h
                gates[r], cells[r] = np.concatenate([rr, z, n]), gh[2 * H:]
            else:
                a = x[r] + gh
                h = np.tanh(a) if mode == "RNN_TANH" else np.maximum(a, 0)
            out[r] = h
        hn[b] = h
        if c0 is not None:
            cn[b] = c
    if mode in ("LSTM", "GRU"):
        return out, hn, cn, gates, cells
    return out, hn, None, None, None


def rnn_layer_backward_ref(mode, d_out, d_hn, d_cn, h0, c0, w_hh, w_hr, out, gates, cells, batch_sizes, reverse):
    H = w_hh.shape[0] // _G[mode]
    dx = np.zeros((d_out.shape[0], w_hh.shape[0]))
    dh0, dc0 = np.zeros(h0.shape), None if c0 is None else np.zeros(c0.shape)
    dw_hh, db_hh = np.zeros(w_hh.shape), np.zeros(w_hh.shape[0])
    dw_hr = None if w_hr is None else np.zeros(w_hr.shape)
    for b, seq in enumerate(_sequences(batch_sizes, reverse)):
        dh = d_hn[b].copy()
        dc = None if c0 is None else d_cn[b].copy()
        for k in range(len(seq) - 1, -1, -1):
            r = seq[k]
            hp = h0[b] if k == 0 else out[seq[k - 1]]
            dh = dh + d_out[r]
            if mode == "LSTM":
                cp = c0[b] if k == 0 else cells[seq[k - 1]]
                i, f, g, o = (gates[r][j * H:(j + 1) * H] for j in range(4))
                tc = np.tanh(cells[r])
                if w_hr is not None:
                    dw_hr += np.outer(dh, o * tc)
                    dm = w_hr.T @ dh
                else:
                    dm = dh
                dc = dc + dm * o * (1 - tc ** 2)
                da = np.concatenate([dc * g * i * (1 - i), dc * cp * f * (1 - f), dc * i * (1 - g ** 2),
                                     dm * tc * o * (1 - o)])
                dx[r], dgh = da, da
                dc = dc * f
                dh = w_hh.T @ da
            elif mode == "GRU":
                rr, z, n = (gates[r][j * H:(j + 1) * H] for j in range(3))
                dnp = dh * (1 - z) * (1 - n ** 2)
                drp = dnp * cells[r] * rr * (1 - rr)
                dzp = dh * (hp - n) * z * (1 - z)
                dx[r] = np.concatenate([drp, dzp, dnp])
                dgh = np.concatenate([drp, dzp, dnp * rr])
                dh = dh * z + w_hh.T @ dgh
            else:
                h = out[r]
                dgh = dh * ((1 - h ** 2) if mode == "RNN_TANH" else (h > 0))
                dx[r] = dgh
                dh = w_hh.T @ dgh
            dw_hh += np.outer(dgh, hp)
            db_hh += dgh
        dh0[b] = dh
        if c0 is not None:
            dc0[b] = dc
    return dx, dh0, dc0, dw_hh, db_hh, dw_hr


# (mode, batch_sizes, H, proj size or 0, GRU's b_hh, reverse, x's layout)
_CASES = [
    ("LSTM", (2, 2, 2), 3, 0, False, False, "C"),
    ("LSTM", (3, 2, 1), 2, 0, False, True, "T"),
    ("LSTM", (2, 2, 1), 3, 2, False, False, "C"),
    ("GRU", (2, 2, 2), 3, 0, True, False, "C"),
    ("GRU", (3, 3, 1), 2, 0, True, True, "S"),
    ("GRU", (2, 1), 2, 0, False, False, "C"),
    ("RNN_TANH", (2, 2, 1), 3, 0, True, True, "C"),
    ("RNN_RELU", (3, 2, 2), 2, 0, False, False, "T"),
]


def _case_arrays(dt, rng, mode, bsz, H, proj, bias):
    G, B, rows = _G[mode], bsz[0], sum(bsz)
    P = proj or H
    v = lambda *s, lo=-1.5, hi=1.5: values(rng, dt, s, lo, hi)  # noqa: E731
    x, h0 = v(rows, G * H), v(B, P)
    c0 = v(B, H) if mode == "LSTM" else None
    w_hh = v(G * H, P, lo=-0.8, hi=0.8)
    b_hh = v(G * H) if bias else None
    w_hr = v(P, H, lo=-0.8, hi=0.8) if proj else None
    return x, h0, c0, w_hh, b_hh, w_hr


def _a(v, layout="C"):
    return None if v is None else A(v, layout)


def _fwd_samples(dt, rng):
    out = []
    for mode, bsz, H, proj, bias, rev, lay in _CASES:
        x, h0, c0, w_hh, b_hh, w_hr = _case_arrays(dt, rng, mode, bsz, H, proj, bias)
        out.append(Sample((mode, A(x, lay), A(h0), _a(c0), A(w_hh), _a(b_hh), _a(w_hr), bsz, rev),
                          desc=f"{mode} batch_sizes {bsz}{' reverse' if rev else ''}{f' proj {proj}' if proj else ''}"))
    return out


def _bwd_samples(dt, rng):
    out = []
    for mode, bsz, H, proj, bias, rev, lay in _CASES:
        x, h0, c0, w_hh, b_hh, w_hr = _case_arrays(dt, rng, mode, bsz, H, proj, bias)
        f64 = lambda a: None if a is None else a.astype(np.float64)  # noqa: E731
        fw = rnn_layer_ref(mode, *map(f64, (x, h0, c0, w_hh, b_hh, w_hr)), bsz, rev)
        cast = lambda a: None if a is None else np.asarray(a).astype(dt)  # noqa: E731
        o, gates, cells = cast(fw[0]), cast(fw[3]), cast(fw[4])
        d_out, d_hn = values(rng, dt, o.shape, -1, 1), values(rng, dt, h0.shape, -1, 1)
        d_cn = values(rng, dt, c0.shape, -1, 1) if c0 is not None else None
        out.append(Sample((mode, A(d_out, lay), A(d_hn), _a(d_cn), A(h0), _a(c0), A(w_hh), _a(w_hr), A(o),
                           _a(gates), _a(cells), bsz, rev),
                          desc=f"{mode} batch_sizes {bsz}{' reverse' if rev else ''}{f' proj {proj}' if proj else ''}"))
    return out


register(OpRecord("rnn_layer", "nn", FLOAT, _fwd_samples, ref=rnn_layer_ref, tol=RNN_TOL,
                  doc="one recurrent layer direction over packed rows; returns (out, h_n, c_n, gates, cells)"))
register(OpRecord("rnn_layer_backward", "nn", FLOAT, _bwd_samples, ref=rnn_layer_backward_ref, tol=RNN_TOL,
                  doc="BPTT of rnn_layer; returns (dx, dh0, dc0, dw_hh, db_hh, dw_hr)"))
