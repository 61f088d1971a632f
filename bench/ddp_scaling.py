"""DistributedDataParallel: time per training step of an MLP on 1, 2 and 4 ranks, and the share of
the step spent waiting for gradient communication; beside it, PyTorch's DDP (gloo) on the same model
in the same run, when a Python with torch is at hand.

Weak scaling: every rank runs the same per-rank batch (so N ranks process N times the samples per
step). One step = zero_grad, forward, cross-entropy, backward (bucketed gradient all-reduces start
from the gradient hooks during backward and are waited for at its end), SGD with momentum. Reported
per rank count (the slowest rank's numbers, medians over steps after warm-up):
* step: time per step; samples/s over all ranks; efficiency = step(1 rank) / step(N ranks);
* wait: time blocked at the end of backward waiting for the all-reduces (communication not hidden
  behind the backward computation, plus waiting for slower ranks), and its fraction of the step;
* buckets: number of buckets, and how many started while backward was still running (per step);
  one more 2-rank run with a small bucket cap (--overlap-cap-mb) shows the all-reduces starting
  during backward;
* torch: PyTorch's DistributedDataParallel on gloo, the same model, batch and loop, started as plain
  subprocesses with env:// (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT), one thread each; its
  efficiency, and tensorplug's step / torch's step. The torch runs use --torch-python (default: the
  TENSORPLUG_BENCH_TORCH_PYTHON variable, else this Python if it has torch); without one they are
  skipped.
Each rank uses one BLAS thread (OMP/OPENBLAS/MKL_NUM_THREADS=1 unless set), so N ranks need N
cores; 4 ranks on a 2-core machine are oversubscribed: their numbers show correctness, not speed.
A benchmark reports numbers; it asserts nothing.

    python bench/ddp_scaling.py [--ranks 1 2 4] [--steps 30] [--batch 64] [--hidden 512 256]
                                [--bucket-cap-mb 25] [--torch-python /path/to/python-with-torch]
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


def _mlp_ddp(torch, nn, ddp_class, args):
    """The benchmark's MLP wrapped in `ddp_class` and its SGD optimizer, built the same way by either
    framework (`torch` is tensorplug or PyTorch)."""
    torch.manual_seed(0)
    dims = [args.inputs, *args.hidden]
    layers = []
    for a, b in zip(dims, dims[1:]):
        layers += [nn.Linear(a, b), nn.ReLU()]
    layers.append(nn.Linear(dims[-1], args.classes))
    model = ddp_class(nn.Sequential(*layers), bucket_cap_mb=args.bucket_cap_mb)
    return model, torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)


def _timed_steps(dist, F, model, opt, x, y, args, wait_time=lambda: 0.0):
    """(step seconds, seconds waiting for communication) per timed step, each step after a barrier."""
    steps, waits = [], []
    for i in range(args.warmup + args.steps):
        w0 = wait_time()
        dist.barrier()
        t0 = time.perf_counter()
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()
        t1 = time.perf_counter()
        if i >= args.warmup:
            steps.append(t1 - t0)
            waits.append(wait_time() - w0)
    return steps, waits


def worker(args):
    import numpy as np

    import tensorplug as torch
    import tensorplug.distributed as dist
    import tensorplug.nn as nn
    import tensorplug.nn.functional as F
    from tensorplug.nn.parallel import DistributedDataParallel

    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    model, opt = _mlp_ddp(torch, nn, DistributedDataParallel, args)
    rng = np.random.default_rng(rank)
    x = torch.from_numpy(rng.standard_normal((args.batch, args.inputs)).astype(np.float32))
    y = torch.from_numpy(rng.integers(0, args.classes, args.batch))
    steps, waits = _timed_steps(dist, F, model, opt, x, y, args, wait_time=lambda: model.reducer.wait_time)
    stats = model.comm_stats()
    mine = {"step": statistics.median(steps), "wait": statistics.median(waits),
            "params": sum(p.numel() for p in model.parameters()), "buckets": stats["buckets"],
            "early": stats["buckets_started_during_backward"] / max(1, stats["reductions"])}
    from mpi4py import MPI
    outs = MPI.COMM_WORLD.gather(mine, root=0)
    if rank == 0:
        slowest = max(outs, key=lambda o: o["step"])
        slowest["wait"] = max(o["wait"] for o in outs)
        print("DDP_RESULT " + json.dumps({"ranks": world, **slowest}), flush=True)
    dist.destroy_process_group()


def torch_worker(args):
    """The same model, batch and loop with PyTorch's DDP on gloo (env:// rendezvous)."""
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    import torch.nn.functional as F
    from torch.nn.parallel import DistributedDataParallel

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method="env://")
    rank, world = dist.get_rank(), dist.get_world_size()
    model, opt = _mlp_ddp(torch, nn, DistributedDataParallel, args)
    g = torch.Generator().manual_seed(rank)
    x = torch.randn(args.batch, args.inputs, generator=g)
    y = torch.randint(0, args.classes, (args.batch,), generator=g)
    steps, _ = _timed_steps(dist, F, model, opt, x, y, args)
    outs = [None] * world
    dist.all_gather_object(outs, statistics.median(steps))
    if rank == 0:
        print("TORCH_RESULT " + json.dumps({"ranks": world, "step": max(outs)}), flush=True)
    dist.destroy_process_group()


