"""Optional kernels of the recurrent family: one layer direction of RNN / LSTM / GRU, forward and BPTT.

Each kernel named in OPTIONAL has a decomposition: a function of the same name here taking the
kernel table K first. A backend may provide the kernel natively instead.

The frontend computes the input projections of all time steps with one matrix product and hands
them to `rnn_layer` as `x`; the kernel runs the recurrence (the per-step hidden product and the gate
math). Rows are packed time-major: block t holds `batch_sizes[t]` rows (non-increasing; a padded
batch is the case where every block has the whole batch), the rows of sequence b are the b-th row
of every block it reaches. `rnn_layer_backward` is the matching BPTT; the frontend uses it only for
first-order gradients (its create_graph path differentiates the same recurrence written in Tensor
ops), so a backend never writes a higher-order rule.

Gate layouts are PyTorch's: LSTM (i, f, g, o), GRU (r, z, n), with G = 4, 3, 1 blocks of H columns.
"""
from __future__ import annotations

_MODES = "mode is 'RNN_TANH', 'RNN_RELU', 'LSTM' or 'GRU'"

OPTIONAL: dict[str, str] = {
    "rnn_layer": (
        "rnn_layer(mode, x, h0, c0, w_hh, b_hh, w_hr, batch_sizes, reverse) -> (out, h_n, c_n, gates, cells): "
        f"one layer direction of a recurrent net; {_MODES}. x (rows, G*H) the input projections (biases "
        "included); batch_sizes a tuple of non-increasing positive ints summing to rows; h0 (B, P) with "
        "B = batch_sizes[0] (P = H, or the projection size with w_hr); c0 (B, H) for LSTM else None; "
        "w_hh (G*H, P); b_hh (G*H,) or None, added to h w_hh^T every step; w_hr (P, H) or None (LSTM "
        "only: h = (o * tanh(c)) w_hr^T). Steps run in time order, or from the last block to the first "
        "when reverse; step t updates the first batch_sizes[t] rows of the state (RNN: h' = act(x_t + "
        "h w_hh^T + b_hh); LSTM: c' = sig(f) c + sig(i) tanh(g), h' = sig(o) tanh(c'); GRU: r, z = "
        "sig(.), n = tanh(x_n + r (h w_hn^T + b_hn)), h' = n + z (h - n)). Returns out (rows, P) the "
        "new h of each row, h_n (B, P) and c_n (B, H, LSTM else None) the state after the last step of "
        "each sequence, gates (rows, G*H) the activated gates (LSTM, GRU; None for RNN) and cells "
        "(rows, H): LSTM the new c of each row, GRU h w_hn^T + b_hn, RNN None"),
    "rnn_layer_backward": (
        "rnn_layer_backward(mode, d_out, d_hn, d_cn, h0, c0, w_hh, w_hr, out, gates, cells, batch_sizes, "
        "reverse) -> (dx, dh0, dc0, dw_hh, db_hh, dw_hr): the gradients of rnn_layer (same arguments; "
        "out, gates, cells as it returned them) given d_out (rows, P), d_hn (B, P), d_cn (B, H, LSTM "
        "else None): dx (rows, G*H) w.r.t. x, dh0 (B, P), dc0 (B, H, LSTM else None), dw_hh (G*H, P), "
        "db_hh (G*H,) w.r.t. b_hh (GRU's differs from the column sums of dx in its n block), dw_hr "
        "(P, H) with w_hr, else None"),
}

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


def _dt(x):
    return x.dtype.name if hasattr(x.dtype, "name") else str(x.dtype)


def _offsets(batch_sizes):
    offs, o = [], 0
    for b in batch_sizes:
        offs.append(o)
        o += b
    return offs


def _rows(K, a, start, n):
    return K["slice"](a, (slice(start, start + n),))


def _cols(K, a, j, h):
    return K["slice"](a, (slice(None), slice(j * h, (j + 1) * h)))


def _set_rows(K, state, new, bs):
    """The state with its first bs rows replaced by new."""
    if bs == state.shape[0]:
        return new
    return K["concat"]([new, K["slice"](state, (slice(bs, None),))], 0)


def _sub1(K, a):            # 1 - a
    return K["add"](K["neg"](a), 1.0)


def rnn_layer(K, mode, x, h0, c0, w_hh, b_hh, w_hr, batch_sizes, reverse):
    G = _GATES[mode]
    H = w_hh.shape[0] // G
    n = len(batch_sizes)
    offs = _offsets(batch_sizes)
    wt = K["permute"](w_hh, (1, 0))
    wrt = None if w_hr is None else K["permute"](w_hr, (1, 0))
    h, c = h0, c0
    outs, gates, cells = [None] * n, [None] * n, [None] * n
    for t in (range(n - 1, -1, -1) if reverse else range(n)):
        bs = batch_sizes[t]
        xt = _rows(K, x, offs[t], bs)
        gh = K["matmul"](_rows(K, h, 0, bs), wt)
        if b_hh is not None:
            gh = K["add"](gh, b_hh)
        if mode == "GRU":
            r = K["sigmoid"](K["add"](_cols(K, xt, 0, H), _cols(K, gh, 0, H)))
            z = K["sigmoid"](K["add"](_cols(K, xt, 1, H), _cols(K, gh, 1, H)))
            ghn = _cols(K, gh, 2, H)
            nn = K["tanh"](K["add"](_cols(K, xt, 2, H), K["mul"](r, ghn)))
            hn = K["add"](nn, K["mul"](z, K["sub"](_rows(K, h, 0, bs), nn)))
            gates[t], cells[t] = K["concat"]([r, z, nn], 1), ghn
        elif mode == "LSTM":
            pre = K["add"](xt, gh)
            i, f, o = (K["sigmoid"](_cols(K, pre, j, H)) for j in (0, 1, 3))
            g = K["tanh"](_cols(K, pre, 2, H))
            cn = K["add"](K["mul"](f, _rows(K, c, 0, bs)), K["mul"](i, g))
            hn = K["mul"](o, K["tanh"](cn))
            if wrt is not None:
                hn = K["matmul"](hn, wrt)
            gates[t], cells[t] = K["concat"]([i, f, g, o], 1), cn
            c = _set_rows(K, c, cn, bs)
        else:
            pre = K["add"](xt, gh)
            hn = K["tanh"](pre) if mode == "RNN_TANH" else K["maximum"](pre, 0.0)
        outs[t] = hn
        h = _set_rows(K, h, hn, bs)
    out = K["concat"](outs, 0)
    if mode == "LSTM" or mode == "GRU":
        return out, h, c, K["concat"](gates, 0), K["concat"](cells, 0)
    return out, h, None, None, None


