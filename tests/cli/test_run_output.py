"""`tensorplug run`'s rank-prefixed output (cli/rank_output.py) without MPI: the launcher side that
follows the ranks' files, the rank side that points its descriptors at them, and the install hint."""
import io
import os
import subprocess
import sys

from typer.testing import CliRunner

from tensorplug.cli import rank_output
from tensorplug.cli import run as run_mod
from tensorplug.cli.app import app
from tensorplug.utils.collect_env import pip_install_command


def test_lines_are_printed_whole_prefixed_and_in_order(tmp_path):
    out, err = io.StringIO(), io.StringIO()
    follow = rank_output.RankOutput(str(tmp_path), 2, out=out, err=err)
    follow.poll()                                        # no file yet: nothing, no error
    f0 = open(tmp_path / "0.out", "wb", buffering=0)
    f1 = open(tmp_path / "1.err", "wb", buffering=0)
    f0.write(b"first line\nsecond li")                   # a line cut in the middle
    f1.write("\u00fcn\u00efc\u00f6d\u00e9\n".encode()[:3])  # ... and a UTF-8 character too
    follow.poll()
    assert out.getvalue() == "[rank0]:first line\n" and err.getvalue() == ""
    f0.write(b"ne\n\nthird")
    f1.write("\u00fcn\u00efc\u00f6d\u00e9\n".encode()[3:])
    follow.poll()
    assert out.getvalue() == "[rank0]:first line\n[rank0]:second line\n[rank0]:\n"
    assert err.getvalue() == "[rank1]:\u00fcn\u00efc\u00f6d\u00e9\n"
    follow.close()                                       # the last line has no newline: printed at the end
    assert out.getvalue().endswith("[rank0]:third\n")
    f0.close()
    f1.close()


def test_a_rank_points_stdout_and_stderr_at_its_files(tmp_path):
    """The rank side: file descriptors 1 and 2 (so child processes too) go to <rank>.out / .err;
    then the script runs as under `python -m mpi4py` (sys.argv, __main__)."""
    script = tmp_path / "s.py"
    script.write_text("import subprocess, sys\n"
                      "print('hello', sys.argv[1:], __name__)\n"
                      "print('oops', file=sys.stderr)\n"
                      "subprocess.run([sys.executable, '-c', 'print(42)'], check=True)\n")
    env = {**os.environ, rank_output.FOLDER_ENV: str(tmp_path), "PMI_RANK": "3"}
    p = subprocess.run([sys.executable, "-m", "tensorplug.cli.rank_output", str(script), "a", "-n", "2"],
                       capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout == "" and p.stderr == ""
    assert (tmp_path / "3.out").read_text() == "hello ['a', '-n', '2'] __main__\n42\n"
    assert (tmp_path / "3.err").read_text() == "oops\n"


def test_the_ranks_run_unbuffered():
    assert run_mod.launch_env("mpich", 2)["PYTHONUNBUFFERED"] == "1"


def test_install_hints_name_a_command_that_works_here(tmp_path, monkeypatch):
    """The missing-mpi4py error names the pip command for this installation (a clone: pip install
    -e "<clone>[mpi]")."""
    script = tmp_path / "s.py"
    script.write_text("")
    exe = tmp_path / "mpiexec"
    exe.write_text("#!/bin/sh\necho HYDRA\n")
    exe.chmod(0o755)
    monkeypatch.setenv("TENSORPLUG_MPIEXEC", str(exe))
    monkeypatch.setattr(run_mod, "_have_mpi4py", lambda: False)
    r = CliRunner().invoke(app, ["run", "-n", "2", str(script)])
    assert r.exit_code == 3
    assert f"`{pip_install_command('mpi')}`" in r.output
    assert "pip install tensorplug[mpi]" not in r.output
