"""The Optimizer base: construction and validation, parameter groups, zero_grad, in-place
updates without autograd history, closures, hooks, and state dicts that resume identically."""
import copy
import warnings

import numpy as np
import pytest

import tensorplug as torch
import tensorplug.optim as optim

ALL = [
    (optim.SGD, dict(lr=0.1)),
    (optim.SGD, dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01)),
    (optim.Adam, dict(lr=0.05, amsgrad=True)),
    (optim.AdamW, dict(lr=0.05)),
    (optim.RMSprop, dict(lr=0.01, centered=True, momentum=0.5)),
    (optim.Adagrad, dict(lr=0.1, lr_decay=0.01)),
    (optim.Adadelta, dict()),
    (optim.Adamax, dict(lr=0.05)),
]
IDS = [f"{c.__name__}-{i}" for i, (c, _) in enumerate(ALL)]


def _params(seed=0, dtype=torch.float64):
    rng = np.random.default_rng(seed)
    return [torch.tensor(rng.uniform(-1, 1, (3, 2)), dtype=dtype, requires_grad=True),
            torch.tensor(rng.uniform(-1, 1, (4,)), dtype=dtype, requires_grad=True)]


def _set_grads(params, step):
    """A deterministic gradient that depends on the parameter (so state matters)."""
    for i, p in enumerate(params):
        x = p.detach().numpy()
        p.grad = torch.tensor(x ** 3 + (i + 1) * x + np.cos(step + x), dtype=p.dtype)


def _train(opt, params, start, stop):
    for step in range(start, stop):
        opt.zero_grad()
        _set_grads(params, step)
        opt.step()


def _values(params):
    return [p.detach().numpy().copy() for p in params]


# -- construction -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("cls", [optim.SGD, optim.Adam, optim.AdamW, optim.RMSprop, optim.Adagrad,
                                 optim.Adadelta, optim.Adamax, optim.LBFGS])
def test_negative_learning_rate_is_rejected(cls):
    with pytest.raises(ValueError, match="Invalid learning rate: -1"):
        cls(_params(), lr=-1)


@pytest.mark.parametrize("cls, kw, msg", [
    (optim.SGD, dict(lr=0.1, momentum=-0.5), "Invalid momentum value"),
    (optim.SGD, dict(lr=0.1, weight_decay=-1), "Invalid weight_decay value"),
    (optim.SGD, dict(lr=0.1, nesterov=True), "Nesterov momentum requires a momentum and zero dampening"),
    (optim.SGD, dict(lr=0.1, momentum=0.9, dampening=0.1, nesterov=True), "Nesterov"),
    (optim.Adam, dict(betas=(1.0, 0.999)), "Invalid beta parameter at index 0"),
    (optim.Adam, dict(betas=(0.9, -0.1)), "Invalid beta parameter at index 1"),
    (optim.Adam, dict(eps=-1e-8), "Invalid epsilon value"),
    (optim.AdamW, dict(weight_decay=-0.1), "Invalid weight_decay value"),
    (optim.RMSprop, dict(alpha=-0.1), "Invalid alpha value"),
    (optim.RMSprop, dict(momentum=-0.1), "Invalid momentum value"),
    (optim.Adagrad, dict(lr_decay=-0.1), "Invalid lr_decay value"),
    (optim.Adagrad, dict(initial_accumulator_value=-1), "Invalid initial_accumulator_value"),
    (optim.Adadelta, dict(rho=1.5), "Invalid rho value"),
    (optim.Adamax, dict(betas=(0.9, 1.0)), "Invalid beta parameter at index 1"),
])
def test_invalid_hyper_parameters_are_rejected(cls, kw, msg):
    with pytest.raises(ValueError, match=msg):
        cls(_params(), **kw)


def test_params_argument_validation():
    p = torch.zeros(2, requires_grad=True)
    with pytest.raises(ValueError, match="empty parameter list"):
        optim.SGD([], lr=0.1)
    with pytest.raises(TypeError, match="iterable of Tensors or dicts"):
        optim.SGD(p, lr=0.1)
    with pytest.raises(TypeError, match="ordered collections"):
        optim.SGD([{"params": {p}}], lr=0.1)
    with pytest.raises(TypeError, match="can only optimize Tensors"):
        optim.SGD([p, 1.0], lr=0.1)
    with pytest.raises(ValueError, match="non-leaf"):
        optim.SGD([p * 2], lr=0.1)
    with pytest.raises(ValueError, match="more than one parameter group"):
        optim.SGD([{"params": [p]}, {"params": [p]}], lr=0.1)
    with pytest.warns(UserWarning, match="duplicate parameters"):
        optim.SGD([p, p], lr=0.1)
    # a generator works (like model.parameters())
    opt = optim.SGD((q for q in [p]), lr=0.1)
    assert opt.param_groups[0]["params"] == [p] or opt.param_groups[0]["params"][0] is p


