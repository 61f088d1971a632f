"""tensorplug.sparse_coo_tensor: a sparse COO tensor from indices and values (PyTorch's checks)."""
from __future__ import annotations

import numpy as np

from .. import dtypes as _dt
from ..tensor import Tensor
from ._tensor import coo


def _as_tensor(x, dtype=None, device=None):
    from ..ops.creation import tensor
    if isinstance(x, Tensor):
        t = x
        if device is not None:
            t = t.to(device)
        return t if dtype is None else t.to(dtype)
    if isinstance(x, np.ndarray) and x.dtype.kind in "iu" and dtype is None:
        x = x.astype(np.int64)
    return tensor(x, dtype=dtype, device=device)


def sparse_coo_tensor(indices, values, size=None, *, dtype=None, device=None, pin_memory=False,
                      requires_grad=False, check_invariants=None, is_coalesced=None):
    """The sparse COO tensor with `values[k]` at index column `indices[:, k]` (duplicates add up).

    >>> s = tensorplug.sparse_coo_tensor([[0, 1], [2, 0]], [3., 4.], (2, 3))
    >>> s.to_dense()
    tensor([[0., 0., 3.],
            [4., 0., 0.]])
    """
    if dtype is not None:
        dtype = _dt.as_dtype(dtype)
    v = _as_tensor(values, dtype, device)
    i = _as_tensor(indices, None, v.device)
    if i._dtype is not _dt.int64:
        i = i.to(_dt.int64)           # (PyTorch casts float and int32 indices too)
    if i.ndim != 2 and (size is None or i.ndim != 1):
        raise RuntimeError(f"indices must be sparse_dim x nnz, but got: {list(i.shape)}")
    sd, nnz = (i.shape[0], i.shape[1]) if i.ndim == 2 else (i.shape[0], 1)
    if v.ndim == 0:
        raise RuntimeError("values must be at least 1-dimensional")
    if size is not None and (i.ndim != 2 or len(size) != sd + v.ndim - 1):
        raise RuntimeError(f"'len(size) == sparse_dim + dense_dim' is not satisfied: len(size) = {len(size)}, "
                           f"sparse_dim = {sd}, dense_dim = {v.ndim - 1}")
    if v.shape[0] != nnz:
        raise RuntimeError(f"indices and values must have same nnz, but got nnz from indices: {nnz}, "
                           f"nnz from values: {v.shape[0]}")
    host = i._host() if (size is None or check_invariants or nnz) else None
    if size is None:
        size = tuple(int(m) + 1 if nnz else 0 for m in (host.max(axis=1) if nnz else [0] * sd)) + tuple(v.shape[1:])
    size = tuple(int(s) for s in size)
    if i.ndim != 2 or len(size) != sd + v.ndim - 1:
        raise RuntimeError(f"'len(size) == sparse_dim + dense_dim' is not satisfied: len(size) = {len(size)}, "
                           f"sparse_dim = {sd}, dense_dim = {v.ndim - 1}")
    if tuple(v.shape[1:]) != size[sd:]:
        raise RuntimeError(f"values has incorrect size, expected {[nnz] + list(size[sd:])}, got {list(v.shape)}")
    if nnz:
        # out-of-range indices would be memory errors in PyTorch (unchecked by default); here they are always
        # an error, with PyTorch's message
        lo, hi = host.min(axis=1), host.max(axis=1)
        for d in range(sd):
            if lo[d] < 0:
                raise RuntimeError(f"found negative index {int(lo[d])} for dim {d}")
            if hi[d] >= size[d]:
                raise RuntimeError(f"size is inconsistent with indices: for dim {d}, size is {size[d]} but found "
                                   f"index {int(hi[d])}")
    coalesced = bool(is_coalesced) if is_coalesced is not None else nnz <= 1
    t = coo(i, v, size, coalesced)
    if requires_grad:
        if v._rg:
            raise RuntimeError("requires_grad=True needs values that do not require grad")
        t.requires_grad_(True)
    return t

