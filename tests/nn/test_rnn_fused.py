"""The recurrent layers' fused path (one rnn_layer kernel call and one autograd node per layer
direction) against their Tensor-op path: equal outputs and gradients for every mode and option,
the create_graph backward (which differentiates the Tensor-op recurrence) against the first-order
kernel backward, and second derivatives by finite differences."""
from __future__ import annotations

import numpy as np
import pytest

import tensorplug as tp
from tensorplug import nn
from tensorplug.autograd import gradcheck, gradgradcheck
from tensorplug.backends.numpy_backend import rnn_loops
from tensorplug.nn.modules import rnn as rnn_mod
from tensorplug.nn.utils import rnn as rnn_utils

from _numba_paths import loops_fixture

CONFIGS = [
    ("LSTM", dict(num_layers=2, bidirectional=True)),
    ("LSTM", dict(num_layers=2, proj_size=2, batch_first=True)),
    ("GRU", dict(num_layers=2, bidirectional=True)),
    ("GRU", dict(bias=False)),
    ("RNN", dict(nonlinearity="relu", bidirectional=True)),
    ("RNN", dict(num_layers=2)),
]


def _make(kind, dtype=tp.float64, **kw):
    tp.manual_seed(0)
    return getattr(nn, kind)(3, 4, **kw).to(dtype)


def _run(m, kind, packed, dtype):
    rng = np.random.default_rng(3)
    L = m.num_layers * (2 if m.bidirectional else 1)
    P = m.proj_size or m.hidden_size
    x = tp.tensor(rng.standard_normal((3, 4, 3) if m.batch_first else (4, 3, 3)), dtype=dtype, requires_grad=True)
    h0 = tp.tensor(rng.standard_normal((L, 3, P)), dtype=dtype, requires_grad=True)
    ins = [x, h0]
    hx = h0
    if kind == "LSTM":
        c0 = tp.tensor(rng.standard_normal((L, 3, m.hidden_size)), dtype=dtype, requires_grad=True)
        ins.append(c0)
        hx = (h0, c0)
    inp = rnn_utils.pack_padded_sequence(x, [4, 2, 3], batch_first=m.batch_first, enforce_sorted=False) \
        if packed else x
    out, hn = m(inp, hx)
    outs = [out.data if packed else out] + (list(hn) if kind == "LSTM" else [hn])
    loss = sum((o * o.detach().cos()).sum() for o in outs)
    grads = tp.autograd.grad(loss, ins + list(m.parameters()))
    return [o.detach().numpy() for o in outs], [g.numpy() for g in grads], outs


@pytest.mark.parametrize("packed", [False, True])
@pytest.mark.parametrize("kind,kw", CONFIGS)
def test_fused_equals_tensor_op_path(kind, kw, packed, monkeypatch):
    m = _make(kind, **kw)
    outs, grads, raw = _run(m, kind, packed, tp.float64)
    assert raw[0].grad_fn is not None
    monkeypatch.setattr(rnn_mod, "_FUSED", False)
    ref_outs, ref_grads, _ = _run(m, kind, packed, tp.float64)
    for a, b in zip(outs + grads, ref_outs + ref_grads):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-13)


lstm_cell_path = loops_fixture(rnn_loops, "numpy ufuncs")     # the float32 LSTM step's pointwise work


@pytest.mark.parametrize("packed", [False, True])
@pytest.mark.parametrize("kind,kw", CONFIGS[:3])
def test_float32_fused_equals_tensor_op_path(kind, kw, packed, monkeypatch, lstm_cell_path):
    m = _make(kind, tp.float32, **kw)
    outs, grads, _ = _run(m, kind, packed, tp.float32)
    monkeypatch.setattr(rnn_mod, "_FUSED", False)
    ref_outs, ref_grads, _ = _run(m, kind, packed, tp.float32)
    for a, b in zip(outs + grads, ref_outs + ref_grads):
        assert a.dtype == np.float32
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-6)


