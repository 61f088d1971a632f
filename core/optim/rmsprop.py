"""RMSprop (Hinton), optionally centered and with momentum — PyTorch's algorithm step for step:

    g = ±grad (+ weight_decay * p)
    v = alpha * v + (1 - alpha) * g * g
    avg = sqrt(v - g_avg^2) with g_avg = lerp(g_avg, g, 1 - alpha)  (centered) | sqrt(v);  avg += eps
    b = momentum * b + g / avg;  p = p - lr * b      (momentum > 0)
    p = p - lr * g / avg                              (otherwise)
"""
from __future__ import annotations

from .optimizer import _ParamwiseOptimizer, _bump, _check_args, _lerp_, _to_scalar, _zeros_like

__all__ = ["RMSprop"]


class RMSprop(_ParamwiseOptimizer):
    """RMSprop(params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False, *,
    maximize=False)"""

    _setstate_defaults = dict(momentum=0, centered=False, foreach=None, maximize=False, differentiable=False,
                              capturable=False)

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False,
                 capturable=False, foreach=None, maximize=False, differentiable=False):
        _check_args(differentiable, lr=lr, eps=eps, momentum=momentum, weight_decay=weight_decay, alpha=alpha)
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered,
                        weight_decay=weight_decay, capturable=capturable, foreach=foreach, maximize=maximize,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    def _state_buffers(self, group):
        names = ["square_avg"]
        if group["momentum"] > 0:
            names.append("momentum_buffer")
        if group["centered"]:
            names.append("grad_avg")
        return names

    def _group_update(self, group):
        lr = _to_scalar(group["lr"])
        alpha = group["alpha"]
        eps = group["eps"]
        momentum = group["momentum"]
        centered = group["centered"]

        def update(p, gd, owned, st, step):
            k = p._k
            pd = p._data
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
        return update
