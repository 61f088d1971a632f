"""Loss functions of nn.functional (PyTorch names, arguments and defaults).

Every loss is composed of differentiable Tensor ops, or (binary_cross_entropy, the softplus used by
the logit losses) records a vjp written in Tensor ops, so gradients of any order work. All take
`reduction` ('none' | 'mean' | 'sum') and the legacy `size_average` / `reduce` flags.
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from .. import dtypes as _dt
from ..compiler._state import opaque as _opaque
from ..amp.state import state as _amp
from ..autograd import grad_mode
from ._core import Tensor, _gstate, _make, broadcast_shapes, cast_data, record

# -- reduction -----------------------------------------------------------------------------------------


def _legacy_reduction(size_average, reduce, emit_warning=True):
    """PyTorch's mapping of the deprecated size_average / reduce flags to a reduction string."""
    if size_average is None:
        size_average = True
    if reduce is None:
        reduce = True
    if size_average and reduce:
        r = "mean"
    elif reduce:
        r = "sum"
    else:
        r = "none"
    if emit_warning:
        warnings.warn(f"size_average and reduce args will be deprecated, please use reduction='{r}' instead.",
                      UserWarning, stacklevel=3)
    return r


def _resolve(size_average, reduce, reduction):
    if size_average is not None or reduce is not None:
        return _legacy_reduction(size_average, reduce)
    return reduction


def _check_reduction(reduction):
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")


def _reduce(loss, reduction):
    _check_reduction(reduction)
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    return loss.mean()


def _check_tensor(x, name, fn):
    if not isinstance(x, Tensor):
        raise TypeError(f"{fn}(): argument '{name}' (position {1 if name == 'input' else 2}) must be Tensor, "
                        f"not {type(x).__name__}")


def _float(x):
    return x if x._dtype.category == 2 else x.to(_dt.get_default_dtype())


def _size_warning(input, target, stacklevel=3):
    if tuple(input.shape) != tuple(target.shape):
        warnings.warn(f"Using a target size ({target.shape}) that is different to the input size "
                      f"({input.shape}). This will likely lead to incorrect results due to broadcasting. "
                      f"Please ensure they have the same size.", UserWarning, stacklevel=stacklevel)


def _same_size(input, target):
    if tuple(input.shape) != tuple(target.shape):
        raise ValueError(f"Using a target size ({target.shape}) that is different to the input size "
                         f"({input.shape}) is deprecated. Please ensure they have the same size.")


def _softplus_neg(x):
    """log(1 + exp(-x)) computed stably as max(-x, 0) + log1p(exp(-|x|)); gradient -sigmoid(-x)
    (exactly -1/2 at 0), itself written in Tensor ops."""
    with grad_mode.no_grad():
        v = (-x).clamp(min=0) + (-x.abs()).exp().log1p()
    r = _make(v._data, v._dtype, v._k, v._dev)
    if x._rg and _gstate.enabled:
        record("SoftplusNegBackward0", r, (x,), lambda g: (g * ((-x).sigmoid().neg()),), saved=(x,))
    return r


