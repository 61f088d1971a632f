"""nn.Module, Parameter and the containers: registration, naming, state_dict, modes, conversion,
hooks (forward pre/post, full backward), repr, copying."""
import copy
import pickle
from collections import OrderedDict

import numpy as np
import pytest

import tensorplug as torch
from tensorplug import nn


class Leaf(nn.Module):
    def __init__(self, n=3):
        super().__init__()
        self.w = nn.Parameter(torch.ones(n))
        self.register_buffer("running", torch.zeros(n))
        self.register_buffer("scratch", torch.zeros(1), persistent=False)

    def forward(self, x):
        return x * self.w + self.running


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 3)
        self.block = nn.Sequential(nn.Linear(3, 3), Leaf())
        self.scale = nn.Parameter(torch.tensor(2.0))
        self.register_buffer("steps", torch.tensor(0, dtype=torch.int64))

    def forward(self, x):
        return self.block(self.fc1(x)) * self.scale


# -- Parameter ------------------------------------------------------------------------------------
def test_parameter_basics():
    t = torch.randn(2, 3)
    p = nn.Parameter(t)
    assert isinstance(p, nn.Parameter) and isinstance(p, torch.Tensor)
    assert p.requires_grad and p.is_leaf
    with torch.no_grad():
        t.add_(1.0)                                     # shares data with t
    assert np.array_equal(p.detach().numpy(), t.numpy())
    assert not nn.Parameter(torch.zeros(2), requires_grad=False).requires_grad
    assert nn.Parameter().shape == (0,)
    assert repr(nn.Parameter(torch.zeros(2))) == "Parameter containing:\ntensor([0., 0.], requires_grad=True)"
    assert type(p * 2) is torch.Tensor and type(p.detach()) is torch.Tensor
    with pytest.raises(RuntimeError):
        nn.Parameter(torch.zeros(2, dtype=torch.int64))


def test_parameter_deepcopy_and_pickle():
    p = nn.Parameter(torch.randn(3))
    p.grad = torch.ones(3)
    q = copy.deepcopy(p)
    assert type(q) is nn.Parameter and q.requires_grad
    assert np.array_equal(q.detach().numpy(), p.detach().numpy())
    assert np.array_equal(q.grad.numpy(), np.ones(3))
    with torch.no_grad():
        q.mul_(0)
    assert p.detach().abs().sum().item() > 0           # independent storage
    r = pickle.loads(pickle.dumps(p))
    assert type(r) is nn.Parameter and r.requires_grad
    assert np.array_equal(r.detach().numpy(), p.detach().numpy())


# -- registration and naming -----------------------------------------------------------------------
def test_named_members_order_and_prefixes():
    net = Net()
    assert [n for n, _ in net.named_parameters()] == [
        "scale", "fc1.weight", "fc1.bias", "block.0.weight", "block.0.bias", "block.1.w"]
    assert [n for n, _ in net.named_buffers()] == ["steps", "block.1.running", "block.1.scratch"]
    assert [n for n, _ in net.named_modules()] == ["", "fc1", "block", "block.0", "block.1"]
    assert [n for n, _ in net.named_children()] == ["fc1", "block"]
    assert [n for n, _ in net.named_parameters(prefix="model")][:2] == ["model.scale", "model.fc1.weight"]
    assert [n for n, _ in net.named_parameters(recurse=False)] == ["scale"]
    assert len(list(net.parameters())) == 6
    assert len(list(net.buffers(recurse=False))) == 1
    assert list(net.children())[0] is net.fc1
    assert len(list(net.modules())) == 5


def test_shared_modules_and_parameters_deduplicated():
    lin = nn.Linear(2, 2)
    seq = nn.Sequential(lin, lin)
    assert [n for n, _ in seq.named_modules()] == ["", "0"]
    assert len(list(seq.parameters())) == 2
    assert len(list(seq.named_parameters(remove_duplicate=False))) == 4
    assert [n for n, _ in seq.named_modules(remove_duplicate=False)] == ["", "0", "1"]


