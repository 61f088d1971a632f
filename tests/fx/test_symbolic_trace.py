"""symbolic_trace / Tracer / Proxy / wrap: what is recorded, how nodes are named, what errors."""
import operator

import numpy as np
import pytest

import tensorplug as torch
import tensorplug.fx as fx
import tensorplug.nn.functional as F


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(4, 3)
        self.seq = torch.nn.Sequential(torch.nn.ReLU())
        self.p = torch.nn.Parameter(torch.ones(3))
        self.register_buffer("scale", torch.full((3,), 2.0))

    def forward(self, x, y=2):
        a = self.linear(x) + self.linear.weight.sum()
        b = torch.relu(a) * y
        c = F.relu(b).sum(dim=1, keepdim=True)
        d = self.seq(c) - self.p * self.scale
        e = d.view(x.shape[0], -1)[0]
        unused = x + 1  # noqa: F841
        return {"out": -torch.max(e), "pair": (d, e.float())}


NET_CODE = (
    "\n\n\ndef forward(self, x, y = 2):\n"
    "    linear = self.linear(x)\n"
    "    linear_weight = self.linear.weight\n"
    "    sum_1 = linear_weight.sum();  linear_weight = None\n"
    "    add = linear + sum_1;  linear = sum_1 = None\n"
    "    relu = torch.relu(add);  add = None\n"
    "    mul = relu * y;  relu = y = None\n"
    "    relu_1 = torch.nn.functional.relu(mul, inplace = False);  mul = None\n"
    "    sum_2 = relu_1.sum(dim = 1, keepdim = True);  relu_1 = None\n"
    "    seq_0 = getattr(self.seq, \"0\")(sum_2);  sum_2 = None\n"
    "    p = self.p\n"
    "    scale = self.scale\n"
    "    mul_1 = p * scale;  p = scale = None\n"
    "    sub = seq_0 - mul_1;  seq_0 = mul_1 = None\n"
    "    getattr_1 = x.shape\n"
    "    getitem = getattr_1[0];  getattr_1 = None\n"
    "    view = sub.view(getitem, -1);  getitem = None\n"
    "    getitem_1 = view[0];  view = None\n"
    "    add_1 = x + 1;  x = add_1 = None\n"
    "    max_1 = torch.max(getitem_1)\n"
    "    neg = -max_1;  max_1 = None\n"
    "    float_1 = getitem_1.float();  getitem_1 = None\n"
    "    return {'out': neg, 'pair': (sub, float_1)}\n    ")


