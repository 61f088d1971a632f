"""Adamax (Adam with the infinity norm) — PyTorch's algorithm step for step:

    t += 1
    g = ±grad (+ weight_decay * p)
    m = lerp(m, g, 1 - beta1)
    u = max(beta2 * u, |g| + eps)
    p = p - lr / (1 - beta1^t) * m / u
"""
from __future__ import annotations

from .adam import _check_betas
from .optimizer import (Optimizer, _bump, _call_closure, _check_differentiable, _check_lr, _inc_step, _lerp_,
                        _no_grad_step, _prep_grad, _step_tensor, _to_scalar, _zeros_like)

__all__ = ["Adamax"]


class Adamax(Optimizer):
    """Adamax(params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, *, maximize=False)"""

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, foreach=None, *,
                 maximize=False, differentiable=False, capturable=False):
        _check_lr(lr)
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        _check_betas(betas)
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        _check_differentiable(differentiable)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("foreach", None)
            group.setdefault("maximize", False)
            group.setdefault("differentiable", False)
            group.setdefault("capturable", False)
        self._steps_to_tensors()

    @_no_grad_step
    def step(self, closure=None):
        """One Adamax step; returns the closure's loss when a closure is given."""
        loss = None
        if closure is not None:
            loss = _call_closure(closure)
        state = self.state
        for group in self.param_groups:
            lr = _to_scalar(group["lr"])
            beta1, beta2 = (_to_scalar(b) for b in group["betas"])
            eps = group["eps"]
            weight_decay = group["weight_decay"]
            maximize = group["maximize"]
            for p in group["params"]:
                g = p.grad
                if g is None:
                    continue
                k = p._k
                pd = p._data
                st = state[p]
                if len(st) == 0:
                    st["step"] = _step_tensor()
                    st["exp_avg"] = _zeros_like(p)
                    st["exp_inf"] = _zeros_like(p)
                step = _inc_step(st["step"])
                gd, owned = _prep_grad(k, p, g, maximize, weight_decay)
                m_t, u_t = st["exp_avg"], st["exp_inf"]
                m, u = m_t._data, u_t._data
                tmp = _lerp_(k, m, gd, 1 - beta1)
                # torch.maximum(exp_inf.mul_(beta2), grad.abs().add_(eps), out=exp_inf)
                k["mul"](u, beta2, out=u)
                k["abs"](gd, out=tmp)
                k["add"](tmp, eps, out=tmp)
                k["maximum"](u, tmp, out=u)
                clr = lr / (1 - beta1 ** step)
                # p.addcdiv_(exp_avg, exp_inf, value=-clr)
                k["mul"](m, -clr, out=tmp)
                k["div"](tmp, u, out=tmp)
                k["add"](pd, tmp, out=pd)
                _bump(m_t)
                _bump(u_t)
                _bump(p)
        return loss
