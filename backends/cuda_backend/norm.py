"""CuPy kernels of the norm family (specs in tensorplug.dispatch.optional_norm).

batch_norm: the mean with one reduction, the variance with one fused reduction of (x - mean)^2 (no
full-size temporary), and the output in one fused pass (x - mean) * scale + bias; statistics in
float32 for float16 data. embedding_bag: one gather of the rows and one `cupyx.scatter_add` into
the bags (modes sum and mean); mode max runs the frontend's decomposition (sorts) on this backend's
primitives.
"""
from __future__ import annotations

import numpy as np

from tensorplug.dispatch import optional_norm


def build(xp, fusion, table) -> dict:
    """table() returns the backend's complete kernel table (for the max-mode decomposition)."""

    def batch_norm(x, weight, bias, mean, var, eps):
        nd = x.ndim
        c = x.shape[1]
        axes = (0,) + tuple(range(2, nd))
        bshape = (1, c) + (1,) * (nd - 2)
        acc = np.dtype(np.float32) if x.dtype == np.float16 else x.dtype
        if mean is None:
            m = xp.mean(x, axis=axes, dtype=acc)
            v = fusion.sq_dev_sum(x, m.reshape(bshape), axes) / (x.size // c)
            mean_out, var_out = m.astype(x.dtype, copy=False), v.astype(x.dtype, copy=False)
        else:
            m, v = mean.astype(acc, copy=False), var.astype(acc, copy=False)
            mean_out, var_out = mean, var
        scale = 1 / xp.sqrt(v + acc.type(eps))
        if weight is not None:
            scale = scale * weight.astype(acc, copy=False)
        b = bias.astype(acc, copy=False) if bias is not None else xp.zeros((c,), dtype=acc)
        y = fusion.bn_apply(x, m.reshape(bshape), scale.reshape(bshape), b.reshape(bshape))
        return y, mean_out, var_out

    def embedding_bag(weight, idx, offsets, weights, mode):
        n, b, d = idx.shape[0], offsets.shape[0], weight.shape[1]
        ends = xp.concatenate([offsets[1:], xp.full((1,), n, dtype=offsets.dtype)])
        count = (ends - offsets).astype(np.int64, copy=False)
        if mode == "max":
            return optional_norm.embedding_bag(table(), weight, idx, offsets, weights, mode)
        out = xp.zeros((b, d), dtype=weight.dtype)
        if n == 0 or b == 0:
            return out, count, None
        # the bag of every element: count bag starts at each position, then a prefix sum
        marks = xp.zeros((n + 1,), dtype=np.int64)
        table()["index_put"](marks, (offsets,), xp.ones((b,), dtype=np.int64), True)
        bag = xp.cumsum(marks[:n]) - 1
        rows = weight[idx]                                                 # (n, D)
        if weights is not None:
            rows = rows * weights.reshape(n, 1)
        table()["index_put"](out, (bag,), rows, True)
        if mode == "mean":
            out = out / xp.maximum(count, 1).astype(weight.dtype).reshape(b, 1)
        return out, count, None

    return {"batch_norm": batch_norm, "embedding_bag": embedding_bag}