def test_setattr_getattr_delattr():
    m = nn.Module()
    m.p = nn.Parameter(torch.zeros(2))
    m.sub = nn.Linear(1, 1)
    m.register_buffer("buf", torch.ones(1))
    m.plain = 3
    assert "p" in m._parameters and "sub" in m._modules and "buf" in m._buffers
    assert m.p is m._parameters["p"] and m.sub is m._modules["sub"]
    m.buf = torch.zeros(2)                              # still a buffer
    assert m._buffers["buf"].shape == (2,)
    with pytest.raises(TypeError, match="cannot assign"):
        m.p = torch.zeros(2)                            # a plain tensor can't replace a parameter
    m.p = None
    assert m._parameters["p"] is None and m.p is None
    del m.sub
    assert "sub" not in m._modules
    with pytest.raises(AttributeError, match="'Module' object has no attribute 'sub'"):
        m.sub
    m.x = nn.Parameter(torch.zeros(1))
    with pytest.raises(TypeError, match="as parameter 'x'"):
        m.x = nn.Linear(1, 1)                          # as PyTorch: a parameter slot takes Parameters only
    m.y = nn.Linear(1, 1)
    m.y = nn.Parameter(torch.zeros(1))                 # a Parameter replaces a module
    assert "y" in m._parameters and "y" not in m._modules
    assert {"p", "buf", "x", "plain"} <= set(dir(m))


def test_registration_errors():
    m = nn.Module()
    m.a = 1
    with pytest.raises(KeyError, match="already exists"):
        m.register_parameter("a", nn.Parameter(torch.zeros(1)))
    with pytest.raises(KeyError, match="contain"):
        m.register_buffer("a.b", torch.zeros(1))
    with pytest.raises(KeyError, match="empty string"):
        m.register_parameter("", None)
    with pytest.raises(TypeError, match="parameter name should be a string"):
        m.register_parameter(1, None)
    with pytest.raises(TypeError, match="cannot assign"):
        m.register_parameter("q", torch.zeros(1))
    with pytest.raises(TypeError, match="cannot assign"):
        m.register_buffer("q", 3)
    with pytest.raises(TypeError, match="is not a Module subclass"):
        m.add_module("q", 3)
    x = torch.zeros(1, requires_grad=True) * 2
    with pytest.raises(ValueError, match="non-leaf"):
        m.register_parameter("q", _nonleaf_param(x))

    class Early(nn.Module):
        def __init__(self):
            self.p = nn.Parameter(torch.zeros(1))
    with pytest.raises(AttributeError, match="before Module.__init__"):
        Early()


def _nonleaf_param(x):
    p = nn.Parameter(torch.zeros(1))
    p.grad_fn = x.grad_fn
    return p


def test_get_submodule_parameter_buffer():
    net = Net()
    assert net.get_submodule("block.0") is net.block[0]
    assert net.get_submodule("") is net
    assert net.get_parameter("block.1.w") is net.block[1].w
    assert net.get_buffer("block.1.running") is net.block[1].running
    with pytest.raises(AttributeError, match="has no attribute `nope`"):
        net.get_submodule("block.nope")
    with pytest.raises(AttributeError, match="is not an nn.Parameter"):
        net.get_parameter("block.1.running")


def test_buffer_class_marks_buffer():
    m = nn.Module()
    m.stats = nn.Buffer(torch.zeros(2), persistent=False)
    assert "stats" in m._buffers and type(m.stats) is torch.Tensor
    assert "stats" not in m.state_dict()


