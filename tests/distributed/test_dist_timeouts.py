"""Nothing hangs: an operation that cannot complete ends the job within its timeout (plus a few
seconds) with an error naming the operation, the group and the timeout; a rank that exits while the
others wait ends the job within seconds; monitored_barrier names the missing ranks; DETAIL debug
checks name each rank's shape and dtype; a size mismatch is a clear error, not MPICH's stack.
(workers/timeouts.py: one failing job per case; workers/timeouts_checks.py: the checks that pass.)"""
import re
from concurrent.futures import ThreadPoolExecutor

import pytest

import _launch
from _launch import requires_mpi

LIMIT = 2.0                              # the group's timeout in the failing jobs (seconds)
SLACK = 8.0                              # how late after it the error may come
FAST = {"WORKER_WATCHDOG_S": "40"}       # a real hang shows up as the watchdog's exit or the hard timeout

CASES = [("all_reduce", 2), ("all_reduce", 4), ("broadcast", 2), ("barrier", 2), ("barrier", 4),
         ("recv", 2), ("work", 2), ("exit", 2), ("exit", 4), ("size_mismatch", 2), ("monitored", 2),
         ("monitored_all", 4)]
_jobs = {}


def _start_all():
    """Every failing job at once (most of their time is a wait): a few seconds' total wall time."""
    if not _jobs:
        with ThreadPoolExecutor(max_workers=4) as pool:
            futures = {c: pool.submit(_launch.run_ranks, c[1], "timeouts.py", c[0], LIMIT, timeout=45, env=FAST)
                       for c in CASES}
            _jobs.update({c: f.result() for c, f in futures.items()})
    return _jobs


def job(mode, n):
    return _start_all()[(mode, n)]


def _ended(j):
    assert not j.timed_out and "Timeout (0:" not in j.stderr, j.describe()
    assert j.returncode != 0, j.describe()
    assert "unreachable" not in j.stdout, j.describe()


def _waited(j, mode, rank=None):
    """(seconds, error text with "rank R" made "rank 0") of `WAITED mode R ...`, an error raised on
    waiting rank R (`rank`, or whichever reported first: its abort may end the others first)."""
    m = re.search(rf"WAITED {mode} ({rank if rank is not None else '[0-9]+'}) ([0-9.]+) (.*)", j.stdout)
    assert m, j.describe()
    return float(m.group(2)), m.group(3).replace(f"rank {m.group(1)} ", "rank 0 ")


@requires_mpi
@pytest.mark.parametrize("mode, n", [("all_reduce", 2), ("all_reduce", 4), ("broadcast", 2), ("barrier", 2),
                                     ("barrier", 4)])
def test_collective_with_an_absent_rank_raises(mode, n):
    """Every waiting rank raises DistBackendError naming the operation, the group and the timeout
    (uncaught, it then aborts the job)."""
    j = job(mode, n)
    _ended(j)
    seconds, err = _waited(j, mode)
    assert LIMIT <= seconds <= LIMIT + SLACK, j.describe()
    assert err.startswith(f"DistBackendError: {mode} timed out on rank 0 after"), err
    assert f"(timeout 2 s, process group 'default' (world, {n} ranks))" in err, err
    assert "uncaught exception on rank" in j.stderr, j.describe()
    cpu = [float(c) for c in re.findall(rf"CPU {mode} \d+ ([0-9.]+)", j.stdout)]
    assert cpu and max(cpu) < 0.5, (cpu, j.describe())     # waiting does not spin a core at 100 %


@requires_mpi
def test_recv_from_an_absent_rank_raises():
    j = job("recv", 2)
    _ended(j)
    seconds, err = _waited(j, "recv", 0)
    assert LIMIT <= seconds <= LIMIT + SLACK and "DistBackendError: recv timed out on rank 0" in err, j.describe()


@requires_mpi
def test_work_wait_timeout_raises():
    """Work.wait(timeout=2 s) of an async all_reduce (the group's own timeout is 60 s)."""
    j = job("work", 2)
    _ended(j)
    seconds, err = _waited(j, "work", 0)
    assert LIMIT <= seconds <= LIMIT + SLACK, j.describe()
    assert "DistBackendError: all_reduce timed out on rank 0" in err and "timeout 2 s" in err, err


