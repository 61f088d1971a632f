"""Recurrent layers: RNN, LSTM, GRU and their cells (RNNCell, LSTMCell, GRUCell).

Everything is built from differentiable Tensor ops (mm, sigmoid, tanh, relu, cat, stack, ...), so
gradients of any order flow through them (`autograd.grad(..., create_graph=True)` works). The
loop over time steps runs in Python; per layer and direction the input projection of *all* time
steps is one matrix product, so each step only multiplies the hidden state by `weight_hh`.

Equations (PyTorch's, with its gate orders and parameter names):

* RNN:  h' = act(x W_ih^T + b_ih + h W_hh^T + b_hh), act = tanh or relu
* LSTM: gates = x W_ih^T + b_ih + h W_hh^T + b_hh, chunks (i, f, g, o);
  c' = sigmoid(f) * c + sigmoid(i) * tanh(g); h' = sigmoid(o) * tanh(c')  (then h' W_hr^T with proj_size)
* GRU:  r = sigmoid(x W_ir^T + b_ir + h W_hr^T + b_hr), z likewise,
  n = tanh(x W_in^T + b_in + r * (h W_hn^T + b_hn)), h' = (1 - z) * n + z * h

Sequences run time-major internally as a 2-D "packed" matrix (rows of step t follow those of
step t - 1); a padded input is the special case where every step has the whole batch, and a
`PackedSequence` (tensorplug.nn.utils.rnn) is used as it is.
"""
from __future__ import annotations

import math
import numbers
import warnings

from ... import ops as _ops  # noqa: F401  (makes sure every op family is attached)
from ...amp.state import state as _amp
from ...autograd import grad_mode
from ...autograd.graph import needs_grad, record_multi
from ...ops.shape import _pieces
from ...tensor import Tensor, _make
from ..parameter import Parameter
from .module import Module

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]


def _tp():
    import tensorplug
    return tensorplug


def _packed_sequence_class():
    try:
        from ..utils.rnn import PackedSequence
    except ImportError:
        return None
    return PackedSequence


# -- building blocks ---------------------------------------------------------------------------------
def _split_rows(x, sizes):
    """Consecutive row blocks of a 2-D tensor (block i has sizes[i] rows): split's pieces, whose backward
    is a single cat of their gradients (linear in the sequence length)."""
    if len(sizes) == 1:
        return (x,)
    return _pieces(x, 0, list(sizes), "SplitWithSizesBackward0")


def _linear(x, w_t, b):
    if _amp.on and b is not None:      # one addmm, as PyTorch's linear: autocast casts the bias too
        return _tp().addmm(b, x, w_t)
    y = x.mm(w_t)
    return y if b is None else y + b


def _rnn_step(act):
    def step(gi, state, w_hh_t, b_hh, w_hr_t):
        return (act(gi + state[0].mm(w_hh_t)),)
    return step


def _lstm_step(gi, state, w_hh_t, b_hh, w_hr_t):
    tp = _tp()
    h, c = state
    i, f, g, o = (gi + h.mm(w_hh_t)).chunk(4, 1)
    c = tp.sigmoid(f) * c + tp.sigmoid(i) * tp.tanh(g)
    h = tp.sigmoid(o) * tp.tanh(c)
    if w_hr_t is not None:
        h = h.mm(w_hr_t)
    return (h, c)


def _gru_step(gi, state, w_hh_t, b_hh, w_hr_t):
    tp = _tp()
    h = state[0]
    gh = _linear(h, w_hh_t, b_hh)
    n_hid = h.shape[1]
    gi_rz, gi_n = gi.split([2 * n_hid, n_hid], 1)
    gh_rz, gh_n = gh.split([2 * n_hid, n_hid], 1)
    r, z = tp.sigmoid(gi_rz + gh_rz).chunk(2, 1)
    n = tp.tanh(gi_n + r * gh_n)
    return (n + z * (h - n),)


