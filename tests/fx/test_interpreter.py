"""Interpreter and Transformer: node-by-node execution and rewriting."""
import operator

import numpy as np
import pytest

import tensorplug as torch
import tensorplug.fx as fx
import tensorplug.nn.functional as F


class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 3)

    def forward(self, x, k=2):
        y = self.lin(x) * k
        return F.relu(y).softmax(dim=-1), y.shape[0]


def test_run_matches_eager_and_defaults():
    """run() gives the eager result; a missing argument takes the placeholder's default."""
    torch.manual_seed(0)
    m = M()
    gm = fx.symbolic_trace(m)
    x = torch.randn(2, 4)
    out, n = fx.Interpreter(gm).run(x)
    want, _ = m(x)
    assert n == 2
    np.testing.assert_allclose(out.detach().numpy(), want.detach().numpy(), rtol=1e-6)
    out3, _ = fx.Interpreter(gm).run(x, 3)
    np.testing.assert_allclose(out3.detach().numpy(), m(x, 3)[0].detach().numpy(), rtol=1e-6)


def test_overriding_one_op_kind():
    """A subclass swaps call_function / call_method behaviour (negating every relu)."""
    class NegRelu(fx.Interpreter):
        def call_function(self, target, args, kwargs):
            if target == F.relu:
                return -super().call_function(target, args, kwargs)
            return super().call_function(target, args, kwargs)
    gm = fx.symbolic_trace(lambda x: F.relu(x) + torch.relu(x))
    x = torch.tensor([-1.0, 2.0])
    assert NegRelu(gm).run(x).tolist() == [0.0, 0.0]
    assert gm(x).tolist() == [0.0, 4.0]


def test_fetch_attr_initial_env_and_errors():
    """fetch_attr walks dotted paths; initial_env pre-seeds values; bad references raise."""
    torch.manual_seed(0)
    gm = fx.symbolic_trace(M())
    interp = fx.Interpreter(gm)
    assert interp.fetch_attr("lin.weight") is gm.lin.weight
    x_node = list(gm.graph.nodes)[0]
    out, _ = interp.run(initial_env={x_node: torch.zeros(1, 4)})
    assert out.shape == (1, 3)
    with pytest.raises(RuntimeError, match="nonexistent target"):
        interp.fetch_attr("lin.nope")


def test_garbage_collected_env():
    """Values are dropped after their last use (only the output's inputs remain at the end)."""
    gm = fx.symbolic_trace(lambda x: ((x + 1) * 2) - 3)
    interp = fx.Interpreter(gm)
    assert interp.run(torch.tensor([1.0])).tolist() == [1.0]
    assert {n.name for n in interp.env} == {"output"}


def test_transformer_rewrites():
    """Transformer turns mul into add and softmax into log_softmax; the result runs."""
    torch.manual_seed(0)
    m = M()
    gm = fx.symbolic_trace(m)

    class T(fx.Transformer):
        def call_function(self, target, args, kwargs):
            if target == operator.mul:
                target = operator.add
            return super().call_function(target, args, kwargs)

        def call_method(self, target, args, kwargs):
            return super().call_method("log_softmax" if target == "softmax" else target, args, kwargs)
    t = T(gm).transform()
    assert t.code == (
        "\n\n\ndef forward(self, x, k = 2):\n"
        "    lin = self.lin(x);  x = None\n"
        "    add = lin + k;  lin = k = None\n"
        "    relu = torch.nn.functional.relu(add, inplace = False)\n"
        "    log_softmax = relu.log_softmax(dim = -1);  relu = None\n"
        "    getattr_1 = add.shape;  add = None\n"
        "    getitem = getattr_1[0];  getattr_1 = None\n"
        "    return (log_softmax, getitem)\n    ")
    x = torch.randn(2, 4)
    lin = m.lin(x).detach().numpy().astype(np.float64) + 2
    r = np.maximum(lin, 0)
    want = r - r.max(-1, keepdims=True) - np.log(np.exp(r - r.max(-1, keepdims=True)).sum(-1, keepdims=True))
    np.testing.assert_allclose(t(x)[0].detach().numpy(), want, rtol=1e-5, atol=1e-6)
