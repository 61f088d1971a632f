"""tensorplug.compile: captured forward and backward tapes replay to exactly the eager results;
guards recompile, graph breaks fall back to eager, and the torch.compiler / torch._dynamo surface."""
import warnings

import numpy as np
import pytest

import tensorplug as torch
import tensorplug.nn as nn
import tensorplug.nn.functional as F
from tensorplug._dynamo.utils import counters


@pytest.fixture(autouse=True)
def _fresh():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def f64(t):
    return np.asarray(t.detach().numpy(), dtype=np.float64)


class TinyGPTBlock(nn.Module):
    """Embedding, LayerNorm, causal attention, GELU MLP, dropout, cross-entropy: the op families of a GPT."""

    def __init__(self, vocab=11, d=16, heads=2, p=0.0):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, d), nn.Embedding(8, d)
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
        self.drop = nn.Dropout(p)
        self.head = nn.Linear(d, vocab, bias=False)
        self.heads = heads

    def forward(self, idx, targets=None):
        b, t = idx.shape
        x = self.drop(self.wte(idx) + self.wpe(torch.arange(0, t, dtype=torch.long)))
        q, k, v = self.qkv(self.ln1(x)).split(x.shape[-1], dim=2)
        q, k, v = (z.view(b, t, self.heads, -1).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).contiguous().view(b, t, -1)
        x = x + self.proj(y)
        x = x + self.mlp(self.ln2(x))
        logits = self.head(x)
        loss = None if targets is None else F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1),
                                                            ignore_index=-1)
        return logits, loss


def _batch(seed, b=3, t=8, vocab=11):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, vocab, (b, t), generator=g), torch.randint(0, vocab, (b, t), generator=g)


def _train(model, steps, make_opt):
    opt = make_opt(model.parameters())
    losses, grads = [], []
    for i in range(steps):
        x, y = _batch(i)
        opt.zero_grad()
        _, loss = model(x, y)
        loss.backward()
        grads.append([f64(p.grad) for p in model.parameters()])
        opt.step()
        losses.append(loss.item())
    return losses, grads


@pytest.mark.parametrize("backend", ["inductor", "eager"])
def test_gpt_training_matches_eager_exactly(backend):
    """Five AdamW steps: the compiled model's losses and every gradient equal eager's bit for bit (the
    replay runs the same kernels on the same arrays); one capture, no graph break."""
    torch.manual_seed(0)
    eager = TinyGPTBlock()
    compiled_src = TinyGPTBlock()
    compiled_src.load_state_dict(eager.state_dict())
    adamw = lambda ps: torch.optim.AdamW(ps, lr=1e-2)  # noqa: E731
    le, ge = _train(eager, 5, adamw)
    lc, gc = _train(torch.compile(compiled_src, backend=backend), 5, adamw)
    assert le == lc
    for a, b in zip(ge, gc):
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y)
    assert counters["stats"]["captures"] == 1 and counters["stats"]["unique_graphs"] == 1
    assert not counters["graph_break"]


def test_backward_against_finite_differences():
    """The replayed backward tape (third call) against central differences of the eager function."""
    torch.manual_seed(1)
    lin = nn.Linear(4, 3).double()
    fn = torch.compile(lambda x: (lin(x).tanh() * x[:, :3]).sum())
    x0 = np.random.default_rng(0).standard_normal((2, 4))
    for _ in range(3):
        x = torch.tensor(x0, requires_grad=True)
        fn(x).backward()
    eps, num = 1e-6, np.zeros_like(x0)
    for i in np.ndindex(*x0.shape):
        d = np.zeros_like(x0)
        d[i] = eps
        num[i] = ((lin(torch.tensor(x0 + d)).tanh() * torch.tensor(x0 + d)[:, :3]).sum().item()
                  - (lin(torch.tensor(x0 - d)).tanh() * torch.tensor(x0 - d)[:, :3]).sum().item()) / (2 * eps)
    np.testing.assert_allclose(f64(x.grad), num, rtol=1e-6, atol=1e-8)


