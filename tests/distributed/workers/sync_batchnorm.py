"""nn.SyncBatchNorm on N ranks against one float64 NumPy batch norm of the concatenated global batch:
outputs, running stats, input / weight / bias gradients (uneven and empty shares, 2D to 5D input,
momentum None, a float32 input with a large offset, sub-groups), wrapped in DDP with several SGD
steps, eval mode without communication, errors raised on every rank; with one rank, gradcheck of
the autograd Function itself. Every rank builds the same global data and computes the reference."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import Checks, dist  # noqa: E402

import numpy as np  # noqa: E402

import tensorplug as torch  # noqa: E402
import tensorplug.nn as nn  # noqa: E402
from tensorplug.nn.modules import _functions  # noqa: E402
from tensorplug.nn.parallel import DistributedDataParallel as DDP  # noqa: E402

dist.init_process_group("mpi")
R, N = dist.get_rank(), dist.get_world_size()
C = Checks()
EPS = 1e-5


def ref_bn(x, w, b, g):
    """(y, mean, unbiased var, dx, dw, db) of batch norm on x (n, C, *) for loss sum(y * g), float64."""
    axes = (0,) + tuple(range(2, x.ndim))
    bs = (1, x.shape[1]) + (1,) * (x.ndim - 2)
    n = x.size // x.shape[1]
    mean = x.mean(axes)
    var = x.var(axes)
    inv = 1 / np.sqrt(var + EPS)
    xhat = (x - mean.reshape(bs)) * inv.reshape(bs)
    y = xhat * w.reshape(bs) + b.reshape(bs)
    dxhat_sum = (g * xhat).sum(axes)
    dx = (w * inv).reshape(bs) * (g - g.mean(axes, keepdims=True) - xhat * (dxhat_sum / n).reshape(bs))
    return y, mean, var * n / (n - 1), dx, dxhat_sum, g.sum(axes)


def rows_of(counts, rank):
    lo = sum(counts[:rank])
    return slice(lo, lo + counts[rank])


def summed(t):
    """t summed over the ranks (a copy)."""
    s = t.detach().clone()
    dist.all_reduce(s)
    return s.numpy()


def close(what, got, want, tol):
    got = np.asarray(got, dtype=np.float64)
    err = float(np.max(np.abs(got - want) / (1 + np.abs(want)))) if want.size else 0.0
    assert got.shape == want.shape, f"{what}: shape {got.shape}, expected {want.shape}"
    assert err <= tol, f"{what}: max relative error {err:.3g} > {tol:g}"


def against_reference(counts, tail=(3, 2), channels=3, momentum=0.1, dtype=torch.float64, offset=0.0,
                      tol=1e-12, steps=2, group=None, members=None):
    """Train-mode SyncBatchNorm (affine, tracking) for `steps` forward/backward passes; every
    result equals the reference on the members' concatenated rows (members: global ranks)."""
    members = list(range(N)) if members is None else members
    me = members.index(R)
    rng = np.random.default_rng(3)
    m = nn.SyncBatchNorm(channels, momentum=momentum, process_group=group).to(dtype)
    w = rng.uniform(0.5, 1.5, channels)
    b = rng.standard_normal(channels)
    with torch.no_grad():
        m.weight.copy_(torch.from_numpy(w))
        m.bias.copy_(torch.from_numpy(b))
    rm, rv = np.zeros(channels), np.ones(channels)
    for step in range(steps):
        shape = (sum(counts), channels) + tuple(tail)
        X = rng.standard_normal(shape) * rng.uniform(0.5, 3, (1, channels) + (1,) * len(tail)) + offset
        G = rng.standard_normal(shape)
        mine = rows_of(counts, me)
        x = torch.from_numpy(X[mine]).to(dtype).requires_grad_(True)
        m.weight.grad = m.bias.grad = None
        y = m(x)
        (y * torch.from_numpy(G[mine]).to(dtype)).sum().backward()
        npdt = {torch.float32: np.float32, torch.float16: np.float16}.get(dtype, np.float64)
        xr = X.astype(npdt).astype(np.float64)
        ry, mean, uvar, dx, dw, db = ref_bn(xr, w, b, G)
        f = (1.0 / (step + 1)) if momentum is None else momentum
        rm, rv = (1 - f) * rm + f * mean, (1 - f) * rv + f * uvar
        close(f"step {step} output", y.detach().numpy(), ry[mine], tol)
        close(f"step {step} input grad", x.grad.numpy(), dx[mine], tol)
        close(f"step {step} running_mean", m.running_mean.numpy(), rm, tol)
        close(f"step {step} running_var", m.running_var.numpy(), rv, tol)
        # weight / bias gradients are each rank's own part: summed over the group they are the whole
        gw, gb = m.weight.grad.detach().clone(), m.bias.grad.detach().clone()
        dist.all_reduce(gw, group=group)
        dist.all_reduce(gb, group=group)
        close(f"step {step} weight grad (summed over ranks)", gw.numpy(), dw, tol)
        close(f"step {step} bias grad (summed over ranks)", gb.numpy(), db, tol)
    assert int(m.num_batches_tracked.item()) == steps


C.run("sbn.even_4d", against_reference, [4] * N)
if N > 1:      # shares that plain BatchNorm would refuse: 0 or 1 rows on a rank
    C.run("sbn.uneven_with_empty_rank", against_reference, [3 + r if r != N - 1 else 0 for r in range(N)])
    C.run("sbn.one_row_per_rank_2d", against_reference, [1] * N, ())
