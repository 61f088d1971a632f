"""torchrun's launch on one node: `nproc_per_node` plain processes of a script, each with torchrun's
environment (RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR, ...), which meet through the env:// init
method; their output prefixed with the rank; supervised (supervisor.py). Run the same on every node
of a job with its own `node_rank`."""
from __future__ import annotations

import os
import shutil
import signal
import socket
import sys
import tempfile
from dataclasses import dataclass
from typing import List, Sequence

from .environment import base_env, torchrun_env
from .supervisor import GRACE_S, Job, describe_returncode

DEFAULT_MASTER_ADDR, DEFAULT_MASTER_PORT = "127.0.0.1", 29500       # torchrun's defaults


@dataclass
class LaunchConfig:
    """One node's share of a job. The ranks of node `node_rank` are node_rank * nproc_per_node + 0,
    1, ..., and the job has nnodes * nproc_per_node ranks. Raises ValueError on values that cannot
    make a job."""
    nproc_per_node: int
    nnodes: int = 1
    node_rank: int = 0
    master_addr: str = DEFAULT_MASTER_ADDR
    master_port: int = DEFAULT_MASTER_PORT
    run_id: str = "none"
    role: str = "default"
    max_restarts: int = 0
    monitor_interval: float = 0.05
    grace_s: float = GRACE_S

    def __post_init__(self):
        for name in ("nproc_per_node", "nnodes"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 1:
                raise ValueError(f"{name} must be a positive integer, got {getattr(self, name)!r}")
        if not isinstance(self.node_rank, int) or not 0 <= self.node_rank < self.nnodes:
            raise ValueError(f"node_rank must be in [0, nnodes) = [0, {self.nnodes}), got {self.node_rank!r}")
        if not isinstance(self.master_port, int) or not 0 < self.master_port < 65536:
            raise ValueError(f"master_port must be a TCP port (1..65535), got {self.master_port!r}")
        if not self.master_addr:
            raise ValueError("master_addr must name the host of rank 0 (e.g. 127.0.0.1)")
        if self.max_restarts != 0:
            raise ValueError(f"max_restarts={self.max_restarts}: restarting failed ranks is not supported "
                             "(a failure ends the job)")

    @property
    def world_size(self) -> int:
        return self.nnodes * self.nproc_per_node

    def ranks(self) -> List[int]:
        """The global ranks this node runs."""
        return [self.node_rank * self.nproc_per_node + i for i in range(self.nproc_per_node)]


def free_port(host: str = DEFAULT_MASTER_ADDR) -> int:
    """A TCP port free on `host` right now (for --standalone)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def worker_command(target: str, args: Sequence[str] = (), *, module: bool = False,
                   no_python: bool = False) -> List[str]:
    """What each rank runs: `python -u SCRIPT ARGS` (`-m MODULE`), or SCRIPT itself with no_python."""
    if no_python:
        return [target, *args]
    return [sys.executable, "-u", *(["-m", target] if module else [target]), *args]


def rank_environments(config: LaunchConfig, environ=None) -> List[dict]:
    """The variables the launcher sets for each local rank (on top of the inherited environment)."""
    return [torchrun_env(local_rank=i, nproc_per_node=config.nproc_per_node, node_rank=config.node_rank,
                         nnodes=config.nnodes, master_addr=config.master_addr, master_port=config.master_port,
                         run_id=config.run_id, role=config.role, max_restarts=config.max_restarts)
            for i in range(config.nproc_per_node)]


def launch(config: LaunchConfig, cmd: Sequence[str], *, prefix_output: bool = True,
           name: str = "tensorplug.distributed.run") -> int:
    """Run `cmd` (see worker_command) as this node's ranks until they end; the launcher's exit
    status: 0 when every rank exits 0, else the first failed rank's (128 + N for signal N), or
    128 + N when signal N stopped the launcher. `name` starts the launcher's own messages."""
    from tensorplug.cli.rank_output import RankOutput

    base = base_env(config.nproc_per_node)
    folder = tempfile.mkdtemp(prefix="tensorplug-run-") if prefix_output else None
    ranks = config.ranks()
    output = RankOutput(folder, len(ranks), ranks=ranks) if folder else None
    try:
        with Job(grace_s=config.grace_s, interval_s=config.monitor_interval) as job:
            for rank, extra in zip(ranks, rank_environments(config)):
                files = {}
                if folder:
                    files = {"stdout": open(os.path.join(folder, f"{rank}.out"), "ab"),
                             "stderr": open(os.path.join(folder, f"{rank}.err"), "ab")}
                try:
                    job.start(list(cmd), {**base, **extra}, **files)
                except OSError as e:
                    _say(name, f"could not start rank {rank} ({cmd[0]}): {e}")
                    job.stop(signal.SIGTERM)
                    return 1
                finally:
                    for f in files.values():
                        f.close()
            outcome = job.supervise(tick=output.poll if output else None,
                                    on_signal=lambda sig: _say(name, f"got {_signame(sig)}; stopping the "
                                                               f"{len(ranks)} rank(s) of this node"))
    finally:
        if output:
            output.close()
        if folder:
            shutil.rmtree(folder, ignore_errors=True)
    if outcome.failed is not None:
        _say(name, f"FAILED: rank {ranks[outcome.failed]} (local_rank {outcome.failed}, pid "
                   f"{job.procs[outcome.failed].pid}) {describe_returncode(outcome.returncode)}; "
                   "stopped the other ranks")
    return outcome.exit_code


def _signame(sig: int) -> str:
    try:
        return signal.Signals(sig).name
    except ValueError:
        return f"signal {sig}"


def _say(name: str, text: str) -> None:
    sys.stderr.write(f"{name}: {text}\n")
    sys.stderr.flush()
