"""Records of the matrix-factorization kernels (dispatch/optional_linalg.py): cholesky,
solve_triangular, qr, eigh, svd. Factors are not unique (column signs, phases), so each record
checks what defines them against float64 NumPy: reconstruction (A = L L^H, Q R, V diag(w) V^H,
U diag(S) Vh), orthonormal columns, triangular shape, and the values that are unique (eigenvalues,
singular values, cholesky's info, triangular solutions)."""
from __future__ import annotations

import numpy as np

from ._base import COMPLEX, REAL_OF, A, ErrorCase, OpRecord, Sample, register, values

FLOATS = ("float32", "float64")
TOL = {"float32": (2e-4, 2e-4), "float64": (1e-9, 1e-9), "complex64": (2e-4, 2e-4), "complex128": (1e-9, 1e-9)}


def _torch():
    import tensorplug
    return tensorplug


def _mat(rng, dt, *shape):
    return values(rng, dt, shape, -1, 1)


def _hpd(rng, dt, *shape):
    """Hermitian positive-definite (batches of) matrices, with junk above the diagonal (a kernel
    reads only the lower triangle)."""
    x = np.asarray(_mat(rng, dt, *shape), dtype=np.complex128 if dt in COMPLEX else np.float64)
    n = shape[-1]
    h = x @ np.conj(np.swapaxes(x, -1, -2)) + n * np.eye(n)
    h = np.tril(h) + np.triu(np.full(h.shape, 7.0), 1)
    return h.astype(dt)


def _mH(x):
    return np.conj(np.swapaxes(x, -1, -2))


def _close(got, want, dtype, what):
    rtol, atol = TOL[dtype]
    if got.shape != want.shape:
        return f"{what}: shape {got.shape}, expected {want.shape}"
    if not np.allclose(got, want, rtol=rtol, atol=atol):
        return f"{what}: max error {np.max(np.abs(got - want)):.3g}"
    return None


def _c(a):
    return np.asarray(a, dtype=np.complex128 if np.iscomplexobj(a) else np.float64)


# -- cholesky -------------------------------------------------------------------------------------
def _chol_samples(dt, rng):
    indefinite = np.array([[[1.0, 0.0], [0.0, 1.0]], [[1.0, 0.0], [2.0, 1.0]]]).astype(dt)
    return [Sample((A(_hpd(rng, dt, 3, 3)),)), Sample((A(_hpd(rng, dt, 2, 4, 4)),)),
            Sample((A(_hpd(rng, dt, 1, 1)),)), Sample((A(_hpd(rng, dt, 3, 3), "T"),)),
            Sample((A(indefinite),), desc="the second matrix is indefinite: info 2")]


def _chol_ref(a):
    a = _c(a)
    sym = np.tril(a) + np.conj(np.swapaxes(np.tril(a, -1), -1, -2))
    info = np.zeros(a.shape[:-2], dtype=np.int32)
    for idx in np.ndindex(*a.shape[:-2]):
        ev = [np.linalg.eigvalsh(sym[idx][:j, :j]).min() for j in range(1, a.shape[-1] + 1)]
        bad = [j + 1 for j, e in enumerate(ev) if not e > 0]
        info[idx] = bad[0] if bad else 0
    return sym, info


def _chol_compare(actual, expected, sample, dtype):
    L, info = actual
    sym, want_info = expected
    if not np.array_equal(info, want_info):
        return f"info {info.tolist()}, expected {want_info.tolist()}"
    ok = want_info == 0
    L, sym = _c(L)[ok], _c(sym)[ok]
    if not np.allclose(np.triu(L, 1), 0):
        return "L is not lower triangular"
    return _close(L @ _mH(L), sym, dtype, "L @ L^H")