# -- state_dict -----------------------------------------------------------------------------------
def test_state_dict_contents():
    net = Net()
    sd = net.state_dict()
    assert isinstance(sd, OrderedDict)
    assert list(sd.keys()) == ["scale", "steps", "fc1.weight", "fc1.bias", "block.0.weight", "block.0.bias",
                               "block.1.w", "block.1.running"]
    assert "block.1.scratch" not in sd                  # non-persistent buffer
    assert not sd["fc1.weight"].requires_grad and sd["fc1.weight"].grad_fn is None
    assert type(sd["fc1.weight"]) is torch.Tensor
    assert net.state_dict(keep_vars=True)["fc1.weight"] is net.fc1.weight
    assert list(net.fc1.state_dict(prefix="x.").keys()) == ["x.weight", "x.bias"]
    with torch.no_grad():                               # detached values share storage
        sd["scale"].fill_(5.0)
    assert net.scale.item() == 5.0


def test_state_dict_round_trip():
    torch.manual_seed(0)
    a, b = Net(), Net()
    with torch.no_grad():
        a.block[1].running.add_(3.0)
        a.steps.fill_(7)
    res = b.load_state_dict(a.state_dict())
    assert res.missing_keys == [] and res.unexpected_keys == []
    assert repr(res) == "<All keys matched successfully>"
    for (n1, t1), (n2, t2) in zip(a.state_dict().items(), b.state_dict().items()):
        assert n1 == n2 and np.array_equal(t1.numpy(), t2.numpy())
    assert isinstance(b.fc1.weight, nn.Parameter) and b.fc1.weight.requires_grad
    x = torch.randn(2, 4)
    assert np.allclose(a(x).detach().numpy(), b(x).detach().numpy())


def test_load_state_dict_strict_errors():
    lin = nn.Linear(2, 3)
    with pytest.raises(RuntimeError) as e:
        lin.load_state_dict({"bias": torch.zeros(3)})
    assert str(e.value) == 'Error(s) in loading state_dict for Linear:\n\tMissing key(s) in state_dict: "weight". '
    with pytest.raises(RuntimeError) as e:
        lin.load_state_dict({"weight": torch.zeros(2, 2), "bias": torch.zeros(3), "x": torch.zeros(1)})
    assert str(e.value) == (
        'Error(s) in loading state_dict for Linear:\n\tUnexpected key(s) in state_dict: "x". \n\t'
        "size mismatch for weight: copying a param with shape tensorplug.Size([2, 2]) from checkpoint, "
        "the shape in current model is tensorplug.Size([3, 2]).")
    seq = nn.Sequential(nn.Linear(2, 2))
    with pytest.raises(RuntimeError, match=r'Unexpected key\(s\) in state_dict: "foo", "0.extra"'):
        sd = seq.state_dict()
        sd["0.extra"] = torch.zeros(1)
        sd["foo"] = torch.zeros(1)
        seq.load_state_dict(sd)
    with pytest.raises(TypeError, match="dict-like"):
        lin.load_state_dict([1, 2])


def test_load_state_dict_non_strict():
    lin = nn.Linear(2, 3)
    w = torch.randn(3, 2)
    res = lin.load_state_dict({"weight": w, "y": torch.zeros(2)}, strict=False)
    assert res.missing_keys == ["bias"] and res.unexpected_keys == ["y"]
    assert res == (["bias"], ["y"])
    assert np.array_equal(lin.weight.detach().numpy(), w.numpy())
    with pytest.raises(RuntimeError, match="size mismatch for bias"):
        lin.load_state_dict({"bias": torch.zeros(4)}, strict=False)   # shapes are checked anyway


def test_load_state_dict_converts_dtype_and_keeps_objects():
    lin = nn.Linear(2, 2)
    w_obj = lin.weight
    lin.load_state_dict({"weight": torch.ones(2, 2, dtype=torch.float64), "bias": torch.zeros(2)})
    assert lin.weight is w_obj and lin.weight.dtype == torch.float32
    assert lin.weight.sum().item() == 4.0


def test_non_persistent_buffer_not_loaded_or_required():
    leaf = Leaf()
    sd = leaf.state_dict()
    assert set(sd) == {"w", "running"}
    leaf.load_state_dict(sd)                            # no missing 'scratch'
    sd["scratch"] = torch.zeros(1)
    with pytest.raises(RuntimeError, match='Unexpected key.*"scratch"'):
        leaf.load_state_dict(sd)


