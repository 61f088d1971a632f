"""`python -m tensorplug.distributed.run` (and `torch.distributed.run` through the torch alias):
torchrun's command line, one node of a job per launcher.

    python -m tensorplug.distributed.run --nproc-per-node 2 train.py --epochs 3
    python -m tensorplug.distributed.run --nnodes 2 --node-rank 0 --nproc-per-node 2 \\
        --master-addr node0.example --master-port 29500 train.py        # the same on node 1, --node-rank 1

Each rank is a plain `python -u train.py ...` with torchrun's variables (RANK, LOCAL_RANK,
WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR, MASTER_PORT, TORCHELASTIC_RUN_ID, ...);
`init_process_group()` meets the others through env://. Each line a rank prints comes out prefixed
`[rankN]:` (--no-prefix passes the output through). A rank that fails ends the job with its exit
code; SIGINT / SIGTERM to the launcher stops every rank. Not supported (an error says so): elastic
node ranges (--nnodes MIN:MAX with MIN < MAX), restarts (--max-restarts > 0), rendezvous backends
other than the static / c10d endpoint.
"""
from __future__ import annotations

import argparse
import os
import sys
import uuid
from typing import List, Optional

from .launcher.api import DEFAULT_MASTER_ADDR, DEFAULT_MASTER_PORT, LaunchConfig, free_port, launch, worker_command

__all__ = ["get_args_parser", "parse_args", "config_from_args", "make_config", "run", "main", "ArgumentError"]


class ArgumentError(ValueError):
    """A command line that cannot make a job."""


def _both(name: str) -> List[str]:
    """torchrun spells every option both ways: --nproc-per-node and --nproc_per_node."""
    return [f"--{name}", f"--{name.replace('-', '_')}"] if "-" in name else [f"--{name}"]


def get_args_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m tensorplug.distributed.run",
                                description="Start this node's processes of a distributed job (torchrun).")
    p.add_argument("--nnodes", default="1", help="Number of nodes: N (or N:N). Default: 1.")
    p.add_argument(*_both("nproc-per-node"), dest="nproc_per_node", default="1",
                   help="Processes on this node: N, or cpu / auto (one per core). Default: 1.")
    p.add_argument(*_both("node-rank"), dest="node_rank", type=int, default=0,
                   help="This node's index, 0..nnodes-1. Default: 0.")
    p.add_argument(*_both("master-addr"), dest="master_addr", default=None,
                   help=f"Address of node 0 (rank 0 listens there). Default: {DEFAULT_MASTER_ADDR}.")
    p.add_argument(*_both("master-port"), dest="master_port", type=int, default=None,
                   help=f"A free port on node 0. Default: {DEFAULT_MASTER_PORT}.")
    p.add_argument("--standalone", action="store_true", help="One node, on a free port, with a fresh run id.")
    p.add_argument(*_both("rdzv-backend"), dest="rdzv_backend", default="static",
                   help="static or c10d: both meet at --rdzv-endpoint (or --master-addr/--master-port).")
    p.add_argument(*_both("rdzv-endpoint"), dest="rdzv_endpoint", default="", help="HOST[:PORT] of node 0.")
    p.add_argument(*_both("rdzv-id"), dest="rdzv_id", default="none",
                   help="The job's id (TORCHELASTIC_RUN_ID). Default: none.")
    p.add_argument(*_both("max-restarts"), dest="max_restarts", type=int, default=0,
                   help="Only 0: a failed rank ends the job.")
    p.add_argument(*_both("monitor-interval"), dest="monitor_interval", type=float, default=0.1,
                   help="Seconds between checks of the ranks. Default: 0.1.")
    p.add_argument("--role", default="default", help="ROLE_NAME of the ranks. Default: default.")
    p.add_argument("-m", "--module", action="store_true", help="The script is a module name (python -m).")
    p.add_argument(*_both("no-python"), dest="no_python", action="store_true",
                   help="Run the script itself (an executable), not with python.")
    p.add_argument("--no-prefix", dest="no_prefix", action="store_true",
                   help="Pass the ranks' output through as it comes, without the [rankN]: prefixes.")
    p.add_argument("training_script", help="The script (or module, with -m) each rank runs.")
    p.add_argument("training_script_args", nargs=argparse.REMAINDER, help="Arguments for the script.")
    return p


