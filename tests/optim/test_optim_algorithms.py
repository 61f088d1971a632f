"""Each optimizer's first steps against its documented update rule, re-implemented in NumPy
float64 (from the pseudo-code in PyTorch's documentation), over several option combinations."""
import numpy as np
import pytest

import tensorplug as torch
import tensorplug.optim as optim

STEPS = 6


# -- the problem: two parameters of different shapes, a non-quadratic objective ----------------------
def _problem(seed=0):
    rng = np.random.default_rng(seed)
    p0 = [rng.uniform(-1, 1, (3, 2)), rng.uniform(-1, 1, (4,))]
    a = [rng.uniform(0.5, 2.0, s.shape) for s in p0]
    c = [rng.uniform(-1, 1, s.shape) for s in p0]
    return p0, a, c


def _grad(theta, a, c):
    """Gradient of sum(a/2 theta^2 + c theta + theta^4 / 4)."""
    return a * theta + c + theta ** 3


def _run_tensorplug(opt_cls, p0, a, c, steps=STEPS, dtype=torch.float64, **kw):
    params = [torch.tensor(x, dtype=dtype, requires_grad=True) for x in p0]
    opt = opt_cls(params, **kw)
    traj = []
    for _ in range(steps):
        opt.zero_grad()
        for p, ai, ci in zip(params, a, c):
            p.grad = torch.tensor(_grad(p.detach().numpy().astype(np.float64), ai, ci), dtype=dtype)
        opt.step()
        traj.append([p.detach().numpy().astype(np.float64).copy() for p in params])
    return traj


def _run_reference(update, p0, a, c, steps=STEPS, **kw):
    """update(theta, g, state, t, **kw) -> new theta (state: a dict per parameter)."""
    thetas = [x.copy() for x in p0]
    states = [{} for _ in p0]
    traj = []
    for t in range(1, steps + 1):
        for i in range(len(thetas)):
            g = _grad(thetas[i], a[i], c[i])
            thetas[i] = update(thetas[i], g, states[i], t, **kw)
        traj.append([x.copy() for x in thetas])
    return traj


def _assert_traj_close(got, want, rtol=1e-10, atol=1e-12):
    for step, (g_params, w_params) in enumerate(zip(got, want)):
        for g, w in zip(g_params, w_params):
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, err_msg=f"step {step + 1}")


# -- the documented algorithms ---------------------------------------------------------------------------
def ref_sgd(theta, g, s, t, lr, momentum=0, dampening=0, weight_decay=0, nesterov=False, maximize=False):
    if maximize:
        g = -g
    if weight_decay != 0:
        g = g + weight_decay * theta
    if momentum != 0:
        if t > 1:
            s["b"] = momentum * s["b"] + (1 - dampening) * g
        else:
            s["b"] = g
        g = g + momentum * s["b"] if nesterov else s["b"]
    return theta - lr * g


def ref_adam(theta, g, s, t, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False,
             maximize=False, decoupled=False):
    b1, b2 = betas
    if maximize:
        g = -g
    if weight_decay != 0:
        if decoupled:
            theta = theta - lr * weight_decay * theta
        else:
            g = g + weight_decay * theta
    m = s["m"] = b1 * s.get("m", 0.0) + (1 - b1) * g
    v = s["v"] = b2 * s.get("v", 0.0) + (1 - b2) * g * g
    m_hat = m / (1 - b1 ** t)
    if amsgrad:
        s["vmax"] = np.maximum(s.get("vmax", 0.0), v)
        v_hat = s["vmax"] / (1 - b2 ** t)
    else:
        v_hat = v / (1 - b2 ** t)
    return theta - lr * m_hat / (np.sqrt(v_hat) + eps)


def ref_adamw(theta, g, s, t, weight_decay=1e-2, **kw):
    return ref_adam(theta, g, s, t, weight_decay=weight_decay, decoupled=True, **kw)


