"""`tensorplug run -n N script.py [args]`, plain `mpiexec -n N python script.py`, the seed's examples
with 2 and 4 processes, and examples/ddp_train.py."""
import os
import stat
import sys

import pytest
from typer.testing import CliRunner

import _launch
from _launch import requires_mpi
from tensorplug.cli import run as run_mod
from tensorplug.cli.app import app

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SEED = os.path.join(_launch.WORKERS, "seed.py")
TP = [sys.executable, "-m", "tensorplug"]


def _seed_results(j, n):
    every = j.result
    assert [r["rank"] for r in every] == list(range(n)) and {r["size"] for r in every} == {n}
    assert every[1]["p2p"] == every[0]["p2p"] and any(every[0]["p2p"])       # rank 1 got rank 0's x
    assert all(r["all_reduce"] == [n * (n - 1) / 2] for r in every)          # every rank: sum of ranks
    for r in range(n):
        assert f"Hello from process {r} (out of {n})!" in j.stdout


@requires_mpi
@pytest.mark.parametrize("n", [2, 4])
def test_seed_examples_under_tensorplug_run(n):
    j = _launch.run(TP + ["run", "-n", str(n), SEED], timeout=60)
    assert j.returncode == 0, j.describe()
    _seed_results(j, n)


@requires_mpi
def test_seed_examples_under_plain_mpiexec():
    j = _launch.run([_launch.mpiexec_path(), "-n", "2", sys.executable, SEED], timeout=60)
    assert j.returncode == 0, j.describe()
    _seed_results(j, 2)


@requires_mpi
def test_ddp_train_example():
    script = os.path.join(ROOT, "examples", "ddp_train.py")
    j = _launch.run(TP + ["run", "-n", "2", script, "--num-epochs", "3"], timeout=90)
    assert j.returncode == 0, j.describe()
    assert "2 process(es), 900 samples, 450 per process" in j.stdout, j.describe()
    assert j.stdout.count("epoch ") == 3 and "parameters identical on all ranks: True" in j.stdout


# -- the command line, without running MPI ------------------------------------------------------------
runner = CliRunner()


def _fake_launcher(tmp_path, version_text):
    exe = tmp_path / "mpiexec"
    exe.write_text(f"#!/bin/sh\necho '{version_text}'\n")
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    return str(exe)


def test_dry_run_passes_script_arguments_through(tmp_path):
    exe = _fake_launcher(tmp_path, "HYDRA build details:")
    script = tmp_path / "s.py"
    script.write_text("")
    r = runner.invoke(app, ["run", "-n", "3", "--mpiexec", exe, "--dry-run", str(script), "--epochs", "2",
                            "-n", "9", "--help"])
    assert r.exit_code == 0, r.output
    assert r.output.split() == [exe, "-n", "3", sys.executable, "-m", "tensorplug.cli.rank_output", str(script),
                                "--epochs", "2", "-n", "9", "--help"]
    r = runner.invoke(app, ["run", "-n", "2", "--mpiexec", exe, "--dry-run", "--no-prefix", str(script)])
    # --no-prefix: the same runner (it sets RANK, WORLD_SIZE, ...), the output not redirected
    assert r.exit_code == 0 and r.output.split() == [exe, "-n", "2", sys.executable, "-m",
                                                     "tensorplug.cli.rank_output", str(script)]


def test_open_mpi_gets_root_and_oversubscribe_flags(tmp_path, monkeypatch):
    exe = _fake_launcher(tmp_path, "mpiexec (Open MPI) 5.0.5")
    assert run_mod.mpi_flavor(exe) == "openmpi"
    r = runner.invoke(app, ["run", "-n", "4", "--mpiexec", exe, "--mpi-arg=--bind-to", "--mpi-arg=none",
                            "--dry-run", "-m", "pkg.train", "x"])
    assert r.exit_code == 0, r.output
    words = r.output.split()
    assert "--oversubscribe" in words and ("--allow-run-as-root" in words) == (os.geteuid() == 0)
    assert words[-8:] == ["--bind-to", "none", sys.executable, "-m", "tensorplug.cli.rank_output", "-m",
                          "pkg.train", "x"]
    for var in run_mod.THREAD_VARS:
        monkeypatch.delenv(var, raising=False)
    env = run_mod.launch_env("openmpi", 4)
    assert env["PATH"].split(os.pathsep)[0] == os.path.dirname(sys.executable)
    assert env["OMP_NUM_THREADS"] == str(max(1, run_mod._cores() // 4))
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "3")
    assert "OMP_NUM_THREADS" not in run_mod.launch_env("mpich", 4)
    if os.geteuid() == 0:
        assert env["OMPI_ALLOW_RUN_AS_ROOT"] == "1"


def test_mpich_needs_no_flags(tmp_path):
    exe = _fake_launcher(tmp_path, "HYDRA build details:\n    Version: 4.3.0")
    assert run_mod.mpi_flavor(exe) == "mpich"
    assert run_mod.build_command(2, "a.py", ["1"], exe, "mpich") == [exe, "-n", "2", sys.executable, "-m",
                                                                     "mpi4py", "a.py", "1"]


def test_finds_the_launcher_next_to_python(monkeypatch):
    monkeypatch.delenv("TENSORPLUG_MPIEXEC", raising=False)
    monkeypatch.setenv("PATH", "/nonexistent")
    found = run_mod.find_mpiexec()
    here = os.path.dirname(sys.executable)
    if os.path.exists(os.path.join(here, "mpiexec")):
        assert found == os.path.join(here, "mpiexec")
    else:
        assert found is None or os.path.dirname(found) == here


def test_missing_launcher_or_script_is_a_clear_error(monkeypatch, tmp_path):
    script = tmp_path / "s.py"
    script.write_text("")
    monkeypatch.setenv("TENSORPLUG_MPIEXEC", str(tmp_path / "no-mpiexec"))
    r = runner.invoke(app, ["run", "-n", "2", str(script)])
    assert r.exit_code == 3 and "no MPI launcher found" in r.output
    r = runner.invoke(app, ["run", "-n", "2", str(tmp_path / "missing.py")])
    assert r.exit_code == 2 and "no such script" in r.output
    r = runner.invoke(app, ["run", "-n", "0", str(script)])
    assert r.exit_code == 2
    monkeypatch.setenv("TENSORPLUG_MPIEXEC", _fake_launcher(tmp_path, "HYDRA"))
    monkeypatch.setattr(run_mod, "_have_mpi4py", lambda: False)
    r = runner.invoke(app, ["run", "-n", "2", str(script)])
    assert r.exit_code == 3 and "mpi4py is not installed" in r.output
