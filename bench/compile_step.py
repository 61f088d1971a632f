"""tensorplug.compile: the GPT and makemore MLP training steps and a pointwise chain, compiled vs eager vs PyTorch.

* GPT nanoGPT-char (gpt_step.py's "char" config) and makemore MLP (makemore_step.py's "mlp" config):
  the same model code, weights, data and step as those scripts (imported from them). Columns:
  tensorplug eager, tensorplug compiled (the model wrapped with tensorplug.compile, default backend
  "inductor": forward and backward captured once, then replayed; zero_grad, the loss of makemore,
  clip_grad_norm_ and AdamW stay eager), PyTorch eager. Goals: compiled / eager <= 0.7 (floor =
  tensorplug eager), compiled / PyTorch eager <= 0.8. The compile time is the first (capturing)
  compiled step minus the median eager step.
* pointwise chain: 10 ops, y = ((x*1.5).tanh()*x + x.exp()*0.1).abs().sqrt() + x.sigmoid() on 1M
  float32 elements, forward only, tensorplug.compile'd function vs the same function eager; goal
  compiled <= 0.5x eager.

Before timing, the compiled and eager sides run 3 steps (calls) from the same weights (inputs) and
must agree (rtol 1e-5); the steps' weights after them too. `tensorplug._dynamo.utils.counters` is
printed per workload: a graph break means the "compiled" column ran eagerly (loud GRAPH BREAK line).
Both step configs have no dropout, so the check runs in train mode, the guard that is then timed.
On a machine with few cores pass --threads 1: NumPy's OpenBLAS threads (left spinning by tensorplug's
steps) and PyTorch's OpenMP threads then stop fighting; on 2 cores they made PyTorch's GPT step 30x slower.

    python bench/compile_step.py [--quick] [--repeat N] [--threads N] [--no-torch]
"""
from __future__ import annotations

import sys
import time

import numpy as np

import _harness as H
import _steps
import gpt_step
import makemore_step

RTOL = 1e-5
# --quick stays above core/compiler/fusion.py's MIN_ELEMENTS (4096), so that the tests run a fused kernel too
CHAIN_N, CHAIN_N_QUICK = 1_000_000, 8192
GOAL_VS_EAGER, GOAL_VS_TORCH, GOAL_CHAIN = 0.7, 0.8, 0.5
# what each step runs outside the compiled model (its make_step's code around model(...))
STAYS_EAGER = {"char": "zero_grad, clip_grad_norm_, AdamW", "mlp": "cross-entropy, zero_grad, AdamW"}


def _check(name, got, want, rtol=RTOL, atol=0.0):
    """Assert compiled == eager (the replay must compute what eager computes; timing it is pointless otherwise)."""
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    err = float(np.max(np.abs(got - want))) if got.size else 0.0
    if got.shape != want.shape or not np.allclose(got, want, rtol=rtol, atol=atol):
        raise AssertionError(f"{name}: compiled and eager differ (max abs diff {err:.3g}, rtol {rtol:g})")
    print(f"check: {name} agree (max abs diff {err:.2g})")


def _counters(tp, what):
    """Print the compile counters; returns the graph-break dict (non-empty: the compiled column ran eagerly)."""
    c = tp._dynamo.utils.counters
    breaks, stats = dict(c["graph_break"]), dict(c["stats"])
    print(f"compile counters ({what}): graph_break {breaks}, stats {stats}")
    if breaks:
        msg = f"!!! GRAPH BREAK in {what}: the compiled column ran EAGERLY; its numbers mean nothing: {breaks}"
        print(msg, flush=True)
        print(msg, file=sys.stderr, flush=True)
    # a replay that falls back to eager (guard failure, cache limit) is just as silent: say so too
    fallbacks = {k: v for k, v in stats.items() if k in ("guard_failures", "cache_limit_eager_calls", "recompiles")}
    if fallbacks:
        msg = f"!!! {what}: compiled calls ran eagerly or recaptured: {fallbacks}"
        print(msg, flush=True)
        print(msg, file=sys.stderr, flush=True)
    return breaks


def _kernels(compiled):
    """'forward N, backward M' kernels of each captured entry (what a replay runs), for the details."""
    inner = getattr(compiled, "_compiled", compiled)
    out = []
    for e in getattr(inner, "cache", {}).values():
        if e.forward is not None:
            back = f", backward {len(e.backward)}" if e.backward is not None else ""
            fused = getattr(e, "fused", None)            # (forward, backward) fused pointwise kernels
            out.append(f"forward {len(e.forward)}{back}" + (f" (fused: {fused[0]}, {fused[1]})" if fused else ""))
    return "; ".join(out) or "none captured"


def _note(breaks):
    return "GRAPH BREAK: the compiled column ran eagerly" if breaks else ""


