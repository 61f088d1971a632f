"""Normalization ops of nn.functional: batch_norm layer_norm group_norm instance_norm
local_response_norm.

All of them run the backend's `batch_norm` kernel (native, or its decomposition in
tensorplug.dispatch.optional_norm): layer_norm, group_norm and instance_norm reshape the input so
that the groups to normalize lie along axis 1. The gradient is the frontend's, written in Tensor
ops: with create_graph=True it recomputes the batch statistics from the input with differentiable
ops, so second (and higher) derivatives are exact.

    >>> x = tensorplug.randn(8, 3, 4, 4)
    >>> rm, rv = tensorplug.zeros(3), tensorplug.ones(3)
    >>> y = F.batch_norm(x, rm, rv, training=True)      # rm, rv updated in place (momentum 0.1)
"""
from __future__ import annotations

import numbers

from ..amp.state import state as _amp
from ..autograd import grad_mode
from ._core import Tensor, _gstate, _make, cast_data, check_same_device, grad_for, record
from ._float32 import in_float32


def _numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def _normalize(x, weight, bias, mean, var, eps):
    """(y, mean, var) of the `batch_norm` kernel on x (N, C, *), with autograd for x, weight, bias.
    mean/var None: batch statistics (biased variance); else those (C,) tensors (constants)."""
    check_same_device(x, *(t for t in (weight, bias, mean, var) if t is not None))
    k, dt = x._k, x._dtype
    shape = x._data.shape
    nd = len(shape)
    c = shape[1]
    axes = (0,) + tuple(range(2, nd))
    bshape = (1, c) + (1,) * (nd - 2)
    n = _numel(shape) // c if c else 0

    def arr(t):
        return None if t is None else cast_data(t, dt)
    yd, md, vd = k["batch_norm"](x._data, arr(weight), arr(bias), arr(mean), arr(var), float(eps))
    y = _make(yd, dt, k, x._dev)
    m = _make(md, dt, k, x._dev)
    v = _make(vd, dt, k, x._dev)
    ins = tuple(t for t in (x, weight, bias) if t is not None)
    if not (_gstate.enabled and any(t._rg for t in ins)):
        return y, m, v
    batch_stats = mean is None
    with grad_mode.no_grad():
        m_saved = m.reshape(bshape).clone()
        inv_saved = (v.reshape(bshape) + eps).rsqrt()

    def vjp(g):
        if not _gstate.enabled:
            return _grads_fast(g, x, weight, bias, m_saved, inv_saved, batch_stats, axes, bshape, n)
        if batch_stats:
            # create_graph: the statistics as differentiable functions of x
            mu = x.mean(axes, keepdim=True)
            xc = x - mu
            inv = ((xc * xc).mean(axes, keepdim=True) + eps).rsqrt()
        else:
            xc = x - m_saved
            inv = inv_saved
        xhat = xc * inv
        gx = gw = gb = None
        need_w = weight is not None and weight._rg
        gxhat_sum = (g * xhat).sum(axes, keepdim=True) if (need_w or (x._rg and batch_stats)) else None
        g_sum = g.sum(axes, keepdim=True) if (bias is not None and bias._rg) or (x._rg and batch_stats) \
            else None
        if x._rg:
            scale = inv if weight is None else inv * weight.to(dt).reshape(bshape)
            gx = (g - g_sum / n - xhat * (gxhat_sum / n)) * scale if batch_stats else g * scale
        if need_w:
            gw = grad_for(gxhat_sum.reshape(c), weight)
        if bias is not None and bias._rg:
            gb = grad_for(g_sum.reshape(c), bias)
        return tuple(r for r, t in zip((gx, gw, gb), (x, weight, bias)) if t is not None)
    record("NativeBatchNormBackward0", y, ins, vjp, saved=tuple(t for t in (x, weight) if t is not None))
    return y, m, v


