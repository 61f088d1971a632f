"""Adagrad (Duchi et al.) — PyTorch's algorithm step for step:

    t += 1
    g = ±grad (+ weight_decay * p)
    clr = lr / (1 + (t - 1) * lr_decay)
    s = s + g * g                      (s starts at initial_accumulator_value)
    p = p - clr * g / (sqrt(s) + eps)
"""
from __future__ import annotations

from .optimizer import (Optimizer, _bump, _call_closure, _check_differentiable, _check_lr, _inc_step,
                        _no_grad_step, _prep_grad, _step_tensor, _to_scalar, _zeros_like)

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    """Adagrad(params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10, *,
    maximize=False)"""

    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10,
                 foreach=None, *, maximize=False, differentiable=False, fused=None):
        _check_lr(lr)
        if not 0.0 <= lr_decay:
            raise ValueError(f"Invalid lr_decay value: {lr_decay}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= initial_accumulator_value:
            raise ValueError(f"Invalid initial_accumulator_value value: {initial_accumulator_value}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        _check_differentiable(differentiable, fused)
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)
        # the accumulators exist from the start (PyTorch creates them in the constructor)
        for group in self.param_groups:
            for p in group["params"]:
                self._init_state(p, group)

    def _init_state(self, p, group):
        st = self.state[p]
        st["step"] = _step_tensor()
        st["sum"] = _zeros_like(p, group["initial_accumulator_value"])
        return st

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("foreach", None)
            group.setdefault("maximize", False)
            group.setdefault("differentiable", False)
            group.setdefault("fused", None)
        self._steps_to_tensors()

    def share_memory(self):
        """Kept for API compatibility (state lives in the backend's memory)."""

    @_no_grad_step
    def step(self, closure=None):
        """One Adagrad step; returns the closure's loss when a closure is given."""
        loss = None
        if closure is not None:
            loss = _call_closure(closure)
        state = self.state
        for group in self.param_groups:
            lr = _to_scalar(group["lr"])
            lr_decay = group["lr_decay"]
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
                if "sum" not in st:          # a parameter added with add_param_group
                    st = self._init_state(p, group)
                step = _inc_step(st["step"])
                gd, owned = _prep_grad(k, p, g, maximize, weight_decay)
                clr = lr / (1 + (step - 1) * lr_decay)
                s_t = st["sum"]
                s = s_t._data
                tmp = k["mul"](gd, gd)
                k["add"](s, tmp, out=s)
                _bump(s_t)
                std = k["sqrt"](s)
                k["add"](std, eps, out=std)
                # p.addcdiv_(g, std, value=-clr)
                k["mul"](gd, -clr, out=tmp)
                k["div"](tmp, std, out=tmp)
                k["add"](pd, tmp, out=pd)
                _bump(p)
        return loss
