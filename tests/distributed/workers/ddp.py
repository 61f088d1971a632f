"""DistributedDataParallel equivalence: N ranks, each training on its 1/N of every batch, end with the
parameters of one process training on the whole batch (SGD with momentum, several steps); plus
buckets, mixed dtypes, unused parameters, no_sync, buffers, a model mismatch, and the seed's
DistributedSampler + set_epoch loop. Each rank computes the single-process reference itself."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import Checks, dist  # noqa: E402

import numpy as np  # noqa: E402

import tensorplug as torch  # noqa: E402
import tensorplug.nn as nn  # noqa: E402
from tensorplug.nn.parallel import DistributedDataParallel as DDP  # noqa: E402
from tensorplug.utils.data import DataLoader, TensorDataset  # noqa: E402
from tensorplug.utils.data.distributed import DistributedSampler  # noqa: E402

dist.init_process_group("mpi")
R, N = dist.get_rank(), dist.get_world_size()
C = Checks()
BATCH = 8
STEPS = 6


class MLP(nn.Module):
    def __init__(self, dtype=None, extra=False):
        super().__init__()
        self.fc1 = nn.Linear(5, 16, dtype=dtype)
        self.fc2 = nn.Linear(16, 16, dtype=dtype)
        self.fc3 = nn.Linear(16, 3, dtype=dtype)
        if extra:
            self.side = nn.Linear(5, 3, dtype=dtype)        # used only when asked
            self.never = nn.Parameter(torch.ones(4, dtype=dtype or torch.float32))   # never used

    def forward(self, x, use_side=False):
        h = torch.tanh(self.fc1(x))
        y = self.fc3(torch.relu(self.fc2(h)))
        if use_side:
            y = y + self.side(x)
        return y


def data(seed, dtype=np.float32, n=BATCH * STEPS):
    rng = np.random.default_rng(seed)
    return (torch.from_numpy(rng.standard_normal((n, 5)).astype(dtype)),
            torch.from_numpy(rng.standard_normal((n, 3)).astype(dtype)))


def build(cls, seed, **kw):
    torch.manual_seed(seed)
    return cls(**kw)


def max_diff(a, b):
    return max(float((p.detach() - q.detach()).abs().max()) for p, q in zip(a.parameters(), b.parameters()))


def same_on_every_rank(model):
    for name, p in model.named_parameters():
        flat = p.detach().reshape(-1).contiguous()
        outs = [torch.zeros_like(flat) for _ in range(N)]
        dist.all_gather(outs, flat)
        for r, o in enumerate(outs):
            assert np.array_equal(o.numpy(), outs[0].numpy()), f"{name} differs between rank 0 and rank {r}"


def shard(t, step, rank=None):
    rank = R if rank is None else rank
    per = BATCH // N
    lo = step * BATCH + rank * per
    return t[lo:lo + per]


def equivalence(dtype=None, bucket_cap_mb=None, tol=2e-6, momentum=0.9, side_on_rank0=False,
                find_unused=False, accumulate=1, expect_early=None):
    npdt = np.float64 if dtype is torch.float64 else np.float32
    X, Y = data(1, npdt, BATCH * STEPS * accumulate)
    extra = side_on_rank0
    ref = build(MLP, 7, dtype=dtype, extra=extra)
    model = build(MLP, 100 + R, dtype=dtype, extra=extra)   # different on every rank: wrap syncs it
    if R == 0:
        with torch.no_grad():
            for p, q in zip(model.parameters(), ref.parameters()):
                p.copy_(q)
    ddp = DDP(model, bucket_cap_mb=bucket_cap_mb, find_unused_parameters=find_unused)
    assert max_diff(ref, model) == 0, "parameters after wrapping differ from rank 0's"
    o_ref = torch.optim.SGD(ref.parameters(), lr=0.05, momentum=momentum, weight_decay=1e-3)
    o_ddp = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=momentum, weight_decay=1e-3)
    per = BATCH // N
    for step in range(STEPS):
        o_ref.zero_grad()
        for micro in range(accumulate):
            s = step * accumulate + micro
            # the reference: the mean over ranks of each rank's loss on its shard
            total = 0
            for r in range(N):
                use = side_on_rank0 and r == 0
                total = total + ((ref(shard(X, s, r), use) - shard(Y, s, r)) ** 2).mean()
            (total / N).backward()
        o_ref.step()
        o_ddp.zero_grad()
        for micro in range(accumulate):
            s = step * accumulate + micro
            use = side_on_rank0 and R == 0
            if micro < accumulate - 1:
                with ddp.no_sync():
                    ((ddp(shard(X, s), use) - shard(Y, s)) ** 2).mean().backward()
            else:
                ((ddp(shard(X, s), use) - shard(Y, s)) ** 2).mean().backward()
        if extra:
            assert model.never.grad is None, "a parameter unused on every rank got a gradient"
            assert model.side.weight.grad is not None, "a parameter used on rank 0 has no gradient"
        o_ddp.step()
    assert per * N == BATCH
    d = max_diff(ref, model)
    assert d <= tol, f"max |ddp - reference| = {d:.3g} > {tol:g}"
    same_on_every_rank(model)
    stats = ddp.comm_stats()
    assert stats["reductions"] == STEPS, stats
    if expect_early is not None:
        assert (stats["buckets_started_during_backward"] > 0) == expect_early, stats
    return stats


C.run("ddp.equivalence_sgd_momentum", equivalence)
C.run("ddp.equivalence_float64", equivalence, torch.float64, None, 1e-12)
C.run("ddp.small_buckets_start_during_backward", equivalence, None, 0.0005, 2e-6, 0.9, False, False, 1, True)
C.run("ddp.one_bucket_per_parameter", equivalence, None, 1e-9)


def unused_parameters_raise_at_next_forward():
    """find_unused_parameters=False, a parameter without gradient (`never` everywhere, `side` off
    rank 0): the backward completes on every rank, the next forward raises PyTorch's error on
    every rank, naming this rank's parameter indices; the group is left usable."""
    X, Y = data(1)
    ddp = DDP(build(MLP, 7, extra=True), bucket_cap_mb=0.0005)
    names = [n for n, _ in ddp.module.named_parameters()]
    ((ddp(shard(X, 0), R == 0) - shard(Y, 0)) ** 2).mean().backward()
    try:
        ddp(shard(X, 1), R == 0)
    except RuntimeError as e:
        msg = str(e)
    else:
        raise AssertionError("a parameter without gradient did not make the next forward raise")
    assert msg.startswith("Expected to have finished reduction in the prior iteration before starting a new "
                          "one. This error indicates that your module has parameters that were not used in "
                          "producing loss."), msg
    missing = ["never"] + ([] if R == 0 else ["side.weight", "side.bias"])
    want = " ".join(str(i) for i in sorted(names.index(n) for n in missing))
    assert f"Parameter indices which did not receive grad for rank {R}: {want}" in msg, msg
    t = torch.ones(1)
    dist.all_reduce(t)
    assert t.item() == N