def _grads_fast(g, x, weight, bias, m_saved, inv_saved, batch_stats, axes, bshape, n):
    """The same gradients as the vjp's Tensor-op formulas, for a backward pass that is not itself
    recorded (create_graph=False): per-channel coefficients and kernels writing into two buffers.
    gx = scale * (g - mean(g) - xhat * mean(g * xhat)) = g * scale + xc * b + c per channel."""
    k, dt, dev = x._k, x._dtype, x._dev
    gd = cast_data(g, dt)
    xc = k["sub"](x._data, m_saved._data)
    inv = inv_saved._data
    need_w = weight is not None and weight._rg
    need_b = bias is not None and bias._rg
    s1 = s0 = None
    u = None
    if need_w or (x._rg and batch_stats):
        u = k["mul"](gd, xc)
        s1 = k["sum"](u, axes, True)                       # sum of g * (x - mean), per channel
    if need_b or (x._rg and batch_stats):
        s0 = k["sum"](gd, axes, True)
    gx = gw = gb = None
    if x._rg:
        scale = inv if weight is None else k["mul"](inv, k["reshape"](cast_data(weight, dt), bshape))
        if batch_stats:
            b = k["div"](k["mul"](k["mul"](scale, k["mul"](inv, inv)), s1), float(-n))
            c = k["div"](k["mul"](scale, s0), float(-n))
            k["mul"](xc, b, out=xc)
            k["mul"](gd, scale, out=u)
            k["add"](u, xc, out=u)
            k["add"](u, c, out=u)
            gx = _make(u, dt, k, dev)
        else:
            gx = _make(k["mul"](gd, scale), dt, k, dev)
    c = bshape[1]
    if need_w:
        gw = grad_for(_make(k["reshape"](k["mul"](s1, inv), (c,)), dt, k, dev), weight)
    if need_b:
        gb = grad_for(_make(k["reshape"](s0, (c,)), dt, k, dev), bias)
    return tuple(r for r, t in zip((gx, gw, gb), (x, weight, bias)) if t is not None)


def _check_float(input, name):
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}(): argument 'input' must be Tensor, not {type(input).__name__}")
    if not input._dtype.is_floating_point:
        raise RuntimeError(f"{name}: expected a floating-point input, got {input._dtype!r}")


def _check_channels(name, t, c, what):
    if t is not None and t.numel() != c:
        raise RuntimeError(f"{name}: {what} should contain {c} elements not {t.numel()}")


def _update_running(running, stat, momentum):
    """running = (1 - momentum) * running + momentum * stat, in place and unrecorded."""
    with grad_mode.no_grad():
        running.mul_(1 - momentum).add_(stat.to(running.dtype) * momentum)


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1,
               eps=1e-5):
    """Normalize each channel (dim 1) of input (N, C, *): with the batch's statistics when training
    (updating running_mean/var in place: running = (1 - momentum) * running + momentum * batch, the
    variance unbiased), else with running_mean/var. Then scale by weight and shift by bias."""
    _check_float(input, "batch_norm")
    if input.ndim < 2:
        raise ValueError(f"batch_norm: expected at least 2D input (got {input.ndim}D input)")
    if momentum is None or not isinstance(momentum, numbers.Number):
        raise TypeError(f"batch_norm(): argument 'momentum' must be float, not {type(momentum).__name__}")
    shape = tuple(input.shape)
    c = shape[1]
    for t, what in ((weight, "weight"), (bias, "bias"), (running_mean, "running_mean"),
                    (running_var, "running_var")):
        _check_channels("batch_norm", t, c, what)
    n = _numel(shape) // c if c else 0
    if training:
        if n <= 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got input size "
                             f"{input.shape}")
        y, m, v = _normalize(input, weight, bias, None, None, eps)
        if running_mean is not None:
            _update_running(running_mean, m, momentum)
        if running_var is not None:
            _update_running(running_var, v * (n / (n - 1)), momentum)
        return y
    if running_mean is None or running_var is None:
        raise RuntimeError("running_mean must be defined in evaluation mode")
    return _normalize(input, weight, bias, running_mean.detach(), running_var.detach(), eps)[0]


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True,
                  momentum=0.1, eps=1e-5):
    """Normalize each (sample, channel) slice of input (N, C, *) over its own spatial elements."""
    _check_float(input, "instance_norm")
    if input.ndim < 3:
        raise ValueError(f"instance_norm: expected at least 3D input (got {input.ndim}D input)")
    shape = tuple(input.shape)
    b, c = shape[0], shape[1]
    x = input.reshape((1, b * c) + shape[2:])
    rm = running_mean.repeat(b) if running_mean is not None else None
    rv = running_var.repeat(b) if running_var is not None else None
    y = batch_norm(x, rm, rv, None, None, use_input_stats, momentum, eps).reshape(shape)
    if use_input_stats:
        with grad_mode.no_grad():
            if running_mean is not None:
                running_mean.copy_(rm.reshape(b, c).mean(0))
            if running_var is not None:
                running_var.copy_(rv.reshape(b, c).mean(0))
    return _affine(y, weight, bias, (1, c) + (1,) * (len(shape) - 2))