def parse_args(args: Optional[List[str]] = None) -> argparse.Namespace:
    return get_args_parser().parse_args(args)


def _count(text: str, what: str) -> int:
    try:
        value = int(text)
    except (TypeError, ValueError):
        raise ArgumentError(f"{what} must be a positive integer, got {text!r}") from None
    if value < 1:
        raise ArgumentError(f"{what} must be a positive integer, got {value}")
    return value


def _nnodes(text: str) -> int:
    low, sep, high = str(text).partition(":")
    n = _count(low, "--nnodes")
    if sep and _count(high, "--nnodes") != n:
        raise ArgumentError(f"--nnodes {text}: elastic node ranges are not supported; give one number of nodes")
    return n


def _nproc(text: str) -> int:
    if text in ("cpu", "auto"):
        return os.cpu_count() or 1
    if text == "gpu":
        raise ArgumentError("--nproc-per-node gpu: not supported; give the number of processes")
    return _count(text, "--nproc-per-node")


def make_config(*, nproc_per_node="1", nnodes="1", node_rank=0, master_addr=None, master_port=None,
                standalone=False, rdzv_endpoint="", rdzv_id="none", rdzv_backend="static", role="default",
                max_restarts=0, monitor_interval=0.1) -> LaunchConfig:
    """The LaunchConfig of a torchrun command line's values (strings as typed); ArgumentError names
    the option when one is wrong."""
    nodes, nproc = _nnodes(nnodes), _nproc(str(nproc_per_node))
    if rdzv_backend not in ("static", "c10d"):
        raise ArgumentError(f"--rdzv-backend {rdzv_backend}: not supported; static and c10d meet at "
                            "--master-addr/--master-port (or --rdzv-endpoint)")
    if rdzv_endpoint:
        host, _, port = rdzv_endpoint.rpartition(":") if ":" in rdzv_endpoint else (rdzv_endpoint, "", "")
        master_addr = master_addr or host
        if port and master_port is None:
            try:
                master_port = int(port)
            except ValueError:
                raise ArgumentError(f"--rdzv-endpoint {rdzv_endpoint}: the port must be a number") from None
    if standalone:
        if nodes != 1:
            raise ArgumentError(f"--standalone is one node; got --nnodes {nnodes}")
        master_addr, master_port, rdzv_id = DEFAULT_MASTER_ADDR, free_port(), uuid.uuid4().hex
    try:
        return LaunchConfig(nproc_per_node=nproc, nnodes=nodes, node_rank=node_rank,
                            master_addr=master_addr or DEFAULT_MASTER_ADDR,
                            master_port=DEFAULT_MASTER_PORT if master_port is None else master_port,
                            run_id=rdzv_id, role=role, max_restarts=max_restarts,
                            monitor_interval=monitor_interval)
    except ValueError as e:
        raise ArgumentError(str(e).replace("node_rank", "--node-rank").replace("master_port", "--master-port")
                            .replace("max_restarts", "--max-restarts")) from None


def config_from_args(args: argparse.Namespace):
    """(LaunchConfig, the command each rank runs)."""
    config = make_config(nproc_per_node=args.nproc_per_node, nnodes=args.nnodes, node_rank=args.node_rank,
                         master_addr=args.master_addr, master_port=args.master_port, standalone=args.standalone,
                         rdzv_endpoint=args.rdzv_endpoint, rdzv_id=args.rdzv_id, rdzv_backend=args.rdzv_backend,
                         role=args.role, max_restarts=args.max_restarts, monitor_interval=args.monitor_interval)
    cmd = worker_command(args.training_script, args.training_script_args, module=args.module,
                         no_python=args.no_python)
    return config, cmd


def run(args: argparse.Namespace) -> int:
    """Launch the ranks of `args` (see parse_args) and supervise them; the exit status."""
    config, cmd = config_from_args(args)
    return launch(config, cmd, prefix_output=not args.no_prefix)


def main(args: Optional[List[str]] = None) -> None:
    parsed = parse_args(args)
    try:
        code = run(parsed)
    except ArgumentError as e:
        get_args_parser().error(str(e))          # usage and the message, exit status 2
    sys.exit(code)


if __name__ == "__main__":
    main()
