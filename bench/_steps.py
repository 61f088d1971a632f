"""Shared parts of the model-step benchmarks (gpt_step.py, makemore_step.py, lstm_lm_step.py).

Each of those scripts writes its model once, as a function of the framework module (`tensorplug` or
`torch`), so that both frameworks run the same code from the same weights. This file adds:

* `--threads N`: the BLAS / OpenMP pools (threadpoolctl, i.e. `tensorplug.set_num_threads`) and
  PyTorch's intra-op threads set to N on both sides;
* the batched GEMM floor: the step's matrix products, including batched ones (attention), in NumPy;
* the cold first step and the peak memory, measured the same way for every side in a fresh process
  (`python script.py --child SIDE ...`): wall time from before `import numpy` / the framework to the
  end of the first step (import + model build + first step), then the peak RSS after
  a few more steps (VmHWM; see peak_rss). The floor's child imports NumPy and runs the GEMM floor once.
* `main(module, ...)`: the whole script (check against PyTorch, time beside the GEMM floor, cold rows)
  from the module's CONFIGS / config / build / make_step / data / gemm_shapes.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys

import _harness as H

SIDES = ("tensorplug", "torch", "floor")
MEM_STEPS = 4          # steps after the first one before the peak RSS is read


def parser(doc):
    p = H.parser(doc)
    p.add_argument("--threads", type=int, default=None,
                   help="BLAS / OpenMP threads (tensorplug.set_num_threads) and torch.set_num_threads on both sides")
    p.add_argument("--cold", action="store_true", help="only the cold first step and peak memory (fresh processes)")
    p.add_argument("--no-cold", action="store_true", help="leave out the cold first step and peak memory rows")
    p.add_argument("--child", choices=SIDES, default=None, help=argparse.SUPPRESS)
    return p


def apply_threads(args, torch=None):
    """Set the thread pools of both sides when --threads is given (a no-op otherwise)."""
    n = getattr(args, "threads", None)
    if not n:
        return
    import tensorplug
    tensorplug.set_num_threads(n)
    if torch is not None:
        torch.set_num_threads(n)


# -- the GEMM floor with batched products ---------------------------------------------------------------------
def gemm_floor_fn(shapes):
    """(a function running the products in NumPy float32, their FLOPs); a shape is (m, k, n) or
    (batch, m, k, n) for a batched product (np.matmul of (batch, m, k) and (batch, k, n))."""
    import numpy as np
    rng = np.random.default_rng(0)
    cache = {}
    for s in set(shapes):
        b, m, k, n = s if len(s) == 4 else (None, *s)
        lead = () if b is None else (b,)
        cache[s] = (rng.standard_normal(lead + (m, k), dtype=np.float32),
                    rng.standard_normal(lead + (k, n), dtype=np.float32))

    def run():
        for s in shapes:
            a, b = cache[s]
            np.matmul(a, b)
    flops = sum(2 * (s[0] if len(s) == 4 else 1) * s[-3] * s[-2] * s[-1] for s in shapes)
    return run, flops


def attention_shapes(batch_heads, t, hd):
    """The six batched products of softmax attention over (batch*heads, t, hd): q k^T and a v forward;
    grad a, grad v, grad q, grad k backward."""
    return [(batch_heads, t, hd, t), (batch_heads, t, t, hd),
            (batch_heads, t, hd, t), (batch_heads, t, t, hd), (batch_heads, t, t, hd), (batch_heads, t, t, hd)]


# -- fresh processes: cold first step, peak memory -----------------------------------------------------------------
def peak_rss() -> int:
    """This process's peak resident set size in bytes. Linux: VmHWM (getrusage's ru_maxrss survives
    execve, so a child started from a big parent would report the parent's peak); else ru_maxrss."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    r = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return r if sys.platform == "darwin" else r * 1024


def child_report(t0, first_step_done, more_steps):
    """In a --child process: print the cold time (since t0) and the peak RSS after `more_steps`."""
    import time
    cold = first_step_done - t0
    rss_first = peak_rss()
    for _ in range(MEM_STEPS):
        more_steps()
    peak = peak_rss()
    print("CHILD " + json.dumps({"cold_s": cold, "peak_rss": peak, "peak_rss_first_step": rss_first,
                                 "total_s": time.perf_counter() - t0}), flush=True)


def run_child(script, side, extra_args, timeout=600):
    """Run `script --child side ...` in a fresh interpreter; its CHILD record, or None on failure."""
    cmd = [sys.executable, script, "--child", side, *extra_args]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=dict(os.environ))
    for line in p.stdout.splitlines():
        if line.startswith("CHILD "):
            return json.loads(line[len("CHILD "):])
    print(f"warning: {side} child failed (exit {p.returncode}): {p.stderr.strip()[-800:]}", file=sys.stderr)
    return None


