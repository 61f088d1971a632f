"""Optional kernels of the loss family (specs and decompositions).

cross_entropy with class-index targets as one fused forward (row log-sum-exp and the picked / smoothed
negative log-likelihood in one pass, reduced) and one fused backward (softmax minus the smoothed
one-hot, scaled). Each kernel named in OPTIONAL has a decomposition here taking the kernel table K
first; a backend may provide it natively instead. The backward kernel is used only when no graph of
the backward is being built (create_graph off); otherwise the frontend runs the same formula in
Tensor ops, so gradients of any order still hold.
"""
from __future__ import annotations

from .optional_transformer import _dt, in_float32

OPTIONAL: dict[str, str] = {
    "cross_entropy_loss": (
        "cross_entropy_loss(x, target, weight, ignore_index, label_smoothing, reduction) -> (loss, lse, "
        "denom): x (M, C) floating logits, M, C > 0; target (M,) int64, each in [0, C) or == ignore_index "
        "(an int); weight (C,) in x's dtype or None (all 1); label_smoothing s in [0, 1]. With "
        "lse_i = log sum_c exp(x_ic), w_t = weight[target_i] (0 for ignored rows, whose loss is exactly 0): "
        "l_i = (1 - s) w_t (lse_i - x_i,target_i) + (s / C) sum_c weight_c (lse_i - x_ic). Returns loss "
        "= l (M,) for reduction 'none', sum(l) (0-d) for 'sum', sum(l) / denom (0-d; NaN when denom is 0) "
        "for 'mean'; lse (M,); denom = sum_i w_t (0-d). All in x's dtype"),
    "cross_entropy_loss_backward": (
        "cross_entropy_loss_backward(grad, x, target, weight, lse, denom, ignore_index, label_smoothing, "
        "reduction) -> dx (M, C) in x's dtype: the gradient of cross_entropy_loss's loss for its output "
        "gradient grad ((M,) for 'none', 0-d otherwise), given the forward's lse and denom. With "
        "p = exp(x - lse), g_i = grad_i ('none'), grad ('sum'), grad / denom ('mean'): row i is "
        "g_i ((1 - s) w_t (p_i - onehot(target_i)) + (s / C) (sum(weight) p_i - weight)); exactly 0 for "
        "ignored rows"),
}


def _in_float32(fn):
    """fn computed in float32 for float16 / bfloat16 x (argument 0, or 1 for the backward: grad comes first)."""
    return in_float32(fn, 1 if fn.__name__.endswith("backward") else 0)


def _rows(K, x, target, weight, ignore_index):
    """(safe target (M, 1), valid (M,) in x's dtype, w_t (M,)): the shared per-row quantities."""
    m = x.shape[0]
    ign = K["eq"](target, ignore_index)
    safe = K["reshape"](K["where"](ign, K["full"]((), 0, "int64"), target), (m, 1))
    valid = K["sub"](K["full"]((), 1, _dt(x)), K["astype"](ign, _dt(x)))
    wt = valid if weight is None else K["mul"](K["reshape"](K["index"](weight, (safe,)), (m,)), valid)
    return safe, valid, wt


def _lse(K, x):
    mx = K["max"](x, (1,), True)
    return K["add"](K["reshape"](mx, (x.shape[0],)),
                    K["log"](K["sum"](K["exp"](K["sub"](x, mx)), (1,), False)))


@_in_float32
def cross_entropy_loss(K, x, target, weight, ignore_index, label_smoothing, reduction):
    m, c = x.shape
    s = float(label_smoothing)
    safe, valid, wt = _rows(K, x, target, weight, ignore_index)
    lse = _lse(K, x)
    nll = K["sub"](lse, K["reshape"](K["gather"](x, safe, 1), (m,)))        # lse - x_t
    loss = K["mul"](nll, wt)
    if s > 0:
        if weight is None:
            smooth = K["sub"](K["mul"](lse, float(c)), K["sum"](x, (1,), False))
        else:
            sw = K["sum"](weight, None, False)
            smooth = K["sub"](K["mul"](lse, sw), K["sum"](K["mul"](x, K["reshape"](weight, (1, c))), (1,), False))
        loss = K["add"](K["mul"](loss, 1.0 - s), K["mul"](smooth, s / c))
    # ignored rows exactly 0 even where x holds inf / NaN
    loss = K["where"](K["eq"](valid, 0), K["full"]((), 0, _dt(x)), loss)
    denom = K["sum"](wt, None, False)
    if reduction == "sum":
        loss = K["sum"](loss, None, False)
    elif reduction == "mean":
        loss = K["div"](K["sum"](loss, None, False), denom)
    return loss, lse, denom


@_in_float32
def cross_entropy_loss_backward(K, grad, x, target, weight, lse, denom, ignore_index, label_smoothing,
                                reduction):
    m, c = x.shape
    s = float(label_smoothing)
    safe, valid, wt = _rows(K, x, target, weight, ignore_index)
    g = K["div"](grad, denom) if reduction == "mean" else grad
    g = K["mul"](K["broadcast_to"](g, (m,)), valid)                       # 0 for ignored rows
    p = K["exp"](K["sub"](x, K["reshape"](lse, (m, 1))))
    onehot = K["astype"](K["eq"](K["reshape"](K["arange"](0, c, 1, "int64"), (1, c)), safe), _dt(x))
    a = K["reshape"](K["mul"](K["mul"](g, wt), 1.0 - s), (m, 1))
    dx = K["mul"](K["sub"](p, onehot), a)
    if s > 0:
        gs = K["reshape"](K["mul"](g, s / c), (m, 1))
        if weight is None:
            dx = K["add"](dx, K["mul"](K["sub"](K["mul"](p, float(c)), 1.0), gs))
        else:
            sw = K["sum"](weight, None, False)
            dx = K["add"](dx, K["mul"](K["sub"](K["mul"](p, sw), K["reshape"](weight, (1, c))), gs))
    # ignored rows exactly 0 even where x holds inf / NaN or denom is 0
    return K["where"](K["eq"](K["reshape"](valid, (m, 1)), 0), K["full"]((), 0, _dt(x)), dx)
