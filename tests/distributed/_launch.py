"""Start `mpiexec -n N python -m mpi4py worker.py` as a subprocess that can never hang the test run.

The job runs in a session of its own with a hard timeout; on timeout the whole process group, and
any process that carries this job's marker environment variable (a rank may sit in a process group
of its own), is terminated and then killed. Workers print one line `RESULT <json>` from rank 0.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
WORKERS = os.path.join(HERE, "workers")
MARKER = "TENSORPLUG_TEST_MPI_JOB"


def mpiexec_path():
    """The mpiexec next to this Python (a virtual environment's bin), else one on PATH."""
    return (shutil.which("mpiexec", path=os.path.dirname(sys.executable)) or shutil.which("mpiexec"))


def skip_reason():
    """Why multi-process tests cannot run here, or None."""
    from tensorplug.dispatch import registry
    registry.ensure_loaded()
    b = registry.communication.get("mpi")
    if b is None:
        return "the mpi communication backend is not registered"
    ok, reason = b.is_available()
    if not ok:
        return f"MPI is not available: {reason}"
    if mpiexec_path() is None:
        return "no mpiexec next to the Python executable or on PATH (pip install mpich)"
    return None


_SKIP = []


def requires_mpi(fn):
    """Skip (saying why) where multi-process tests cannot run."""
    import pytest
    if not _SKIP:
        _SKIP.append(skip_reason())
    return pytest.mark.skipif(_SKIP[0] is not None, reason=f"multi-process test: {_SKIP[0]}")(fn)


def child_env(extra=None):
    env = dict(os.environ)
    bindir = os.path.dirname(sys.executable)
    env["PATH"] = bindir + os.pathsep + env.get("PATH", "")
    env.setdefault("UCX_TLS", "self,sm")
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env.setdefault(var, "1")             # several ranks' BLAS thread pools would fight for the cores
    env["PYTHONUNBUFFERED"] = "1"
    env.pop("TENSORPLUG_BACKEND_CPU", None)
    if extra:
        env.update(extra)
    return env


class Job:
    def __init__(self, returncode, stdout, stderr, elapsed, timed_out):
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr
        self.elapsed, self.timed_out = elapsed, timed_out

    @property
    def result(self):
        """The JSON object of rank 0's `RESULT ...` line (AssertionError with the output if none)."""
        for line in self.stdout.splitlines():
            line = re.sub(r"^\[rank\d+\]:", "", line)        # `tensorplug run` prefixes the rank
            if line.startswith("RESULT "):
                return json.loads(line[len("RESULT "):])
        raise AssertionError(f"no RESULT line (exit {self.returncode}, timed out: {self.timed_out})\n"
                             f"--- stdout\n{self.stdout[-4000:]}\n--- stderr\n{self.stderr[-6000:]}")

    def describe(self):
        return (f"exit {self.returncode} after {self.elapsed:.1f}s (timed out: {self.timed_out})\n"
                f"--- stdout\n{self.stdout[-4000:]}\n--- stderr\n{self.stderr[-6000:]}")


def _kill_marked(token):
    """SIGKILL every process whose environment carries MARKER=token (Linux /proc)."""
    needle = f"{MARKER}={token}".encode()
    for pid in os.listdir("/proc") if os.path.isdir("/proc") else ():
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if needle in f.read().split(b"\0"):
                    os.kill(int(pid), signal.SIGKILL)
        except (OSError, ProcessLookupError):
            pass


def run(cmd, timeout, env=None, cwd=None):
    """Run `cmd` (a list) in its own session with a hard timeout; a Job."""
    token = uuid.uuid4().hex
    env = child_env({**(env or {}), MARKER: token})
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                         cwd=cwd, start_new_session=True)
    timed_out = False
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(p.pid, sig)
            except ProcessLookupError:
                pass
            if sig == signal.SIGKILL:
                _kill_marked(token)
            try:
                out, err = p.communicate(timeout=3)
                break
            except subprocess.TimeoutExpired:
                continue
        else:
            out, err = "", ""
    _kill_marked(token)          # stragglers that left the process group
    return Job(p.returncode, out or "", err or "", time.monotonic() - t0, timed_out)


def run_retrying(cmd, timeout, env=None):
    """`run`, started once more when Hydra failed to start the ranks at all (exit non-zero, not a byte of
    output: seen on loaded 2-core CI machines; no test here checks that)."""
    job = run(cmd, timeout, env=env)
    if job.returncode != 0 and not job.timed_out and not job.stdout and not job.stderr:
        job = run(cmd, timeout, env=env)
    return job


def run_ranks(n, worker, *args, timeout=60, env=None):
    """`mpiexec -n n python -m mpi4py workers/<worker> args...` (n > cores is fine with MPICH)."""
    script = worker if os.path.isabs(worker) else os.path.join(WORKERS, worker)
    cmd = [mpiexec_path(), "-n", str(n), sys.executable, "-m", "mpi4py", script, *map(str, args)]
    return run_retrying(cmd, timeout, env=env)


class WorkerJobs:
    """One `run_ranks(n, worker)` job per world size, run once and shared by a test module's tests; the
    worker reports named checks (workers/_common.Checks)."""

    def __init__(self, worker, timeout=90):
        self.worker, self.timeout, self._jobs = worker, timeout, {}

    def __call__(self, n):
        if n not in self._jobs:
            self._jobs[n] = run_ranks(n, self.worker, timeout=self.timeout)
        return self._jobs[n]

    def checks(self, n):
        """{check name: [None | error text per rank]} of the n-rank job."""
        j = self(n)
        assert j.result["size"] == n, j.describe()
        return j.result["checks"]

    def assert_passed(self, n, name):
        """`name` ran on all n ranks without error."""
        errors = self.checks(n).get(name)
        assert errors is not None, f"{name} did not run\n{self(n).describe()}"
        bad = [(r, e) for r, e in enumerate(errors) if e]
        assert not bad, "\n".join(f"rank {r}: {e}" for r, e in bad)

    def family(self, n, family):
        """The checks named `family.*`, asserting that some ran."""
        checks = {k: v for k, v in self.checks(n).items() if k.split(".")[0] == family}
        assert checks, f"no {family} checks ran\n{self(n).describe()}"
        return checks