# -- regression losses ------------------------------------------------------------------------------------
def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Mean (or sum, or elementwise) absolute error |input - target|."""
    if _amp.on:
        return _amp.run("l1_loss", l1_loss, (input, target, size_average, reduce, reduction, weight))
    _check_tensor(input, "input", "l1_loss")
    _check_tensor(target, "target", "l1_loss")
    _size_warning(input, target)
    reduction = _resolve(size_average, reduce, reduction)
    _check_reduction(reduction)
    loss = (input - target).abs()
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Mean (or sum, or elementwise) squared error (input - target)^2."""
    if _amp.on:
        return _amp.run("mse_loss", mse_loss, (input, target, size_average, reduce, reduction, weight))
    _check_tensor(input, "input", "mse_loss")
    _check_tensor(target, "target", "mse_loss")
    _size_warning(input, target)
    reduction = _resolve(size_average, reduce, reduction)
    _check_reduction(reduction)
    d = input - target
    loss = d * d
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta (d = input - target); beta=0 is L1."""
    if _amp.on:
        return _amp.run("smooth_l1_loss", smooth_l1_loss,
                        (input, target, size_average, reduce, reduction, beta))
    _size_warning(input, target)
    reduction = _resolve(size_average, reduce, reduction)
    _check_reduction(reduction)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    d = (input - target).abs()
    if beta == 0:
        return _reduce(d, reduction)
    loss = _where(d < beta, 0.5 * d * d / beta, d - 0.5 * beta)
    return _reduce(loss, reduction)


def _where(cond, a, b):
    from .pointwise import where
    return where(cond, a, b)


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """0.5 d^2 where |d| < delta, else delta (|d| - 0.5 delta) (d = input - target)."""
    if _amp.on:
        return _amp.run("huber_loss", huber_loss, (input, target, reduction, delta, weight))
    _size_warning(input, target)
    _check_reduction(reduction)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    d = (input - target).abs()
    loss = _where(d < delta, 0.5 * d * d, delta * (d - 0.5 * delta))
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


# -- classification losses ---------------------------------------------------------------------------------
def _check_target_dtype(target):
    if target._dtype not in (_dt.int64, _dt.uint8):
        names = {"int32": "Int", "int16": "Short", "int8": "Char", "float32": "Float", "float64": "Double",
                 "float16": "Half", "bfloat16": "BFloat16", "bool": "Bool"}
        raise RuntimeError(f"expected target dtype to be Long or Byte, but got "
                           f"{names.get(target._dtype.name, target._dtype.name)}")
    return target if target._dtype is _dt.int64 else target.to(_dt.int64)


def _check_class_weight(weight, n_classes):
    if weight is None:
        return None
    if not isinstance(weight, Tensor):
        raise TypeError(f"weight must be a Tensor, not {type(weight).__name__}")
    if weight.ndim != 1 or weight.shape[0] != n_classes:
        raise RuntimeError(f"weight tensor should be defined either for all {n_classes} classes or no classes "
                           f"but got weight tensor of shape: {list(weight.shape)}")
    return weight


def _nll_shapes(input, target):
    """Validate (input, target) for nll-style losses; returns (input 2-d+, target, squeeze flag)."""
    if input.ndim < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {input.ndim})")
    if input.ndim == 1:
        if target.ndim > 1 or (target.ndim == 1 and target.shape[0] != 1):
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        return input.unsqueeze(0), target.reshape(1), target.ndim == 0
    n = input.shape[0]
    if target.ndim == 0 or target.shape[0] != n:
        tb = target.shape[0] if target.ndim else 0
        raise ValueError(f"Expected input batch_size ({n}) to match target batch_size ({tb}).")
    if input.ndim == 2:
        if target.ndim != 1:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    else:
        want = (n,) + tuple(input.shape[2:])
        if tuple(target.shape) != want:
            raise RuntimeError(f"Expected target size {list(want)}, got {list(target.shape)}")
    return input, target, False


def _check_bounds(target, c, ignore_index):
    """Raise for a target outside [0, c) that isn't ignore_index; True when none is ignored."""
    return _check_bounds_data(target._k, target._data, c, ignore_index)


@_opaque
def _check_bounds_data(k, data, c, ignore_index):
    # validate on one host copy of the (small) target: a single transfer instead of three syncs
    host = np.asarray(k["to_numpy"](data)).reshape(-1)
    valid_host = host != ignore_index
    all_valid = bool(valid_host.all())
    tv = host if all_valid else host[valid_host]
    if tv.size and (tv.min() < 0 or tv.max() >= c):
        bad = int(tv[(tv < 0) | (tv >= c)][0])
        raise IndexError(f"Target {bad} is out of bounds.")
    return all_valid


