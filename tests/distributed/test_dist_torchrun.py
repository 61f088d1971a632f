"""torchrun's launch (`tensorplug run --nproc-per-node N`, `python -m tensorplug.distributed.run`)
and the mpiexec one (`tensorplug run -n N`): the environment every rank gets, failure propagation,
and a SIGTERM / SIGINT to the launcher leaving no rank behind."""
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid

import pytest
from typer.testing import CliRunner

import _launch
from _launch import requires_mpi
from tensorplug.cli import run as run_mod
from tensorplug.cli.app import app

ENV_WORKER = os.path.join(_launch.WORKERS, "launch_env.py")
SLEEP_WORKER = os.path.join(_launch.WORKERS, "launch_sleep.py")
SEED = os.path.join(_launch.WORKERS, "seed.py")
TP_RUN = [sys.executable, "-m", "tensorplug", "run"]
TORCHRUN = [sys.executable, "-m", "tensorplug.distributed.run"]
BINDIR = os.path.dirname(sys.executable)
# the launcher must set these itself: the harness's values are removed (`env -u`) or emptied
NO_THREADS = ["env", *(a for v in run_mod.THREAD_VARS for a in ("-u", v))]
PREFIX = re.compile(r"^\[rank(\d+)\]:(.*)$")


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _envs(stdout):
    """{rank (from the prefix): the worker's ENV report}."""
    out = {}
    for line in stdout.splitlines():
        m = PREFIX.match(line)
        if m and m.group(2).startswith("ENV "):
            out[int(m.group(1))] = json.loads(m.group(2)[4:])
    return out


def _torchrun_expected(rank, local_rank, nproc, nnodes, node_rank, threads, port=29500, run_id="none"):
    world = nproc * nnodes
    return {"RANK": str(rank), "LOCAL_RANK": str(local_rank), "WORLD_SIZE": str(world),
            "LOCAL_WORLD_SIZE": str(nproc), "GROUP_RANK": str(node_rank), "GROUP_WORLD_SIZE": str(nnodes),
            "ROLE_NAME": "default", "ROLE_RANK": str(rank), "ROLE_WORLD_SIZE": str(world),
            "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "TORCHELASTIC_RUN_ID": run_id,
            "TORCHELASTIC_RESTART_COUNT": "0", "OMP_NUM_THREADS": str(threads), "PYTHONUNBUFFERED": "1",
            "PATH0": BINDIR}


