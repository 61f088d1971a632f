"""Convolutions: conv1d/2d/3d, conv_transpose1d/2d/3d, unfold, fold.

Two private differentiable ops do the work, each the other's adjoint:
`_conv` runs the backend's `conv` kernel, `_conv_t` its `conv_transpose` kernel (native, or the
decomposition in `tensorplug.dispatch.optional_conv`). Their backward rules are written with
these same ops (conv's input grad is a conv_transpose, its weight grad a conv of the input with
the output grad as kernel), so gradients of any order work; a backward that is not itself recorded
takes the weight grad from the `conv_weight` kernel instead (one GEMM natively).

    >>> x = tensorplug.ones(1, 1, 4, 4)
    >>> conv2d(x, tensorplug.ones(1, 1, 3, 3), padding=1)[0, 0, 0].tolist()
    [4.0, 6.0, 6.0, 4.0]
"""
from __future__ import annotations

import math

import numpy as np

from .. import dtypes as _dt
from ..amp.state import state as _amp
from ._core import Tensor, _gstate, _make, check_same_device, record


# -- argument helpers (shared with pool.py) ---------------------------------------------------------
def _ntuple(value, n, what, fn="convolution"):
    """value (an int or a sequence of n ints) as a tuple of n ints."""
    if isinstance(value, Tensor):
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        vals = tuple(value)
        if len(vals) == 1 and n != 1:
            vals = vals * n
        if len(vals) != n:
            raise RuntimeError(f"expected {what} to be a single integer value or a list of {n} values to match "
                               f"the {fn} dimensions, but got {what}={list(vals)}")
    else:
        vals = (value,) * n
    out = []
    for v in vals:
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"{what} must be an int or a tuple of ints, but got {value!r}")
        out.append(int(v))
    return tuple(out)


def _batched(input, nd, name, what="input"):
    """(input with a batch dim, whether one was added); checks the number of dims."""
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}(): argument '{what}' must be Tensor, not {type(input).__name__}")
    if input.ndim == nd + 2:
        return input, False
    if input.ndim == nd + 1:
        return input.unsqueeze(0), True
    raise RuntimeError(f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to {name}, but got input "
                       f"of size: {list(input.shape)}")


def _const(like, arr, dtype=None):
    """A constant tensor (no grad) on like's device from a NumPy array."""
    dt = dtype or like._dtype
    k = like._k
    with k["__backend__"].device_context(like._dev.index):
        data = k["from_numpy"](np.ascontiguousarray(arr, dtype=dt.name))
    return _make(data, dt, k, like._dev)


def _sizes(sizes):
    return " x ".join(str(s) for s in sizes)


# -- the two differentiable primitives ------------------------------------------------------------
def _crop(x, pads):
    """Negative pads crop x (a differentiable narrow); returns (x, non-negative pads)."""
    if all(lo >= 0 and hi >= 0 for lo, hi in pads):
        return x, pads
    for i, (lo, hi) in enumerate(pads):
        if lo < 0 or hi < 0:
            d, n = 2 + i, x.shape[2 + i]
            start = -lo if lo < 0 else 0
            stop = n + hi if hi < 0 else n
            x = x.narrow(d, start, stop - start)
    return x, tuple((max(lo, 0), max(hi, 0)) for lo, hi in pads)


def _conv(x, w, stride, pads, dilation, groups):
    """conv kernel on batched x with per-dim (before, after) zero pads (negative: crop); differentiable."""
    x, pads = _crop(x, pads)
    k = x._k
    y = _make(k["conv"](x._data, w._data, stride, pads, dilation, groups), x._dtype, k, x._dev)
    if _gstate.enabled and (x._rg or w._rg):
        S, ks = tuple(x.shape[2:]), tuple(w.shape[2:])

        def vjp(g):
            gx = _conv_t(g, w, stride, tuple(lo for lo, _ in pads), dilation, groups, S) if x._rg else None
            gw = _conv_wgrad(x, g, ks, stride, pads, dilation, groups) if w._rg else None
            return gx, gw
        record("ConvolutionBackward0", y, (x, w), vjp, saved=(x, w))
    return y