def test_defaults_and_param_groups():
    a, b = _params()
    opt = optim.SGD([{"params": [a]}, {"params": b, "lr": 0.5, "momentum": 0.1}], lr=0.1, momentum=0.9)
    assert opt.defaults["lr"] == 0.1 and opt.defaults["momentum"] == 0.9
    g0, g1 = opt.param_groups
    assert g0["params"][0] is a and g1["params"][0] is b      # a single tensor becomes a list
    assert (g0["lr"], g0["momentum"]) == (0.1, 0.9)
    assert (g1["lr"], g1["momentum"], g1["nesterov"], g1["dampening"]) == (0.5, 0.1, False, 0)
    text = repr(opt)
    assert text.startswith("SGD (") and "Parameter Group 1" in text and "lr: 0.5" in text


def test_named_parameters_are_accepted():
    a, b = _params()
    opt = optim.Adam([("w", a), ("b", b)], lr=0.1)
    assert opt.param_groups[0]["param_names"] == ["w", "b"]
    assert opt.param_groups[0]["params"][0] is a
    assert opt.state_dict()["param_groups"][0]["param_names"] == ["w", "b"]


def test_param_groups_with_different_learning_rates():
    """Each group follows its own lr: group 1 with lr 0 never moves, group 0 moves by lr * grad."""
    a, b, c = torch.ones(2, requires_grad=True), torch.ones(3, requires_grad=True), torch.ones(1, requires_grad=True)
    opt = optim.SGD([{"params": [a]}, {"params": [b], "lr": 0.0}, {"params": [c], "lr": 1.0}], lr=0.25)
    for t in (a, b, c):
        t.grad = torch.full(tuple(t.shape), 2.0)
    opt.step()
    assert a.tolist() == [0.5, 0.5] and b.tolist() == [1.0, 1.0, 1.0] and c.tolist() == [-1.0]
    # changing a group's lr takes effect at the next step
    opt.param_groups[1]["lr"] = 0.5
    opt.step()
    assert b.tolist() == [0.0, 0.0, 0.0]


def test_add_param_group():
    a, b = _params()
    opt = optim.Adam([a], lr=0.1, betas=(0.8, 0.9))
    _train(opt, [a], 0, 2)
    opt.add_param_group({"params": [b], "lr": 0.01})
    g = opt.param_groups[1]
    assert g["lr"] == 0.01 and g["betas"] == (0.8, 0.9) and g["eps"] == 1e-8 and g["amsgrad"] is False
    # the new parameter starts from step 1 with its own lr: same as a fresh optimizer on it alone
    b_ref = b.detach().clone().requires_grad_(True)
    ref = optim.Adam([b_ref], lr=0.01, betas=(0.8, 0.9))
    for step in range(2, 5):
        opt.zero_grad()
        _set_grads([a, b], step)
        b_ref.grad = b.grad.clone()
        opt.step()
        ref.step()
    np.testing.assert_array_equal(b.detach().numpy(), b_ref.detach().numpy())
    assert float(opt.state[b]["step"]) == 3 and float(opt.state[a]["step"]) == 5
    with pytest.raises(ValueError, match="more than one parameter group"):
        opt.add_param_group({"params": [a]})
    with pytest.raises(TypeError, match="param_group must be a dict"):
        opt.add_param_group([b])


def test_adagrad_accumulators_exist_before_the_first_step_and_for_added_groups():
    a, b = _params()
    opt = optim.Adagrad([a], lr=0.1, initial_accumulator_value=0.25)
    np.testing.assert_array_equal(opt.state[a]["sum"].numpy(), np.full((3, 2), 0.25))
    assert float(opt.state[a]["step"]) == 0
    opt.add_param_group({"params": [b]})
    _train(opt, [a, b], 0, 2)
    assert float(opt.state[b]["step"]) == 2


