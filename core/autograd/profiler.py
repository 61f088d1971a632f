"""torch.autograd.profiler: the classic profile context manager, over tensorplug.profiler's recording.

    with torch.autograd.profiler.profile() as prof:
        model(x)
    print(prof)            # one row per event, in start order

`record_function` is tensorplug.profiler.record_function (the same class). `emit_nvtx` / `emit_itt`
are accepted and do nothing: tensorplug emits no NVTX / ITT ranges (no profiler of those tools runs).
"""
from __future__ import annotations

from ..profiler import EventList, FunctionEvent, FunctionEventAvg, record_function  # noqa: F401
from ..profiler import _state
from ..profiler.profiler import ProfilerActivity, check_options

__all__ = ["profile", "record_function", "emit_nvtx", "emit_itt", "EventList", "FunctionEvent",
           "FunctionEventAvg"]


class profile:
    """Record the ops a block runs (see the module docstring); `enabled=False` records nothing."""

    def __init__(self, enabled=True, *, use_cuda=False, use_device=None, record_shapes=False, with_flops=False,
                 profile_memory=False, with_stack=False, with_modules=False, use_kineto=True, use_cpu=True,
                 experimental_config=None, acc_events=False, custom_trace_id_callback=None):
        self.enabled = enabled
        self.record_shapes, self.with_stack, self.profile_memory = record_shapes, with_stack, profile_memory
        if enabled:
            check_options([ProfilerActivity.CUDA] if (use_cuda or use_device) else [],
                          profile_memory, with_flops, with_modules)
        self._session = None
        self._events = None

    def __enter__(self):
        if self.enabled:
            if self._session is not None:
                raise RuntimeError("profiler context manager is not reentrant")
            self._session = _state.start(self.record_shapes, self.with_stack)
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        if self._session is not None:
            s, self._session = self._session, None
            self._events = EventList(_state.stop(s), self.profile_memory)
        return False

    @property
    def function_events(self) -> EventList:
        if self._events is None:
            raise RuntimeError("Profiler didn't finish running")
        return self._events

    def events(self) -> EventList:
        return self.function_events

    def table(self, sort_by=None, row_limit=100, **kwargs) -> str:
        return self.function_events.table(sort_by=sort_by, row_limit=row_limit, **kwargs)

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0, **kwargs) -> EventList:
        return self.function_events.key_averages(group_by_input_shape, group_by_stack_n)

    def total_average(self):
        return self.function_events.total_average()

    @property
    def self_cpu_time_total(self) -> float:
        return self.function_events.self_cpu_time_total

    def export_chrome_trace(self, path) -> None:
        self.function_events.export_chrome_trace(path)

    def __str__(self):
        return "<unfinished torch.autograd.profile>" if self._events is None else str(self._events)

    def __repr__(self):
        return "<unfinished torch.autograd.profile>" if self._events is None else repr(list(self._events))


class emit_nvtx:
    """Accepted for PyTorch programs; a no-op: tensorplug emits no NVTX ranges."""

    def __init__(self, enabled=True, record_shapes=False):
        self.enabled = enabled

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class emit_itt(emit_nvtx):
    """Accepted for PyTorch programs; a no-op: tensorplug emits no ITT ranges."""