def test_new_shapes_recompile_and_the_cache_limit_warns(monkeypatch):
    monkeypatch.setattr(torch._dynamo.config, "cache_size_limit", 2)
    fn = torch.compile(lambda x: x * 2 + 1)
    for n in (3, 3, 4, 4):
        np.testing.assert_array_equal(f64(fn(torch.ones(n))), np.full(n, 3.0))
    assert counters["stats"]["captures"] == 2 and counters["stats"]["recompiles"] == 1
    with pytest.warns(UserWarning, match="cache_size_limit"):
        np.testing.assert_array_equal(f64(fn(torch.ones(5))), np.full(5, 3.0))
    assert counters["stats"]["cache_limit_eager_calls"] == 1


def test_dtype_training_flag_and_grad_mode_are_guards():
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(3, 3), nn.Dropout(0.5))
    c = torch.compile(m)
    x = torch.ones(4, 3)
    m.eval()
    np.testing.assert_array_equal(f64(c(x)), f64(m(x)))
    m.train()
    y = c(x)                                              # dropout on: some zeros, the rest doubled
    kept = f64(y) != 0
    np.testing.assert_allclose(f64(y)[kept], 2 * f64(m[0](x))[kept], rtol=1e-6)
    with torch.no_grad():
        assert not c(x).requires_grad
    c(x.double().float())
    assert counters["stats"]["captures"] == 3


def test_dropout_draws_new_masks_on_every_replay():
    torch.manual_seed(3)
    fn = torch.compile(lambda x: F.dropout(x, 0.5, training=True))
    masks = [f64(fn(torch.ones(400))) != 0 for _ in range(4)]
    assert all((a != b).any() for a, b in zip(masks, masks[1:]))
    assert all(0.3 < m.mean() < 0.7 for m in masks)
    torch.manual_seed(5)
    first = f64(fn(torch.ones(400)))
    torch.manual_seed(5)
    np.testing.assert_array_equal(f64(fn(torch.ones(400))), first)       # manual_seed is honoured


def test_item_in_forward_is_a_graph_break_that_runs_eagerly():
    def f(x):
        return x * x.sum().item()
    fn = torch.compile(f)
    for v in (1.0, 2.0):
        np.testing.assert_allclose(f64(fn(torch.full((3,), v))), np.full(3, v * 3 * v))
    reasons = dict(counters["graph_break"])
    assert len(reasons) == 1 and "read into Python" in next(iter(reasons))
    with pytest.raises(RuntimeError, match="fullgraph=True.*read into Python"):
        torch.compile(f, fullgraph=True)(torch.ones(2))


def test_value_checks_run_on_every_replay():
    """Index bounds are checked inside the replay too: an out-of-range token after capture is the
    eager IndexError, not a wrong row."""
    emb = nn.Embedding(5, 2)
    fn = torch.compile(emb)
    fn(torch.tensor([0, 4]))
    fn(torch.tensor([1, 3]))
    with pytest.raises(IndexError) as eager:
        emb(torch.tensor([1, 5]))
    with pytest.raises(IndexError) as compiled:
        fn(torch.tensor([1, 5]))
    assert str(compiled.value) == str(eager.value) == "index 5 is out of bounds for dimension 0 with size 5"
    loss = torch.compile(lambda a, t: F.cross_entropy(a, t))
    a = torch.zeros(2, 3)
    loss(a, torch.tensor([0, 1]))
    with pytest.raises(IndexError, match="Target 3 is out of bounds"):
        loss(a, torch.tensor([0, 3]))