# -- gradients and the update itself ----------------------------------------------------------------------
def test_zero_grad_set_to_none_and_to_zero():
    a, b = _params()
    opt = optim.SGD([a, b], lr=0.1)
    _set_grads([a, b], 0)
    opt.zero_grad()                       # default: set_to_none=True
    assert a.grad is None and b.grad is None
    _set_grads([a, b], 0)
    ga = a.grad
    v0 = ga._version
    opt.zero_grad(set_to_none=False)
    assert a.grad is ga                   # the same tensor, zeroed in place
    assert np.all(ga.numpy() == 0) and ga._version > v0
    assert not ga.requires_grad
    opt.zero_grad(set_to_none=False)      # works again (and with grads of None)
    b.grad = None
    opt.zero_grad(set_to_none=False)
    assert b.grad is None


@pytest.mark.parametrize("cls, kw", ALL, ids=IDS)
def test_updates_are_in_place_and_record_no_history(cls, kw):
    params = _params(dtype=torch.float32)
    datas = [p._data for p in params]
    versions = [p._version for p in params]
    opt = cls(params, **kw)
    for step in range(3):
        opt.zero_grad()
        _set_grads(params, step)
        assert torch.is_grad_enabled()
        opt.step()
        assert torch.is_grad_enabled()          # grad mode restored
        for p, d, v in zip(params, datas, versions):
            assert p._data is d                 # same storage, written in place
            assert p.is_leaf and p.grad_fn is None and p.requires_grad
            assert p._version >= v + step + 1   # the version counter moved
    for p in params:
        for value in opt.state[p].values():
            if isinstance(value, torch.Tensor):
                assert value.grad_fn is None and not value.requires_grad
    # the parameters are still usable as leaves in a new graph
    loss = sum((p * p).sum() for p in params)
    loss.backward()
    assert all(p.grad is not None for p in params)


def test_views_of_a_parameter_see_the_update():
    p = torch.ones(4, requires_grad=True)
    view = p.detach()[1:3]
    opt = optim.SGD([p], lr=0.5)
    p.grad = torch.ones(4)
    opt.step()
    assert view.tolist() == [0.5, 0.5]


@pytest.mark.parametrize("cls, kw", ALL, ids=IDS)
def test_parameters_without_grad_are_skipped(cls, kw):
    a, b = _params()
    before = b.detach().numpy().copy()
    opt = cls([a, b], **kw)
    state_b = dict(opt.state.get(b, {}))
    for step in range(2):
        opt.zero_grad()
        _set_grads([a], step)
        opt.step()
    np.testing.assert_array_equal(b.detach().numpy(), before)
    if cls is optim.Adagrad:
        assert float(opt.state[b]["step"]) == 0
    else:
        assert dict(opt.state.get(b, {})) == state_b == {}


def test_sgd_without_momentum_keeps_no_state():
    a, b = _params()
    opt = optim.SGD([a, b], lr=0.1)
    _train(opt, [a, b], 0, 3)
    assert opt.state_dict()["state"] == {}


def test_step_returns_closure_loss_and_runs_it_with_grad_enabled():
    p = torch.tensor([1.0, 2.0], requires_grad=True)
    opt = optim.SGD([p], lr=0.1)
    seen = []

    def closure():
        seen.append(torch.is_grad_enabled())
        opt.zero_grad()
        loss = (p * p).sum()
        loss.backward()
        return loss

    with torch.no_grad():
        loss = opt.step(closure)
    assert seen == [True]
    assert loss.item() == 5.0
    np.testing.assert_allclose(p.detach().numpy(), [0.8, 1.6], rtol=1e-6)
    assert opt.step() is None


def test_grad_of_wrong_shape_or_device_is_an_error():
    p = torch.zeros(3, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"attempting to assign a gradient of size '\[2\]' to a tensor of size "
                                           r"'\[3\]'"):
        p.grad = torch.zeros(2)
    with pytest.raises(TypeError, match="assigned grad expected to be a Tensor or None"):
        p.grad = [0.0, 0.0, 0.0]


def test_grad_of_another_dtype_is_cast():
    """Assigning a float64 .grad to a float32 parameter raises as PyTorch does; with grad_dtype=None
    (any dtype allowed) the optimizer casts it (PyTorch's Adam raises there instead)."""
    p = torch.zeros(2, dtype=torch.float32, requires_grad=True)
    opt = optim.Adam([p], lr=0.1)
    with pytest.raises(RuntimeError, match="assign a gradient with dtype 'double'"):
        p.grad = torch.tensor([1.0, -1.0], dtype=torch.float64)
    p.grad_dtype = None
    p.grad = torch.tensor([1.0, -1.0], dtype=torch.float64)
    opt.step()
    assert p.dtype == torch.float32
    np.testing.assert_allclose(p.detach().numpy(), [-0.1, 0.1], rtol=1e-5)