def test_one_node_per_layer_direction():
    m = _make("LSTM", num_layers=1)
    out, (h, c) = m(tp.randn(5, 2, 3, dtype=tp.float64, requires_grad=True))
    node = out.grad_fn.next_functions[0][0]          # out is a view of the packed rows
    assert node.name() == "RnnLayerBackward0"
    for t in (h, c):                                  # the final states come from the same node
        todo = [t.grad_fn]
        while todo:
            n = todo.pop()
            todo += [f for f, _ in n.next_functions if f is not None and f.name() != "RnnLayerBackward0"]
            if any(f is node for f, _ in n.next_functions):
                break
        else:
            raise AssertionError(f"no path to the RNN node from {t.grad_fn.name()}")


@pytest.mark.parametrize("kind,kw", CONFIGS)
def test_create_graph_gradients_equal_first_order(kind, kw):
    m = _make(kind, **kw)
    x = tp.randn(3, 2, 3, dtype=tp.float64, requires_grad=True)
    out, _ = m(x)
    loss = (out * out).sum()
    ins = [x] + list(m.parameters())
    fast = tp.autograd.grad(loss, ins, retain_graph=True)
    slow = tp.autograd.grad(loss, ins, create_graph=True)
    assert all(s.requires_grad for s in slow)
    for a, b in zip(fast, slow):
        np.testing.assert_allclose(a.numpy(), b.detach().numpy(), rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("kind,kw", [("GRU", dict(bidirectional=True)), ("RNN", dict(nonlinearity="relu")),
                                     ("LSTM", dict(proj_size=1, bidirectional=True))])
def test_gradcheck_and_gradgradcheck_packed(kind, kw):
    tp.manual_seed(1)
    m = getattr(nn, kind)(2, 2, **kw).double()

    def f(x, *params):
        packed = rnn_utils.pack_padded_sequence(x, [3, 1], enforce_sorted=False)
        out, hn = m(packed)
        return (out.data,) + (tuple(hn) if kind == "LSTM" else (hn,))
    x = tp.randn(3, 2, 2, dtype=tp.float64, requires_grad=True)
    assert gradcheck(f, (x,), eps=1e-6, atol=1e-7, rtol=1e-5)
    assert gradgradcheck(f, (x,), eps=1e-6, atol=1e-6, rtol=1e-4)


@pytest.mark.parametrize("cls,n", [(nn.LSTMCell, 2), (nn.GRUCell, 1), (nn.RNNCell, 1)])
def test_cells_fused_equal_tensor_op_path(cls, n, monkeypatch):
    tp.manual_seed(0)
    cell = cls(3, 4).double()
    x = tp.randn(2, 3, dtype=tp.float64, requires_grad=True)
    hx = tuple(tp.randn(2, 4, dtype=tp.float64, requires_grad=True) for _ in range(n))

    def run():
        out = cell(x, hx if n == 2 else hx[0])
        outs = list(out) if n == 2 else [out]
        g = tp.autograd.grad(sum((o * o).sum() for o in outs), [x, *hx, *cell.parameters()])
        return [o.detach().numpy() for o in outs] + [t.numpy() for t in g]
    fused = run()
    monkeypatch.setattr(rnn_mod, "_FUSED", False)
    for a, b in zip(fused, run()):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-13)


def test_float32_lstm_against_float64_at_word_lm_like_sizes(lstm_cell_path):
    """A wider float32 LSTM (both step paths) against the same weights in float64."""
    tp.manual_seed(1)
    m32 = nn.LSTM(16, 48, num_layers=2)
    m64 = nn.LSTM(16, 48, num_layers=2).double()
    m64.load_state_dict({k: v.double() for k, v in m32.state_dict().items()})
    x = np.random.default_rng(5).standard_normal((12, 5, 16))
    res = []
    for m, dt in ((m32, tp.float32), (m64, tp.float64)):
        xt = tp.tensor(x, dtype=dt, requires_grad=True)
        out, (h, c) = m(xt)
        loss = (out * out).sum() + h.sum() + (c * c).sum()
        grads = tp.autograd.grad(loss, [xt] + list(m.parameters()))
        res.append([out.detach().numpy(), c.detach().numpy()] + [g.numpy() for g in grads])
    for a, b in zip(*res):
        assert a.dtype == np.float32
        np.testing.assert_allclose(a, b, rtol=2e-4, atol=2e-5)
