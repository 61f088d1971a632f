"""CuPy kernels of the sparse COO family (specs in tensorplug.dispatch.optional_sparse).

Entries are grouped by sorting their row-major positions (`cupy.argsort`, stable: CUB radix sort)
and numbering the runs of equal keys with a prefix sum; group sums go through the table's
accumulating index_put (`cupyx.scatter_add`, with its dtype fallbacks), group maxima through
`cupyx.scatter_max`.

- sparse_coalesce: one host synchronisation, for the number of distinct columns (the output size);
- sparse_softmax: none (group buffers are sized nnz, an upper bound of the number of groups);
- sparse_mm: cuSPARSE through `cupyx.scipy.sparse` (COO -> CSR sums duplicates, then CSR @ dense) for
  the dtypes cuSPARSE takes (float32/64, complex64/128); other dtypes gather the rows of dense and
  scatter-add the products into the output rows (float16 accumulates in float32).

Float sums use atomics, so on a GPU their order (and last-bit rounding) is not fixed.
"""
from __future__ import annotations

import numpy as np

_CUSPARSE = frozenset(("float32", "float64", "complex64", "complex128"))
_MAX_ATOMIC = frozenset(("float32", "float64"))     # cupyx.scatter_max's float dtypes
_INT32_MAX = 2**31 - 1                              # cuSPARSE's int32 indices


def build(xp, cx, table) -> dict:
    """table() returns the backend's complete kernel table (its accumulating index_put)."""
    int64 = np.dtype("int64")
    cusparse = []

    def sparse_module():
        """cupyx.scipy.sparse, or None where the cupyx module has none (imported on first use)."""
        if not cusparse:
            try:
                cusparse.append(cx.scipy.sparse)
            except (AttributeError, ImportError):
                cusparse.append(None)
        return cusparse[0]

    def linear(indices, sizes, dims):
        """int64 (nnz,): each column's row-major position over the sparse dims `dims`."""
        key = xp.zeros((indices.shape[1],), dtype=int64)
        stride = 1
        for d in reversed(dims):
            key += indices[d] * stride
            stride *= sizes[d]
        return key

    def runs(key):
        """(sorting order, True at the first entry of each run of equal sorted keys, run id of each
        sorted entry)."""
        order = xp.argsort(key)
        skey = key[order]
        first = xp.concatenate([xp.ones((1,), dtype=np.bool_), skey[1:] != skey[:-1]])
        return order, first, xp.cumsum(first, dtype=int64) - 1

    def sparse_coalesce(indices, values, sizes):
        nnz = indices.shape[1]
        if nnz == 0:
            return indices.copy(order="C"), values.copy(order="C")
        order, first, seg = runs(linear(indices, sizes, range(len(sizes))))
        starts = order[xp.nonzero(first)[0]]            # (synchronises: the output size)
        idx = xp.ascontiguousarray(indices[:, starts])
        out = xp.zeros((starts.shape[0],) + tuple(values.shape[1:]), dtype=values.dtype)
        table()["index_put"](out, (seg,), values[order], True)
        return idx, out

    def sparse_mm(indices, values, m, dense):
        k, n = dense.shape
        nnz = indices.shape[1]
        if nnz == 0 or n == 0:
            return xp.zeros((m, n), dtype=dense.dtype)
        sp = sparse_module() if dense.dtype.name in _CUSPARSE and max(m, k) <= _INT32_MAX else None
        if sp is not None:
            a = sp.coo_matrix((values, (indices[0], indices[1])), shape=(m, k)).tocsr()
            y = a @ xp.ascontiguousarray(dense)
            return xp.ascontiguousarray(y if y.dtype == dense.dtype else y.astype(dense.dtype))
        acc = np.dtype(np.float32) if dense.dtype == np.float16 else dense.dtype
        prod = dense[indices[1]].astype(acc, copy=False) * values.astype(acc, copy=False).reshape(nnz, 1)
        out = xp.zeros((m, n), dtype=acc)
        table()["index_put"](out, (indices[0],), prod, True)
        return out if acc == dense.dtype else out.astype(dense.dtype)

    def sparse_softmax(indices, values, sizes, dim, log):
        nnz = indices.shape[1]
        if nnz == 0:
            return values.copy(order="C")
        order, _, seg = runs(linear(indices, sizes, [d for d in range(len(sizes)) if d != dim]))
        gid = xp.empty((nnz,), dtype=int64)
        gid[order] = seg                                 # each entry's group (order is a permutation)
        acc = values.dtype if values.dtype.name in _MAX_ATOMIC else np.dtype(np.float32)
        v = values.astype(acc, copy=False)
        gshape = (nnz,) + tuple(values.shape[1:])        # nnz bounds the number of groups: no sync
        mx = xp.full(gshape, -np.inf, dtype=acc)
        cx.scatter_max(mx, gid, v)
        shifted = v - mx[gid]
        e = xp.exp(shifted)
        total = xp.zeros(gshape, dtype=acc)
        table()["index_put"](total, (gid,), e, True)
        tot = total[gid]
        r = shifted - xp.log(tot) if log else e / tot
        return r if r.dtype == values.dtype else r.astype(values.dtype)

    return {"sparse_coalesce": sparse_coalesce, "sparse_mm": sparse_mm, "sparse_softmax": sparse_softmax}
