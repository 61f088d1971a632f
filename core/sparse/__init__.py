"""tensorplug.sparse: sparse COO tensors (torch.sparse_coo layout) and the ops PyTorch runs on them.

A sparse COO tensor (`tensorplug.sparse_coo_tensor(indices, values, size)`, `Tensor.to_sparse()`)
holds int64 `indices` (sparse_dim x nnz) and `values` (nnz x *dense_shape). Supported: `to_dense`,
`coalesce`, `is_coalesced`, `indices` / `values` (coalesced), `_indices` / `_values` / `_nnz`,
`sparse_dim` / `dense_dim`, `t` / `transpose`, `neg`, `mul` / `div` by a scalar, sparse + sparse,
dense + sparse, `mm` / `matmul` / `@` / `spmm` with dense operands, `to`, `clone`, `detach`, printing,
pickling (`tensorplug.save` / `load`), and here `mm`, `addmm`, `sum`, `softmax`, `log_softmax`.
Any other op raises PyTorch's NotImplementedError. Kernels: core/dispatch/optional_sparse.py.

>>> s = tensorplug.sparse_coo_tensor([[0, 1, 1], [2, 0, 2]], [3., 4., 5.], (2, 3))
>>> tensorplug.sparse.mm(s, tensorplug.ones(3, 1))
tensor([[3.],
        [9.]])
"""
from __future__ import annotations

from ._tensor import SparseTensor  # noqa: F401
from . import _ops  # noqa: F401  (attaches the SparseTensor methods)
from ._creation import sparse_coo_tensor  # noqa: F401
from ._matmul import addmm, mm, spmm  # noqa: F401
from ._reduce import log_softmax, softmax, sum  # noqa: F401

__all__ = ["addmm", "mm", "sum", "softmax", "log_softmax"]


def _sum_method(self, dim=None, keepdim=False, dtype=None):
    if keepdim:
        raise NotImplementedError("sum(keepdim=True) is not supported on sparse COO tensors")
    return sum(self, dim, dtype)


SparseTensor.sum = _sum_method
