"""CuPy kernels of the matrix-factorization family (core/dispatch/optional_linalg.py) on cupy.linalg
(cuSOLVER). cuSOLVER does not say which matrix of a batch is not positive-definite, so a failed
cholesky is redone on the host to find it (an error path only). Triangular solves use substitution
for small matrices (one launch per row, batched) and cupyx.scipy.linalg.solve_triangular (trsm) per
matrix for larger ones."""
from __future__ import annotations

import importlib

import numpy as np

from tensorplug.dispatch import optional_linalg as _la

_REAL = {"complex64": np.float32, "complex128": np.float64}


def _trsm2d(cx):
    try:
        sl = importlib.import_module(cx.__name__ + ".scipy.linalg")
    except (AttributeError, ImportError):
        return None
    return lambda a, b, lower, unit: sl.solve_triangular(a, b, lower=lower, unit_diagonal=unit)


def build(xp, cx) -> dict:
    la = xp.linalg
    trsm2d = _trsm2d(cx)

    def real(x, like):
        dt = _REAL.get(like.dtype.name, like.dtype)
        return x if x.dtype == dt else x.astype(dt)

    def same(x, like):
        return x if x.dtype == like.dtype else x.astype(like.dtype)

    def cholesky(a):
        n = a.shape[-1]
        low = xp.asarray(np.tril(np.ones((n, n)), -1), dtype=a.dtype)
        diag = xp.asarray(np.eye(n), dtype=a.dtype)
        lo = a * low
        # the Hermitian matrix of a's lower triangle (which triangle cuSOLVER reads depends on the layout)
        h = lo + xp.conj(xp.swapaxes(lo, -1, -2)) + a * diag
        try:
            with cx.errstate(linalg="raise"):
                L = la.cholesky(h)
            return same(L, a), xp.zeros(a.shape[:-2], dtype=xp.int32)
        except np.linalg.LinAlgError:
            L, info = _la.host_cholesky(xp.asnumpy(h))
            return xp.asarray(L), xp.asarray(info)

    def solve_triangular(a, b, upper, unitriangular):
        return same(_la.solve_triangular_with(xp, trsm2d, a, b, upper, unitriangular), b)

    def qr(a, complete):
        q, r = la.qr(a, mode="complete" if complete else "reduced")
        return same(q, a), same(r, a)

    def eigh(a, upper):
        w, v = la.eigh(a, UPLO="U" if upper else "L")
        return real(w, a), same(v, a)

    def svd(a, full_matrices):
        u, s, vh = la.svd(a, full_matrices=full_matrices)
        return same(u, a), real(s, a), same(vh, a)

    return {"cholesky": cholesky, "solve_triangular": solve_triangular, "qr": qr, "eigh": eigh, "svd": svd}