def _prev(K, seq, init, offs, batch_sizes, t, reverse):
    """The state rows step t started from: the previous step's rows, then (reverse) the initial
    state of the sequences that start at t."""
    bs = batch_sizes[t]
    first = t == len(batch_sizes) - 1 if reverse else t == 0
    if first:
        return _rows(K, init, 0, bs)
    p = t + 1 if reverse else t - 1
    prev = _rows(K, seq, offs[p], min(bs, batch_sizes[p]))
    if batch_sizes[p] < bs:
        prev = K["concat"]([prev, K["slice"](init, (slice(batch_sizes[p], bs),))], 0)
    return prev


def rnn_layer_backward(K, mode, d_out, d_hn, d_cn, h0, c0, w_hh, w_hr, out, gates, cells, batch_sizes,
                       reverse):
    G = _GATES[mode]
    H = w_hh.shape[0] // G
    n = len(batch_sizes)
    offs = _offsets(batch_sizes)
    dh, dc = d_hn, d_cn
    dxs, dghs, hps, dhs = [None] * n, [None] * n, [None] * n, [None] * n
    for t in (range(n) if reverse else range(n - 1, -1, -1)):
        bs = batch_sizes[t]
        hp = _prev(K, out, h0, offs, batch_sizes, t, reverse)
        dht = K["add"](_rows(K, dh, 0, bs), _rows(K, d_out, offs[t], bs))
        if mode == "LSTM":
            g_t, c_t = _rows(K, gates, offs[t], bs), _rows(K, cells, offs[t], bs)
            i, f, g, o = (_cols(K, g_t, j, H) for j in range(4))
            cp = _prev(K, cells, c0, offs, batch_sizes, t, reverse)
            tc = K["tanh"](c_t)
            dhs[t] = dht
            dm = dht if w_hr is None else K["matmul"](dht, w_hr)
            dct = K["add"](_rows(K, dc, 0, bs), K["mul"](K["mul"](dm, o), _sub1(K, K["mul"](tc, tc))))
            dx = K["concat"]([K["mul"](K["mul"](dct, g), K["mul"](i, _sub1(K, i))),
                              K["mul"](K["mul"](dct, cp), K["mul"](f, _sub1(K, f))),
                              K["mul"](K["mul"](dct, i), _sub1(K, K["mul"](g, g))),
                              K["mul"](K["mul"](dm, tc), K["mul"](o, _sub1(K, o)))], 1)
            dgh = dx
            dc = _set_rows(K, dc, K["mul"](dct, f), bs)
            dprev = None
        elif mode == "GRU":
            g_t = _rows(K, gates, offs[t], bs)
            r, z, nn = (_cols(K, g_t, j, H) for j in range(3))
            ghn = _rows(K, cells, offs[t], bs)
            dnp = K["mul"](K["mul"](dht, _sub1(K, z)), _sub1(K, K["mul"](nn, nn)))
            drp = K["mul"](K["mul"](dnp, ghn), K["mul"](r, _sub1(K, r)))
            dzp = K["mul"](K["mul"](dht, K["sub"](hp, nn)), K["mul"](z, _sub1(K, z)))
            dx = K["concat"]([drp, dzp, dnp], 1)
            dgh = K["concat"]([drp, dzp, K["mul"](dnp, r)], 1)
            dprev = K["mul"](dht, z)
        else:
            h_t = _rows(K, out, offs[t], bs)
            if mode == "RNN_TANH":
                dx = K["mul"](dht, _sub1(K, K["mul"](h_t, h_t)))
            else:
                dx = K["where"](K["lt"](0.0, h_t), dht, K["full"]((), 0, _dt(dht)))
            dgh, dprev = dx, None
        dxs[t], dghs[t], hps[t] = dx, dgh, hp
        back = K["matmul"](dgh, w_hh)
        dh = _set_rows(K, dh, back if dprev is None else K["add"](back, dprev), bs)
    dx_all, dgh_all = K["concat"](dxs, 0), K["concat"](dghs, 0)
    dw_hh = K["matmul"](K["permute"](dgh_all, (1, 0)), K["concat"](hps, 0))
    db_hh = K["sum"](dgh_all, (0,), False)
    dw_hr = None
    if w_hr is not None:
        o_all = K["slice"](gates, (slice(None), slice(3 * H, 4 * H)))
        m = K["mul"](o_all, K["tanh"](cells))
        dw_hr = K["matmul"](K["permute"](K["concat"](dhs, 0), (1, 0)), m)
    return dx_all, dh, dc if mode == "LSTM" else None, dw_hh, db_hh, dw_hr
