"""RNN, LSTM, GRU and their cells: PyTorch's parameter names, shapes, init, gate orders and options,
checked against an independent float64 NumPy implementation of the equations; first and second
derivatives by finite differences (gradcheck, gradgradcheck); dropout between layers; errors."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import tensorplug as tp
from tensorplug import nn
from tensorplug.autograd import gradcheck, gradgradcheck


# -- the NumPy reference ----------------------------------------------------------------------------
def _sig(x):
    return 1.0 / (1.0 + np.exp(-x))


def np_cell(mode, x, state, w_ih, w_hh, b_ih, b_hh, w_hr=None):
    """One step of the textbook equations; x (B, F), state tuple of (B, .) arrays."""
    b_ih = 0.0 if b_ih is None else b_ih
    b_hh = 0.0 if b_hh is None else b_hh
    h = state[0]
    if mode in ("tanh", "relu"):
        a = x @ w_ih.T + b_ih + h @ w_hh.T + b_hh
        return (np.tanh(a) if mode == "tanh" else np.maximum(a, 0.0),)
    if mode == "LSTM":
        c = state[1]
        g = x @ w_ih.T + b_ih + h @ w_hh.T + b_hh
        H = c.shape[1]
        i, f, gg, o = _sig(g[:, :H]), _sig(g[:, H:2 * H]), np.tanh(g[:, 2 * H:3 * H]), _sig(g[:, 3 * H:])
        c = f * c + i * gg
        h = o * np.tanh(c)
        if w_hr is not None:
            h = h @ w_hr.T
        return (h, c)
    # GRU
    H = h.shape[1]
    gi = x @ w_ih.T + b_ih
    gh = h @ w_hh.T + b_hh
    r = _sig(gi[:, :H] + gh[:, :H])
    z = _sig(gi[:, H:2 * H] + gh[:, H:2 * H])
    n = np.tanh(gi[:, 2 * H:] + r * gh[:, 2 * H:])
    return ((1 - z) * n + z * h,)


def np_rnn(mode, params, x, states, num_layers, bidirectional, layer_inputs_override=None):
    """Full multi-layer (bi)directional run; x (T, B, F) time-major, states tuple of (L*D, B, .).
    params: dict name -> array (PyTorch names). Returns (output (T, B, D*H), final states)."""
    D = 2 if bidirectional else 1
    finals = [[] for _ in states]
    inp = x
    for layer in range(num_layers):
        if layer > 0 and layer_inputs_override is not None:
            inp = layer_inputs_override(inp)
        outs = []
        for d in range(D):
            sfx = f"l{layer}" + ("_reverse" if d else "")
            w = [params.get(f"{n}_{sfx}") for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh", "weight_hr")]
            st = tuple(s[layer * D + d] for s in states)
            T = inp.shape[0]
            seq = [None] * T
            order = range(T - 1, -1, -1) if d else range(T)
            for t in order:
                st = np_cell(mode, inp[t], st, *w)
                seq[t] = st[0]
            outs.append(np.stack(seq))
            for j, s in enumerate(st):
                finals[j].append(s)
        inp = np.concatenate(outs, axis=2)
    return inp, tuple(np.stack(f) for f in finals)


def params_np(m):
    return {n: p.detach().numpy().astype(np.float64) for n, p in m.named_parameters()}


MODES = {"RNN": "tanh", "LSTM": "LSTM", "GRU": "GRU"}
GATES = {"RNN": 1, "LSTM": 4, "GRU": 3}


def make(kind, input_size, hidden, **kw):
    tp.manual_seed(0)
    return getattr(nn, kind)(input_size, hidden, **kw).double()


def npmode(kind, kw):
    return kw.get("nonlinearity", "tanh") if kind == "RNN" else MODES[kind]


# -- parameters -------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
def test_parameter_names_and_shapes(kind):
    m = getattr(nn, kind)(3, 5, num_layers=2, bidirectional=True)
    G = GATES[kind] * 5
    expect = []
    for layer, fin in ((0, 3), (1, 10)):
        for sfx in ("", "_reverse"):
            expect += [(f"weight_ih_l{layer}{sfx}", (G, fin)), (f"weight_hh_l{layer}{sfx}", (G, 5)),
                       (f"bias_ih_l{layer}{sfx}", (G,)), (f"bias_hh_l{layer}{sfx}", (G,))]
    assert [(n, tuple(p.shape)) for n, p in m.named_parameters()] == expect
    assert all(isinstance(p, nn.Parameter) and p.requires_grad for p in m.parameters())
    assert list(m.state_dict().keys()) == [n for n, _ in expect]
    assert m._flat_weights_names == [n for n, _ in expect]
    assert [[tuple(p.shape) for p in ws] for ws in m.all_weights][0] == [s for _, s in expect[:4]]


def test_parameter_names_no_bias_and_projection():
    m = nn.LSTM(3, 5, num_layers=2, bias=False, proj_size=2, bidirectional=True)
    assert [(n, tuple(p.shape)) for n, p in m.named_parameters()] == [
        ("weight_ih_l0", (20, 3)), ("weight_hh_l0", (20, 2)), ("weight_hr_l0", (2, 5)),
        ("weight_ih_l0_reverse", (20, 3)), ("weight_hh_l0_reverse", (20, 2)), ("weight_hr_l0_reverse", (2, 5)),
        ("weight_ih_l1", (20, 4)), ("weight_hh_l1", (20, 2)), ("weight_hr_l1", (2, 5)),
        ("weight_ih_l1_reverse", (20, 4)), ("weight_hh_l1_reverse", (20, 2)), ("weight_hr_l1_reverse", (2, 5))]
    m = nn.LSTM(3, 5, proj_size=2)
    assert [n for n, _ in m.named_parameters()] == ["weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0",
                                                    "weight_hr_l0"]


@pytest.mark.parametrize("cls,chunks", [(nn.RNNCell, 1), (nn.LSTMCell, 4), (nn.GRUCell, 3)])
def test_cell_parameters(cls, chunks):
    c = cls(3, 5)
    assert [(n, tuple(p.shape)) for n, p in c.named_parameters()] == [
        ("weight_ih", (chunks * 5, 3)), ("weight_hh", (chunks * 5, 5)), ("bias_ih", (chunks * 5,)),
        ("bias_hh", (chunks * 5,))]
    c = cls(3, 5, bias=False)
    assert [n for n, _ in c.named_parameters()] == ["weight_ih", "weight_hh"]
    assert c.bias_ih is None and c.bias_hh is None


@pytest.mark.parametrize("m", [nn.RNN(4, 16, 2), nn.LSTM(4, 16), nn.GRU(4, 16, bidirectional=True), nn.GRUCell(4, 16),
                               nn.LSTM(4, 16, proj_size=3)], ids=["rnn", "lstm", "gru", "grucell", "lstmproj"])
def test_init_uniform(m):
    bound = 1 / math.sqrt(16)
    vals = np.concatenate([p.detach().numpy().ravel() for p in m.parameters()])
    assert vals.dtype == np.float32
    assert np.abs(vals).max() <= bound
    assert np.abs(vals).max() > 0.9 * bound and abs(vals.mean()) < 0.05 * bound
    assert np.std(vals) == pytest.approx(bound / math.sqrt(3), rel=0.1)


def test_repr():
    assert repr(nn.LSTM(3, 5, proj_size=2, num_layers=2, bidirectional=True)) == \
        "LSTM(3, 5, proj_size=2, num_layers=2, bidirectional=True)"
    assert repr(nn.GRU(3, 4, bias=False, batch_first=True, dropout=0.5, num_layers=2)) == \
        "GRU(3, 4, num_layers=2, bias=False, batch_first=True, dropout=0.5)"
    assert repr(nn.RNN(3, 4, nonlinearity="relu")) == "RNN(3, 4, nonlinearity=relu)"
    assert repr(nn.RNNCell(3, 4, bias=False, nonlinearity="relu")) == "RNNCell(3, 4, bias=False, nonlinearity=relu)"
    assert repr(nn.LSTMCell(3, 4)) == "LSTMCell(3, 4)"


def test_dtype_device_kwargs_and_double():
    m = nn.GRU(3, 4, dtype=tp.float64)
    assert all(p.dtype == tp.float64 for p in m.parameters())
    m = nn.LSTM(3, 4).double()
    out, _ = m(tp.randn(2, 1, 3, dtype=tp.float64))
    assert out.dtype == tp.float64


# -- forward vs NumPy -------------------------------------------------------------------------------
COMBOS = [
    dict(),
    dict(num_layers=2),
    dict(bidirectional=True),
    dict(num_layers=2, bidirectional=True),
    dict(batch_first=True),
    dict(num_layers=2, bidirectional=True, batch_first=True),
    dict(bias=False, num_layers=2),
]


@pytest.mark.parametrize("init_state", [False, True], ids=["zero_h0", "given_h0"])
@pytest.mark.parametrize("kw", COMBOS, ids=lambda kw: "-".join(f"{k}={v}" for k, v in kw.items()) or "default")
@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
def test_forward_matches_numpy(kind, kw, init_state):
    T, B, F, H = 4, 3, 5, 6
    m = make(kind, F, H, **kw)
    L, D = kw.get("num_layers", 1), 2 if kw.get("bidirectional") else 1
    rng = np.random.default_rng(1)
    x = rng.standard_normal((T, B, F))
    states = (rng.standard_normal((L * D, B, H)),)
    if kind == "LSTM":
        states += (rng.standard_normal((L * D, B, H)),)
    if not init_state:
        states = tuple(np.zeros_like(s) for s in states)
    ref_out, ref_states = np_rnn(npmode(kind, kw), params_np(m), x, states, L, D == 2)

    xin = tp.tensor(x.transpose(1, 0, 2).copy() if kw.get("batch_first") else x)
    hx = None
    if init_state:
        hx = tuple(tp.tensor(s) for s in states) if kind == "LSTM" else tp.tensor(states[0])
    out, hn = m(xin, hx) if hx is not None else m(xin)
    got = out.detach().numpy()
    if kw.get("batch_first"):
        got = got.transpose(1, 0, 2)
    assert tuple(out.shape) == ((B, T, D * H) if kw.get("batch_first") else (T, B, D * H))
    np.testing.assert_allclose(got, ref_out, rtol=1e-10, atol=1e-12)
    hn = hn if kind == "LSTM" else (hn,)
    assert len(hn) == len(ref_states)
    for a, b in zip(hn, ref_states):
        assert tuple(a.shape) == b.shape == (L * D, B, H)
        np.testing.assert_allclose(a.detach().numpy(), b, rtol=1e-10, atol=1e-12)


def test_rnn_relu_matches_numpy():
    m = make("RNN", 3, 4, nonlinearity="relu", num_layers=2, bidirectional=True)
    x = np.random.default_rng(2).standard_normal((5, 2, 3))
    ref, ref_h = np_rnn("relu", params_np(m), x, (np.zeros((4, 2, 4)),), 2, True)
    out, h = m(tp.tensor(x))
    np.testing.assert_allclose(out.detach().numpy(), ref, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(h.detach().numpy(), ref_h[0], rtol=1e-10, atol=1e-12)
    assert (out.detach().numpy() >= 0).all() and (out.detach().numpy() == 0).any()


@pytest.mark.parametrize("kw", [dict(), dict(num_layers=2, bidirectional=True), dict(batch_first=True)],
                         ids=["default", "2layers-bidir", "batch_first"])
def test_lstm_projection_matches_numpy(kw):
    T, B, F, H, P = 4, 2, 3, 5, 2
    m = make("LSTM", F, H, proj_size=P, **kw)
    L, D = kw.get("num_layers", 1), 2 if kw.get("bidirectional") else 1
    rng = np.random.default_rng(3)
    x = rng.standard_normal((T, B, F))
    h0, c0 = rng.standard_normal((L * D, B, P)), rng.standard_normal((L * D, B, H))
    ref, (rh, rc) = np_rnn("LSTM", params_np(m), x, (h0, c0), L, D == 2)
    xin = tp.tensor(x.transpose(1, 0, 2).copy() if kw.get("batch_first") else x)
    out, (h, c) = m(xin, (tp.tensor(h0), tp.tensor(c0)))
    got = out.detach().numpy()
    if kw.get("batch_first"):
        got = got.transpose(1, 0, 2)
    assert got.shape == (T, B, D * P) and tuple(h.shape) == (L * D, B, P) and tuple(c.shape) == (L * D, B, H)
    np.testing.assert_allclose(got, ref, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(h.detach().numpy(), rh, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(c.detach().numpy(), rc, rtol=1e-10, atol=1e-12)
    # zero initial state defaults have the projected size for h
    out2, (h2, c2) = m(xin)
    assert tuple(h2.shape) == (L * D, B, P) and tuple(c2.shape) == (L * D, B, H)


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
def test_unbatched_input(kind, batch_first):
    T, F, H = 4, 3, 5
    m = make(kind, F, H, num_layers=2, bidirectional=True, batch_first=batch_first)
    rng = np.random.default_rng(4)
    x = rng.standard_normal((T, F))
    states = tuple(rng.standard_normal((4, H)) for _ in range(2 if kind == "LSTM" else 1))
    ref, ref_states = np_rnn(MODES[kind], params_np(m), x[:, None], tuple(s[:, None] for s in states), 2, True)
    hx = tuple(tp.tensor(s) for s in states) if kind == "LSTM" else tp.tensor(states[0])
    out, hn = m(tp.tensor(x), hx)
    assert tuple(out.shape) == (T, 2 * H)
    np.testing.assert_allclose(out.detach().numpy(), ref[:, 0], rtol=1e-10, atol=1e-12)
    for a, b in zip(hn if kind == "LSTM" else (hn,), ref_states):
        assert tuple(a.shape) == (4, H)
        np.testing.assert_allclose(a.detach().numpy(), b[:, 0], rtol=1e-10, atol=1e-12)
    # without a state: the same as a batch of one
    out1, _ = m(tp.tensor(x))
    outb, _ = m(tp.tensor(x[None] if batch_first else x[:, None]))
    np.testing.assert_allclose(out1.detach().numpy(), outb.detach().numpy().squeeze(0 if batch_first else 1))


@pytest.mark.parametrize("cls,mode", [(nn.RNNCell, "tanh"), (nn.LSTMCell, "LSTM"), (nn.GRUCell, "GRU")])
@pytest.mark.parametrize("bias", [True, False])
def test_cells_match_numpy(cls, mode, bias):
    tp.manual_seed(0)
    c = cls(3, 4, bias=bias).double()
    p = params_np(c)
    w = (p["weight_ih"], p["weight_hh"], p.get("bias_ih"), p.get("bias_hh"))
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 3))
    st = tuple(rng.standard_normal((2, 4)) for _ in range(2 if mode == "LSTM" else 1))
    ref = np_cell(mode, x, st, *w)
    got = c(tp.tensor(x), tuple(tp.tensor(s) for s in st) if mode == "LSTM" else tp.tensor(st[0]))
    got = got if mode == "LSTM" else (got,)
    for a, b in zip(got, ref):
        np.testing.assert_allclose(a.detach().numpy(), b, rtol=1e-10, atol=1e-12)
    # no state: zeros
    ref0 = np_cell(mode, x, tuple(np.zeros((2, 4)) for _ in st), *w)
    got0 = c(tp.tensor(x))
    got0 = got0 if mode == "LSTM" else (got0,)
    for a, b in zip(got0, ref0):
        np.testing.assert_allclose(a.detach().numpy(), b, rtol=1e-10, atol=1e-12)
    # unbatched
    gu = c(tp.tensor(x[0]), tuple(tp.tensor(s[0]) for s in st) if mode == "LSTM" else tp.tensor(st[0][0]))
    gu = gu if mode == "LSTM" else (gu,)
    for a, b in zip(gu, ref):
        assert tuple(a.shape) == (4,)
        np.testing.assert_allclose(a.detach().numpy(), b[0], rtol=1e-10, atol=1e-12)


def test_rnncell_relu():
    tp.manual_seed(0)
    c = nn.RNNCell(3, 4, nonlinearity="relu").double()
    p = params_np(c)
    x, h = np.random.default_rng(6).standard_normal((2, 2, 3))[0], np.random.default_rng(7).standard_normal((2, 4))
    ref = np_cell("relu", x, (h,), p["weight_ih"], p["weight_hh"], p["bias_ih"], p["bias_hh"])[0]
    np.testing.assert_allclose(c(tp.tensor(x), tp.tensor(h)).detach().numpy(), ref, rtol=1e-10, atol=1e-12)


def test_cell_loop_equals_module():
    """Unrolling a cell with the module's layer-0 weights gives the module's output."""
    m = make("LSTM", 3, 4)
    cell = nn.LSTMCell(3, 4).double()
    with tp.no_grad():
        for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
            getattr(cell, n).copy_(getattr(m, n + "_l0"))
    x = tp.randn(5, 2, 3, dtype=tp.float64)
    out, (h, c) = m(x)
    state = None
    for t in range(5):
        state = cell(x[t], state)
        np.testing.assert_allclose(state[0].detach().numpy(), out[t].detach().numpy(), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(state[1].detach().numpy(), c[0].detach().numpy(), rtol=1e-12, atol=1e-14)


def test_float32_forward_and_backward():
    m = nn.GRU(3, 4, num_layers=2, bidirectional=True)
    x = tp.randn(6, 2, 3, requires_grad=True)
    out, h = m(x)
    assert out.dtype == tp.float32 and h.dtype == tp.float32
    (out.sum() + h.pow(2).sum()).backward()
    assert x.grad.shape == x.shape
    assert all(p.grad is not None and p.grad.shape == p.shape for p in m.parameters())


# -- gradients --------------------------------------------------------------------------------------
def _functional(m, names):
    """f(input, h0..., *params) running module m with the given parameter tensors."""
    def call(inputs, params, unpack):
        saved = {n: m._parameters[n] for n in names}
        try:
            for n, p in zip(names, params):
                m._parameters[n] = p
            return unpack(inputs)
        finally:
            m._parameters.update(saved)
    return call


def _check_module_grads(m, x, hx, second_order):
    names = [n for n, _ in m.named_parameters()]
    params = [p.detach().clone().requires_grad_() for p in m.parameters()]
    call = _functional(m, names)
    n_state = 0 if hx is None else (len(hx) if isinstance(hx, tuple) else 1)

    def f(*args):
        inp, states, ps = args[0], args[1:1 + n_state], args[1 + n_state:]

        def run(_):
            if n_state == 0:
                out, h = m(inp)
            else:
                out, h = m(inp, states if isinstance(hx, tuple) else states[0])
            return (out,) + (h if isinstance(h, tuple) else (h,))
        return call(None, ps, run)

    states = () if hx is None else (hx if isinstance(hx, tuple) else (hx,))
    inputs = (x,) + tuple(states) + tuple(params)
    assert gradcheck(f, inputs, eps=1e-6, atol=1e-7, rtol=1e-5)
    if second_order:
        assert gradgradcheck(f, inputs, eps=1e-6, atol=1e-6, rtol=1e-4)


@pytest.mark.parametrize("kind,kw", [
    ("RNN", dict(num_layers=2, bidirectional=True)),
    ("RNN", dict(nonlinearity="relu", batch_first=True)),
    ("LSTM", dict(num_layers=2, bidirectional=True)),
    ("LSTM", dict(proj_size=1, bidirectional=True)),
    ("GRU", dict(num_layers=2, bidirectional=True)),
    ("GRU", dict(bias=False, batch_first=True)),
], ids=lambda v: v if isinstance(v, str) else "-".join(f"{k}={x}" for k, x in v.items()))
def test_gradcheck_modules(kind, kw):
    m = make(kind, 2, 2, **kw)
    L, D = kw.get("num_layers", 1), 2 if kw.get("bidirectional") else 1
    Hh = kw.get("proj_size", 0) or 2
    x = tp.randn(*((2, 3, 2) if kw.get("batch_first") else (3, 2, 2)), dtype=tp.float64, requires_grad=True)
    h0 = tp.randn(L * D, 2, Hh, dtype=tp.float64, requires_grad=True)
    hx = (h0, tp.randn(L * D, 2, 2, dtype=tp.float64, requires_grad=True)) if kind == "LSTM" else h0
    _check_module_grads(m, x, hx, second_order=False)


@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
def test_gradgradcheck_modules(kind):
    m = make(kind, 2, 2, num_layers=2, bidirectional=(kind != "RNN"))
    D = 2 if kind != "RNN" else 1
    x = tp.randn(2, 1, 2, dtype=tp.float64, requires_grad=True)
    h0 = tp.randn(2 * D, 1, 2, dtype=tp.float64, requires_grad=True)
    hx = (h0, tp.randn(2 * D, 1, 2, dtype=tp.float64, requires_grad=True)) if kind == "LSTM" else h0
    _check_module_grads(m, x, hx, second_order=True)


def test_gradgradcheck_lstm_projection_no_state():
    m = make("LSTM", 2, 3, proj_size=2)
    x = tp.randn(2, 1, 2, dtype=tp.float64, requires_grad=True)
    _check_module_grads(m, x, None, second_order=True)


@pytest.mark.parametrize("cls", [nn.RNNCell, nn.LSTMCell, nn.GRUCell])
def test_grad_and_gradgradcheck_cells(cls):
    tp.manual_seed(0)
    c = cls(2, 3).double()
    names = [n for n, _ in c.named_parameters()]
    call = _functional(c, names)
    lstm = cls is nn.LSTMCell

    def f(x, h, *rest):
        if lstm:
            cc, ps = rest[0], rest[1:]
            return call(None, ps, lambda _: c(x, (h, cc)))
        return call(None, rest, lambda _: c(x, h))

    x = tp.randn(2, 2, dtype=tp.float64, requires_grad=True)
    h = tp.randn(2, 3, dtype=tp.float64, requires_grad=True)
    extra = (tp.randn(2, 3, dtype=tp.float64, requires_grad=True),) if lstm else ()
    params = tuple(p.detach().clone().requires_grad_() for p in c.parameters())
    inputs = (x, h) + extra + params
    assert gradcheck(f, inputs, eps=1e-6, atol=1e-7, rtol=1e-5)
    assert gradgradcheck(f, inputs, eps=1e-6, atol=1e-6, rtol=1e-4)


def test_double_backward_through_gru_grad_penalty():
    """The seed's pattern on a recurrent model: penalise the norm of the parameter gradients."""
    m = make("GRU", 3, 4, num_layers=2)
    x = tp.randn(5, 2, 3, dtype=tp.float64)
    out, _ = m(x)
    grads = tp.autograd.grad(out.pow(2).sum(), list(m.parameters()), create_graph=True)
    penalty = sum(g.pow(2).sum() for g in grads)
    penalty.backward()
    assert all(p.grad is not None and float(p.grad.abs().sum()) > 0 for p in m.parameters())


