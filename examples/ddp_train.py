"""Data-parallel training with DistributedDataParallel, DistributedSampler and set_epoch (seed 000,
"distributed PyTorch"):

    model = torch.nn.parallel.DistributedDataParallel(model)
    train_sampler = torch.utils.data.distributed.DistributedSampler(train_dataset)
    train_loader = torch.utils.data.DataLoader(train_dataset, batch_size=args.batch_size,
                                               num_workers=args.workers, pin_memory=True,
                                               sampler=train_sampler)
    for epoch in range(args.num_epochs):
        train_sampler.set_epoch(epoch)      # reshuffle the partition every epoch
        ...

The data set is synthetic (three interleaved spirals, 2-d points, 3 classes), the model an MLP
trained with cross-entropy and SGD with momentum. Every rank trains on its share of each epoch;
gradients are averaged across ranks during backward, so all ranks keep identical parameters
(checked at the end). Rank 0 prints the loss and accuracy averaged over all ranks.

    tensorplug run -n 2 examples/ddp_train.py [--num-epochs 10] [--batch-size 32] [--lr 0.1]
    mpiexec -n 2 python examples/ddp_train.py            # the same, with the launcher by hand
    python examples/ddp_train.py                         # one process
"""
from __future__ import annotations

import argparse
import math
import time

import numpy as np

import tensorplug as torch
import tensorplug.distributed as dist
import tensorplug.nn as nn
import tensorplug.nn.functional as F
import tensorplug.nn.parallel  # noqa: F401  (torch.nn.parallel.DistributedDataParallel)
import tensorplug.utils.data.distributed  # noqa: F401


def spirals(n_per_class=300, classes=3, noise=0.15, seed=0):
    """Points of `classes` interleaved spirals, as a TensorDataset (float32 x, int64 labels)."""
    rng = np.random.default_rng(seed)
    xs, ys = [], []
    for c in range(classes):
        r = np.linspace(0.05, 1.0, n_per_class)
        theta = np.linspace(c * 2 * math.pi / classes, c * 2 * math.pi / classes + 3.5, n_per_class)
        theta = theta + rng.normal(0, noise, n_per_class)
        xs.append(np.stack([r * np.sin(theta), r * np.cos(theta)], axis=1))
        ys.append(np.full(n_per_class, c))
    x = torch.from_numpy(np.concatenate(xs).astype(np.float32))
    y = torch.from_numpy(np.concatenate(ys).astype(np.int64))
    return torch.utils.data.TensorDataset(x, y)


def make_model(hidden=64, classes=3):
    return nn.Sequential(nn.Linear(2, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                         nn.Linear(hidden, classes))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--num-epochs", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=32, help="per process")
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--workers", type=int, default=0, help="DataLoader worker processes")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    dist.init_process_group(backend="mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(args.seed + rank)          # different on every rank: DDP broadcasts rank 0's

    train_dataset = spirals(seed=args.seed)
    model = make_model()
    model = torch.nn.parallel.DistributedDataParallel(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)

    train_sampler = torch.utils.data.distributed.DistributedSampler(train_dataset, seed=args.seed)
    train_loader = torch.utils.data.DataLoader(train_dataset, batch_size=args.batch_size,
                                               num_workers=args.workers, pin_memory=True,
                                               sampler=train_sampler)
    if rank == 0:
        print(f"{world} process(es), {len(train_dataset)} samples, {len(train_sampler)} per process, "
              f"batch {args.batch_size} per process")
    t0 = time.perf_counter()
    for epoch in range(args.num_epochs):
        train_sampler.set_epoch(epoch)
        model.train()
        totals = torch.zeros(3, dtype=torch.float64)         # loss sum, correct, samples
        for x, y in train_loader:
            optimizer.zero_grad()
            out = model(x)
            loss = F.cross_entropy(out, y)
            loss.backward()                                  # gradients are averaged here
            optimizer.step()
            with torch.no_grad():
                totals += torch.tensor([loss.item() * len(y), (out.argmax(1) == y).sum().item(), len(y)],
                                       dtype=torch.float64)
        dist.all_reduce(totals)
        loss_sum, correct, seen = totals.tolist()
        if rank == 0:
            print(f"epoch {epoch:2d}  loss {loss_sum / seen:.4f}  accuracy {correct / seen:.3f}")

    # every rank ends with the same parameters
    flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    lo, hi = flat.clone(), flat.clone()
    dist.all_reduce(lo, dist.ReduceOp.MIN)
    dist.all_reduce(hi, dist.ReduceOp.MAX)
    same = bool((lo == hi).all())
    if rank == 0:
        stats = model.comm_stats()
        print(f"parameters identical on all ranks: {same}; {time.perf_counter() - t0:.2f} s; "
              f"{stats['grad_wait_s']:.3f} s waiting for gradient all-reduces")
    if not same:
        raise SystemExit("parameters differ between ranks")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
