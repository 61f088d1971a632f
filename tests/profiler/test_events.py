"""Which events a profile records: ops in order, nesting, record_function ranges, the functional form,
and that nothing stays patched afterwards."""
import subprocess
import sys

import numpy as np
import pytest

import tensorplug as tp
import tensorplug.nn.functional as F
from tensorplug.autograd import profiler as aprof
from tensorplug.profiler import profile, record_function


def _top(events):
    return [e.name for e in events if e.cpu_parent is None]


def test_ops_in_order_with_values_unchanged():
    """Each public op call is one aten:: event, in call order; results are as without profiling."""
    x = tp.tensor(np.arange(6.0).reshape(2, 3) - 2.5)
    w = tp.tensor(np.ones((3, 2)))
    with profile() as prof:
        a = tp.relu(x)
        b = a + 1
        c = tp.mm(b, w)
        d = c.sum()
    assert _top(prof.events()) == ["aten::relu", "aten::add", "aten::mm", "aten::sum"]
    ref = (np.maximum(np.arange(6.0).reshape(2, 3) - 2.5, 0) + 1) @ np.ones((3, 2))
    np.testing.assert_allclose(d.item(), ref.sum())


def test_tensor_method_and_function_are_one_event():
    """x.relu() calling relu records one aten::relu (no duplicate child)."""
    x = tp.randn(3)
    with profile() as prof:
        x.relu()
    assert [e.name for e in prof.events()] == ["aten::relu"]


def test_getitem_named_by_index_kind():
    x, idx = tp.randn(4, 3), tp.tensor([0, 2])
    with profile() as prof:
        x[0]
        x[1:]
        x[idx]
    assert _top(prof.events()) == ["aten::select", "aten::slice", "aten::index"]


def test_nested_ops_split_self_and_total():
    """An op calling public ops holds them as children: total >= children, self = total - children."""
    x = tp.randn(4, 3)
    w = tp.randn(3, 2)
    with profile() as prof:
        tp.mm(x, w)                     # mm is built on matmul
    mm = prof.events()[0]
    assert mm.name == "aten::mm" and mm.cpu_children
    assert all(c.cpu_parent is mm for c in mm.cpu_children)
    kids = sum(c.cpu_time_total for c in mm.cpu_children)
    assert mm.cpu_time_total >= kids
    assert mm.self_cpu_time_total == pytest.approx(mm.cpu_time_total - kids)
    for c in mm.cpu_children:
        assert mm.time_range.start <= c.time_range.start <= c.time_range.end <= mm.time_range.end


def test_record_function_ranges_nest_and_decorate():
    """record_function as context manager and decorator: ranges hold the ops run inside, in order."""
    @record_function("helper")
    def helper(t):
        return t * 2

    x = tp.randn(3)
    with profile() as prof:
        with record_function("outer"):
            y = tp.exp(x)
            helper(y)
        tp.neg(x)
    evs = prof.events()
    assert [e.name for e in evs] == ["outer", "aten::exp", "helper", "aten::mul", "aten::neg"]
    outer, exp, h, mul, neg = evs
    assert outer.is_user_annotation and h.is_user_annotation and not exp.is_user_annotation
    assert exp.cpu_parent is outer and h.cpu_parent is outer and mul.cpu_parent is h and neg.cpu_parent is None
    assert outer.cpu_time_total >= exp.cpu_time_total + h.cpu_time_total


def test_record_function_is_shared_and_silent_outside_profiles():
    assert aprof.record_function is tp.profiler.record_function
    with record_function("nothing") as rf:
        tp.randn(2)
    assert rf.name == "nothing"


def test_functional_record_function():
    """torch.ops.profiler._record_function_enter / _exit open and close a range through a handle."""
    from tensorplug.ops import profiler as ops_profiler
    x = tp.randn(3)
    with aprof.profile() as prof:
        h = ops_profiler._record_function_enter("rng")
        tp.sigmoid(x)
        ops_profiler._record_function_exit(h)
        h2 = ops_profiler._record_function_enter_new("rng2")
        ops_profiler._record_function_exit(h2)
    top = _top(prof.function_events)
    assert top == ["rng", "rng2"]
    rng = prof.function_events[0]
    assert "aten::sigmoid" in [c.name for c in rng.cpu_children]


def test_record_shapes_and_with_stack():
    x, y = tp.randn(2, 3), tp.randn(3, 4)
    with profile(record_shapes=True, with_stack=True) as prof:
        tp.matmul(x, y)
    ev = prof.events()[0]
    assert ev.input_shapes == [[2, 3], [3, 4]]
    assert ev.stack and __file__ in ev.stack[0] and "test_record_shapes_and_with_stack" in ev.stack[0]
    with profile() as prof:
        tp.matmul(x, y)
    assert prof.events()[0].input_shapes == [] and prof.events()[0].stack == []


def test_backward_ops_are_recorded():
    """The backward pass runs Tensor ops, so its ops are events too (x*x's gradient multiplies)."""
    x = tp.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with profile() as prof:
        (x * x).sum().backward()
    names = [e.name for e in prof.events()]
    assert names[:2] == ["aten::mul", "aten::sum"] and names.count("aten::mul") >= 2
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0, 6.0])


def _snapshot():
    import tensorplug.ops.activation as act
    from tensorplug.tensor import Tensor
    return {"relu": tp.relu, "F.relu": F.relu, "act.relu": act.relu, "add": tp.add,
            **{k: v for k, v in vars(Tensor).items()}}


def test_nothing_patched_after_exit():
    """The function objects are the same before and after a profile (and differ inside)."""
    before = _snapshot()
    with profile():
        inside = tp.relu
    assert inside is not before["relu"]
    after = _snapshot()
    assert after.keys() == before.keys()
    assert all(after[k] is before[k] for k in before)


def test_exception_inside_restores_everything():
    before = _snapshot()
    with pytest.raises(ZeroDivisionError):
        with aprof.profile():
            tp.relu(tp.randn(2))
            1 / 0
    with pytest.raises(ValueError):
        with profile():
            raise ValueError
    after = _snapshot()
    assert all(after[k] is before[k] for k in before)
    with profile() as prof:          # and a new profile works
        tp.relu(tp.randn(2))
    assert _top(prof.events()) == ["aten::randn", "aten::relu"]


def test_profiles_do_not_nest_and_disabled_records_nothing():
    with profile():
        with pytest.raises(RuntimeError, match="already enabled"):
            with profile():
                pass
    with aprof.profile(enabled=False) as prof:
        tp.randn(2)
    with pytest.raises(RuntimeError):
        prof.function_events


def test_unsupported_options_warn():
    with pytest.warns(UserWarning, match="profile_memory"):
        profile(profile_memory=True)
    if not tp.cuda.is_available():
        with pytest.warns(UserWarning, match="CUDA"):
            profile(activities=[tp.profiler.ProfilerActivity.CPU, tp.profiler.ProfilerActivity.CUDA])


def test_emit_nvtx_is_a_no_op_context():
    with aprof.emit_nvtx():
        y = tp.relu(tp.tensor([-1.0, 1.0]))
    np.testing.assert_allclose(y.numpy(), [0.0, 1.0])


def test_import_tensorplug_does_not_load_the_profiler():
    code = ("import sys, tensorplug; assert not [m for m in sys.modules if 'profiler' in m], "
            "[m for m in sys.modules if 'profiler' in m]; tensorplug.profiler.profile; "
            "assert 'tensorplug.profiler' in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)