# -- dropout between layers -------------------------------------------------------------------------
def test_dropout_only_between_layers_and_only_in_training():
    T, B, F, H = 4, 3, 2, 5
    m = make("LSTM", F, H, num_layers=2, dropout=0.5)
    x = np.random.default_rng(8).standard_normal((T, B, F))
    zeros = tuple(np.zeros((2, B, H)) for _ in range(2))
    ref, _ = np_rnn("LSTM", params_np(m), x, zeros, 2, False)
    m.eval()
    out, _ = m(tp.tensor(x))
    np.testing.assert_allclose(out.detach().numpy(), ref, rtol=1e-10, atol=1e-12)
    m.train()
    tp.manual_seed(1)
    a, _ = m(tp.tensor(x))
    b, _ = m(tp.tensor(x))
    assert not np.allclose(a.detach().numpy(), ref)
    assert not np.allclose(a.detach().numpy(), b.detach().numpy())
    # dropout=1: the second layer sees zeros
    m.dropout = 1.0
    out1, _ = m(tp.tensor(x))
    ref1, _ = np_rnn("LSTM", params_np(m), x, zeros, 2, False, layer_inputs_override=np.zeros_like)
    np.testing.assert_allclose(out1.detach().numpy(), ref1, rtol=1e-10, atol=1e-12)


