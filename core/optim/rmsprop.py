"""RMSprop (Hinton), optionally centered and with momentum — PyTorch's algorithm step for step:

    g = ±grad (+ weight_decay * p)
    v = alpha * v + (1 - alpha) * g * g
    avg = sqrt(v - g_avg^2) with g_avg = lerp(g_avg, g, 1 - alpha)  (centered) | sqrt(v);  avg += eps
    b = momentum * b + g / avg;  p = p - lr * b      (momentum > 0)
    p = p - lr * g / avg                              (otherwise)
"""
from __future__ import annotations

from .optimizer import (Optimizer, _bump, _call_closure, _check_differentiable, _check_lr, _inc_step, _lerp_,
                        _no_grad_step, _prep_grad, _step_tensor, _to_scalar, _zeros_like)

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    """RMSprop(params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False, *,
    maximize=False)"""

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False,
                 capturable=False, foreach=None, maximize=False, differentiable=False):
        _check_lr(lr)
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= momentum:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= alpha:
            raise ValueError(f"Invalid alpha value: {alpha}")
        _check_differentiable(differentiable)
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered,
                        weight_decay=weight_decay, capturable=capturable, foreach=foreach, maximize=maximize,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("momentum", 0)
            group.setdefault("centered", False)
            group.setdefault("foreach", None)
            group.setdefault("maximize", False)
            group.setdefault("differentiable", False)
            group.setdefault("capturable", False)
        self._steps_to_tensors()

    @_no_grad_step
    def step(self, closure=None):
        """One RMSprop step; returns the closure's loss when a closure is given."""
        loss = None
        if closure is not None:
            loss = _call_closure(closure)
        state = self.state
        for group in self.param_groups:
            lr = _to_scalar(group["lr"])
            alpha = group["alpha"]
            eps = group["eps"]
            weight_decay = group["weight_decay"]
            momentum = group["momentum"]
            centered = group["centered"]
            maximize = group["maximize"]
            for p in group["params"]:
                g = p.grad
                if g is None:
                    continue
                k = p._k
                pd = p._data
                st = state[p]
                if len(st) == 0:
                    st["step"] = _step_tensor()
                    st["square_avg"] = _zeros_like(p)
                    if momentum > 0:
                        st["momentum_buffer"] = _zeros_like(p)
                    if centered:
                        st["grad_avg"] = _zeros_like(p)
                _inc_step(st["step"])
                gd, owned = _prep_grad(k, p, g, maximize, weight_decay)
                sq_t = st["square_avg"]
                sq = sq_t._data
                # square_avg.mul_(alpha).addcmul_(g, g, value=1 - alpha)
                k["mul"](sq, alpha, out=sq)
                tmp = k["mul"](gd, 1 - alpha)
                k["mul"](tmp, gd, out=tmp)
                k["add"](sq, tmp, out=sq)
                _bump(sq_t)
                if centered:
                    ga_t = st.get("grad_avg")
                    if ga_t is None:                 # centered turned on after the state was made
                        ga_t = st["grad_avg"] = _zeros_like(p)
                    ga = ga_t._data
                    _lerp_(k, ga, gd, 1 - alpha, scratch=tmp)
                    _bump(ga_t)
                    # avg = square_avg.addcmul(grad_avg, grad_avg, value=-1).sqrt_()
                    avg = k["mul"](ga, -1.0)
                    k["mul"](avg, ga, out=avg)
                    k["add"](sq, avg, out=avg)
                    k["sqrt"](avg, out=avg)
                else:
                    avg = k["sqrt"](sq)
                k["add"](avg, eps, out=avg)
                if momentum > 0:
                    buf_t = st.get("momentum_buffer")
                    if buf_t is None:                # momentum turned on after the state was made
                        buf_t = st["momentum_buffer"] = _zeros_like(p)
                    buf = buf_t._data
                    k["mul"](buf, momentum, out=buf)
                    k["div"](gd, avg, out=tmp)
                    k["add"](buf, tmp, out=buf)
                    _bump(buf_t)
                    k["mul"](buf, -lr, out=tmp)
                    k["add"](pd, tmp, out=pd)
                else:
                    # p.addcdiv_(g, avg, value=-lr)
                    k["mul"](gd, -lr, out=tmp)
                    k["div"](tmp, avg, out=tmp)
                    k["add"](pd, tmp, out=pd)
                _bump(p)
        return loss