def _conv_t(x, w, stride, padding, dilation, groups, out_size):
    """conv_transpose kernel on batched x (the adjoint of `_conv`); differentiable."""
    k = x._k
    y = _make(k["conv_transpose"](x._data, w._data, stride, padding, dilation, groups, tuple(out_size)),
              x._dtype, k, x._dev)
    if _gstate.enabled and (x._rg or w._rg):
        m, ks = tuple(x.shape[2:]), tuple(w.shape[2:])
        # the conv whose adjoint this is: output size m from an input of size out_size
        pads = tuple((p, (mi - 1) * s + d * (kk - 1) + 1 - n - p)
                     for p, mi, s, d, kk, n in zip(padding, m, stride, dilation, ks, out_size))

        def vjp(g):
            gx = _conv(g, w, stride, pads, dilation, groups) if x._rg else None
            gw = _conv_wgrad(g, x, ks, stride, pads, dilation, groups) if w._rg else None
            return gx, gw
        record("ConvolutionBackward0", y, (x, w), vjp, saved=(x, w))
    return y


def _conv_wgrad(x, gy, ks, stride, pads, dilation, groups):
    """Gradient of conv(x, w) wrt w for output gradient gy. Outside a recorded backward, the backend's
    `conv_weight` kernel (one GEMM natively); under create_graph, a conv of x's channels over the
    batch with gy as the kernel (stride and dilation swapped), so it differentiates again."""
    if not _gstate.enabled:
        x, pads = _crop(x, pads)
        k = x._k
        return _make(k["conv_weight"](x._data, gy._data, tuple(ks), tuple(stride), pads, tuple(dilation), groups),
                     x._dtype, k, x._dev)
    N, C = x.shape[:2]
    S, M = tuple(x.shape[2:]), tuple(gy.shape[2:])
    O, G, nd = gy.shape[1], groups, len(ks)
    Cg, Og = C // G, O // G
    # trim the trailing pad to what produces exactly `ks` outputs (extra input is never read)
    pads = tuple((lo, (kk - 1) * d + (mi - 1) * s + 1 - n - lo)
                 for (lo, _), kk, d, mi, s, n in zip(pads, ks, dilation, M, stride, S))
    sp = tuple(range(3, 3 + nd))
    xs = x.reshape((N, G, Cg) + S).permute((2, 1, 0) + sp).reshape((Cg, G * N) + S)
    gs = gy.reshape((N, G, Og) + M).permute((1, 2, 0) + sp).reshape((G * Og, N) + M)
    r = _conv(xs, gs, dilation, pads, stride, G)                       # (Cg, O, *ks)
    return r.transpose(0, 1)


# -- checks -----------------------------------------------------------------------------------------
def _check_pair(x, w, name, bias=None):
    if not isinstance(w, Tensor):
        raise TypeError(f"{name}(): argument 'weight' must be Tensor, not {type(w).__name__}")
    check_same_device(x, w)
    if x._dtype is not w._dtype:
        raise RuntimeError(f"Input type ({x._dtype.name}) and weight type ({w._dtype.name}) should be the same")
    if x._dtype is _dt.bool_:
        raise RuntimeError(f"\"{name}\" not implemented for 'Bool'")
    if bias is not None:
        if not isinstance(bias, Tensor):
            raise TypeError(f"{name}(): argument 'bias' must be Tensor, not {type(bias).__name__}")
        check_same_device(x, bias)
        if bias._dtype is not x._dtype:
            raise RuntimeError(f"Input type ({x._dtype.name}) and bias type ({bias._dtype.name}) should be the same")


def _check_positive(vals, what):
    if any(v <= 0 for v in vals):
        if what == "stride":
            raise RuntimeError("non-positive stride is not supported")
        raise RuntimeError(f"{what} should be greater than zero, but got {list(vals)}")


