"""DataLoader throughput: one epoch over a TensorDataset of 60k x 784 float32 (+ int64 labels), batch 128.

DataLoader(TensorDataset(x, y), batch_size=128) with num_workers=0 and num_workers=2 (a fresh
iterator per epoch, so the workers' start-up is counted), no shuffling. With workers, both ways a
batch reaches the main process are timed: pickled through the pipe, and through shared memory
(tensors of at least _worker.SHARED_MEMORY_MIN_BYTES; the default path), at --batch and at
--big-batch (where a batch's x is large enough for the difference to show). Floor: a NumPy slicing
loop over the same arrays that materialises every batch (x[i:i+128].copy(), y[i:i+128].copy()),
as a loader's collated batch is a new array. No goal is set for these rows; samples/s are printed.

    python bench/dataloader.py [--quick] [--repeat N] [--no-torch] [--batch B] [--big-batch B]
"""
from __future__ import annotations

import numpy as np

import _harness as H


def epoch(loader):
    n = 0
    for xb, yb in loader:
        n += len(xb)
    return n


def main(argv=None):
    p = H.parser(__doc__)
    p.add_argument("--samples", type=int, default=None)
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--big-batch", type=int, default=1024)
    args = p.parse_args(argv)
    n = args.samples or (2000 if args.quick else 60000)
    bs = args.batch
    H.header("DataLoader throughput", args, samples=n, batch=bs)
    import tensorplug as tp
    from tensorplug.utils.data import DataLoader, TensorDataset
    torch = H.get_torch(args)

    rng = np.random.default_rng(0)
    xn = rng.standard_normal((n, 784), dtype=np.float32)
    yn = rng.integers(0, 10, n)

    def floor():
        m = 0
        for i in range(0, n, bs):
            xb, yb = xn[i:i + bs].copy(), yn[i:i + bs].copy()
            m += len(xb)
        return m

    ds = TensorDataset(tp.from_numpy(xn), tp.from_numpy(yn))
    reps = H.repeats(args, 7)
    for workers in (0, 2):
        fns = {"tensorplug": lambda: epoch(DataLoader(ds, batch_size=bs, num_workers=workers)), "floor": floor}
        run(fns, workers, bs, n, reps, args, torch, xn, yn)
    both_paths(ds, args.batch, n, reps, args)
    if args.big_batch != args.batch:
        both_paths(ds, args.big_batch, n, reps, args)


def both_paths(ds, bs, n, reps, args):
    """num_workers=2: batches pickled vs through shared memory (the loader's choice by tensor size)."""
    from tensorplug.utils.data import DataLoader
    from tensorplug.utils.data import _worker
    default = _worker.SHARED_MEMORY_MIN_BYTES

    def with_threshold(min_bytes):
        def go():
            _worker.SHARED_MEMORY_MIN_BYTES = min_bytes
            try:
                return epoch(DataLoader(ds, batch_size=bs, num_workers=2))
            finally:
                _worker.SHARED_MEMORY_MIN_BYTES = default
        return go
    fns = {"shared": with_threshold(0), "pickled": with_threshold(None)}
    assert fns["shared"]() == n
    t = H.measure(fns, reps, target_s=0.0, warmup=1)
    xb = bs * 784 * 4
    H.result(f"DataLoader epoch, num_workers=2, batch {bs} (x: {xb / 2**20:.2f} MiB), shared memory vs pickled",
             t["shared"], t["pickled"], floor_name="batches pickled through the pipe", args=args,
             samples_per_s=f"shared {n / t['shared']:,.0f}, pickled {n / t['pickled']:,.0f}")


def run(fns, workers, bs, n, reps, args, torch, xn, yn):
    """One row: tensorplug's loader against the floor (and PyTorch's loader)."""
    def torch_build():
        tds = torch.utils.data.TensorDataset(torch.from_numpy(xn), torch.from_numpy(yn))
        return lambda: epoch(torch.utils.data.DataLoader(tds, batch_size=bs, num_workers=workers))
    assert fns["tensorplug"]() == n
    t = H.measure(fns, reps, target_s=0.0, warmup=1, torch_build=torch_build if torch is not None else None)
    H.result(f"DataLoader epoch, {n}x784 float32, batch {bs}, num_workers={workers}", t["tensorplug"], t["floor"],
             floor_name="NumPy slicing loop (copied batches)", torch=t.get("torch"), args=args,
             samples_per_s=f"tensorplug {n / t['tensorplug']:,.0f}, floor {n / t['floor']:,.0f}"
             + (f", torch {n / t['torch']:,.0f}" if "torch" in t else ""))


if __name__ == "__main__":
    main()
