"""Autograd overhead on a 1,000-op graph of small tensors.

Builds a chain of 1,000 ops (add / mul / tanh, in turn) on a 100-element float32 vector
that requires grad, then runs backward. Prints the median forward time, backward time,
their ratio, the no-grad forward time (the recording overhead is forward - no-grad) and
per-op costs. The RESULT line compares forward + backward with its NumPy floor: the same chain
and its hand-written backward (the tanh outputs kept, g * 0.99 and g * (1 - t^2) on the way
back) in NumPy alone. No goal is set for this row. A benchmark reports numbers; it asserts
nothing about time.

    python bench/autograd_graph.py [--quick] [--ops 1000] [--numel 100] [--repeat 21] [--no-torch]
"""
from __future__ import annotations

import statistics
import time

import numpy as np

import _harness as H


def build(x, n_ops):
    y = x
    for i in range(n_ops):
        k = i % 3
        if k == 0:
            y = y + 0.01
        elif k == 1:
            y = y * 0.99
        else:
            y = y.tanh()
    return y


def numpy_fwd_bwd(x, n_ops):
    """The chain, its sum and the gradient of the sum by x, in NumPy alone."""
    y = x
    saved = []
    for i in range(n_ops):
        k = i % 3
        if k == 0:
            y = y + 0.01
        elif k == 1:
            y = y * 0.99
        else:
            y = np.tanh(y)
            saved.append(y)
    y.sum()
    g = np.ones_like(y)
    for i in range(n_ops - 1, -1, -1):
        k = i % 3
        if k == 1:
            g = g * 0.99
        elif k == 2:
            t = saved.pop()
            g = g * (1 - t * t)
    return g


def main(argv=None):
    p = H.parser(__doc__)
    p.add_argument("--ops", type=int, default=None)
    p.add_argument("--numel", type=int, default=100)
    a = p.parse_args(argv)
    n_ops = a.ops or (30 if a.quick else 1000)
    repeat = H.repeats(a, 21)
    H.header("autograd graph", a, ops=n_ops, numel=a.numel)
    import tensorplug as tp
    torch = H.get_torch(a)

    xn = np.random.default_rng(0).standard_normal(a.numel, dtype=np.float32)
    x = tp.tensor(xn, requires_grad=True)

    def fwd_bwd():
        x.grad = None
        build(x, n_ops).sum().backward()

    fwd_bwd()
    H.check_close("gradient of the chain (tensorplug vs NumPy)", x.grad.numpy(), numpy_fwd_bwd(xn, n_ops))
    fns = {"tensorplug": fwd_bwd, "floor": lambda: numpy_fwd_bwd(xn, n_ops)}

    def torch_build():
        xt = torch.tensor(xn, requires_grad=True)

        def torch_fwd_bwd():
            xt.grad = None
            build(xt, n_ops).sum().backward()
        return torch_fwd_bwd

    # the split into forward, backward and no-grad forward
    fwd, bwd, nograd = [], [], []
    for _ in range(repeat):
        x.grad = None
        t0 = time.perf_counter()
        loss = build(x, n_ops).sum()
        t1 = time.perf_counter()
        loss.backward()
        t2 = time.perf_counter()
        with tp.no_grad():
            t3 = time.perf_counter()
            build(x, n_ops).sum()
            t4 = time.perf_counter()
        fwd.append(t1 - t0)
        bwd.append(t2 - t1)
        nograd.append(t4 - t3)
    n = n_ops + 1                                            # the chain plus the final sum
    f, b, ng = statistics.median(fwd), statistics.median(bwd), statistics.median(nograd)
    print(f"graph: {n} ops on {a.numel}-element float32, backend {x.backend.name!r}, median of {repeat}")
    print(f"forward (recording)  {f * 1e3:8.2f} ms   {f / n * 1e6:6.2f} us/op")
    print(f"forward (no_grad)    {ng * 1e3:8.2f} ms   {ng / n * 1e6:6.2f} us/op")
    print(f"backward             {b * 1e3:8.2f} ms   {b / n * 1e6:6.2f} us/op")
    print(f"backward / forward   {b / f:8.2f}")
    print(f"recording overhead   {(f - ng) / n * 1e6:8.2f} us/op")

    t = H.measure(fns, repeat, target_s=H.step_target(a), torch_build=torch_build if torch is not None else None)
    H.result(f"{n_ops}-op chain on {a.numel} elements, forward+backward", t["tensorplug"], t["floor"],
             floor_name="NumPy chain + hand-written backward", torch=t.get("torch"), args=a,
             per_op=f"forward {f / n * 1e6:.2f} us/op (no_grad {ng / n * 1e6:.2f}), backward {b / n * 1e6:.2f} us/op")


if __name__ == "__main__":
    main()
