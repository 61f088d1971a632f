"""NAdam (Dozat, Adam with Nesterov momentum), with L2 or decoupled weight decay and maximization —
PyTorch's algorithm step for step:

    t += 1
    g = ±grad (+ weight_decay * p)          |  p = p * (1 - lr * weight_decay)  (decoupled)
    mu_t = beta1 * (1 - 0.5 * 0.96^(t * momentum_decay));  mu_{t+1} likewise with t + 1
    mu_product = mu_product * mu_t             (a 0-d state tensor, like "step")
    m = lerp(m, g, 1 - beta1)
    v = beta2 * v + (1 - beta2) * g * g
    denom = sqrt(v / (1 - beta2^t)) + eps
    p = p - lr (1 - mu_t) / (1 - mu_product) * g / denom
          - lr mu_{t+1} / (1 - mu_product * mu_{t+1}) * m / denom
"""
from __future__ import annotations

from ..tensor import Tensor
from .optimizer import _bump, _check_args, _step_tensor, _zeros_like
from .radam import _AdamFamily, _adam_moments_, _decay_weights_

__all__ = ["NAdam"]


def _scale_(t, factor):
    """t *= factor for a 0-d state tensor; returns the new value as a Python float."""
    k = t._k
    d = t._data
    k["mul"](d, factor, out=d)
    _bump(t)
    return float(k["to_numpy"](d))


def _addcdiv_(k, x, t1, t2, value, scratch):
    """x.addcdiv_(t1, t2, value=value) on arrays, computed as x + (value * t1) / t2."""
    k["mul"](t1, value, out=scratch)
    k["div"](scratch, t2, out=scratch)
    k["add"](x, scratch, out=x)


class NAdam(_AdamFamily):
    """NAdam(params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, momentum_decay=4e-3,
    decoupled_weight_decay=False, *, maximize=False)"""

    _setstate_defaults = dict(maximize=False, foreach=None, capturable=False, differentiable=False,
                              decoupled_weight_decay=False)

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, momentum_decay=4e-3,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False):
        _check_args(differentiable, lr=lr, eps=eps, betas=betas, weight_decay=weight_decay,
                    momentum_decay=momentum_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, momentum_decay=momentum_decay,
                        decoupled_weight_decay=decoupled_weight_decay, maximize=maximize, foreach=foreach,
                        capturable=capturable, differentiable=differentiable)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for st in self.state.values():
            if isinstance(st, dict) and "mu_product" in st and not isinstance(st["mu_product"], Tensor):
                st["mu_product"] = _step_tensor(float(st["mu_product"]))

    def _init_state(self, p, group):
        st = self.state[p]
        st["step"] = _step_tensor()
        st["mu_product"] = _step_tensor(1.0)
        st["exp_avg"] = _zeros_like(p)
        st["exp_avg_sq"] = _zeros_like(p)
        return st

    def _group_update(self, group):
        lr, beta1, beta2, eps, decoupled_decay = self._options(group)
        momentum_decay = group["momentum_decay"]

        def update(p, gd, owned, st, step):
            k = p._k
            pd = p._data
            bias_correction2 = 1 - beta2 ** step
            if decoupled_decay != 0:
                _decay_weights_(p, lr, decoupled_decay)
            mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * momentum_decay)))
            mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * momentum_decay)))
            mu_product = _scale_(st["mu_product"], mu)
            m_t, v_t = st["exp_avg"], st["exp_avg_sq"]
            m, v = m_t._data, v_t._data
            tmp = _adam_moments_(k, m, v, gd, beta1, beta2)
            denom = k["div"](v, bias_correction2)
            k["sqrt"](denom, out=denom)
            k["add"](denom, eps, out=denom)
            _addcdiv_(k, pd, gd, denom, -lr * (1.0 - mu) / (1.0 - mu_product), tmp)
            _addcdiv_(k, pd, m, denom, (-lr * mu_next) / (1.0 - mu_product * mu_next), tmp)
            _bump(m_t)
            _bump(v_t)
            _bump(p)
        return update