def test_inplace_buffer_updates_happen_once_per_call():
    """BatchNorm's running statistics and num_batches_tracked move exactly as in eager, capture call included."""
    torch.manual_seed(0)
    a, b = nn.BatchNorm1d(3), nn.BatchNorm1d(3)
    c = torch.compile(b)
    for i in range(3):
        x = torch.randn(5, 3) + i
        np.testing.assert_allclose(f64(c(x)), f64(a(x)), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(f64(b.running_mean), f64(a.running_mean), rtol=1e-6)
    np.testing.assert_allclose(f64(b.running_var), f64(a.running_var), rtol=1e-6)
    assert b.num_batches_tracked.item() == a.num_batches_tracked.item() == 3


def test_double_backward_is_a_clear_error():
    fn = torch.compile(lambda x: (x ** 3).sum())
    for _ in range(2):
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        (g,) = torch.autograd.grad(fn(x), x, create_graph=False)
        np.testing.assert_allclose(f64(g), [3.0, 12.0])
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="does not currently support double backward"):
        torch.autograd.grad(fn(x), x, create_graph=True)


def test_arguments_inside_a_graph_get_gradients_through_the_compiled_part():
    w = torch.tensor([1.0, -2.0, 3.0], requires_grad=True)
    inner = torch.compile(lambda h: (h.sin() * h).sum())
    for _ in range(3):
        w.grad = None
        inner(w * 2).backward()
    h = 2 * np.array([1.0, -2.0, 3.0])
    np.testing.assert_allclose(f64(w.grad), 2 * (np.cos(h) * h + np.sin(h)), rtol=1e-6)


def test_global_tensors_are_guarded_by_identity():
    fn = torch.compile(_scale_by_global)
    globals()["SCALE"] = torch.tensor(2.0)
    assert fn(torch.ones(2)).tolist() == [2.0, 2.0]
    assert fn(torch.ones(2)).tolist() == [2.0, 2.0]
    globals()["SCALE"] = torch.tensor(5.0)                # rebound, not updated in place
    assert fn(torch.ones(2)).tolist() == [5.0, 5.0]
    SCALE.mul_(2)                                          # updated in place: read by the replay
    assert fn(torch.ones(2)).tolist() == [10.0, 10.0]


SCALE = None


def _scale_by_global(x):
    return x * SCALE


def test_optimized_module_and_module_compile():
    torch.manual_seed(0)
    m = nn.Linear(2, 2)
    om = torch.compile(m)
    assert om._orig_mod is m and om.weight is m.weight and om.in_features == 2
    assert list(om.state_dict()) == ["_orig_mod.weight", "_orig_mod.bias"]
    assert type(om).__name__ == "OptimizedModule" and "(_orig_mod): Linear" in repr(om)
    om.eval()
    assert not m.training
    m2 = nn.Linear(2, 2)
    m2.load_state_dict(m.state_dict())
    m2.compile()
    x = torch.randn(3, 2)
    for _ in range(2):
        np.testing.assert_array_equal(f64(m2(x)), f64(m(x)))
    assert list(m2.state_dict()) == ["weight", "bias"] and counters["stats"]["captures"] == 1


def test_compiler_markers_and_disable():
    seen = []

    @torch.compiler.disable
    def log(x):
        seen.append(torch.compiler.is_compiling())
        return x

    def f(x):
        seen.append(torch.compiler.is_compiling())
        return log(x) + 1
    fn = torch.compile(f)
    assert fn(torch.ones(1)).tolist() == [2.0] and fn(torch.ones(1)).tolist() == [2.0]
    assert seen[:2] == [True, True] and not torch.compiler.is_compiling()
    assert any("disable'd function" in r for r in counters["graph_break"])
    assert torch._dynamo.is_compiling is torch.compiler.is_compiling
    off = torch.compile(lambda x: x + 1, disable=True)
    assert off(torch.ones(1)).tolist() == [2.0] and not counters["stats"]["captures"] > 2


def test_decorator_forms_backends_and_errors():
    @torch.compile
    def a(x):
        return x.exp()

    @torch.compile(mode="reduce-overhead", dynamic=True)
    def b(x):
        return x.log()
    assert a(torch.zeros(1)).tolist() == [1.0] and b(torch.ones(1)).tolist() == [0.0]
    assert set(torch.compiler.list_backends()) >= {"inductor", "eager"}
    with pytest.raises(ValueError, match="unknown backend 'nope'"):
        torch.compile(a, backend="nope")
    with pytest.raises(RuntimeError, match="Unrecognized mode=fast"):
        torch.compile(a, mode="fast")