register(OpRecord("cholesky", "linalg", FLOATS + COMPLEX, _chol_samples, ref=_chol_ref, compare=_chol_compare,
                  out_dtype=lambda dt, s: (dt, "int32"),
                  errors=[ErrorCase("cholesky of an indefinite matrix",
                                    lambda T: _torch().linalg.cholesky(T([[1.0, 2.0], [2.0, 1.0]]))),
                          ErrorCase("cholesky of a (2, 3) matrix",
                                    lambda T: _torch().linalg.cholesky(T([[1., 2., 3.], [4., 5., 6.]])))],
                  doc="lower factor from the lower triangle; info instead of errors"))


# -- solve_triangular -------------------------------------------------------------------------------
def _tri(rng, dt, upper, *shape):
    n = shape[-1]
    a = _mat(rng, dt, *shape) + (2 * np.eye(n)).astype(dt)
    junk = np.full(shape, 5.0).astype(dt)         # the other triangle must be ignored
    return np.where(np.triu(np.ones((n, n)), 1 if not upper else 0) > 0, a, junk) if upper else \
        np.where(np.tril(np.ones((n, n))) > 0, a, junk)


def _trsm_samples(dt, rng):
    v = lambda *s: _mat(rng, dt, *s)  # noqa: E731
    return [Sample((A(_tri(rng, dt, True, 3, 3)), A(v(3, 2)), True, False)),
            Sample((A(_tri(rng, dt, False, 2, 4, 4)), A(v(2, 4, 3)), False, False)),
            Sample((A(_tri(rng, dt, False, 3, 3)), A(v(3, 1)), False, True), desc="unitriangular"),
            Sample((A(_tri(rng, dt, True, 40, 40)), A(v(40, 2)), True, False), desc="n = 40 (a larger-n path)"),
            Sample((A(_tri(rng, dt, True, 3, 3), "T"), A(v(3, 4), "S"), True, False))]


def _trsm_ref(a, b, upper, unit):
    a = _c(a)
    t = np.triu(a) if upper else np.tril(a)
    if unit:
        n = a.shape[-1]
        t = t * (1 - np.eye(n)) + np.eye(n)
    return np.linalg.solve(t, _c(b))


register(OpRecord("solve_triangular", "linalg", FLOATS + COMPLEX, _trsm_samples, ref=_trsm_ref, tol=TOL,
                  errors=[ErrorCase("solve_triangular with mismatched shapes",
                                    lambda T: _torch().linalg.solve_triangular(T([[1.0, 0.0], [0.0, 1.0]]),
                                                                               T([[1.0], [2.0], [3.0]]),
                                                                               upper=True))],
                  doc="reads one triangle; batch dims equal"))


# -- qr -------------------------------------------------------------------------------------------
def _qr_samples(dt, rng):
    v = lambda *s: _mat(rng, dt, *s)  # noqa: E731
    return [Sample((A(v(4, 3)), False)), Sample((A(v(4, 3)), True)), Sample((A(v(2, 3, 5)), False)),
            Sample((A(v(2, 3, 5)), True)), Sample((A(v(3, 3), "T"), False)), Sample((A(v(1, 1)), False))]


def _qr_compare(actual, expected, sample, dtype):
    Q, R = (_c(x) for x in actual)
    a = _c(sample.args[0].value)
    complete = sample.args[1]
    m, n = a.shape[-2:]
    k = m if complete else min(m, n)
    if Q.shape != a.shape[:-2] + (m, k) or R.shape != a.shape[:-2] + (k, n):
        return f"shapes Q {Q.shape}, R {R.shape} for a {a.shape} (complete={complete})"
    if not np.allclose(np.tril(R, -1), 0):
        return "R is not upper triangular"
    return (_close(_mH(Q) @ Q, np.broadcast_to(np.eye(k), Q.shape[:-2] + (k, k)), dtype, "Q^H Q")
            or _close(Q @ R, a, dtype, "Q @ R"))


register(OpRecord("qr", "linalg", FLOATS + COMPLEX, _qr_samples, ref=lambda a, c: (a, a), compare=_qr_compare,
                  errors=[ErrorCase("qr with an unknown mode",
                                    lambda T: _torch().linalg.qr(T([[1.0, 2.0], [3.0, 4.0]]), mode="x"))]))


