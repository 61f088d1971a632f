"""Adadelta (Zeiler) — PyTorch's algorithm step for step:

    g = ±grad (+ weight_decay * p)
    v = rho * v + (1 - rho) * g * g
    delta = sqrt(u + eps) / sqrt(v + eps) * g
    u = rho * u + (1 - rho) * delta * delta
    p = p - lr * delta
"""
from __future__ import annotations

from .optimizer import (Optimizer, _bump, _call_closure, _check_differentiable, _check_lr, _inc_step,
                        _no_grad_step, _prep_grad, _step_tensor, _to_scalar, _zeros_like)

__all__ = ["Adadelta"]


class Adadelta(Optimizer):
    """Adadelta(params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, *, maximize=False)"""

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *, capturable=False,
                 maximize=False, differentiable=False):
        _check_lr(lr)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        _check_differentiable(differentiable)
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize,
                        capturable=capturable, foreach=foreach, differentiable=differentiable)
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
        """One Adadelta step; returns the closure's loss when a closure is given."""
        loss = None
        if closure is not None:
            loss = _call_closure(closure)
        state = self.state
        for group in self.param_groups:
            lr = _to_scalar(group["lr"])
            rho = group["rho"]
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
                    st["square_avg"] = _zeros_like(p)
                    st["acc_delta"] = _zeros_like(p)
                _inc_step(st["step"])
                gd, owned = _prep_grad(k, p, g, maximize, weight_decay)
                sq_t, acc_t = st["square_avg"], st["acc_delta"]
                sq, acc = sq_t._data, acc_t._data
                # square_avg.mul_(rho).addcmul_(g, g, value=1 - rho)
                k["mul"](sq, rho, out=sq)
                tmp = k["mul"](gd, 1 - rho)
                k["mul"](tmp, gd, out=tmp)
                k["add"](sq, tmp, out=sq)
                std = k["add"](sq, eps)
                k["sqrt"](std, out=std)
                delta = k["add"](acc, eps)
                k["sqrt"](delta, out=delta)
                k["div"](delta, std, out=delta)
                k["mul"](delta, gd, out=delta)
                # acc_delta.mul_(rho).addcmul_(delta, delta, value=1 - rho)
                k["mul"](acc, rho, out=acc)
                k["mul"](delta, 1 - rho, out=tmp)
                k["mul"](tmp, delta, out=tmp)
                k["add"](acc, tmp, out=acc)
                # p.add_(delta, alpha=-lr)
                k["mul"](delta, -lr, out=delta)
                k["add"](pd, delta, out=pd)
                _bump(sq_t)
                _bump(acc_t)
                _bump(p)
        return loss
