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

from .optimizer import _ParamwiseOptimizer, _bump, _check_args, _to_scalar, _zeros_like

__all__ = ["Adam"]


def _check_betas(betas):
    _check_args(betas=betas)


class Adam(_ParamwiseOptimizer):
    """Adam(params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *,
    maximize=False, decoupled_weight_decay=False)"""

    _setstate_defaults = dict(amsgrad=False, maximize=False, foreach=None, capturable=False, differentiable=False,
                              decoupled_weight_decay=False, fused=None)

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *,
                 foreach=None, maximize=False, capturable=False, differentiable=False, fused=None,
                 decoupled_weight_decay=False):
        _check_args(differentiable, fused, lr=lr, eps=eps, betas=betas, weight_decay=weight_decay)
        betas = tuple(_to_scalar(b) for b in betas)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad, maximize=maximize,
                        foreach=foreach, capturable=capturable, differentiable=differentiable, fused=fused,
                        decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)

    def _state_buffers(self, group):
        return ("exp_avg", "exp_avg_sq", "max_exp_avg_sq") if group["amsgrad"] else ("exp_avg", "exp_avg_sq")

    def _grad_weight_decay(self, group):
        return 0 if group.get("decoupled_weight_decay", False) else group["weight_decay"]

    def _group_update(self, group):
        lr = _to_scalar(group["lr"])
        beta1, beta2 = (_to_scalar(b) for b in group["betas"])
        eps = group["eps"]
        weight_decay = group["weight_decay"]
        amsgrad = group["amsgrad"]
        decoupled = group.get("decoupled_weight_decay", False)

        def update(p, gd, owned, st, step):
            m_t, v_t = st["exp_avg"], st["exp_avg_sq"]
            vm_t = None
            if amsgrad:
                vm_t = st.get("max_exp_avg_sq")
                if vm_t is None:                 # amsgrad turned on after the state was made
                    vm_t = st["max_exp_avg_sq"] = _zeros_like(p)
            # one kernel for the whole update (tensorplug.dispatch.optional_optim; natively one loop)
            p._k["adam_step"](p._data, gd, m_t._data, v_t._data, None if vm_t is None else vm_t._data, lr,
                              beta1, beta2, eps, lr * weight_decay if (weight_decay != 0 and decoupled) else 0.0,
                              step)
            for t in (m_t, v_t, p) if vm_t is None else (m_t, v_t, vm_t, p):
                _bump(t)
        return update