def _affine(y, weight, bias, shape):
    if weight is not None:
        y = y * weight.reshape(shape)
    if bias is not None:
        y = y + bias.reshape(shape)
    return y


def _trailing_shape(input, normalized_shape, what, star, params):
    """(normalized_shape as a tuple, input's shape), after checking that input ends with it and each
    given parameter has it. `star`: how PyTorch prints the expected shape ("*, " or "*")."""
    _check_float(input, what)
    if isinstance(normalized_shape, numbers.Integral):
        normalized_shape = (int(normalized_shape),)
    ns = tuple(int(s) for s in normalized_shape)
    shape = tuple(input.shape)
    k = len(ns)
    if k == 0 or k > len(shape) or shape[len(shape) - k:] != ns:
        raise RuntimeError(f"Given normalized_shape={list(ns)}, expected input with shape [{star}"
                           f"{', '.join(map(str, ns))}], but got input of size{list(shape)}")
    for t, name in params:
        if t is not None and tuple(t.shape) != ns:
            raise RuntimeError(f"{what}: expected {name} of shape {list(ns)}, got {list(t.shape)}")
    return ns, shape


@in_float32         # bfloat16: normalized, scaled and shifted in float32, rounded once (PyTorch's kernels)
def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Normalize over the last len(normalized_shape) dims (each sample on its own), then apply the
    elementwise affine weight and bias (of shape normalized_shape)."""
    if _amp.on:
        return _amp.run("layer_norm", layer_norm, (input, normalized_shape, weight, bias, eps))
    ns, shape = _trailing_shape(input, normalized_shape, "layer_norm", "*, ", ((weight, "weight"), (bias, "bias")))
    k = len(ns)
    lead = _numel(shape[:len(shape) - k])
    m = _numel(ns)
    if lead == 0 or m == 0:
        return _affine(input * 0, weight, bias, ns)
    return _layer_norm_rows(input, weight, bias, eps, lead, m, ns, shape)


def _layer_norm_rows(input, weight, bias, eps, lead, m, ns, shape):
    """The backend's `layer_norm` kernel on input as (lead, m) rows; the backward is its fused
    `layer_norm_backward` kernel, or (create_graph) the same formulas in Tensor ops."""
    check_same_device(input, *(t for t in (weight, bias) if t is not None))
    k, dt, dev = input._k, input._dtype, input._dev
    x = input.reshape(lead, m)

    def arr(t):
        return None if t is None else k["reshape"](cast_data(t, dt), (m,))
    yd, md, rd = k["layer_norm"](x._data, arr(weight), arr(bias), float(eps))
    y = _make(k["reshape"](yd, shape), dt, k, dev)
    ins = tuple(t for t in (input, weight, bias) if t is not None)
    if not (_gstate.enabled and any(t._rg for t in ins)):
        return y

    def vjp(g):
        g2 = g.reshape(lead, m)
        if not _gstate.enabled:
            wd = arr(weight)
            dx, dw, db = (_make(a, dt, k, dev) for a in
                          k["layer_norm_backward"](cast_data(g2, dt), x._data, md, rd, wd))
        else:
            # create_graph: the statistics as differentiable functions of x
            xc = x - x.mean(1, keepdim=True)
            r = ((xc * xc).mean(1, keepdim=True) + eps).rsqrt()
            xhat = xc * r
            gx = g2 if weight is None else g2 * weight.to(dt).reshape(1, m)
            dx = (gx - gx.mean(1, keepdim=True) - xhat * (gx * xhat).mean(1, keepdim=True)) * r
            dw = (g2 * xhat).sum(0) if weight is not None and weight._rg else None
            db = g2.sum(0) if bias is not None and bias._rg else None
        out = [dx.reshape(shape) if input._rg else None]
        if weight is not None:
            out.append(grad_for(dw.reshape(ns), weight) if weight._rg else None)
        if bias is not None:
            out.append(grad_for(db.reshape(ns), bias) if bias._rg else None)
        return tuple(out)
    record("NativeLayerNormBackward0", y, ins, vjp, saved=ins)
    return y


@in_float32         # (eps None: float32's for bfloat16, as PyTorch's fused kernel)
def rms_norm(input, normalized_shape, weight=None, eps=None):
    """x / sqrt(mean(x^2) + eps) over the last len(normalized_shape) dims, times weight; eps None:
    the dtype's machine epsilon (as PyTorch)."""
    ns, shape = _trailing_shape(input, normalized_shape, "rms_norm", "*", ((weight, "weight"),))
    k = len(ns)
    if eps is None:
        from .introspection import finfo
        eps = finfo(input.dtype).eps
    dims = tuple(range(len(shape) - k, len(shape)))
    y = input * (input * input).mean(dims, keepdim=True).add(eps).rsqrt()
    return y if weight is None else y * weight


