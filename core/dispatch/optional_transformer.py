"""Optional kernels of the transformer-block family (specs and decompositions).

Fused forwards and backwards of the pointwise / row-wise ops a transformer step spends its time in:
the backwards of softmax and log_softmax, layer_norm with its backward, gelu with its backward, and
the weight gradient of embedding. Each kernel named in OPTIONAL has a decomposition here taking the
kernel table K first; a backend may provide it natively instead. The backward kernels are used only
by the frontend's backward rules when no graph of the backward is being built (create_graph off);
otherwise those rules run the same formulas in Tensor ops, so gradients of any order still hold.
"""
from __future__ import annotations

import math

OPTIONAL: dict[str, str] = {
    "softmax_backward": (
        "softmax_backward(grad, out, axis) -> out * (grad - sum(grad * out, axis)): the input gradient of "
        "softmax, given its output out and the output gradient grad (same shape and dtype)"),
    "log_softmax_backward": (
        "log_softmax_backward(grad, out, axis) -> grad - exp(out) * sum(grad, axis): the input gradient "
        "of log_softmax, given its output out and the output gradient grad (same shape and dtype)"),
    "layer_norm": (
        "layer_norm(x, weight, bias, eps) -> (y, mean, rstd): x (M, N) with M, N > 0, each row normalized: "
        "y = (x - mean) * rstd * weight + bias, rstd = 1 / sqrt(biased variance + eps); weight, bias (N,) "
        "arrays or None (1, 0). Returns y in x's dtype and the (M,) row means and rstd in x's dtype"),
    "layer_norm_backward": (
        "layer_norm_backward(grad, x, mean, rstd, weight) -> (dx, dweight, dbias): gradients of layer_norm "
        "for the output gradient grad (M, N), given the forward's x, mean and rstd (M,); weight (N,) or "
        "None. dweight = sum over rows of grad * xhat, dbias = sum over rows of grad ((N,) each)"),
    "gelu": (
        "gelu(x, approximate) -> x * Phi(x), Phi the standard normal CDF ('none'), or "
        "0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))) ('tanh'); floating x"),
    "gelu_backward": (
        "gelu_backward(grad, x, approximate) -> grad * d gelu(x) / dx, approximate 'none' or 'tanh'"),
    "embedding_backward": (
        "embedding_backward(grad, idx, num_weights, padding_idx) -> (num_weights, D) array: row v is the "
        "sum of the rows grad[i] (grad (n, D)) with idx[i] == v (idx (n,) int64 in range), zero for row "
        "padding_idx (an int, or None for none)"),
}

_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_INV_SQRT_2 = 1.0 / math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


def _dt(x):
    return x.dtype.name if hasattr(x.dtype, "name") else str(x.dtype)


def in_float32(fn, dtype_arg=0):
    """fn computed in float32 for float16 / bfloat16 arrays (the dtype of argument `dtype_arg`), results
    rounded once (PyTorch's kernels): step-by-step rounding would cancel 1 + tanh(u) to 0 in the gelu tails."""
    def run(K, *args):
        dt = _dt(args[dtype_arg])
        if dt not in ("float16", "bfloat16"):
            return fn(K, *args)
        r = fn(K, *(K["astype"](a, "float32") if hasattr(a, "dtype") and _dt(a) == dt else a for a in args))
        if isinstance(r, tuple):
            return tuple(K["astype"](a, dt) for a in r)
        return K["astype"](r, dt)
    run.__name__ = fn.__name__
    return run


_in_float32 = in_float32


@_in_float32
def softmax_backward(K, grad, out, axis):
    s = K["sum"](K["mul"](grad, out), (axis,), True)
    return K["mul"](out, K["sub"](grad, s))


@_in_float32
def log_softmax_backward(K, grad, out, axis):
    return K["sub"](grad, K["mul"](K["exp"](out), K["sum"](grad, (axis,), True)))


@_in_float32
def layer_norm(K, x, weight, bias, eps):
    m, n = x.shape
    mean = K["div"](K["sum"](x, (1,), True), float(n))
    d = K["sub"](x, mean)
    var = K["div"](K["sum"](K["mul"](d, d), (1,), True), float(n))
    rstd = K["div"](1.0, K["sqrt"](K["add"](var, float(eps))))
    y = K["mul"](d, rstd)
    if weight is not None:
        y = K["mul"](y, K["reshape"](weight, (1, n)))
    if bias is not None:
        y = K["add"](y, K["reshape"](bias, (1, n)))
    return y, K["reshape"](mean, (m,)), K["reshape"](rstd, (m,))


@_in_float32
def layer_norm_backward(K, grad, x, mean, rstd, weight):
    m, n = x.shape
    r = K["reshape"](rstd, (m, 1))
    xhat = K["mul"](K["sub"](x, K["reshape"](mean, (m, 1))), r)
    dw = K["sum"](K["mul"](grad, xhat), (0,), False)
    db = K["sum"](grad, (0,), False)
    gx = grad if weight is None else K["mul"](grad, K["reshape"](weight, (1, n)))
    a = K["div"](K["sum"](gx, (1,), True), float(n))
    b = K["div"](K["sum"](K["mul"](gx, xhat), (1,), True), float(n))
    dx = K["mul"](K["sub"](K["sub"](gx, a), K["mul"](xhat, b)), r)
    return dx, dw, db


@_in_float32
def gelu(K, x, approximate):
    if approximate == "tanh":
        u = K["mul"](K["add"](x, K["mul"](K["mul"](K["mul"](x, x), x), 0.044715)), _SQRT_2_OVER_PI)
        return K["mul"](K["mul"](x, 0.5), K["add"](K["tanh"](u), 1.0))
    return K["mul"](K["mul"](x, 0.5), K["add"](K["erf"](K["mul"](x, _INV_SQRT_2)), 1.0))


@_in_float32
def gelu_backward(K, grad, x, approximate):
    if approximate == "tanh":
        x2 = K["mul"](x, x)
        t = K["tanh"](K["mul"](K["add"](x, K["mul"](K["mul"](x2, x), 0.044715)), _SQRT_2_OVER_PI))
        du = K["mul"](K["add"](K["mul"](x2, 3 * 0.044715), 1.0), _SQRT_2_OVER_PI)
        d = K["add"](K["mul"](K["add"](t, 1.0), 0.5),
                     K["mul"](K["mul"](K["mul"](x, 0.5), K["sub"](1.0, K["mul"](t, t))), du))
        return K["mul"](grad, d)
    cdf = K["mul"](K["add"](K["erf"](K["mul"](x, _INV_SQRT_2)), 1.0), 0.5)
    pdf = K["mul"](K["exp"](K["mul"](K["mul"](x, x), -0.5)), _INV_SQRT_2PI)
    return K["mul"](grad, K["add"](cdf, K["mul"](x, pdf)))


def embedding_backward(K, grad, idx, num_weights, padding_idx):
    n, d = grad.shape
    out = K["full"]((num_weights, d), 0, _dt(grad))
    if n:
        cols = K["copy"](K["broadcast_to"](K["reshape"](idx, (n, 1)), (n, d)))
        K["scatter_add"](out, cols, grad, 0)
    if padding_idx is not None:
        K["assign"](K["slice"](out, (slice(padding_idx, padding_idx + 1),)), 0)
    return out
