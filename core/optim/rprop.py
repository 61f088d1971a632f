"""Rprop (resilient backpropagation, Riedmiller & Braun) — PyTorch's algorithm step for step:

    t += 1
    g = ±grad
    s = sign(g * prev)
    eta = etaplus where s > 0, etaminus where s < 0, 1 where s == 0
    step_size = clamp(step_size * eta, step_size_min, step_size_max)   (step_size starts at lr)
    g = 0 where eta == etaminus
    p = p - sign(g) * step_size
    prev = g
"""
from __future__ import annotations

from .optimizer import _ParamwiseOptimizer, _bump, _check_lr, _check_differentiable, _step_tensor, _to_scalar, \
    _zeros_like

__all__ = ["Rprop"]


class Rprop(_ParamwiseOptimizer):
    """Rprop(params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *, maximize=False)"""

    _setstate_defaults = dict(foreach=None, maximize=False, differentiable=False, capturable=False)

    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *, capturable=False, foreach=None,
                 maximize=False, differentiable=False):
        _check_lr(lr)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        _check_differentiable(differentiable)
        defaults = dict(lr=lr, etas=etas, step_sizes=step_sizes, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def _init_state(self, p, group):
        st = self.state[p]
        st["step"] = _step_tensor()
        st["prev"] = _zeros_like(p)
        st["step_size"] = _zeros_like(p, _to_scalar(group["lr"]))
        return st

    def _grad_weight_decay(self, group):
        return 0

    def _group_update(self, group):
        etaminus, etaplus = group["etas"]
        step_size_min, step_size_max = group["step_sizes"]

        def update(p, gd, owned, st, step):
            k = p._k
            pd = p._data
            dt = p._dtype.name
            prev_t, ss_t = st["prev"], st["step_size"]
            prev, ss = prev_t._data, ss_t._data
            # sign = grad.mul(prev).sign(); then sign > 0 -> etaplus, < 0 -> etaminus, == 0 -> 1
            eta = k["mul"](gd, prev)
            k["sign"](eta, out=eta)
            eta = k["where"](k["gt"](eta, 0), k["full"]((), etaplus, dt), eta)
            eta = k["where"](k["lt"](eta, 0), k["full"]((), etaminus, dt), eta)
            eta = k["where"](k["eq"](eta, 0), k["full"]((), 1, dt), eta)
            # step_size.mul_(sign).clamp_(step_size_min, step_size_max)
            k["mul"](ss, eta, out=ss)
            k["maximum"](ss, step_size_min, out=ss)
            k["minimum"](ss, step_size_max, out=ss)
            # grad[sign == etaminus] = 0;  p.addcmul_(grad.sign(), step_size, value=-1);  prev = grad
            g = k["where"](k["eq"](eta, etaminus), k["full"]((), 0, dt), gd)
            k["assign"](prev, g)
            k["sign"](g, out=g)
            k["mul"](g, ss, out=g)
            k["sub"](pd, g, out=pd)
            _bump(ss_t)
            _bump(prev_t)
            _bump(p)
        return update