def _add_bias(y, bias, out_channels, wshape, nd):
    if bias is None:
        return y
    if bias.ndim != 1 or bias.shape[0] != out_channels:
        raise RuntimeError(f"Given weight of size {list(wshape)}, expected bias to be 1-dimensional with "
                           f"{out_channels} elements, but got bias of size {list(bias.shape)} instead")
    return y + bias.reshape((out_channels,) + (1,) * nd)


def _same_pads(ks, dilation):
    pads = []
    for k, d in zip(ks, dilation):
        total = d * (k - 1)
        pads.append((total // 2, total - total // 2))
    return tuple(pads)


# -- conv -------------------------------------------------------------------------------------------
def _convnd(nd, name, input, weight, bias, stride, padding, dilation, groups):
    if _amp.on:
        return _amp.run(name, _convnd, (nd, name, input, weight, bias, stride, padding, dilation, groups))
    x, unbatched = _batched(input, nd, name)
    _check_pair(x, weight, name, bias)
    if weight.ndim != nd + 2:
        raise RuntimeError(f"Expected {nd + 2}D weight for {name} (out_channels, in_channels / groups, "
                           f"*kernel_size), but got weight of size {list(weight.shape)}")
    stride = _ntuple(stride, nd, "stride")
    dilation = _ntuple(dilation, nd, "dilation")
    _check_positive(stride, "stride")
    _check_positive(dilation, "dilation")
    if isinstance(groups, bool) or not isinstance(groups, (int, np.integer)) or groups <= 0:
        raise RuntimeError(f"non-positive groups is not supported (got groups={groups!r})")
    wshape, xshape = tuple(weight.shape), tuple(x.shape)
    O, ks = wshape[0], wshape[2:]
    if isinstance(padding, str):
        if padding == "valid":
            pads = ((0, 0),) * nd
        elif padding == "same":
            if any(s != 1 for s in stride):
                raise RuntimeError("padding='same' is not supported for strided convolutions")
            pads = _same_pads(ks, dilation)
        else:
            raise RuntimeError(f"Invalid padding string: {padding!r}")
    else:
        p = _ntuple(padding, nd, "padding")
        if any(v < 0 for v in p):
            raise RuntimeError("negative padding is not supported")
        pads = tuple((v, v) for v in p)
    if O % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, "
                           f"but got weight of size {list(wshape)} instead")
    if xshape[1] != wshape[1] * groups:
        shown = list(xshape) if not unbatched else list(xshape[1:])
        raise RuntimeError(f"Given groups={groups}, weight of size {list(wshape)}, expected input{shown} to have "
                           f"{wshape[1] * groups} channels, but got {xshape[1]} channels instead")
    padded = tuple(n + lo + hi for n, (lo, hi) in zip(xshape[2:], pads))
    eff = tuple(d * (k - 1) + 1 for d, k in zip(dilation, ks))
    if any(n < e for n, e in zip(padded, eff)):
        raise RuntimeError(f"Calculated padded input size per channel: ({_sizes(padded)}). Kernel size: "
                           f"({_sizes(eff)}). Kernel size can't be greater than actual input size")
    y = _add_bias(_conv(x, weight, stride, pads, dilation, groups), bias, O, wshape, nd)
    return y.squeeze(0) if unbatched else y


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-d cross-correlation of (N, C, L) input with (O, C/groups, k) weight; padding int/tuple/'same'/'valid'."""
    return _convnd(1, "conv1d", input, weight, bias, stride, padding, dilation, groups)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-d cross-correlation of (N, C, H, W) input with (O, C/groups, kH, kW) weight.

    >>> conv2d(tensorplug.ones(1, 3, 8, 8), tensorplug.ones(6, 3, 5, 5)).shape
    tensorplug.Size([1, 6, 4, 4])
    """
    return _convnd(2, "conv2d", input, weight, bias, stride, padding, dilation, groups)


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """3-d cross-correlation of (N, C, D, H, W) input with (O, C/groups, kD, kH, kW) weight."""
    return _convnd(3, "conv3d", input, weight, bias, stride, padding, dilation, groups)


# -- conv_transpose ---------------------------------------------------------------------------------
def conv_transpose_output_size(in_size, ks, stride, padding, output_padding, dilation):
    return tuple((n - 1) * s - 2 * p + d * (k - 1) + op + 1
                 for n, k, s, p, op, d in zip(in_size, ks, stride, padding, output_padding, dilation))


def _conv_transposend(nd, name, input, weight, bias, stride, padding, output_padding, groups, dilation):
    if _amp.on:
        return _amp.run(name, _conv_transposend, (nd, name, input, weight, bias, stride, padding,
                                                  output_padding, groups, dilation))
    x, unbatched = _batched(input, nd, name)
    _check_pair(x, weight, name, bias)
    if weight.ndim != nd + 2:
        raise RuntimeError(f"Expected {nd + 2}D weight for {name} (in_channels, out_channels / groups, "
                           f"*kernel_size), but got weight of size {list(weight.shape)}")
    stride = _ntuple(stride, nd, "stride")
    dilation = _ntuple(dilation, nd, "dilation")
    padding = _ntuple(padding, nd, "padding")
    output_padding = _ntuple(output_padding, nd, "output_padding")
    _check_positive(stride, "stride")
    _check_positive(dilation, "dilation")
    if any(v < 0 for v in padding):
        raise RuntimeError("negative padding is not supported")
    if any(v < 0 for v in output_padding):
        raise RuntimeError("negative output_padding is not supported")
    if isinstance(groups, bool) or not isinstance(groups, (int, np.integer)) or groups <= 0:
        raise RuntimeError(f"non-positive groups is not supported (got groups={groups!r})")
    wshape, xshape = tuple(weight.shape), tuple(x.shape)
    if any(op >= max(s, d) for op, s, d in zip(output_padding, stride, dilation)):
        raise RuntimeError(f"output padding must be smaller than either stride or dilation, but got "
                           f"output_padding={list(output_padding)}, stride={list(stride)}, "
                           f"dilation={list(dilation)}")
    if wshape[0] % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, "
                           f"but got weight of size {list(wshape)} instead")
    if xshape[1] != wshape[0]:
        shown = list(xshape) if not unbatched else list(xshape[1:])
        raise RuntimeError(f"Given transposed=1, weight of size {list(wshape)}, expected input{shown} to have "
                           f"{wshape[0]} channels, but got {xshape[1]} channels instead")
    out = conv_transpose_output_size(xshape[2:], wshape[2:], stride, padding, output_padding, dilation)
    if any(o <= 0 for o in out):
        raise RuntimeError(f"Given input size per channel: ({_sizes(xshape[2:])}). Calculated output size per "
                           f"channel: ({_sizes(out)}). Output size is too small")
    y = _conv_t(x, weight, stride, padding, dilation, groups, out)
    y = _add_bias(y, bias, wshape[1] * groups, wshape, nd)
    return y.squeeze(0) if unbatched else y


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """Transposed 1-d convolution (the gradient of conv1d wrt its input); weight (C, O/groups, k)."""
    return _conv_transposend(1, "conv_transpose1d", input, weight, bias, stride, padding, output_padding,
                             groups, dilation)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """Transposed 2-d convolution; output size (H-1)*stride - 2*padding + dilation*(k-1) + output_padding + 1.

    >>> conv_transpose2d(tensorplug.ones(1, 2, 3, 3), tensorplug.ones(2, 4, 3, 3), stride=2).shape
    tensorplug.Size([1, 4, 7, 7])
    """
    return _conv_transposend(2, "conv_transpose2d", input, weight, bias, stride, padding, output_padding,
                             groups, dilation)


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """Transposed 3-d convolution; weight (C, O/groups, kD, kH, kW)."""
    return _conv_transposend(3, "conv_transpose3d", input, weight, bias, stride, padding, output_padding,
                             groups, dilation)