C.run("ddp.unused_parameters", unused_parameters_raise_at_next_forward)
C.run("ddp.find_unused_parameters", equivalence, None, 0.0005, 2e-6, 0.9, True, True, 1, True)
C.run("ddp.no_sync_accumulation", equivalence, None, None, 2e-6, 0.9, False, False, 3)


def large_chunked_buckets():
    """Buckets over 4 MiB go in pieces started as backward polls progress; several in flight."""
    def make(seed):
        torch.manual_seed(seed)
        return nn.Sequential(nn.Linear(5, 1030), nn.Tanh(), nn.Linear(1030, 1030), nn.Tanh(),
                             nn.Linear(1030, 1030), nn.Tanh(), nn.Linear(1030, 3))
    X, Y = data(4, n=BATCH * 3)
    ref, model = make(8), make(9 + R)
    if R == 0:
        model.load_state_dict(ref.state_dict())
    ddp = DDP(model, bucket_cap_mb=6)
    assert sum(b.nbytes() > 4 << 20 for b in ddp.reducer.buckets) >= 2
    o1 = torch.optim.SGD(ref.parameters(), lr=0.01, momentum=0.9)
    o2 = torch.optim.SGD(ddp.parameters(), lr=0.01, momentum=0.9)
    for step in range(3):
        o1.zero_grad()
        ((ref(X[step * BATCH:(step + 1) * BATCH]) - Y[step * BATCH:(step + 1) * BATCH]) ** 2).mean().backward()
        o1.step()
        o2.zero_grad()
        ((ddp(shard(X, step)) - shard(Y, step)) ** 2).mean().backward()
        o2.step()
    d = max_diff(ref, model)
    assert d < 1e-5, d
    same_on_every_rank(model)
    assert ddp.comm_stats()["buckets_started_during_backward"] > 0


C.run("ddp.large_chunked_buckets", large_chunked_buckets)