_STEPS = {"RNN_TANH": _rnn_step(lambda t: t.tanh()), "RNN_RELU": _rnn_step(lambda t: t.relu()),
          "LSTM": _lstm_step, "GRU": _gru_step}


def _run_direction(step, gis, batch_sizes, state0, weights, reverse):
    """Run one layer in one direction over the steps. gis: the input projections of every step
    (block t has batch_sizes[t] rows); state0: the initial state (tuple, batch_sizes[0] rows).

    Returns (outputs of the steps in time order, final state with batch_sizes[0] rows)."""
    cat = _tp().cat
    n = len(batch_sizes)
    outs = [None] * n
    if not reverse:
        state, cur, done = state0, batch_sizes[0], []
        for t in range(n):
            bs = batch_sizes[t]
            if bs < cur:       # sequences ending here keep their last state
                split = [_split_rows(s, [bs, cur - bs]) for s in state]
                done.append(tuple(p[1] for p in split))
                state, cur = tuple(p[0] for p in split), bs
            state = step(gis[t], state, *weights)
            outs[t] = state[0]
        if done:
            state = tuple(cat([s] + [d[j] for d in reversed(done)], 0) for j, s in enumerate(state))
        return outs, state
    state, cur = None, 0
    full = batch_sizes[0]
    for t in range(n - 1, -1, -1):
        bs = batch_sizes[t]
        if bs > cur:           # sequences (longest last) start here from their initial state
            if cur == 0 and bs == full:
                new = state0
            else:
                new = tuple(s.narrow(0, cur, bs - cur) for s in state0)
            state = new if state is None else tuple(cat([a, b], 0) for a, b in zip(state, new))
            cur = bs
        state = step(gis[t], state, *weights)
        outs[t] = state[0]
    return outs, state


# -- the fused recurrence (optional kernels rnn_layer / rnn_layer_backward) -------------------------------
_FUSED = True       # False: every layer runs as the Tensor-op recurrence above (tests compare both)


def _fused_ok(x):
    return _FUSED and not _amp.on and x._dtype.is_floating_point and not x._dtype.is_complex


def _reference(mode, gi, h0, c0, w_hh, b_hh, w_hr, batch_sizes, reverse):
    """The recurrence of one layer direction in Tensor ops: [out rows, h_n(, c_n)]."""
    state0 = (h0, c0) if mode == "LSTM" else (h0,)
    weights = (w_hh.t(), b_hh, None if w_hr is None else w_hr.t())
    outs, final = _run_direction(_STEPS[mode], _split_rows(gi, batch_sizes), batch_sizes, state0, weights,
                                 reverse)
    return [_tp().cat(outs, 0), *final]


def _fused_direction(mode, gi, state0, w_hh, b_hh, w_hr, batch_sizes, reverse):
    """One layer direction through the `rnn_layer` kernel, recorded as one autograd node.

    Returns (out rows, final state tuple). b_hh only for GRU (the other modes fold it into gi).
    First-order gradients come from `rnn_layer_backward`; under create_graph the backward
    differentiates `_reference` instead, so gradients of any order exist."""
    k, dt, dev = gi._k, gi._dtype, gi._dev
    lstm = mode == "LSTM"
    h0, c0 = state0[0], (state0[1] if lstm else None)
    bs = tuple(batch_sizes)
    data = [None if t is None else t._data for t in (h0, c0, w_hh, b_hh, w_hr)]
    out, hn, cn, gates, cells = k["rnn_layer"](mode, gi._data, data[0], data[1], data[2], data[3], data[4],
                                              bs, reverse)
    outs = [_make(out, dt, k, dev), _make(hn, dt, k, dev)] + ([_make(cn, dt, k, dev)] if lstm else [])
    slots = (gi, h0, c0, w_hh, b_hh, w_hr)
    inputs = [t for t in slots if t is not None]
    if grad_mode.is_grad_enabled() and needs_grad(*inputs):
        def vjp(grads):
            if grad_mode.is_grad_enabled():          # create_graph: the Tensor-op formula
                want = [t for t in inputs if t.requires_grad]
                ref = _reference(mode, *slots, bs, reverse)
                got = iter(_tp().autograd.grad(ref, want, list(grads), create_graph=True, allow_unused=True))
                return tuple(next(got) if t.requires_grad else None for t in inputs)
            g = [x._data for x in grads]
            res = k["rnn_layer_backward"](mode, g[0], g[1], g[2] if lstm else None, data[0], data[1], data[2],
                                          data[4], out, gates, cells, bs, reverse)
            return tuple(None if r is None or t is None or not t.requires_grad else _make(r, t._dtype, k, dev)
                         for t, r in zip(slots, res) if t is not None)
        record_multi("RnnLayerBackward0", outs, inputs, vjp, saved=tuple(inputs))
    return outs[0], tuple(outs[1:])


