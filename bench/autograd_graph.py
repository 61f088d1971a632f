"""Autograd overhead on a 1,000-op graph of small tensors.

Builds a chain of 1,000 ops (add / mul / tanh, in turn) on a 100-element float32 vector
that requires grad, then runs backward. Prints the median forward time, backward time,
their ratio, the no-grad forward time (the recording overhead is forward - no-grad) and
per-op costs. A benchmark reports numbers; it asserts nothing about time.

    python bench/autograd_graph.py [--ops 1000] [--numel 100] [--repeat 21]
"""
from __future__ import annotations

import argparse
import statistics
import time

import tensorplug as torch


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


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ops", type=int, default=1000)
    p.add_argument("--numel", type=int, default=100)
    p.add_argument("--repeat", type=int, default=21)
    a = p.parse_args(argv)

    torch.manual_seed(0)
    x = torch.randn(a.numel, dtype=torch.float32, requires_grad=True)
    for _ in range(3):                                       # warm up caches and kernels
        build(x, a.ops).sum().backward()

    fwd, bwd, nograd = [], [], []
    for _ in range(a.repeat):
        x.grad = None
        t0 = time.perf_counter()
        loss = build(x, a.ops).sum()
        t1 = time.perf_counter()
        loss.backward()
        t2 = time.perf_counter()
        with torch.no_grad():
            t3 = time.perf_counter()
            build(x, a.ops).sum()
            t4 = time.perf_counter()
        fwd.append(t1 - t0)
        bwd.append(t2 - t1)
        nograd.append(t4 - t3)

    n = a.ops + 1                                            # the chain plus the final sum
    f, b, ng = statistics.median(fwd), statistics.median(bwd), statistics.median(nograd)
    print(f"graph: {n} ops on {a.numel}-element float32, backend {x.backend.name!r}, "
          f"median of {a.repeat}")
    print(f"forward (recording)  {f * 1e3:8.2f} ms   {f / n * 1e6:6.2f} us/op")
    print(f"forward (no_grad)    {ng * 1e3:8.2f} ms   {ng / n * 1e6:6.2f} us/op")
    print(f"backward             {b * 1e3:8.2f} ms   {b / n * 1e6:6.2f} us/op")
    print(f"backward / forward   {b / f:8.2f}")
    print(f"recording overhead   {(f - ng) / n * 1e6:8.2f} us/op")


if __name__ == "__main__":
    main()