# -- the environment of each rank -------------------------------------------------------------------
@requires_mpi
def test_per_node_launch_gives_torchrun_environment_2_ranks():
    """2 ranks, no thread count set: OMP_NUM_THREADS = cores // 2; script arguments passed through."""
    j = _launch.run(NO_THREADS + TP_RUN + ["--nproc-per-node", "2", ENV_WORKER, "a", "--b"], timeout=60,
                    env={"PYTHONUNBUFFERED": ""})
    assert j.returncode == 0, j.describe()
    envs = _envs(j.stdout)
    threads = max(1, run_mod._cores() // 2)
    assert sorted(envs) == [0, 1], j.describe()
    for r in range(2):
        assert envs[r].pop("argv") == ["a", "--b"]
        assert envs[r] == _torchrun_expected(r, r, 2, 1, 0, threads)


@requires_mpi
def test_torchrun_module_gives_torchrun_environment_4_ranks():
    """python -m tensorplug.distributed.run, torchrun's underscore spelling; a thread count already
    set is kept; --master-port and --rdzv-id reach the ranks."""
    port = _free_port()
    j = _launch.run(TORCHRUN + ["--nproc_per_node=4", f"--master_port={port}", "--rdzv-id", "job7", ENV_WORKER],
                    timeout=60, env={"OMP_NUM_THREADS": "3"})
    assert j.returncode == 0, j.describe()
    envs = _envs(j.stdout)
    assert sorted(envs) == [0, 1, 2, 3], j.describe()
    for r in range(4):
        envs[r].pop("argv")
        assert envs[r] == _torchrun_expected(r, r, 4, 1, 0, 3, port=port, run_id="job7")


@requires_mpi
def test_two_nodes_on_one_machine():
    """Two launchers, --nnodes 2 --nproc-per-node 1, node ranks 0 and 1: ranks 0 and 1 of a world of 2."""
    port = _free_port()
    cmds = [TP_RUN + ["--nnodes", "2", "--node-rank", str(k), "--nproc-per-node", "1", "--master-addr",
                      "127.0.0.1", "--master-port", str(port), ENV_WORKER] for k in (0, 1)]
    token = uuid.uuid4().hex
    procs = [subprocess.Popen(c, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=_launch.child_env({_launch.MARKER: token}), start_new_session=True) for c in cmds]
    try:
        outs = [p.communicate(timeout=60) for p in procs]
    finally:
        _launch._kill_marked(token)
    for k, (p, (out, err)) in enumerate(zip(procs, outs)):
        assert p.returncode == 0, err
        envs = _envs(out)
        assert list(envs) == [k], out          # node k runs global rank k, prefixed with it
        envs[k].pop("argv")
        assert envs[k] == _torchrun_expected(k, 0, 1, 2, k, 1, port=port)


@requires_mpi
@pytest.mark.parametrize("n", [2, 4])
def test_mpiexec_launch_gives_rank_variables(n, tmp_path):
    """-n N: RANK / LOCAL_RANK / WORLD_SIZE / LOCAL_WORLD_SIZE from the MPI launcher's variables,
    OMP_NUM_THREADS = cores // N; --no-prefix (4 ranks) too."""
    extra = ["--no-prefix"] if n == 4 else []
    j = _launch.run(NO_THREADS + TP_RUN + ["-n", str(n), *extra, ENV_WORKER, "x"], timeout=60,
                    env={"LAUNCH_ENV_DIR": str(tmp_path)})
    assert j.returncode == 0, j.describe()
    if extra:
        assert j.stdout.count("ENV ") == n and not re.search(r"\[rank\d+\]:", j.stdout), j.describe()
        envs = {r: json.loads((tmp_path / f"{r}.json").read_text()) for r in range(n)}
    else:
        envs = _envs(j.stdout)
    assert sorted(envs) == list(range(n)), j.describe()
    for r in range(n):
        e = envs[r]
        assert (e["RANK"], e["LOCAL_RANK"], e["WORLD_SIZE"], e["LOCAL_WORLD_SIZE"]) == (str(r), str(r), str(n), str(n))
        assert e["OMP_NUM_THREADS"] == str(max(1, run_mod._cores() // n)) and e["PATH0"] == BINDIR
        assert e["MASTER_ADDR"] is None and e["argv"] == ["x"]


@requires_mpi
def test_torch_distributed_run_through_the_alias():
    """`tensorplug exec -m torch.distributed.run` is this launcher; its ranks get the torch alias."""
    j = _launch.run([sys.executable, "-m", "tensorplug", "exec", "-m", "torch.distributed.run", "--standalone",
                     "--nproc-per-node", "2", ENV_WORKER, "torch"], timeout=60)
    assert j.returncode == 0, j.describe()
    envs = _envs(j.stdout)
    assert sorted(envs) == [0, 1] and {e["torch"] for e in envs.values()} == {"tensorplug"}, j.describe()
    ports = {e["MASTER_PORT"] for e in envs.values()}
    ids = {e["TORCHELASTIC_RUN_ID"] for e in envs.values()}
    assert len(ports) == 1 and ports != {"29500"} and len(ids) == 1 and ids != {"none"}   # --standalone


@requires_mpi
@pytest.mark.parametrize("n", [2, 4])
def test_seed_examples_under_the_torchrun_module(n):
    """The seed's examples, the ranks meeting through env:// (RANK, WORLD_SIZE, MASTER_ADDR/PORT)."""
    j = _launch.run(TORCHRUN + ["--nproc-per-node", str(n), "--master-port", str(_free_port()), SEED], timeout=90)
    assert j.returncode == 0, j.describe()
    every = j.result
    assert [r["rank"] for r in every] == list(range(n)) and {r["size"] for r in every} == {n}
    assert every[1]["p2p"] == every[0]["p2p"] and any(every[0]["p2p"])
    assert all(r["all_reduce"] == [n * (n - 1) / 2] for r in every)
    for r in range(n):
        assert f"[rank{r}]:Hello from process {r} (out of {n})!" in j.stdout


# -- supervision: failures and signals ------------------------------------------------------------
def _marked_pids(token):
    """The live processes whose environment carries the test's marker `token` (zombies have none)."""
    needle = f"{_launch.MARKER}={token}".encode()
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if needle in f.read().split(b"\0"):
                    found.append(int(pid))
        except OSError:
            pass
    return found


class _Started:
    """A launcher started in a session of its own, its output in files, marked with a fresh token."""

    def __init__(self, cmd):
        self.token = uuid.uuid4().hex
        self.out = tempfile.TemporaryFile("w+")
        self.err = tempfile.TemporaryFile("w+")
        self.proc = subprocess.Popen(cmd, stdout=self.out, stderr=self.err, text=True,
                                     env=_launch.child_env({_launch.MARKER: self.token}), start_new_session=True)

    def text(self, stream):
        stream.seek(0)
        return stream.read()

    def wait_for(self, pattern, count, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if len(re.findall(pattern, self.text(self.out))) >= count or self.proc.poll() is not None:
                break
            time.sleep(0.05)
        assert len(re.findall(pattern, self.text(self.out))) >= count, self.describe()

    def wait(self, timeout):
        t0 = time.monotonic()
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            pass
        return time.monotonic() - t0

    def no_marked_process_left(self, within):
        deadline = time.monotonic() + within
        while _marked_pids(self.token) and time.monotonic() < deadline:
            time.sleep(0.05)
        return _marked_pids(self.token)

    def describe(self):
        return (f"exit {self.proc.poll()}\n--- stdout\n{self.text(self.out)[-3000:]}\n"
                f"--- stderr\n{self.text(self.err)[-3000:]}")

    def cleanup(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        _launch._kill_marked(self.token)
        self.proc.wait(timeout=10)
        self.out.close()
        self.err.close()


def _launcher(path, n, *worker_args):
    """`tensorplug run` of the sleeping worker through `path` (per-node: on a free port)."""
    how = ["--nproc-per-node", str(n), "--master-port", str(_free_port())] if path == "per-node" else ["-n", str(n)]
    return TP_RUN + how + [SLEEP_WORKER, *worker_args]


@requires_mpi
@pytest.mark.parametrize("path,init,how", [("per-node", True, "3"), ("mpiexec", False, "3"), ("mpiexec", True, "3"),
                                           ("mpiexec", False, "raise")],
                         ids=["per-node-init", "mpiexec-plain", "mpiexec-init", "mpiexec-plain-raise"])
def test_a_failing_rank_ends_the_job_with_its_code(path, init, how):
    """Rank 1 exits 3 (or raises: 1) while rank 0 sleeps, before or after init_process_group: the
    launcher exits with that code within seconds, saying which rank failed; the rank's traceback is
    there; no process of the job is left."""
    job = _Started(_launcher(path, 2, "1", how, *(["init"] if init else [])))
    code = 1 if how == "raise" else 3
    try:
        job.wait_for(r"ready \d", 2, timeout=30)
        took = job.wait(timeout=20)
        err = job.text(job.err)
        assert job.proc.returncode == code and took < 10, job.describe()
        assert "FAILED: rank 1" in err and f"exited with code {code}" in err, job.describe()
        if how == "raise":
            assert "[rank1]:ValueError: rank 1 fails on purpose" in err.splitlines(), job.describe()
        assert job.no_marked_process_left(within=3) == [], job.describe()
    finally:
        job.cleanup()


@requires_mpi
@pytest.mark.parametrize("path,sig,init", [("per-node", signal.SIGTERM, True), ("per-node", signal.SIGINT, False),
                                           ("mpiexec", signal.SIGTERM, False), ("mpiexec", signal.SIGINT, False)],
                         ids=["per-node-SIGTERM-after-init", "per-node-SIGINT", "mpiexec-SIGTERM", "mpiexec-SIGINT"])
def test_a_signal_to_the_launcher_ends_every_rank(path, sig, init):
    """The launcher exits 128 + the signal within seconds, and no process of the job is left (the
    ranks, mpiexec and its proxies, env://'s PMI holders)."""
    job = _Started(_launcher(path, 2, *(["init"] if init else [])))
    try:
        job.wait_for(r"ready \d", 2, timeout=30)
        os.kill(job.proc.pid, sig)
        took = job.wait(timeout=20)
        assert job.proc.returncode == 128 + sig and took < 10, job.describe()
        assert f"got {sig.name}" in job.text(job.err), job.describe()
        assert job.no_marked_process_left(within=3) == [], job.describe()
    finally:
        job.cleanup()


# -- the command line, without starting anything ----------------------------------------------------
runner = CliRunner()


def _script(tmp_path):
    script = tmp_path / "s.py"
    script.write_text("")
    return str(script)


def test_dry_run_shows_each_ranks_variables_on_node_1(tmp_path):
    s = _script(tmp_path)
    r = runner.invoke(app, ["run", "--nproc_per_node", "2", "--nnodes", "2", "--node_rank", "1", "--master-addr",
                            "10.0.0.5", "--master-port", "1234", "--dry-run", s, "--lr", "0.1"])
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert len(lines) == 2
    for local, line in enumerate(lines):
        words = line.split()
        assert words[-5:] == [sys.executable, "-u", s, "--lr", "0.1"]
        got = dict(w.split("=", 1) for w in words[:-5])
        want = _torchrun_expected(2 + local, local, 2, 2, 1, 0, port=1234)
        for k in ("OMP_NUM_THREADS", "PYTHONUNBUFFERED", "PATH0"):
            want.pop(k)
        want["MASTER_ADDR"] = "10.0.0.5"
        assert got == {**want, "TORCHELASTIC_MAX_RESTARTS": "0"}


def test_usage_errors_name_the_problem(tmp_path):
    s = _script(tmp_path)
    cases = [
        (["-n", "2", "--nproc-per-node", "2", s], "not both"),
        ([s], "give -n N"),
        (["--nproc-per-node", "2", "--hostfile", "h", s], "--hostfile is for the mpiexec launch"),
        (["-n", "2", "--nnodes", "2", s], "--nnodes is for torchrun's launch"),
        (["--nproc-per-node", "2", "--nnodes", "1:2", s], "elastic node ranges are not supported"),
        (["--nproc-per-node", "2", "--nnodes", "2", "--node-rank", "2", s], "--node-rank must be in [0, nnodes)"),
        (["--nproc-per-node", "0", s], "--nproc-per-node must be a positive integer"),
        (["--nproc-per-node", "2", "--standalone", "--nnodes", "2", s], "--standalone is one node"),
        (["--nproc-per-node", "2", "--master-port", "70000", s], "--master-port must be a TCP port"),
        (["-n", "2", "--hostfile", str(tmp_path / "none"), s], "no such hostfile"),
    ]
    for args, message in cases:
        r = runner.invoke(app, ["run", *args])
        assert r.exit_code == 2 and message in r.output, (args, r.output)


def test_torchrun_module_usage_errors():
    p = subprocess.run(TORCHRUN + ["--nnodes", "2:4", "--nproc-per-node", "2", ENV_WORKER], capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 2 and "--nnodes 2:4: elastic node ranges are not supported" in p.stderr
    p = subprocess.run(TORCHRUN + ["--max-restarts", "1", ENV_WORKER], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "restarting failed ranks is not supported" in p.stderr


def _fake_launcher(tmp_path, version_text):
    exe = tmp_path / "mpiexec"
    exe.write_text(f"#!/bin/sh\necho '{version_text}'\n")
    exe.chmod(0o755)
    return str(exe)


@pytest.mark.parametrize("version,flag", [("HYDRA build details:", "-f"), ("mpiexec (Open MPI) 5.0.5", "--hostfile")])
def test_hostfile_reaches_the_mpi_launcher(tmp_path, version, flag):
    s, hosts = _script(tmp_path), tmp_path / "hosts"
    hosts.write_text("node0\nnode1\n")
    exe = _fake_launcher(tmp_path, version)
    r = runner.invoke(app, ["run", "-n", "4", "--mpiexec", exe, "--hostfile", str(hosts), "--dry-run", s])
    assert r.exit_code == 0, r.output
    words = r.output.split()
    i = words.index(flag)
    assert words[i + 1] == str(hosts) and words[-4:] == [sys.executable, "-m", run_mod.RANK_RUNNER, s]
    assert "btl_tcp_if_include" not in words                  # no network interface pinned


def test_rank_variables_from_each_mpi_launcher():
    from tensorplug.distributed.launcher.environment import env_from_mpi_launcher
    hydra = {"PMI_RANK": "5", "PMI_SIZE": "8", "MPI_LOCALRANKID": "1", "MPI_LOCALNRANKS": "4"}
    ompi = {"OMPI_COMM_WORLD_RANK": "2", "OMPI_COMM_WORLD_SIZE": "3", "OMPI_COMM_WORLD_LOCAL_RANK": "0",
            "OMPI_COMM_WORLD_LOCAL_SIZE": "1"}
    assert env_from_mpi_launcher(hydra) == {"RANK": "5", "WORLD_SIZE": "8", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "4"}
    assert env_from_mpi_launcher(ompi) == {"RANK": "2", "WORLD_SIZE": "3", "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "1"}
    assert env_from_mpi_launcher({"PMI_RANK": "1", "PMI_SIZE": "2"}) == {"RANK": "1", "WORLD_SIZE": "2"}
    assert env_from_mpi_launcher({"PMI_RANK": "1"}) == {} and env_from_mpi_launcher({}) == {}


def test_the_command_lines_share_torchruns_defaults():
    from tensorplug.distributed.launcher import api
    defaults = ("127.0.0.1", 29500)
    assert (run_mod.DEFAULT_MASTER_ADDR, run_mod.DEFAULT_MASTER_PORT) == defaults
    assert (api.DEFAULT_MASTER_ADDR, api.DEFAULT_MASTER_PORT) == defaults