# -- unfold / fold (im2col / col2im as convolutions with an identity kernel) -------------------------
def _eye_kernel(like, ks):
    kp = math.prod(ks)
    return _const(like, np.eye(kp).reshape((kp, 1) + tuple(ks)))


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """Sliding blocks of a (N, C, H, W) input as columns: (N, C * kH * kW, L), L blocks."""
    x, unbatched = _batched(input, 2, "unfold")
    ks = _ntuple(kernel_size, 2, "kernel_size", "unfold")
    dilation, padding, stride = (_ntuple(v, 2, n, "unfold") for v, n in
                                 ((dilation, "dilation"), (padding, "padding"), (stride, "stride")))
    _check_positive(stride, "stride")
    _check_positive(dilation, "dilation")
    _check_positive(ks, "kernel_size")
    if any(p < 0 for p in padding):
        raise RuntimeError("negative padding is not supported")
    N, C, H, W = x.shape
    padded = (H + 2 * padding[0], W + 2 * padding[1])
    eff = tuple(d * (k - 1) + 1 for d, k in zip(dilation, ks))
    if any(n < e for n, e in zip(padded, eff)):
        blocks = _sizes((n - e) // s + 1 for n, e, s in zip(padded, eff, stride))
        raise RuntimeError(f"Given input with spatial size ({H}, {W}), kernel_size={list(ks)}, "
                           f"dilation={list(dilation)}, padding={list(padding)}, calculated shape of the array "
                           f"of sliding blocks as ({blocks}), but its components must be at least one.")
    y = _conv(x.reshape(N * C, 1, H, W), _eye_kernel(x, ks), stride, tuple((p, p) for p in padding), dilation, 1)
    y = y.reshape(N, C * math.prod(ks), -1)
    return y.squeeze(0) if unbatched else y


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """The adjoint of unfold: sums (N, C * kH * kW, L) columns into a (N, C, *output_size) tensor."""
    if not isinstance(input, Tensor):
        raise TypeError(f"fold(): argument 'input' must be Tensor, not {type(input).__name__}")
    unbatched = input.ndim == 2
    x = input.unsqueeze(0) if unbatched else input
    if x.ndim != 3:
        raise RuntimeError(f"Expected 2D (unbatched) or 3D (batched) input to fold, but got input of size: "
                           f"{list(input.shape)}")
    out = _ntuple(output_size, 2, "output_size", "fold")
    ks = _ntuple(kernel_size, 2, "kernel_size", "fold")
    dilation, padding, stride = (_ntuple(v, 2, n, "fold") for v, n in
                                 ((dilation, "dilation"), (padding, "padding"), (stride, "stride")))
    _check_positive(stride, "stride")
    _check_positive(dilation, "dilation")
    _check_positive(ks, "kernel_size")
    N, CK, L = x.shape
    kp = math.prod(ks)
    if CK % kp:
        raise RuntimeError(f"Expected size of input's dimension 1 to be divisible by the product of kernel_size, "
                           f"but got input.size(1)={CK} and kernel_size={ks}")
    blocks = tuple((o + 2 * p - d * (k - 1) - 1) // s + 1
                   for o, p, d, k, s in zip(out, padding, dilation, ks, stride))
    if any(b <= 0 for b in blocks) or math.prod(blocks) != L:
        raise RuntimeError(f"Given output_size={list(out)}, kernel_size={list(ks)}, dilation={list(dilation)}, "
                           f"padding={list(padding)}, stride={list(stride)}, expected size of input's dimension 2 "
                           f"to match the calculated number of sliding blocks {' * '.join(map(str, blocks))} = "
                           f"{math.prod(blocks)}, but got input.size(2)={L}.")
    C = CK // kp
    y = _conv_t(x.reshape((N * C, kp) + blocks), _eye_kernel(x, ks), stride, padding, dilation, 1, out)
    y = y.reshape((N, C) + out)
    return y.squeeze(0) if unbatched else y


FUNCTIONAL = ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
              "unfold", "fold"]
