"""Graph and Node: building, naming, printing, editing, copying, dead-code elimination, lint."""
import operator
import sys

import numpy as np
import pytest

import tensorplug as torch
import tensorplug.fx as fx


def _small_graph():
    g = fx.Graph()
    a = g.placeholder("a")
    b = g.placeholder("b", default_value=3)
    c = g.call_function(operator.add, (a, b))
    d = g.call_method("mul", (c, 2))
    e = g.call_function(torch.sin, (d,))
    g.output(e)
    return g, (a, b, c, d, e)


def test_names_follow_targets_and_avoid_builtins():
    """Node names: the target's name, `_N` suffixes on reuse, builtins (max, float) never shadowed."""
    g = fx.Graph()
    x = g.placeholder("x")
    n1 = g.call_function(operator.add, (x, 1))
    n2 = g.call_function(operator.add, (n1, 1))
    m = g.call_function(torch.max, (n2,))
    f = g.call_method("float", (m,))
    s = g.call_method("sum", (f,))
    w = g.get_attr("linear.weight")
    mod = g.call_module("seq.0", (s,))
    assert [n.name for n in (n1, n2, m, f, s, w, mod)] == [
        "add", "add_1", "max_1", "float_1", "sum_1", "linear_weight", "seq_0"]


def test_str_and_python_code():
    """print(graph) and python_code match torch.fx's formats (defaults, operators, frees)."""
    g, _ = _small_graph()
    assert str(g) == (
        "graph():\n"
        "    %a : [num_users=1] = placeholder[target=a]\n"
        "    %b : [num_users=1] = placeholder[target=b](default=3)\n"
        "    %add : [num_users=1] = call_function[target=operator.add](args = (%a, %b), kwargs = {})\n"
        "    %mul : [num_users=1] = call_method[target=mul](args = (%add, 2), kwargs = {})\n"
        "    %sin : [num_users=1] = call_function[target=torch.sin](args = (%mul,), kwargs = {})\n"
        "    return sin")
    assert g.python_code("self").src == (
        "\n\n\ndef forward(self, a, b = 3):\n"
        "    add = a + b;  a = b = None\n"
        "    mul = add.mul(2);  add = None\n"
        "    sin = torch.sin(mul);  mul = None\n"
        "    return sin\n    ")


def test_nodes_users_and_inputs():
    """users / all_input_nodes follow args and kwargs, also after reassignment."""
    g, (a, b, c, d, e) = _small_graph()
    assert c.all_input_nodes == [a, b] and list(a.users) == [c] and list(c.users) == [d]
    d.args = (a, c)
    assert d.all_input_nodes == [a, c] and set(a.users) == {c, d}
    d.kwargs = {"other": b}
    assert d.all_input_nodes == [a, c, b] and d in b.users
    assert fx.map_arg((1, [a], {"k": b}), lambda n: n.name) == (1, ["a"], {"k": "b"})


def test_inserting_before_after_replace_and_erase():
    """Insertion points, replace_all_uses_with / replace_input_with, erase_node (users must be gone)."""
    g, (a, b, c, d, e) = _small_graph()
    with g.inserting_before(e):
        neg = g.call_function(torch.neg, (d,))
    e.replace_input_with(d, neg)
    with g.inserting_after(c):
        r1 = g.call_function(torch.relu, (c,))
        extra = g.call_function(torch.cos, (c,))     # also right after c: before r1, as in torch.fx
    with g.inserting_after(r1):
        r2 = g.call_function(torch.relu, (r1,))
    assert [n.name for n in g.nodes] == ["a", "b", "add", "cos", "relu", "relu_1", "mul", "neg", "sin", "output"]
    g.erase_node(extra)
    changed = c.replace_all_uses_with(r2, delete_user_cb=lambda u: u is not r1)
    assert changed == [d] and d.args[0] is r2
    with pytest.raises(RuntimeError, match="still had 1 users"):
        g.erase_node(r1)
    g.lint()
    gm = fx.GraphModule(torch.nn.Module(), g)
    x = np.array([0.3, -1.2])
    got = gm(torch.tensor(x), torch.tensor(0.5)).numpy()
    np.testing.assert_allclose(got, np.sin(-(np.maximum(x + 0.5, 0) * 2)), rtol=1e-6)


def test_append_prepend_move_nodes():
    """append / prepend move an existing node."""
    g, (a, b, c, d, e) = _small_graph()
    extra = g.call_function(torch.cos, (a,))
    c.prepend(extra)
    assert [n.name for n in g.nodes][:4] == ["a", "b", "cos", "add"]
    e.append(extra)
    assert [n.name for n in g.nodes][-3:] == ["sin", "cos", "output"]


def test_eliminate_dead_code_keeps_impure():
    """Dead code goes; in-place methods and placeholders stay."""
    g, (a, b, c, d, e) = _small_graph()
    with g.inserting_before(e):
        g.call_function(torch.cos, (a,))
        g.call_method("add_", (a, 1))
    assert g.eliminate_dead_code() is True
    assert [n.name for n in g.nodes] == ["a", "b", "add", "mul", "add_", "sin", "output"]
    assert g.eliminate_dead_code() is False


def test_node_copy_graph_copy_and_deepcopy():
    """graph_copy fills val_map and returns the mapped output; node_copy keeps name and meta."""
    import copy
    g, nodes = _small_graph()
    nodes[2].meta["tag"] = 1
    g2 = fx.Graph()
    vm = {}
    out = g2.graph_copy(g, vm)
    g2.output(out)
    assert str(g2) == str(g) and vm[nodes[2]].meta == {"tag": 1} and vm[nodes[4]] is out
    assert str(copy.deepcopy(g)) == str(g)


def test_lint_reports_use_before_definition():
    """lint finds a node moved before its input and a foreign-graph argument."""
    g, (a, b, c, d, e) = _small_graph()
    c.prepend(d)
    with pytest.raises(RuntimeError, match="used before it has been defined"):
        g.lint()
    other = fx.Graph()
    p = other.placeholder("p")
    g2, (_, _, c2, _, _) = _small_graph()
    c2.args = (p, 1)
    with pytest.raises(RuntimeError, match="does not belong to this Graph"):
        g2.lint()


def test_print_tabular(capsys, monkeypatch):
    """print_tabular prints the table with tabulate, or torch.fx's message and ImportError without it."""
    g, _ = _small_graph()
    pytest.importorskip("tabulate")
    g.print_tabular()
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["opcode", "name", "target", "args", "kwargs"]
    assert out[2].split() == ["placeholder", "a", "a", "()", "{}"]
    assert out[4].split()[:2] == ["call_function", "add"] and "(a, b)" in out[4]
    monkeypatch.setitem(sys.modules, "tabulate", None)
    with pytest.raises(ImportError):
        g.print_tabular()
    assert "`print_tabular` relies on the library `tabulate`" in capsys.readouterr().out