def _dropout(x, p, training):
    if not training or p == 0:
        return x
    from .. import functional as F
    fn = getattr(F, "dropout", None)
    if fn is not None:
        return fn(x, p, True)
    if p == 1:
        return x * 0
    keep = _tp().empty_like(x).bernoulli_(1 - p)
    return x * keep / (1 - p)


def _apply_permutation(t, permutation, dim=1):
    return t.index_select(dim, permutation)


def _check_number(name, value):
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name} should be of type int, got: {type(value).__name__}")


# -- RNN, LSTM, GRU -----------------------------------------------------------------------------------
class RNNBase(Module):
    """Base class of RNN, LSTM and GRU: parameters (`weight_ih_l{k}{_reverse}`, ...), checks and the
    multi-layer, bidirectional, packed-sequence driver."""

    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__()
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout) if isinstance(dropout, numbers.Number) else dropout
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        num_directions = 2 if bidirectional else 1

        if not isinstance(dropout, numbers.Number) or isinstance(dropout, bool) or not 0 <= dropout <= 1:
            raise ValueError("dropout should be a number in range [0, 1] representing the probability of "
                             "an element being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so non-zero "
                          "dropout expects num_layers greater than 1, but got "
                          f"dropout={dropout} and num_layers={num_layers}", stacklevel=2)
        if not isinstance(bias, bool):
            raise TypeError(f"bias should be of type bool, got: {type(bias).__name__}")
        if not isinstance(batch_first, bool):
            raise TypeError(f"batch_first should be of type bool, got: {type(batch_first).__name__}")
        _check_number("input_size", input_size)
        if input_size <= 0:
            raise ValueError("input_size must be greater than zero")
        _check_number("hidden_size", hidden_size)
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        _check_number("num_layers", num_layers)
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        _check_number("proj_size", proj_size)
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")

        if mode == "LSTM":
            gate_size = 4 * hidden_size
        elif mode == "GRU":
            gate_size = 3 * hidden_size
        elif mode in ("RNN_TANH", "RNN_RELU"):
            gate_size = hidden_size
        else:
            raise ValueError("Unrecognized RNN mode: " + str(mode))

        empty = _tp().empty
        kw = {"device": device, "dtype": dtype}
        self._flat_weights_names = []
        self._all_weights = []
        real_hidden = proj_size if proj_size > 0 else hidden_size
        for layer in range(num_layers):
            for direction in range(num_directions):
                layer_input = input_size if layer == 0 else real_hidden * num_directions
                params = [Parameter(empty((gate_size, layer_input), **kw)),
                          Parameter(empty((gate_size, real_hidden), **kw))]
                names = ["weight_ih_l{}{}", "weight_hh_l{}{}"]
                if bias:
                    params += [Parameter(empty(gate_size, **kw)), Parameter(empty(gate_size, **kw))]
                    names += ["bias_ih_l{}{}", "bias_hh_l{}{}"]
                if proj_size > 0:
                    params.append(Parameter(empty((proj_size, hidden_size), **kw)))
                    names.append("weight_hr_l{}{}")
                suffix = "_reverse" if direction == 1 else ""
                names = [n.format(layer, suffix) for n in names]
                for name, p in zip(names, params):
                    setattr(self, name, p)
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    # -- parameters --------------------------------------------------------------------------------
    @property
    def _flat_weights(self):
        return [getattr(self, n, None) for n in self._flat_weights_names]

    @property
    def all_weights(self):
        """The parameters as a list per layer and direction: [[w_ih, w_hh, b_ih, b_hh(, w_hr)], ...]."""
        return [[getattr(self, n) for n in names] for names in self._all_weights]

    def flatten_parameters(self):
        """No-op (kept for PyTorch compatibility: parameters are never flattened here)."""

    def reset_parameters(self):
        """Every parameter ~ U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))."""
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        with grad_mode.no_grad():
            for w in self.parameters():
                w.uniform_(-stdv, stdv)

    def extra_repr(self):
        s = "{input_size}, {hidden_size}"
        if self.proj_size != 0:
            s += ", proj_size={proj_size}"
        if self.num_layers != 1:
            s += ", num_layers={num_layers}"
        if self.bias is not True:
            s += ", bias={bias}"
        if self.batch_first is not False:
            s += ", batch_first={batch_first}"
        if self.dropout != 0:
            s += ", dropout={dropout}"
        if self.bidirectional is not False:
            s += ", bidirectional={bidirectional}"
        return s.format(**self.__dict__)

    def __getstate__(self):
        # PyTorch's RNNs keep the parameter list `_flat_weights` in their state: pickles carry it
        return {**self.__dict__, "_flat_weights": self._flat_weights}

    def __setstate__(self, state):
        state = {k: v for k, v in state.items() if k not in ("_flat_weights", "_flat_weight_refs")}
        super().__setstate__(state)
        if "proj_size" not in self.__dict__:
            self.proj_size = 0

    # -- checks ------------------------------------------------------------------------------------
    @property
    def _num_directions(self):
        return 2 if self.bidirectional else 1

    @property
    def _real_hidden_size(self):
        return self.proj_size if self.proj_size > 0 else self.hidden_size

    def check_input(self, input, batch_sizes):
        w = self._flat_weights[0]
        if input.dtype != w.dtype:
            raise ValueError(f"RNN input dtype ({input.dtype}) does not match weight dtype ({w.dtype}). "
                             f"Convert input: input.to({w.dtype}), or convert model: model.to({input.dtype})")
        expected = 2 if batch_sizes is not None else 3
        if input.dim() != expected:
            raise RuntimeError(f"input must have {expected} dimensions, got {input.dim()}")
        if self.input_size != input.size(-1):
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, "
                               f"got {input.size(-1)}")

    def _mini_batch(self, input, batch_sizes):
        if batch_sizes is not None:
            return int(batch_sizes[0])
        return input.size(0) if self.batch_first else input.size(1)

    def get_expected_hidden_size(self, input, batch_sizes):
        return (self.num_layers * self._num_directions, self._mini_batch(input, batch_sizes),
                self._real_hidden_size)

    def check_hidden_size(self, hx, expected_hidden_size, msg="Expected hidden size {}, got {}"):
        if tuple(hx.size()) != tuple(expected_hidden_size):
            raise RuntimeError(msg.format(tuple(expected_hidden_size), list(hx.size())))

    def check_forward_args(self, input, hidden, batch_sizes):
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden, self.get_expected_hidden_size(input, batch_sizes))

    def permute_hidden(self, hx, permutation):
        if permutation is None:
            return hx
        return _apply_permutation(hx, permutation)

    # -- the driver --------------------------------------------------------------------------------
    def _layer_weights(self, names):
        """(w_ih^T, bias folded into the input projection, w_hh^T, b_hh kept per step, w_hr^T)."""
        def get(n):
            return getattr(self, n)
        w_ih, w_hh = get(names[0]), get(names[1])
        b_ih = b_hh = w_hr = None
        if self.bias:
            b_ih, b_hh = get(names[2]), get(names[3])
        if self.proj_size > 0:
            w_hr = get(names[-1])
        if self.mode == "GRU":
            b_in = b_ih        # b_hn sits inside r * (...): both biases stay apart
        else:
            b_in, b_hh = (None if b_ih is None else b_ih + b_hh), None
        return w_ih.t(), b_in, (w_hh.t(), b_hh, None if w_hr is None else w_hr.t())

    def _recurrent_weights(self, names):
        """(w_hh, b_hh for GRU else None, w_hr or None) as stored (the fused kernel's layout)."""
        b_hh = getattr(self, names[3]) if self.bias and self.mode == "GRU" else None
        return getattr(self, names[1]), b_hh, getattr(self, names[-1]) if self.proj_size > 0 else None

    def _run(self, x, batch_sizes, states):
        """x: (rows, input_size), time-major packed; states: tuple of (L*D, B, ·) tensors.

        Returns (output rows, tuple of final (L*D, B, ·) states)."""
        if _amp.on:        # PyTorch's CPU LSTM kernel is listed: input and states in the autocast dtype
            x, states = _amp.cast(self.mode.lower(), (x, states))
        tp = _tp()
        step = _STEPS[self.mode]
        fused = _fused_ok(x)
        nd = self._num_directions
        finals = [[] for _ in states]
        layer_in = x
        for layer in range(self.num_layers):
            if layer > 0:
                layer_in = _dropout(layer_in, self.dropout, self.training)
            dir_outs = []
            for d in range(nd):
                idx = layer * nd + d
                w_ih_t, b_in, weights = self._layer_weights(self._all_weights[idx])
                gi = _linear(layer_in, w_ih_t, b_in)
                state0 = tuple(s[idx] for s in states)
                if fused:
                    w_hh, b_hh, w_hr = self._recurrent_weights(self._all_weights[idx])
                    out_d, final = _fused_direction(self.mode, gi, state0, w_hh, b_hh, w_hr, batch_sizes, d == 1)
                    dir_outs.append(out_d)
                else:
                    outs, final = _run_direction(step, _split_rows(gi, batch_sizes), batch_sizes, state0,
                                                 weights, reverse=d == 1)
                    dir_outs.append(tp.cat(outs, 0))
                for j, f in enumerate(final):
                    finals[j].append(f)
            layer_in = dir_outs[0] if nd == 1 else tp.cat(dir_outs, 1)
        return layer_in, tuple(tp.stack(f, 0) for f in finals)

    def _zeros_state(self, batch, input, size):
        return _tp().zeros(self.num_layers * self._num_directions, batch, size, dtype=input.dtype,
                           device=input.device)

    def _forward_impl(self, input, hx, is_lstm):
        """Shared forward of RNN, LSTM and GRU; hx is a tensor, or (h0, c0) for LSTM, or None."""
        name = type(self).__name__ if type(self).__name__ in ("RNN", "LSTM", "GRU") else self.mode
        packed_cls = _packed_sequence_class()
        real_hidden = self._real_hidden_size
        if packed_cls is not None and isinstance(input, packed_cls):
            data, bs_tensor, sorted_indices, unsorted_indices = input
            batch_sizes = [int(b) for b in bs_tensor.tolist()]
            max_batch = batch_sizes[0]
            if hx is None:
                hx = self._zeros_state(max_batch, data, real_hidden)
                if is_lstm:
                    hx = (hx, self._zeros_state(max_batch, data, self.hidden_size))
            else:
                hx = self.permute_hidden(hx, sorted_indices)
            self.check_forward_args(data, hx, bs_tensor)
            states = hx if is_lstm else (hx,)
            out, finals = self._run(data, batch_sizes, states)
            hidden = finals if is_lstm else finals[0]
            return (packed_cls(out, bs_tensor, sorted_indices, unsorted_indices),
                    self.permute_hidden(hidden, unsorted_indices))

        if not isinstance(input, Tensor):
            raise TypeError(f"{name}: expected input to be a Tensor or PackedSequence, got "
                            f"{type(input).__name__}")
        if input.dim() not in (2, 3):
            raise ValueError(f"{name}: Expected input to be 2D or 3D, got {input.dim()}D "
                             + ("tensor instead" if name == "RNN" else "instead"))
        is_batched = input.dim() == 3
        batch_dim = 0 if self.batch_first else 1
        if not is_batched:
            input = input.unsqueeze(batch_dim)
        if hx is not None:
            hs = hx if is_lstm else (hx,)
            want = 3 if is_batched else 2
            if any(h.dim() != want for h in hs):
                kind = "batched 3-D" if is_batched else "unbatched 2-D"
                if is_lstm:
                    raise RuntimeError(f"For {kind} input, hx and cx should also be {want}-D but got "
                                       f"({hs[0].dim()}-D, {hs[1].dim()}-D) tensors")
                raise RuntimeError(f"For {kind} input, hx should also be {want}-D but got {hs[0].dim()}-D tensor")
            if not is_batched:
                hs = tuple(h.unsqueeze(1) for h in hs)
            hx = hs if is_lstm else hs[0]
        max_batch = input.size(0) if self.batch_first else input.size(1)
        if hx is None:
            hx = self._zeros_state(max_batch, input, real_hidden)
            if is_lstm:
                hx = (hx, self._zeros_state(max_batch, input, self.hidden_size))
        self.check_forward_args(input, hx, None)

        x = input.transpose(0, 1) if self.batch_first else input        # (T, B, F)
        steps, batch = x.size(0), x.size(1)
        if steps == 0:
            raise RuntimeError("Expected sequence length to be larger than 0 in RNN")
        rows = x.reshape(steps * batch, x.size(2))
        out, finals = self._run(rows, [batch] * steps, hx if is_lstm else (hx,))
        out = out.reshape(steps, batch, out.size(1))
        if self.batch_first:
            out = out.transpose(0, 1)
        if not is_batched:
            out = out.squeeze(batch_dim)
            finals = tuple(f.squeeze(1) for f in finals)
        return out, (finals if is_lstm else finals[0])


