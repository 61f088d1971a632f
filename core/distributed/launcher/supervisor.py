"""Supervising a job's processes as torchrun does: when one exits non-zero (or dies by a signal)
the others are stopped, and a SIGINT / SIGTERM / SIGHUP / SIGQUIT to the launcher stops them all.

Every process starts in a session of its own, so its process group holds it and whatever it starts,
and a Ctrl-C in the terminal reaches only the launcher, which forwards it once. Stopping is: the
signal to every process group, up to `grace_s` seconds for them to end (a second signal to the
launcher cuts that short), SIGKILL to every group, then SIGKILL to any process still carrying the
job's marker variable (an MPI launcher puts each rank in a session of its own, out of reach of its
group; Linux /proc only)."""
from __future__ import annotations

import os
import signal
import subprocess
import time
import uuid
from dataclasses import dataclass
from typing import Callable, List, Optional, Tuple

MARKER_ENV = "TENSORPLUG_RUN_JOB"
STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT")
                     if hasattr(signal, name))
GRACE_S = 5.0


def exit_status(returncode: int) -> int:
    """A process's status as a shell reports it: the code, or 128 + N for death by signal N."""
    return 128 - returncode if returncode < 0 else returncode


def describe_returncode(returncode: int) -> str:
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"was killed by {name} (exit code {exit_status(returncode)})"
    return f"exited with code {returncode}"


@dataclass
class Outcome:
    """How a job ended: `exit_code` for the launcher; `failed` the index of the first process that
    exited non-zero (None if none did); `signum` the signal that stopped the job (None if none)."""
    exit_code: int
    failed: Optional[int] = None
    returncode: Optional[int] = None
    signum: Optional[int] = None


class _SignalCatcher:
    """Records the stop signals the launcher gets while the job runs, instead of dying of them. A
    signal the launcher was started ignoring (a shell's background job ignores SIGINT) stays ignored,
    and so it is for the ranks, which inherit that."""

    def __init__(self):
        self.received: List[int] = []
        self.previous = {}

    def __enter__(self):
        for sig in STOP_SIGNALS:
            try:
                if signal.getsignal(sig) is not signal.SIG_IGN:
                    self.previous[sig] = signal.signal(sig, self._record)
            except (ValueError, OSError):   # not the main thread: the default actions stay
                pass
        return self

    def _record(self, signum, frame):
        self.received.append(signum)

    def __exit__(self, *exc):
        for sig, handler in self.previous.items():
            signal.signal(sig, handler)
        self.previous.clear()


class Job:
    """A job's processes, as a context manager: stop signals are caught from entry on (so one that
    comes while the ranks start is not lost), and leaving on an exception stops the job.

        with Job() as job:
            job.start(cmd, env)
            outcome = job.supervise()
    """

    def __init__(self, grace_s: float = GRACE_S, interval_s: float = 0.05):
        self.token = uuid.uuid4().hex
        self.grace_s, self.interval_s = grace_s, interval_s
        self.procs: List[subprocess.Popen] = []
        self.signals = _SignalCatcher()

    def __enter__(self):
        self.signals.__enter__()
        return self

    def __exit__(self, exc_type, exc, tb):
        try:
            if exc_type is not None and any(p.poll() is None for p in self.procs):
                self.stop(signal.SIGTERM, tick=None, grace_s=0.5)
        finally:
            self.signals.__exit__(exc_type, exc, tb)

    def start(self, cmd, env, **popen_kwargs) -> subprocess.Popen:
        proc = subprocess.Popen(cmd, env={**env, MARKER_ENV: self.token}, start_new_session=True,
                                **popen_kwargs)
        self.procs.append(proc)
        return proc

    def supervise(self, tick: Optional[Callable[[], None]] = None,
                  on_signal: Optional[Callable[[int], None]] = None,
                  failure: Optional[Callable[[], Optional[Tuple[int, int]]]] = None) -> Outcome:
        """Wait for the job, calling `tick` every interval; stop it on the first process that exits
        non-zero, on a failure that `failure()` reports as (index, returncode), or on a stop signal
        (`on_signal(signum)` is told first)."""
        tick = tick or (lambda: None)
        while True:
            if self.signals.received:
                sig = self.signals.received[0]
                if on_signal:
                    on_signal(sig)
                self.stop(sig, tick)
                return Outcome(128 + sig, signum=sig)
            reported = failure() if failure else None
            codes = [p.poll() for p in self.procs]
            if reported is None:
                failed = next((i for i, c in enumerate(codes) if c not in (None, 0)), None)
                reported = None if failed is None else (failed, codes[failed])
            if reported is not None:
                self.stop(signal.SIGTERM, tick)
                return Outcome(exit_status(reported[1]), reported[0], reported[1])
            if all(c == 0 for c in codes):
                return Outcome(0)
            tick()
            time.sleep(self.interval_s)

    def stop(self, sig: int, tick=None, grace_s=None) -> None:
        """`sig` to every process group, a grace period, SIGKILL to the groups and the marked stragglers."""
        seen = len(self.signals.received)
        self._signal_groups(sig)
        deadline = time.monotonic() + (self.grace_s if grace_s is None else grace_s)
        while time.monotonic() < deadline and any(p.poll() is None for p in self.procs):
            if len(self.signals.received) > seen:     # (another) signal: no more waiting
                break
            if tick:
                tick()
            time.sleep(self.interval_s)
        self._signal_groups(signal.SIGKILL)
        kill_marked(self.token)
        for p in self.procs:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:      # unkillable (in uninterruptible sleep): leave it
                pass

    def _signal_groups(self, sig: int) -> None:
        for p in self.procs:
            try:
                os.killpg(p.pid, sig)        # the group outlives its leader while children remain
            except (ProcessLookupError, PermissionError):
                pass


def kill_marked(token: str) -> None:
    """SIGKILL every process whose environment carries MARKER_ENV=token (Linux /proc; elsewhere none)."""
    needle = f"{MARKER_ENV}={token}".encode()
    try:
        pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return
    for pid in pids:
        if pid == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if needle in f.read().split(b"\0"):
                    os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
