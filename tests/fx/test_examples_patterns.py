"""The transformations of pytorch/examples' fx scripts, on small models of our own: inverting a
graph, inlining wrapped functions (by hand and from a tracer), wrapping an output dynamically."""
import numpy as np

import tensorplug as torch
import tensorplug.fx as fx


def test_invert_builds_a_reversed_graph():
    """Walk a traced graph backwards emitting inverse functions (names and code as torch.fx's)."""
    inverse = {}
    for a, b in [(torch.sin, torch.arcsin), (torch.tan, torch.arctan), (torch.exp, torch.log)]:
        inverse[a], inverse[b] = b, a
    traced = fx.symbolic_trace(lambda x: torch.exp(torch.tan(x)))
    g, env = fx.Graph(), {}
    for node in reversed(traced.graph.nodes):
        if node.op == "call_function":
            new = g.call_function(inverse[node.target], (env[node.name],))
            env[node.args[0].name] = new
        elif node.op == "output":
            env[node.args[0].name] = g.placeholder(node.name)
        else:
            g.output(env[node.name])
    g.lint()
    inv = fx.GraphModule(traced, g)
    assert inv.code == ("\n\n\ndef forward(self, output):\n"
                        "    log = torch.log(output);  output = None\n"
                        "    arctan = torch.arctan(log);  log = None\n"
                        "    return arctan\n    ")
    x = np.array([0.25, 0.5, 1.0])
    np.testing.assert_allclose(inv(torch.tensor(np.exp(np.tan(x)))).numpy(), x, rtol=1e-6)


def sigmoid_lowp(x):
    return x.float().sigmoid().half()


def add_lowp(a, b):
    a, b = a.float(), b.float()
    return (a + b).half()


fx.wrap(sigmoid_lowp)
fx.wrap(add_lowp)


class Foo(torch.nn.Module):
    def forward(self, x, y):
        return add_lowp(sigmoid_lowp(x), sigmoid_lowp(y))


def _want(x, y):
    s = lambda v: (1 / (1 + np.exp(-v.astype(np.float64)))).astype(np.float16)  # noqa: E731
    return (s(x).astype(np.float32) + s(y).astype(np.float32)).astype(np.float16)


def test_inline_wrapped_calls_by_hand():
    """Replace a wrapped call by its traced body (Proxies over the call's arguments)."""
    traced = fx.symbolic_trace(Foo())
    g = __name__.replace(".", "_")
    assert traced.code.startswith(f'\ntorch.fx._symbolic_trace.wrap("{g}_sigmoid_lowp")\n'
                                  f'torch.fx._symbolic_trace.wrap("{g}_add_lowp")\n\ndef forward(self, x, y):\n'
                                  f'    sigmoid_lowp = {g}_sigmoid_lowp(x);  x = None\n')
    for node in list(traced.graph.nodes):
        if node.op == "call_function" and node.target is sigmoid_lowp:
            tracer = fx.proxy.GraphAppendingTracer(node.graph)
            with node.graph.inserting_before(node):
                args = fx.node.map_arg(node.args, lambda n: fx.Proxy(n, tracer))
                node.replace_all_uses_with(node.target(*args).node)
                node.graph.erase_node(node)
    traced.recompile()
    assert traced.code == (
        f'\ntorch.fx._symbolic_trace.wrap("{g}_add_lowp")\n\ndef forward(self, x, y):\n'
        "    float_1 = x.float();  x = None\n"
        "    sigmoid = float_1.sigmoid();  float_1 = None\n"
        "    half = sigmoid.half();  sigmoid = None\n"
        "    float_2 = y.float();  y = None\n"
        "    sigmoid_1 = float_2.sigmoid();  float_2 = None\n"
        "    half_1 = sigmoid_1.half();  sigmoid_1 = None\n"
        f"    add_lowp = {g}_add_lowp(half, half_1);  half = half_1 = None\n"
        "    return add_lowp\n    ")
    x, y = np.array([0.5, -1.0], np.float32), np.array([2.0, 0.25], np.float32)
    np.testing.assert_allclose(traced(torch.tensor(x), torch.tensor(y)).numpy().astype(np.float64),
                               _want(x, y).astype(np.float64), rtol=1e-3)


def test_inlining_tracer():
    """A tracer whose create_node traces through one wrapped function instead of recording it."""
    class InliningTracer(fx.Tracer):
        FNS_TO_INLINE = [add_lowp]          # the function itself (while tracing, the global is its wrapper)

        def create_node(self, kind, target, args, kwargs, name=None, type_expr=None):
            if kind == "call_function" and target in self.FNS_TO_INLINE:
                tracer = fx.proxy.GraphAppendingTracer(self.graph)
                a = fx.node.map_arg(args, lambda n: fx.Proxy(n, tracer))
                return target(*a).node
            return super().create_node(kind, target, args, kwargs, name, type_expr)
    f = Foo()
    gm = fx.GraphModule(f, InliningTracer().trace(f))
    g = __name__.replace(".", "_")
    assert gm.code == (
        f'\ntorch.fx._symbolic_trace.wrap("{g}_sigmoid_lowp")\n\ndef forward(self, x, y):\n'
        f"    sigmoid_lowp = {g}_sigmoid_lowp(x);  x = None\n"
        f"    sigmoid_lowp_1 = {g}_sigmoid_lowp(y);  y = None\n"
        "    float_1 = sigmoid_lowp.float();  sigmoid_lowp = None\n"
        "    float_2 = sigmoid_lowp_1.float();  sigmoid_lowp_1 = None\n"
        "    add = float_1 + float_2;  float_1 = float_2 = None\n"
        "    half = add.half();  add = None\n"
        "    return half\n    ")
    x, y = np.array([0.5, -1.0], np.float32), np.array([2.0, 0.25], np.float32)
    np.testing.assert_allclose(gm(torch.tensor(x), torch.tensor(y)).numpy().astype(np.float64),
                               _want(x, y).astype(np.float64), rtol=1e-3)


def test_wrap_output_dynamically():
    """Call a traced activation on a Proxy of the output's input (default tracer) and rewire output."""
    traced = fx.symbolic_trace(lambda x, y: torch.cat([x, y]))
    out = [n for n in reversed(traced.graph.nodes) if n.op == "output"][0]
    wrap_node = out.all_input_nodes[0]
    act = fx.symbolic_trace(torch.nn.LeakyReLU(0.1))
    with traced.graph.inserting_after(wrap_node):
        out.args = (act(fx.Proxy(wrap_node)).node,)
    traced.recompile()
    assert traced.code == ("\n\n\ndef forward(self, x, y):\n"
                           "    cat = torch.cat([x, y]);  x = y = None\n"
                           "    leaky_relu = torch.nn.functional.leaky_relu(cat, negative_slope = 0.1, "
                           "inplace = False);  cat = None\n"
                           "    return leaky_relu\n    ")
    x, y = np.array([[1.0, -2.0]]), np.array([[-3.0, 4.0]])
    v = np.concatenate([x, y])
    np.testing.assert_allclose(traced(torch.tensor(x), torch.tensor(y)).numpy(), np.where(v > 0, v, 0.1 * v))
