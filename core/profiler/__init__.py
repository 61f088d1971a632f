"""tensorplug.profiler (torch.profiler): which ops ran, nested, and how long each took.

While a profile is active, tensorplug's public op functions and Tensor methods are wrapped to record
an "aten::<op>" event per call (see _state.py); record_function adds named ranges. Nothing is
patched outside a profile. CPU (host) times only; profile_memory is not supported.
"""
from __future__ import annotations

from ._events import EventList, FunctionEvent, FunctionEventAvg
from ._record_function import record_function
from .profiler import (ProfilerAction, ProfilerActivity, profile, schedule, supported_activities,
                       tensorboard_trace_handler)
from ..ops import profiler as _ops_profiler  # noqa: F401  (torch.ops.profiler, the functional form)

__all__ = ["profile", "record_function", "ProfilerActivity", "ProfilerAction", "schedule",
           "tensorboard_trace_handler", "supported_activities", "EventList", "FunctionEvent",
           "FunctionEventAvg"]
