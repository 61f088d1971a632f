"""torch.profiler.profile over steps: the schedule's actions, step(), on_trace_ready, the trace handler."""
import json
import os

import pytest

import tensorplug as tp
from tensorplug.profiler import ProfilerAction as A
from tensorplug.profiler import profile, schedule, tensorboard_trace_handler


def test_schedule_actions():
    s = schedule(wait=1, warmup=1, active=2, repeat=2, skip_first=1)
    assert [s(i) for i in range(11)] == [A.NONE, A.NONE, A.WARMUP, A.RECORD, A.RECORD_AND_SAVE,
                                         A.NONE, A.WARMUP, A.RECORD, A.RECORD_AND_SAVE, A.NONE, A.NONE]
    s = schedule(wait=2, warmup=0, active=1)            # repeat=0: forever
    assert [s(i) for i in range(7)] == [A.NONE, A.NONE, A.RECORD_AND_SAVE] * 2 + [A.NONE]
    s = schedule(wait=2, warmup=1, active=1, skip_first_wait=1)
    assert [s(i) for i in range(5)] == [A.WARMUP, A.RECORD_AND_SAVE, A.NONE, A.NONE, A.WARMUP]
    with pytest.raises(ValueError):
        schedule(wait=0, warmup=0, active=0)


def test_steps_record_only_active_phases_and_call_on_trace_ready():
    seen = []

    def ready(prof):
        seen.append((prof.step_num, [e.name for e in prof.events() if e.cpu_parent is None]))

    x = tp.randn(3)
    with profile(schedule=schedule(wait=1, warmup=1, active=2, repeat=1), on_trace_ready=ready) as prof:
        for i in range(6):
            tp.exp(x) if i % 2 else tp.neg(x)
            prof.step()
    # steps 0 wait, 1 warmup, 2-3 active (ready after step 3, when step 4 begins), then nothing
    assert seen == [(4, ["ProfilerStep#2", "ProfilerStep#3"])]
    step2, step3 = [e for e in prof.events() if e.cpu_parent is None]
    assert [c.name for c in step2.cpu_children] == ["aten::neg"]
    assert [c.name for c in step3.cpu_children] == ["aten::exp"]


def test_repeated_cycles_and_ready_at_exit():
    seen = []
    with profile(schedule=schedule(wait=0, warmup=0, active=2), on_trace_ready=lambda p: seen.append(p.step_num)) as prof:
        for _ in range(3):
            tp.randn(2)
            prof.step()
    assert seen == [2, 3]          # after step 1 (cycle 1 saved) and at exit with step 2 recording


def test_without_schedule_records_all_and_ready_once():
    seen = []
    with profile(on_trace_ready=lambda p: seen.append(len(p.events()))) as prof:
        tp.randn(2)
        prof.step()
        tp.randn(2)
    assert len(seen) == 1
    assert [e.name for e in prof.events() if e.cpu_parent is None] == ["aten::randn", "ProfilerStep#1"]


def test_patched_only_while_recording():
    orig = tp.relu
    with profile(schedule=schedule(wait=1, warmup=0, active=1)) as prof:
        assert tp.relu is orig                 # waiting: nothing patched
        prof.step()
        assert tp.relu is not orig             # recording
        prof.step()
        assert tp.relu is orig                 # saved; waiting again
    assert tp.relu is orig


def test_tensorboard_trace_handler_writes_a_chrome_trace(tmp_path):
    d = tmp_path / "logs"
    with profile(on_trace_ready=tensorboard_trace_handler(str(d), worker_name="w0")):
        tp.exp(tp.randn(2))
    files = os.listdir(d)
    assert len(files) == 1 and files[0].startswith("w0.") and files[0].endswith(".pt.trace.json")
    data = json.loads((d / files[0]).read_text())
    assert [e["name"] for e in data["traceEvents"]] == ["aten::randn", "aten::exp"]
