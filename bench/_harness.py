"""Shared helpers of the bench scripts: timing, the optional PyTorch column, the output lines.

Every bench script measures a tensorplug workload next to a floor (the same work done by NumPy
alone, or a reference the issue names) *in the same process*, and prints for each measurement one
human-readable line and one machine-readable line

    RESULT {"workload": ..., "unit": "s", "tensorplug": ..., "floor": ..., "ratio": ..., "goal": ...,
            "met": ..., "torch": ..., ...}

that `bench/run_all.py` collects into `bench/RESULTS.md`. `ratio` is tensorplug / floor; `goal`
(when the issue sets one) is the largest acceptable ratio. When `import torch` works in the running
interpreter the script also measures the same workload in PyTorch (the `torch` field; `--no-torch`
turns it off). `--quick` shrinks sizes and repeats so that the script runs in a second or two: the
tests run every script that way so that they never rot; the numbers are then meaningless.

Timing: `compare` calibrates an inner loop count per function (so that one sample lasts at least
`target_s`), then takes `repeat` samples of each function *interleaved* (a, b, c, a, b, c, ...),
so that a change of machine load hits all columns alike, and reports medians of the per-call
time. The garbage collector stays enabled (its cost is part of a framework's cost); a collection
runs before each round, outside the timed region. `measure` does that for tensorplug and its
floor, and only then builds and measures the PyTorch version, on its own (see its docstring).
"""
from __future__ import annotations

import argparse
import gc
import itertools
import json
import math
import statistics
import sys
import time

NOISE = 1.2          # the issue: "treat < 1.2x as noise"


# -- the allocator ----------------------------------------------------------------------------------------
# glibc's malloc serves large blocks (NumPy's arrays of a few MB: activations, gradients) from fresh
# mmaps, or from its heap, depending on a threshold it raises whenever the process frees a large
# mmapped block, and it gives heap memory back to the OS above a trim threshold tied to it. So the
# cost of a step's temporaries (page faults or not) depends on the history of the process. Measured
# on this project's MLP step, the hand-written NumPy floor took 2.9 ms or 4.4 ms depending on whether
# PyTorch had been imported first. `import tensorplug` pins both thresholds (core/_malloc.py); the
# harness imports it first so that every column, floors and PyTorch included, sees that allocator.
# TENSORPLUG_MALLOC=default (run_all.py --default-malloc) leaves glibc's defaults.
from tensorplug import _malloc  # noqa: E402

MALLOC = _malloc.state[0]


# -- command line ---------------------------------------------------------------------------------------
def parser(doc: str) -> argparse.ArgumentParser:
    """An ArgumentParser with the options every bench script has."""
    p = argparse.ArgumentParser(description=(doc or "").strip().splitlines()[0] if doc else None,
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=doc)
    p.add_argument("--quick", action="store_true",
                   help="tiny sizes and few repeats: checks that the script runs (numbers meaningless)")
    p.add_argument("--repeat", type=int, default=None, help="timed samples per function (median)")
    p.add_argument("--no-torch", action="store_true", help="leave out the PyTorch column")
    return p


def repeats(args, full: int, quick: int = 3) -> int:
    if args.repeat is not None:
        return max(1, args.repeat)
    return quick if args.quick else full


def get_torch(args=None):
    """The `torch` module when it is importable (and not turned off), else None."""
    if args is not None and getattr(args, "no_torch", False):
        return None
    try:
        import torch
    except Exception:
        return None
    return torch


# -- timing ----------------------------------------------------------------------------------------------
def _run(fn, number):
    t0 = time.perf_counter()
    for _ in itertools.repeat(None, number):
        fn()
    return time.perf_counter() - t0


def calibrate(fn, target_s: float, max_number: int = 1 << 20) -> int:
    """How many calls of `fn` make one sample last at least `target_s` (1 when one call does)."""
    number = 1
    while number < max_number:
        t = _run(fn, number)
        if t >= target_s:
            break
        # aim a little over the target; at least double to converge fast
        number = min(max_number, max(number * 2, int(number * target_s * 1.2 / max(t, 1e-9))))
    return number