def _torch_python(args):
    if args.torch_python:
        return args.torch_python
    env = os.environ.get("TENSORPLUG_BENCH_TORCH_PYTHON")
    if env:
        return env
    import importlib.util
    return sys.executable if importlib.util.find_spec("torch") is not None else None


def run_torch(python, n, argv, env, timeout):
    """n plain subprocesses of `python this-file --torch-worker`, rendezvous by env://; the step time."""
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    procs = []
    for r in range(n):
        e = {**env, "RANK": str(r), "WORLD_SIZE": str(n), "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port),
             "TENSORPLUG_BENCH_TORCH_WORKER": "1"}
        procs.append(subprocess.Popen([python, os.path.abspath(__file__), *argv], env=e, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True, start_new_session=True))
    outs = []
    try:
        for p in procs:
            outs.append(p.communicate(timeout=timeout))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    line = [ln for ln in outs[0][0].splitlines() if ln.startswith("TORCH_RESULT ")]
    if any(p.returncode for p in procs) or not line:
        print(f"torch, {n} ranks, failed:\n" + "\n".join(o[1][-1500:] for o in outs))
        return None
    return json.loads(line[0][len("TORCH_RESULT "):])["step"]


def _run_tensorplug(n, argv, env, timeout):
    cmd = [sys.executable, "-m", "tensorplug", "run", "--no-prefix", "-n", str(n), os.path.abspath(__file__), *argv]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    line = [ln for ln in out.stdout.splitlines() if ln.startswith("DDP_RESULT ")]
    if out.returncode or not line:
        print(f"{n} ranks failed (exit {out.returncode}):\n{out.stdout[-2000:]}\n{out.stderr[-3000:]}")
        return None
    return json.loads(line[0][len("DDP_RESULT "):])


