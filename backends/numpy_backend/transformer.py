"""NumPy native kernels of the transformer-block family (specs in tensorplug.dispatch.optional_transformer),
and the softmax / log_softmax forwards.

Row-wise reductions over a short last axis are slow in NumPy (one inner loop per row), so rows are
summed with a matrix-vector product and maximized by folding halves of the rows together. float16 and
bfloat16 are computed in float32 and rounded once, as PyTorch's CPU kernels do.
"""
from __future__ import annotations

import math

import numpy as np

from . import embedding_loops, gelu_loops, norm_loops, softmax_loops
from .kernels import _erf

_F32 = np.dtype(np.float32)
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_ONEHOT_MAX_ROWS = 128      # embedding_backward: a one-hot GEMM up to this many rows, sort + reduceat above


def _wide(kernel):
    """kernel computed in float32 for float16 / bfloat16 arrays; float32 results rounded back."""
    def run(*args):
        a0 = args[0]
        if a0.dtype.kind == "f" and a0.dtype.itemsize >= 4:
            return kernel(*args)
        dt = a0.dtype
        r = kernel(*(a.astype(_F32) if isinstance(a, np.ndarray) and a.dtype == dt else a for a in args))
        if isinstance(r, tuple):
            return tuple(x if x is None else x.astype(dt) for x in r)
        return r.astype(dt)
    run.__name__ = kernel.__name__
    return run


def _rows(x, axis):
    """x as C-contiguous (M, n) rows when axis is the last one, else None."""
    if axis != x.ndim - 1 or x.ndim == 0 or x.size == 0:
        return None
    return np.ascontiguousarray(x).reshape(-1, x.shape[-1])


def _rowsum(x2):
    return (x2 @ np.ones(x2.shape[1], x2.dtype)).reshape(-1, 1)


def _rowmax(x2):
    """(M, 1) maxima of the rows of x2 (NaN propagates, as np.max)."""
    n = x2.shape[1]
    if n < 4 or n > 32:                        # measured: folding wins for short rows only
        return x2.max(axis=1, keepdims=True)
    h = n // 2
    m = np.maximum(x2[:, :h], x2[:, h:2 * h])
    if n & 1:
        np.maximum(m[:, :1], x2[:, 2 * h:], out=m[:, :1])
    while m.shape[1] > 1:
        w = m.shape[1]
        h = w // 2
        if w & 1:
            np.maximum(m[:, :1], m[:, w - 1:w], out=m[:, :1])
        np.maximum(m[:, :h], m[:, h:2 * h], out=m[:, :h])
        m = m[:, :h]
    return m


@_wide
def softmax(x, axis):
    x2 = _rows(x, axis)
    if x2 is None:
        e = np.exp(x - x.max(axis=axis, keepdims=True))
        e /= e.sum(axis=axis, keepdims=True)
        return e
    if x2.dtype == _F32 and (loops := softmax_loops.kernels()) is not None:
        y = loops["softmax"](x2)
        if y is not None:                      # (None: a row not finite, left to the formula's rules)
            return y.reshape(x.shape)
    e = x2 - _rowmax(x2)
    np.exp(e, out=e)
    e /= _rowsum(e)
    return e.reshape(x.shape)


@_wide
def log_softmax(x, axis):
    x2 = _rows(x, axis)
    if x2 is None:
        s = x - x.max(axis=axis, keepdims=True)
        s -= np.log(np.exp(s).sum(axis=axis, keepdims=True))
        return s
    if x2.dtype == _F32 and (loops := softmax_loops.kernels()) is not None:
        y = loops["log_softmax"](x2)
        if y is not None:                      # (None: a row not finite, left to the formula's rules)
            return y.reshape(x.shape)
    s = x2 - _rowmax(x2)
    s -= np.log(_rowsum(np.exp(s)))
    return s.reshape(x.shape)


@_wide
def softmax_backward(grad, out, axis):
    g2, o2 = _rows(grad, axis), _rows(out, axis)
    if g2 is None:
        return out * (grad - (grad * out).sum(axis=axis, keepdims=True))
    if g2.dtype == _F32 and o2.dtype == _F32 and (loops := softmax_loops.kernels()) is not None:
        return loops["softmax_backward"](g2, o2).reshape(out.shape)
    p = g2 * o2
    s = _rowsum(p)
    p -= o2 * s            # out * grad - out * sum(grad * out)
    return p.reshape(out.shape)


@_wide
def log_softmax_backward(grad, out, axis):
    g2, o2 = _rows(grad, axis), _rows(out, axis)
    if g2 is None:
        return grad - np.exp(out) * grad.sum(axis=axis, keepdims=True)
    if g2.dtype == _F32 and o2.dtype == _F32 and (loops := softmax_loops.kernels()) is not None:
        return loops["log_softmax_backward"](g2, o2).reshape(out.shape)
    e = np.exp(o2)
    e *= _rowsum(g2)
    np.subtract(g2, e, out=e)
    return e.reshape(out.shape)


@_wide
def layer_norm(x, weight, bias, eps):
    if x.dtype == _F32 and norm_loops.usable(weight, bias) and (loops := norm_loops.kernels()) is not None:
        return loops["layer_norm"](x, weight, bias, eps)
    m, n = x.shape
    mean = x @ np.full(n, 1.0 / n, x.dtype)
    d = x - mean[:, None]
    var = np.einsum("ij,ij->i", d, d) / n
    rstd = (1.0 / np.sqrt(var + eps)).astype(x.dtype, copy=False)
    d *= rstd[:, None]
    if weight is not None:
        d *= weight
    if bias is not None:
        d += bias
    return d, mean.astype(x.dtype, copy=False), rstd


