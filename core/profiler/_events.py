"""What a profile recorded: FunctionEvent (one op call or record_function range), FunctionEventAvg
(events grouped by key_averages) and EventList, the list both come in (table, key_averages,
export_chrome_trace, totals). Times are integers in nanoseconds inside, microseconds (float) outside,
as PyTorch's attributes are."""
from __future__ import annotations

import json
import os

from ._table import build_table


class Interval:
    """An event's time range in microseconds since the profile started."""

    def __init__(self, start: float, end: float):
        self.start, self.end = start, end

    def elapsed_us(self) -> float:
        return self.end - self.start


class FunctionEvent:
    """One op call ("aten::relu") or record_function range, with its place in the call tree."""

    # the same for every event tensorplug records (class attributes: an event is made per op call)
    count = 1
    is_async = is_legacy = False
    node_id = sequence_nr = -1
    device_type, device_index = "CPU", 0
    cpu_memory_usage = self_cpu_memory_usage = flops = 0
    device_time_total = self_device_time_total = cuda_time_total = self_cuda_time_total = 0.0

    def __init__(self, id, name, thread, start_ns, input_shapes=None, stack=None, is_user_annotation=False):
        self.id = id
        self.name = self.key = name
        self.thread = thread
        self.start_ns = self.end_ns = start_ns
        self.input_shapes = input_shapes if input_shapes is not None else []
        self.stack = stack if stack is not None else []
        self.is_user_annotation = is_user_annotation
        self.cpu_parent = None
        self.cpu_children: list = []
        self.time_range = None          # set relative to the profile's start when the profile ends

    @property
    def cpu_time_total(self) -> float:
        return (self.end_ns - self.start_ns) / 1e3

    @property
    def self_cpu_time_total(self) -> float:
        return max(self.cpu_time_total - sum(c.cpu_time_total for c in self.cpu_children), 0.0)

    cpu_time = cpu_time_total           # average over count (1)

    def __repr__(self):
        return (f"<FunctionEvent id={self.id} name={self.name} cpu_time_total={self.cpu_time_total:.3f}us "
                f"self_cpu_time_total={self.self_cpu_time_total:.3f}us thread={self.thread} "
                f"input_shapes={self.input_shapes} cpu_children={[c.id for c in self.cpu_children]}>")


class FunctionEventAvg:
    """Events of one key (and input shapes / stack prefix when grouped by them), summed."""

    def __init__(self, key, input_shapes, stack):
        self.key = key
        self.input_shapes = input_shapes
        self.stack = stack
        self.count = 0
        self.cpu_time_total = self.self_cpu_time_total = 0.0
        self.device_time_total = self.self_device_time_total = 0.0
        self.cuda_time_total = self.self_cuda_time_total = 0.0
        self.cpu_memory_usage = self.self_cpu_memory_usage = 0
        self.is_async = False
        self.is_legacy = False
        self.is_user_annotation = False
        self.node_id = -1
        self.cpu_parent = None
        self.flops = 0

    def add(self, ev) -> "FunctionEventAvg":
        self.count += ev.count
        self.cpu_time_total += ev.cpu_time_total
        self.self_cpu_time_total += ev.self_cpu_time_total
        self.is_user_annotation = ev.is_user_annotation
        return self

    @property
    def cpu_time(self) -> float:
        return self.cpu_time_total / self.count if self.count else 0.0

    def __repr__(self):
        return (f"<FunctionEventAvg key={self.key} self_cpu_time={self.self_cpu_time_total:.3f}us "
                f"cpu_time={self.cpu_time:.3f}us input_shapes={self.input_shapes}>")


class EventList(list):
    """A list of events with PyTorch's report methods."""

    def __init__(self, events=(), profile_memory=False):
        super().__init__(events)
        self._profile_memory = profile_memory

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75, max_name_column_width=55,
              max_shapes_column_width=80, header=None, top_level_events_only=False, **_unused) -> str:
        """The report `print(prof)` shows: one row per entry, `sort_by` an attribute (descending)."""
        return build_table(self, sort_by=sort_by, row_limit=row_limit, header=header,
                           max_src_column_width=max_src_column_width,
                           max_name_column_width=max_name_column_width,
                           max_shapes_column_width=max_shapes_column_width,
                           top_level_events_only=top_level_events_only)

    def __str__(self):
        return self.table()

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0, **_unused) -> "EventList":
        """One FunctionEventAvg per key (and input shapes / first `group_by_stack_n` frames), in
        order of first occurrence."""
        groups: dict = {}
        for ev in self:
            shapes = str(ev.input_shapes) if group_by_input_shape else ""
            stack = tuple(ev.stack[:group_by_stack_n]) if group_by_stack_n > 0 else ()
            k = (ev.key, shapes, stack)
            g = groups.get(k)
            if g is None:
                g = groups[k] = FunctionEventAvg(ev.key, ev.input_shapes if group_by_input_shape else [],
                                                 list(stack))
            g.add(ev)
        return EventList(groups.values(), self._profile_memory)

    def total_average(self) -> FunctionEventAvg:
        total = FunctionEventAvg("Total", [], [])
        for ev in self:
            total.add(ev)
        return total

    @property
    def self_cpu_time_total(self) -> float:
        return sum(ev.self_cpu_time_total for ev in self)

    def export_chrome_trace(self, path) -> None:
        """Write the events as a Chrome trace (chrome://tracing, Perfetto): complete ("X") events."""
        write_chrome_trace(self, path)


def chrome_trace(events) -> dict:
    pid = os.getpid()
    out = []
    for ev in events:
        item = {"ph": "X", "cat": "user_annotation" if ev.is_user_annotation else "cpu_op", "name": ev.name,
                "pid": pid, "tid": ev.thread, "ts": ev.time_range.start, "dur": ev.time_range.elapsed_us(),
                "args": {"External id": ev.id}}
        if ev.input_shapes:
            item["args"]["Input Dims"] = ev.input_shapes
        if ev.stack:
            item["args"]["Call stack"] = ";".join(ev.stack)
        out.append(item)
    return {"schemaVersion": 1, "displayTimeUnit": "ms", "traceEvents": out}


def write_chrome_trace(events, path) -> None:
    path = os.fspath(path)
    data = json.dumps(chrome_trace(events))
    if path.endswith(".gz"):
        import gzip
        with gzip.open(path, "wt", encoding="utf-8") as f:
            f.write(data)
    else:
        with open(path, "w", encoding="utf-8") as f:
            f.write(data)
