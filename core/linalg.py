"""`tensorplug.linalg`: PyTorch's `torch.linalg` namespace.

    import tensorplug as torch
    x = torch.linalg.solve(A, b)          # A x = b  (the old `torch.gesv(b, A)`)
    torch.linalg.norm(A), torch.linalg.det(A), torch.linalg.inv(A)

Every function is defined in `tensorplug.ops.linalg`; this module only names them as
`torch.linalg` does (`linalg.norm` and `linalg.cross` differ from the top-level `norm`/`cross`).
"""
from __future__ import annotations

from .ops.linalg import (LinAlgError, LUFactor, SlogdetResult, det, diagonal, inverse as inv,  # noqa: F401
                         linalg_cross as cross, linalg_norm as norm, lu_factor, matmul, matrix_norm,
                         matrix_power, multi_dot, slogdet, solve, vecdot, vector_norm)
from .ops.factorizations import (cholesky_ex, eigh, eigvalsh, inv_ex, linalg_cholesky as cholesky,  # noqa: F401
                                 linalg_qr as qr, linalg_svd as svd, lstsq, matrix_rank, pinv, solve_ex,
                                 solve_triangular, svdvals)

__all__ = ["LinAlgError", "cross", "det", "diagonal", "inv", "lu_factor", "matmul", "matrix_norm",
           "matrix_power", "multi_dot", "norm", "slogdet", "solve", "vecdot", "vector_norm",
           "cholesky", "cholesky_ex", "solve_triangular", "qr", "eigh", "eigvalsh", "svd", "svdvals", "pinv",
           "lstsq", "matrix_rank", "solve_ex", "inv_ex"]