def test_dropout_not_applied_to_last_layer_or_single_layer():
    with pytest.warns(UserWarning, match="dropout option adds dropout after all but last recurrent layer"):
        m = make("GRU", 2, 3, dropout=0.9)
    x = tp.randn(4, 2, 2, dtype=tp.float64)
    m.train()
    a, _ = m(x)
    b, _ = m(x)
    np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        nn.GRU(2, 3, num_layers=2, dropout=0.9)


def test_dropout_training_scales_survivors():
    """Layer 2 made the identity (relu RNN, W_ih = I, no recurrence, no bias): in training its output
    is dropout(layer-1 output): each entry zeroed or scaled by 1 / (1 - p)."""
    tp.manual_seed(3)
    m = nn.RNN(2, 3, num_layers=2, nonlinearity="relu", dropout=0.5).double()
    with tp.no_grad():
        m.weight_ih_l1.copy_(tp.eye(3, dtype=tp.float64))
        m.weight_hh_l1.zero_()
        m.bias_ih_l1.zero_()
        m.bias_hh_l1.zero_()
    x = tp.randn(1, 2000, 2, dtype=tp.float64)
    m.eval()
    ref = m(x)[0].detach().numpy()
    m.train()
    got = m(x)[0].detach().numpy()
    pos = ref > 1e-9
    ratio = got[pos] / ref[pos]
    assert np.all(np.isclose(ratio, 0) | np.isclose(ratio, 2))
    assert 0.45 < np.mean(np.isclose(ratio, 0)) < 0.55
    np.testing.assert_array_equal(got[~pos], 0)


