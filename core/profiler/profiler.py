"""torch.profiler.profile: record the ops a block runs, optionally over a schedule of steps.

    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        model(x)
    print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=10))

With `schedule`, each `prof.step()` advances the step count; steps in the schedule's active phase are
recorded (each under a "ProfilerStep#<n>" range) and `on_trace_ready(prof)` is called at the end of
every active phase (and at exit if one is open). Only CPU-side op times are recorded.
"""
from __future__ import annotations

import enum
import os
import socket
import time
import warnings

from . import _state
from ._events import EventList
from ._record_function import record_function


class ProfilerActivity(enum.Enum):
    CPU = 0
    CUDA = 1
    XPU = 2
    MTIA = 3
    HPU = 4
    PrivateUse1 = 5


class ProfilerAction(enum.Enum):
    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def supported_activities():
    """The activities tensorplug records: CPU (op times on the host)."""
    return {ProfilerActivity.CPU}


def schedule(*, wait: int, warmup: int, active: int, repeat: int = 0, skip_first: int = 0,
             skip_first_wait: int = 0):
    """A step -> ProfilerAction function: skip `skip_first` steps, then cycles of `wait` idle,
    `warmup` and `active` recorded steps (the last one saves), `repeat` cycles (0: unlimited).
    `skip_first_wait` drops the wait phase of the first cycle."""
    if warmup < 0 or active <= 0 or wait < 0 or repeat < 0 or skip_first < 0:
        raise ValueError("schedule: wait, warmup, repeat, skip_first must be >= 0 and active > 0")
    cycle = wait + warmup + active

    def schedule_fn(step: int) -> ProfilerAction:
        if step < 0:
            raise ValueError("schedule: step must be >= 0")
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait:
            step += wait
        if repeat > 0 and step // cycle >= repeat:
            return ProfilerAction.NONE
        pos = step % cycle
        if pos < wait:
            return ProfilerAction.NONE
        if pos < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if pos < cycle - 1 else ProfilerAction.RECORD_AND_SAVE
    return schedule_fn


def _always_record(_step):
    return ProfilerAction.RECORD


def tensorboard_trace_handler(dir_name: str, worker_name: str | None = None, use_gzip: bool = False):
    """An on_trace_ready that writes `<worker>.<ms>.pt.trace.json[.gz]` (a Chrome trace) into dir_name."""
    def handler(prof) -> None:
        os.makedirs(dir_name, exist_ok=True)
        worker = worker_name or f"{socket.gethostname()}_{os.getpid()}"
        name = f"{worker}.{time.time_ns() // 1_000_000}.pt.trace.json" + (".gz" if use_gzip else "")
        prof.export_chrome_trace(os.path.join(dir_name, name))
    return handler


def check_options(activities=(), profile_memory=False, with_flops=False, with_modules=False):
    """Warn about what is accepted but not recorded (shared with torch.autograd.profiler.profile)."""
    others = [a for a in activities if a is not ProfilerActivity.CPU]
    if others:
        from .. import cuda
        why = "no GPU is available" if not cuda.is_available() else "tensorplug records CPU-side op times only"
        warnings.warn(f"profiler: activities {[a.name for a in others]} are ignored ({why})", stacklevel=3)
    for flag, on in (("profile_memory", profile_memory), ("with_flops", with_flops),
                     ("with_modules", with_modules)):
        if on:
            warnings.warn(f"profiler: {flag} is not supported by tensorplug's profiler; it is ignored",
                          stacklevel=3)


class profile:
    """torch.profiler.profile (see the module docstring)."""

    def __init__(self, *, activities=None, schedule=None, on_trace_ready=None, record_shapes=False,
                 profile_memory=False, with_stack=False, with_flops=False, with_modules=False,
                 experimental_config=None, execution_trace_observer=None, acc_events=False,
                 use_cuda=None, custom_trace_id_callback=None):
        self.activities = set(activities) if activities else supported_activities()
        if use_cuda:
            self.activities.add(ProfilerActivity.CUDA)
        check_options(self.activities, profile_memory, with_flops, with_modules)
        self.record_shapes, self.with_stack = record_shapes, with_stack
        self.profile_memory, self.with_flops, self.with_modules = profile_memory, with_flops, with_modules
        self.schedule = schedule if schedule is not None else _always_record
        self.record_steps = schedule is not None
        self.on_trace_ready = on_trace_ready
        self.step_num = 0
        self.current_action = self.schedule(0)
        self._session = None
        self._events = None
        self._step_range = None

    # -- lifetime -----------------------------------------------------------------------------------
    def __enter__(self):
        self.start()
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        self.stop()
        return False

    def start(self):
        self._transit(None, self.current_action)
        self._open_step()

    def stop(self):
        try:
            self._close_step()
        finally:
            self._transit(self.current_action, None)

    def step(self):
        """Mark the end of a step: the schedule decides what the next one records."""
        self.record_steps = True
        self._close_step()
        prev = self.current_action
        self.step_num += 1
        self.current_action = self.schedule(self.step_num)
        self._transit(prev, self.current_action)
        self._open_step()

    # -- the schedule's transitions -----------------------------------------------------------------
    def _transit(self, prev, cur):
        A = ProfilerAction
        recording = (A.RECORD, A.RECORD_AND_SAVE)
        if prev in recording and (prev is A.RECORD_AND_SAVE or cur is None or cur in (A.NONE, A.WARMUP)):
            if prev is A.RECORD and cur is not None:
                warnings.warn(f"Incorrect schedule: RECORD followed by {cur.name}", stacklevel=3)
            self._stop_trace(keep=True)
            if self.on_trace_ready is not None:
                self.on_trace_ready(self)
            prev = A.NONE
        elif prev is A.WARMUP and cur in (None, A.NONE):
            self._stop_trace(keep=False)
            prev = A.NONE
        if cur in (A.WARMUP, *recording) and prev in (None, A.NONE):
            self._prepare_trace()
        if cur in recording and prev is not A.RECORD:
            self._start_trace()

    def _prepare_trace(self):
        self._session = _state.start(self.record_shapes, self.with_stack)

    def _start_trace(self):
        # what warmup recorded is dropped: the trace starts now
        self._session.events.clear()
        self._session.start_ns = _state._clock()

    def _stop_trace(self, keep):
        s, self._session = self._session, None
        if s is not None:
            events = _state.stop(s)
            if keep:
                self._events = EventList(events, self.profile_memory)

    def _open_step(self):
        if self.record_steps and self._session is not None:
            self._step_range = record_function(f"ProfilerStep#{self.step_num}").__enter__()

    def _close_step(self):
        r, self._step_range = self._step_range, None
        if r is not None:
            r.__exit__(None, None, None)

    # -- results ------------------------------------------------------------------------------------
    def events(self) -> EventList:
        """The events of the last finished recording, in start order."""
        if self._events is None:
            raise RuntimeError("profiler: no finished recording yet (events are ready after stop() or "
                               "at the end of an active phase of the schedule)")
        return self._events

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0, **kwargs) -> EventList:
        return self.events().key_averages(group_by_input_shape, group_by_stack_n)

    def export_chrome_trace(self, path) -> None:
        self.events().export_chrome_trace(path)