def compare(fns: dict, repeat: int, target_s: float = 0.02, warmup: int = 2) -> dict:
    """Median seconds per call of every function of `fns` ({name: fn}), sampled interleaved."""
    fns = {k: v for k, v in fns.items() if v is not None}
    numbers = {}
    for name, fn in fns.items():
        for _ in range(warmup):
            fn()
        numbers[name] = calibrate(fn, target_s)
    samples = {name: [] for name in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            gc.collect()
            n = numbers[name]
            samples[name].append(_run(fn, n) / n)
    return {name: statistics.median(s) for name, s in samples.items()}


def measure(fns: dict, repeat: int, target_s: float = 0.02, warmup: int = 2, torch_build=None) -> dict:
    """`compare(fns)` (tensorplug, its floor, ...); then PyTorch, measured on its own afterwards.

    torch_build: None, or a function building the PyTorch workload (a callable, or {name: callable}
    for several) that is called only after the first measurement, so that PyTorch's allocations
    and threads cannot change the conditions tensorplug and its floor are measured in (glibc's
    malloc, for one, adapts its mmap threshold to the blocks a process frees, which makes NumPy's
    large temporaries cheaper or dearer). The "torch" entry is its median (the first one's, for a
    dict, whose entries come back under their own names as well)."""
    t = compare(fns, repeat, target_s, warmup)
    if torch_build is not None:
        built = torch_build()
        if callable(built):
            built = {"torch": built}
        if built:
            tt = compare(built, repeat, target_s, warmup)
            t.update(tt)
            t.setdefault("torch", next(iter(tt.values())))
    return t


def median_time(fn, repeat: int, target_s: float = 0.0, warmup: int = 2) -> float:
    return compare({"f": fn}, repeat, target_s, warmup)["f"]


def step_target(args) -> float:
    """Sample length for whole training steps: one step per sample is fine at these sizes."""
    return 0.0 if args.quick else 0.05


# -- output ----------------------------------------------------------------------------------------------
def fmt(value, unit: str = "s") -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if unit == "s":
        for scale, name in ((1, "s"), (1e-3, "ms"), (1e-6, "us"), (1e-9, "ns")):
            if abs(value) >= scale or name == "ns":
                return f"{value / scale:.3g} {name}"
    if unit == "bytes":
        for scale, name in ((2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB"), (1, "B")):
            if abs(value) >= scale or name == "B":
                return f"{value / scale:.3g} {name}"
    return f"{value:.4g} {unit}"


def verdict(ratio, goal) -> str:
    if goal is None or ratio is None:
        return "info"
    if ratio <= goal:
        return "met"
    if ratio <= goal * NOISE:
        return "missed (within noise)"
    return "missed"


def result(workload: str, tensorplug: float, floor: float, *, floor_name: str, goal: float | None = None,
           torch: float | None = None, unit: str = "s", note: str = "", args=None, **extra) -> dict:
    """Print the human-readable line and the RESULT line of one measurement; returns the record."""
    ratio = tensorplug / floor if floor else None
    rec = {
        "workload": workload, "unit": unit, "tensorplug": tensorplug, "floor": floor,
        "floor_name": floor_name, "ratio": ratio, "goal": goal, "verdict": verdict(ratio, goal),
        "torch": torch,
        "tensorplug_vs_torch": (tensorplug / torch) if torch else None,
        "torch_vs_floor": (torch / floor) if (torch and floor) else None,
        "quick": bool(getattr(args, "quick", False)), "note": note,
    }
    if extra:
        rec["extra"] = extra
    line = (f"{workload}: tensorplug {fmt(tensorplug, unit)} | floor ({floor_name}) {fmt(floor, unit)} | "
            f"ratio {ratio:.2f}" if ratio is not None else f"{workload}: tensorplug {fmt(tensorplug, unit)}")
    if goal is not None:
        line += f" (goal <= {goal:g}: {rec['verdict']})"
    if torch is not None:
        line += f" | torch {fmt(torch, unit)} (tensorplug/torch {tensorplug / torch:.2f})"
    print(line)
    for k, v in extra.items():
        print(f"    {k}: {v}")
    print("RESULT " + json.dumps(rec), flush=True)
    return rec


def header(title: str, args, **info):
    import numpy as np
    torch = get_torch(args)
    parts = [f"numpy {np.__version__}"]
    try:
        import tensorplug
        parts.append(f"tensorplug {tensorplug.__version__}")
    except Exception:
        pass
    parts.append(f"torch {torch.__version__}" if torch is not None else
                 "torch column off (--no-torch)" if args.no_torch else "torch: not importable")
    if args.quick:
        parts.append("QUICK (tiny sizes: numbers meaningless)")
    parts.append(f"allocator: {MALLOC}")
    parts += [f"{k}={v}" for k, v in info.items()]
    print(f"== {title} ({', '.join(parts)}; python {sys.version.split()[0]})", flush=True)


def check_close(name: str, a, b, rtol=1e-3, atol=1e-4):
    """Assert that the framework and its floor computed the same thing (the floor does the same work)."""
    import numpy as np
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    err = float(np.max(np.abs(a - b))) if a.size else 0.0
    if not np.allclose(a, b, rtol=rtol, atol=atol):
        raise AssertionError(f"{name}: the floor does not compute the same values (max abs diff {err:.3g})")
    print(f"check: {name} agree (max abs diff {err:.2g})")


def report_fused(rows, repeat: int, target_s: float, args, *, floor_name: str, composition_name: str):
    """Time and report rows of (workload, fused fn, floor fn, torch fn or None, composition fn): the fused
    kernel next to its floor, to the Tensor-op composition it replaced, and to PyTorch (timed apart, after)."""
    times = [compare({"tensorplug": a, "floor": fl, "composition": c}, repeat, target_s) for _, a, fl, _, c in rows]
    for t, row in zip(times, rows):
        if row[3] is not None:
            t["torch"] = compare({"torch": row[3]()}, repeat, target_s)["torch"]
    for t, (workload, *_) in zip(times, rows):
        extra = {f"composition ({composition_name})": fmt(t["composition"]),
                 "fused / composition": f"{t['tensorplug'] / t['composition']:.2f}"}
        if t.get("torch"):
            extra["composition / torch"] = f"{t['composition'] / t['torch']:.2f}"
        result(workload, t["tensorplug"], t["floor"], floor_name=floor_name, torch=t.get("torch"), args=args, **extra)