def test_explain_reports_graphs_and_breaks():
    out = torch._dynamo.explain(lambda x: x * 2)(torch.ones(3))
    assert out.graph_count == 1 and out.graph_break_count == 0 and out.op_count >= 1
    out = torch._dynamo.explain(lambda x: x * float(x.sum()))(torch.ones(3))
    assert out.graph_count == 0 and out.graph_break_count == 1 and "Break Reason 1" in str(out)


def test_torch_logs_graph_breaks(monkeypatch, capsys):
    monkeypatch.setenv("TORCH_LOGS", "graph_breaks")
    torch.compile(lambda x: x * x.max().item())(torch.ones(2))
    assert "[tensorplug.compile] graph_breaks:" in capsys.readouterr().err


def test_alias_paths():
    import importlib
    from tensorplug.compat import alias_torch
    alias_torch()
    assert importlib.import_module("torch._dynamo").reset is torch._dynamo.reset
    assert importlib.import_module("torch.compiler").disable is torch.compiler.disable
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert importlib.import_module("torch").compile is torch.compile


def test_parameters_of_modules_a_function_reads_get_their_gradients():
    """A train-step function reading a global model: its parameters are state (guarded, read, and
    given gradients); a leaf reached some other way (a list attribute) is a graph break, not a lost grad."""
    torch.manual_seed(0)
    globals()["MODEL"] = nn.Linear(3, 1)
    ref = nn.Linear(3, 1)
    ref.load_state_dict(MODEL.state_dict())
    fn = torch.compile(_global_model_loss)
    x = torch.randn(4, 3)
    for _ in range(3):
        MODEL.zero_grad()
        fn(x).backward()
    ref(x).pow(2).mean().backward()
    np.testing.assert_allclose(f64(MODEL.weight.grad), f64(ref.weight.grad), rtol=1e-6)
    hidden = _Holder([torch.ones(3, requires_grad=True)])
    g = torch.compile(lambda x: (x * hidden.ws[0]).sum())
    g(torch.ones(3)).backward()
    assert hidden.ws[0].grad.tolist() == [1.0, 1.0, 1.0]
    assert any("requires grad is reached" in r for r in counters["graph_break"])


MODEL = None


def _global_model_loss(x):
    return MODEL(x).pow(2).mean()


class _Holder:
    def __init__(self, ws):
        self.ws = ws


class _LastLoss(nn.Module):
    """Keeps its loss as an attribute, as llama2.c's Transformer does (self.last_loss)."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 2)
        self.last_loss = None

    def forward(self, x, y):
        logits = self.lin(x)
        self.last_loss = F.cross_entropy(logits, y)
        return logits


def test_tensors_the_forward_stores_on_its_module_are_set_on_every_replay():
    torch.manual_seed(0)
    eager, comp = _LastLoss(), _LastLoss()
    comp.load_state_dict(eager.state_dict())
    c = torch.compile(comp)
    for i in range(3):
        x, y = torch.randn(4, 3), torch.tensor([0, 1, 1, 0])
        logits = c(x, y)
        eager(x, y)
        assert c.last_loss.item() == eager.last_loss.item()
        for m in (eager, comp):
            m.zero_grad()
            m.last_loss.backward()
        np.testing.assert_array_equal(f64(comp.lin.weight.grad), f64(eager.lin.weight.grad))
        np.testing.assert_array_equal(f64(logits), f64(eager.lin(x)))
    assert counters["stats"]["captures"] == 1 and not counters["graph_break"]


def test_other_attributes_the_forward_sets_are_a_graph_break():
    class Counting(nn.Module):
        def __init__(self):
            super().__init__()
            self.calls = 0

        def forward(self, x):
            self.calls += 1
            return x * 2
    m = Counting()
    c = torch.compile(m)
    for _ in range(3):
        assert c(torch.ones(1)).tolist() == [2.0]
    assert m.calls == 3 and any("Counting.calls" in r for r in counters["graph_break"])
