"""L-BFGS: agreement with a NumPy re-implementation of the algorithm (fixed step, no line search),
convergence on the Rosenbrock function (strong-Wolfe line search), state and validation."""
import copy

import numpy as np
import pytest

import tensorplug as torch
import tensorplug.optim as optim


def rosen(x):
    return (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2 + (x[2] - x[1]) ** 2


def rosen_grad(x):
    return np.array([-2 * (1 - x[0]) - 400 * x[0] * (x[1] - x[0] ** 2),
                     200 * (x[1] - x[0] ** 2) - 2 * (x[2] - x[1]),
                     2 * (x[2] - x[1])])


class NumpyLBFGS:
    """L-BFGS as documented (minFunc-style, as in PyTorch) without line search, in float64."""

    def __init__(self, x, lr=1.0, max_iter=20, max_eval=None, tolerance_grad=1e-7, tolerance_change=1e-9,
                 history_size=100):
        self.x = np.array(x, dtype=np.float64)
        self.lr, self.max_iter = lr, max_iter
        self.max_eval = max_eval if max_eval is not None else max_iter * 5 // 4
        self.tol_grad, self.tol_change, self.m = tolerance_grad, tolerance_change, history_size
        self.n_iter_total = 0
        self.func_evals = 0
        self.d = self.t = self.prev_g = None
        self.S, self.Y, self.rho = [], [], []
        self.H = 1.0

    def step(self, f, grad):
        loss, g = f(self.x), grad(self.x)
        orig_loss = loss
        evals = 1
        self.func_evals += 1
        if np.abs(g).max() <= self.tol_grad:
            return orig_loss
        n_iter = 0
        while n_iter < self.max_iter:
            n_iter += 1
            self.n_iter_total += 1
            if self.n_iter_total == 1:
                d = -g
                self.S, self.Y, self.rho, self.H = [], [], [], 1.0
            else:
                y = g - self.prev_g
                s = self.d * self.t
                ys = y @ s
                if ys > 1e-10:
                    if len(self.S) == self.m:
                        self.S.pop(0)
                        self.Y.pop(0)
                        self.rho.pop(0)
                    self.S.append(s)
                    self.Y.append(y)
                    self.rho.append(1.0 / ys)
                    self.H = ys / (y @ y)
                q = -g
                al = [0.0] * len(self.S)
                for i in range(len(self.S) - 1, -1, -1):       # two-loop recursion
                    al[i] = (self.S[i] @ q) * self.rho[i]
                    q = q - al[i] * self.Y[i]
                r = q * self.H
                for i in range(len(self.S)):
                    be = (self.Y[i] @ r) * self.rho[i]
                    r = r + (al[i] - be) * self.S[i]
                d = r
            self.d = d
            self.prev_g = g.copy()
            prev_loss = loss
            t = min(1.0, 1.0 / np.abs(g).sum()) * self.lr if self.n_iter_total == 1 else self.lr
            self.t = t
            gtd = g @ d
            if gtd > -self.tol_change:
                break
            self.x = self.x + t * d
            ls_evals = 0
            if n_iter != self.max_iter:
                loss, g = f(self.x), grad(self.x)
                ls_evals = 1
            evals += ls_evals
            self.func_evals += ls_evals
            if n_iter == self.max_iter or evals >= self.max_eval:
                break
            if np.abs(g).max() <= self.tol_grad:
                break
            if np.abs(d * t).max() <= self.tol_change or abs(loss - prev_loss) < self.tol_change:
                break
        return orig_loss


def _tp_problem(x0, dtype=torch.float64):
    x = torch.tensor(x0[:2], dtype=dtype, requires_grad=True)
    z = torch.tensor(x0[2:], dtype=dtype, requires_grad=True)
    return x, z


def _closure(opt, x, z, count=None):
    def closure():
        if count is not None:
            count.append(1)
        opt.zero_grad()
        loss = (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2 + (z[0] - x[1]) ** 2
        loss.backward()
        return loss
    return closure


@pytest.mark.parametrize("kw", [dict(lr=0.1, max_iter=1), dict(lr=0.1, max_iter=4),
                                dict(lr=0.05, max_iter=5, history_size=2), dict(lr=0.2, max_iter=3, max_eval=2)])
def test_fixed_step_matches_numpy_reimplementation(kw):
    x0 = [-1.2, 1.0, 0.5]
    ref = NumpyLBFGS(x0, **kw)
    x, z = _tp_problem(x0)
    opt = optim.LBFGS([x, z], **kw)
    closure = _closure(opt, x, z)
    for call in range(5):
        want_loss = ref.step(rosen, rosen_grad)
        loss = opt.step(closure)
        assert loss.item() == pytest.approx(want_loss, rel=1e-12)
        got = np.concatenate([x.detach().numpy(), z.detach().numpy()])
        np.testing.assert_allclose(got, ref.x, rtol=1e-10, atol=1e-12, err_msg=f"step() call {call + 1}")
        st = opt.state[x]
        assert st["n_iter"] == ref.n_iter_total and st["func_evals"] == ref.func_evals


def test_strong_wolfe_converges_on_rosenbrock():
    x, z = _tp_problem([-1.2, 1.0, 0.5])
    opt = optim.LBFGS([x, z], lr=1, max_iter=50, line_search_fn="strong_wolfe")
    count = []
    closure = _closure(opt, x, z, count)
    for _ in range(5):
        opt.step(closure)
    np.testing.assert_allclose(np.concatenate([x.detach().numpy(), z.detach().numpy()]), [1, 1, 1], atol=1e-5)
    assert closure().item() < 1e-9
    assert opt.state[x]["func_evals"] == len(count) - 1
    assert x.is_leaf and x.grad_fn is None


def test_strong_wolfe_float32_converges():
    x, z = _tp_problem([-1.2, 1.0, 0.5], dtype=torch.float32)
    opt = optim.LBFGS([x, z], line_search_fn="strong_wolfe")
    closure = _closure(opt, x, z)
    for _ in range(10):
        opt.step(closure)
    assert closure().item() < 1e-6
    assert x.dtype == torch.float32


def test_fixed_step_converges_on_a_convex_quadratic():
    rng = np.random.default_rng(0)
    M = rng.standard_normal((5, 5))
    A = torch.tensor(M @ M.T + 5 * np.eye(5))
    b = torch.tensor(rng.standard_normal(5))
    w = torch.zeros(5, dtype=torch.float64, requires_grad=True)
    opt = optim.LBFGS([w], lr=1, max_iter=100, tolerance_grad=1e-12, tolerance_change=1e-15)

    def closure():
        opt.zero_grad()
        loss = 0.5 * (w @ (A @ w)) - b @ w
        loss.backward()
        return loss
    for _ in range(3):
        opt.step(closure)
    want = np.linalg.solve(A.numpy(), b.numpy())
    np.testing.assert_allclose(w.detach().numpy(), want, rtol=1e-6, atol=1e-8)


def test_state_dict_round_trip_resumes_identically():
    x0 = [-1.2, 1.0, 0.5]
    x_ref, z_ref = _tp_problem(x0)
    ref = optim.LBFGS([x_ref, z_ref], lr=0.5, max_iter=3, line_search_fn="strong_wolfe")
    for _ in range(4):
        ref.step(_closure(ref, x_ref, z_ref))

    x, z = _tp_problem(x0)
    opt = optim.LBFGS([x, z], lr=0.5, max_iter=3, line_search_fn="strong_wolfe")
    for _ in range(2):
        opt.step(_closure(opt, x, z))
    saved = copy.deepcopy(opt.state_dict())
    x2, z2 = _tp_problem(x.detach().numpy().tolist() + z.detach().numpy().tolist())
    opt2 = optim.LBFGS([x2, z2], lr=0.5, max_iter=3, line_search_fn="strong_wolfe")
    opt2.load_state_dict(saved)
    for _ in range(2):
        opt2.step(_closure(opt2, x2, z2))
    np.testing.assert_array_equal(x2.detach().numpy(), x_ref.detach().numpy())
    np.testing.assert_array_equal(z2.detach().numpy(), z_ref.detach().numpy())


def test_zero_gradient_returns_immediately():
    w = torch.ones(2, requires_grad=True)
    opt = optim.LBFGS([w])

    def closure():
        opt.zero_grad()
        loss = (w * 0).sum()
        loss.backward()
        return loss
    opt.step(closure)
    assert w.tolist() == [1.0, 1.0] and opt.state[w]["func_evals"] == 1


def test_validation():
    a = torch.zeros(2, requires_grad=True)
    b = torch.zeros(2, requires_grad=True)
    with pytest.raises(ValueError, match="doesn't support per-parameter options"):
        optim.LBFGS([{"params": [a]}, {"params": [b]}])
    opt = optim.LBFGS([a])
    with pytest.raises(ValueError, match="doesn't support per-parameter options"):
        opt.add_param_group({"params": [b]})
    with pytest.raises(ValueError, match="strong_wolfe"):
        optim.LBFGS([a], line_search_fn="backtracking")
    with pytest.raises(TypeError):
        opt.step()                  # the closure is required (as in PyTorch)
    with pytest.raises(RuntimeError, match="closure"):
        opt.step(None)
    assert opt.defaults["max_eval"] == 25
