"""Pooling: max_pool1d/2d/3d (+ indices), avg_pool1d/2d/3d, lp_pool1d/2d/3d, adaptive avg/max pools,
max_unpool1d/2d/3d.

max_pool runs the backend's `max_pool` kernel and scatters its gradient into the argmax positions
(a differentiable gather/scatter-add pair, so double backward works); avg_pool runs `avg_pool` and
its gradient is a depthwise conv_transpose with a constant kernel; adaptive avg pools are one matmul
per spatial dim with a constant averaging matrix; lp_pool is written over avg_pool.

    >>> x = tensorplug.arange(16.).reshape(1, 1, 4, 4)
    >>> max_pool2d(x, 2).flatten().tolist()
    [5.0, 7.0, 13.0, 15.0]
"""
from __future__ import annotations

import math

import numpy as np

from .. import dtypes as _dt
from ..amp.state import state as _amp
from ..dispatch.optional_conv import argmax_last_nan, avg_pool_divisor
from ._core import Tensor, _gstate, _make, record
from .conv import _batched, _const, _conv_t, _ntuple


# -- a differentiable gather / scatter pair along the last dim (flat spatial positions) -------------
def _take(x, idx):
    """x[..., idx] along the last dim (idx: int64 Tensor, same leading dims as x)."""
    k = x._k
    r = _make(k["gather"](x._data, idx._data, x.ndim - 1), x._dtype, k, x._dev)
    if _gstate.enabled and x._rg:
        L = x.shape[-1]
        record("GatherBackward0", r, (x,), lambda g: (_put(g, idx, L, True),))
    return r


def _put(src, idx, L, accumulate):
    """zeros(..., L) with src written (accumulate: added) at idx along the last dim; its gradient is
    _take (for accumulate=False the indices are assumed unique, or their values equal)."""
    k = src._k
    data = k["full"](tuple(src.shape[:-1]) + (L,), 0, src._dtype.name)
    k["scatter_add" if accumulate else "scatter"](data, idx._data, src._data, src.ndim - 1)
    r = _make(data, src._dtype, k, src._dev)
    if _gstate.enabled and src._rg:
        record("ScatterAddBackward0" if accumulate else "ScatterBackward0", r, (src,), lambda g: (_take(g, idx),))
    return r


# -- argument handling --------------------------------------------------------------------------
def _pool_input(input, nd, name):
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}(): argument 'input' must be Tensor, not {type(input).__name__}")
    if input.ndim not in (nd + 1, nd + 2) or input.numel() == 0 and any(s == 0 for s in input.shape[-nd:]):
        raise RuntimeError(f"{name}: non-empty {nd + 1}D or {nd + 2}D (batch mode) tensor expected for input, "
                           f"but got input of size: {list(input.shape)}")
    return _batched(input, nd, name)


def _output_size(n, k, p, s, d, ceil_mode):
    o = (n + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (o - 1) * s >= n + p:
        o -= 1
    return o


def _pool_geometry(x, nd, name, kernel_size, stride, padding, dilation, ceil_mode):
    fn = "pooling"
    ks = _ntuple(kernel_size, nd, "kernel_size", fn)
    st = ks if stride is None or (isinstance(stride, (list, tuple)) and len(stride) == 0) \
        else _ntuple(stride, nd, "stride", fn)
    pd = _ntuple(padding, nd, "padding", fn)
    dl = _ntuple(dilation, nd, "dilation", fn)
    if any(k <= 0 for k in ks):
        raise RuntimeError(f"kernel size should be greater than zero, but got kernel_size={list(ks)}")
    if any(s <= 0 for s in st):
        raise RuntimeError("stride should not be zero" if any(s == 0 for s in st)
                           else f"stride should be greater than zero, but got stride={list(st)}")
    if any(d <= 0 for d in dl):
        raise RuntimeError(f"dilation should be greater than zero, but got dilation={list(dl)}")
    if any(p < 0 for p in pd):
        raise RuntimeError("negative padding is not supported")
    for k, p, d in zip(ks, pd, dl):
        if p > ((k - 1) * d + 1) // 2:
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got pad={p}, "
                               f"kernel_size={k} and dilation={d}")
    S = tuple(x.shape[2:])
    out = tuple(_output_size(n, k, p, s, d, ceil_mode) for n, k, p, s, d in zip(S, ks, pd, st, dl))
    if any(o <= 0 for o in out):
        C = x.shape[1]
        raise RuntimeError(f"Given input size: ({'x'.join(map(str, (C,) + S))}). Calculated output size: "
                           f"({'x'.join(map(str, (C,) + out))}). Output size is too small")
    return ks, st, pd, dl, out


