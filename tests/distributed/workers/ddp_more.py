"""DDP as PyTorch has it, beyond plain equivalence: communication hooks (built-in and custom),
join on uneven inputs (both divide modes, early termination), the buffer broadcast schedule
under no_sync, the unused-parameter error, and ZeroRedundancyOptimizer. Every rank computes the
single-process reference itself (NumPy float64, or one process's training on every rank's data)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import Checks, dist  # noqa: E402

import numpy as np  # noqa: E402

import tensorplug as torch  # noqa: E402
import tensorplug.nn as nn  # noqa: E402
from tensorplug.distributed.algorithms import Join  # noqa: E402
from tensorplug.distributed.algorithms.ddp_comm_hooks import default_hooks  # noqa: E402
from tensorplug.distributed.optim import ZeroRedundancyOptimizer  # noqa: E402
from tensorplug.futures import Future  # noqa: E402
from tensorplug.nn.parallel import DistributedDataParallel as DDP  # noqa: E402

dist.init_process_group("mpi")
R, N = dist.get_rank(), dist.get_world_size()
C = Checks()
ONLY = os.environ.get("DDP_MORE_ONLY")     # a substring of check names, to run a few while debugging
PER = 3          # samples per rank and step


def run(name, fn, *args):
    if ONLY is None or ONLY in name:
        C.run(name, fn, *args)


def mlp(seed):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(5, 12), nn.Tanh(), nn.Linear(12, 7), nn.Tanh(), nn.Linear(7, 3))


def batch(step, rank):
    rng = np.random.default_rng(1000 + 31 * step + rank)
    return (torch.from_numpy(rng.standard_normal((PER, 5)).astype(np.float32)),
            torch.from_numpy(rng.standard_normal((PER, 3)).astype(np.float32)))


def loss_of(model, step, rank):
    x, y = batch(step, rank)
    return ((model(x) - y) ** 2).mean()


def local_grads(model, step, rank):
    """float64 gradients of one rank's loss at `model`'s current parameters (one process)."""
    model.zero_grad()
    loss_of(model, step, rank).backward()
    return [p.grad.numpy().astype(np.float64) for p in model.parameters()]


def grads_of(model):
    return [p.grad.numpy().astype(np.float64) for p in model.parameters()]


def close(got, want, tol, what):
    for i, (g, w) in enumerate(zip(got, want)):
        d = float(np.max(np.abs(np.asarray(g, np.float64) - w)))
        assert d <= tol, f"{what}: parameter {i} differs by {d:.3g} (> {tol:g})"


def params_np(model):
    return [p.detach().numpy().astype(np.float64) for p in model.parameters()]


def group_works():
    t = torch.ones(1)
    dist.all_reduce(t)
    assert t.item() == N, t


# -- communication hooks ---------------------------------------------------------------------------
def hook_allreduce_and_bucket_surface():
    ref = mlp(1)
    ddp = DDP(mlp(1), bucket_cap_mb=0.0004)
    seen = []

    def hook(state, bucket):
        buf = bucket.buffer()
        views = bucket.gradients()
        assert buf.dim() == 1 and buf.numel() == sum(p.numel() for p in bucket.parameters())
        off = 0
        for v, p in zip(views, bucket.parameters()):
            assert tuple(v.shape) == tuple(p.shape)
            assert np.array_equal(v.numpy().reshape(-1), buf.numpy()[off:off + v.numel()])
            off += v.numel()
        seen.append((bucket.index(), bucket.is_last()))
        assert state == "state-object"
        return default_hooks.allreduce_hook(None, bucket)
    ddp.register_comm_hook("state-object", hook)
    nb = len(ddp.reducer.buckets)
    assert nb >= 3, nb
    for step in range(2):
        per_rank = [local_grads(ref, step, r) for r in range(N)]
        want = [sum(g[i] for g in per_rank) / N for i in range(len(per_rank[0]))]
        ddp.zero_grad()
        loss_of(ddp, step, R).backward()
        close(grads_of(ddp.module), want, 1e-6, "allreduce_hook gradients")
    assert sorted(seen[:nb]) == [(i, i == nb - 1) for i in range(nb)], seen


def hook_fp16_compress():
    ref = mlp(2)
    ddp = DDP(mlp(2))
    ddp.register_comm_hook(None, default_hooks.fp16_compress_hook)
    ddp.zero_grad()
    loss_of(ddp, 0, R).backward()
    per_rank = [local_grads(ref, 0, r) for r in range(N)]
    for i, p in enumerate(ddp.module.parameters()):
        parts = [(g[i].astype(np.float32).astype(np.float16) / np.float16(N)).astype(np.float16) for g in per_rank]
        acc = parts[0]
        for q in parts[1:]:
            acc = (acc + q).astype(np.float16)
        want = acc.astype(np.float32)
        got = p.grad.numpy()
        assert got.dtype == np.float32
        # two ranks: one float16 addition, exact; more: MPI's summation order may differ by an ulp
        tol = 0 if N == 2 else float(np.max(np.abs(want))) * 2 ** -9
        d = float(np.max(np.abs(got - want)))
        assert d <= tol, f"fp16_compress_hook: parameter {i} differs by {d:.3g} from the float16 computation"
    exact = [sum(g[i] for g in per_rank) / N for i in range(len(per_rank[0]))]
    assert any(float(np.max(np.abs(p.grad.numpy() - e))) > 0 for p, e in zip(ddp.module.parameters(), exact)), \
        "fp16 compression left no trace: the hook did not run"


def hook_custom_future_and_errors():
    ref = mlp(3)
    ddp = DDP(mlp(3))

    def no_comm_double(state, bucket):               # completes at once, no communication
        fut = Future()
        fut.set_result(bucket.buffer() * 2)
        return fut.then(lambda f: f.value())
    ddp.register_comm_hook(None, no_comm_double)
    try:
        ddp.register_comm_hook(None, no_comm_double)
    except RuntimeError as e:
        assert "can only be called once" in str(e), e
    else:
        raise AssertionError("registering a second comm hook did not raise")
    ddp.zero_grad()
    loss_of(ddp, 0, R).backward()
    close(grads_of(ddp.module), [2 * g for g in local_grads(ref, 0, R)], 1e-6, "custom hook gradients")
    try:
        DDP(mlp(3)).register_comm_hook(None, 5)
    except TypeError as e:
        assert "must be callable" in str(e), e
    else:
        raise AssertionError("a non-callable comm hook did not raise")
    bad = DDP(mlp(3))
    bad.register_comm_hook(None, lambda state, bucket: 5)
    try:
        loss_of(bad, 0, R).backward()
    except RuntimeError as e:
        assert "must return a tensorplug.futures.Future" in str(e) and "builtins.int" in str(e), e
    else:
        raise AssertionError("a hook returning an int did not raise")
    group_works()


run("more.hook_allreduce_and_bucket_surface", hook_allreduce_and_bucket_surface)
run("more.hook_fp16_compress", hook_fp16_compress)
run("more.hook_custom_future_and_errors", hook_custom_future_and_errors)


# -- join ---------------------------------------------------------------------------------------------
def n_batches(rank):
    return [5, 3, 4, 2][rank % 4] if N > 2 else [5, 3][rank]


def join_uneven(divide_by_initial_world_size, hook=None):
    """Each rank trains on its own number of batches inside ddp.join(); the reference runs the same
    schedule in one process: at step i the ranks with a batch i take part, their gradient sum is
    divided by N (or by how many take part); at the end every rank has the last joiner's model."""
    lr, mom = 0.1, 0.9
    ref = mlp(4)
    o_ref = torch.optim.SGD(ref.parameters(), lr=lr, momentum=mom)
    counts = [n_batches(r) for r in range(N)]
    for step in range(max(counts)):
        active = [r for r in range(N) if counts[r] > step]
        per_rank = [local_grads(ref, step, r) for r in active]
        div = N if divide_by_initial_world_size else len(active)
        for p, i in zip(ref.parameters(), range(len(per_rank[0]))):
            p.grad = torch.from_numpy((sum(g[i] for g in per_rank) / div).astype(np.float32))
        o_ref.step()
    ddp = DDP(mlp(4), bucket_cap_mb=0.0004)
    if hook is not None:                 # joined ranks run it on zero buckets
        ddp.register_comm_hook(None, hook)
    opt = torch.optim.SGD(ddp.parameters(), lr=lr, momentum=mom)
    with ddp.join(divide_by_initial_world_size=divide_by_initial_world_size):
        for step in range(counts[R]):
            opt.zero_grad()
            loss_of(ddp, step, R).backward()
            opt.step()
    close(params_np(ddp.module), params_np(ref), 2e-6, "parameters after join")
    assert ddp.reducer.div_factor == N
    # training goes on normally after the join
    ddp.zero_grad()
    loss_of(ddp, 0, R).backward()
    per_rank = [local_grads(ref, 0, r) for r in range(N)]
    close(grads_of(ddp.module), [sum(g[i] for g in per_rank) / N for i in range(len(per_rank[0]))], 1e-6,
          "gradients after the join")


