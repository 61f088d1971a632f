"""Starting `nprocs` copies of a function and waiting for them (torch.multiprocessing.spawn).

    def train(rank, world): ...
    tensorplug.multiprocessing.spawn(train, args=(4,), nprocs=4)

Process i runs fn(i, *args). When one fails, join() terminates the others (SIGTERM, then SIGKILL
after `grace_period` seconds) and raises ProcessRaisedException (the child raised: its traceback is
in the message) or ProcessExitedException (it exited with a non-zero code or died of a signal).
A child reports its exception through a file of its own, so a child that crashes leaves no pipe
half-written.
"""
from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import os
import pickle
import signal
import sys
import tempfile
import traceback
import warnings
import weakref

__all__ = ["ProcessException", "ProcessRaisedException", "ProcessExitedException", "ProcessContext", "SpawnContext",
           "spawn", "start_processes"]


class ProcessException(Exception):
    """A spawned process failed: `error_index` (its rank) and `error_pid`."""

    def __init__(self, msg: str, error_index: int, error_pid: int):
        super().__init__(msg)
        self.msg = msg
        self.error_index = error_index
        self.error_pid = error_pid

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.error_pid)


class ProcessRaisedException(ProcessException):
    """A spawned process raised an exception; the message holds its traceback."""


class ProcessExitedException(ProcessException):
    """A spawned process exited with a non-zero `exit_code`, or was killed (`signal_name`)."""

    def __init__(self, msg: str, error_index: int, error_pid: int, exit_code: int, signal_name=None):
        super().__init__(msg, error_index, error_pid)
        self.exit_code = exit_code
        self.signal_name = signal_name

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.error_pid, self.exit_code, self.signal_name)


def _wrap(fn, i, args, error_file):
    """What process i runs: fn(i, *args); an exception's traceback goes to error_file, exit code 1."""
    try:
        fn(i, *args)
    except KeyboardInterrupt:
        pass                                  # the parent terminates us: nothing to report
    except Exception:
        with open(error_file, "wb") as f:
            pickle.dump(traceback.format_exc(), f)
        sys.exit(1)


def _remove(paths):
    for p in paths:
        try:
            os.unlink(p)
        except OSError:
            pass


class ProcessContext:
    """The processes start_processes started; join() them."""

    def __init__(self, processes, error_files):
        self.processes = processes
        self.error_files = error_files
        self.sentinels = {p.sentinel: i for i, p in enumerate(processes)}
        self._cleanup = weakref.finalize(self, _remove, list(error_files))

    def pids(self):
        return [int(p.pid) for p in self.processes]

    def join(self, timeout=None, grace_period=None):
        """Wait up to `timeout` seconds (None: until one exits) for the processes; True when all
        exited successfully, False when some still run. Raises ProcessRaisedException /
        ProcessExitedException as soon as one failed, after terminating the others."""
        if not self.sentinels:
            return True
        ready = multiprocessing.connection.wait(list(self.sentinels), timeout=timeout)
        failed = None
        for sentinel in ready:
            i = self.sentinels.pop(sentinel)
            p = self.processes[i]
            p.join()
            if p.exitcode != 0:
                failed = i
                break
        if failed is None:
            done = not self.sentinels
            if done:
                self._cleanup()
            return done
        self._terminate_all(grace_period)
        try:
            raise self._error(failed)
        finally:
            self._cleanup()

    def _terminate_all(self, grace_period):
        alive = [p for p in self.processes if p.is_alive()]
        for p in alive:
            p.terminate()
        if grace_period is not None:
            multiprocessing.connection.wait([p.sentinel for p in alive], timeout=grace_period)
        for p in alive:
            if p.is_alive():
                p.kill()
            p.join()
        self.sentinels.clear()

    def _error(self, i):
        p = self.processes[i]
        path = self.error_files[i]
        if os.path.exists(path) and os.path.getsize(path):
            with open(path, "rb") as f:
                tb = pickle.load(f)
            return ProcessRaisedException(f"\n\n-- Process {i} terminated with the following error:\n{tb}", i, p.pid)
        code = p.exitcode
        if code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"<Unknown signal {-code}>"
            return ProcessExitedException(f"process {i} terminated with signal {name}", i, p.pid, code, name)
        return ProcessExitedException(f"process {i} terminated with exit code {code}", i, p.pid, code)


class SpawnContext(ProcessContext):
    """The former name of ProcessContext."""

    def __init__(self, processes, error_files):
        warnings.warn("SpawnContext is renamed to ProcessContext since 1.4 release.", FutureWarning, stacklevel=2)
        super().__init__(processes, error_files)


def start_processes(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """Start nprocs processes running fn(i, *args) with `start_method`; join them (join=True) or
    return their ProcessContext."""
    if not isinstance(nprocs, int) or isinstance(nprocs, bool) or nprocs < 1:
        raise ValueError(f"nprocs must be a positive integer, got {nprocs!r}")
    ctx = multiprocessing.get_context(start_method)
    from . import reductions
    reductions.init_reductions()              # tensors among args travel through shared memory
    error_files, processes = [], []
    try:
        for i in range(nprocs):
            fd, path = tempfile.mkstemp(prefix="tensorplug_spawn_")
            os.close(fd)
            os.unlink(path)                   # the child creates it only when it has an error to report
            error_files.append(path)
            p = ctx.Process(target=_wrap, args=(fn, i, args, path), daemon=daemon)
            p.start()
            processes.append(p)
    except BaseException:
        for p in processes:
            p.terminate()
            p.join()
        raise
    context = ProcessContext(processes, error_files)
    if not join:
        return context
    while not context.join():
        pass


def spawn(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """start_processes with the 'spawn' start method (another one warns, as in PyTorch)."""
    if start_method != "spawn":
        warnings.warn(f"This method only supports start_method=spawn (got: {start_method}).\nTo use a different "
                      f"start_method use:\n\t\t torch.multiprocessing.start_processes(...)", FutureWarning,
                      stacklevel=2)
    return start_processes(fn, args, nprocs, join, daemon, start_method)