def ref_rmsprop(theta, g, s, t, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False,
                maximize=False):
    if maximize:
        g = -g
    if weight_decay != 0:
        g = g + weight_decay * theta
    v = s["v"] = alpha * s.get("v", 0.0) + (1 - alpha) * g * g
    v_tilde = v
    if centered:
        s["gave"] = s.get("gave", 0.0) * alpha + (1 - alpha) * g
        v_tilde = v_tilde - s["gave"] ** 2
    if momentum > 0:
        s["b"] = momentum * s.get("b", 0.0) + g / (np.sqrt(v_tilde) + eps)
        return theta - lr * s["b"]
    return theta - lr * g / (np.sqrt(v_tilde) + eps)


def ref_adagrad(theta, g, s, t, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10,
                maximize=False):
    if maximize:
        g = -g
    clr = lr / (1 + (t - 1) * lr_decay)
    if weight_decay != 0:
        g = g + weight_decay * theta
    s["sum"] = s.get("sum", initial_accumulator_value) + g * g
    return theta - clr * g / (np.sqrt(s["sum"]) + eps)


def ref_adadelta(theta, g, s, t, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, maximize=False):
    if maximize:
        g = -g
    if weight_decay != 0:
        g = g + weight_decay * theta
    v = s["v"] = s.get("v", 0.0) * rho + g * g * (1 - rho)
    u = s.get("u", 0.0)
    dx = np.sqrt(u + eps) / np.sqrt(v + eps) * g
    s["u"] = u * rho + dx * dx * (1 - rho)
    return theta - lr * dx


def ref_adamax(theta, g, s, t, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, maximize=False):
    b1, b2 = betas
    if maximize:
        g = -g
    if weight_decay != 0:
        g = g + weight_decay * theta
    m = s["m"] = b1 * s.get("m", 0.0) + (1 - b1) * g
    u = s["u"] = np.maximum(b2 * s.get("u", 0.0), np.abs(g) + eps)
    return theta - lr * m / ((1 - b1 ** t) * u)


CASES = [
    (optim.SGD, ref_sgd, dict(lr=0.1)),
    (optim.SGD, ref_sgd, dict(lr=0.05, momentum=0.9)),
    (optim.SGD, ref_sgd, dict(lr=0.05, momentum=0.9, dampening=0.5)),
    (optim.SGD, ref_sgd, dict(lr=0.05, momentum=0.8, nesterov=True)),
    (optim.SGD, ref_sgd, dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.1)),
    (optim.SGD, ref_sgd, dict(lr=0.05, momentum=0.5, dampening=0.1, weight_decay=0.2, maximize=True)),
    (optim.SGD, ref_sgd, dict(lr=0.1, weight_decay=0.3)),
    (optim.Adam, ref_adam, dict(lr=0.1)),
    (optim.Adam, ref_adam, dict(lr=0.1, amsgrad=True)),
    (optim.Adam, ref_adam, dict(lr=0.05, betas=(0.5, 0.8), eps=1e-3, weight_decay=0.1, amsgrad=True)),
    (optim.Adam, ref_adam, dict(lr=0.05, weight_decay=0.1, maximize=True)),
    (optim.Adam, ref_adam, dict(lr=0.05, betas=(0.0, 0.5))),
    (optim.AdamW, ref_adamw, dict(lr=0.1)),
    (optim.AdamW, ref_adamw, dict(lr=0.1, weight_decay=0.5, amsgrad=True)),
    (optim.AdamW, ref_adamw, dict(lr=0.05, weight_decay=0.1, maximize=True, betas=(0.8, 0.9))),
    (optim.RMSprop, ref_rmsprop, dict(lr=0.01)),
    (optim.RMSprop, ref_rmsprop, dict(lr=0.01, centered=True)),
    (optim.RMSprop, ref_rmsprop, dict(lr=0.01, momentum=0.9)),
    (optim.RMSprop, ref_rmsprop, dict(lr=0.01, centered=True, momentum=0.9, weight_decay=0.1)),
    (optim.RMSprop, ref_rmsprop, dict(lr=0.02, alpha=0.9, eps=1e-4, momentum=0.5, maximize=True)),
    (optim.Adagrad, ref_adagrad, dict(lr=0.1)),
    (optim.Adagrad, ref_adagrad, dict(lr=0.1, lr_decay=0.2, initial_accumulator_value=0.5)),
    (optim.Adagrad, ref_adagrad, dict(lr=0.1, weight_decay=0.1, eps=1e-3, maximize=True)),
    (optim.Adadelta, ref_adadelta, dict()),
    (optim.Adadelta, ref_adadelta, dict(lr=0.5, rho=0.8, eps=1e-4, weight_decay=0.1)),
    (optim.Adadelta, ref_adadelta, dict(maximize=True)),
    (optim.Adamax, ref_adamax, dict()),
    (optim.Adamax, ref_adamax, dict(lr=0.1, betas=(0.8, 0.9), weight_decay=0.1)),
    (optim.Adamax, ref_adamax, dict(lr=0.05, eps=1e-2, maximize=True)),
]