def join_buffers():
    """Buffers under join, as PyTorch has it: each iteration's broadcast comes from the highest rank
    still training (joined ranks receive it too); at the end every rank takes the last joiner's.
    NumPy float64 reference of the batch-norm running means."""
    torch.manual_seed(13)
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    W = model[0].weight.detach().numpy().astype(np.float64)
    b = model[0].bias.detach().numpy().astype(np.float64)
    counts = [n_batches(r) for r in range(N)]
    xs = {(i, r): np.random.default_rng(700 + 10 * i + r).standard_normal((6, 3)) for r in range(N)
          for i in range(counts[r])}
    mean = [np.zeros(4) for _ in range(N)]
    for i in range(max(counts)):
        active = [r for r in range(N) if counts[r] > i]
        src = max(active) if i else 0          # the first forward follows the wrap-time broadcast
        mean = [mean[src].copy() for _ in range(N)]
        for r in active:
            mean[r] = 0.9 * mean[r] + 0.1 * (xs[i, r] @ W.T + b).mean(0)
    last = max(r for r in range(N) if counts[r] == max(counts))
    ddp = DDP(model)
    with ddp.join():
        for i in range(counts[R]):
            ddp(torch.from_numpy(xs[i, R].astype(np.float32))).sum().backward()
    d = float(np.max(np.abs(model[1].running_mean.numpy() - mean[last])))
    assert d < 1e-5, f"running mean after join differs from the last joiner's by {d:.3g}"


