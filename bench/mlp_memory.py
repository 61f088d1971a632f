"""Peak memory of one MLP training step (bench/mlp_step.py's), next to the hand-written NumPy step.

Measured with tracemalloc (NumPy reports its array allocations to it). Each side is built
(model or weights, data, optimizer) while tracing, runs two warm-up steps, and then the peak of
the traced memory during one more step is taken: everything the training loop holds at its peak
(parameters, data, gradients, activations, temporaries). Goal: <= 1.3x the hand-written NumPy
step. Also printed: the transient part (peak above what was live when the step began).
PyTorch's allocator is invisible to tracemalloc, so there is no PyTorch column.

    python bench/mlp_memory.py [--quick]
"""
from __future__ import annotations

import gc
import tracemalloc

import _harness as H
import mlp_step as M


def traced_peak(build, warmup=2):
    """(peak, transient) bytes of one step of the step function build() returns, built while tracing."""
    gc.collect()
    tracemalloc.start()
    try:
        step = build()
        for _ in range(warmup):
            step()
        gc.collect()
        base = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        step()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return peak, peak - base


def main(argv=None):
    p = H.parser(__doc__)
    args = p.parse_args(argv)
    H.header("MLP step peak memory", args)
    import tensorplug as tp
    M.setup(args)                                   # checks that the two steps compute the same thing
    sz, batch = M.sizes(args)

    def build_tp():
        xn, yn = M.make_data(sz, batch)
        return M.tp_step_fn(M.tp_mlp(sz), tp.from_numpy(xn), tp.from_numpy(yn))

    def build_np():
        xn, yn = M.make_data(sz, batch)
        ref = M.NumpyMLP(M.linear_weights(M.tp_mlp(sz)))
        return lambda: ref.step(xn, yn)

    peak_tp, trans_tp = traced_peak(build_tp)
    peak_np, trans_np = traced_peak(build_np)
    H.result(f"peak memory of an MLP {'-'.join(map(str, sz))} step, batch {batch}", peak_tp, peak_np,
             floor_name="hand-written NumPy backprop", goal=1.3, unit="bytes",
             note="tracemalloc peak during a step: parameters, data, gradients, activations", args=args,
             transient_tensorplug=H.fmt(trans_tp, "bytes"), transient_numpy=H.fmt(trans_np, "bytes"))


if __name__ == "__main__":
    main()
