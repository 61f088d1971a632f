"""Products with a sparse COO operand: sparse @ dense -> dense (the `sparse_mm` kernel), dense @ sparse,
sparse @ sparse, sparse @ vector; `tensorplug.mm` / `matmul` / `@` / `spmm` / `sparse.mm` / `sparse.addmm`.

Gradients as PyTorch's: the dense operand's is S^T @ G (again a sparse product, so it is
differentiable); the sparse operand's is dense G @ D^T through `mm` (MmBackward0) and sparse on the
operand's coalesced pattern through `sparse.mm` (SparseAddmmBackward0). A sparse operand that is not a
leaf (made from values that require grad) gets the sparse gradient on its own pattern either way: only
those entries reach the values, and it saves forming the dense product.
"""
from __future__ import annotations

from ..autograd.graph import record
from ..ops.linalg import _tn
from ..tensor import _gstate, _make
from ._ops import t, to_sparse
from ._tensor import SparseTensor, pattern_grad


def _check(s, d):
    if s.sparse_dim() != 2 or s.dense_dim():
        raise RuntimeError(f"addmm: matrices expected, got {s.ndim}D tensor")
    if d.ndim != 2:
        raise RuntimeError(f"addmm: matrices expected, got {d.ndim}D tensor")
    if d.shape[0] != s.shape[1]:
        raise RuntimeError(f"addmm: Argument #3 (dense): Expected dim 0 size {s.shape[1]}, got {d.shape[0]}")
    if s._dtype is not d._dtype:
        raise RuntimeError(f"expected scalar type {_tn(s._dtype)} but found {_tn(d._dtype)}")
    if s._dev is not d._dev:
        raise RuntimeError(f"Expected all tensors to be on the same device, but found at least two devices, "
                           f"{s._dev} and {d._dev}!")


def sparse_dense(s, d, name="MmBackward0"):
    """(m, k) sparse @ (k, n) dense -> (m, n) dense."""
    _check(s, d)
    K = d._k
    r = _make(K["sparse_mm"](s._i._data, s._v._data, s.shape[0], d._data), d._dtype, K, d._dev)
    if _gstate.enabled and (s._rg or d._rg):
        def vjp(g):
            gs = gd = None
            if s._rg:
                if name == "MmBackward0" and s.grad_fn is None:
                    gs = g.mm(d.t())                       # a sparse leaf: PyTorch's dense gradient
                else:
                    rows, cols = s._i[0], s._i[1]
                    gs = pattern_grad(s, (g.index_select(0, rows) * d.index_select(0, cols)).sum(1))
            if d._rg:
                gd = sparse_dense(t(s), g)
            return gs, gd
        record(name, r, (s, d), vjp)
    return r


def matmul(a, b):
    """a @ b where a or b is sparse."""
    if a.is_sparse and b.is_sparse:
        # sparse @ sparse -> sparse (through the dense product of the left operand with the right's dense form)
        return to_sparse(sparse_dense(a, b.to_dense()))
    if a.is_sparse:
        if b.ndim == 1:
            return sparse_dense(a, b.unsqueeze(1)).squeeze(1)
        return sparse_dense(a, b)
    if a.ndim == 1:
        return sparse_dense(t(b), a.unsqueeze(1)).squeeze(1)
    if a.ndim != 2:
        raise RuntimeError(f"addmm: matrices expected, got {a.ndim}D tensor")
    return sparse_dense(t(b), a.t()).t()                  # D @ S = (S^T @ D^T)^T


def spmm(input, mat2):
    """tensorplug.spmm: sparse @ dense (a dense left operand is multiplied too, as PyTorch does)."""
    if not input.is_sparse and not mat2.is_sparse:
        return input.mm(mat2)
    return matmul(input, mat2)


def mm(mat1, mat2, reduce="sum"):
    """tensorplug.sparse.mm: the gradient of a sparse mat1 is sparse (its coalesced pattern)."""
    if reduce != "sum":
        raise NotImplementedError(f"sparse.mm: reduce={reduce!r} is not supported (only 'sum')")
    if mat1.is_sparse and not mat2.is_sparse and mat2.ndim == 2:
        return sparse_dense(mat1, mat2, "SparseAddmmBackward0")
    if not mat1.is_sparse and not mat2.is_sparse:
        return mat1.mm(mat2)
    return matmul(mat1, mat2)


def addmm(input, mat1, mat2, *, beta=1.0, alpha=1.0):
    """tensorplug.sparse.addmm: beta * input + alpha * (mat1 @ mat2), mat1 sparse."""
    p = mm(mat1, mat2)
    if alpha != 1:
        p = p * alpha
    if beta == 0:                                          # input ignored (its NaNs do not propagate)
        return p
    return (input if beta == 1 else input * beta) + p


def _attach():
    S = SparseTensor
    S.mm = S.matmul = S.__matmul__ = matmul
    S.__rmatmul__ = lambda self, other: matmul(other, self)
    S.spmm = spmm
    S.smm = lambda self, other: to_sparse(matmul(self, other))


_attach()