@_wide
def layer_norm_backward(grad, x, mean, rstd, weight):
    if (x.dtype == _F32 and norm_loops.usable(grad, mean, rstd, weight)
            and (loops := norm_loops.kernels()) is not None):
        return loops["layer_norm_backward"](grad, x, mean, rstd, weight)
    m, n = x.shape
    xhat = x - mean[:, None]
    xhat *= rstd[:, None]
    dw = np.einsum("ij,ij->j", grad, xhat)
    db = np.ones(m, grad.dtype) @ grad
    gx = grad if weight is None else grad * weight
    a = gx @ np.full(n, 1.0 / n, gx.dtype)
    b = np.einsum("ij,ij->i", gx, xhat) / n
    xhat *= b[:, None]
    dx = gx - a[:, None]
    dx -= xhat
    dx *= rstd[:, None]
    return dx, dw.astype(x.dtype, copy=False), db


_ERFC_FIT = (-0.82215223, 1.48851587, -1.13520398, 0.27886807, -0.18628806, 0.09678418, 0.37409196,
             1.00002368, -1.26551223)


def _cdf(x):
    """Phi(x) in x's dtype. float64: exactly (math.erf). float32: Numerical Recipes' Chebyshev fit of
    erfc, relative error below 1.2e-7 for every x (tails included; PyTorch's vectorized erf has 1.5e-7
    absolute), in one pass of in-place pointwise ops where math.erf is a Python call per element."""
    if x.dtype.itemsize >= 8:
        return 0.5 * (1.0 + _erf(x * (1.0 / math.sqrt(2.0))))
    a = np.abs(x)
    a *= 1.0 / math.sqrt(2.0)                 # |z|, z = -x / sqrt(2)
    t = a * 0.5
    t += 1.0
    np.reciprocal(t, out=t)
    p = t * 0.17087277
    for c in _ERFC_FIT[:-1]:
        p += c
        p *= t
    p += _ERFC_FIT[-1]
    a *= a
    p -= a
    np.exp(p, out=p)
    p *= t
    p *= 0.5                                   # 0.5 erfc(|z|) = Phi(-|x|)
    # Phi(x) = p for x < 0, 1 - p otherwise, blended arithmetically: np.where on a random sign mask
    # mispredicts branches (measured 2 ms vs 0.1 ms on 262k floats)
    pos = (x >= 0).astype(x.dtype)
    pos *= 1.0 - 2.0 * p
    p += pos
    return p


@_wide
def gelu(x, approximate):
    if approximate == "tanh":
        if x.dtype == _F32 and (loops := gelu_loops.kernels()) is not None:
            return loops["gelu_tanh"](x)
        u = x * x
        u *= 0.044715 * _SQRT_2_OVER_PI
        u += _SQRT_2_OVER_PI
        u *= x
        np.tanh(u, out=u)
        u += 1.0
        u *= x
        u *= 0.5
        return u
    if x.dtype == _F32 and (loops := gelu_loops.kernels()) is not None:
        return loops["gelu"](x)
    return x * _cdf(x)


@_wide
def gelu_backward(grad, x, approximate):
    if approximate == "tanh":
        if x.dtype == _F32 and grad.shape == x.shape and (loops := gelu_loops.kernels()) is not None:
            return loops["gelu_tanh_backward"](grad, x)
        x2 = x * x
        t = np.tanh(x * (_SQRT_2_OVER_PI + x2 * (0.044715 * _SQRT_2_OVER_PI)))
        du = x2 * (3 * 0.044715 * _SQRT_2_OVER_PI)
        du += _SQRT_2_OVER_PI
        du *= 0.5 * x
        du *= 1.0 - t * t
        t += 1.0
        t *= 0.5
        t += du
        t *= grad
        return t
    if x.dtype == _F32 and grad.shape == x.shape and (loops := gelu_loops.kernels()) is not None:
        return loops["gelu_backward"](grad, x)
    pdf = np.exp(x * x * -0.5)
    pdf *= x
    pdf *= _INV_SQRT_2PI
    pdf += _cdf(x)
    pdf *= grad
    return pdf


def embedding_backward(grad, idx, num_weights, padding_idx):
    n, d = grad.shape
    if n == 0:
        out = np.zeros((num_weights, d), grad.dtype)
    elif grad.dtype == _F32 and (loops := embedding_loops.kernels()) is not None:
        out = loops["embedding_backward"](grad, idx, num_weights)
    elif num_weights <= _ONEHOT_MAX_ROWS:
        # few rows: a one-hot (V, n) matrix times grad is one GEMM (measured 6x faster than np.add.at)
        oh = np.zeros((num_weights, n), grad.dtype)
        oh[idx, np.arange(n)] = 1
        out = oh @ grad
    else:
        # sort the indices; each run of equal indices is one segment summed by reduceat
        order = np.argsort(idx, kind="stable")
        si = idx[order]
        starts = np.flatnonzero(np.concatenate(([True], si[1:] != si[:-1])))
        out = np.zeros((num_weights, d), grad.dtype)
        out[si[starts]] = np.add.reduceat(grad[order], starts, axis=0)
    if padding_idx is not None:
        out[padding_idx] = 0
    return out


def build() -> dict:
    return {"softmax": softmax, "log_softmax": log_softmax, "softmax_backward": softmax_backward,
            "log_softmax_backward": log_softmax_backward, "layer_norm": layer_norm,
            "layer_norm_backward": layer_norm_backward, "gelu": gelu, "gelu_backward": gelu_backward,
            "embedding_backward": _wide(embedding_backward)}
