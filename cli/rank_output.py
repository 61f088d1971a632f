"""The ranks' output under `tensorplug run`: every line prefixed with its rank, `[rank0]:...`
(torchrun's --tee prefixes `[<role><local rank>]:`, `[default0]:` by default), and none lost.

Under mpiexec each rank runs `python -m tensorplug.cli.rank_output SCRIPT ARGS...`: it sets RANK,
WORLD_SIZE, LOCAL_RANK and LOCAL_WORLD_SIZE from the MPI launcher's variables, points its stdout and
stderr (file descriptors 1 and 2, so C libraries and child processes too) at the files
`<folder>/<rank>.out` and `<folder>/<rank>.err` (unless it is run without a folder: --no-prefix),
then does what `python -m mpi4py SCRIPT ARGS...`
does (an uncaught exception on any rank aborts the whole job). The launcher follows the files while
the job runs (`RankOutput.poll`) and reads them to the end once it is over (`close`). What a rank
wrote before it was killed is in its file, so an abort on one rank loses no line of the others;
the launcher runs the ranks with PYTHONUNBUFFERED=1, so nothing waits in Python's buffers.
A rank that fails leaves a note in the launcher's status folder (STATUS_ENV): the launcher names it
and exits with its code, and stops the job itself where the rank never initialised MPI (mpi4py
aborts the job only where it had).
"""
from __future__ import annotations

import os
import sys

FOLDER_ENV = "TENSORPLUG_RUN_OUTPUT"
# a folder where a failing rank leaves `<rank>.failed`: its exit status, and "abort" when MPI is
# ending the job itself or "stop" when the launcher has to
STATUS_ENV = "TENSORPLUG_RUN_STATUS"
# where MPICH / Hydra and Intel MPI, Open MPI, PMIx, MVAPICH and Slurm tell a process its rank
RANK_ENV = ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "MV2_COMM_WORLD_RANK", "SLURM_PROCID")


def prefix(rank: int) -> str:
    return f"[rank{rank}]:"


def _rank() -> int:
    for var in RANK_ENV:
        value = os.environ.get(var, "")
        if value.isdigit():
            return int(value)
    from mpi4py import MPI          # a launcher that says nothing: ask MPI (this initialises it)
    return MPI.COMM_WORLD.Get_rank()


def _redirect(folder: str, rank: int) -> None:
    for stream, fd, kind in ((sys.stdout, 1, "out"), (sys.stderr, 2, "err")):
        stream.flush()
        target = os.open(os.path.join(folder, f"{rank}.{kind}"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        os.dup2(target, fd)
        os.close(target)
        stream.reconfigure(line_buffering=True)


def _exit_status(exc: BaseException) -> int:
    if isinstance(exc, SystemExit):
        return 0 if exc.code is None else exc.code if isinstance(exc.code, int) else 1
    return 130 if isinstance(exc, KeyboardInterrupt) else 1


def failed_ranks(status_folder: str) -> dict:
    """{rank: (exit status, whether MPI is aborting the job itself)} of the ranks that left a
    failure note in `status_folder`."""
    out = {}
    for name in os.listdir(status_folder):
        rank, _, kind = name.partition(".")
        if kind == "failed" and rank.isdigit():
            try:
                with open(os.path.join(status_folder, name)) as f:
                    code, _, how = f.read().partition(" ")
                out[int(rank)] = (int(code or 1), how.strip() == "abort")
            except (OSError, ValueError):
                out[int(rank)] = (1, False)
    return out


def _leave_note(status: str, rank: int, code: int, how: str) -> None:
    path = os.path.join(status, f"{rank}.failed")
    with open(path + ".tmp", "w") as f:
        f.write(f"{code} {how}")
    os.replace(path + ".tmp", path)           # the launcher never reads half a note


def main() -> None:
    from tensorplug.distributed.launcher.environment import env_from_mpi_launcher
    os.environ.update(env_from_mpi_launcher())      # RANK, WORLD_SIZE, ... as torchrun's ranks have them
    folder = os.environ.pop(FOLDER_ENV, None)
    status = os.environ.pop(STATUS_ENV, None)
    rank = _rank() if folder or status else None
    if folder:
        _redirect(folder, rank)
    from mpi4py.run import main as run_like_mpi4py
    try:
        run_like_mpi4py()              # reads sys.argv[1:]: SCRIPT ARGS... or -m MODULE ARGS...
    except BaseException as exc:
        code = _exit_status(exc)
        if not status or not code:
            raise
        if "mpi4py.MPI" in sys.modules:
            # mpi4py aborts the job as this process exits (after the traceback): the note only
            # names the rank for the launcher's summary
            _leave_note(status, rank, code, "abort")
            raise
        # MPI was never initialised here, so nothing else ends the other ranks: report the error
        # as Python would at exit, then ask the launcher to stop the job
        if not isinstance(exc, SystemExit):
            sys.excepthook(type(exc), exc, exc.__traceback__)
        elif exc.code is not None and not isinstance(exc.code, int):
            print(exc.code, file=sys.stderr)
        sys.stderr.flush()
        _leave_note(status, rank, code, "stop")
        raise SystemExit(code) from None


class RankOutput:
    """Follows the files of `n` ranks in `folder` (ranks 0..n-1, or those of `ranks`) and writes each
    complete line, prefixed with its rank, to `out` (the ranks' stdout) or `err` (their stderr)."""

    def __init__(self, folder: str, n: int, out=None, err=None, ranks=None):
        self.folder, self.n = folder, n
        self.ranks = list(range(n) if ranks is None else ranks)
        self.streams = {"out": out, "err": err}
        self.files: dict[tuple[int, str], list] = {}      # (rank, kind) -> [file, bytes not yet printed]

    def _stream(self, kind):
        return self.streams[kind] or (sys.stdout if kind == "out" else sys.stderr)

    def poll(self) -> None:
        """Print the lines the ranks completed since the last call."""
        for rank in self.ranks:
            for kind in ("out", "err"):
                state = self.files.get((rank, kind))
                if state is None:
                    try:
                        state = self.files[(rank, kind)] = [open(os.path.join(self.folder, f"{rank}.{kind}"), "rb"),
                                                            b""]
                    except FileNotFoundError:
                        continue
                data = state[0].read()
                if not data:
                    continue
                *lines, state[1] = (state[1] + data).split(b"\n")
                if lines:
                    stream = self._stream(kind)
                    stream.write("".join(f"{prefix(rank)}{ln.decode('utf-8', 'replace')}\n" for ln in lines))
                    stream.flush()

    def close(self) -> None:
        """Print everything that is left, a last line without its newline too, and close the files."""
        self.poll()
        for (rank, kind), (f, rest) in sorted(self.files.items()):
            if rest:
                stream = self._stream(kind)
                stream.write(f"{prefix(rank)}{rest.decode('utf-8', 'replace')}\n")
                stream.flush()
            f.close()
        self.files.clear()


if __name__ == "__main__":
    main()
