"""Optional kernels of the norm family (specs and decompositions written in required primitives).

Each kernel named in OPTIONAL has a decomposition: a function of the same name here taking the
kernel table K first. A backend may provide the kernel natively instead.

`batch_norm` is the forward of every normalization layer (layer_norm, group_norm and
instance_norm reshape their input so that the normalized groups lie along axis 1);
`embedding_bag` is the forward of the segment reductions of nn.EmbeddingBag. Gradients are the
frontend's (written in Tensor ops), so a backend never writes a backward kernel.
"""
from __future__ import annotations

OPTIONAL: dict[str, str] = {
    "batch_norm": (
        "batch_norm(x, weight, bias, mean, var, eps) -> (y, mean, var): x is (N, C, *) with N * prod(*) > 0; "
        "normalizes each channel (axis 1): y = (x - mean) / sqrt(var + eps) * weight + bias, with weight, "
        "bias (C,) arrays or None (1, 0). mean and var are (C,) arrays to use, or both None: then the "
        "batch's mean and biased variance over every axis but 1 are used. Returns y in x's dtype and the "
        "(C,) mean and var that were used"),
    "embedding_bag": (
        "embedding_bag(weight, idx, offsets, weights, mode) -> (out, count, arg): weight (V, D); idx (n,) "
        "int64 rows; offsets (B,) int64 non-decreasing bag starts with offsets[0] == 0 and every offset <= n "
        "(bag b holds elements offsets[b]:offsets[b + 1], the last one up to n); weights (n,) in weight's "
        "dtype multiplying each element's row, or None. mode 'sum' or 'mean' (sum / element count) or "
        "'max' (elementwise maximum, NaN propagating). Returns out (B, D) in weight's dtype (zeros for "
        "empty bags), count (B,) int64 elements per bag, and arg: for 'max' a (B, D) int64 array holding "
        "for each bag and column the first position i (into idx) attaining the maximum (0 for empty "
        "bags), else None"),
}


def _dt(x):
    return x.dtype.name if hasattr(x.dtype, "name") else str(x.dtype)


def batch_norm(K, x, weight, bias, mean, var, eps):
    shape = tuple(x.shape)
    nd = len(shape)
    c = shape[1]
    axes = (0,) + tuple(range(2, nd))
    bshape = (1, c) + (1,) * (nd - 2)
    if mean is None:
        n = 1
        for i in axes:
            n *= shape[i]
        m = K["div"](K["sum"](x, axes, True), float(n))
        d = K["sub"](x, m)
        v = K["div"](K["sum"](K["mul"](d, d), axes, True), float(n))
        mean, var = K["reshape"](m, (c,)), K["reshape"](v, (c,))
    else:
        v = K["reshape"](var, bshape)
        d = K["sub"](x, K["reshape"](mean, bshape))
    scale = K["div"](1.0, K["sqrt"](K["add"](v, float(eps))))
    if weight is not None:
        scale = K["mul"](scale, K["reshape"](weight, bshape))
    y = K["mul"](d, scale)
    if bias is not None:
        y = K["add"](y, K["reshape"](bias, bshape))
    return y, mean, var


def embedding_bag(K, weight, idx, offsets, weights, mode):
    dt = _dt(weight)
    d = weight.shape[1]
    n = idx.shape[0]
    b = offsets.shape[0]
    n_arr = K["full"]((1,), n, "int64")
    count = K["sub"](K["concat"]([K["slice"](offsets, (slice(1, None),)), n_arr], 0), offsets)
    if n == 0 or b == 0:
        arg = K["full"]((b, d), 0, "int64") if mode == "max" else None
        return K["full"]((b, d), 0, dt), count, arg
    # the bag of every element: count bag starts at each position, then a prefix sum
    marks = K["full"]((n + 1,), 0, "int64")
    K["index_put"](marks, (offsets,), K["full"]((b,), 1, "int64"), True)
    bag = K["sub"](K["slice"](K["cumsum"](marks, 0), (slice(0, n),)), 1)
    bag_col = K["broadcast_to"](K["reshape"](bag, (n, 1)), (n, d))
    rows = K["index"](weight, (idx,))                                    # (n, D)
    if weights is not None:
        rows = K["mul"](rows, K["reshape"](weights, (n, 1)))
    if mode != "max":
        out = K["full"]((b, d), 0, dt)
        K["scatter_add"](out, K["copy"](bag_col), rows, 0)
        if mode == "mean":
            denom = K["maximum"](K["astype"](count, dt), K["full"]((), 1, dt))
            out = K["div"](out, K["reshape"](denom, (b, 1)))
        return out, count, None
    # per column, order the elements by (bag, value) with two stable sorts (ties: later positions
    # first, NaN last); each bag's maximum, at its first position, is then the bag's last element
    rev = K["flip"](rows, (0,))
    k1 = K["argsort"](rev, 0, False, True)
    bag_rev = K["copy"](K["flip"](bag_col, (0,)))
    k2 = K["argsort"](K["gather"](bag_rev, k1, 0), 0, False, True)
    perm = K["gather"](k1, k2, 0)                                         # indices into rev
    last = K["maximum"](K["sub"](K["add"](offsets, count), 1), K["full"]((), 0, "int64"))
    last = K["copy"](K["broadcast_to"](K["reshape"](last, (b, 1)), (b, d)))
    empty = K["reshape"](K["eq"](count, 0), (b, 1))
    pick = K["gather"](perm, last, 0)
    out = K["where"](empty, K["full"]((), 0, dt), K["gather"](rev, pick, 0))
    arg = K["where"](empty, K["full"]((), 0, "int64"), K["sub"](n - 1, pick))
    return out, count, arg
