"""Optional kernels of the optimizer family (specs and decompositions written in required primitives).

`adam_step` is one parameter's Adam / AdamW update, in place: what optim.Adam and optim.AdamW run per
parameter (about a dozen pointwise kernel calls when decomposed; one pass natively). The decomposition
below is that sequence of calls, in PyTorch's order of operations, so a native kernel that follows
the spec element by element gives the same values.
"""
from __future__ import annotations

OPTIONAL: dict[str, str] = {
    "adam_step": (
        "adam_step(p, g, m, v, vmax, lr, beta1, beta2, eps, decay, step) -> None: one Adam step for a "
        "parameter p, in place, with p, g, m, v (and vmax) float arrays of one shape and dtype; g is only "
        "read; vmax is None, or AMSGrad's running maximum of v. Python numbers lr, beta1, beta2, eps, decay "
        "(decoupled weight decay lr * weight_decay, 0 for none), step t >= 1. In the arrays' dtype, "
        "elementwise: p *= 1 - decay (when decay != 0); m = lerp(m, g, 1 - beta1) (PyTorch's lerp: "
        "m + w (g - m) for w < 0.5, else g - (g - m) (1 - w)); v = v beta2 + (g (1 - beta2)) g; vmax = "
        "max(vmax, v) (NaN propagating); d = sqrt(vmax or v) / sqrt(1 - beta2^t) + eps; p += "
        "(m (-lr / (1 - beta1^t))) / d"),
}


def lerp_(K, m, g, w, scratch=None):
    """m.lerp_(g, w) with PyTorch's formula choice, in kernel calls; returns the temporary it used
    (scratch, when given). The optimizers' moment updates use it too."""
    t = K["sub"](g, m, out=scratch) if scratch is not None else K["sub"](g, m)
    if w < 0.5:
        K["mul"](t, w, out=t)
        K["add"](m, t, out=m)
    else:
        K["mul"](t, 1.0 - w, out=t)
        K["sub"](g, t, out=m)
    return t


def adam_step(K, p, g, m, v, vmax, lr, beta1, beta2, eps, decay, step):
    if decay != 0:
        K["mul"](p, 1 - decay, out=p)
    tmp = lerp_(K, m, g, 1 - beta1)
    K["mul"](v, beta2, out=v)
    K["mul"](g, 1 - beta2, out=tmp)
    K["mul"](tmp, g, out=tmp)
    K["add"](v, tmp, out=v)
    if vmax is not None:
        K["maximum"](vmax, v, out=vmax)
    denom = K["sqrt"](v if vmax is None else vmax)
    K["div"](denom, (1 - beta2 ** step) ** 0.5, out=denom)
    K["add"](denom, eps, out=denom)
    K["mul"](m, -(lr / (1 - beta1 ** step)), out=tmp)     # p.addcdiv_(m, denom, value=-step_size)
    K["div"](tmp, denom, out=tmp)
    K["add"](p, tmp, out=p)