def cold_and_memory(script, name, label, args, torch_available, extra_args=()):
    """The cold-first-step and peak-RSS RESULT rows of one model, from fresh processes per side."""
    ex = list(extra_args) + (["--quick"] if args.quick else []) + \
        (["--threads", str(args.threads)] if args.threads else [])
    reps = 1 if args.quick else 3
    sides = ["tensorplug", "floor"] + (["torch"] if torch_available else [])
    runs = {s: [] for s in sides}
    for _ in range(reps):                       # interleaved, like compare()
        for s in sides:
            r = run_child(script, s, ["--model", name, *ex])
            if r is not None:
                runs[s].append(r)
    if not runs["tensorplug"] or not runs["floor"]:
        raise RuntimeError(f"{label}: the cold-step child processes failed")
    import statistics
    med = {s: ({k: statistics.median(r[k] for r in rs) for k in rs[0]} if rs else None) for s, rs in runs.items()}
    tp, fl, to = med["tensorplug"], med["floor"], med.get("torch")
    H.result(f"{label}: cold first step (fresh process: import + build + first step)", tp["cold_s"], fl["cold_s"],
             floor_name="import numpy + the step's GEMMs once", torch=to and to["cold_s"], args=args,
             goal_vs_torch="tensorplug / torch <= 2 (" + (
                 f"{tp['cold_s'] / to['cold_s']:.2f}: {'met' if tp['cold_s'] <= 2 * to['cold_s'] else 'missed'})"
                 if to else "torch not measured)"))
    H.result(f"{label}: peak RSS after {1 + MEM_STEPS} steps (VmHWM, fresh process)", tp["peak_rss"],
             fl["peak_rss"], floor_name="import numpy + the step's GEMM arrays", unit="bytes",
             torch=to and to["peak_rss"], args=args,
             goal_vs_torch="tensorplug / torch <= 1 (" + (
                 f"{tp['peak_rss'] / to['peak_rss']:.2f}: {'met' if tp['peak_rss'] <= to['peak_rss'] else 'missed'})"
                 if to else "torch not measured)"))


# -- the driver of a model-step script ------------------------------------------------------------------------
def tp_step(mod, name, quick=False):
    """The tensorplug step of configuration `name` of script module `mod` (for profiling)."""
    import tensorplug as tp
    c = mod.config(name, quick)
    xn, yn = mod.data(c)
    return mod.make_step(tp, mod.build(tp, c), tp.from_numpy(xn), tp.from_numpy(yn), c)


def _child(mod, args, t0):
    import time
    c = mod.config(args.model, args.quick)
    xn, yn = mod.data(c)
    if args.child == "floor":
        run, _ = gemm_floor_fn(mod.gemm_shapes(c))
        run()
        return child_report(t0, time.perf_counter(), run)
    if args.child == "torch":
        import torch as T
    else:
        import tensorplug as T
    apply_threads(args, T if args.child == "torch" else None)
    step = mod.make_step(T, mod.build(T, c), T.from_numpy(xn), T.from_numpy(yn), c)
    float(step())
    child_report(t0, time.perf_counter(), step)


def main(mod, argv, t0):
    """A model-step script: `mod` has CONFIGS, config(name, quick) (with .label), build(T, c),
    make_step(T, model, x, y, c) (a step returning the detached loss), data(c) (NumPy inputs and
    targets) and gemm_shapes(c). Checks tensorplug against PyTorch (3 steps from the same weights, in
    eval mode: dropout off), times the step (train mode) beside its GEMM floor, then the cold rows."""
    p = parser(mod.__doc__)
    p.add_argument("--model", choices=sorted(mod.CONFIGS), default=None, help="one configuration (default: all)")
    args = p.parse_args(argv)
    if args.child:
        return _child(mod, args, t0)
    names = [args.model] if args.model else list(mod.CONFIGS)
    H.header(mod.__doc__.strip().splitlines()[0].rstrip("."), args, threads=args.threads or "library defaults")
    import tensorplug as tp
    torch = H.get_torch(args)
    apply_threads(args, torch)
    for name in names:
        c = mod.config(name, args.quick)
        if not args.cold:
            _warm(mod, name, c, args, tp, torch)
        if args.cold or not args.no_cold:
            cold_and_memory(mod.__file__, name, c.label, args, torch is not None)


def _warm(mod, name, c, args, tp, torch):
    xn, yn = mod.data(c)
    model = mod.build(tp, c)
    state = {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}
    step = mod.make_step(tp, model, tp.from_numpy(xn), tp.from_numpy(yn), c)
    model.eval()
    losses = [float(step()) for _ in range(3)]
    model.train()

    def torch_build():
        tmodel = mod.build(torch, c)
        tmodel.load_state_dict({k: torch.from_numpy(v) for k, v in state.items()})
        tstep = mod.make_step(torch, tmodel, torch.from_numpy(xn), torch.from_numpy(yn), c)
        tmodel.eval()
        H.check_close(f"{name}: losses over 3 steps (tensorplug vs torch)", losses, [float(tstep()) for _ in range(3)])
        tmodel.train()
        return tstep
    floor, flops = gemm_floor_fn(mod.gemm_shapes(c))
    t = H.measure({"tensorplug": step, "floor": floor}, H.repeats(args, 11), target_s=H.step_target(args),
                  torch_build=torch_build if torch is not None else None)
    H.result(f"{c.label}, training step", t["tensorplug"], t["floor"],
             floor_name="GEMM floor (the step's matmuls in NumPy)", torch=t.get("torch"), args=args,
             gemm_floor_goal=f"step / GEMM floor <= 2 ({t['tensorplug'] / t['floor']:.2f})",
             gflop=f"{flops / 1e9:.4f} GFLOP of matmuls per step")