C.run("sbn.five_d", against_reference, [2] * N, (2, 3, 2))
C.run("sbn.momentum_none_cumulative", against_reference, [3] * N, (4,), 3, None, torch.float64, 0.0, 1e-12, 3)
C.run("sbn.float32_large_offset_stable", against_reference, [8] * N, (5, 5), 2, 0.1, torch.float32, 1e4,
      5e-3)
C.run("sbn.float16_input", against_reference, [4] * N, (3,), 2, 0.1, torch.float16, 0.0, 2e-2)


def sub_groups():
    """On 4 ranks, {0, 1} and {2, 3} each synchronize among themselves only."""
    g01, g23 = dist.new_group([0, 1]), dist.new_group([2, 3])
    against_reference([3, 2], group=g01 if R < 2 else g23, members=[0, 1] if R < 2 else [2, 3])


if N == 4:
    C.run("sbn.sub_groups", sub_groups)


def eval_mode_is_local():
    """eval mode uses the running stats and no collective: rank 0 alone runs it."""
    m = nn.SyncBatchNorm(2).double()
    with torch.no_grad():
        m.running_mean.copy_(torch.tensor([0.5, -1.0], dtype=torch.float64))
        m.running_var.copy_(torch.tensor([2.0, 0.25], dtype=torch.float64))
        m.weight.copy_(torch.tensor([1.5, 0.5], dtype=torch.float64))
    m.eval()
    if R == 0:
        x = np.arange(12, dtype=np.float64).reshape(3, 2, 2)
        want = (x - np.array([0.5, -1.0])[None, :, None]) / np.sqrt(np.array([2.0, 0.25]) + EPS)[None, :, None]
        want = want * np.array([1.5, 0.5])[None, :, None]
        close("eval output", m(torch.from_numpy(x)).detach().numpy(), want, 1e-12)


C.run("sbn.eval_mode_is_local", eval_mode_is_local)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(5, 4)
        self.bn = nn.BatchNorm1d(4)
        self.head = nn.Linear(4, 2)

    def forward(self, x):
        return self.head(torch.tanh(self.bn(self.fc(x))))


def ddp_equivalence():
    """convert_sync_batchnorm + DDP on N ranks, 3 SGD steps, equals one process training the plain
    model on the whole batch (parameters, gradients, running stats), float64."""
    torch.manual_seed(11)
    ref = Net().double()
    torch.manual_seed(11)
    model = nn.SyncBatchNorm.convert_sync_batchnorm(Net().double())
    assert type(model.bn) is nn.SyncBatchNorm and type(ref.bn) is nn.BatchNorm1d
    ddp = DDP(model)
    o_ref = torch.optim.SGD(ref.parameters(), lr=0.1)
    o_ddp = torch.optim.SGD(ddp.parameters(), lr=0.1)
    rng = np.random.default_rng(5)
    per = 3
    for step in range(3):
        X = torch.from_numpy(rng.standard_normal((per * N, 5)))
        Y = torch.from_numpy(rng.standard_normal((per * N, 2)))
        o_ref.zero_grad()
        ((ref(X) - Y) ** 2).mean().backward()
        o_ddp.zero_grad()
        mine = slice(R * per, (R + 1) * per)
        ((ddp(X[mine]) - Y[mine]) ** 2).mean().backward()
        for (name, p), q in zip(ref.named_parameters(), model.parameters()):
            close(f"step {step} grad of {name}", q.grad.numpy(), p.grad.numpy(), 1e-10)
        o_ref.step()
        o_ddp.step()
    for (name, p), q in zip(ref.named_parameters(), model.parameters()):
        close(f"{name} after training", q.detach().numpy(), p.detach().numpy(), 1e-10)
    close("running_mean", model.bn.running_mean.numpy(), ref.bn.running_mean.numpy(), 1e-10)
    close("running_var", model.bn.running_var.numpy(), ref.bn.running_var.numpy(), 1e-10)


C.run("sbn.ddp_equivalence", ddp_equivalence)


def errors_on_every_rank():
    """One value per channel in the whole group: ValueError on every rank (no hang, no NaN)."""
    m = nn.SyncBatchNorm(2)
    x = torch.ones(1 if R == 0 else 0, 2)
    try:
        m(x)
    except ValueError as e:
        assert "more than 1 value per channel" in str(e) and f"{N} processes" in str(e), str(e)
    else:
        raise AssertionError("no error for one value per channel")
    try:
        m(torch.ones(4, 3))
    except ValueError as e:
        assert "num_features (2)" in str(e), str(e)
    else:
        raise AssertionError("no error for 3 channels in a 2-feature layer")


if N > 1:
    C.run("sbn.errors_on_every_rank", errors_on_every_rank)


def gradcheck_function():
    """The autograd Function (called directly, world of one) against finite differences."""
    rng = np.random.default_rng(9)
    x = torch.from_numpy(rng.standard_normal((4, 3, 2))).requires_grad_(True)
    w = torch.from_numpy(rng.uniform(0.5, 1.5, 3)).requires_grad_(True)
    b = torch.from_numpy(rng.standard_normal(3)).requires_grad_(True)

    def fn(x, w, b):
        return _functions.SyncBatchNorm.apply(x, w, b, None, None, EPS, 0.1, None, 1)
    assert torch.autograd.gradcheck(fn, (x, w, b))
    g = torch.from_numpy(rng.standard_normal((4, 3, 2)))
    fn(x, w, b).backward(g)
    _, _, _, dx, dw, db = ref_bn(x.detach().numpy(), w.detach().numpy(), b.detach().numpy(), g.numpy())
    close("input grad", x.grad.numpy(), dx, 1e-12)
    close("weight grad", w.grad.numpy(), dw, 1e-12)
    close("bias grad", b.grad.numpy(), db, 1e-12)


if N == 1:
    C.run("sbn.gradcheck_function", gradcheck_function)

C.report()
