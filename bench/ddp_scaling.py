"""DistributedDataParallel: time per training step of an MLP on 1, 2 and 4 ranks, and the share of
the step spent waiting for gradient communication.

Weak scaling: every rank runs the same per-rank batch (so N ranks process N times the samples per
step). One step = zero_grad, forward, cross-entropy, backward (bucketed gradient all-reduces start
from the gradient hooks during backward and are waited for at its end), SGD with momentum. Reported
per rank count (the slowest rank's numbers, medians over steps after warm-up):
* step: time per step; samples/s over all ranks; efficiency = step(1 rank) / step(N ranks);
* wait: time blocked at the end of backward waiting for the all-reduces (communication not hidden
  behind the backward computation, plus waiting for slower ranks), and its fraction of the step;
* buckets: number of buckets, and how many started while backward was still running.
Each rank uses one BLAS thread (OMP/OPENBLAS/MKL_NUM_THREADS=1 unless set), so N ranks need N
cores; 4 ranks on a 2-core machine are oversubscribed: their numbers show correctness, not speed.
A benchmark reports numbers; it asserts nothing.

    python bench/ddp_scaling.py [--ranks 1 2 4] [--steps 30] [--batch 64] [--hidden 1024 1024]
                                [--bucket-cap-mb 25]
    python bench/ddp_scaling.py --quick      # 1 and 2 ranks, a tiny MLP, 3 steps (numbers meaningless)

It also prints one `RESULT {json}` line per rank count in bench/_harness.py's format (tensorplug:
the step time; floor: the 1-rank step time; no goal).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

_LAUNCHED = ("PMI_RANK", "PMI_SIZE", "OMPI_COMM_WORLD_RANK", "MPI_LOCALRANKID", "PMIX_RANK")


def worker(args):
    import numpy as np

    import tensorplug as torch
    import tensorplug.distributed as dist
    import tensorplug.nn as nn
    import tensorplug.nn.functional as F
    from tensorplug.nn.parallel import DistributedDataParallel

    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    dims = [args.inputs, *args.hidden]
    layers = []
    for a, b in zip(dims, dims[1:]):
        layers += [nn.Linear(a, b), nn.ReLU()]
    layers.append(nn.Linear(dims[-1], args.classes))
    model = DistributedDataParallel(nn.Sequential(*layers), bucket_cap_mb=args.bucket_cap_mb)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    rng = np.random.default_rng(rank)
    x = torch.from_numpy(rng.standard_normal((args.batch, args.inputs)).astype(np.float32))
    y = torch.from_numpy(rng.integers(0, args.classes, args.batch))
    steps, waits = [], []
    for i in range(args.warmup + args.steps):
        w0 = model.reducer.wait_time
        dist.barrier()
        t0 = time.perf_counter()
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()
        t1 = time.perf_counter()
        if i >= args.warmup:
            steps.append(t1 - t0)
            waits.append(model.reducer.wait_time - w0)
    stats = model.comm_stats()
    mine = {"step": statistics.median(steps), "wait": statistics.median(waits),
            "params": sum(p.numel() for p in model.parameters()), "buckets": stats["buckets"],
            "early": stats["buckets_started_during_backward"] / max(1, stats["reductions"])}
    outs = [None] * world
    from mpi4py import MPI
    outs = MPI.COMM_WORLD.gather(mine, root=0)
    if rank == 0:
        slowest = max(outs, key=lambda o: o["step"])
        slowest["wait"] = max(o["wait"] for o in outs)
        print("DDP_RESULT " + json.dumps({"ranks": world, **slowest}), flush=True)
    dist.destroy_process_group()


def drive(args, argv):
    env = dict(os.environ)
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env.setdefault(var, "1")
    results = []
    for n in args.ranks:
        cmd = [sys.executable, "-m", "tensorplug", "run", "--no-prefix", "-n", str(n), os.path.abspath(__file__), *argv]
        out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=args.timeout)
        line = [ln for ln in out.stdout.splitlines() if ln.startswith("DDP_RESULT ")]
        if out.returncode or not line:
            print(f"{n} ranks failed (exit {out.returncode}):\n{out.stdout[-2000:]}\n{out.stderr[-3000:]}")
            return 1
        results.append(json.loads(line[0][len("DDP_RESULT "):]))
    r0 = results[0]
    cores = os.cpu_count()
    print(f"MLP {args.inputs}-{'-'.join(map(str, args.hidden))}-{args.classes} ({r0['params'] / 1e6:.2f} M "
          f"parameters, {r0['params'] * 4 / 2**20:.1f} MiB of gradients), batch {args.batch} per rank, "
          f"bucket cap {args.bucket_cap_mb} MB, {cores} cores; median of {args.steps} steps")
    print(f"{'ranks':>5}  {'step':>9}  {'samples/s':>9}  {'efficiency':>10}  {'wait':>9}  {'wait/step':>9}  "
          f"{'buckets':>7}  {'started in backward':>19}")
    base = next((r["step"] for r in results if r["ranks"] == 1), None)
    for r in results:
        eff = f"{base / r['step']:.2f}" if base else "-"
        note = "  (oversubscribed)" if cores and r["ranks"] > cores else ""
        print(f"{r['ranks']:>5}  {r['step'] * 1e3:7.2f}ms  {r['ranks'] * args.batch / r['step']:9.0f}  "
              f"{eff:>10}  {r['wait'] * 1e3:7.2f}ms  {r['wait'] / r['step']:9.1%}  {r['buckets']:>7}  "
              f"{r['early']:19.1f}{note}")
    for r in results:
        rec = {"workload": f"ddp step, {r['ranks']} ranks", "unit": "s", "tensorplug": r["step"],
               "floor": base, "floor_name": "1 rank", "ratio": r["step"] / base if base else None, "goal": None,
               "verdict": "info", "torch": None, "tensorplug_vs_torch": None, "torch_vs_floor": None,
               "quick": args.quick, "note": "weak scaling: the same per-rank batch",
               "extra": {"wait_s": r["wait"], "wait_fraction": r["wait"] / r["step"], "buckets": r["buckets"],
                         "oversubscribed": bool(cores and r["ranks"] > cores)}}
        print("RESULT " + json.dumps(rec))
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ranks", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--batch", type=int, default=64, help="per rank")
    parser.add_argument("--inputs", type=int, default=784)
    parser.add_argument("--hidden", type=int, nargs="+", default=[1024, 1024])
    parser.add_argument("--classes", type=int, default=10)
    parser.add_argument("--bucket-cap-mb", type=float, default=25)
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--quick", action="store_true", help="1 and 2 ranks, tiny MLP, 3 steps")
    argv = sys.argv[1:] if argv is None else argv
    args = parser.parse_args(argv)
    if args.quick:
        args.ranks, args.steps, args.warmup, args.hidden, args.batch = [1, 2], 3, 1, [64, 64], 8
    if any(k in os.environ for k in _LAUNCHED):
        worker(args)
        return 0
    return drive(args, argv)


if __name__ == "__main__":
    sys.exit(main())