def _pick(input, target, weight, ignore_index):
    """(-input[n, target[n], ...] * w, w): the per-element nll loss and its weight (0 where ignored).
    input: (N, C, ...), target: (N, ...) int64."""
    all_valid = _check_bounds(target, input.shape[1], ignore_index)
    if all_valid and weight is None:
        picked = input.gather(1, target.unsqueeze(1)).squeeze(1)
        ones = _make(input._k["full"](tuple(picked.shape), 1, input._dtype.name), input._dtype, input._k,
                     input._dev)
        return -picked, ones, ones.to(_dt.bool_)
    valid = target != ignore_index
    safe = _where(valid, target, 0)
    picked = input.gather(1, safe.unsqueeze(1)).squeeze(1)
    vf = valid.to(input.dtype)
    if weight is not None:
        w = weight.to(input.dtype)[safe] * vf
    else:
        w = vf
    return -picked * w, w, valid


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
    """Negative log likelihood: -weight[t] * input[n, t] for t = target[n] (input holds
    log-probabilities, class dim 1; (C,) input with a 0-d target is one sample). 'mean' is the
    weighted mean over the targets that aren't `ignore_index`."""
    if _amp.on:
        return _amp.run("nll_loss", nll_loss,
                        (input, target, weight, size_average, ignore_index, reduce, reduction))
    _check_tensor(input, "input", "nll_loss")
    _check_tensor(target, "target", "nll_loss")
    reduction = _resolve(size_average, reduce, reduction)
    _check_reduction(reduction)
    target = _check_target_dtype(target)
    inp, tgt, squeeze = _nll_shapes(input, target)
    weight = _check_class_weight(weight, inp.shape[1])
    loss, w, _ = _pick(inp, tgt, weight, ignore_index)
    if reduction == "none":
        return loss.reshape(()) if squeeze else loss
    if reduction == "sum":
        return loss.sum()
    return loss.sum() / w.sum()


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                  reduction="mean", label_smoothing=0.0):
    """log_softmax over the class dim (1; 0 for a (C,) input) followed by nll_loss, or, when target
    has input's shape, the cross entropy with class probabilities -sum_c w_c p_c log q_c.
    label_smoothing mixes the target with the uniform distribution. Floating input with class indices
    runs the backend's fused cross_entropy_loss kernels (one autograd node, NllLossBackward0)."""
    if _amp.on:
        return _amp.run("cross_entropy", cross_entropy,
                        (input, target, weight, size_average, ignore_index, reduce, reduction,
                         label_smoothing))
    _check_tensor(input, "input", "cross_entropy")
    _check_tensor(target, "target", "cross_entropy")
    reduction = _resolve(size_average, reduce, reduction)
    _check_reduction(reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    if input.ndim < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {input.ndim})")
    cdim = 0 if input.ndim == 1 else 1
    n_classes = input.shape[cdim]
    if _fusable(input, target, weight):
        return _cross_entropy_fused(input, _check_target_dtype(target), weight, ignore_index, reduction,
                                    float(label_smoothing))
    logp = _float(input).log_softmax(cdim)
    wshape = [1] * input.ndim
    wshape[cdim] = n_classes
    if tuple(input.shape) == tuple(target.shape):
        # class probabilities
        if target._dtype.category != 2:
            raise RuntimeError(f"Expected floating point type for target with class probabilities, got "
                               f"{_legacy_name(target._dtype)}")
        if ignore_index >= 0:
            raise RuntimeError("ignore_index is not supported for floating point target")
        weight = _check_class_weight(weight, n_classes)
        t = target
        if label_smoothing > 0:
            t = t * (1 - label_smoothing) + label_smoothing / n_classes
        lw = logp if weight is None else logp * weight.reshape(wshape)
        loss = -(lw * t).sum(cdim)
        if reduction == "none":
            return loss
        if reduction == "sum":
            return loss.sum()
        return loss.sum() / (input.numel() // n_classes if n_classes else 1)
    target = _check_target_dtype(target)
    nll = nll_loss(logp, target, weight, ignore_index=ignore_index, reduction=reduction)
    if label_smoothing <= 0:
        return nll
    inp, tgt, squeeze = _nll_shapes(logp, target)
    weight = _check_class_weight(weight, n_classes)
    iw = inp if weight is None else inp * weight.reshape([1, n_classes] + [1] * (inp.ndim - 2))
    smooth = -iw.sum(1)
    ignore = tgt == ignore_index
    smooth = _where(ignore, 0.0, smooth)
    if reduction == "none":
        ret = smooth.reshape(()) if squeeze else smooth
    elif reduction == "sum":
        ret = smooth.sum()
    else:
        if weight is not None:
            safe = _where(ignore, 0, tgt)
            denom = (weight.to(inp.dtype)[safe] * (~ignore).to(inp.dtype)).sum()
        else:
            denom = (~ignore).to(inp.dtype).sum()
        ret = smooth.sum() / denom
    return (1 - label_smoothing) * nll + ret * (label_smoothing / n_classes)


def _fusable(input, target, weight):
    """The fused kernels take floating input with class-index targets (on input's backend) and a
    constant weight; anything else keeps the log_softmax + nll_loss composition."""
    return (input._dtype.category == 2 and tuple(input.shape) != tuple(target.shape) and input.numel() > 0
            and target._k is input._k
            and (weight is None or (isinstance(weight, Tensor) and weight._k is input._k
                                    and not (weight._rg and _gstate.enabled))))


def _cross_entropy_fused(input, target, weight, ignore_index, reduction, ls):
    """The backend's `cross_entropy_loss` kernel on input as (M, C) rows (class dim last); one
    autograd node whose backward is the fused `cross_entropy_loss_backward` kernel, or (create_graph)
    the same formula in Tensor ops."""
    _, tgt, squeeze = _nll_shapes(input, target)
    c = input.shape[0] if input.ndim == 1 else input.shape[1]
    weight = _check_class_weight(weight, c)
    _check_bounds(tgt, c, ignore_index)
    k, dt, dev = input._k, input._dtype, input._dev
    shape = tuple(input.shape)
    lead = (1,) if input.ndim == 1 else (shape[0],) + shape[2:]
    m = input.numel() // c
    perm = None if input.ndim <= 2 else (0,) + tuple(range(2, input.ndim)) + (1,)
    xd = input._data if perm is None else k["permute"](input._data, perm)
    xd = k["reshape"](xd, (m, c))
    td = k["reshape"](tgt._data, (m,))
    wd = None if weight is None else cast_data(weight, dt)
    ld, lse, denom = k["cross_entropy_loss"](xd, td, wd, int(ignore_index), ls, reduction)
    if reduction == "none":
        ld = k["reshape"](ld, () if squeeze else lead)
    out = _make(ld, dt, k, dev)
    if not (input._rg and _gstate.enabled):
        return out

    def back_rows(dx):
        """(M, C) rows back to input's layout."""
        if perm is None:
            return dx.reshape(shape)
        return dx.reshape(lead + (c,)).permute(*np.argsort(perm).tolist())

    def vjp(g):
        if not _gstate.enabled:
            gd = k["reshape"](cast_data(g, dt), (m,) if reduction == "none" else ())
            dx = k["cross_entropy_loss_backward"](gd, xd, td, wd, lse, denom, int(ignore_index), ls, reduction)
            # a fresh array in input's shape, so that the engine takes it as .grad without a copy
            if perm is not None:
                dx = k["copy"](k["permute"](k["reshape"](dx, lead + (c,)), tuple(np.argsort(perm).tolist())))
            elif input.ndim == 1:
                dx = k["reshape"](dx, shape)
            return (_make(dx, dt, k, dev),)
        return (back_rows(_ce_grad_tensor(g, input, perm, m, c, td, wd, denom, ignore_index, ls, reduction)),)
    return record("NllLossBackward0", out, (input,), vjp, saved=(input,))


def _ce_grad_tensor(g, input, perm, m, c, td, wd, denom, ignore_index, ls, reduction):
    """cross_entropy_loss_backward's formula in Tensor ops (create_graph): differentiable in input and g."""
    k, dt, dev = input._k, input._dtype, input._dev
    x = (input if perm is None else input.permute(*perm)).reshape(m, c)
    t = _make(td, _dt.int64, k, dev)
    valid = t != ignore_index
    safe = _where(valid, t, 0)
    vf = valid.to(dt)
    w = None if wd is None else _make(wd, dt, k, dev)
    wt = vf if w is None else w[safe] * vf
    gi = g.reshape(m) if reduction == "none" else g.reshape(1).expand(m)
    if reduction == "mean":
        gi = gi / _make(denom, dt, k, dev)
    gi = _where(valid, gi, 0.0)
    p = x.softmax(1)
    from .creation import arange
    onehot = (arange(c, device=input.device).reshape(1, c) == safe.reshape(m, 1)).to(dt)
    dx = (p - onehot) * (gi * wt * (1.0 - ls)).reshape(m, 1)
    if ls > 0:
        sw = float(c) if w is None else w.sum()
        dx = dx + (p * sw - (1.0 if w is None else w.reshape(1, c))) * (gi * vf * (ls / c)).reshape(m, 1)
    return _where(valid.reshape(m, 1), dx, 0.0)


def _legacy_name(dt):
    return {"int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
            "bool": "Bool", "float32": "Float", "float64": "Double", "float16": "Half",
            "bfloat16": "BFloat16"}.get(dt.name, dt.name)


def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None,
                     reduction="mean"):
    """Poisson negative log likelihood: exp(input) - target * input (log_input), else
    input - target * log(input + eps); `full` adds the Stirling term
    target log target - target + 0.5 log(2 pi target) where target > 1."""
    if _amp.on:
        return _amp.run("poisson_nll_loss", poisson_nll_loss,
                        (input, target, log_input, full, size_average, eps, reduce, reduction))
    reduction = _resolve(size_average, reduce, reduction)
    _check_reduction(reduction)
    if log_input:
        loss = input.exp() - target * input
    else:
        loss = input - target * (input + eps).log()
    if full:
        t = target
        big = t > 1
        ts = _where(big, t, 1.0)
        stirling = ts * ts.log() - ts + 0.5 * (2 * math.pi * ts).log()
        loss = loss + _where(big, stirling, 0.0)
    return _reduce(loss, reduction)


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """0.5 (log(max(var, eps)) + (input - target)^2 / max(var, eps)) (+ 0.5 log(2 pi) when full).
    var has input's shape, or one dim less / a last dim of 1 (homoscedastic); the clamp to eps
    passes the gradient through unchanged (as in PyTorch)."""
    if isinstance(var, (int, float)):
        from .creation import full as _full
        var = _full(tuple(input.shape), float(var), dtype=input.dtype, device=input.device)
    if tuple(var.shape) != tuple(input.shape):
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)
        elif tuple(input.shape[:-1]) == tuple(var.shape[:-1]) and var.shape[-1] == 1:
            pass
        else:
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    with grad_mode.no_grad():
        if bool((var < 0).any()):
            raise ValueError("var has negative entry/entries")
        bump = var.clamp(min=eps) - var
    v = var + bump          # the clamp, with the identity as its gradient
    loss = 0.5 * (v.log() + (input - target) ** 2 / v)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """-weight * (t log x + (1 - t) log(1 - x)), each log clamped to >= -100 (like PyTorch).
    Gradient w.r.t. x: weight (x - t) / max(x (1 - x), 1e-12)."""
    if _amp.on:
        return _amp.run("binary_cross_entropy", binary_cross_entropy,
                        (input, target, weight, size_average, reduce, reduction))
    reduction = _resolve(size_average, reduce, reduction)
    _check_reduction(reduction)
    _same_size(input, target)
    if input.numel():
        with grad_mode.no_grad():
            ok = bool(((input >= 0) & (input <= 1)).all())
        if not ok:
            raise RuntimeError("all elements of input should be between 0 and 1")
    loss = _bce(input, target)
    if weight is not None:
        if tuple(weight.shape) != tuple(input.shape):
            weight = weight.expand(*broadcast_shapes(tuple(target.shape), tuple(weight.shape)))
        loss = loss * weight
    return _reduce(loss, reduction)


