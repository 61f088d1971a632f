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
        "embedding_bag(weight, idx, bag, weights, num_bags, mode) -> (out, count): weight (V, D); idx and "
        "bag int64 (n,) (the row of each element and its bag, 0 <= bag < num_bags, bags of elements "
        "non-decreasing); weights (n,) in weight's dtype or None (1). mode 'sum': out[b] = sum of "
        "weights[i] * weight[idx[i]] over the elements i of bag b; 'mean': that sum divided by the bag's "
        "count; 'max': the elementwise maximum of the bag's rows. Empty bags give zeros. Returns out "
        "(num_bags, D) in weight's dtype and count (num_bags,) int64, the number of elements per bag"),
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


def embedding_bag(K, weight, idx, bag, weights, num_bags, mode):
    dt = _dt(weight)
    d = weight.shape[1]
    n = idx.shape[0]
    rows = K["index"](weight, (idx,))                                    # (n, D)
    count = K["full"]((num_bags,), 0, "int64")
    K["index_put"](count, (bag,), K["full"]((n,), 1, "int64"), True)
    bag_col = K["broadcast_to"](K["reshape"](bag, (n, 1)), (n, d))
    if mode == "max":
        lowest = K["full"]((num_bags, d), float("-inf"), dt)
        K["scatter"](lowest, bag_col, rows, 0)        # any member: a start value that is in the bag
        out = lowest
        # elementwise max per bag: sort each column's rows by value, then the last write wins
        key = K["argsort"](rows, 0, False, True)
        sorted_rows = K["gather"](rows, key, 0)
        K["scatter"](out, K["gather"](bag_col, key, 0), sorted_rows, 0)
        empty = K["reshape"](K["eq"](count, 0), (num_bags, 1))
        return K["where"](empty, K["full"]((), 0, dt), out), count
    if weights is not None:
        rows = K["mul"](rows, K["reshape"](weights, (n, 1)))
    out = K["full"]((num_bags, d), 0, dt)
    K["scatter_add"](out, bag_col, rows, 0)
    if mode == "mean":
        denom = K["maximum"](K["astype"](count, dt), K["full"]((), 1, dt))
        out = K["div"](out, K["reshape"](denom, (num_bags, 1)))
    return out, count