class RNN(RNNBase):
    """Elman RNN: h_t = act(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh), act = tanh or relu.

    RNN(input_size, hidden_size, num_layers=1, nonlinearity='tanh', bias=True, batch_first=False,
    dropout=0.0, bidirectional=False, device=None, dtype=None). forward(input, hx=None) ->
    (output, h_n); input (L, N, H_in) (or (N, L, H_in) with batch_first, or unbatched (L, H_in), or
    a PackedSequence), hx (num_layers * num_directions, N, H_out)."""

    def __init__(self, input_size, hidden_size, num_layers=1, nonlinearity="tanh", bias=True,
                 batch_first=False, dropout=0.0, bidirectional=False, device=None, dtype=None):
        if nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
        super().__init__(mode, input_size, hidden_size, num_layers, bias, batch_first, dropout,
                         bidirectional, device=device, dtype=dtype)
        self.nonlinearity = nonlinearity

    def extra_repr(self):
        s = super().extra_repr()
        if self.nonlinearity != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s

    def forward(self, input, hx=None):
        return self._forward_impl(input, hx, is_lstm=False)


class LSTM(RNNBase):
    """Long short-term memory. Gates (i, f, g, o) in this order in weight_ih/weight_hh rows.

    LSTM(input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
    bidirectional=False, proj_size=0, device=None, dtype=None). forward(input, (h_0, c_0)=None) ->
    (output, (h_n, c_n)). With proj_size > 0, h is projected by weight_hr_l{k} (proj_size, hidden)."""

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first, dropout,
                         bidirectional, proj_size, device=device, dtype=dtype)

    def get_expected_cell_size(self, input, batch_sizes):
        return (self.num_layers * self._num_directions, self._mini_batch(input, batch_sizes),
                self.hidden_size)

    def check_forward_args(self, input, hidden, batch_sizes):
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden[0], self.get_expected_hidden_size(input, batch_sizes),
                               "Expected hidden[0] size {}, got {}")
        self.check_hidden_size(hidden[1], self.get_expected_cell_size(input, batch_sizes),
                               "Expected hidden[1] size {}, got {}")

    def permute_hidden(self, hx, permutation):
        if permutation is None:
            return hx
        return _apply_permutation(hx[0], permutation), _apply_permutation(hx[1], permutation)

    def forward(self, input, hx=None):
        if hx is not None and not (isinstance(hx, (tuple, list)) and len(hx) == 2):
            raise TypeError("LSTM: hx must be a tuple (h_0, c_0) of two tensors")
        if hx is not None:
            hx = tuple(hx)
        return self._forward_impl(input, hx, is_lstm=True)


