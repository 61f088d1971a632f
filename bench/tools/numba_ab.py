"""A/B of one module of the NumPy backend's numba loops: the same eager training step with the module's
loops on and off, interleaved in one process (the machine's load drifts less between the two sides
than between two runs). Prints the median and best step time of each side and their ratio.

Modules: gelu_loops, norm_loops (LayerNorm), rnn_loops (LSTM cell), select_loops (where), conv_loops
(im2col / col2im). Workloads: char / adder (bench/gpt_step.py's GPT steps), lstm (2x200 LSTM, 35 steps,
batch 20, forward + backward of out.sum()), lenet (bench/lenet_step.py's LeNet-5 SGD step, batch 64).

    python bench/tools/numba_ab.py norm_loops char [--rounds 15] [--threads 1]

A tool, not one of run_all's benchmarks (it has no PyTorch side).
"""
from __future__ import annotations

import argparse
import importlib
import pathlib
import statistics
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))      # bench/: gpt_step and its helpers


def _step(tp, workload):
    if workload in ("char", "adder"):
        import gpt_step
        c = gpt_step.config(workload, False)
        xn, yn = gpt_step.data(c)
        model = gpt_step.build(tp, c)
        return gpt_step.make_step(tp, model, tp.from_numpy(xn), tp.from_numpy(yn), c)
    if workload == "lenet":
        import lenet_step
        tp.manual_seed(0)
        model = lenet_step.lenet_class(tp)()
        opt = tp.optim.SGD(model.parameters(), lr=lenet_step.LR)
        x, y = tp.randn(64, 1, 28, 28), tp.randint(0, 10, (64,))

        def lenet():
            opt.zero_grad()
            tp.nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
        return lenet
    tp.manual_seed(0)
    lstm = tp.nn.LSTM(200, 200, num_layers=2)
    x = tp.randn(35, 20, 200, requires_grad=True)

    def step():
        out, _ = lstm(x)
        out.sum().backward()
    return step


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("module", choices=["gelu_loops", "norm_loops", "rnn_loops", "select_loops", "conv_loops"])
    p.add_argument("workload", choices=["char", "adder", "lstm", "lenet"])
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--threads", type=int, default=1)
    a = p.parse_args(argv)
    import tensorplug as tp
    tp.set_num_threads(a.threads)
    mod = importlib.import_module(f"tensorplug.backends.numpy_backend.{a.module}")
    loops = mod.kernels()
    if loops is None:
        raise SystemExit("numba is not installed (the fast extra) or TENSORPLUG_NUMBA=0: nothing to compare")
    step = _step(tp, a.workload)
    times = {"loops": [], "numpy": []}
    for _ in range(a.rounds):
        for side in times:
            mod._state["k"] = loops if side == "loops" else None
            step()                                   # the first call after a switch is not timed
            t0 = time.perf_counter()
            for _ in range(3):
                step()
            times[side].append((time.perf_counter() - t0) / 3)
    med = {k: statistics.median(v) * 1e3 for k, v in times.items()}
    for side, v in times.items():
        print(f"{a.workload}, {a.module} {side}: median {med[side]:.2f} ms, best {min(v) * 1e3:.2f} ms")
    print(f"loops / numpy: {med['loops'] / med['numpy']:.3f} (median)")


if __name__ == "__main__":
    main()
