"""Optional kernels of the sparse COO family (what tensorplug.sparse runs), and their decompositions.

A sparse COO tensor is held by the frontend as two backend arrays: `indices`, int64 of shape
(sparse_dim, nnz), every entry already checked to be in range, and `values`, of shape
(nnz, *dense_shape). The kernels here take those arrays (never a frontend object) and return new arrays.

The decompositions are written in required primitives (argsort, scatter_add, scatter, gather, index),
so every backend runs sparse tensors; a backend may provide faster native kernels (the NumPy backend
does, with sorted segment sums). The frontend owns every gradient.
"""
from __future__ import annotations

OPTIONAL: dict[str, str] = {
    "sparse_coalesce": "sparse_coalesce(indices, values, sizes) -> (indices, values): `sizes` the sparse "
                       "dims' sizes (a tuple of sparse_dim ints); the distinct index columns in row-major "
                       "order (int64 (sparse_dim, n)) and, for each, the sum of the values of its duplicates "
                       "(values' dtype, (n, *dense_shape))",
    "sparse_mm": "sparse_mm(indices, values, m, dense) -> (m, N): the product of the (m, K) sparse matrix "
                 "given by indices (int64 (2, nnz)) and values ((nnz,), dense's dtype) with dense (K, N): "
                 "y[i] = sum of values[k] * dense[indices[1, k]] over the k with indices[0, k] == i "
                 "(duplicates add up; rows without entries are 0)",
    "sparse_softmax": "sparse_softmax(indices, values, sizes, dim, log) -> values: the softmax (log_softmax "
                      "when `log`) of the floating values over each group of entries whose indices agree "
                      "in every sparse dim but `dim`, separately for each dense position; indices coalesced "
                      "(distinct columns); result shaped as values",
}


def _dt(x):
    return x.dtype.name if hasattr(x.dtype, "name") else str(x.dtype)


def _linear(K, indices, sizes):
    """int64 (nnz,): each index column as a row-major position within `sizes`."""
    key = None
    stride = 1
    for d in range(len(sizes) - 1, -1, -1):
        row = K["slice"](indices, (d,))
        term = row if stride == 1 else K["mul"](row, stride)
        key = term if key is None else K["add"](key, term)
        stride *= sizes[d]
    if key is None:                                   # no sparse dims: every entry at position 0
        key = K["full"]((indices.shape[1],), 0, "int64")
    return key


def _segments(K, key):
    """(order, segment id of each sorted entry, number of segments) of the sorted keys."""
    n = key.shape[0]
    order = K["argsort"](key, 0, False, True)
    skey = K["index"](key, (order,))
    first = K["full"]((1,), True, "bool")
    new = K["concat"]([first, K["ne"](K["slice"](skey, (slice(1, None),)), K["slice"](skey, (slice(0, n - 1),)))], 0)
    seg = K["sub"](K["cumsum"](K["astype"](new, "int64"), 0), 1)
    count = int(K["to_numpy"](K["sum"](K["astype"](new, "int64"), None, False)))
    return order, skey, new, seg, count


def _along0(K, idx, shape):
    """idx (n,) broadcast over the trailing dims of `shape` (for gather / scatter along axis 0)."""
    col = K["reshape"](idx, (idx.shape[0],) + (1,) * (len(shape) - 1))
    return K["copy"](K["broadcast_to"](col, tuple(shape)))


def sparse_coalesce(K, indices, values, sizes):
    nnz = indices.shape[1]
    if nnz == 0:
        return K["copy"](indices), K["copy"](values)
    order, skey, new, seg, count = _segments(K, _linear(K, indices, sizes))
    svals = K["index"](values, (order,))
    out = K["full"]((count,) + tuple(values.shape[1:]), 0, _dt(values))
    K["scatter_add"](out, _along0(K, seg, svals.shape), svals, 0)
    ukey = K["index"](skey, (K["nonzero"](new)[0],))
    rows = []
    stride = 1
    for d in range(len(sizes) - 1, -1, -1):
        r = K["remainder"](K["floor_divide"](ukey, stride), sizes[d]) if stride != 1 else K["remainder"](ukey, sizes[d])
        rows.append(K["reshape"](r, (1, count)))
        stride *= sizes[d]
    rows.reverse()
    idx = K["concat"](rows, 0) if rows else K["full"]((0, count), 0, "int64")
    return idx, out


def sparse_mm(K, indices, values, m, dense):
    n = dense.shape[1]
    out = K["full"]((m, n), 0, _dt(dense))
    nnz = indices.shape[1]
    if nnz == 0 or n == 0:
        return out
    rows, cols = K["slice"](indices, (0,)), K["slice"](indices, (1,))
    prod = K["mul"](K["index"](dense, (cols,)), K["reshape"](values, (nnz, 1)))
    K["scatter_add"](out, _along0(K, rows, (nnz, n)), prod, 0)
    return out


def sparse_softmax(K, indices, values, sizes, dim, log):
    nnz = indices.shape[1]
    if nnz == 0:
        return K["copy"](values)
    dt = _dt(values)
    group_sizes = tuple(1 if d == dim else s for d, s in enumerate(sizes))
    rows = [K["reshape"](K["full"]((nnz,), 0, "int64") if d == dim else K["copy"](K["slice"](indices, (d,))), (1, nnz))
            for d in range(len(sizes))]
    order, _, _, seg, count = _segments(K, _linear(K, K["concat"](rows, 0), group_sizes))
    gid = K["full"]((nnz,), 0, "int64")
    K["scatter"](gid, order, seg, 0)                  # gid[order[j]] = seg[j]: each entry's group
    g = _along0(K, gid, values.shape)
    gshape = (count,) + tuple(values.shape[1:])
    # group maxima: scatter the values in ascending order, so the last (largest) write wins
    perm = K["argsort"](values, 0, False, True)
    mx = K["full"](gshape, float("-inf"), dt)
    K["scatter"](mx, K["gather"](g, perm, 0), K["gather"](values, perm, 0), 0)
    shifted = K["sub"](values, K["gather"](mx, g, 0))
    e = K["exp"](shifted)
    total = K["full"](gshape, 0, dt)
    K["scatter_add"](total, g, e, 0)
    tot = K["gather"](total, g, 0)
    if log:
        return K["sub"](shifted, K["log"](tot))
    return K["div"](e, tot)