def _unbatch(t, unbatched):
    return t.squeeze(0) if unbatched else t


# -- max pooling ----------------------------------------------------------------------------------
def _max_pool(x, ks, st, pd, dl, out):
    """(values, flat indices) of batched x; values differentiable through the indices."""
    k = x._k
    vd, idd = k["max_pool"](x._data, ks, st, pd, dl, out)
    values = _make(vd, x._dtype, k, x._dev)
    indices = _make(idd, _dt.int64, k, x._dev)
    if _gstate.enabled and x._rg:
        N, C = x.shape[:2]
        L, P = math.prod(x.shape[2:]), math.prod(out)
        xshape = tuple(x.shape)
        # disjoint windows never share an argmax: a plain scatter is enough (and faster)
        unique = all(s >= d * (kk - 1) + 1 for s, d, kk in zip(st, dl, ks))
        flat_idx = indices.reshape(N, C, P)
        record(f"MaxPool{len(ks)}DWithIndicesBackward0", values, (x,),
               lambda g: (_put(g.reshape(N, C, P), flat_idx, L, not unique).reshape(xshape),))
    return values, indices


def _max_poolnd(nd, name, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices):
    if _amp.on:
        return _amp.run(name, _max_poolnd, (nd, name, input, kernel_size, stride, padding, dilation, ceil_mode,
                                            return_indices))
    x, unbatched = _pool_input(input, nd, name)
    if x._dtype is _dt.bool_:
        raise RuntimeError(f"\"{name}\" not implemented for 'Bool'")
    ks, st, pd, dl, out = _pool_geometry(x, nd, name, kernel_size, stride, padding, dilation, ceil_mode)
    v, i = _max_pool(x, ks, st, pd, dl, out)
    v, i = _unbatch(v, unbatched), _unbatch(i, unbatched)
    return (v, i) if return_indices else v


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """Max over sliding windows of (N, C, L); return_indices gives flat indices into L."""
    return _max_poolnd(1, "max_pool1d", input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """Max over sliding windows of (N, C, H, W); indices are flat (h * W + w) per plane, like torch's.

    >>> v, i = max_pool2d(tensorplug.arange(16.).reshape(1, 1, 4, 4), 2, return_indices=True)
    >>> i.flatten().tolist()
    [5, 7, 13, 15]
    """
    return _max_poolnd(2, "max_pool2d", input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """Max over sliding windows of (N, C, D, H, W)."""
    return _max_poolnd(3, "max_pool3d", input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=True):
    return max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=True):
    return max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=True):
    return max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


# -- average pooling ------------------------------------------------------------------------------
def _avg_pool_t(g, S, ks, st, pd, out, count_include_pad, divisor_override):
    """The adjoint of avg_pool: g / divisor spread over each window (a depthwise conv_transpose)."""
    N, C = g.shape[:2]
    div = _const(g, avg_pool_divisor(S, ks, st, pd, out, count_include_pad, divisor_override))
    w = _const(g, np.ones((1, 1) + tuple(ks)))
    gx = _conv_t((g / div).reshape((N * C, 1) + tuple(out)), w, st, pd, (1,) * len(ks), 1, S)
    return gx.reshape((N, C) + tuple(S))


