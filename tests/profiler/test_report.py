"""The reports: the table's layout, sort_by / row_limit, key_averages grouping, the Chrome trace."""
import json
import re

import pytest

import tensorplug as tp
from tensorplug.autograd import profiler as aprof
from tensorplug.profiler import profile, record_function
from tensorplug.profiler._table import format_time

HEADERS = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg", "# of Calls"]


def _run():
    x = tp.randn(4, 4)
    with aprof.profile() as prof:
        with record_function("block"):
            for _ in range(3):
                tp.relu(x)
            tp.exp(x)
    return prof


def _rows(text):
    lines = text.splitlines()
    rules = [i for i, s in enumerate(lines) if set(s.strip()) == {"-", " "} or set(s.strip()) == {"-"}]
    assert len(rules) == 3
    return lines, lines[rules[1] + 1:rules[2]]


def test_print_lists_every_event_in_order_with_pytorch_columns():
    prof = _run()
    text = str(prof)
    lines, rows = _rows(text)
    assert re.split(r"\s{2,}", lines[1].strip()) == HEADERS
    assert [r.split()[0] for r in rows] == ["block", "aten::relu", "aten::relu", "aten::relu", "aten::exp"]
    assert all(r.split()[-1] == "1" for r in rows)
    assert rows[0].split()[3] == "100.00%"          # the range holds everything
    total = prof.self_cpu_time_total
    assert lines[-1] == f"Self CPU time total: {format_time(total)}"
    assert text.endswith("\n")
    shares = [float(r.split()[1].rstrip("%")) for r in rows]
    assert sum(shares) == pytest.approx(100.0, abs=0.05)
    # the name column is the longest name + 4, right-aligned
    assert lines[0].startswith("-" * (len("aten::relu") + 4) + "  ")


def test_key_averages_groups_and_counts():
    prof = _run()
    avg = prof.key_averages()
    assert [a.key for a in avg] == ["block", "aten::relu", "aten::exp"]
    assert [a.count for a in avg] == [1, 3, 1]
    relus = [e for e in prof.function_events if e.name == "aten::relu"]
    relu = avg[1]
    assert relu.cpu_time_total == pytest.approx(sum(e.cpu_time_total for e in relus))
    assert relu.cpu_time == pytest.approx(relu.cpu_time_total / 3)
    _, rows = _rows(avg.table())
    assert [r.split()[0] for r in rows] == ["block", "aten::relu", "aten::exp"]
    assert [r.split()[-1] for r in rows] == ["1", "3", "1"]


def test_group_by_input_shape_adds_the_column():
    a, b = tp.randn(2, 3), tp.randn(5)
    with profile(record_shapes=True) as prof:
        tp.exp(a)
        tp.exp(b)
        tp.exp(a)
    avg = prof.key_averages(group_by_input_shape=True)
    assert [(e.key, e.input_shapes, e.count) for e in avg] == [("aten::exp", [[2, 3]], 2),
                                                                ("aten::exp", [[5]], 1)]
    lines, rows = _rows(avg.table())
    assert lines[1].strip().endswith("Input Shapes") and rows[0].strip().endswith("[[2, 3]]")
    assert len(prof.key_averages()) == 1


def test_sort_by_and_row_limit():
    prof = _run()
    avg = prof.key_averages()
    for key in ("cpu_time_total", "self_cpu_time_total", "count", "cpu_time"):
        _, rows = _rows(avg.table(sort_by=key, row_limit=2))
        want = sorted(avg, key=lambda e: getattr(e, key), reverse=True)[:2]
        assert [r.split()[0] for r in rows] == [e.key for e in want]
    _, rows = _rows(avg.table(sort_by="cpu_time_total", row_limit=10))
    assert rows[0].split()[0] == "block" and len(rows) == 3
    with pytest.raises(AttributeError):
        avg.table(sort_by="no_such_column")


def test_top_level_only_and_empty():
    prof = _run()
    text = prof.function_events.table(top_level_events_only=True)
    _, rows = _rows(text.split("\n", 2)[2])
    assert [r.split()[0] for r in rows] == ["block"]
    assert tp.profiler.EventList().table() == ""


def test_format_time_units():
    assert format_time(12.3456) == "12.346us"
    assert format_time(1234.0) == "1.234ms"
    assert format_time(2.5e6) == "2.500s"


def test_chrome_trace_parses_and_has_the_events(tmp_path):
    prof = _run()
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    data = json.loads(path.read_text())
    evs = data["traceEvents"]
    assert [e["name"] for e in evs] == [e.name for e in prof.function_events]
    assert all(e["ph"] == "X" and e["dur"] >= 0 for e in evs)
    assert evs[0]["cat"] == "user_annotation" and evs[1]["cat"] == "cpu_op"
    inner = [e for e in evs[1:]]
    assert all(evs[0]["ts"] <= e["ts"] and e["ts"] + e["dur"] <= evs[0]["ts"] + evs[0]["dur"] + 1e-6
               for e in inner)