# -- packed sequences -------------------------------------------------------------------------------
def _rnn_utils():
    try:
        from tensorplug.nn.utils import rnn as rnn_utils
    except ImportError:
        return None
    if not hasattr(rnn_utils, "pack_padded_sequence"):
        return None
    return rnn_utils


@pytest.mark.parametrize("enforce_sorted", [True, False])
@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
def test_packed_sequence_matches_per_sequence_runs(kind, enforce_sorted):
    rnn_utils = _rnn_utils()
    if rnn_utils is None:
        pytest.skip("tensorplug.nn.utils.rnn.pack_padded_sequence is not available")
    F, H = 3, 4
    m = make(kind, F, H, num_layers=2, bidirectional=True)
    lengths = [5, 3, 2] if enforce_sorted else [2, 5, 3]
    rng = np.random.default_rng(9)
    x = rng.standard_normal((5, 3, F))
    states = tuple(rng.standard_normal((4, 3, H)) for _ in range(2 if kind == "LSTM" else 1))
    packed = rnn_utils.pack_padded_sequence(tp.tensor(x), lengths, enforce_sorted=enforce_sorted)
    hx = tuple(tp.tensor(s) for s in states) if kind == "LSTM" else tp.tensor(states[0])
    out, hn = m(packed, hx)
    assert isinstance(out, rnn_utils.PackedSequence)
    padded, out_lengths = rnn_utils.pad_packed_sequence(out)
    assert [int(v) for v in out_lengths.tolist()] == lengths
    p = params_np(m)
    hn = hn if kind == "LSTM" else (hn,)
    for b, n in enumerate(lengths):
        ref, ref_states = np_rnn(MODES[kind], p, x[:n, b:b + 1], tuple(s[:, b:b + 1] for s in states), 2, True)
        np.testing.assert_allclose(padded.detach().numpy()[:n, b], ref[:, 0], rtol=1e-10, atol=1e-12)
        assert np.all(padded.detach().numpy()[n:, b] == 0)
        for a, r in zip(hn, ref_states):
            np.testing.assert_allclose(a.detach().numpy()[:, b], r[:, 0], rtol=1e-10, atol=1e-12)


