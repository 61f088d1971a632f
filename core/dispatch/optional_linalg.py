"""Optional kernels of the matrix-factorization family (what tensorplug.linalg's cholesky,
solve_triangular, qr, eigh and svd run), and their decompositions.

Conventions shared by the kernels:
- inputs are (batches of) matrices `(*, m, n)` of one floating or complex dtype, with no size 0
  (the frontend makes empty results itself); batch dimensions of two operands are equal (the
  frontend broadcasts them);
- results have the input's dtype, except eigenvalues and singular values: the matching real dtype;
- a kernel never raises for a numerically bad input (an indefinite matrix, a zero pivot): it
  returns what it computed and the frontend decides (cholesky's `info` says where it failed).

The decompositions copy to the host (`to_numpy`), run NumPy (LAPACK), and copy back
(`from_numpy`): exact to LAPACK's rounding, and the only practical fallback for iterative
factorizations such as eigh and svd. `host_*` are those NumPy routines, shared with backends.
"""
from __future__ import annotations

import numpy as np

OPTIONAL: dict[str, str] = {
    "cholesky": "cholesky(a) -> (L, info): the lower Cholesky factor of each Hermitian positive-definite "
                "matrix, read from a's lower triangle; info is an int32 array of the batch shape: 0, or the "
                "order of the first leading minor that is not positive-definite (L is then unspecified)",
    "solve_triangular": "solve_triangular(a, b, upper, unitriangular) -> x with a @ x = b; a (*, n, n) is read "
                        "only in its upper (or lower) triangle, its diagonal taken as ones when unitriangular; "
                        "b (*, n, k); a zero on the diagonal gives inf/nan, not an error",
    "qr": "qr(a, complete) -> (Q, R) with a = Q @ R, Q's columns orthonormal, R upper triangular; "
          "reduced (Q (*, m, k), R (*, k, n), k = min(m, n)) or complete (Q (*, m, m), R (*, m, n))",
    "eigh": "eigh(a, upper) -> (w, V): eigenvalues in ascending order (real dtype) and eigenvectors "
            "(columns of V) of each Hermitian matrix, read from a's upper (or lower) triangle",
    "svd": "svd(a, full_matrices) -> (U, S, Vh) with a = U @ diag(S) @ Vh, S descending (real dtype); "
           "U (*, m, k), Vh (*, k, n) with k = min(m, n), or square U, Vh when full_matrices",
}

_REAL = {"complex64": "float32", "complex128": "float64"}


# -- NumPy routines (host arrays) -----------------------------------------------------------------
def _failed_minor(m):
    """The order of the first leading minor of the Hermitian matrix m that is not positive-definite
    (0 when none), by an unblocked Cholesky that stops there; also the partial factor."""
    n = m.shape[-1]
    L = np.zeros_like(m)
    for j in range(n):
        d = (m[j, j] - np.vdot(L[j, :j], L[j, :j])).real
        if not d > 0:
            return j + 1, L
        L[j, j] = np.sqrt(d)
        L[j + 1:, j] = (m[j + 1:, j] - L[j + 1:, :j] @ L[j, :j].conj()) / L[j, j]
    return 0, L


def host_cholesky(a):
    a = np.asarray(a)
    batch = a.shape[:-2]
    try:
        with np.errstate(all="ignore"):
            L = np.linalg.cholesky(a)
        if np.isfinite(L).all() or not np.isfinite(a).all():
            return L, np.zeros(batch, dtype=np.int32)
    except np.linalg.LinAlgError:
        pass
    # some matrix failed: factor one at a time to find which, and where
    flat = a.reshape((-1,) + a.shape[-2:])
    Ls = np.empty_like(flat)
    info = np.zeros(flat.shape[0], dtype=np.int32)
    for i, m in enumerate(flat):
        info[i], Ls[i] = _failed_minor(np.tril(m) + np.tril(m, -1).conj().swapaxes(-1, -2))
        if info[i] == 0:
            Ls[i] = np.linalg.cholesky(m)
    return Ls.reshape(a.shape), info.reshape(batch)


def substitution(xp, a, b, upper, unitriangular):
    """Forward/back substitution, vectorized over the batch and the columns of b (array module xp):
    n steps of O(n k), so for small n or many small matrices."""
    n = a.shape[-1]
    x = xp.zeros(b.shape, dtype=b.dtype)
    for i in (range(n - 1, -1, -1) if upper else range(n)):
        part = slice(i + 1, n) if upper else slice(0, i)
        xi = b[..., i, :] - xp.matmul(a[..., i:i + 1, part], x[..., part, :])[..., 0, :]
        if not unitriangular:
            xi = xi / a[..., i, i][..., None]
        x[..., i, :] = xi
    return x


def solve_triangular_with(xp, solve2d, a, b, upper, unitriangular):
    """Substitution for small matrices; `solve2d(a, b, lower, unit)` (a triangular solver for one
    matrix, e.g. scipy.linalg.solve_triangular) one matrix at a time for larger ones."""
    n = a.shape[-1]
    if solve2d is None or n <= 32:
        return substitution(xp, a, b, upper, unitriangular)
    fa = a.reshape((-1, n, n))
    fb = b.reshape((-1,) + b.shape[-2:])
    out = [solve2d(fa[i], fb[i], not upper, unitriangular) for i in range(fa.shape[0])]
    return xp.stack(out).reshape(b.shape).astype(b.dtype, copy=False)


def _scipy_trsm():
    try:
        from scipy.linalg import solve_triangular
    except ImportError:         # SciPy is optional: NumPy substitution then
        return None
    return lambda a, b, lower, unit: solve_triangular(a, b, lower=lower, unit_diagonal=unit,
                                                      check_finite=False)


def host_solve_triangular(a, b, upper, unitriangular):
    with np.errstate(all="ignore"):
        return solve_triangular_with(np, _scipy_trsm(), np.asarray(a), np.asarray(b), upper, unitriangular)


def host_qr(a, complete):
    q, r = np.linalg.qr(a, mode="complete" if complete else "reduced")
    return q.astype(a.dtype, copy=False), r.astype(a.dtype, copy=False)


def host_eigh(a, upper):
    w, v = np.linalg.eigh(a, UPLO="U" if upper else "L")
    return w.astype(_REAL.get(a.dtype.name, a.dtype.name), copy=False), v.astype(a.dtype, copy=False)


def host_svd(a, full_matrices):
    u, s, vh = np.linalg.svd(a, full_matrices=full_matrices)
    return (u.astype(a.dtype, copy=False), s.astype(_REAL.get(a.dtype.name, a.dtype.name), copy=False),
            vh.astype(a.dtype, copy=False))


# -- decompositions: the NumPy routines on a host copy ----------------------------------------------
def _on_host(K, fn, *arrays_then_args, n_arrays=1):
    arrays = [np.asarray(K["to_numpy"](x)) for x in arrays_then_args[:n_arrays]]
    outs = fn(*arrays, *arrays_then_args[n_arrays:])
    return tuple(K["from_numpy"](np.array(o, order="C")) for o in outs)    # (ascontiguousarray: 0-d -> 1-d)


def cholesky(K, a):
    return _on_host(K, host_cholesky, a)


def solve_triangular(K, a, b, upper, unitriangular):
    return _on_host(K, lambda *x: (host_solve_triangular(*x),), a, b, upper, unitriangular, n_arrays=2)[0]


def qr(K, a, complete):
    return _on_host(K, host_qr, a, complete)


def eigh(K, a, upper):
    return _on_host(K, host_eigh, a, upper)


def svd(K, a, full_matrices):
    return _on_host(K, host_svd, a, full_matrices)
