"""Stochastic gradient descent, with optional momentum (heavy-ball or Nesterov), dampening,
weight decay and maximization — PyTorch's algorithm step for step:

    g = ±grad + weight_decay * p
    b = g (first step) | momentum * b + (1 - dampening) * g
    g = g + momentum * b (nesterov) | b
    p = p - lr * g
"""
from __future__ import annotations

from .optimizer import _ParamwiseOptimizer, _bump, _check_differentiable, _check_lr, _to_scalar
from ..tensor import _make

__all__ = ["SGD"]


class SGD(_ParamwiseOptimizer):
    """SGD(params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False, *, maximize=False)"""

    _setstate_defaults = dict(nesterov=False, maximize=False, foreach=None, differentiable=False, fused=False)
    _step_state = False
    _lazy_state = False                # the momentum buffer starts as a copy of the first gradient

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False, *,
                 maximize=False, foreach=None, differentiable=False, fused=None):
        _check_lr(lr)
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        _check_differentiable(differentiable, fused)
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                        nesterov=nesterov, maximize=maximize, foreach=foreach, differentiable=differentiable,
                        fused=fused)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, defaults)

    def _group_update(self, group):
        lr = _to_scalar(group["lr"])
        momentum = group["momentum"]
        dampening = group["dampening"]
        nesterov = group["nesterov"]
        neg_lr = -lr
        state = self.state

        def update(p, gd, owned, st, step):
            k = p._k
            pd = p._data
            if momentum != 0:
                st = state[p]
                buf = st.get("momentum_buffer")
                if buf is None:
                    buf = _make(gd if owned else k["copy"](gd), p._dtype, k, p._dev)
                    st["momentum_buffer"] = buf
                    owned = False          # gd may now be the buffer's array
                else:
                    bd = buf._data
                    k["mul"](bd, momentum, out=bd)
                    if dampening != 0:
                        t = k["mul"](gd, 1 - dampening, out=gd) if owned and not nesterov \
                            else k["mul"](gd, 1 - dampening)
                        k["add"](bd, t, out=bd)
                    else:
                        k["add"](bd, gd, out=bd)
                    _bump(buf)
                if nesterov:
                    # g + momentum * buf
                    t = k["mul"](buf._data, momentum)
                    k["add"](gd, t, out=t)
                    gd, owned = t, True
                else:
                    gd, owned = buf._data, False
            t = k["mul"](gd, neg_lr, out=gd) if owned else k["mul"](gd, neg_lr)
            k["add"](pd, t, out=pd)
            _bump(p)
        return update
