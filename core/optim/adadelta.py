"""Adadelta (Zeiler) — PyTorch's algorithm step for step:

    g = ±grad (+ weight_decay * p)
    v = rho * v + (1 - rho) * g * g
    delta = sqrt(u + eps) / sqrt(v + eps) * g
    u = rho * u + (1 - rho) * delta * delta
    p = p - lr * delta
"""
from __future__ import annotations

from .optimizer import _ParamwiseOptimizer, _bump, _check_args, _to_scalar

__all__ = ["Adadelta"]


class Adadelta(_ParamwiseOptimizer):
    """Adadelta(params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, *, maximize=False)"""

    _setstate_defaults = dict(foreach=None, maximize=False, differentiable=False, capturable=False)

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *, capturable=False,
                 maximize=False, differentiable=False):
        _check_args(differentiable, lr=lr, rho=rho, eps=eps, weight_decay=weight_decay)
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize,
                        capturable=capturable, foreach=foreach, differentiable=differentiable)
        super().__init__(params, defaults)

    def _state_buffers(self, group):
        return ("square_avg", "acc_delta")

    def _group_update(self, group):
        lr = _to_scalar(group["lr"])
        rho = group["rho"]
        eps = group["eps"]

        def update(p, gd, owned, st, step):
            k = p._k
            pd = p._data
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
        return update
