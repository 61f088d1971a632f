"""fx.wrap('len'): a builtin named by string becomes a call_function leaf in this module's traces."""
import tensorplug as torch
import tensorplug.fx as fx

fx.wrap("len")


def test_wrapped_len_is_recorded():
    """len(proxy) records builtins.len instead of raising; the code calls len and re-wraps it."""
    gm = fx.symbolic_trace(lambda x: x * len(x))
    node = [n for n in gm.graph.nodes if n.op == "call_function"][0]
    assert node.target is len and node.name == "len_1"
    assert gm.code == ('\ntorch.fx._symbolic_trace.wrap("len")\n\ndef forward(self, x):\n'
                       '    len_1 = len(x)\n    mul = x * len_1;  x = len_1 = None\n    return mul\n    ')
    assert gm(torch.ones(3)).tolist() == [3.0, 3.0, 3.0]