def test_tensor_learning_rate():
    p = torch.ones(2, requires_grad=True)
    opt = optim.SGD([p], lr=torch.tensor(0.5))
    p.grad = torch.ones(2)
    opt.step()
    assert p.tolist() == [0.5, 0.5]
    with pytest.raises(ValueError, match="1-element"):
        optim.SGD([p], lr=torch.tensor([0.1, 0.2]))


def test_step_hooks():
    a, _ = _params()
    opt = optim.SGD([a], lr=0.1)
    calls = []
    h1 = opt.register_step_pre_hook(lambda o, args, kwargs: calls.append(("pre", o is opt)))
    h2 = opt.register_step_post_hook(lambda o, args, kwargs: calls.append(("post", o is opt)))
    hg = optim.register_optimizer_step_pre_hook(lambda o, args, kwargs: calls.append(("global", o is opt)))
    try:
        _set_grads([a], 0)
        opt.step()
        assert calls == [("global", True), ("pre", True), ("post", True)]
    finally:
        h1.remove()
        h2.remove()
        hg.remove()
    opt.step()
    assert len(calls) == 3


def test_state_dict_hooks():
    a, _ = _params()
    opt = optim.SGD([a], lr=0.1, momentum=0.9)
    log = []
    opt.register_state_dict_pre_hook(lambda o: log.append("pre"))
    opt.register_state_dict_post_hook(lambda o, sd: {**sd, "extra": 1})
    opt.register_load_state_dict_pre_hook(lambda o, sd: log.append("load_pre"))
    opt.register_load_state_dict_post_hook(lambda o: log.append("load_post"))
    sd = opt.state_dict()
    assert sd["extra"] == 1 and log == ["pre"]
    opt.load_state_dict(sd)
    assert log == ["pre", "load_pre", "load_post"]


# -- state dicts ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("cls, kw", ALL, ids=IDS)
def test_state_dict_round_trip_resumes_identically(cls, kw):
    k, n = 3, 7
    ref_params = _params()
    ref = cls([{"params": [ref_params[0]]}, {"params": [ref_params[1]], "lr": 0.02}], **kw)
    _train(ref, ref_params, 0, n)

    params = _params()
    opt = cls([{"params": [params[0]]}, {"params": [params[1]], "lr": 0.02}], **kw)
    _train(opt, params, 0, k)
    saved = copy.deepcopy(opt.state_dict())
    saved_values = _values(params)
    del opt

    resumed = _params(seed=99)
    for p, v in zip(resumed, saved_values):
        p.detach().copy_(torch.tensor(v))
    opt2 = cls([{"params": [resumed[0]]}, {"params": [resumed[1]], "lr": 0.5}], **kw)
    opt2.load_state_dict(saved)
    assert opt2.param_groups[1]["lr"] == 0.02              # options come from the state dict
    assert opt2.param_groups[0]["params"][0] is resumed[0]  # parameters stay the optimizer's own
    _train(opt2, resumed, k, n)
    for got, want in zip(_values(resumed), _values(ref_params)):
        np.testing.assert_array_equal(got, want)


def test_state_dict_layout():
    a, b = _params()
    opt = optim.Adam([{"params": [a]}, {"params": [b], "lr": 0.01}], lr=0.1)
    _train(opt, [a, b], 0, 2)
    sd = opt.state_dict()
    assert set(sd) == {"state", "param_groups"}
    assert sorted(sd["state"]) == [0, 1]
    assert set(sd["state"][0]) == {"step", "exp_avg", "exp_avg_sq"}
    assert float(sd["state"][0]["step"]) == 2.0
    assert [g["params"] for g in sd["param_groups"]] == [[0], [1]]
    assert sd["param_groups"][1]["lr"] == 0.01
    assert list(sd["param_groups"][0])[-1] == "params"
    for key in ("lr", "betas", "eps", "weight_decay", "amsgrad", "maximize", "foreach", "capturable",
                "differentiable", "fused", "decoupled_weight_decay"):
        assert key in sd["param_groups"][0]
    # the optimizer's own param groups are not modified by packing
    assert opt.param_groups[0]["params"][0] is a


