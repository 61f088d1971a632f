"""NAdam, RAdam and Rprop against PyTorch's documented algorithms, re-implemented here in NumPy
float64: 20-step trajectories with two parameter groups of different options, state dicts,
argument validation and float32 parameters."""
import io
import re

import numpy as np
import pytest

import tensorplug as torch
import tensorplug.optim as optim

STEPS = 20


# -- the problem: three parameters in two groups, a non-quadratic objective ----------------------------
def _problem(seed=0):
    rng = np.random.default_rng(seed)
    p0 = [rng.uniform(-1, 1, (3, 2)), rng.uniform(-1, 1, (4,)), rng.uniform(-1, 1, (2, 2))]
    a = [rng.uniform(0.5, 2.0, s.shape) for s in p0]
    c = [rng.uniform(-1, 1, s.shape) for s in p0]
    return p0, a, c


def _grad(theta, a, c, sign=1):
    """Gradient of sign * sum(a/2 theta^2 + c theta + theta^4 / 4) (maximize: sign = -1, a bounded problem)."""
    return sign * (a * theta + c + theta ** 3)


def _groups(params, group1):
    return [{"params": params[:2]}, {"params": params[2:], **group1}]


def _set_grads(params, a, c, dtype, sign):
    for p, ai, ci in zip(params, a, c):
        p.grad = torch.tensor(_grad(p.detach().numpy().astype(np.float64), ai, ci, sign), dtype=dtype)


def _snapshot(params):
    return [p.detach().numpy().astype(np.float64).copy() for p in params]


def _run(opt_cls, p0, a, c, kw, group1, steps=STEPS, dtype=torch.float64):
    params = [torch.tensor(x, dtype=dtype, requires_grad=True) for x in p0]
    opt = opt_cls(_groups(params, group1), **kw)
    traj = []
    for _ in range(steps):
        opt.zero_grad()
        _set_grads(params, a, c, dtype, -1 if kw.get("maximize") else 1)
        opt.step()
        traj.append(_snapshot(params))
    return traj, opt, params


def _run_reference(update, p0, a, c, kw, group1, steps=STEPS, **extra):
    """update(theta, g, state, t, **options) -> new theta; the last parameter takes group1's options."""
    thetas = [x.copy() for x in p0]
    states = [{} for _ in p0]
    options = [dict(kw, **extra)] * 2 + [dict(kw, **group1, **extra)]
    sign = -1 if kw.get("maximize") else 1
    traj = []
    for t in range(1, steps + 1):
        for i in range(len(thetas)):
            thetas[i] = update(thetas[i], _grad(thetas[i], a[i], c[i], sign), states[i], t, **options[i])
        traj.append([x.copy() for x in thetas])
    return traj, states


def _assert_traj_close(got, want, rtol=1e-10, atol=1e-12):
    for step, (g_params, w_params) in enumerate(zip(got, want)):
        for g, w in zip(g_params, w_params):
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, err_msg=f"step {step + 1}")


# -- the documented algorithms ---------------------------------------------------------------------------
def _decay(theta, g, lr, weight_decay, decoupled):
    if weight_decay != 0:
        if decoupled:
            theta = theta * (1 - lr * weight_decay)
        else:
            g = g + weight_decay * theta
    return theta, g


def ref_nadam(theta, g, s, t, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, momentum_decay=4e-3,
              decoupled_weight_decay=False, maximize=False, mu_dtype=np.float32):
    """mu_dtype: the dtype of the mu_product state (PyTorch's: the default dtype's, float32 or float64)."""
    b1, b2 = betas
    if maximize:
        g = -g
    theta, g = _decay(theta, g, lr, weight_decay, decoupled_weight_decay)
    mu = b1 * (1 - 0.5 * 0.96 ** (t * momentum_decay))
    mu_next = b1 * (1 - 0.5 * 0.96 ** ((t + 1) * momentum_decay))
    s["mu_product"] = float(mu_dtype(s.get("mu_product", 1.0)) * mu_dtype(mu))
    mu_product = s["mu_product"]
    m = s["m"] = b1 * s.get("m", 0.0) + (1 - b1) * g
    v = s["v"] = b2 * s.get("v", 0.0) + (1 - b2) * g * g
    denom = np.sqrt(v / (1 - b2 ** t)) + eps
    return (theta - lr * (1 - mu) / (1 - mu_product) * g / denom
            - lr * mu_next / (1 - mu_product * mu_next) * m / denom)


