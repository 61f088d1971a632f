"""Adagrad (Duchi et al.) — PyTorch's algorithm step for step:

    t += 1
    g = ±grad (+ weight_decay * p)
    clr = lr / (1 + (t - 1) * lr_decay)
    s = s + g * g                      (s starts at initial_accumulator_value)
    p = p - clr * g / (sqrt(s) + eps)
"""
from __future__ import annotations

from .optimizer import _ParamwiseOptimizer, _bump, _check_args, _step_tensor, _to_scalar, _zeros_like

__all__ = ["Adagrad"]


class Adagrad(_ParamwiseOptimizer):
    """Adagrad(params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10, *,
    maximize=False)"""

    _setstate_defaults = dict(foreach=None, maximize=False, differentiable=False, fused=None)
    _init_key = "sum"                  # a parameter added with add_param_group gets its state on its first step

    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10,
                 foreach=None, *, maximize=False, differentiable=False, fused=None):
        _check_args(differentiable, fused, lr=lr, lr_decay=lr_decay, weight_decay=weight_decay,
                    initial_accumulator_value=initial_accumulator_value, eps=eps)
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)
        # the accumulators exist from the start (PyTorch creates them in the constructor)
        for group in self.param_groups:
            for p in group["params"]:
                self._init_state(p, group)

    def _state_buffers(self, group):
        return ("sum",)

    def _init_state(self, p, group):
        st = self.state[p]
        st["step"] = _step_tensor()
        st["sum"] = _zeros_like(p, group["initial_accumulator_value"])
        return st

    def share_memory(self):
        """Kept for API compatibility (state lives in the backend's memory)."""

    def _group_update(self, group):
        lr = _to_scalar(group["lr"])
        lr_decay = group["lr_decay"]
        eps = group["eps"]

        def update(p, gd, owned, st, step):
            k = p._k
            pd = p._data
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
        return update
