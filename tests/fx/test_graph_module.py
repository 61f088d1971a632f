"""GraphModule: generated code and forward, recompile after edits, printing, to_folder, copies."""
import copy
import importlib

import numpy as np

import tensorplug as torch
import tensorplug.fx as fx


class Small(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 2)
        self.register_buffer("shift", torch.tensor([0.5, -0.5]))

    def forward(self, x):
        return torch.relu(self.lin(x) + self.shift)


def _x():
    return torch.tensor([[0.1, -0.2, 0.3], [1.0, 2.0, -3.0]])


def _ref(m, x):
    w, b = m.lin.weight.detach().numpy().astype(np.float64), m.lin.bias.detach().numpy().astype(np.float64)
    return np.maximum(x.numpy().astype(np.float64) @ w.T + b + np.array([0.5, -0.5]), 0)


def test_forward_matches_float64_reference():
    """The generated forward computes what the module does."""
    torch.manual_seed(0)
    m = Small()
    gm = fx.symbolic_trace(m)
    np.testing.assert_allclose(gm(_x()).detach().numpy(), _ref(m, _x()), rtol=1e-5, atol=1e-6)


def test_recompile_and_graph_setter():
    """Edits show after recompile(); assigning graph recompiles."""
    torch.manual_seed(0)
    gm = fx.symbolic_trace(Small())
    relu = [n for n in gm.graph.nodes if n.name == "relu"][0]
    relu.target = torch.sigmoid
    gm.recompile()
    assert "sigmoid = torch.sigmoid" not in gm.code and "relu = torch.sigmoid(add)" in gm.code
    g = fx.Graph()
    x = g.placeholder("x")
    g.output(g.call_function(torch.neg, (x,)))
    gm.graph = g
    assert gm.code == "\n\n\ndef forward(self, x):\n    neg = torch.neg(x);  x = None\n    return neg\n    "
    assert gm(torch.tensor([2.0])).tolist() == [-2.0]


def test_str_and_print_readable(capsys):
    """str(gm): module repr, code, reminder; print_readable: the code as a class."""
    torch.manual_seed(0)
    gm = fx.symbolic_trace(Small())
    s = str(gm)
    assert s.startswith("Small(\n  (lin): Linear(in_features=3, out_features=2, bias=True)\n)\n"
                        "\n\n\ndef forward(self, x):")
    assert s.endswith("# To see more debug info, please use `graph_module.print_readable()`")
    text = gm.print_readable()
    assert capsys.readouterr().out == text + "\n"
    assert text == ("class Small(torch.nn.Module):\n"
                    "    def forward(self, x):\n"
                    "        # No stacktrace found for following nodes\n"
                    "        lin = self.lin(x);  x = None\n"
                    "        shift = self.shift\n"
                    "        add = lin + shift;  lin = shift = None\n"
                    "        relu = torch.relu(add);  add = None\n"
                    "        return relu\n")


def test_root_dict_and_deepcopy():
    """A dict root provides the attributes; deepcopy gives an independent, equal module."""
    g = fx.Graph()
    x = g.placeholder("x")
    w = g.get_attr("sub.w")
    g.output(g.call_function(torch.mul, (x, w)))
    gm = fx.GraphModule({"sub.w": torch.tensor([2.0, 3.0])}, g)
    assert gm(torch.tensor([1.0, 1.0])).tolist() == [2.0, 3.0]
    gm2 = copy.deepcopy(gm)
    gm2.sub.w.mul_(10)
    assert gm(torch.tensor([1.0, 1.0])).tolist() == [2.0, 3.0]
    assert gm2(torch.tensor([1.0, 1.0])).tolist() == [20.0, 30.0] and gm2.code == gm.code


def test_instances_keep_their_own_forward():
    """Two GraphModules of different graphs do not share forward."""
    a = fx.symbolic_trace(lambda x: x + 1)
    b = fx.symbolic_trace(lambda x: x * 3)
    assert a(torch.tensor([2.0])).tolist() == [3.0] and b(torch.tensor([2.0])).tolist() == [6.0]


def test_to_folder_round_trip(tmp_path, monkeypatch):
    """to_folder writes an importable module with the weights."""
    torch.manual_seed(0)
    m = Small()
    gm = fx.symbolic_trace(m)
    gm.to_folder(tmp_path / "pkg_fx_out", "Exported")
    monkeypatch.syspath_prepend(str(tmp_path))
    mod = importlib.import_module("pkg_fx_out")
    assert (tmp_path / "pkg_fx_out" / "module.py").read_text().startswith("import tensorplug as torch\n")
    loaded = mod.Exported()
    np.testing.assert_allclose(loaded(_x()).detach().numpy(), _ref(m, _x()), rtol=1e-5, atol=1e-6)