def drive(args, argv):
    env = dict(os.environ)
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env.setdefault(var, "1")
    results = []
    for n in args.ranks:
        r = _run_tensorplug(n, argv, env, args.timeout)
        if r is None:
            return 1
        results.append(r)
    overlap = None
    if args.overlap_cap_mb and not args.quick:
        overlap = _run_tensorplug(2, [*argv, "--bucket-cap-mb", str(args.overlap_cap_mb)], env, args.timeout)
    torch_py = _torch_python(args)
    torch_steps = {}
    if torch_py:
        for n in args.ranks:
            torch_steps[n] = run_torch(torch_py, n, argv, env, args.timeout)
    r0 = results[0]
    cores = os.cpu_count()
    print(f"MLP {args.inputs}-{'-'.join(map(str, args.hidden))}-{args.classes} ({r0['params'] / 1e6:.2f} M "
          f"parameters, {r0['params'] * 4 / 2**20:.1f} MiB of gradients), batch {args.batch} per rank, "
          f"bucket cap {args.bucket_cap_mb} MB, {cores} cores; median of {args.steps} steps")
    print(f"{'ranks':>5}  {'step':>9}  {'samples/s':>9}  {'efficiency':>10}  {'wait':>9}  {'wait/step':>9}  "
          f"{'buckets':>7}  {'started in backward':>19}  {'torch step':>10}  {'torch eff.':>10}  {'tp/torch':>8}")
    base = next((r["step"] for r in results if r["ranks"] == 1), None)
    tbase = torch_steps.get(1)
    for r in results:
        eff = f"{base / r['step']:.2f}" if base else "-"
        note = "  (oversubscribed)" if cores and r["ranks"] > cores else ""
        ts = torch_steps.get(r["ranks"])
        tcols = (f"{ts * 1e3:8.2f}ms  {(f'{tbase / ts:.2f}' if tbase else '-'):>10}  {r['step'] / ts:8.2f}"
                 if ts else f"{'-':>10}  {'-':>10}  {'-':>8}")
        print(f"{r['ranks']:>5}  {r['step'] * 1e3:7.2f}ms  {r['ranks'] * args.batch / r['step']:9.0f}  "
              f"{eff:>10}  {r['wait'] * 1e3:7.2f}ms  {r['wait'] / r['step']:9.1%}  {r['buckets']:>7}  "
              f"{r['early']:19.1f}  {tcols}{note}")
    if overlap is not None:
        print(f"overlap: 2 ranks, bucket cap {args.overlap_cap_mb} MB: {overlap['buckets']} buckets, "
              f"{overlap['early']:.1f} per step started during backward; step {overlap['step'] * 1e3:.2f}ms, "
              f"wait {overlap['wait'] * 1e3:.2f}ms")
    if not torch_py:
        print("torch: skipped (no Python with torch: pass --torch-python or set TENSORPLUG_BENCH_TORCH_PYTHON)")
    for r in results:
        ts = torch_steps.get(r["ranks"])
        rec = {"workload": f"ddp step, {r['ranks']} ranks", "unit": "s", "tensorplug": r["step"],
               "floor": base, "floor_name": "1 rank", "ratio": r["step"] / base if base else None, "goal": None,
               "verdict": "info", "torch": ts, "tensorplug_vs_torch": r["step"] / ts if ts else None,
               "torch_vs_floor": ts / base if ts and base else None,
               "quick": args.quick, "note": "weak scaling: the same per-rank batch",
               "extra": {"wait_s": r["wait"], "wait_fraction": r["wait"] / r["step"], "buckets": r["buckets"],
                         "started_in_backward_per_step": r["early"],
                         "efficiency": base / r["step"] if base else None,
                         "torch_efficiency": tbase / ts if ts and tbase else None,
                         "oversubscribed": bool(cores and r["ranks"] > cores)}}
        if overlap is not None and r["ranks"] == 2:
            rec["extra"]["small_bucket_run"] = {"bucket_cap_mb": args.overlap_cap_mb, "buckets": overlap["buckets"],
                                                "started_in_backward_per_step": overlap["early"]}
        print("RESULT " + json.dumps(rec))
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ranks", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--batch", type=int, default=64, help="per rank")
    parser.add_argument("--inputs", type=int, default=784)
    parser.add_argument("--hidden", type=int, nargs="+", default=[512, 256])
    parser.add_argument("--classes", type=int, default=10)
    parser.add_argument("--bucket-cap-mb", type=float, default=25)
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--torch-python", default=None, help="a Python with torch, for the PyTorch DDP runs")
    parser.add_argument("--overlap-cap-mb", type=float, default=0.25,
                        help="bucket cap of the extra 2-rank run that checks overlap (0: skip it)")
    parser.add_argument("--quick", action="store_true", help="1 and 2 ranks, tiny MLP, 3 steps")
    argv = sys.argv[1:] if argv is None else argv
    args = parser.parse_args(argv)
    if args.quick:
        args.ranks, args.steps, args.warmup, args.hidden, args.batch = [1, 2], 3, 1, [64, 64], 8
    if os.environ.get("TENSORPLUG_BENCH_TORCH_WORKER"):
        torch_worker(args)
        return 0
    if any(k in os.environ for k in _LAUNCHED):
        worker(args)
        return 0
    return drive(args, argv)


if __name__ == "__main__":
    sys.exit(main())