def ref_radam(theta, g, s, t, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, decoupled_weight_decay=False,
              maximize=False):
    b1, b2 = betas
    if maximize:
        g = -g
    theta, g = _decay(theta, g, lr, weight_decay, decoupled_weight_decay)
    m = s["m"] = b1 * s.get("m", 0.0) + (1 - b1) * g
    v = s["v"] = b2 * s.get("v", 0.0) + (1 - b2) * g * g
    m_hat = m / (1 - b1 ** t)
    rho_inf = 2 / (1 - b2) - 1
    rho_t = rho_inf - 2 * t * b2 ** t / (1 - b2 ** t)
    if rho_t > 5:
        s["rectified"] = s.get("rectified", 0) + 1
        r = np.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
        return theta - lr * m_hat * np.sqrt(1 - b2 ** t) / (np.sqrt(v) + eps) * r
    s["unrectified"] = s.get("unrectified", 0) + 1
    return theta - lr * m_hat


def ref_rprop(theta, g, s, t, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), maximize=False):
    etaminus, etaplus = etas
    if maximize:
        g = -g
    prev = s.get("prev", np.zeros_like(theta))
    eta = s.get("eta", np.full_like(theta, lr))
    prod = g * prev
    s["grew"] = s.get("grew", 0) + int((prod > 0).sum())
    s["shrank"] = s.get("shrank", 0) + int((prod < 0).sum())
    eta = np.where(prod > 0, np.minimum(eta * etaplus, step_sizes[1]),
                   np.where(prod < 0, np.maximum(eta * etaminus, step_sizes[0]), eta))
    g = np.where(prod < 0, 0.0, g)
    s["prev"], s["eta"] = g, eta
    return theta - eta * np.sign(g)


# (optimizer, reference, options, options of the second group)
CASES = [
    (optim.NAdam, ref_nadam, dict(lr=0.05), dict(lr=0.02, betas=(0.8, 0.99), momentum_decay=0.01)),
    (optim.NAdam, ref_nadam, dict(lr=0.05, weight_decay=0.1), dict(weight_decay=0.3, eps=1e-3)),
    (optim.NAdam, ref_nadam, dict(lr=0.05, weight_decay=0.1, decoupled_weight_decay=True), dict(lr=0.1)),
    (optim.NAdam, ref_nadam, dict(maximize=True), dict(lr=0.01, weight_decay=0.05)),
    (optim.RAdam, ref_radam, dict(lr=0.05), dict(lr=0.02, betas=(0.8, 0.9))),
    (optim.RAdam, ref_radam, dict(lr=0.05, weight_decay=0.1), dict(weight_decay=0.3, eps=1e-3)),
    (optim.RAdam, ref_radam, dict(lr=0.05, weight_decay=0.1, decoupled_weight_decay=True), dict(lr=0.1)),
    (optim.RAdam, ref_radam, dict(maximize=True, lr=0.02), dict(betas=(0.5, 0.8), weight_decay=0.05)),
    (optim.Rprop, ref_rprop, dict(), dict(lr=0.05, etas=(0.3, 1.5))),
    (optim.Rprop, ref_rprop, dict(lr=0.05, step_sizes=(1e-2, 0.2)), dict(step_sizes=(1e-3, 0.08))),
    (optim.Rprop, ref_rprop, dict(maximize=True), dict(lr=0.1)),
]


def _case_id(case):
    cls, _, kw, group1 = case
    return cls.__name__ + "-" + "-".join(f"{k}={v}" for k, v in {**kw, **group1}.items())


@pytest.mark.parametrize("case", CASES, ids=[_case_id(c) for c in CASES])
def test_steps_match_documented_algorithm(case):
    cls, ref, kw, group1 = case
    p0, a, c = _problem()
    got, _, _ = _run(cls, p0, a, c, kw, group1)
    want, _ = _run_reference(ref, p0, a, c, kw, group1)
    _assert_traj_close(got, want)