def _clamped_log(x):
    """max(log(x), -100), without evaluating log(0)."""
    pos = x > 0
    return _where(pos, _where(pos, x, 1.0).log().clamp(min=-100), -100.0)


def _bce(x, t):
    with grad_mode.no_grad():
        lx = _clamped_log(x)
        l1x = _clamped_log(1 - x)
        v = -(t * lx + (1 - t) * l1x)
    r = _make(v._data, v._dtype, v._k, v._dev)
    if _gstate.enabled and (x._rg or t._rg):
        def vjp(g):
            gx = g * (x - t) / (x * (1 - x)).clamp(min=1e-12) if x._rg else None
            gt = g * (_clamped_log(1 - x) - _clamped_log(x)) if t._rg else None
            return gx, gt
        record("BinaryCrossEntropyBackward0", r, (x, t), vjp, saved=(x, t))
    return r


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None,
                                     reduction="mean", pos_weight=None):
    """BCE of sigmoid(input) computed stably: (1 - t) x + (1 + (pos_weight - 1) t) softplus(-x),
    with softplus(-x) = max(-x, 0) + log(1 + exp(-|x|))."""
    if _amp.on:
        return _amp.run("binary_cross_entropy_with_logits", binary_cross_entropy_with_logits,
                        (input, target, weight, size_average, reduce, reduction, pos_weight))
    reduction = _resolve(size_average, reduce, reduction)
    _check_reduction(reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Target size ({target.shape}) must be the same as input size ({input.shape})")
    sp = _softplus_neg(input)
    if pos_weight is not None:
        lw = (pos_weight - 1) * target + 1
        loss = (1 - target) * input + lw * sp
    else:
        loss = (1 - target) * input + sp
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """Pointwise KL divergence target (log target - input) (input: log-probabilities; with
    log_target the target is given as log-probabilities too). reduction 'batchmean' divides the
    sum by the batch size (the mathematically correct KL); 'mean' divides by the element count."""
    if _amp.on:
        return _amp.run("kl_div", kl_div, (input, target, size_average, reduce, reduction, log_target))
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    elif reduction == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the support size."
                      "'batchmean' divides only by the batch size, and aligns with the KL div math definition."
                      "'mean' will be changed to behave the same as 'batchmean' in the next major release.",
                      UserWarning, stacklevel=2)
    if reduction not in ("none", "mean", "sum", "batchmean"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if log_target:
        loss = target.exp() * (target - input)
    else:
        pos = target > 0
        ts = _where(pos, target, 1.0)
        loss = _where(pos, target * ts.log(), 0.0) - target * input
    if reduction == "batchmean":
        if input.ndim == 0:
            return loss.sum()
        return loss.sum() / input.shape[0]
    return _reduce(loss, reduction)


# -- embedding / ranking losses -----------------------------------------------------------------------------
def margin_ranking_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"):
    """max(0, -target (input1 - input2) + margin); target holds 1 or -1."""
    if _amp.on:
        return _amp.run("margin_ranking_loss", margin_ranking_loss,
                        (input1, input2, target, margin, size_average, reduce, reduction))
    reduction = _resolve(size_average, reduce, reduction)
    _check_reduction(reduction)
    if not (input1.ndim == input2.ndim == target.ndim):
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same dimension but got sizes: "
                           f"input1: {input1.shape}, input2: {input2.shape}, target: {target.shape} ")
    loss = (-target * (input1 - input2) + margin).clamp(min=0)
    return _reduce(loss, reduction)


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None, reduction="mean"):
    """input where target == 1, max(0, margin - input) where target == -1."""
    if _amp.on:
        return _amp.run("hinge_embedding_loss", hinge_embedding_loss,
                        (input, target, margin, size_average, reduce, reduction))
    reduction = _resolve(size_average, reduce, reduction)
    _check_reduction(reduction)
    margin_clamp = (margin - input).clamp(min=0)
    out_margin = _where(target != 1, margin_clamp, 0.0)
    out_self = _where(target != -1, input, 0.0)
    return _reduce(out_margin + out_self, reduction)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """log(1 + exp(-target * input)) (two-class logistic loss), computed stably."""
    if _amp.on:
        return _amp.run("soft_margin_loss", soft_margin_loss,
                        (input, target, size_average, reduce, reduction))
    reduction = _resolve(size_average, reduce, reduction)
    _check_reduction(reduction)
    _size_warning(input, target)
    return _reduce(_softplus_neg(target * input), reduction)