def _case_id(case):
    cls, _, kw = case
    return cls.__name__ + "-" + "-".join(f"{k}={v}" for k, v in kw.items())


@pytest.mark.parametrize("case", CASES, ids=[_case_id(c) for c in CASES])
def test_steps_match_documented_algorithm(case):
    cls, ref, kw = case
    p0, a, c = _problem()
    got = _run_tensorplug(cls, p0, a, c, **kw)
    want = _run_reference(ref, p0, a, c, **kw)
    _assert_traj_close(got, want)


@pytest.mark.parametrize("case", [CASES[2], CASES[9], CASES[13], CASES[18], CASES[21], CASES[24], CASES[27]],
                         ids=lambda c: _case_id(c))
def test_float32_parameters_follow_the_float64_reference(case):
    cls, ref, kw = case
    p0, a, c = _problem(1)
    got = _run_tensorplug(cls, p0, a, c, dtype=torch.float32, **kw)
    want = _run_reference(ref, p0, a, c, **kw)
    _assert_traj_close(got, want, rtol=2e-4, atol=2e-5)


def test_parameters_stay_float32_and_state_matches_dtype():
    p = torch.tensor([1.0, -2.0], requires_grad=True)
    opt = optim.Adam([p], lr=0.1, amsgrad=True)
    p.grad = torch.tensor([0.5, 0.5])
    opt.step()
    assert p.dtype == torch.float32
    st = opt.state[p]
    for key in ("exp_avg", "exp_avg_sq", "max_exp_avg_sq"):
        assert st[key].dtype == torch.float32 and tuple(st[key].shape) == (2,)
        assert not st[key].requires_grad
    assert float(st["step"]) == 1.0


def test_training_with_backward_decreases_the_loss():
    """End to end: autograd gradients of a least-squares problem drive each optimizer down."""
    rng = np.random.default_rng(3)
    X = torch.tensor(rng.standard_normal((32, 3)), dtype=torch.float32)
    w_true = torch.tensor([[1.5], [-2.0], [0.5]])
    y = X @ w_true
    for cls, kw in [(optim.SGD, dict(lr=0.05, momentum=0.9)), (optim.Adam, dict(lr=0.1)),
                    (optim.AdamW, dict(lr=0.1)), (optim.RMSprop, dict(lr=0.01)), (optim.Adagrad, dict(lr=0.5)),
                    (optim.Adadelta, dict(lr=1.0, eps=1e-2)), (optim.Adamax, dict(lr=0.1))]:
        w = torch.zeros(3, 1, requires_grad=True)
        b = torch.zeros(1, requires_grad=True)
        opt = cls([w, b], **kw)
        losses = []
        for _ in range(30):
            opt.zero_grad()
            loss = ((X @ w + b - y) ** 2).mean()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        assert losses[-1] < 0.5 * losses[0], (cls.__name__, losses[0], losses[-1])


def test_maximize_equals_minimizing_the_negated_objective():
    p0, a, c = _problem(2)
    a, c = [-x for x in a], [-x for x in c]
    plain = _run_tensorplug(optim.Adam, p0, a, c, lr=0.05)          # minimize f
    params = [torch.tensor(x, dtype=torch.float64, requires_grad=True) for x in p0]
    opt = optim.Adam(params, lr=0.05, maximize=True)                 # maximize -f
    for step in range(STEPS):
        for p, ai, ci in zip(params, a, c):
            p.grad = torch.tensor(-_grad(p.detach().numpy(), ai, ci))
        opt.step()
        for p, want in zip(params, plain[step]):
            np.testing.assert_allclose(p.detach().numpy(), want, rtol=1e-12, atol=1e-15)