@pytest.mark.parametrize("case", CASES, ids=[_case_id(c) for c in CASES])
def test_float32_parameters_follow_the_float64_reference(case):
    cls, ref, kw, group1 = case
    p0, a, c = _problem()
    got, opt, params = _run(cls, p0, a, c, kw, group1, dtype=torch.float32)
    want, _ = _run_reference(ref, p0, a, c, kw, group1)
    _assert_traj_close(got, want, rtol=1e-4, atol=1e-5)
    for p in params:
        assert p.dtype == torch.float32
        for key, value in opt.state[p].items():
            want_dtype = torch.float32 if key in ("step", "mu_product") else p.dtype
            assert value.dtype == want_dtype, key


def test_references_take_every_branch():
    """The cases above reach RAdam's unrectified and rectified updates and Rprop's growing and
    shrinking step sizes."""
    p0, a, c = _problem()
    radam_states = [s for case in CASES if case[0] is optim.RAdam
                    for s in _run_reference(case[1], p0, a, c, case[2], case[3])[1]]
    assert all(s.get("unrectified", 0) > 0 and s.get("rectified", 0) > 0 for s in radam_states)
    rprop_states = [s for case in CASES if case[0] is optim.Rprop
                    for s in _run_reference(case[1], p0, a, c, case[2], case[3])[1]]
    assert all(s["grew"] > 0 and s["shrank"] > 0 for s in rprop_states)


def test_nadam_mu_product_takes_the_default_dtype():
    p0, a, c = _problem()
    kw, group1 = dict(lr=0.05), dict(momentum_decay=0.05)
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        got, opt, params = _run(optim.NAdam, p0, a, c, kw, group1)
    finally:
        torch.set_default_dtype(previous)
    want, states = _run_reference(ref_nadam, p0, a, c, kw, group1, mu_dtype=np.float64)
    _assert_traj_close(got, want, rtol=1e-12, atol=1e-14)
    for p, s in zip(params, states):
        mu_product = opt.state[p]["mu_product"]
        assert mu_product.dtype == torch.float64 and mu_product.shape == ()
        assert mu_product.item() == s["mu_product"]


STATE_KEYS = {optim.NAdam: ["step", "mu_product", "exp_avg", "exp_avg_sq"],
              optim.RAdam: ["step", "exp_avg", "exp_avg_sq"],
              optim.Rprop: ["step", "prev", "step_size"]}


@pytest.mark.parametrize("cls", list(STATE_KEYS), ids=lambda c: c.__name__)
def test_state_dict_layout(cls):
    p0, a, c = _problem()
    case = next(case for case in CASES if case[0] is cls)
    _, opt, params = _run(cls, p0, a, c, case[2], case[3], steps=3)
    sd = opt.state_dict()
    assert sorted(sd["state"]) == [0, 1, 2]
    assert [g["params"] for g in sd["param_groups"]] == [[0, 1], [2]]
    for i, p in enumerate(params):
        st = sd["state"][i]
        assert list(st) == STATE_KEYS[cls]
        assert st["step"].dtype == torch.float32 and st["step"].shape == () and st["step"].item() == 3
        for key in STATE_KEYS[cls][1:]:
            want = () if key == "mu_product" else p.shape
            assert st[key].shape == want, key
    group = sd["param_groups"][1]
    for key, value in {**case[2], **case[3]}.items():
        assert group[key] == value, key