def test_extra_state():
    class WithExtra(nn.Module):
        def __init__(self):
            super().__init__()
            self.value = 1

        def get_extra_state(self):
            return {"value": self.value}

        def set_extra_state(self, state):
            self.value = state["value"]
    a, b = WithExtra(), WithExtra()
    a.value = 42
    b.load_state_dict(a.state_dict())
    assert b.value == 42


# -- modes, grads, apply --------------------------------------------------------------------------
def test_train_eval_propagate():
    net = Net()
    assert all(m.training for m in net.modules())
    assert net.eval() is net
    assert not any(m.training for m in net.modules())
    net.train()
    assert all(m.training for m in net.modules())
    net.block.train(False)
    assert net.training and not net.block[0].training
    with pytest.raises(ValueError, match="boolean"):
        net.train("yes")


def test_zero_grad_and_requires_grad_():
    net = Net()
    net(torch.randn(2, 4)).sum().backward()
    assert all(p.grad is not None for p in net.parameters())
    net.zero_grad(set_to_none=False)
    assert all(p.grad is not None and p.grad.abs().sum().item() == 0 for p in net.parameters())
    net.zero_grad()
    assert all(p.grad is None for p in net.parameters())
    net.requires_grad_(False)
    assert not any(p.requires_grad for p in net.parameters())
    assert net.requires_grad_() is net and all(p.requires_grad for p in net.parameters())


def test_apply_visits_children_first():
    net = Net()
    seen = []
    assert net.apply(lambda m: seen.append(type(m).__name__)) is net
    assert seen == ["Linear", "Linear", "Leaf", "Sequential", "Net"]

    def init_linear(m):
        if isinstance(m, nn.Linear):
            nn.init.zeros_(m.weight)
    net.apply(init_linear)
    assert net.fc1.weight.abs().sum().item() == 0


def test_to_dtype_converts_in_place():
    net = Net()
    w = net.fc1.weight
    net(torch.randn(2, 4)).sum().backward()
    assert net.to(torch.float64) is net
    assert net.fc1.weight is w                          # same Parameter object
    assert w.dtype == torch.float64 and w.grad.dtype == torch.float64
    assert isinstance(w, nn.Parameter) and w.requires_grad
    assert net.block[1].running.dtype == torch.float64
    assert net.steps.dtype == torch.int64               # integer buffers keep their dtype
    out = net(torch.randn(2, 4, dtype=torch.float64))
    assert out.dtype == torch.float64
    net.float()
    assert w.dtype == torch.float32
    net.double()
    assert w.dtype == torch.float64
    net.to(torch.zeros(1, dtype=torch.float32))
    assert w.dtype == torch.float32
    net.to("cpu")
    net.cpu()
    assert w.device.type == "cpu"
    with pytest.raises(TypeError, match="floating point"):
        net.to(torch.int64)


def test_to_keeps_training_working():
    lin = nn.Linear(3, 1).double()
    x = torch.randn(5, 3, dtype=torch.float64)
    lin(x).sum().backward()
    expected = x.sum(0).numpy()
    assert np.allclose(lin.weight.grad.numpy()[0], expected)


# -- hooks ----------------------------------------------------------------------------------------
def test_forward_pre_hook_and_forward_hook_order_and_replacement():
    lin = nn.Linear(2, 2)
    calls = []

    def pre1(m, args):
        calls.append(("pre1", m, len(args)))
        return (args[0] * 0,)                           # replace the input

    def pre2(m, args):
        calls.append(("pre2", args[0].abs().sum().item()))   # sees pre1's input

    def post1(m, args, out):
        calls.append(("post1", args[0].abs().sum().item()))
        return out + 1                                  # replace the output

    def post2(m, args, out):
        calls.append(("post2", out))

    h1 = lin.register_forward_pre_hook(pre1)
    lin.register_forward_pre_hook(pre2)
    lin.register_forward_hook(post1)
    lin.register_forward_hook(post2)
    x = torch.ones(3, 2)
    y = lin(x)
    expected = lin.bias.detach().numpy() + 1
    assert np.allclose(y.detach().numpy(), np.tile(expected, (3, 1)))
    assert [c[0] for c in calls] == ["pre1", "pre2", "post1", "post2"]
    assert calls[0][1] is lin and calls[1][1] == 0.0 and calls[2][1] == 0.0
    assert calls[3][1] is y
    h1.remove()
    calls.clear()
    y = lin(x)
    assert calls[0] == ("pre2", 6.0)
    h1.remove()                                         # removing twice is harmless