class Mixed(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(5, 3)
        self.scale = nn.Parameter(torch.ones(3, dtype=torch.float64))

    def forward(self, x):
        return self.fc(x) * self.scale.to(torch.float32)


def mixed_dtypes():
    X, Y = data(2)
    ref = build(Mixed, 3)
    model = build(Mixed, 3)
    ddp = DDP(model, bucket_cap_mb=1e-9)
    assert len({b.dtype for b in ddp.reducer.buckets}) == 2
    o1 = torch.optim.SGD(ref.parameters(), lr=0.1, momentum=0.5)
    o2 = torch.optim.SGD(ddp.parameters(), lr=0.1, momentum=0.5)
    for step in range(STEPS):
        o1.zero_grad()
        ((ref(X[step * BATCH:(step + 1) * BATCH]) - Y[step * BATCH:(step + 1) * BATCH]) ** 2).mean().backward()
        o1.step()
        o2.zero_grad()
        ((ddp(shard(X, step)) - shard(Y, step)) ** 2).mean().backward()
        o2.step()
    d = max_diff(ref, model)
    assert d < 2e-6, d
    assert model.scale.grad.dtype == torch.float64


C.run("ddp.mixed_dtypes", mixed_dtypes)


class WithBuffer(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(2, 2)
        self.register_buffer("offset", torch.zeros(2))

    def forward(self, x):
        return self.fc(x) + self.offset


def buffers_follow_rank0():
    m = WithBuffer()
    m.offset.fill_(float(R))
    ddp = DDP(m)
    assert m.offset.tolist() == [0.0, 0.0], m.offset      # broadcast at wrap time
    m.offset.fill_(10.0 + R)                               # rank 0's value wins before every forward
    ddp(torch.zeros(1, 2))
    assert m.offset.tolist() == [10.0, 10.0], m.offset
    quiet = DDP(WithBuffer(), broadcast_buffers=False)
    quiet.module.offset.fill_(float(R))
    quiet(torch.zeros(1, 2))
    assert quiet.module.offset.tolist() == [float(R)] * 2


C.run("ddp.buffers_broadcast_from_rank0", buffers_follow_rank0)


def model_mismatch():
    m = nn.Linear(3, 2 + (R == N - 1))
    try:
        DDP(m)
    except RuntimeError as e:
        assert "differ between ranks" in str(e), e
    else:
        raise AssertionError("wrapping different models did not raise")
    # no collective is left half done: the group still works
    t = torch.ones(1)
    dist.all_reduce(t)
    assert t.item() == N


C.run("ddp.model_mismatch_raises_everywhere", model_mismatch)


def state_dict_and_grads_without_ddp_forward():
    m = build(MLP, 5)
    ddp = DDP(m)
    assert list(ddp.state_dict())[0].startswith("module."), list(ddp.state_dict())[:2]
    # backward of a graph made by the inner module (not through the wrapper) is not reduced
    x = torch.ones(2, 5) * (R + 1)
    m(x).sum().backward()
    g = m.fc1.bias.grad.clone()
    outs = [torch.zeros_like(g) for _ in range(N)]
    dist.all_gather(outs, g)
    assert N == 1 or outs[0].tolist() != outs[-1].tolist()


C.run("ddp.state_dict_and_unwrapped_backward", state_dict_and_grads_without_ddp_forward)


def seed_sampler_loop():
    """The seed's loop: DistributedSampler + set_epoch + DataLoader, against one process that
    rebuilds every rank's batches."""
    X, Y = data(3, n=40)
    ds = TensorDataset(X, Y)
    ref = build(MLP, 11)
    model = build(MLP, 11)
    ddp = DDP(model)
    sampler = DistributedSampler(ds)
    loader = DataLoader(ds, batch_size=4, sampler=sampler)
    all_samplers = [DistributedSampler(ds, num_replicas=N, rank=r) for r in range(N)]
    o1 = torch.optim.SGD(ref.parameters(), lr=0.05, momentum=0.9)
    o2 = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
    seen = set()
    for epoch in range(3):
        sampler.set_epoch(epoch)
        for s in all_samplers:
            s.set_epoch(epoch)
        idx = [list(s) for s in all_samplers]
        for i, (xb, yb) in enumerate(loader):
            o2.zero_grad()
            ((ddp(xb) - yb) ** 2).mean().backward()
            o2.step()
            o1.zero_grad()
            total = 0
            for r in range(N):
                b = idx[r][i * 4:(i + 1) * 4]
                seen.update(b)
                total = total + ((ref(X[b]) - Y[b]) ** 2).mean()
            (total / N).backward()
            o1.step()
    assert seen == set(range(40))
    d = max_diff(ref, model)
    assert d < 5e-6, d
    same_on_every_rank(model)


C.run("ddp.seed_sampler_set_epoch_loop", seed_sampler_loop)
C.report()