def test_load_state_dict_copies_and_casts_the_state():
    a = torch.zeros(3, dtype=torch.float64, requires_grad=True)
    opt = optim.SGD([a], lr=0.1, momentum=0.9)
    a.grad = torch.ones(3, dtype=torch.float64)
    opt.step()
    sd = opt.state_dict()

    b = torch.zeros(3, dtype=torch.float32, requires_grad=True)
    opt2 = optim.SGD([b], lr=0.1, momentum=0.9)
    opt2.load_state_dict(sd)
    buf = opt2.state[b]["momentum_buffer"]
    assert buf.dtype == torch.float32 and buf.tolist() == [1.0, 1.0, 1.0]
    # no aliasing: stepping the new optimizer leaves the loaded dict alone
    b.grad = torch.ones(3)
    opt2.step()
    assert sd["state"][0]["momentum_buffer"].tolist() == [1.0, 1.0, 1.0]

    c = torch.zeros(3, dtype=torch.float64, requires_grad=True)
    opt3 = optim.SGD([c], lr=0.1, momentum=0.9)
    opt3.load_state_dict(sd)
    assert opt3.state[c]["momentum_buffer"] is not sd["state"][0]["momentum_buffer"]


def test_load_state_dict_converts_numeric_steps():
    a = torch.zeros(2, requires_grad=True)
    opt = optim.Adam([a], lr=0.1)
    a.grad = torch.ones(2)
    opt.step()
    sd = copy.deepcopy(opt.state_dict())
    sd["state"][0]["step"] = 1           # an older checkpoint format
    opt.load_state_dict(sd)
    assert isinstance(opt.state[a]["step"], torch.Tensor)
    opt.step()
    assert float(opt.state[a]["step"]) == 2.0


def test_load_state_dict_validates_groups():
    a, b = _params()
    opt = optim.SGD([{"params": [a]}, {"params": [b]}], lr=0.1)
    with pytest.raises(ValueError, match="different number of parameter groups"):
        optim.SGD([a], lr=0.1).load_state_dict(opt.state_dict())
    with pytest.raises(ValueError, match="doesn't match the size"):
        optim.SGD([{"params": [a, b]}, {"params": [torch.zeros(1, requires_grad=True)]}],
                  lr=0.1).load_state_dict(opt.state_dict())


def test_optimizer_deepcopy_and_pickle_keep_state_attached_to_params():
    import pickle
    a, b = _params()
    opt = optim.Adam([a, b], lr=0.1)
    _train(opt, [a, b], 0, 2)
    for clone in (copy.deepcopy(opt), pickle.loads(pickle.dumps(opt))):
        pa, pb = clone.param_groups[0]["params"]
        assert pa is not a
        assert float(clone.state[pa]["step"]) == 2
        np.testing.assert_array_equal(clone.state[pb]["exp_avg"].numpy(), opt.state[b]["exp_avg"].numpy())
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            _set_grads([pa, pb], 5)
            clone.step()


def test_works_with_nn_parameters_when_available():
    try:
        from tensorplug.nn import parameter as nn
    except Exception as e:          # tensorplug.nn is developed separately
        pytest.skip(f"tensorplug.nn.parameter is not importable: {e}")
    w = nn.Parameter(torch.ones(2, 2))
    opt = optim.SGD([w], lr=0.5, momentum=0.9)
    w.grad = torch.ones(2, 2)
    opt.step()
    assert isinstance(w, nn.Parameter) and w.tolist() == [[0.5, 0.5], [0.5, 0.5]]
    assert type(opt.state[w]["momentum_buffer"]) is torch.Tensor


def test_state_dict_survives_tensorplug_save_and_load():
    import io
    if not hasattr(torch, "save"):
        pytest.skip("tensorplug.save is not available")
    params = _params()
    opt = optim.Adam([{"params": [params[0]]}, {"params": [params[1]], "lr": 0.02}], lr=0.05, amsgrad=True)
    _train(opt, params, 0, 3)
    buf = io.BytesIO()
    torch.save(opt.state_dict(), buf)
    buf.seek(0)
    loaded = torch.load(buf)
    resumed = [p.detach().clone().requires_grad_(True) for p in params]
    opt2 = optim.Adam([{"params": [resumed[0]]}, {"params": [resumed[1]]}], lr=0.05, amsgrad=True)
    opt2.load_state_dict(loaded)
    assert opt2.param_groups[1]["lr"] == 0.02 and opt2.param_groups[0]["betas"] == (0.9, 0.999)
    _train(opt, params, 3, 5)
    _train(opt2, resumed, 3, 5)
    for got, want in zip(_values(resumed), _values(params)):
        np.testing.assert_array_equal(got, want)