def test_packed_sequence_gradcheck():
    rnn_utils = _rnn_utils()
    if rnn_utils is None:
        pytest.skip("tensorplug.nn.utils.rnn.pack_padded_sequence is not available")
    m = make("LSTM", 2, 2, bidirectional=True)

    def f(x):
        packed = rnn_utils.pack_padded_sequence(x, [3, 1], enforce_sorted=False)
        out, (h, c) = m(packed)
        return out.data, h, c
    x = tp.randn(3, 2, 2, dtype=tp.float64, requires_grad=True)
    assert gradcheck(f, (x,), eps=1e-6, atol=1e-7, rtol=1e-5)
    assert gradgradcheck(f, (x,), eps=1e-6, atol=1e-6, rtol=1e-4)


# -- errors -----------------------------------------------------------------------------------------
def test_constructor_errors():
    with pytest.raises(ValueError, match="Unknown nonlinearity 'sigmoid'"):
        nn.RNN(3, 4, nonlinearity="sigmoid")
    with pytest.raises(ValueError, match="proj_size has to be smaller than hidden_size"):
        nn.LSTM(3, 4, proj_size=4)
    with pytest.raises(ValueError, match="proj_size argument is only supported for LSTM"):
        nn.GRU(3, 4, proj_size=2)
    with pytest.raises(ValueError, match="dropout should be a number in range"):
        nn.LSTM(3, 4, dropout=1.5)
    with pytest.raises(ValueError, match="hidden_size must be greater than zero"):
        nn.GRU(3, 0)
    with pytest.raises(TypeError, match="hidden_size should be of type int"):
        nn.GRU(3, 2.0)
    with pytest.raises(ValueError, match="num_layers must be greater than zero"):
        nn.RNN(3, 4, num_layers=0)