@pytest.mark.parametrize("case", CASES, ids=[_case_id(c) for c in CASES])
def test_state_dict_round_trip_continues_the_trajectory(case):
    cls, _, kw, group1 = case
    p0, a, c = _problem()
    want, _, _ = _run(cls, p0, a, c, kw, group1)
    half = STEPS // 2
    got, opt, params = _run(cls, p0, a, c, kw, group1, steps=half)
    buf = io.BytesIO()
    torch.save(opt.state_dict(), buf)
    buf.seek(0)
    saved = torch.load(buf)
    fresh = [torch.tensor(p.detach().numpy().copy(), requires_grad=True) for p in params]
    opt2 = cls(_groups(fresh, {}), **{k: v for k, v in kw.items() if k not in group1})
    opt2.load_state_dict(saved)
    for p, q in zip(params, fresh):
        assert list(opt2.state[q]) == list(opt.state[p])
        for key, value in opt.state[p].items():
            loaded = opt2.state[q][key]
            # PyTorch's load policy: floating state other than "step" takes the parameter's dtype
            assert loaded.dtype == (torch.float32 if key == "step" else q.dtype), key
            np.testing.assert_array_equal(loaded.numpy(), value.numpy().astype(loaded.numpy().dtype))
    for _ in range(STEPS - half):
        opt2.zero_grad()
        _set_grads(fresh, a, c, torch.float64, -1 if kw.get("maximize") else 1)
        opt2.step()
        got.append(_snapshot(fresh))
    # exact, but for NAdam's mu_product, which continues in float64 after loading (as in PyTorch)
    if cls is optim.NAdam:
        _assert_traj_close(got, want)
    else:
        _assert_traj_close(got, want, rtol=0, atol=0)


ARG_ERRORS = [
    (optim.NAdam, dict(lr=-1), "Invalid learning rate: -1"),
    (optim.NAdam, dict(betas=(1.0, 0.999)), "Invalid beta parameter at index 0: 1.0"),
    (optim.NAdam, dict(betas=(0.9, -0.1)), "Invalid beta parameter at index 1: -0.1"),
    (optim.NAdam, dict(eps=-1e-8), "Invalid epsilon value: -1e-08"),
    (optim.NAdam, dict(weight_decay=-0.1), "Invalid weight_decay value: -0.1"),
    (optim.NAdam, dict(momentum_decay=-1), "Invalid momentum_decay value: -1"),
    (optim.RAdam, dict(lr=-0.5), "Invalid learning rate: -0.5"),
    (optim.RAdam, dict(betas=(0.9, 1.0)), "Invalid beta parameter at index 1: 1.0"),
    (optim.RAdam, dict(eps=-1), "Invalid epsilon value: -1"),
    (optim.RAdam, dict(weight_decay=-1), "Invalid weight_decay value: -1"),
    (optim.Rprop, dict(lr=-1), "Invalid learning rate: -1"),
    (optim.Rprop, dict(etas=(1.0, 1.2)), "Invalid eta values: 1.0, 1.2"),
    (optim.Rprop, dict(etas=(0.5, 1.0)), "Invalid eta values: 0.5, 1.0"),
    (optim.Rprop, dict(etas=(0.0, 2)), "Invalid eta values: 0.0, 2"),
]


@pytest.mark.parametrize("cls,kw,message", ARG_ERRORS,
                         ids=[f"{c.__name__}-{list(kw)[0]}-{i}" for i, (c, kw, _) in enumerate(ARG_ERRORS)])
def test_invalid_arguments_raise_like_pytorch(cls, kw, message):
    with pytest.raises(ValueError, match="^" + re.escape(message) + "$"):
        cls([torch.zeros(2, requires_grad=True)], **kw)


@pytest.mark.parametrize("cls", list(STATE_KEYS), ids=lambda c: c.__name__)
def test_tensor_lr_must_have_one_element(cls):
    with pytest.raises(ValueError, match="Tensor lr must be 1-element"):
        cls([torch.zeros(2, requires_grad=True)], lr=torch.tensor([0.1, 0.2]))


@pytest.mark.parametrize("cls", list(STATE_KEYS), ids=lambda c: c.__name__)
def test_defaults_are_pytorchs(cls):
    opt = cls([torch.zeros(2, requires_grad=True)])
    want = {optim.NAdam: dict(lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, momentum_decay=4e-3,
                              decoupled_weight_decay=False),
            optim.RAdam: dict(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, decoupled_weight_decay=False),
            optim.Rprop: dict(lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50))}[cls]
    want.update(foreach=None, maximize=False, capturable=False, differentiable=False)
    assert opt.defaults == want
