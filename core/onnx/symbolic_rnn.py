"""Layers mapped as a whole: nn.RNN / nn.LSTM / nn.GRU as ONNX's RNN / LSTM / GRU ops (one per layer).

tensorplug runs these layers as a Python loop over time steps; traced op by op they would export as
that many unrolled steps, fixed to the traced sequence length. As single ONNX ops they keep any
sequence length and batch size. ONNX orders the gates differently from PyTorch (LSTM: i, o, f, c
against i, f, g, o; GRU: z, r, h against r, z, n, with linear_before_reset=1 for PyTorch's GRU), so
the weights are written reordered, as new initializers (PyTorch's exporter does the same).
"""
from __future__ import annotations

import numpy as np

from ..nn.modules.rnn import GRU, LSTM, RNN
from .errors import UnsupportedOperatorError

# ONNX op, gates, PyTorch gate blocks in ONNX's order
_SPEC = {"LSTM": ("LSTM", 4, (0, 3, 1, 2)), "GRU": ("GRU", 3, (1, 0, 2)),
         "RNN_TANH": ("RNN", 1, (0,)), "RNN_RELU": ("RNN", 1, (0,))}


def _host(p):
    return np.array(p._host(), copy=True)


def _reorder(a, gates, order):
    blocks = np.split(a, gates, axis=0)
    return np.concatenate([blocks[i] for i in order], axis=0)


def _rnn(g, out, m, input, hx=None):
    from ..tensor import Tensor
    name = type(m).__name__.lower()
    if not isinstance(input, Tensor):
        raise UnsupportedOperatorError(name, g.opset, "packed sequences")
    if m.proj_size:
        raise UnsupportedOperatorError(name, g.opset, "proj_size > 0")
    if m.training and m.dropout and m.num_layers > 1:
        raise UnsupportedOperatorError(name, g.opset, "dropout between layers in training mode")
    op, gates, order = _SPEC[m.mode]
    nd = 2 if m.bidirectional else 1
    H = m.hidden_size
    is_lstm = op == "LSTM"
    x = g.v(input)
    unbatched = input.ndim == 2
    if unbatched:
        x = g.op("Unsqueeze", x, g.ints([1]))
    elif m.batch_first:
        x = g.op("Transpose", x, perm=[1, 0, 2])
    states = () if hx is None else (tuple(hx) if is_lstm else (hx,))
    states = [g.v(s) if not unbatched else g.op("Unsqueeze", g.v(s), g.ints([1])) for s in states]
    attrs = {"hidden_size": H, "direction": "bidirectional" if nd == 2 else "forward"}
    if op == "GRU":
        attrs["linear_before_reset"] = 1
    if op == "RNN":
        attrs["activations"] = ["Tanh" if m.mode == "RNN_TANH" else "Relu"] * nd
    finals = [[] for _ in range(2 if is_lstm else 1)]
    for layer in range(m.num_layers):
        W, R, B = [], [], []
        for d in range(nd):
            names = m._all_weights[layer * nd + d]
            W.append(_reorder(_host(getattr(m, names[0])), gates, order))
            R.append(_reorder(_host(getattr(m, names[1])), gates, order))
            if m.bias:
                B.append(np.concatenate([_reorder(_host(getattr(m, names[2])), gates, order),
                                         _reorder(_host(getattr(m, names[3])), gates, order)]))
        init = [g.op("Slice", s, g.ints([layer * nd]), g.ints([(layer + 1) * nd]), g.ints([0])) for s in states]
        ins = [x, g.const(np.stack(W), op), g.const(np.stack(R), op), g.const(np.stack(B), op) if B else None,
               None, *init]
        while ins and ins[-1] is None:
            ins.pop()
        y, *fin = g.op(op, *ins, outputs=3 if is_lstm else 2, **attrs)
        for acc, f in zip(finals, fin):
            acc.append(f)
        if nd == 1:
            x = g.op("Squeeze", y, g.ints([1]))
        else:        # (T, D, B, H) -> (T, B, D * H)
            x = g.op("Reshape", g.op("Transpose", y, perm=[0, 2, 1, 3]), g.ints([0, 0, -1]))
    hs = [f[0] if len(f) == 1 else g.op("Concat", *f, axis=0) for f in finals]
    if unbatched:
        x = g.op("Squeeze", x, g.ints([1]))
        hs = [g.op("Squeeze", h, g.ints([1])) for h in hs]
    elif m.batch_first:
        x = g.op("Transpose", x, perm=[1, 0, 2])
    return (x, tuple(hs)) if is_lstm else (x, hs[0])


MODULE_TABLE: dict = {RNN: _rnn, LSTM: _rnn, GRU: _rnn}