def join_throw_on_early_termination():
    ddp = DDP(mlp(5))
    err = None
    try:
        with ddp.join(throw_on_early_termination=True):
            for step in range(n_batches(R)):
                loss_of(ddp, step, R).backward()
    except RuntimeError as e:
        err = str(e)
    fewest = min(n_batches(r) for r in range(N))
    if n_batches(R) == fewest:
        assert err == f"Rank {R} exhausted all inputs.", err
    else:
        assert err == "Detected at least one rank that exhausted inputs. Throwing across all ranks.", err
    group_works()


def join_generic_errors():
    try:
        Join([])
    except ValueError as e:
        assert "at least one joinable" in str(e), e
    else:
        raise AssertionError("Join([]) did not raise")
    ddp = DDP(mlp(6))
    with Join([ddp], enable=False):          # disabled: an even loop, nothing shadowed
        loss_of(ddp, 0, R).backward()
    assert not ddp._join_config.enable


run("more.join_divide_by_initial_world_size", join_uneven, True)
run("more.join_divide_by_active_ranks", join_uneven, False)
run("more.join_with_allreduce_hook", join_uneven, True, default_hooks.allreduce_hook)
run("more.join_buffers_from_highest_training_rank", join_buffers)
run("more.join_throw_on_early_termination", join_throw_on_early_termination)
run("more.join_generic_errors", join_generic_errors)


