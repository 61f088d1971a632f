"""all_reduce through tensorplug.distributed next to raw mpi4py Allreduce on the same NumPy buffers.

For float32 messages from 4 B to 64 MiB (2 ranks by default) it times
* tensorplug: `dist.all_reduce(t)` on a tensor whose data is the NumPy buffer (in place; messages
  over 4 MiB go in 4 MiB pieces, as the MPI notes advise);
* raw: `comm.Allreduce(a, b)` (mpi4py's buffer API, separate send and receive buffers);
* raw in-place: `comm.Allreduce(MPI.IN_PLACE, a)`,
and reports the ratio tensorplug / raw per size and the difference in microseconds. With
`--checks` it also times the costs of the safety checks (docs/distributed-failures.md):
* tp no size check: dist.all_reduce without the backend's size agreement check (one all-reduce of
  two integers per blocking collective, so that ranks passing different sizes get a clear error);
* tp DETAIL: with TENSORPLUG_DISTRIBUTED_DEBUG=DETAIL's fingerprint check (one small all-gather);
* tp debug-off test: the `if _dbg.on` test that every collective pays when DETAIL is off, timed
  alone in one process (ns per call).
Times are
medians over trials (each trial: a barrier, then a loop of calls long enough to time); the methods
alternate trial by trial. A benchmark reports numbers; it asserts nothing.

    python bench/allreduce.py [--ranks 2] [--max-mib 64] [--trials 15]   # starts its own ranks
    tensorplug run -n 2 bench/allreduce.py                               # the same
    python bench/allreduce.py --quick                                    # 4 B to 64 KiB, few trials
    python bench/allreduce.py --checks                                   # + the checks' costs

Rank 0 also prints one `RESULT {json}` line per size in bench/_harness.py's format (floor: the raw
Allreduce; goal: ratio <= 1.1 from 256 KiB, and tensorplug <= raw + 20 us below).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

_LAUNCHED = ("PMI_RANK", "PMI_SIZE", "OMPI_COMM_WORLD_RANK", "MPI_LOCALRANKID", "PMIX_RANK")


def under_mpi_launcher() -> bool:
    return any(k in os.environ for k in _LAUNCHED)


def relaunch(ranks, argv):
    """Run this script under `tensorplug run -n ranks` and return its exit code."""
    cmd = [sys.executable, "-m", "tensorplug", "run", "--no-prefix", "-n", str(ranks), os.path.abspath(__file__), *argv]
    env = dict(os.environ)
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env.setdefault(var, "1")
    return subprocess.call(cmd, env=env)


def sizes(max_bytes):
    s, out = 4, []
    while s <= max_bytes:
        out.append(s)
        s *= 4
    return out


def fmt_bytes(n):
    for unit, div in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= div:
            return f"{n // div} {unit}"
    return f"{n} B"


def fmt_time(s):
    return f"{s * 1e3:.2f} ms" if s >= 1e-3 else f"{s * 1e6:.1f} us"


def record(nbytes, med, quick):
    """The RESULT line of one size (bench/_harness.py's fields)."""
    tp, raw = med["tp"], med["raw"]
    big = nbytes >= 256 << 10
    goal = 1.1 if big else (raw + 20e-6) / raw
    ratio = tp / raw
    verdict = "met" if ratio <= goal else ("missed (within noise)" if ratio <= goal * 1.2 else "missed")
    rec = {"workload": f"all_reduce {fmt_bytes(nbytes)} (2 ranks)", "unit": "s", "tensorplug": tp, "floor": raw,
           "floor_name": "raw mpi4py Allreduce", "ratio": ratio, "goal": goal, "verdict": verdict,
           "torch": None, "tensorplug_vs_torch": None, "torch_vs_floor": None, "quick": quick,
           "note": "goal: within 10% of raw" if big else "goal: within 20 us of raw",
           "extra": {"raw_in_place": med["raw_ip"],
                     **({"tp_no_size_check": med["tp_nocheck"], "tp_detail": med["tp_detail"]}
                        if "tp_detail" in med else {})}}
    print("RESULT " + json.dumps(rec), flush=True)


def debug_off_test_ns(n=1_000_000):
    """ns per call of the debug-off test in collectives.py (`if _dbg.on:`), less an empty loop."""
    from tensorplug.distributed import collectives
    dbg = collectives._dbg

    def with_test():
        for _ in range(n):
            if dbg.on:
                pass

    def empty():
        for _ in range(n):
            pass
    best = {}
    for fn in (with_test, empty) * 3:
        t0 = time.perf_counter()
        fn()
        best[fn] = min(best.get(fn, 1e9), time.perf_counter() - t0)
    return max(0.0, best[with_test] - best[empty]) / n * 1e9


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ranks", type=int, default=2, help="processes to start when not launched by MPI")
    parser.add_argument("--max-mib", type=int, default=64)
    parser.add_argument("--trials", type=int, default=15)
    parser.add_argument("--min-trial-s", type=float, default=0.004, help="length of one timed loop")
    parser.add_argument("--quick", action="store_true", help="4 B to 64 KiB, 3 short trials (numbers meaningless)")
    parser.add_argument("--checks", action="store_true", help="also time without the size check and with DETAIL")
    args = parser.parse_args(argv)
    if args.quick:
        args.max_mib, args.trials, args.min_trial_s = 0, 3, 0.0005
    if not under_mpi_launcher():
        return relaunch(args.ranks, sys.argv[1:] if argv is None else argv)

    import tensorplug as torch
    import tensorplug.distributed as dist
    dist.init_process_group("mpi")
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    rank, world = comm.rank, comm.size
    from tensorplug.backends.mpi_dist import backend as mpi_backend
    dist.set_debug_level("OFF")

    def setting(size_check, level):
        def apply():
            mpi_backend.CHECK_SIZES = size_check
            dist.set_debug_level(level)
        return apply
    plain = setting(True, "OFF")

    def timed(fn, reps):
        comm.Barrier()
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        dt = (time.perf_counter() - t0) / reps
        return comm.allreduce(dt, op=MPI.MAX)           # the slowest rank's time (pickled float: fine)

    if rank == 0:
        print(f"all_reduce (sum, float32), {world} ranks, {MPI.Get_library_version().splitlines()[0].strip()}; "
              f"median of {args.trials} trials")
        extra = f"  {'tp no size check':>16}  {'tp DETAIL':>10}" if args.checks else ""
        print(f"{'size':>8}  {'tensorplug':>10}  {'raw':>10}  {'raw in-place':>12}  {'tp/raw':>6}  "
              f"{'tp/in-place':>11}  {'tp-raw':>9}{extra}")
    rows = []
    for nbytes in sizes((args.max_mib << 20) or (64 << 10)):
        a = np.zeros(max(1, nbytes // 4), np.float32)
        b = np.empty_like(a)
        t = torch.from_numpy(a)
        methods = {
            "tp": lambda: dist.all_reduce(t),
            "raw": lambda: comm.Allreduce(a, b, MPI.SUM),
            "raw_ip": lambda: comm.Allreduce(MPI.IN_PLACE, a, MPI.SUM),
        }
        setup = dict.fromkeys(methods, plain)
        if args.checks:
            methods["tp_nocheck"] = methods["tp_detail"] = methods["tp"]
            setup["tp_nocheck"] = setting(False, "OFF")
            setup["tp_detail"] = setting(True, "DETAIL")
        # calibrate the loop length on the raw call
        est = timed(methods["raw"], 3)
        reps = max(1, min(20000, int(args.min_trial_s / max(est, 1e-7))))
        reps = comm.bcast(reps, root=0)
        for k, fn in methods.items():
            setup[k]()
            timed(fn, reps)                               # warm up
        times = {k: [] for k in methods}
        for _ in range(args.trials):
            for k, fn in methods.items():
                setup[k]()
                times[k].append(timed(fn, reps))
        plain()
        med = {k: statistics.median(v) for k, v in times.items()}
        rows.append((nbytes, med))
        if rank == 0:
            print(f"{fmt_bytes(nbytes):>8}  {fmt_time(med['tp']):>10}  {fmt_time(med['raw']):>10}  "
                  f"{fmt_time(med['raw_ip']):>12}  {med['tp'] / med['raw']:6.2f}  "
                  f"{med['tp'] / med['raw_ip']:11.2f}  {(med['tp'] - med['raw']) * 1e6:+8.1f}us"
                  + (f"  {fmt_time(med['tp_nocheck']):>16}  {fmt_time(med['tp_detail']):>10}" if args.checks else ""))
    if rank == 0:
        big = [m["tp"] / m["raw"] for n, m in rows if n >= 256 << 10]
        small = [(m["tp"] - m["raw"]) * 1e6 for n, m in rows if n < 256 << 10]
        worst_big = f"{max(big):.2f}" if big else "n/a"
        worst_small = f"{max(small):+.1f} us" if small else "n/a"
        print(f"goal: tensorplug within 10% of raw for >= 256 KiB (worst ratio {worst_big}); "
              f"within 20 us for small messages (worst {worst_small})")
        if args.checks:
            print(f"debug off: the `if _dbg.on` test every collective pays: {debug_off_test_ns():.0f} ns per call")
        for nbytes, med in rows:
            record(nbytes, med, args.quick)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