# -- eigh -----------------------------------------------------------------------------------------
def _eigh_samples(dt, rng):
    def herm(*s):
        x = np.asarray(_mat(rng, dt, *s))
        h = x + np.conj(np.swapaxes(x, -1, -2))
        return h.astype(dt)
    return [Sample((A(herm(3, 3)), False)), Sample((A(herm(2, 4, 4)), True)), Sample((A(herm(1, 1)), False)),
            Sample((A(np.tril(herm(3, 3)) + np.triu(np.full((3, 3), 9.0), 1).astype(dt)), False),
                   desc="junk above the diagonal (UPLO L)")]


def _eigh_ref(a, upper):
    a = _c(a)
    return np.linalg.eigh(a, UPLO="U" if upper else "L")


def _eigh_compare(actual, expected, sample, dtype):
    w, V = (_c(x) for x in actual)
    ww = expected[0]
    a = _c(sample.args[0].value)
    upper = sample.args[1]
    h = np.triu(a) + _mH(np.triu(a, 1)) if upper else np.tril(a) + _mH(np.tril(a, -1))
    return (_close(w, _c(ww), dtype, "eigenvalues")
            or _close(_mH(V) @ V, np.broadcast_to(np.eye(a.shape[-1]), a.shape), dtype, "V^H V")
            or _close(h @ V, V * w[..., None, :], dtype, "A V = V diag(w)"))


register(OpRecord("eigh", "linalg", FLOATS + COMPLEX, _eigh_samples, ref=_eigh_ref, compare=_eigh_compare,
                  out_dtype=lambda dt, s: (REAL_OF.get(dt, dt), dt),
                  errors=[ErrorCase("eigh with UPLO 'X'",
                                    lambda T: _torch().linalg.eigh(T([[1.0, 2.0], [2.0, 4.0]]), UPLO="X"))]))


# -- svd ------------------------------------------------------------------------------------------
def _svd_samples(dt, rng):
    v = lambda *s: _mat(rng, dt, *s)  # noqa: E731
    return [Sample((A(v(4, 3)), False)), Sample((A(v(4, 3)), True)), Sample((A(v(2, 3, 5)), False)),
            Sample((A(v(2, 3, 5)), True)), Sample((A(v(3, 3), "T"), False))]


def _svd_compare(actual, expected, sample, dtype):
    U, S, Vh = (_c(x) for x in actual)
    a = _c(sample.args[0].value)
    full = sample.args[1]
    m, n = a.shape[-2:]
    k = min(m, n)
    want_u, want_v = ((m, m), (n, n)) if full else ((m, k), (k, n))
    if U.shape[-2:] != want_u or Vh.shape[-2:] != want_v:
        return f"shapes U {U.shape}, Vh {Vh.shape} for a {a.shape} (full_matrices={full})"
    return (_close(S, np.linalg.svd(a, compute_uv=False), dtype, "singular values")
            or _close(_mH(U) @ U, np.broadcast_to(np.eye(U.shape[-1]), a.shape[:-2] + (U.shape[-1],) * 2), dtype,
                      "U^H U")
            or _close(Vh @ _mH(Vh), np.broadcast_to(np.eye(Vh.shape[-2]), a.shape[:-2] + (Vh.shape[-2],) * 2),
                      dtype, "Vh Vh^H")
            or _close((U[..., :, :k] * S[..., None, :]) @ Vh[..., :k, :], a, dtype, "U diag(S) Vh"))


register(OpRecord("svd", "linalg", FLOATS + COMPLEX, _svd_samples, ref=lambda a, f: (a, a, a), compare=_svd_compare,
                  out_dtype=lambda dt, s: (dt, REAL_OF.get(dt, dt), dt),
                  errors=[ErrorCase("svd of a 1-d tensor", lambda T: _torch().linalg.svd(T([1.0, 2.0])))]))