def test_pre_hook_non_tuple_return_and_kwargs_hooks():
    lin = nn.Linear(2, 2)
    lin.register_forward_pre_hook(lambda m, a: a[0] * 2)
    x = torch.ones(1, 2)
    assert np.allclose(lin(x).detach().numpy(), (lin.weight.detach().numpy() @ [2, 2]) + lin.bias.detach().numpy())

    class KW(nn.Module):
        def forward(self, x, *, scale=1.0):
            return x * scale
    m = KW()
    m.register_forward_pre_hook(lambda mod, args, kwargs: (args, {"scale": 3.0}), with_kwargs=True)
    seen = {}

    def post(mod, args, kwargs, out):
        seen["kwargs"] = kwargs
        return out + 1
    m.register_forward_hook(post, with_kwargs=True)
    assert m(torch.tensor([1.0]), scale=2.0).item() == 4.0
    assert seen["kwargs"] == {"scale": 3.0}


def test_prepend_hooks_and_context_manager():
    m = nn.Identity()
    order = []
    m.register_forward_hook(lambda *a: order.append("a"))
    m.register_forward_hook(lambda *a: order.append("b"), prepend=True)
    with m.register_forward_hook(lambda *a: order.append("c")):
        m(torch.zeros(1))
    m(torch.zeros(1))
    assert order == ["b", "a", "c", "b", "a"]


def test_full_backward_hook_values():
    torch.manual_seed(1)
    lin = nn.Linear(3, 2).double()
    records = []

    def hook(m, grad_input, grad_output):
        records.append((m, grad_input, grad_output))
    lin.register_full_backward_hook(hook)
    x = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)
    gy = torch.randn(4, 2, dtype=torch.float64)
    y = lin(x)
    y.backward(gy)
    assert len(records) == 1
    m, gi, go = records[0]
    assert m is lin and len(gi) == 1 and len(go) == 1
    W = lin.weight.detach().numpy()
    assert np.allclose(go[0].numpy(), gy.numpy())
    assert np.allclose(gi[0].numpy(), gy.numpy() @ W)       # d(x W^T)/dx applied to gy
    assert np.allclose(x.grad.numpy(), gy.numpy() @ W)
    assert np.allclose(lin.weight.grad.numpy(), gy.numpy().T @ x.detach().numpy())


def test_full_backward_hook_replaces_grad_input_and_multiple_inputs():
    bil = nn.Bilinear(2, 3, 1).double()
    x1 = torch.randn(5, 2, dtype=torch.float64, requires_grad=True)
    x2 = torch.randn(5, 3, dtype=torch.float64)              # needs no grad
    seen = []

    def hook(m, gi, go):
        seen.append(gi)
        return (gi[0] * 10, None)
    bil.register_full_backward_hook(hook)
    bil(x1, x2).sum().backward()
    gi = seen[0]
    assert len(gi) == 2 and gi[1] is None
    A = bil.weight.detach().numpy()[0]
    manual = (A @ x2.numpy().T).T                            # d/dx1 of x1^T A x2
    assert np.allclose(gi[0].numpy(), manual)
    assert np.allclose(x1.grad.numpy(), 10 * manual)