@in_float32
def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Split the channels (dim 1) into num_groups groups; normalize each sample's group, then apply
    the per-channel affine weight and bias."""
    if _amp.on:
        return _amp.run("group_norm", group_norm, (input, num_groups, weight, bias, eps))
    _check_float(input, "group_norm")
    shape = tuple(input.shape)
    if len(shape) < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received {len(shape)}")
    b, c = shape[0], shape[1]
    if num_groups <= 0 or c % num_groups:
        raise RuntimeError(f"Expected number of channels in input to be divisible by num_groups, but got "
                           f"input of shape {input.shape} and num_groups={num_groups}")
    for t, what in ((weight, "weight"), (bias, "bias")):
        _check_channels("group_norm", t, c, what)
    rest = _numel(shape) // (b * c) if b * c else 0
    if b == 0 or rest * c // num_groups == 0:
        return _affine(input * 0, weight, bias, (1, c) + (1,) * (len(shape) - 2))
    x = input.reshape(1, b * num_groups, -1)
    y = _normalize(x, None, None, None, None, eps)[0].reshape(shape)
    return _affine(y, weight, bias, (1, c) + (1,) * (len(shape) - 2))


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """x / (k + alpha * mean of x^2 over `size` neighbouring channels) ** beta (zero-padded)."""
    if _amp.on:
        return _amp.run("local_response_norm", local_response_norm, (input, size, alpha, beta, k))
    _check_float(input, "local_response_norm")
    if input.ndim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {input.ndim} dimensions)")
    if input.numel() == 0:
        return input * 1
    from .shape import cat
    sq = input * input
    shape = tuple(input.shape)
    before, after = size // 2, (size - 1) // 2
    zeros = [sq.new_zeros(shape[:1] + (p,) + shape[2:]) for p in (before, after)]
    padded = cat([zeros[0], sq, zeros[1]], 1)
    c = shape[1]
    acc = padded.narrow(1, 0, c)
    for i in range(1, size):                   # a window of `size` channels: size shifted slices
        acc = acc + padded.narrow(1, i, c)
    return input / (acc * (alpha / size) + k).pow(beta)


FUNCTIONAL = ["batch_norm", "instance_norm", "layer_norm", "group_norm", "local_response_norm", "rms_norm"]
