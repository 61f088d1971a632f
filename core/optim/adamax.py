"""Adamax (Adam with the infinity norm) — PyTorch's algorithm step for step:

    t += 1
    g = ±grad (+ weight_decay * p)
    m = lerp(m, g, 1 - beta1)
    u = max(beta2 * u, |g| + eps)
    p = p - lr / (1 - beta1^t) * m / u
"""
from __future__ import annotations

from .optimizer import _ParamwiseOptimizer, _bump, _check_args, _lerp_, _to_scalar

__all__ = ["Adamax"]


class Adamax(_ParamwiseOptimizer):
    """Adamax(params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, *, maximize=False)"""

    _setstate_defaults = dict(foreach=None, maximize=False, differentiable=False, capturable=False)

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, foreach=None, *,
                 maximize=False, differentiable=False, capturable=False):
        _check_args(differentiable, lr=lr, eps=eps, betas=betas, weight_decay=weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def _state_buffers(self, group):
        return ("exp_avg", "exp_inf")

    def _group_update(self, group):
        lr = _to_scalar(group["lr"])
        beta1, beta2 = (_to_scalar(b) for b in group["betas"])
        eps = group["eps"]

        def update(p, gd, owned, st, step):
            k = p._k
            pd = p._data
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
        return update