def test_full_backward_hook_no_input_grad_and_pre_hook():
    lin = nn.Linear(2, 2)
    seen = []
    lin.register_full_backward_pre_hook(lambda m, go: (go[0] * 0,))
    lin.register_full_backward_hook(lambda m, gi, go: seen.append((gi, go)))
    lin(torch.ones(1, 2)).sum().backward()                   # input does not require grad
    gi, go = seen[0]
    assert gi == (None,)
    assert go[0].abs().sum().item() == 0
    assert lin.weight.grad.abs().sum().item() == 0           # the pre-hook zeroed grad_output


def test_full_backward_hook_in_sequential_order():
    seq = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2))
    order = []
    seq[0].register_full_backward_hook(lambda m, gi, go: order.append(0))
    seq[1].register_full_backward_hook(lambda m, gi, go: order.append(1))
    seq(torch.randn(3, 2, requires_grad=True)).sum().backward()
    assert order == [1, 0]


def test_global_forward_hook():
    from tensorplug.nn.modules.module import register_module_forward_hook
    names = []
    h = register_module_forward_hook(lambda m, i, o: names.append(type(m).__name__))
    try:
        nn.Sequential(nn.Linear(1, 1), nn.Identity())(torch.ones(1, 1))
    finally:
        h.remove()
    assert names == ["Linear", "Identity", "Sequential"]


# -- repr, copying --------------------------------------------------------------------------------
def test_repr_nested():
    net = nn.Sequential(OrderedDict([("fc", nn.Linear(2, 3)), ("inner", nn.Sequential(nn.Linear(3, 1, bias=False))),
                                     ("out", nn.Identity())]))
    assert repr(net) == (
        "Sequential(\n"
        "  (fc): Linear(in_features=2, out_features=3, bias=True)\n"
        "  (inner): Sequential(\n"
        "    (0): Linear(in_features=3, out_features=1, bias=False)\n"
        "  )\n"
        "  (out): Identity()\n"
        ")")

    class WithExtra(nn.Module):
        def __init__(self):
            super().__init__()
            self.child = nn.Identity()

        def extra_repr(self):
            return "k=1"
    assert repr(WithExtra()) == "WithExtra(\n  k=1\n  (child): Identity()\n)"
    assert repr(nn.Module()) == "Module()"
    assert repr(nn.ModuleList([nn.Linear(2, 2) for _ in range(3)] + [nn.Identity()])) == (
        "ModuleList(\n  (0-2): 3 x Linear(in_features=2, out_features=2, bias=True)\n  (3): Identity()\n)")


def test_deepcopy_module():
    net = Net()
    hook_calls = []
    net.register_forward_hook(lambda m, i, o: hook_calls.append(1))
    clone = copy.deepcopy(net)
    assert clone.fc1.weight is not net.fc1.weight
    assert isinstance(clone.fc1.weight, nn.Parameter)
    for (n1, t1), (n2, t2) in zip(net.state_dict().items(), clone.state_dict().items()):
        assert n1 == n2 and np.array_equal(t1.numpy(), t2.numpy())
    with torch.no_grad():
        clone.fc1.weight.zero_()
    assert net.fc1.weight.abs().sum().item() > 0
    x = torch.randn(1, 4)
    clone(x)
    assert hook_calls == [1]
    shared = nn.Linear(1, 1)
    seq = nn.Sequential(shared, shared)
    seq2 = copy.deepcopy(seq)
    assert seq2[0] is seq2[1]                            # sharing preserved


def test_pickle_module():
    net = Net()
    net2 = pickle.loads(pickle.dumps(net))
    x = torch.randn(2, 4)
    assert np.allclose(net(x).detach().numpy(), net2(x).detach().numpy())


def test_forward_missing():
    with pytest.raises(NotImplementedError, match="forward"):
        nn.Module()(torch.zeros(1))