# -- buffers under no_sync ------------------------------------------------------------------------------
# forward kinds per step: "sync" (grad mode, synchronized), "nosync" (inside no_sync), "nograd"
SCHEDULE = ["sync", "nosync", "nosync", "sync", "nograd", "sync", "sync", "nosync", "sync"]


def buffer_schedule():
    """PyTorch's rule: a forward broadcasts rank 0's buffers first only if the forward before it ran
    in grad mode outside no_sync (the first forward always does). NumPy float64 reference of the
    batch-norm running statistics on every rank, step by step."""
    torch.manual_seed(9)
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    ddp = DDP(model)
    W = model[0].weight.detach().numpy().astype(np.float64)
    b = model[0].bias.detach().numpy().astype(np.float64)
    mom = 0.1
    stats = [[np.zeros(4), np.ones(4), 0] for _ in range(N)]     # running mean, var, batches per rank
    sync_next = True
    wrong = []
    for step, kind in enumerate(SCHEDULE):
        xs = [np.random.default_rng(500 + 10 * step + r).standard_normal((6, 3)) for r in range(N)]
        if sync_next:
            stats = [[s.copy() if isinstance(s, np.ndarray) else s for s in stats[0]] for _ in range(N)]
        for r in range(N):
            h = xs[r] @ W.T + b
            m, v, nb = stats[r]
            stats[r] = [(1 - mom) * m + mom * h.mean(0), (1 - mom) * v + mom * h.var(0, ddof=1), nb + 1]
        sync_next = kind == "sync"
        x = torch.from_numpy(xs[R].astype(np.float32))
        if kind == "sync":
            ddp(x).sum().backward()
        elif kind == "nosync":
            with ddp.no_sync():
                ddp(x).sum().backward()
        else:
            with torch.no_grad():
                ddp(x)
        bn = model[1]
        m, v, nb = stats[R]
        dm = float(np.max(np.abs(bn.running_mean.numpy() - m)))
        dv = float(np.max(np.abs(bn.running_var.numpy() - v)))
        if not (dm < 1e-5 and dv < 1e-5 and int(bn.num_batches_tracked.item()) == nb):
            wrong.append(f"step {step} ({kind}): running stats differ by {dm:.3g}, {dv:.3g}; "
                         f"batches tracked {int(bn.num_batches_tracked.item())}, expected {nb}")
    # asserted after the loop: a rank leaving early would leave the others in a broadcast
    assert not wrong, wrong
    # the schedule must have left the ranks apart (else it tests nothing)
    if N > 1:
        assert float(np.max(np.abs(stats[0][0] - stats[1][0]))) > 1e-3


run("more.buffers_follow_pytorch_schedule_under_no_sync", buffer_schedule)