def cosine_embedding_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None,
                          reduction="mean"):
    """1 - cos(x1, x2) where target == 1, max(0, cos(x1, x2) - margin) where target == -1
    (cosine along dim 1 of (N, D) inputs, or dim 0 of (D,) inputs)."""
    if _amp.on:
        return _amp.run("cosine_embedding_loss", cosine_embedding_loss,
                        (input1, input2, target, margin, size_average, reduce, reduction))
    reduction = _resolve(size_average, reduce, reduction)
    _check_reduction(reduction)
    if input1.ndim != input2.ndim:
        raise RuntimeError(f"cosine_embedding_loss : All input tensors should have same dimension but got "
                           f"sizes: input1: {input1.shape}, input2: {input2.shape}")
    if input1.ndim not in (1, 2):
        raise RuntimeError(f"1D target tensor expects 2D input tensors, but found inputs with sizes "
                           f"{input1.shape} and {input2.shape}.")
    if input1.ndim == 2 and target.ndim != 1:
        raise RuntimeError(f"1D target tensor expects 2D input tensors, but found inputs with sizes "
                           f"{input1.shape} and {input2.shape}.")
    if input1.ndim == 1 and target.ndim != 0:
        raise RuntimeError(f"0D target tensor expects 1D input tensors, but found inputs with sizes "
                           f"{input1.shape} and {input2.shape}.")
    d = input1.ndim - 1
    eps = 1e-12
    prod = (input1 * input2).sum(d)
    m1 = (input1 * input1).sum(d) + eps
    m2 = (input2 * input2).sum(d) + eps
    cos = prod / (m1 * m2).sqrt()
    pos = 1 - cos
    neg = (cos - margin).clamp(min=0)
    loss = _where(target == 1, pos, 0.0) + _where(target == -1, neg, 0.0)
    return _reduce(loss, reduction)


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False, size_average=None,
                        reduce=None, reduction="mean"):
    """max(d(a, p) - d(a, n) + margin, 0) with d the pairwise p-norm distance (swap: use
    min(d(a, n), d(p, n)) as the negative distance)."""
    if _amp.on:
        return _amp.run("triplet_margin_loss", triplet_margin_loss,
                        (anchor, positive, negative, margin, p, eps, swap, size_average, reduce, reduction))
    reduction = _resolve(size_average, reduce, reduction)
    _check_reduction(reduction)
    a, pz, n = anchor.ndim, positive.ndim, negative.ndim
    if not (a == pz == n):
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the same number "
                           f"of dimensions, but got: anchor {a}D, positive {pz}D, and negative {n}D inputs")
    from .distance import pairwise_distance
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        from .pointwise import minimum
        d_neg = minimum(d_neg, pairwise_distance(positive, negative, p, eps))
    loss = (margin + d_pos - d_neg).clamp(min=0)
    return _reduce(loss, reduction)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None, margin=1.0,
                                      swap=False, reduction="mean"):
    """triplet_margin_loss with a custom distance function (default: pairwise_distance)."""
    _check_reduction(reduction)
    from .distance import pairwise_distance
    dist = distance_function if distance_function is not None else pairwise_distance
    d_pos = dist(anchor, positive)
    d_neg = dist(anchor, negative)
    if swap:
        from .pointwise import minimum
        d_neg = minimum(d_neg, dist(positive, negative))
    return _reduce((margin + d_pos - d_neg).clamp(min=0), reduction)


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """sum over targets j and non-targets i of max(0, 1 - (x[y_j] - x[i])) / C; each row of target
    lists class indices, ended by the first -1."""
    if _amp.on:
        return _amp.run("multilabel_margin_loss", multilabel_margin_loss,
                        (input, target, size_average, reduce, reduction))
    reduction = _resolve(size_average, reduce, reduction)
    _check_reduction(reduction)
    squeeze = input.ndim <= 1
    x = input.reshape(1, -1) if squeeze else input
    t = target.reshape(1, -1) if squeeze else target
    if x.ndim != 2 or tuple(t.shape) != tuple(x.shape):
        raise RuntimeError(f"inconsistent target size: {list(target.shape)} for input of size: "
                           f"{list(input.shape)}")
    t = _check_target_dtype(t)
    c = x.shape[1]
    # valid[n, j]: j comes before the first -1 of row n
    valid = ((t == -1).to(_dt.int64).cumsum(1) == 0)
    if t.numel():
        tv = t[valid]
        if tv.numel() and (int(tv.min()) < 0 or int(tv.max()) >= c):
            raise RuntimeError("multilabel_margin_loss: target out of range")
    safe = _where(valid, t, 0)
    from .creation import zeros
    # is_target[n, i]: class i is one of row n's targets (scatter_add: invalid slots add 0)
    is_target = (zeros(tuple(x.shape), dtype=x.dtype, device=x.device)
                 .scatter_add(1, safe, valid.to(x.dtype)) > 0).to(x.dtype)
    xy = x.gather(1, safe)                                   # (N, C): x at target j
    hinge = (1 - xy.unsqueeze(2) + x.unsqueeze(1)).clamp(min=0)     # (N, j, i)
    mask = valid.to(x.dtype).unsqueeze(2) * (1 - is_target).unsqueeze(1)
    loss = (hinge * mask).sum((1, 2)) / c
    if squeeze:
        loss = loss.reshape(())
    return _reduce(loss, reduction)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """Per sample: mean over classes of -(y log sigmoid(x) + (1 - y) log sigmoid(-x)) (weighted)."""
    reduction = _resolve(size_average, reduce, reduction)
    _check_reduction(reduction)
    loss = target * _softplus_neg(input) + (1 - target) * _softplus_neg(-input)
    if weight is not None:
        loss = loss * weight
    cdim = input.ndim - 1
    loss = loss.sum(cdim) / input.shape[cdim]
    return _reduce(loss, reduction)


