"""Linear ops of nn.functional: `linear` (x W^T + b) and `bilinear` (x1^T A x2 + b).

Both are compositions of differentiable Tensor ops (matmul, reshape, mul, sum), so their
gradients of every order come from those ops.
"""
from __future__ import annotations

from ..amp.state import state as _amp
from ._core import Tensor, _gstate, _make, record
from ._float32 import in_float32

FUNCTIONAL = ["linear", "bilinear"]


def _check(x, name, fn):
    if not isinstance(x, Tensor):
        raise TypeError(f"{fn}(): argument '{name}' must be Tensor, not {type(x).__name__}")


@in_float32         # bfloat16: the bias is added to the float32 product, one rounding (PyTorch's addmm)
def linear(input, weight, bias=None):
    """y = input @ weight.T + bias. input (*, in_features), weight (out_features, in_features)
    or (in_features,), bias (out_features,) or None -> (*, out_features).

    >>> linear(tensor([[1., 2.]]), tensor([[1., 0.], [0., 1.], [1., 1.]])) -> tensor([[1., 2., 3.]])"""
    if _amp.on:
        return _amp.run("linear", linear, (input, weight, bias))
    _check(input, "input", "linear")
    _check(weight, "weight", "linear")
    if bias is not None:
        _check(bias, "bias", "linear")
    if weight.ndim > 2:
        raise RuntimeError(f"linear(): weight must be 1-D or 2-D, got a {weight.ndim}-D tensor")
    if input.ndim == 0:
        raise RuntimeError("linear(): input must have at least one dimension (got a 0-d tensor)")
    if input.shape[-1] != weight.shape[-1]:
        rows = input.numel() // input.shape[-1] if input.shape[-1] else 0
        if input.ndim == 1:
            rows = 1
        w = tuple(weight.shape)
        w_t = f"{w[1]}x{w[0]}" if len(w) == 2 else f"{w[0]}x1"
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({rows}x{input.shape[-1]} and {w_t})")
    if input.ndim == 2 and weight.ndim == 2 and _same_kind(input, weight, bias):
        return _addmm(input, weight, bias)
    if input.ndim > 2 and weight.ndim == 2 and _same_kind(input, weight, bias):
        # (*, in) folded into one 2-d GEMM, as PyTorch does (its grad_fn is UnsafeViewBackward0): a batched
        # matmul of (B, T, in) @ (in, out) and its weight gradient (a batch of products, then a sum)
        # are several times slower than the one (B*T, in) @ (in, out) product
        lead = tuple(input.shape[:-1])
        rows = 1
        for d in lead:
            rows *= d
        from .shape import _unsafe_view
        return _unsafe_view(_addmm(input.reshape(rows, input.shape[-1]), weight, bias), lead + (weight.shape[0],))
    out = input.matmul(weight.t() if weight.ndim == 2 else weight)
    if bias is not None:
        out = out + bias
    return out


def _same_kind(input, weight, bias):
    return input._dtype is weight._dtype and input._k is weight._k and (
        bias is None or (bias._dtype is input._dtype and bias._k is input._k and bias.ndim == 1
                         and bias._data.shape[0] == weight._data.shape[0]))


def _addmm(x, w, b):
    """The common 2-d case as one op: x @ w.T (+ b) with one matmul and an in-place bias add;
    its backward yields fresh, contiguous gradients (two matmuls and a sum)."""
    k = x._k
    data = k["matmul"](x._data, k["permute"](w._data, (1, 0)))
    if b is not None:
        k["add"](data, b._data, out=data)
    out = _make(data, x._dtype, k, x._dev)
    inputs = (x, w) if b is None else (x, w, b)
    if _gstate.enabled and any(t._rg for t in inputs):
        def vjp(g):
            gx = g.matmul(w) if x._rg else None
            gw = g.t().matmul(x) if w._rg else None
            if b is None:
                return gx, gw
            return gx, gw, (g.sum(0) if b._rg else None)
        record("AddmmBackward0", out, inputs, vjp, saved=(x, w))
    return out


def bilinear(input1, input2, weight, bias=None):
    """y[..., o] = sum_ij input1[..., i] weight[o, i, j] input2[..., j] + bias[o].

    input1 (*, in1), input2 (*, in2) with equal leading dims, weight (out, in1, in2), bias (out,)."""
    if _amp.on:
        return _amp.run("bilinear", bilinear, (input1, input2, weight, bias))
    for x, n in ((input1, "input1"), (input2, "input2"), (weight, "weight")):
        _check(x, n, "bilinear")
    if weight.ndim != 3:
        raise RuntimeError(f"bilinear(): weight must be a 3-D tensor, got a {weight.ndim}-D tensor")
    if input1.ndim != input2.ndim:
        raise RuntimeError(f"bilinear(): input dimensions do not match: got {input1.ndim} and {input2.ndim}")
    if input1.ndim == 0:
        raise RuntimeError("bilinear(): inputs must have at least one dimension")
    for i in range(input1.ndim - 1):
        if input1.shape[i] != input2.shape[i]:
            raise RuntimeError(f"bilinear(): input batch dimensions do not match at dim {i}: got "
                               f"{input1.shape[i]} and {input2.shape[i]}")
    out_f, in1, in2 = weight.shape
    if input1.shape[-1] != in1:
        raise RuntimeError(f"bilinear(): input1 size does not match weight size: got {input1.shape[-1]} "
                           f"but expected {in1}")
    if input2.shape[-1] != in2:
        raise RuntimeError(f"bilinear(): input2 size does not match weight size: got {input2.shape[-1]} "
                           f"but expected {in2}")
    if bias is not None:
        _check(bias, "bias", "bilinear")
        if bias.ndim != 1 or bias.shape[0] != out_f:
            got = bias.shape[0] if bias.ndim else bias.numel()
            raise RuntimeError(f"bilinear(): bias size does not match weight size: got {got} but "
                               f"expected {out_f}")
    lead = tuple(input1.shape[:-1])
    x1 = input1.reshape(-1, in1)
    x2 = input2.reshape(-1, in2)
    # (N, in1) @ (in1, out*in2) -> (N, out, in2), then contract in2 with x2
    w = weight.permute(1, 0, 2).reshape(in1, out_f * in2)
    t = x1.matmul(w).reshape(-1, out_f, in2)
    out = (t * x2.unsqueeze(1)).sum(-1)
    if bias is not None:
        out = out + bias
    return out.reshape(lead + (out_f,))