# -- containers -------------------------------------------------------------------------------------
def test_sequential():
    a, b, c = nn.Linear(2, 3), nn.Identity(), nn.Linear(3, 1)
    seq = nn.Sequential(a, b, c)
    assert len(seq) == 3 and seq[0] is a and seq[-1] is c
    assert list(seq) == [a, b, c]
    sub = seq[1:]
    assert isinstance(sub, nn.Sequential) and list(sub) == [b, c]
    assert [n for n, _ in sub.named_children()] == ["1", "2"]
    x = torch.randn(4, 2)
    assert np.allclose(seq(x).detach().numpy(), c(a(x)).detach().numpy())
    d = nn.Identity()
    seq.append(d)
    assert seq[3] is d
    del seq[1]
    assert [n for n, _ in seq.named_children()] == ["0", "1", "2"] and seq[1] is c
    seq[0] = nn.Identity()
    assert isinstance(seq[0], nn.Identity)
    with pytest.raises(IndexError, match="out of range"):
        seq[5]
    named = nn.Sequential(OrderedDict([("enc", a), ("dec", c)]))
    assert named.enc is a and named[1] is c
    seq.insert(0, a)
    assert seq[0] is a and len(seq) == 4
    seq.extend([nn.Identity()])
    assert len(seq) == 5


def test_module_list():
    ml = nn.ModuleList([nn.Linear(1, 1) for _ in range(2)])
    ml.append(nn.Identity())
    ml.extend([nn.Identity(), nn.Identity()])
    assert len(ml) == 5
    new = nn.Linear(2, 2)
    ml.insert(1, new)
    assert ml[1] is new and len(ml) == 6
    assert ml.index(new) == 1
    assert len(list(ml.parameters())) == 6
    assert isinstance(ml[1:3], nn.ModuleList) and len(ml[1:3]) == 2
    del ml[0]
    assert ml[0] is new and [n for n, _ in ml.named_children()] == [str(i) for i in range(5)]
    assert ml[-1] is list(ml)[-1]
    with pytest.raises(TypeError, match="iterable"):
        ml.extend(3)
    with pytest.raises(IndexError):
        ml[10]


def test_module_dict():
    md = nn.ModuleDict({"a": nn.Linear(1, 2), "b": nn.Identity()})
    assert list(md.keys()) == ["a", "b"] and "a" in md and len(md) == 2
    md["c"] = nn.Linear(2, 2)
    assert [k for k, _ in md.items()] == ["a", "b", "c"]
    assert md.pop("b").__class__ is nn.Identity and list(md) == ["a", "c"]
    md.update([("d", nn.Identity())])
    assert list(md) == ["a", "c", "d"]
    assert [n for n, _ in md.named_parameters()] == ["a.weight", "a.bias", "c.weight", "c.bias"]
    md.clear()
    assert len(md) == 0


def test_parameter_list_and_dict():
    pl = nn.ParameterList([nn.Parameter(torch.zeros(2, 3)), torch.ones(2)])
    assert len(pl) == 2 and all(isinstance(p, nn.Parameter) for p in pl)
    pl.append(nn.Parameter(torch.zeros(1)))
    assert [n for n, _ in pl.named_parameters()] == ["0", "1", "2"]
    assert pl[-1].shape == (1,)
    assert repr(nn.ParameterList([nn.Parameter(torch.zeros(2, 3))])) == (
        "ParameterList(  (0): Parameter containing: [tensorplug.float32 of size 2x3])")
    pd = nn.ParameterDict({"b": torch.zeros(1), "a": nn.Parameter(torch.ones(2))})
    assert list(pd.keys()) == ["a", "b"]                 # a plain dict is sorted (as PyTorch)
    assert isinstance(pd["b"], nn.Parameter)
    pd["c"] = nn.Parameter(torch.zeros(3))
    assert [n for n, _ in pd.named_parameters()] == ["a", "b", "c"]
    assert pd.pop("a").shape == (2,) and "a" not in pd
    m = nn.Module()
    m.plist = pl
    assert [n for n, _ in m.named_parameters()] == ["plist.0", "plist.1", "plist.2"]
    sd = m.state_dict()
    assert list(sd) == ["plist.0", "plist.1", "plist.2"]
