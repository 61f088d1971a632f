"""NumPy kernels of the matrix-factorization family (core/dispatch/optional_linalg.py): LAPACK through
numpy.linalg; triangular solves through scipy.linalg when SciPy is importable (it is optional),
NumPy substitution otherwise."""
from __future__ import annotations

from tensorplug.dispatch import optional_linalg as _la


def build() -> dict:
    return {"cholesky": _la.host_cholesky, "solve_triangular": _la.host_solve_triangular,
            "qr": _la.host_qr, "eigh": _la.host_eigh, "svd": _la.host_svd}