# -- unused parameters -------------------------------------------------------------------------------------
class TwoHeads(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(3, 2)
        self.b = nn.Linear(3, 2)

    def forward(self, x):
        return self.a(x)


def unused_parameter_error_names_them():
    old = dist.get_debug_level()
    dist.set_debug_level("INFO")          # what TORCH_DISTRIBUTED_DEBUG=INFO sets
    try:
        ddp = DDP(TwoHeads())
        ddp(torch.ones(2, 3)).sum().backward()           # completes: b got no gradient
        assert ddp.module.a.weight.grad is not None and ddp.module.b.weight.grad is None
        with torch.no_grad():
            ddp(torch.ones(2, 3))                         # no-grad forwards are not checked
        for _ in range(2):                                # the error stays until the model is fixed
            try:
                ddp(torch.ones(2, 3))
            except RuntimeError as e:
                msg = str(e)
            else:
                raise AssertionError("the next forward did not raise")
            assert msg.startswith("Expected to have finished reduction in the prior iteration"), msg
            assert f"Parameters which did not receive grad for rank {R}: b.bias, b.weight" in msg, msg
            assert f"Parameter indices which did not receive grad for rank {R}: 2 3" in msg, msg
        ok = DDP(TwoHeads(), find_unused_parameters=True)
        for _ in range(2):
            ok(torch.ones(2, 3)).sum().backward()
        assert ok.module.b.weight.grad is None
    finally:
        dist.set_debug_level(old)
    group_works()


run("more.unused_parameter_error_names_them", unused_parameter_error_names_them)


# -- ZeroRedundancyOptimizer ---------------------------------------------------------------------------------
def greedy_partition(sizes_by_group, n):
    """The partition rule in plain Python: per group, largest first, to the rank with least so far."""
    load = [0] * n
    owner = {}
    for g in sizes_by_group:
        for j in sorted(range(len(g[1])), key=lambda j: -g[1][j]):
            r = load.index(min(load))
            owner[g[0][j]] = r
            load[r] += g[1][j]
    return owner


def zero_matches_unsharded(opt_name):
    cls, kw = {"sgd": (torch.optim.SGD, dict(lr=0.05, momentum=0.9, weight_decay=1e-3)),
               "adam": (torch.optim.Adam, dict(lr=0.01, betas=(0.8, 0.9)))}[opt_name]
    ref = mlp(7)
    o_ref = cls(ref.parameters(), **kw)
    ddp = DDP(mlp(7))
    zero = ZeroRedundancyOptimizer(ddp.parameters(), cls, **kw)
    params = list(ddp.module.parameters())
    for step in range(4):
        per_rank = [local_grads(ref, step, r) for r in range(N)]
        for p, i in zip(ref.parameters(), range(len(params))):
            p.grad = torch.from_numpy((sum(g[i] for g in per_rank) / N).astype(np.float32))
        o_ref.step()
        zero.zero_grad()
        loss_of(ddp, step, R).backward()
        zero.step()
        close(params_np(ddp.module), params_np(ref), 2e-6, f"ZeRO({opt_name}) step {step}")
    # the state is sharded: this rank holds the state of its partition only, partitions cover all
    owner = greedy_partition([(list(range(len(params))), [p.numel() for p in params])], N)
    mine = {i for i, p in enumerate(params) if p in zero.optim.state}
    assert mine == {i for i in owner if owner[i] == R}, (mine, owner)
    # consolidate on rank 0: the unsharded optimizer's state dict
    zero.consolidate_state_dict(to=0)
    if R == 0:
        sd, want = zero.state_dict(), o_ref.state_dict()
        assert sorted(sd["state"]) == sorted(want["state"]) == list(range(len(params))), sorted(sd["state"])
        for i in want["state"]:
            for k, v in want["state"][i].items():
                got = sd["state"][i][k]
                assert np.allclose(np.asarray(got.numpy() if hasattr(got, "numpy") else got, np.float64),
                                   np.asarray(v.numpy() if hasattr(v, "numpy") else v, np.float64),
                                   atol=1e-6), (i, k)
        assert sd["param_groups"][0]["lr"] == kw["lr"] and sd["param_groups"][0]["params"] == list(range(len(params)))
    else:
        try:
            zero.state_dict()
        except RuntimeError as e:
            assert "has not been consolidated on this rank" in str(e), e
        else:
            raise AssertionError("state_dict() off the consolidating rank did not raise")
    # load the unsharded optimizer's state into a fresh ZeRO and go on: still the same
    ddp2 = DDP(mlp(99))
    with torch.no_grad():
        for p, q in zip(ddp2.module.parameters(), ref.parameters()):
            p.copy_(q)
    zero2 = ZeroRedundancyOptimizer(ddp2.parameters(), cls, **kw)
    zero2.load_state_dict(o_ref.state_dict())
    assert {i for i, p in enumerate(ddp2.module.parameters()) if p in zero2.optim.state} == mine
    for step in range(4, 6):
        per_rank = [local_grads(ref, step, r) for r in range(N)]
        for p, i in zip(ref.parameters(), range(len(params))):
            p.grad = torch.from_numpy((sum(g[i] for g in per_rank) / N).astype(np.float32))
        o_ref.step()
        zero2.zero_grad()
        loss_of(ddp2, step, R).backward()
        zero2.step()
    close(params_np(ddp2.module), params_np(ref), 2e-6, f"ZeRO({opt_name}) after load_state_dict")


def zero_add_param_group():
    ref = mlp(8)
    fc = [m for m in ref if isinstance(m, nn.Linear)]
    o_ref = torch.optim.SGD(list(fc[0].parameters()) + list(fc[1].parameters()), lr=0.05, momentum=0.5)
    o_ref.add_param_group({"params": list(fc[2].parameters()), "lr": 0.2})
    ddp = DDP(mlp(8))
    dfc = [m for m in ddp.module if isinstance(m, nn.Linear)]
    zero = ZeroRedundancyOptimizer(list(dfc[0].parameters()) + list(dfc[1].parameters()),
                                   torch.optim.SGD, lr=0.05, momentum=0.5)
    zero.add_param_group({"params": list(dfc[2].parameters()), "lr": 0.2})
    assert len(zero.param_groups) == 2 and len(zero.optim.param_groups) == 2
    assert zero.param_groups[1]["lr"] == 0.2
    groups = [list(range(4)), list(range(4, 6))]
    params = list(ddp.module.parameters())
    owner = greedy_partition([(g, [params[i].numel() for i in g]) for g in groups], N)
    got = {i for i, p in enumerate(params) for g in zero.optim.param_groups if any(q is p for q in g["params"])}
    assert got == {i for i in owner if owner[i] == R}, (got, owner)
    for step in range(3):
        per_rank = [local_grads(ref, step, r) for r in range(N)]
        for p, i in zip(ref.parameters(), range(len(params))):
            p.grad = torch.from_numpy((sum(g[i] for g in per_rank) / N).astype(np.float32))
        o_ref.step()
        zero.zero_grad()
        loss_of(ddp, step, R).backward()
        zero.step()
    close(params_np(ddp.module), params_np(ref), 2e-6, "ZeRO with an added parameter group")


def zero_with_join():
    """Join([ddp, zero]) on uneven inputs. PyTorch's rule: a joined rank keeps stepping its share
    once per iteration of the others, with the gradients of its last iteration. Reference: one SGD
    over all parameters, each fed its owner's gradient (the average over the ranks still training,
    or, once its owner has joined, the owner's last one)."""
    lr, mom = 0.1, 0.9
    counts = [n_batches(r) for r in range(N)]
    ref = mlp(12)
    o_ref = torch.optim.SGD(ref.parameters(), lr=lr, momentum=mom)
    ddp = DDP(mlp(12))
    zero = ZeroRedundancyOptimizer(ddp.parameters(), torch.optim.SGD, lr=lr, momentum=mom)
    params = list(ddp.module.parameters())
    owner = greedy_partition([(list(range(len(params))), [p.numel() for p in params])], N)
    last = {}
    for step in range(max(counts)):
        active = [r for r in range(N) if counts[r] > step]
        per_rank = [local_grads(ref, step, r) for r in active]
        avg = [sum(g[i] for g in per_rank) / N for i in range(len(params))]
        for i, p in enumerate(ref.parameters()):
            if owner[i] in active:
                last[owner[i], i] = avg[i]
            p.grad = torch.from_numpy(last[owner[i], i].astype(np.float32))
        o_ref.step()
    with Join([ddp, zero]):
        for step in range(counts[R]):
            zero.zero_grad()
            loss_of(ddp, step, R).backward()
            zero.step()
    close(params_np(ddp.module), params_np(ref), 2e-6, "ZeRO + DDP parameters after join")


run("more.zero_with_join", zero_with_join)
run("more.zero_sgd_momentum", zero_matches_unsharded, "sgd")
run("more.zero_adam", zero_matches_unsharded, "adam")
run("more.zero_add_param_group", zero_add_param_group)
C.report()