# -- the training steps -----------------------------------------------------------------------------------
def train_step(mod, name, args, tp, torch):
    c = mod.config(name, args.quick)
    xn, yn = mod.data(c)
    tp._dynamo.reset()                               # counters per workload
    eager_model = mod.build(tp, c)
    state = {k: v.detach().numpy().copy() for k, v in eager_model.state_dict().items()}
    model = mod.build(tp, c)
    model.load_state_dict({k: tp.from_numpy(v.copy()) for k, v in state.items()})
    compiled = tp.compile(model)
    eager = mod.make_step(tp, eager_model, tp.from_numpy(xn), tp.from_numpy(yn), c)
    comp = mod.make_step(tp, compiled, tp.from_numpy(xn), tp.from_numpy(yn), c)

    # eager first, so that the process's one-time costs do not land in the capturing call's time
    losses = [float(eager()) for _ in range(3)]
    t0 = time.perf_counter()
    first = float(comp())                            # captures forward + backward
    first_s = time.perf_counter() - t0
    closs = [first] + [float(comp()) for _ in range(2)]    # replays
    _check(f"{name}: losses over 3 steps (compiled vs eager)", closs, losses)
    ew, cw = eager_model.state_dict(), model.state_dict()
    _check(f"{name}: weights after 3 steps (compiled vs eager)",
           np.concatenate([cw[k].detach().numpy().ravel() for k in ew]),
           np.concatenate([ew[k].detach().numpy().ravel() for k in ew]), atol=1e-7)
    breaks = _counters(tp, f"{name} check")

    def torch_build():
        tmodel = mod.build(torch, c)
        tmodel.load_state_dict({k: torch.from_numpy(v) for k, v in state.items()})
        tstep = mod.make_step(torch, tmodel, torch.from_numpy(xn), torch.from_numpy(yn), c)
        H.check_close(f"{name}: losses over 3 steps (tensorplug eager vs torch)", losses,
                      [float(tstep()) for _ in range(3)])
        return tstep
    t = H.measure({"compiled": comp, "eager": eager}, H.repeats(args, 11), target_s=H.step_target(args),
                  torch_build=torch_build if torch is not None else None)
    breaks = _counters(tp, f"{name} after timing") or breaks
    label = f"{c.label}, training step"
    H.result(f"{label}, compiled / eager", t["compiled"], t["eager"], floor_name="tensorplug eager",
             goal=GOAL_VS_EAGER, torch=t.get("torch"), args=args, note=_note(breaks),
             compile_time=f"{H.fmt(first_s - t['eager'])} (first compiled step {H.fmt(first_s)} - eager step)",
             kernels=_kernels(compiled), graph_breaks=breaks or "none",
             stays_eager=STAYS_EAGER[name])
    if t.get("torch"):
        H.result(f"{label}, compiled / PyTorch eager", t["compiled"], t["torch"], floor_name="PyTorch eager",
                 goal=GOAL_VS_TORCH, args=args, note=_note(breaks),
                 eager_vs_torch=f"{t['eager'] / t['torch']:.2f}")
    else:
        print(f"{label}: compiled / PyTorch eager: no torch column (not importable or --no-torch)")


# -- the pointwise chain ---------------------------------------------------------------------------------
def chain(x):
    # 10 ops: mul, tanh, mul, exp, mul, add, abs, sqrt, sigmoid, add (either framework's Tensor methods). `+`, not
    # `-`: tanh(1.5x)*x - 0.1*exp(x) cancels near x = 0.31 and sqrt magnifies the rounding there (eager itself is
    # then 6e-6 off the float64 value, a fused kernel 1.1e-5), which would fail rtol 1e-5 for no fault of compile
    return ((x * 1.5).tanh() * x + x.exp() * 0.1).abs().sqrt() + x.sigmoid()


def pointwise(args, tp, torch):
    n = CHAIN_N_QUICK if args.quick else CHAIN_N
    rng = np.random.default_rng(0)
    xs = [rng.standard_normal(n, dtype=np.float32) for _ in range(3)]
    tp._dynamo.reset()
    cchain = tp.compile(chain)                       # what @tensorplug.compile on chain makes
    x = tp.from_numpy(xs[0])
    want = [chain(tp.from_numpy(a)).numpy().copy() for a in xs]
    t0 = time.perf_counter()
    got = [cchain(tp.from_numpy(xs[0])).numpy().copy()]    # captures
    first_s = time.perf_counter() - t0
    got += [cchain(tp.from_numpy(a)).numpy().copy() for a in xs[1:]]   # replays on new values
    _check("pointwise chain: outputs of 3 calls (compiled vs eager)", np.stack(got), np.stack(want))
    breaks = _counters(tp, "pointwise chain check")

    def torch_build():
        tx = torch.from_numpy(xs[0])
        H.check_close("pointwise chain (tensorplug eager vs torch)", chain(tx).numpy(), want[0], rtol=1e-5, atol=1e-6)
        return lambda: chain(tx)
    t = H.measure({"compiled": lambda: cchain(x), "eager": lambda: chain(x)}, H.repeats(args, 21),
                  torch_build=torch_build if torch is not None else None)
    breaks = _counters(tp, "pointwise chain after timing") or breaks
    H.result(f"pointwise chain of 10 ops, {n} float32, forward, compiled / eager", t["compiled"], t["eager"],
             floor_name="tensorplug eager", goal=GOAL_CHAIN, torch=t.get("torch"), args=args, note=_note(breaks),
             compile_time=f"{H.fmt(first_s - t['eager'])} (first compiled call {H.fmt(first_s)} - eager call)",
             kernels=_kernels(cchain), graph_breaks=breaks or "none")


def main(argv=None):
    p = H.parser(__doc__)
    p.add_argument("--threads", type=int, default=None,
                   help="BLAS / OpenMP threads (tensorplug.set_num_threads) and torch.set_num_threads on both sides")
    args = p.parse_args(argv)
    H.header("tensorplug.compile: training steps and a pointwise chain, compiled vs eager", args,
             threads=args.threads or "library defaults")
    import tensorplug as tp
    torch = H.get_torch(args)
    _steps.apply_threads(args, torch)
    train_step(gpt_step, "char", args, tp, torch)
    train_step(makemore_step, "mlp", args, tp, torch)
    pointwise(args, tp, torch)


if __name__ == "__main__":
    main()
