"""Records of the sparse COO kernels (dispatch/optional_sparse.py): sparse_coalesce, sparse_mm,
sparse_softmax. References are float64 loops over the entries (a dict of positions); samples cover
duplicates, unsorted and already-coalesced entries, dense dims, empty tensors and non-contiguous operands."""
from __future__ import annotations

import numpy as np

from ._base import FLOAT, A, ErrorCase, OpRecord, Sample, register, values

SPARSE_TOL = {"float16": (1e-2, 1e-2), "bfloat16": (2e-2, 2e-2), "float32": (1e-5, 1e-5), "float64": (1e-10, 1e-11)}
_NUM = FLOAT + ("int32", "int64")


def _torch():
    import tensorplug
    return tensorplug


def _coalesce_ref(indices, values, sizes):
    acc = {}
    for k in range(indices.shape[1]):
        key = tuple(int(i) for i in indices[:, k])
        acc[key] = acc.get(key, 0) + values[k]
    keys = sorted(acc)
    idx = np.array(keys, dtype=np.int64).T.reshape(len(sizes), len(keys))
    vals = np.array([acc[k] for k in keys]).reshape((len(keys),) + values.shape[1:])
    return idx, vals


def _entries(rng, sizes, nnz, dup=True):
    idx = np.stack([rng.integers(0, s, nnz) for s in sizes]).astype(np.int64) if sizes else \
        np.zeros((0, nnz), dtype=np.int64)
    if dup and nnz > 2:
        idx[:, -1] = idx[:, 0]                   # a duplicate
    return idx


def _coalesce_samples(dt, rng):
    out = []
    for sizes, nnz, dense in (((4, 5), 9, ()), ((3,), 6, ()), ((2, 3, 4), 10, (2,)), ((4, 5), 0, ()),
                              ((6, 6), 1, (3,))):
        idx = _entries(rng, sizes, nnz)
        out.append(Sample((A(idx), A(values(rng, dt, (nnz,) + dense, -3, 3)), sizes)))
    done = np.array([[0, 0, 2], [1, 3, 0]], dtype=np.int64)          # already coalesced
    out.append(Sample((A(done), A(values(rng, dt, (3,), -3, 3)), (3, 4)), desc="already coalesced"))
    return out


register(OpRecord("sparse_coalesce", "optional", _NUM, _coalesce_samples, ref=_coalesce_ref,
                  out_dtype=lambda dt, s: ("int64", dt), tol=SPARSE_TOL,
                  errors=[ErrorCase("sparse_coo_tensor with an index past its size",
                                    lambda T: _torch().sparse_coo_tensor([[0, 5]], T([1.0, 2.0]), (3,)))],
                  doc="distinct index columns in row-major order, duplicates summed"))


def _mm_ref(indices, values, m, dense):
    y = np.zeros((m, dense.shape[1]))
    for k in range(indices.shape[1]):
        y[indices[0, k]] += values[k] * dense[indices[1, k]]
    return y


def _mm_samples(dt, rng):
    out = []
    for (m, kk, n), nnz, layout in (((4, 5, 3), 9, "C"), ((6, 3, 2), 12, "T"), ((3, 4, 5), 0, "C"),
                                    ((5, 5, 1), 7, "S"), ((2, 7, 4), 3, "C")):
        idx = _entries(rng, (m, kk), nnz)
        shape = (kk, n * 2) if layout == "S" else (kk, n)
        out.append(Sample((A(idx), A(values(rng, dt, (nnz,), -2, 2)), m, A(values(rng, dt, shape, -2, 2), layout))))
    return out


register(OpRecord("sparse_mm", "optional", _NUM, _mm_samples, ref=_mm_ref, tol=SPARSE_TOL,
                  errors=[ErrorCase("mm of a sparse (2, 3) with a dense (2, 2)",
                                    lambda T: _torch().mm(_torch().sparse_coo_tensor([[0], [1]], T([1.0]), (2, 3)),
                                                          T([[1.0, 2.0], [3.0, 4.0]])))],
                  doc="sparse (m, K) @ dense (K, N); duplicates add up"))


def _softmax_ref(indices, values, sizes, dim, log):
    groups = {}
    for k in range(indices.shape[1]):
        key = tuple(int(indices[d, k]) for d in range(len(sizes)) if d != dim)
        groups.setdefault(key, []).append(k)
    out = np.zeros_like(values, dtype=np.float64)
    for ks in groups.values():
        v = values[ks]
        sh = v - v.max(axis=0)
        e = np.exp(sh)
        out[ks] = sh - np.log(e.sum(axis=0)) if log else e / e.sum(axis=0)
    return out


def _softmax_samples(dt, rng):
    out = []
    for sizes, nnz, dense, dim in (((4, 5), 12, (), 1), ((4, 5), 12, (), 0), ((3,), 3, (), 0),
                                   ((2, 3, 4), 10, (2,), 2), ((4, 4), 0, (), 1)):
        idx = _entries(rng, sizes, nnz, dup=False)
        idx, _ = _coalesce_ref(idx, np.zeros(nnz), sizes)
        n = idx.shape[1]
        for log in (False, True):
            out.append(Sample((A(idx), A(values(rng, dt, (n,) + dense, -4, 4)), sizes, dim, log)))
    return out


register(OpRecord("sparse_softmax", "optional", FLOAT, _softmax_samples, ref=_softmax_ref, tol=SPARSE_TOL,
                  errors=[ErrorCase("sparse.softmax over a dim out of range",
                                    lambda T: _torch().sparse.softmax(
                                        _torch().sparse_coo_tensor([[0], [1]], T([1.0]), (2, 3)), 2), IndexError)],
                  doc="softmax over the entries agreeing in every sparse dim but dim; indices coalesced"))
