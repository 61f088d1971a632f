"""The Recorders behind Proxy dispatch: pass-through calls, equality with the functions they stand
for, printed names, uninstall, and `import tensorplug` not loading fx."""
import subprocess
import sys

import tensorplug as torch
import tensorplug.fx as fx
from tensorplug.fx import _dispatch


def test_plain_calls_pass_through():
    """Without Proxies a Recorder is the function (same values, same errors)."""
    assert isinstance(torch.add, _dispatch.Recorder)
    assert torch.add(torch.tensor([1.0]), 2).tolist() == [3.0]
    assert torch.cat([torch.ones(1), torch.zeros(1)]).tolist() == [1.0, 0.0]
    try:
        torch.sin("x")
    except TypeError as e:
        assert "sin()" in str(e)
    else:
        raise AssertionError("no TypeError")


def test_equality_hash_and_names():
    """A Recorder equals (and hashes like) its function; it prints under its torch name."""
    rec = torch.arctan
    assert rec == rec.fn and hash(rec) == hash(rec.fn) and {rec.fn: 1}[rec] == 1
    assert torch.arctan == torch.atan and torch.arctan.__name__ == "arctan" and torch.atan.__name__ == "atan"
    assert fx.node.qualified_name(torch.nn.functional.relu) == "torch.nn.functional.relu"
    assert fx.node.qualified_name(torch.special.ndtr) == "torch.special.ndtr"
    assert torch.special.logit is torch.logit and torch.pdist is torch.nn.functional.pdist


def test_uninstall_restores_and_reinstalls():
    """uninstall() puts the original functions back; install() again records as before."""
    _dispatch.uninstall()
    try:
        assert not isinstance(torch.add, _dispatch.Recorder) and torch.trapz is torch.trapezoid
    finally:
        _dispatch.install()
    gm = fx.symbolic_trace(lambda x: torch.add(x, 1))
    assert [n.op for n in gm.graph.nodes] == ["placeholder", "call_function", "output"]


def test_import_tensorplug_does_not_load_fx():
    """tensorplug.fx loads on first access only."""
    code = ("import sys, tensorplug; assert 'tensorplug.fx' not in sys.modules; "
            "tensorplug.fx.symbolic_trace; assert 'tensorplug.fx' in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_onnx_export_still_sees_calls_through_recorders():
    """The exporter's tracer reaches functions called through Recorders (see _originals.py)."""
    import io
    onnx = __import__("pytest").importorskip("onnx")

    class M(torch.nn.Module):
        def forward(self, x):
            return torch.relu(x) + torch.nn.functional.gelu(x)
    buf = io.BytesIO()
    torch.onnx.export(M(), (torch.randn(2, 3),), buf)
    assert [n.op_type for n in onnx.load_from_string(buf.getvalue()).graph.node] == ["Relu", "Gelu", "Add"]


def test_layers_of_modules_imported_later_are_rerouted(monkeypatch):
    """A layer module imported after fx (holding an op module as F) records once tracing starts."""
    import types
    from tensorplug.ops import activation
    late = types.ModuleType("tensorplug.nn._fx_late_layer")
    late.F = activation
    monkeypatch.setitem(sys.modules, late.__name__, late)

    class Layer(torch.nn.Module):
        def forward(self, x):
            return late.F.relu(x) * 2
    gm = fx.symbolic_trace(Layer())
    assert [(n.op, n.name) for n in gm.graph.nodes][1] == ("call_function", "relu")
    assert gm(torch.tensor([-1.0, 3.0])).tolist() == [0.0, 6.0]
