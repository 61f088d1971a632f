"""RAdam (Liu et al., rectified Adam), with L2 or decoupled weight decay and maximization —
PyTorch's algorithm step for step:

    t += 1
    g = ±grad (+ weight_decay * p)          |  p = p * (1 - lr * weight_decay)  (decoupled)
    m = lerp(m, g, 1 - beta1)
    v = beta2 * v + (1 - beta2) * g * g
    rho_inf = 2 / (1 - beta2) - 1;  rho_t = rho_inf - 2 t beta2^t / (1 - beta2^t)
    rho_t > 5:  r = sqrt((rho_t - 4)(rho_t - 2) rho_inf / ((rho_inf - 4)(rho_inf - 2) rho_t))
                p = p - m / (1 - beta1^t) * lr * sqrt(1 - beta2^t) / (sqrt(v) + eps) * r
    otherwise:  p = p - m / (1 - beta1^t) * lr
"""
from __future__ import annotations

from .optimizer import _ParamwiseOptimizer, _bump, _check_args, _lerp_, _to_scalar

__all__ = ["RAdam"]


def _adam_moments_(k, m, v, gd, beta1, beta2):
    """m.lerp_(g, 1 - beta1); v.mul_(beta2).addcmul_(g, g, value=1 - beta2). Returns a scratch array."""
    tmp = _lerp_(k, m, gd, 1 - beta1)
    k["mul"](v, beta2, out=v)
    k["mul"](gd, 1 - beta2, out=tmp)
    k["mul"](tmp, gd, out=tmp)
    k["add"](v, tmp, out=v)
    return tmp


def _decay_weights_(p, lr, weight_decay):
    """Decoupled weight decay: p.mul_(1 - lr * weight_decay)."""
    pd = p._data
    p._k["mul"](pd, 1 - lr * weight_decay, out=pd)


class _AdamFamily(_ParamwiseOptimizer):
    """What RAdam and NAdam share: exp_avg / exp_avg_sq state, L2 or decoupled weight decay."""

    def _state_buffers(self, group):
        return ("exp_avg", "exp_avg_sq")

    def _grad_weight_decay(self, group):
        return 0 if group["decoupled_weight_decay"] else group["weight_decay"]

    @staticmethod
    def _options(group):
        """(lr, beta1, beta2, eps, decoupled weight decay: 0 when the L2 penalty is used instead)."""
        beta1, beta2 = (_to_scalar(b) for b in group["betas"])
        decoupled_decay = group["weight_decay"] if group["decoupled_weight_decay"] else 0
        return _to_scalar(group["lr"]), beta1, beta2, group["eps"], decoupled_decay


class RAdam(_AdamFamily):
    """RAdam(params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, decoupled_weight_decay=False, *,
    maximize=False)"""

    _setstate_defaults = dict(foreach=None, maximize=False, differentiable=False, decoupled_weight_decay=False,
                              capturable=False)

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, decoupled_weight_decay=False,
                 *, foreach=None, maximize=False, capturable=False, differentiable=False):
        _check_args(differentiable, lr=lr, eps=eps, betas=betas, weight_decay=weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, maximize=maximize, foreach=foreach,
                        capturable=capturable, decoupled_weight_decay=decoupled_weight_decay,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    def _group_update(self, group):
        lr, beta1, beta2, eps, decoupled_decay = self._options(group)
        rho_inf = 2 / (1 - beta2) - 1

        def update(p, gd, owned, st, step):
            k = p._k
            pd = p._data
            if decoupled_decay != 0:
                _decay_weights_(p, lr, decoupled_decay)
            m_t, v_t = st["exp_avg"], st["exp_avg_sq"]
            m, v = m_t._data, v_t._data
            tmp = _adam_moments_(k, m, v, gd, beta1, beta2)
            bias_correction1 = 1 - beta1 ** step
            bias_correction2 = 1 - beta2 ** step
            rho_t = rho_inf - 2 * step * (beta2 ** step) / bias_correction2
            # bias_corrected_exp_avg * lr
            k["div"](m, bias_correction1, out=tmp)
            k["mul"](tmp, lr, out=tmp)
            if rho_t > 5.0:
                rect = ((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
                # * (sqrt(bias_correction2) / (sqrt(v) + eps)) * rect
                adaptive = k["sqrt"](v)
                k["add"](adaptive, eps, out=adaptive)
                k["div"](bias_correction2 ** 0.5, adaptive, out=adaptive)
                k["mul"](tmp, adaptive, out=tmp)
                k["mul"](tmp, rect, out=tmp)
            k["sub"](pd, tmp, out=pd)
            _bump(m_t)
            _bump(v_t)
            _bump(p)
        return update