class GRU(RNNBase):
    """Gated recurrent unit. Gates (r, z, n) in this order in weight_ih/weight_hh rows;
    n = tanh(W_in x + b_in + r * (W_hn h + b_hn)), h' = (1 - z) * n + z * h.

    GRU(input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
    bidirectional=False, device=None, dtype=None). forward(input, hx=None) -> (output, h_n)."""

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, device=None, dtype=None, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if kwargs:
            raise TypeError(f"GRU.__init__() got an unexpected keyword argument '{next(iter(kwargs))}'")
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first, dropout,
                         bidirectional, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        return self._forward_impl(input, hx, is_lstm=False)


# -- cells -------------------------------------------------------------------------------------------
class RNNCellBase(Module):
    """Base of the cells: weight_ih (chunks * hidden, input), weight_hh (chunks * hidden, hidden),
    bias_ih, bias_hh (chunks * hidden), all ~ U(-1/sqrt(hidden), 1/sqrt(hidden))."""

    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        super().__init__()
        _check_number("input_size", input_size)
        _check_number("hidden_size", hidden_size)
        if input_size <= 0:
            raise ValueError("input_size must be greater than zero")
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        empty = _tp().empty
        kw = {"device": device, "dtype": dtype}
        self.weight_ih = Parameter(empty((num_chunks * hidden_size, input_size), **kw))
        self.weight_hh = Parameter(empty((num_chunks * hidden_size, hidden_size), **kw))
        if bias:
            self.bias_ih = Parameter(empty(num_chunks * hidden_size, **kw))
            self.bias_hh = Parameter(empty(num_chunks * hidden_size, **kw))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def extra_repr(self):
        s = "{input_size}, {hidden_size}"
        if "bias" in self.__dict__ and self.bias is not True:
            s += ", bias={bias}"
        if "nonlinearity" in self.__dict__ and self.nonlinearity != "tanh":
            s += ", nonlinearity={nonlinearity}"
        return s.format(**self.__dict__)

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        with grad_mode.no_grad():
            for w in self.parameters():
                w.uniform_(-stdv, stdv)

    def _prepare(self, name, input, hx):
        """Checks; returns (2-D input, tuple of 2-D states or None, is_batched)."""
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}: expected input to be a Tensor, got {type(input).__name__}")
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        is_batched = input.dim() == 2
        if not is_batched:
            input = input.unsqueeze(0)
        if input.size(1) != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {input.size(1)} expected "
                               f"{self.input_size}")
        if hx is None:
            return input, None, is_batched
        states = []
        for j, h in enumerate(hx):
            if not is_batched:
                h = h.unsqueeze(0)
            if input.size(0) != h.size(0):
                raise RuntimeError(f"Input batch size {input.size(0)} doesn't match hidden{j} batch size "
                                   f"{h.size(0)}")
            if h.size(1) != self.hidden_size:
                raise RuntimeError(f"hidden{j} has inconsistent hidden_size: got {h.size(1)}, expected "
                                   f"{self.hidden_size}")
            states.append(h)
        return input, tuple(states), is_batched

    def _zeros(self, input):
        return _tp().zeros(input.size(0), self.hidden_size, dtype=input.dtype, device=input.device)

    def _cell(self, mode, input, states):
        if _amp.on:        # the CUDA cell kernels are listed (the products then cast the weights)
            input, states = _amp.cast(mode.lower() + "_cell", (input, states))
        b_ih, b_hh = self.bias_ih, self.bias_hh
        if mode == "GRU":
            gi = _linear(input, self.weight_ih.t(), b_ih)
        else:
            gi = _linear(input, self.weight_ih.t(), None if b_ih is None else b_ih + b_hh)
            b_hh = None
        if _fused_ok(input):           # one step of the fused recurrence
            return _fused_direction(mode, gi, states, self.weight_hh, b_hh, None, (input.size(0),), False)[1]
        return _STEPS[mode](gi, states, self.weight_hh.t(), b_hh, None)


