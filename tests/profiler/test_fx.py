"""FX-traced code opens ranges through torch.ops.profiler (the pattern of pytorch/examples
fx/profiling_tracer.py): the calls are call_function nodes, kept by dead-code elimination, and the
traced module records the range when profiled."""
import pytest

import tensorplug as tp
from tensorplug.autograd import profiler as aprof
from tensorplug.ops import profiler as ops_profiler


@pytest.fixture(autouse=True, scope="module")
def fx():
    import tensorplug.fx as fx
    from tensorplug.fx import _dispatch
    _dispatch.install()
    yield fx
    _dispatch.uninstall()


class Foo(tp.nn.Module):
    def forward(self, x):
        with tp.profiler.record_function("foo"):
            return tp.relu(x)


def _profiler_tracer(fx):
    class ProfilerTracer(fx.Tracer):
        def trace(self, root, concrete_args=None):
            rf = aprof.record_function
            enter, exit_ = rf.__enter__, rf.__exit__

            def fake_enter(rf_self):
                rf_self._ctx = self.create_proxy("call_function", ops_profiler._record_function_enter,
                                                 (rf_self.name,), {})
                return rf_self._ctx

            def fake_exit(rf_self, *exc):
                ops_profiler._record_function_exit(rf_self._ctx)

            rf.__enter__, rf.__exit__ = fake_enter, fake_exit
            try:
                return super().trace(root, concrete_args)
            finally:
                rf.__enter__, rf.__exit__ = enter, exit_
    return ProfilerTracer()


def test_plain_trace_drops_the_range(fx):
    x = tp.randn(5, 3, 2)
    gm = fx.symbolic_trace(Foo())
    with aprof.profile() as prof:
        gm(x)
    assert [e.name for e in prof.function_events] == ["aten::relu"]


def test_profiler_tracer_records_the_range(fx):
    x = tp.randn(5, 3, 2)
    pt = _profiler_tracer(fx)
    graph = pt.trace(Foo())
    targets = [n.target for n in graph.nodes if n.op == "call_function"]
    assert targets[0] is ops_profiler._record_function_enter and targets[-1] is ops_profiler._record_function_exit
    graph.eliminate_dead_code()                 # the exit node has no users; it stays
    assert [n.op for n in graph.nodes] == ["placeholder", "call_function", "call_function", "call_function",
                                           "output"]
    gm = fx.GraphModule(pt.root, graph)
    assert "torch.ops.profiler._record_function_enter('foo')" in gm.code
    with aprof.profile() as prof:
        out = gm(x)
    evs = prof.function_events
    assert evs[0].name == "foo" and evs[0].cpu_parent is None
    assert [e.name for e in evs if e.cpu_parent is evs[0]] == ["aten::empty", "aten::relu"]
    assert (out.numpy() == tp.relu(x).numpy()).all()