def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None, reduce=None,
                      reduction="mean"):
    """sum_{i != y} max(0, margin - x[y] + x[i])^p / C (weighted by weight[y])."""
    if _amp.on:
        return _amp.run("multi_margin_loss", multi_margin_loss,
                        (input, target, p, margin, weight, size_average, reduce, reduction))
    reduction = _resolve(size_average, reduce, reduction)
    _check_reduction(reduction)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    squeeze = input.ndim <= 1
    x = input.reshape(1, -1) if squeeze else input
    t = _check_target_dtype(target.reshape(-1))
    c = x.shape[1]
    if t.numel() != x.shape[0]:
        raise RuntimeError(f"inconsistent target size, expected {x.shape[0]} but got {list(target.shape)}")
    if t.numel() and (int(t.min()) < 0 or int(t.max()) >= c):
        raise RuntimeError("target out of range")
    xy = x.gather(1, t.unsqueeze(1))
    h = (margin - xy + x).clamp(min=0)
    if p == 2:
        h = h * h
    if weight is not None:
        h = h * weight.to(x.dtype)[t].unsqueeze(1)
    from .creation import arange
    not_y = (arange(c, device=x.device).unsqueeze(0) != t.unsqueeze(1)).to(x.dtype)
    loss = (h * not_y).sum(1) / c
    if squeeze:
        loss = loss.reshape(())
    return _reduce(loss, reduction)


FUNCTIONAL = ["l1_loss", "mse_loss", "nll_loss", "cross_entropy", "poisson_nll_loss", "gaussian_nll_loss",
              "binary_cross_entropy", "binary_cross_entropy_with_logits", "smooth_l1_loss", "huber_loss",
              "kl_div", "margin_ranking_loss", "hinge_embedding_loss", "soft_margin_loss",
              "cosine_embedding_loss", "triplet_margin_loss", "triplet_margin_with_distance_loss",
              "multilabel_margin_loss", "multilabel_soft_margin_loss", "multi_margin_loss"]
