"""Adam (Kingma & Ba), with optional AMSGrad, L2 or decoupled weight decay and maximization —
PyTorch's algorithm step for step:

    t += 1
    g = ±grad (+ weight_decay * p)          |  p = p * (1 - lr * weight_decay)  (decoupled, AdamW)
    m = lerp(m, g, 1 - beta1)                  (= beta1 * m + (1 - beta1) * g)
    v = beta2 * v + (1 - beta2) * g * g
    v_max = max(v_max, v)                      (amsgrad; the denominator then uses v_max)
    p = p - lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
"""
from __future__ import annotations

from .optimizer import (Optimizer, _bump, _call_closure, _check_differentiable, _check_lr, _inc_step, _lerp_,
                        _no_grad_step, _prep_grad, _step_tensor, _to_scalar, _zeros_like)

__all__ = ["Adam"]


def _check_betas(betas):
    if not 0.0 <= betas[0] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
    if not 0.0 <= betas[1] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")


class Adam(Optimizer):
    """Adam(params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *,
    maximize=False, decoupled_weight_decay=False)"""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *,
                 foreach=None, maximize=False, capturable=False, differentiable=False, fused=None,
                 decoupled_weight_decay=False):
        _check_lr(lr)
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        _check_betas(betas)
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        _check_differentiable(differentiable, fused)
        betas = tuple(_to_scalar(b) for b in betas)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad, maximize=maximize,
                        foreach=foreach, capturable=capturable, differentiable=differentiable, fused=fused,
                        decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("amsgrad", False)
            group.setdefault("maximize", False)
            group.setdefault("foreach", None)
            group.setdefault("capturable", False)
            group.setdefault("differentiable", False)
            group.setdefault("decoupled_weight_decay", False)
            group.setdefault("fused", None)
        self._steps_to_tensors()

    @_no_grad_step
    def step(self, closure=None):
        """One Adam step; returns the closure's loss when a closure is given."""
        loss = None
        if closure is not None:
            loss = _call_closure(closure)
        state = self.state
        for group in self.param_groups:
            lr = _to_scalar(group["lr"])
            beta1, beta2 = (_to_scalar(b) for b in group["betas"])
            eps = group["eps"]
            weight_decay = group["weight_decay"]
            amsgrad = group["amsgrad"]
            maximize = group["maximize"]
            decoupled = group.get("decoupled_weight_decay", False)
            w1, w2 = 1 - beta1, 1 - beta2
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
                    st["exp_avg_sq"] = _zeros_like(p)
                    if amsgrad:
                        st["max_exp_avg_sq"] = _zeros_like(p)
                step = _inc_step(st["step"])
                if weight_decay != 0 and decoupled:
                    k["mul"](pd, 1 - lr * weight_decay, out=pd)
                    gd, owned = _prep_grad(k, p, g, maximize, 0)
                else:
                    gd, owned = _prep_grad(k, p, g, maximize, weight_decay)
                m_t, v_t = st["exp_avg"], st["exp_avg_sq"]
                m, v = m_t._data, v_t._data
                tmp = _lerp_(k, m, gd, w1)
                k["mul"](v, beta2, out=v)
                k["mul"](gd, w2, out=tmp)
                k["mul"](tmp, gd, out=tmp)
                k["add"](v, tmp, out=v)
                bias_correction1 = 1 - beta1 ** step
                bias_correction2 = 1 - beta2 ** step
                step_size = lr / bias_correction1
                bc2_sqrt = bias_correction2 ** 0.5
                if amsgrad:
                    vm_t = st.get("max_exp_avg_sq")
                    if vm_t is None:                 # amsgrad turned on after the state was made
                        vm_t = st["max_exp_avg_sq"] = _zeros_like(p)
                    vm = vm_t._data
                    k["maximum"](vm, v, out=vm)
                    _bump(vm_t)
                    denom = k["sqrt"](vm)
                else:
                    denom = k["sqrt"](v)
                k["div"](denom, bc2_sqrt, out=denom)
                k["add"](denom, eps, out=denom)
                # p.addcdiv_(m, denom, value=-step_size)
                k["mul"](m, -step_size, out=tmp)
                k["div"](tmp, denom, out=tmp)
                k["add"](pd, tmp, out=pd)
                _bump(m_t)
                _bump(v_t)
                _bump(p)
        return loss
