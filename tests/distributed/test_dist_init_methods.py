"""Processes that no MPI launcher started join one world: env:// (the default with RANK / WORLD_SIZE
set), tcp://, file://, a store; 2 and 4 processes run the seed's examples, an all_gather and a
broadcast. Errors: MASTER_PORT missing, a rank that never comes (the init timeout names it), a
conflicting RANK under mpiexec. health.failed_peers sees a rank that exited and one SIGKILLed. A
hostfile naming localhost twice (a several-machine launch on one machine)."""
import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid

import pytest

import _launch
from _launch import requires_mpi

WORKER = os.path.join(_launch.WORKERS, "init_methods.py")
SEED = os.path.join(_launch.WORKERS, "seed.py")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_plain(n, args, timeout=60, env=None, started=None):
    """Start `started` (default n) plain `python init_methods.py args` processes with RANK /
    WORLD_SIZE=n / MASTER_ADDR / MASTER_PORT, each in its own session; kill them all (and whatever
    carries this run's marker, e.g. their helper mpiexec) on timeout. [(returncode, stdout, stderr)]."""
    token = uuid.uuid4().hex
    port = free_port()
    procs = []
    for r in range(n if started is None else started):
        e = _launch.child_env({"RANK": str(r), "WORLD_SIZE": str(n), "MASTER_ADDR": "127.0.0.1",
                               "MASTER_PORT": str(port), "WORKER_WATCHDOG_S": "40", _launch.MARKER: token,
                               **(env or {})})
        procs.append(subprocess.Popen([sys.executable, WORKER, *map(str, args)], stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True, env=e, start_new_session=True))
    deadline = time.monotonic() + timeout
    results = []
    try:
        for p in procs:
            try:
                out, err = p.communicate(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                out, err = "", "TIMED OUT"
            results.append((p.returncode, out, err))
    finally:
        for p in procs:
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                p.wait()
        _launch._kill_marked(token)
    return results


def result_of(res):
    code, out, err = res
    for line in out.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    raise AssertionError(f"no RESULT line (exit {code})\n--- stdout\n{out[-3000:]}\n--- stderr\n{err[-5000:]}")


def check_examples(results, n, backend):
    every = [result_of(r) for r in results]
    for r, res in zip(range(n), every):
        assert (res["rank"], res["size"]) == (r, n), res
        assert res["backend"] == backend and res["timeout"] == (120.0 if "store" in res["mode"] else 1800.0)
        if res["mode"] == "env" and r < 2:
            assert res["subgroup"] == [backend, 7.0, r]
        assert res["p2p"] == every[0]["p2p"] or r > 1
        assert res["all_reduce"] == [n * (n - 1) / 2]
        assert res["all_gather"] == [[q, q * 10 + 0.5] for q in range(n)]
        assert res["broadcast"] == [i * float(n) for i in range(5)]
        assert res["failed_peers"] == {}
    assert every[1]["p2p"] == every[0]["p2p"] and len(set(every[0]["p2p"])) == 10   # random, received
    assert all(code == 0 for code, _, _ in results), results
    return every


@requires_mpi
@pytest.mark.parametrize("n", [2, 4])
def test_every_init_method(n, tmp_path):
    """env:// (as the default, backend "gloo"), tcp:// ("mpi"), file:// ("nccl"), store= ("cpu:gloo,...")."""
    for args, backend in ((["env"], "gloo"), (["tcp", free_port()], "mpi"),
                          (["file", tmp_path / f"rdv{n}"], "nccl"), (["store", free_port()], "cpu:gloo,cuda:nccl")):
        results = run_plain(n, args)
        every = check_examples(results, n, backend)
        if args[0] == "tcp":                # destroy_process_group, then init again on the same port
            assert all(res["all_reduce_again"] == [n * (n + 1) / 2] for res in every)
        stderr0 = results[0][2]
        if backend != "mpi":
            assert f'backend "{backend}" is served by the "mpi" communication backend' in stderr0
        assert all("served by" not in err for _, _, err in results[1:])     # rank 0 says it, once
    assert not (tmp_path / f"rdv{n}").exists()             # the last FileStore user removed the file


@requires_mpi
def test_missing_master_port_and_a_rank_that_never_comes():
    res = result_of(run_plain(1, ["noport"], env={"MASTER_PORT": ""})[0])
    assert res["error"].startswith("ValueError") and "environment variable MASTER_PORT" in res["error"]
    port = free_port()
    results = run_plain(3, ["timeout", port], started=2, timeout=30)
    for r in (0, 1):
        res = result_of(results[r])
        assert "waiting for rank(s) [2] of a world of 3 to join (ranks [0, 1] did)" in res["error"], res
        assert res["seconds"] < 10
    # rank 1 may see rank 0 (the store's server) leave before its own deadline
    assert "timed out after 2 s waiting" in result_of(results[0])["error"]


@requires_mpi
@pytest.mark.parametrize("how", ["exit", "kill", "raise"])
def test_failed_peers_sees_a_rank_that_left(how):
    results = run_plain(2, [how], timeout=40)
    res = result_of(results[0])
    want = {"exit": "exited", "kill": "died (connection to the store lost)",
            "raise": "exited with code 1 (uncaught ValueError)"}[how]
    assert res["failed"] == {"1": want} and res["seconds"] < 5, res
    assert res["failed_in_subgroup"] == {}               # rank 1 is not a member of new_group([0])
    assert results[1][0] == {"exit": 0, "kill": -signal.SIGKILL, "raise": 1}[how], results[1]
    if how == "raise":
        assert "ValueError: rank 1 fails" in results[1][2]


@requires_mpi
def test_conflicting_rank_under_mpiexec():
    """Under an MPI launcher the launcher's ranks count; a RANK in the environment that disagrees is
    an error naming it."""
    j = _launch.run([_launch.mpiexec_path(), "-n", "2", "-env", "RANK", "5", sys.executable, SEED], timeout=40)
    assert j.returncode != 0 and "RANK=5 does not match the MPI launcher" in j.stderr, j.describe()


@requires_mpi
def test_hostfile_naming_localhost_twice(tmp_path):
    hosts = tmp_path / "hosts"
    hosts.write_text("localhost\nlocalhost\n")
    j = _launch.run([_launch.mpiexec_path(), "-f", str(hosts), "-n", "2", sys.executable, "-m", "mpi4py",
                     SEED], timeout=40)
    assert j.returncode == 0, j.describe()
    every = j.result
    assert [r["rank"] for r in every] == [0, 1] and every[1]["p2p"] == every[0]["p2p"]
    assert all(r["all_reduce"] == [1.0] for r in every)


@requires_mpi
def test_failed_peers_under_mpiexec():
    """A launcher-started job has a liveness store too (rank 0 serves it, its address broadcast)."""
    j = _launch.run([_launch.mpiexec_path(), "-n", "2", sys.executable, WORKER, "exit"], timeout=40)
    assert j.returncode == 0, j.describe()
    res = j.result
    assert (res["rank"], res["size"], res["backend"]) == (0, 2, "gloo")
    assert res["failed"] == {"1": "exited"} and res["seconds"] < 5, res


# -- one process, no job -----------------------------------------------------------------------------
def test_backend_names():
    """PyTorch's names select the registered backend serving their device types."""
    import tensorplug.distributed as dist
    from tensorplug.distributed import process_group as pgm
    assert dist.Backend("GLOO") == "gloo" and dist.Backend.NCCL == "nccl" and dist.Backend("MPI") == dist.Backend.MPI
    assert isinstance(dist.Backend("gloo"), str) and dist.default_pg_timeout.total_seconds() == 1800
    for name in ("gloo", "nccl", "cpu:gloo,cuda:nccl", "cuda:nccl"):
        b, stands_in = pgm._find_backend(name)
        assert (b.name, stands_in) == ("mpi", True), name
    assert pgm._find_backend("mpi")[1] is False
    with pytest.raises(ValueError, match="invalid backend string 'cpu:gloo,cuda'"):
        pgm._find_backend("cpu:gloo,cuda")
    with pytest.raises(ValueError, match="unknown communication backend 'ucx'"):
        pgm._find_backend("ucx")
    with pytest.raises(TypeError, match="timeout must be a datetime.timedelta"):
        dist.init_process_group("mpi", timeout=30)
    with pytest.raises(ValueError, match="Cannot specify both init_method and store"):
        dist.init_process_group("mpi", init_method="env://", store=dist.HashStore(), rank=0, world_size=2)
    with pytest.raises(ValueError, match="tcp:// rendezvous: rank parameter missing"):
        dist.init_process_group("mpi", init_method="tcp://127.0.0.1:1", world_size=2)
    with pytest.raises(ValueError, match="file:// rendezvous: world size parameter missing"):
        dist.init_process_group("mpi", init_method="file:///tmp/x?rank=0")
    with pytest.raises(ValueError, match="rank 2 is out of range for world_size 2"):
        dist.init_process_group("mpi", init_method="tcp://127.0.0.1:1?rank=2&world_size=2")
    assert not dist.is_initialized()


def test_a_launcher_that_is_not_mpich(tmp_path, monkeypatch):
    """With an mpiexec that cannot run the PMI holder (Open MPI's), the error names it."""
    from tensorplug.backends.mpi_dist import connect
    fake = tmp_path / "mpiexec"
    fake.write_text("#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'mpiexec (Open MPI) 5.0.3'; exit 0; fi\n"
                    "echo 'unrecognized argument -pmi-port' >&2; exit 1\n")
    fake.chmod(0o755)
    monkeypatch.setattr(connect, "_mpiexec", lambda: str(fake))
    monkeypatch.delitem(sys.modules, "mpi4py.MPI", raising=False)
    with pytest.raises(RuntimeError, match=r"needs MPICH's hydra mpiexec .*Open MPI's: not supported.*exited "
                                           r"with code 1: unrecognized argument -pmi-port"):
        connect.start_pmi_holder(timeout=10)
    assert "TENSORPLUG_PMI_HOLDER" not in os.environ and "PMI_PORT" not in os.environ


def test_slurm_task_variables_stand_in_for_rank_and_world_size(monkeypatch):
    import importlib
    rdv = importlib.import_module("tensorplug.distributed.rendezvous")   # (dist.rendezvous is the function)
    for var in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "SLURM_PROCID", "SLURM_NTASKS"):
        monkeypatch.delenv(var, raising=False)
    assert rdv.default_init_method() is None
    monkeypatch.setenv("SLURM_PROCID", "3")
    monkeypatch.setenv("SLURM_NTASKS", "8")
    assert rdv.default_init_method() == "env://" and (rdv._env("RANK"), rdv._env("WORLD_SIZE")) == ("3", "8")
    with pytest.raises(ValueError, match="environment variable MASTER_ADDR expected"):
        next(rdv.rendezvous("env://"))
    monkeypatch.setenv("RANK", "1")                        # RANK set: Slurm's variables are not read
    assert rdv._env("WORLD_SIZE") is None
