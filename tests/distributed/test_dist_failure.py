"""A rank that fails must not hang the others: the job exits non-zero within seconds, with that
rank's error on stderr (the other ranks are blocked in an all_reduce the failing rank never joins)."""
import os
import sys

import pytest

import _launch
from _launch import requires_mpi

WORKER = os.path.join(_launch.WORKERS, "fail.py")
FAST = {"WORKER_WATCHDOG_S": "25"}      # a hang shows up as a watchdog exit, after the limit below


def _check(j, n, exit_code=None):
    assert not j.timed_out and j.elapsed < 15, j.describe()
    assert j.returncode != 0, j.describe()
    if exit_code is not None:
        assert j.returncode == exit_code, j.describe()
    assert "unreachable" not in j.stdout and "Timeout" not in j.stderr, j.describe()


@requires_mpi
@pytest.mark.parametrize("n", [2, 4])
def test_uncaught_exception_aborts_the_job(n):
    """Under `python -m mpi4py` (what `tensorplug run` uses)."""
    j = _launch.run_ranks(n, WORKER, "raise", timeout=40, env=FAST)
    _check(j, n)
    assert "Traceback" in j.stderr and f"ValueError: rank {n - 1} fails on purpose" in j.stderr, j.describe()


@requires_mpi
def test_uncaught_exception_aborts_without_mpi4py_runner():
    """Plain `mpiexec -n 2 python script.py`: tensorplug.distributed's excepthook aborts the job."""
    cmd = [_launch.mpiexec_path(), "-n", "2", sys.executable, WORKER, "raise"]
    j = _launch.run_retrying(cmd, timeout=40, env=FAST)
    _check(j, 2)
    assert "uncaught exception on rank 1; aborting the job" in j.stderr, j.describe()
    assert "Traceback" in j.stderr and "ValueError: rank 1 fails on purpose" in j.stderr, j.describe()


@requires_mpi
def test_nonzero_exit_aborts_the_job():
    j = _launch.run_ranks(2, WORKER, "exit", timeout=40, env=FAST)
    _check(j, 2, exit_code=3)


@requires_mpi
def test_launcher_propagates_the_failure():
    cmd = [sys.executable, "-m", "tensorplug", "run", "-n", "2", WORKER, "raise"]
    j = _launch.run(cmd, timeout=40, env=FAST)
    _check(j, 2)
    assert "ValueError: rank 1 fails on purpose" in j.stderr, j.describe()