def _avg_pool(x, ks, st, pd, out, count_include_pad, divisor_override):
    k = x._k
    y = _make(k["avg_pool"](x._data, ks, st, pd, out, count_include_pad, divisor_override), x._dtype, k, x._dev)
    if _gstate.enabled and x._rg:
        S = tuple(x.shape[2:])
        record(f"AvgPool{len(ks)}DBackward0", y, (x,),
               lambda g: (_avg_pool_t(g, S, ks, st, pd, out, count_include_pad, divisor_override),))
    return y


def _avg_poolnd(nd, name, input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
    if _amp.on:
        return _amp.run(name, _avg_poolnd, (nd, name, input, kernel_size, stride, padding, ceil_mode,
                                            count_include_pad, divisor_override))
    x, unbatched = _pool_input(input, nd, name)
    if not x._dtype.is_floating_point:
        raise RuntimeError(f"\"{name}\" not implemented for '{x._dtype.name}' (floating point input expected)")
    if divisor_override is not None and (isinstance(divisor_override, bool) or divisor_override == 0):
        raise RuntimeError("divisor must be not zero")
    ks, st, pd, _, out = _pool_geometry(x, nd, name, kernel_size, stride, padding, 1, ceil_mode)
    y = _avg_pool(x, ks, st, pd, out, bool(count_include_pad), divisor_override)
    return _unbatch(y, unbatched)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    """Mean over sliding windows of (N, C, L)."""
    return _avg_poolnd(1, "avg_pool1d", input, kernel_size, stride, padding, ceil_mode, count_include_pad, None)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """Mean over sliding windows of (N, C, H, W).

    >>> avg_pool2d(tensorplug.arange(16.).reshape(1, 1, 4, 4), 2).flatten().tolist()
    [2.5, 4.5, 10.5, 12.5]
    """
    return _avg_poolnd(2, "avg_pool2d", input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                       divisor_override)


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """Mean over sliding windows of (N, C, D, H, W)."""
    return _avg_poolnd(3, "avg_pool3d", input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                       divisor_override)


# -- power-average pooling -------------------------------------------------------------------------
def _lp_poolnd(nd, input, norm_type, kernel_size, stride, ceil_mode):
    ks = _ntuple(kernel_size, nd, "kernel_size", "pooling")
    avg = {1: avg_pool1d, 2: avg_pool2d, 3: avg_pool3d}[nd]
    out = avg(input.pow(norm_type), ks, stride, 0, ceil_mode)
    return (out.sign() * out.abs().relu()).mul(math.prod(ks)).pow(1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """(sum over each window of x ** p) ** (1 / p)."""
    return _lp_poolnd(1, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """(sum over each window of x ** p) ** (1 / p), windows over (H, W)."""
    return _lp_poolnd(2, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    return _lp_poolnd(3, input, norm_type, kernel_size, stride, ceil_mode)


# -- adaptive pooling --------------------------------------------------------------------------------
def _adaptive_out(x, nd, output_size, name):
    S = tuple(x.shape[2:])
    if isinstance(output_size, (list, tuple)):
        if len(output_size) != nd:
            raise RuntimeError(f"{name}: output_size must be {nd}-dimensional (got {list(output_size)})")
        out = tuple(S[i] if o is None else o for i, o in enumerate(output_size))
    else:
        out = (output_size,) * nd
    out = _ntuple(out, nd, "output_size", "pooling")
    if any(o < 0 for o in out):
        raise RuntimeError(f"{name}: elements of output_size must be greater than or equal to 0 but received "
                           f"{list(out)}")
    return S, out


def _adaptive_windows(n, o):
    i = np.arange(o)
    return (i * n) // o, -((-(i + 1) * n) // o)          # floor(i*n/o), ceil((i+1)*n/o)


def _adaptive_avg_poolnd(nd, name, input, output_size):
    if _amp.on:
        return _amp.run(name, _adaptive_avg_poolnd, (nd, name, input, output_size))
    x, unbatched = _pool_input(input, nd, name)
    if not x._dtype.is_floating_point:
        raise RuntimeError(f"\"{name}\" not implemented for '{x._dtype.name}' (floating point input expected)")
    S, out = _adaptive_out(x, nd, output_size, name)
    for i, (n, o) in enumerate(zip(S, out)):
        if n == o:
            continue
        start, end = _adaptive_windows(n, o)
        m = np.zeros((n, o))
        for j in range(o):                 # a loop over output sizes of one dim, building a constant
            m[start[j]:end[j], j] = 1.0 / (end[j] - start[j])
        d = 2 + i
        if d == x.ndim - 1:
            x = x.matmul(_const(x, m))
        else:
            x = x.transpose(d, -1).matmul(_const(x, m)).transpose(d, -1)
    return _unbatch(x, unbatched)


def adaptive_avg_pool1d(input, output_size):
    """Mean over `output_size` nearly equal windows of (N, C, L)."""
    return _adaptive_avg_poolnd(1, "adaptive_avg_pool1d", input, output_size)


def adaptive_avg_pool2d(input, output_size):
    """Mean over nearly equal windows of (N, C, H, W); output_size an int, a pair, or None entries.

    >>> adaptive_avg_pool2d(tensorplug.ones(1, 3, 7, 5), 1).shape
    tensorplug.Size([1, 3, 1, 1])
    """
    return _adaptive_avg_poolnd(2, "adaptive_avg_pool2d", input, output_size)


def adaptive_avg_pool3d(input, output_size):
    return _adaptive_avg_poolnd(3, "adaptive_avg_pool3d", input, output_size)


def _adaptive_table(S, out):
    """int64 (P, Kmax) flat input positions per window; short windows repeat their last position."""
    nd = len(S)
    flat = np.zeros((1,) * (2 * nd), dtype=np.int64)
    mul = 1
    for d in range(nd - 1, -1, -1):
        start, end = _adaptive_windows(S[d], out[d])
        kmax = int((end - start).max()) if out[d] else 1
        pos = np.minimum(start[:, None] + np.arange(kmax), end[:, None] - 1)
        shape = [1] * (2 * nd)
        shape[d], shape[nd + d] = out[d], kmax
        flat = flat + pos.reshape(shape) * mul
        mul *= S[d]
    P = math.prod(out)
    return np.ascontiguousarray(flat.reshape(P, -1)) if P else np.zeros((0, 1), dtype=np.int64)


def _adaptive_max_poolnd(nd, name, input, output_size, return_indices):
    if _amp.on:
        return _amp.run(name, _adaptive_max_poolnd, (nd, name, input, output_size, return_indices))
    x, unbatched = _pool_input(input, nd, name)
    if x._dtype is _dt.bool_:
        raise RuntimeError(f"\"{name}\" not implemented for 'Bool'")
    S, out = _adaptive_out(x, nd, output_size, name)
    if any(o == 0 for o in out):
        raise RuntimeError(f"{name}: output_size must be positive, but got {list(out)}")
    N, C = x.shape[:2]
    table = _adaptive_table(S, out)
    P, Km = table.shape
    k = x._k
    xf = x.reshape(N, C, math.prod(S))
    ft = _const(x, table.reshape(-1), _dt.int64)._data
    cols = k["reshape"](k["index"](xf._data, (slice(None), slice(None), ft)), (N, C, P, Km))
    am = k["reshape"](argmax_last_nan(k, cols), (N, C, P))                    # torch's NaN rule too
    slot = k["add"](am, _const(x, np.arange(P) * Km, _dt.int64)._data)
    idx = _make(k["index"](ft, (slot,)), _dt.int64, k, x._dev)                 # (N, C, P)
    v = _take(xf, idx).reshape((N, C) + out)
    i = idx.reshape((N, C) + out)
    v, i = _unbatch(v, unbatched), _unbatch(i, unbatched)
    return (v, i) if return_indices else v


def adaptive_max_pool1d(input, output_size, return_indices=False):
    """Max over `output_size` nearly equal windows of (N, C, L)."""
    return _adaptive_max_poolnd(1, "adaptive_max_pool1d", input, output_size, return_indices)


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """Max over nearly equal windows of (N, C, H, W); indices flat per plane like max_pool2d's."""
    return _adaptive_max_poolnd(2, "adaptive_max_pool2d", input, output_size, return_indices)


def adaptive_max_pool3d(input, output_size, return_indices=False):
    return _adaptive_max_poolnd(3, "adaptive_max_pool3d", input, output_size, return_indices)


# -- max unpooling -----------------------------------------------------------------------------------
def _max_unpoolnd(nd, name, input, indices, kernel_size, stride, padding, output_size):
    if _amp.on:
        return _amp.run(name, _max_unpoolnd, (nd, name, input, indices, kernel_size, stride, padding, output_size))
    x, unbatched = _pool_input(input, nd, name)
    if not isinstance(indices, Tensor) or indices._dtype is not _dt.int64:
        raise RuntimeError(f"{name}: elements in indices should be type int64 but got: "
                           f"{getattr(indices, 'dtype', type(indices).__name__)}")
    idx = indices.unsqueeze(0) if unbatched else indices
    if tuple(idx.shape) != tuple(x.shape):
        raise RuntimeError(f"Expected shape of indices to be same as that of the input tensor "
                           f"({list(input.shape)}) but got indices tensor with shape: {list(indices.shape)}")
    ks = _ntuple(kernel_size, nd, "kernel_size", "pooling")
    st = ks if stride is None else _ntuple(stride, nd, "stride", "pooling")
    pd = _ntuple(padding, nd, "padding", "pooling")
    if any(s <= 0 for s in st):
        raise RuntimeError("stride should not be zero")
    S = tuple(x.shape[2:])
    default = tuple((n - 1) * s - 2 * p + k for n, s, p, k in zip(S, st, pd, ks))
    if output_size is None:
        out = default
    else:
        out = tuple(output_size.tolist() if isinstance(output_size, Tensor) else output_size)
        if len(out) == nd + 2 or len(out) == nd + 1 and unbatched:
            out = out[-nd:]
        if len(out) != nd:
            raise ValueError(f"output_size should be a sequence containing {nd} or {nd + 2} elements, but it has "
                             f"a length of '{len(out)}'")
        out = tuple(int(o) for o in out)
        for o, dflt, s in zip(out, default, st):
            if not dflt - s < o < dflt + s:
                raise ValueError(f"invalid output_size \"{list(out)}\" (dim {len(out)} must be between "
                                 f"{[d - s for d, s in zip(default, st)]} and {[d + s for d, s in zip(default, st)]})")
    N, C = x.shape[:2]
    L, P = math.prod(out), math.prod(S)
    k = x._k
    flat = idx.reshape(N, C, P)
    if P and N * C:
        bad = k["logical_or"](k["lt"](flat._data, 0), k["ge"](flat._data, L))
        if bool(k["to_numpy"](k["any"](bad, None, False))):
            worst = flat._host()[k["to_numpy"](bad)][0]
            raise RuntimeError(f"Found an invalid max index: {worst} (output volumes are of size "
                               f"{'x'.join(map(str, out))})")
    y = _put(x.reshape(N, C, P), flat, L, False).reshape((N, C) + out)
    return _unbatch(y, unbatched)


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of max_pool1d: values placed at their indices, zeros elsewhere."""
    return _max_unpoolnd(1, "max_unpool1d", input, indices, kernel_size, stride, padding, output_size)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of max_pool2d (indices as returned by return_indices=True)."""
    return _max_unpoolnd(2, "max_unpool2d", input, indices, kernel_size, stride, padding, output_size)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    return _max_unpoolnd(3, "max_unpool3d", input, indices, kernel_size, stride, padding, output_size)


FUNCTIONAL = ["max_pool1d", "max_pool2d", "max_pool3d", "max_pool1d_with_indices", "max_pool2d_with_indices",
              "max_pool3d_with_indices", "avg_pool1d", "avg_pool2d", "avg_pool3d", "lp_pool1d", "lp_pool2d",
              "lp_pool3d", "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d",
              "adaptive_max_pool1d", "adaptive_max_pool2d", "adaptive_max_pool3d", "max_unpool1d", "max_unpool2d",
              "max_unpool3d"]
