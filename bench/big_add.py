"""Large elementwise op: c = a + b on two 10M-element float32 tensors (new output).

Floor: np.add on the very arrays the tensors hold, measured in the same process. Goal: <= 1.1x,
and no hidden copies: the peak memory (tracemalloc, to which NumPy reports its allocations) that
one tensorplug add allocates, next to np.add's (one 40 MB output), goal <= 1.1x (a hidden copy of
an input or the output would make it 2x).

    python bench/big_add.py [--quick] [--repeat N] [--numel 10000000] [--no-torch]
"""
from __future__ import annotations

import tracemalloc

import numpy as np

import _harness as H


def peak_bytes(fn):
    """Bytes allocated at the peak of one call of fn, above what was live before it."""
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        out = fn()
        peak = tracemalloc.get_traced_memory()[1] - base
        del out
    finally:
        tracemalloc.stop()
    return peak


def main(argv=None):
    p = H.parser(__doc__)
    p.add_argument("--numel", type=int, default=None)
    args = p.parse_args(argv)
    n = args.numel or (100_000 if args.quick else 10_000_000)
    H.header("large elementwise add", args, numel=n)
    import tensorplug as tp

    rng = np.random.default_rng(0)
    an = rng.standard_normal(n, dtype=np.float32)
    bn = rng.standard_normal(n, dtype=np.float32)
    a, b = tp.from_numpy(an), tp.from_numpy(bn)
    H.check_close("a + b", (a + b).numpy()[:1000], np.add(an, bn)[:1000])

    fns = {"tensorplug": lambda: a + b, "floor": lambda: np.add(an, bn)}
    torch = H.get_torch(args)

    def torch_build():
        at, bt = torch.from_numpy(an), torch.from_numpy(bn)
        return lambda: at + bt
    t = H.measure(fns, H.repeats(args, 21), target_s=0.0 if args.quick else 0.05,
                  torch_build=torch_build if torch is not None else None)
    label = f"{n / 1e6:g}M" if n >= 1e6 else f"{n}"
    H.result(f"add of two {label} float32 tensors (new output)", t["tensorplug"], t["floor"],
             floor_name="np.add", goal=1.1, torch=t.get("torch"), args=args)

    mem_tp = peak_bytes(lambda: a + b)
    mem_np = peak_bytes(lambda: np.add(an, bn))
    H.result(f"peak memory of one {label} add", mem_tp, mem_np, floor_name="np.add", goal=1.1, unit="bytes",
             note="tracemalloc; torch's allocator is invisible to it", args=args)


if __name__ == "__main__":
    main()
