"""The ranks' output under `tensorplug run`: every line prefixed with its rank, `[rank0]:...`
(torchrun's --tee prefixes `[<role><local rank>]:`, `[default0]:` by default), and none lost.

Each rank runs `python -m tensorplug.cli.rank_output SCRIPT ARGS...`: it points its stdout and
stderr (file descriptors 1 and 2, so C libraries and child processes too) at the files
`<folder>/<rank>.out` and `<folder>/<rank>.err`, then does what `python -m mpi4py SCRIPT ARGS...`
does (an uncaught exception on any rank aborts the whole job). The launcher follows the files while
the job runs (`RankOutput.poll`) and reads them to the end once it is over (`close`). What a rank
wrote before it was killed is in its file, so an abort on one rank loses no line of the others;
the launcher runs the ranks with PYTHONUNBUFFERED=1, so nothing waits in Python's buffers.
"""
from __future__ import annotations

import os
import sys

FOLDER_ENV = "TENSORPLUG_RUN_OUTPUT"
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


def main() -> None:
    folder = os.environ.pop(FOLDER_ENV, None)
    if folder:
        _redirect(folder, _rank())
    from mpi4py.run import main as run_like_mpi4py
    run_like_mpi4py()                  # reads sys.argv[1:]: SCRIPT ARGS... or -m MODULE ARGS...


class RankOutput:
    """Follows the files of `n` ranks in `folder` and writes each complete line, prefixed with its
    rank, to `out` (the ranks' stdout) or `err` (their stderr)."""

    def __init__(self, folder: str, n: int, out=None, err=None):
        self.folder, self.n = folder, n
        self.streams = {"out": out, "err": err}
        self.files: dict[tuple[int, str], list] = {}      # (rank, kind) -> [file, bytes not yet printed]

    def _stream(self, kind):
        return self.streams[kind] or (sys.stdout if kind == "out" else sys.stderr)

    def poll(self) -> None:
        """Print the lines the ranks completed since the last call."""
        for rank in range(self.n):
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