class RNNCell(RNNCellBase):
    """h' = act(x W_ih^T + b_ih + h W_hh^T + b_hh). RNNCell(input_size, hidden_size, bias=True,
    nonlinearity='tanh'); forward(input, hx=None) -> h'; input (N, H_in) or (H_in)."""

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=1, device=device, dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        if hx is not None and (not isinstance(hx, Tensor) or hx.dim() not in (1, 2)):
            d = hx.dim() if isinstance(hx, Tensor) else "?"
            raise ValueError(f"RNNCell: Expected hidden to be 1D or 2D, got {d}D instead")
        if self.nonlinearity not in ("tanh", "relu"):
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        input, states, is_batched = self._prepare("RNNCell", input, None if hx is None else (hx,))
        if states is None:
            states = (self._zeros(input),)
        mode = "RNN_TANH" if self.nonlinearity == "tanh" else "RNN_RELU"
        h = self._cell(mode, input, states)[0]
        return h if is_batched else h.squeeze(0)


class LSTMCell(RNNCellBase):
    """One LSTM step (gates i, f, g, o). LSTMCell(input_size, hidden_size, bias=True);
    forward(input, (h, c)=None) -> (h', c')."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=4, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        if hx is not None:
            if not (isinstance(hx, (tuple, list)) and len(hx) == 2):
                raise TypeError("LSTMCell: hx must be a tuple (h, c) of two tensors")
            for idx, value in enumerate(hx):
                if value.dim() not in (1, 2):
                    raise ValueError(f"LSTMCell: Expected hx[{idx}] to be 1D or 2D, got {value.dim()}D instead")
        input, states, is_batched = self._prepare("LSTMCell", input, hx)
        if states is None:
            z = self._zeros(input)
            states = (z, z)
        h, c = self._cell("LSTM", input, states)
        return (h, c) if is_batched else (h.squeeze(0), c.squeeze(0))


class GRUCell(RNNCellBase):
    """One GRU step (gates r, z, n). GRUCell(input_size, hidden_size, bias=True);
    forward(input, hx=None) -> h'."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=3, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        if hx is not None and (not isinstance(hx, Tensor) or hx.dim() not in (1, 2)):
            d = hx.dim() if isinstance(hx, Tensor) else "?"
            raise ValueError(f"GRUCell: Expected hidden to be 1D or 2D, got {d}D instead")
        input, states, is_batched = self._prepare("GRUCell", input, None if hx is None else (hx,))
        if states is None:
            states = (self._zeros(input),)
        h = self._cell("GRU", input, states)[0]
        return h if is_batched else h.squeeze(0)