@requires_mpi
@pytest.mark.parametrize("n", [2, 4])
def test_a_rank_that_exits_ends_the_job_within_seconds(n):
    """The last rank calls sys.exit(0) while the others wait in all_reduce (timeout 60 s)."""
    j = job("exit", n)
    _ended(j)
    assert j.elapsed < 25, j.describe()
    m = re.search(rf"rank {n - 1} exited[^\n]* while rank (\d+) waited in all_reduce", j.stderr + j.stdout)
    assert m, j.describe()


@requires_mpi
def test_size_mismatch_is_a_clear_error():
    """4 float32 on rank 0, 8 on rank 1, no debug checks: DistBackendError naming the contribution."""
    j = job("size_mismatch", 2)
    _ended(j)
    assert j.returncode != 142, j.describe()         # MPICH's own abort on an MPI error
    m = re.search(r"DistBackendError: all_reduce: message size mismatch between ranks — this rank "
                  r"contributed (\d+) bytes \(float32 \[(\d+)\]\)", j.stdout + j.stderr)
    assert m and int(m.group(1)) == 4 * int(m.group(2)), j.describe()


@requires_mpi
def test_monitored_barrier_names_the_first_missing_rank():
    j = job("monitored", 2)
    _ended(j)
    seconds, err = _waited(j, "monitored", 0)
    assert LIMIT <= seconds <= LIMIT + SLACK, j.describe()
    assert err == "DistBackendError: [Rank 0]: Rank 1 failed to pass monitoredBarrier in 2000 ms", err


@requires_mpi
def test_monitored_barrier_wait_all_ranks_names_every_missing_rank():
    """4 ranks, ranks 1 and 3 absent: rank 0 names both; rank 2 gets no answer and raises too."""
    j = job("monitored_all", 4)
    _ended(j)
    seconds, err = _waited(j, "monitored_all", 0)
    assert LIMIT <= seconds <= LIMIT + SLACK, j.describe()
    assert err == "DistBackendError: [Rank 0]: Ranks 1, 3 failed to pass monitoredBarrier in 2000 ms", err


# -- checks that pass (no failure): DETAIL fingerprints, monitored_barrier, timeouts that do not fire
_ok = {}


def ok_job(n):
    if n not in _ok:
        _ok[n] = _launch.run_ranks(n, "timeouts_checks.py", timeout=60,
                                   env={"TENSORPLUG_DISTRIBUTED_DEBUG": "DETAIL"})
    return _ok[n]


@requires_mpi
@pytest.mark.parametrize("n", [2, 4])
def test_debug_and_monitored_checks(n):
    j = ok_job(n)
    res = j.result
    assert res["size"] == n
    failed = {k: [e for e in v if e][0] for k, v in res["checks"].items() if any(v)}
    assert not failed, "\n".join(f"{k}: {e}" for k, e in failed.items())
    assert len(res["checks"]) >= 10
    assert j.returncode == 0, j.describe()


def test_error_hierarchy_matches_pytorch():
    import tensorplug.distributed as dist
    assert issubclass(dist.DistError, RuntimeError)
    for cls in (dist.DistBackendError, dist.DistNetworkError, dist.DistStoreError):
        assert cls.__mro__[1] is dist.DistError


def test_debug_level_from_env(monkeypatch):
    from tensorplug.distributed import debug
    saved = (debug.state.on, debug.state.level)
    try:
        for var in debug.ENV_VARS:
            monkeypatch.delenv(var, raising=False)
        debug.set_debug_level_from_env()
        assert debug.get_debug_level() is debug.DebugLevel.OFF and not debug.state.on
        monkeypatch.setenv("TORCH_DISTRIBUTED_DEBUG", "detail")
        debug.set_debug_level_from_env()
        assert debug.get_debug_level() is debug.DebugLevel.DETAIL and debug.state.on
        monkeypatch.setenv("TENSORPLUG_DISTRIBUTED_DEBUG", "INFO")      # ours wins over torch's
        debug.set_debug_level_from_env()
        assert debug.get_debug_level() is debug.DebugLevel.INFO and not debug.state.on
        monkeypatch.setenv("TENSORPLUG_DISTRIBUTED_DEBUG", "LOUD")
        with pytest.raises(ValueError, match="TENSORPLUG_DISTRIBUTED_DEBUG must be OFF, INFO, or DETAIL"):
            debug.set_debug_level_from_env()
    finally:
        debug.state.on, debug.state.level = saved