def test_forward_errors():
    m = nn.LSTM(3, 4, num_layers=2)
    with pytest.raises(RuntimeError, match="input.size\\(-1\\) must be equal to input_size. Expected 3, got 5"):
        m(tp.randn(2, 1, 5))
    with pytest.raises(ValueError, match="Expected input to be 2D or 3D, got 4D"):
        m(tp.randn(2, 1, 1, 3))
    with pytest.raises(RuntimeError, match=r"Expected hidden\[0\] size \(2, 1, 4\), got \[1, 1, 4\]"):
        m(tp.randn(2, 1, 3), (tp.zeros(1, 1, 4), tp.zeros(2, 1, 4)))
    with pytest.raises(RuntimeError, match="For batched 3-D input, hx and cx should also be 3-D"):
        m(tp.randn(2, 1, 3), (tp.zeros(2, 4), tp.zeros(2, 4)))
    with pytest.raises(ValueError, match="does not match weight dtype"):
        m(tp.randn(2, 1, 3, dtype=tp.float64))
    g = nn.GRU(3, 4)
    with pytest.raises(RuntimeError, match=r"Expected hidden size \(1, 2, 4\), got \[1, 3, 4\]"):
        g(tp.randn(5, 2, 3), tp.zeros(1, 3, 4))
    with pytest.raises(RuntimeError, match="For unbatched 2-D input, hx should also be 2-D but got 3-D tensor"):
        g(tp.randn(5, 3), tp.zeros(1, 1, 4))
    c = nn.GRUCell(3, 4)
    with pytest.raises(RuntimeError, match="input has inconsistent input_size: got 5 expected 3"):
        c(tp.randn(2, 5))
    with pytest.raises(RuntimeError, match="hidden0 has inconsistent hidden_size: got 5, expected 4"):
        c(tp.randn(2, 3), tp.randn(2, 5))
    with pytest.raises(RuntimeError, match="Input batch size 2 doesn't match hidden0 batch size 3"):
        c(tp.randn(2, 3), tp.randn(3, 4))
    with pytest.raises(ValueError, match="GRUCell: Expected input to be 1D or 2D, got 3D instead"):
        c(tp.randn(1, 2, 3))


def test_state_dict_round_trip_and_to():
    a, b = nn.LSTM(3, 4, 2, bidirectional=True), nn.LSTM(3, 4, 2, bidirectional=True)
    b.load_state_dict(a.state_dict())
    x = tp.randn(4, 2, 3)
    np.testing.assert_array_equal(a(x)[0].detach().numpy(), b(x)[0].detach().numpy())
    b.to(tp.float64)
    assert b(x.double())[0].dtype == tp.float64
    assert all(w.dtype == tp.float64 for w in b._flat_weights)


def test_no_grad_and_empty_sequence():
    m = nn.GRU(3, 4, num_layers=2, bidirectional=True)
    with tp.no_grad():
        out, h = m(tp.randn(5, 2, 3))
    assert not out.requires_grad and not h.requires_grad and out.grad_fn is None
    with pytest.raises(RuntimeError, match="Expected sequence length to be larger than 0"):
        m(tp.randn(0, 2, 3))