def test_trace_records_functions_methods_operators_attributes():
    """torch.relu, F.relu, methods, operators, parameters / buffers, x.shape: torch.fx's code and names."""
    torch.manual_seed(0)
    m = Net()
    gm = fx.symbolic_trace(m)
    assert gm.code == NET_CODE
    ops = [(n.op, n.target) for n in gm.graph.nodes]
    assert ("call_function", torch.relu) in ops and ("call_function", F.relu) in ops
    assert ("call_function", operator.add) in ops and ("call_method", "view") in ops
    assert ("call_module", "linear") in ops and ("get_attr", "scale") in ops
    x = torch.randn(2, 4)
    want, got = m(x, 3), gm(x, 3)
    np.testing.assert_allclose(got["out"].detach().numpy(), want["out"].detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(got["pair"][1].detach().numpy(), want["pair"][1].detach().numpy(), rtol=1e-6)


def test_graph_module_copies_only_used_attributes():
    """The GraphModule holds what the graph reads; containers on the way are plain Modules."""
    gm = fx.symbolic_trace(Net())
    assert type(gm).__name__ == "Net"
    assert type(gm.seq) is torch.nn.Module and isinstance(getattr(gm.seq, "0"), torch.nn.ReLU)
    assert "scale" in dict(gm.named_buffers()) and "p" in dict(gm.named_parameters())


def test_node_kinds_and_all_input_nodes():
    """The op kinds are torch.fx's six; users and inputs are linked."""
    gm = fx.symbolic_trace(lambda x: (x + 1).relu() - 1)
    rows = [(n.name, n.op, [a.name for a in n.all_input_nodes], [u.name for u in n.users]) for n in gm.graph.nodes]
    assert rows == [("x", "placeholder", [], ["add"]), ("add", "call_function", ["x"], ["relu"]),
                    ("relu", "call_method", ["add"], ["sub"]), ("sub", "call_function", ["relu"], ["output"]),
                    ("output", "output", ["sub"], [])]


def test_reflected_operators_and_unpacking():
    """1 - x records operator.sub(1, x); `a, b = proxy` unpacks into getitem nodes; x.size(0) is a method."""
    def f(x, y):
        a, b = x.split(2)
        return 1 - a + b + y[1] + x.size(0)
    gm = fx.symbolic_trace(f)
    assert gm.code == (
        "\n\n\ndef forward(self, x, y):\n"
        "    split = x.split(2)\n"
        "    getitem = split[0]\n"
        "    getitem_1 = split[1];  split = None\n"
        "    sub = 1 - getitem;  getitem = None\n"
        "    add = sub + getitem_1;  sub = getitem_1 = None\n"
        "    getitem_2 = y[1];  y = None\n"
        "    add_1 = add + getitem_2;  add = getitem_2 = None\n"
        "    size = x.size(0);  x = None\n"
        "    add_2 = add_1 + size;  add_1 = size = None\n"
        "    return add_2\n    ")
    x, y = torch.arange(4.0), torch.tensor([5.0, 7.0])
    np.testing.assert_allclose(gm(x, y).numpy(), 1 - np.array([0.0, 1]) + np.array([2.0, 3]) + 7 + 4)


def test_control_flow_iteration_len_errors():
    """bool / iteration / len on a Proxy raise torch.fx's errors."""
    def branch(x):
        if x.sum() > 0:
            return x

    def loop(x):
        for _ in x:
            pass

    def length(x):
        return len(x)
    with pytest.raises(fx.proxy.TraceError, match="cannot be used as inputs to control flow"):
        fx.symbolic_trace(branch)
    with pytest.raises(fx.proxy.TraceError, match="Proxy object cannot be iterated"):
        fx.symbolic_trace(loop)
    with pytest.raises(RuntimeError, match="'len' is not supported in symbolic tracing by default"):
        fx.symbolic_trace(length)


def test_concrete_args_specialize():
    """A concrete argument is asserted (placeholder name_1) and its branch taken."""
    def h(x, flag):
        return x * 2 if flag else x
    gm = fx.symbolic_trace(h, concrete_args={"flag": True})
    assert gm.code == (
        "\n\n\ndef forward(self, x, flag_1):\n"
        "    eq = flag_1 == True;  flag_1 = None\n"
        "    _assert = torch.fx._symbolic_trace._assert(eq, 'flag has been specialized to have value True "
        "but got another value');  eq = _assert = None\n"
        "    mul = x * 2;  x = None\n"
        "    return mul\n    ")
    np.testing.assert_allclose(gm(torch.tensor([1.5]), True).numpy(), [3.0])
    with pytest.raises(AssertionError, match="specialized"):
        gm(torch.tensor([1.5]), False)


def test_custom_tracer_leaf_modules_and_create_node():
    """is_leaf_module and create_node overrides (custom_tracer's patterns)."""
    class M1(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.relu = torch.nn.ReLU()

        def forward(self, x):
            return self.relu(x)

    class LowerRelu(fx.Tracer):
        def is_leaf_module(self, m, qualname):
            return False if isinstance(m, torch.nn.ReLU) else super().is_leaf_module(m, qualname)

    class Tagging(fx.Tracer):
        def create_node(self, kind, target, args, kwargs, name=None, type_expr=None):
            n = super().create_node(kind, target, args, kwargs, name)
            n.tag = "foo"
            return n
    default = fx.symbolic_trace(M1()).graph
    assert [(n.op, n.name, n.target) for n in default.nodes][1] == ("call_module", "relu", "relu")
    lowered = LowerRelu().trace(M1())
    node = list(lowered.nodes)[1]
    assert (node.op, node.name, node.target, node.args[0].name, node.kwargs) == (
        "call_function", "relu", F.relu, "x", {"inplace": False})
    assert all(n.tag == "foo" for n in Tagging().trace(M1()).nodes)


def test_non_leaf_tracer_traces_into_layers():
    """A tracer without leaves records the layers' functional calls (F.linear with parameters)."""
    class NoLeaves(fx.Tracer):
        def is_leaf_module(self, m, q):
            return False
    torch.manual_seed(1)
    m = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.LeakyReLU(0.2))
    g = NoLeaves().trace(m)
    assert [(n.op, n.name) for n in g.nodes] == [
        ("placeholder", "input_1"), ("get_attr", "_0_weight"), ("get_attr", "_0_bias"), ("call_function", "linear"),
        ("call_function", "leaky_relu"), ("output", "output")]
    assert list(g.nodes)[0].target == "input" and list(g.nodes)[1].target == "0.weight"
    leaky = [n for n in g.nodes if n.name == "leaky_relu"][0]
    assert leaky.kwargs == {"negative_slope": 0.2, "inplace": False}
    gm = fx.GraphModule(m, g)
    assert gm.code.startswith('\n\n\ndef forward(self, input):\n    input_1 = input\n'
                              '    _0_weight = getattr(self, "0").weight\n')
    x = torch.randn(4, 3)
    np.testing.assert_allclose(gm(x).detach().numpy(), m(x).detach().numpy(), rtol=1e-6)


def _lowp(x):
    return x.float().sigmoid().half()


fx.wrap(_lowp)


def test_wrap_keeps_function_as_leaf():
    """A wrapped function is one call_function node; the code re-registers it with wrap(...)."""
    class Foo(torch.nn.Module):
        def forward(self, x):
            return _lowp(x) * 2
    gm = fx.symbolic_trace(Foo())
    g = __name__.replace(".", "_") + "__lowp"
    assert gm.code == (f'\ntorch.fx._symbolic_trace.wrap("{g}")\n\ndef forward(self, x):\n'
                       f'    _lowp = {g}(x);  x = None\n'
                       f'    mul = _lowp * 2;  _lowp = None\n'
                       f'    return mul\n    ')
    node = [n for n in gm.graph.nodes if n.op == "call_function"][0]
    assert node.target is _lowp and node.meta["is_wrapped"] is True
    x = torch.tensor([0.0, 2.0])
    np.testing.assert_allclose(gm(x).numpy(), 2 / (1 + np.exp(-np.array([0.0, 2.0]))), rtol=1e-3)
    with pytest.raises(NotImplementedError, match="top level"):
        fx.wrap(_lowp)


def test_graph_appending_tracer_inlines_a_module():
    """Proxies over an existing graph's nodes append to it (inline_function's pattern)."""
    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.relu = torch.nn.ReLU()

        def forward(self, x):
            return self.relu(x) + 1.0
    m = fx.symbolic_trace(M())
    tracer = fx.proxy.GraphAppendingTracer(m.graph)
    for node in m.graph.nodes:
        if (node.op, node.target) == ("call_module", "relu"):
            with m.graph.inserting_before(node):
                args = fx.node.map_arg(node.args, lambda n: fx.Proxy(n, tracer))
                out = m.relu(*args)
                node.replace_all_uses_with(out.node)
                m.graph.erase_node(node)
    m.recompile()
    assert m.code == ("\n\n\ndef forward(self, x):\n"
                      "    relu_1 = torch.nn.functional.relu(x, inplace = False);  x = None\n"
                      "    add = relu_1 + 1.0;  relu_1 = None\n"
                      "    return add\n    ")
    np.testing.assert_allclose(m(torch.tensor([-1.0, 2.0])).numpy(), [1.0, 3.0])


def test_proxy_based_graph_creation():
    """torch.cat / tanh / neg on Proxies of a fresh graph (proxy_based_graph_creation's pattern)."""
    graph = fx.Graph()
    tracer = fx.proxy.GraphAppendingTracer(graph)
    x, y = fx.Proxy(graph.placeholder("x"), tracer), fx.Proxy(graph.placeholder("y"), tracer)
    c = torch.neg(torch.tanh(torch.cat([x, y])))
    assert repr(c) == "Proxy(neg)"
    graph.output(c.node)
    mod = fx.GraphModule(torch.nn.Module(), graph)
    assert mod.code == ("\n\n\ndef forward(self, x, y):\n"
                        "    cat = torch.cat([x, y]);  x = y = None\n"
                        "    tanh = torch.tanh(cat);  cat = None\n"
                        "    neg = torch.neg(tanh);  tanh = None\n"
                        "    return neg\n    ")
    a, b = np.array([0.5, -0.25]), np.array([1.0])
    np.testing.assert_allclose(mod(torch.tensor(a), torch.tensor(b)).numpy(), -np.tanh(np.r_[a, b]), rtol=1e-6)


def test_tensor_constants_become_attributes():
    """A tensor the forward closes over is stored as _tensor_constant0 and read with get_attr."""
    const = torch.tensor([1.0, 2.0])
    gm = fx.symbolic_trace(lambda x: x + const)
    assert gm.code == ("\n\n\ndef forward(self, x):\n"
                       "    _tensor_constant0 = self._tensor_constant0\n"
                       "    add = x + _tensor_constant0;  x = _tensor_constant0 = None\n"
                       "    return add\n    ")
    np.testing.assert_allclose(gm(torch.tensor([1.0, 1.0])).numpy(), [2.0, 3.0])


def test_replace_op_targets_compare_with_all_spellings():
    """x + y, torch.add, x.add: targets operator.add, torch.add, 'add' (replace_op's matching)."""
    gm = fx.symbolic_trace(lambda x, y: (x + y, torch.add(x, y), x.add(y)))
    patterns = {operator.add, torch.add, "add"}
    hits = [n for n in gm.graph.nodes if any(n.target == p for p in patterns)]
    assert [n.name for n in hits] == ["add", "add_1", "add_2"]
    for n in hits:
        with gm.graph.inserting_after(n):
            new = gm.graph.call_function(torch.bitwise_and, n.args, n.kwargs)
            n.replace_all_uses_with(new)
        gm.graph.erase_node(n)
    gm.recompile()
    a, b = torch.tensor([6, 3]), torch.tensor([3, 5])
    assert [t.tolist() for t in gm(a, b)] == [[2, 1]] * 3


def test_tracer_call_module_and_getattr_hooks():
    """call_module can keep a Sequential whole; getattr can hand back a parameter's value itself."""
    class Whole(fx.Tracer):
        def call_module(self, m, forward, args, kwargs):
            if isinstance(m, torch.nn.Sequential):
                return self.create_proxy("call_module", self.path_of_module(m), args, kwargs)
            return super().call_module(m, forward, args, kwargs)

    class Inline(fx.Tracer):
        def getattr(self, attr, attr_val, cache):
            return attr_val.detach() if attr == "p" else super().getattr(attr, attr_val, cache)

    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.body = torch.nn.Sequential(torch.nn.ReLU(), torch.nn.Tanh())
            self.p = torch.nn.Parameter(torch.tensor([2.0]))

        def forward(self, x):
            return self.body(x) * self.p
    m = M()
    assert [(n.op, n.target) for n in Whole().trace(m).nodes][1:3] == [("call_module", "body"), ("get_attr", "p")]
    g = Inline().trace(m)
    assert [n.target for n in g.nodes if n.op == "get_attr"] == ["_tensor_constant0"]
    gm = fx.GraphModule(m, g)
    x = np.array([-1.0, 0.5])
    np.testing.assert_allclose(gm(torch.tensor(x)).detach().numpy(), np.tanh(np.maximum(x, 0)) * 2, rtol=1e-6)


def test_gradients_through_a_traced_module():
    """The generated forward is ordinary tensorplug code: gradients of any order (gradgradcheck)."""
    from tensorplug.autograd import gradcheck, gradgradcheck
    gm = fx.symbolic_trace(lambda x, y: torch.tanh(x * y).sum() + (x ** 3).mean())
    x = torch.tensor([0.3, -0.7], dtype=torch.float64, requires_grad=True)
    y = torch.tensor([1.1, 0.4], dtype=torch.float64, requires_grad=True)
    assert gradcheck(gm, (x, y)) and gradgradcheck(gm, (x, y))
