"""Matrix factorizations and what is built on them: `linalg.cholesky` / `cholesky_ex`,
`solve_triangular`, `qr`, `eigh` / `eigvalsh`, `svd` / `svdvals`, `pinv`, `lstsq`, `matrix_rank`,
`solve_ex` / `inv_ex`, and the older top-level forms (`cholesky`, `cholesky_solve`,
`cholesky_inverse`, `triangular_solve`, `qr`, `svd`, `pinverse`).

    import tensorplug as torch
    A = torch.randn(3, 3, dtype=torch.float64); A = A @ A.mT + torch.eye(3, dtype=torch.float64)
    L = torch.linalg.cholesky(A)                      # A == L @ L.mT
    x = torch.linalg.solve_triangular(L, torch.ones(3, 1, dtype=torch.float64), upper=False)

Values come from the optional kernels of core/dispatch/optional_linalg.py (a host round trip
where a backend has none). Backward rules are written with Tensor ops (triangular solves,
matmuls, masks), so gradients of any order work. Results that are not unique (signs of QR's and
the eigen/singular vectors' columns) are LAPACK's; losses must not depend on those choices.
"""
from __future__ import annotations

import collections
import warnings

import numpy as np

from .. import dtypes as _dt
from ._core import Tensor, _gstate, _make, broadcast_shapes, check_same_device, grad_for, record, record_multi
from .complex import cj
from .linalg import (LinAlgError, _check_square, _check_tensor, _host_like, _lu_host, _mT, _rg,
                     _tn, _xs, inverse, matmul, solve)
from .pointwise import _out, where
from .shape import expand, reshape

# PyTorch's torch.return_types names and fields
CholeskyEx = collections.namedtuple("linalg_cholesky_ex", ["L", "info"])
QR = collections.namedtuple("linalg_qr", ["Q", "R"])
Eigh = collections.namedtuple("linalg_eigh", ["eigenvalues", "eigenvectors"])
SVD = collections.namedtuple("linalg_svd", ["U", "S", "Vh"])
Lstsq = collections.namedtuple("linalg_lstsq", ["solution", "residuals", "rank", "singular_values"])
SolveEx = collections.namedtuple("linalg_solve_ex", ["result", "info"])
InvEx = collections.namedtuple("linalg_inv_ex", ["inverse", "info"])
OldQR = collections.namedtuple("qr", ["Q", "R"])
OldSVD = collections.namedtuple("svd", ["U", "S", "V"])
TriangularSolve = collections.namedtuple("triangular_solve", ["solution", "cloned_coefficient"])

_REAL = {"complex64": _dt.float32, "complex128": _dt.float64}
_EPS = {"float32": float(np.finfo(np.float32).eps), "float64": float(np.finfo(np.float64).eps),
        "complex64": float(np.finfo(np.float32).eps), "complex128": float(np.finfo(np.float64).eps)}
_warned = set()


def _deprecated(name, text):
    if name not in _warned:          # once per process, as PyTorch's TORCH_WARN_ONCE
        _warned.add(name)
        warnings.warn(text, UserWarning, stacklevel=3)


# -- small helpers -----------------------------------------------------------------------------------
def _mH(x):
    return cj(_mT(x))


def _real_dt(x):
    return _REAL.get(x._dtype.name, x._dtype)


def _wrap(data, dt, like):
    return _make(data, dt, like._k, like._dev)


def _is_empty(x):
    return 0 in x._data.shape


def _kernel(fname, name, x, *args):
    """Run factorization kernel `name`; an empty input runs the NumPy routine on host zeros (so no
    kernel sees size 0)."""
    if _is_empty(x):
        from ..dispatch import optional_linalg as host
        zeros = [np.zeros(a._data.shape, dtype=a._dtype.name) if isinstance(a, Tensor) else a for a in (x, *args)]
        res = getattr(host, "host_" + name)(*zeros)
        res = res if isinstance(res, tuple) else (res,)
        return tuple(_host_like(r, x, _dt.as_dtype(r.dtype.name))._data for r in res)
    k = x._k
    datas = [a._data if isinstance(a, Tensor) else a for a in args]
    try:
        r = k[name](x._data, *datas)
    except Exception as e:       # a backend failure that is not about the input's values
        raise RuntimeError(f"{fname}: the backend's {name!r} kernel failed: {type(e).__name__}: {e}") from e
    return r if isinstance(r, tuple) else (r,)


def _mask(shape, like, lower, diag=1.0, dt=None):
    """A host-made (n, m) mask: 1 on the lower (upper) triangle, `diag` on the diagonal, 0 elsewhere."""
    n, m = shape
    tri = np.tril(np.ones((n, m)), -1) if lower else np.triu(np.ones((n, m)), 1)
    return _host_like(tri + diag * np.eye(n, m), like, dt or _real_dt(like))


def _eye(n, like):
    return _host_like(np.eye(n), like)


def _check_float(x, fname):
    """Floating or complex, single precision or more (the factorization kernels' dtypes)."""
    dt = x._dtype
    if dt.category not in (2, 3):
        raise RuntimeError(f"{fname}: Expected a floating point or complex tensor as input. Got {_tn(dt)}")
    if dt is _dt.float16 or dt is _dt.bfloat16:
        raise RuntimeError(f"{fname}: Low precision dtypes not supported. Got {_tn(dt)}")


def _check_2d(x, fname, argname="A"):
    if x.ndim < 2:
        raise RuntimeError(f"{fname}: The input tensor {argname} must have at least 2 dimensions.")


def _batch_prefix(x, i):
    """PyTorch's '(Batch element i): ' for batched inputs."""
    return f"(Batch element {i}): " if x.ndim > 2 else ""


# -- cholesky -------------------------------------------------------------------------------------
def _cholesky_raw(A, fname):
    L, info = _kernel(fname, "cholesky", A)
    L = _wrap(L, A._dtype, A)
    # the kernel reads the lower triangle; zero the rest (an unspecified factor may have junk there)
    L = _wrap(L._k["mul"](L._data, _mask(A._data.shape[-2:], A, True, dt=A._dtype)._data), A._dtype, A)
    return L, _host_like(np.asarray(A._k["to_numpy"](info), dtype=np.int32), A, _dt.int32)


def _cholesky_backward(gL, L):
    """A = L L^H: grad_A = L^-H Phi(L^H gL) L^-1 (Phi: the lower triangle, diagonal halved), made
    Hermitian."""
    n = L.shape[-1]
    P = matmul(_mH(L), gL) * _mask((n, n), L, True, 0.5)
    S = solve_triangular(L, solve_triangular(_mH(L), P, upper=True), upper=False, left=False)  # L^-H P L^-1
    return (S + _mH(S)) * 0.5


def cholesky_ex(A, *, upper=False, check_errors=False, out=None):
    """`linalg.cholesky_ex`: (L, info), info 0 or the order of the first leading minor that is not
    positive-definite; raises only when check_errors."""
    _check_tensor(A, "linalg.cholesky_ex", "A")
    _check_square(A, "linalg.cholesky")
    _check_float(A, "linalg.cholesky")
    L, info = _cholesky_raw(A, "linalg.cholesky")
    if check_errors:
        _raise_cholesky(A, info, "linalg.cholesky")
    if _rg(A):
        src, low = A, L
        record("LinalgCholeskyExBackward0", low, (src,), lambda g: (grad_for(_cholesky_backward(g, low), src),),
               saved=(low,))
    if upper:
        L = _mH(L)
    return CholeskyEx(_out(L, out[0] if out else None), _out(info, out[1] if out else None))


def _raise_cholesky(A, info, fname):
    h = np.asarray(info._host()).reshape(-1)
    bad = np.flatnonzero(h)
    if bad.size:
        i = int(bad[0])
        raise LinAlgError(f"{fname}: {_batch_prefix(A, i)}The factorization could not be completed because the "
                          f"input is not positive-definite (the leading minor of order {int(h[i])} is not "
                          f"positive-definite).")


def linalg_cholesky(A, *, upper=False, out=None):
    """`linalg.cholesky`: the lower factor L with A = L L^H (upper: U = L^H); only A's lower triangle
    is read. A matrix that is not positive-definite raises `LinAlgError`."""
    _check_tensor(A, "linalg.cholesky", "A")
    L, info = cholesky_ex(A, upper=upper)
    _raise_cholesky(A, info, "linalg.cholesky")
    return _out(L, out)


def cholesky(input, upper=False, *, out=None):
    """Deprecated `torch.cholesky` (use `linalg.cholesky`)."""
    _check_tensor(input, "cholesky", "input")
    _deprecated("cholesky", "torch.cholesky is deprecated in favor of torch.linalg.cholesky and will be removed "
                            "in a future PyTorch release.")
    _check_square(input, "linalg.cholesky")
    _check_float(input, "linalg.cholesky")
    L, info = cholesky_ex(input, upper=upper)
    _raise_cholesky(input, info, "cholesky")
    return _out(L, out)


def cholesky_solve(B, L, upper=False, *, out=None):
    """X with (L L^H) X = B (upper: (U^H U) X = B), given the Cholesky factor."""
    _check_tensor(B, "cholesky_solve", "input")
    _check_tensor(L, "cholesky_solve", "input2")
    if B.ndim < 2 or L.ndim < 2:
        raise RuntimeError(f"b should have at least 2 dimensions, but has {B.ndim} dimensions instead"
                           if B.ndim < 2 else
                           f"u should have at least 2 dimensions, but has {L.ndim} dimensions instead")
    n = L.shape[-1]
    if L.shape[-2] != n or B.shape[-2] != n:
        raise RuntimeError(f"Incompatible matrix sizes for cholesky_solve: each A matrix is {L.shape[-2]} by {n} "
                           f"but each b matrix is {B.shape[-2]} by {B.shape[-1]}")
    if upper:
        Y = solve_triangular(_mH(L), B, upper=False)
        return _out(solve_triangular(L, Y, upper=True), out)
    Y = solve_triangular(L, B, upper=False)
    return _out(solve_triangular(_mH(L), Y, upper=True), out)


def cholesky_inverse(L, upper=False, *, out=None):
    """(L L^H)^-1 (upper: (U^H U)^-1) from a Cholesky factor."""
    _check_tensor(L, "cholesky_inverse", "input")
    _check_square(L, "cholesky_inverse", "input")
    eye = expand(_eye(L.shape[-1], L), tuple(L.shape))
    return _out(cholesky_solve(eye, L, upper), out)


# -- triangular solves ------------------------------------------------------------------------------
def _trsm(A, B, upper, unitriangular):
    """X with A X = B, batch dimensions broadcast; recorded with its own backward."""
    k = A._k
    batch = broadcast_shapes(A._data.shape[:-2], B._data.shape[:-2])
    n, kk = A._data.shape[-1], B._data.shape[-1]
    ad = A._data if A._data.shape[:-2] == batch else k["broadcast_to"](A._data, batch + (n, n))
    bd = B._data if B._data.shape[:-2] == batch else k["broadcast_to"](B._data, batch + (n, kk))
    if n == 0 or kk == 0 or 0 in batch:
        data = k["full"](batch + (n, kk), 0, A._dtype.name)
    else:
        data = k["solve_triangular"](ad, bd, upper, unitriangular)
    X = _wrap(data, A._dtype, A)
    if _rg(A, B):
        def vjp(g):
            gB = _trsm(_mH(A), g, not upper, unitriangular)
            gA = None
            if A._rg:
                gA = -matmul(gB, _mH(X)) * _mask((n, n), A, not upper, 0.0 if unitriangular else 1.0)
                gA = grad_for(gA, A)
            return gA, (grad_for(gB, B) if B._rg else None)
        record("LinalgSolveTriangularBackward0", X, (A, B), vjp, saved=(A, X))
    return X


def solve_triangular(A, B, *, upper, left=True, unitriangular=False, out=None):
    """`linalg.solve_triangular`: X with A X = B (X A = B when not left) for upper (or lower)
    triangular A (*, n, n) and B (*, n, k) (left) or (*, k, n); batch dimensions broadcast; only A's
    triangle is read (its diagonal taken as ones when unitriangular)."""
    _check_tensor(A, "linalg.solve_triangular", "A")
    _check_tensor(B, "linalg.solve_triangular", "B")
    if not isinstance(upper, bool):
        raise TypeError(f"linalg_solve_triangular(): argument 'upper' must be bool, not {type(upper).__name__}")
    _check_2d(A, "linalg.solve_triangular")
    _check_2d(B, "linalg.solve_triangular", "B")
    _check_square(A, "linalg.solve_triangular")
    _check_float(A, "linalg.solve_triangular")
    check_same_device(A, B)
    if A._dtype is not B._dtype:
        dt = _dt.promote_types(A._dtype, B._dtype)
        A, B = A.to(dt), B.to(dt)
    n = A.shape[-1]
    eqn = "AX = B" if left else "XA = B"
    if (B.shape[-2] if left else B.shape[-1]) != n:
        raise RuntimeError(f"linalg.solve_triangular: Incompatible shapes of A and B for the equation {eqn} "
                           f"({n}x{n} and {_xs(tuple(B.shape[-2:]))})")
    try:
        broadcast_shapes(tuple(A.shape[:-2]), tuple(B.shape[:-2]))
    except RuntimeError as e:
        raise RuntimeError(f"linalg.solve_triangular: the batch dimensions of A {list(A.shape)} and B "
                           f"{list(B.shape)} do not broadcast: {e}") from None
    if not left:                 # X A = B  <=>  A^T X^T = B^T
        return _out(_mT(_trsm(_mT(A), _mT(B), not upper, unitriangular)), out)
    return _out(_trsm(A, B, upper, unitriangular), out)


def triangular_solve(b, A, upper=True, transpose=False, unitriangular=False, *, out=None):
    """Deprecated `torch.triangular_solve(b, A)`: (solution of A X = b (A^T X = b when transpose),
    a copy of A)."""
    _check_tensor(b, "triangular_solve", "input")
    _check_tensor(A, "triangular_solve", "A")
    _deprecated("triangular_solve", "torch.triangular_solve is deprecated in favor of "
                                    "torch.linalg.solve_triangular and will be removed in a future PyTorch release.")
    if b.ndim < 2 or A.ndim < 2:
        raise RuntimeError(f"torch.triangular_solve: Expected b to have at least 2 dimensions, but it has "
                           f"{b.ndim} dimensions instead" if b.ndim < 2 else
                           f"torch.triangular_solve: Expected A to have at least 2 dimensions, but it has "
                           f"{A.ndim} dimensions instead")
    M = _mT(A) if transpose else A
    X = solve_triangular(M, b, upper=(upper != transpose), unitriangular=unitriangular)
    return TriangularSolve(X, A.clone())


# -- QR ---------------------------------------------------------------------------------------------
def _copyltu(M):
    """The Hermitian matrix whose lower triangle (diagonal's real part) is M's."""
    n = M.shape[-1]
    low = M * _mask((n, n), M, True, 0.0)
    d = M * _host_like(np.eye(n), M, _real_dt(M))
    if M._dtype.category == 3:
        d = d.real.to(M._dtype)
    return low + _mH(low) + d


def _qr_backward_tall(gQ, gR, Q, R):
    """A = Q R, A (m, n) with m >= n, Q (m, n): grad_A = (gQ + Q copyltu(M)) R^-H, M = R gR^H - gQ^H Q."""
    M = matmul(R, _mH(gR)) - matmul(_mH(gQ), Q)
    b = gQ + matmul(Q, _copyltu(M))
    return solve_triangular(_mH(R), b, upper=False, left=False)


def linalg_qr(A, mode="reduced", *, out=None):
    """`linalg.qr`: A = Q R; mode "reduced" (Q (*, m, k), R (*, k, n), k = min(m, n)), "complete"
    (Q (*, m, m)) or "r" (R only; Q is an empty tensor)."""
    _check_tensor(A, "linalg.qr", "A")
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), "
                           f"'r', or 'complete'")
    _check_2d(A, "linalg.qr")
    _check_float(A, "linalg.qr")
    m, n = A.shape[-2:]
    Qd, Rd = _kernel("linalg.qr", "qr", A, mode == "complete")
    Q, R = _wrap(Qd, A._dtype, A), _wrap(Rd, A._dtype, A)
    if mode == "r":
        Q = _host_like(np.zeros((0,)), A)
    if _rg(A):
        src = A

        def vjp(grads):
            gQ, gR = grads
            if mode == "r":
                raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed when "
                                   "mode='r'. Please use linalg.qr(A, mode='reduced') if you are going to "
                                   "differentiate through linalg.qr.")
            if mode == "complete" and m > n:
                raise RuntimeError("The QR decomposition is not differentiable when mode='complete' and "
                                   "nrows > ncols.")
            if m >= n:
                return (grad_for(_qr_backward_tall(gQ, gR, Q, R), src),)
            # wide: A = Q [R1 R2], X = A[:, :m] = Q R1, Y = A[:, m:] = Q R2
            R1, R2 = R[..., :, :m], R[..., :, m:]
            Y = src[..., :, m:]
            gY = matmul(Q, gR[..., :, m:])
            gX = _qr_backward_tall(gQ + matmul(Y, _mH(gR[..., :, m:])), gR[..., :, :m], Q, R1)
            from .shape import cat
            return (grad_for(cat([gX, gY], -1), src),)
        outs = [R] if mode == "r" else [Q, R]
        record_multi("LinalgQrBackward0", outs, (src,),
                     (lambda gs: vjp([None, gs[0]])) if mode == "r" else vjp, saved=(Q, R))
    if out is not None:
        _out(Q, out[0]), _out(R, out[1])
    return QR(Q, R)


def qr(input, some=True, *, out=None):
    """Deprecated `torch.qr(input, some=True)`: `linalg.qr` with mode "reduced" or "complete"."""
    _check_tensor(input, "qr", "input")
    _deprecated("qr", "torch.qr is deprecated in favor of torch.linalg.qr and will be removed in a future "
                      "PyTorch release.")
    Q, R = linalg_qr(input, "reduced" if some else "complete", out=out)
    return OldQR(Q, R)


# -- eigh -----------------------------------------------------------------------------------------
def _uplo(UPLO):
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    return UPLO == "U"


def _off_diag_inverse(E):
    """1 / E off the diagonal, 0 on it (no inf anywhere, so differentiating it again is safe)."""
    n = E.shape[-1]
    eye = _host_like(np.eye(n, dtype=bool), E, _dt.bool_)
    return where(eye, 0.0, 1.0 / where(eye, 1.0, E))


def _eigh_raw(A, fname, UPLO):
    upper = _uplo(UPLO)
    _check_square(A, fname)
    _check_float(A, fname)
    w, V = _kernel(fname, "eigh", A, upper)
    return _wrap(w, _real_dt(A), A), _wrap(V, A._dtype, A)


def _eigh_backward(gw, gV, w, V):
    """grad_A = V (diag(gw) + F o (V^H gV)) V^H, F_ij = 1 / (w_j - w_i) off the diagonal."""
    inner = 0
    if gw is not None:
        inner = _diag(gw.to(V._dtype) if V._dtype.category == 3 else gw)
    if gV is not None:
        F = _off_diag_inverse(w.unsqueeze(-2) - w.unsqueeze(-1))
        inner = inner + F * matmul(_mH(V), gV)
    return matmul(matmul(V, inner), _mH(V))


def _diag(v):
    from .shape import diag_embed
    return diag_embed(v)


def eigh(A, UPLO="L", *, out=None):
    """`linalg.eigh`: (eigenvalues ascending, eigenvectors as columns) of Hermitian A, read from its
    lower (UPLO="L") or upper triangle."""
    _check_tensor(A, "linalg.eigh", "A")
    w, V = _eigh_raw(A, "linalg.eigh", UPLO)
    if _rg(A):
        src = A
        record_multi("LinalgEighBackward0", [w, V], (src,),
                     lambda gs: (grad_for(_eigh_backward(gs[0], gs[1], w, V), src),), saved=(w, V))
    if out is not None:
        _out(w, out[0]), _out(V, out[1])
    return Eigh(w, V)


def eigvalsh(A, UPLO="L", *, out=None):
    """`linalg.eigvalsh`: the eigenvalues of Hermitian A, ascending."""
    _check_tensor(A, "linalg.eigvalsh", "A")
    if not _rg(A):
        return _out(_eigh_raw(A, "linalg.eigvalsh", UPLO)[0], out)
    # the vectors come from a recorded eigh, so that the vjp (which reads them) is differentiable again
    src = A
    w0, V = eigh(A, UPLO)
    w = _wrap(w0._data, w0._dtype, w0)
    record("LinalgEigvalshBackward0", w, (src,), lambda g: (grad_for(_eigh_backward(g, None, w0, V), src),),
           saved=(V,))
    return _out(w, out)


# -- SVD ------------------------------------------------------------------------------------------
def _svd_raw(A, fname, full_matrices):
    _check_2d(A, fname)
    _check_float(A, fname)
    U, S, Vh = _kernel(fname, "svd", A, full_matrices)
    return _wrap(U, A._dtype, A), _wrap(S, _real_dt(A), A), _wrap(Vh, A._dtype, A)


def _svd_backward(gU, gS, gVh, U, S, Vh, m, n):
    """Reduced A = U diag(S) Vh (k = min(m, n)); gauge-invariant losses. grad_A =
    U [diag(gS) + (F o (J - J^H)) S + S (F o (K - K^H))] Vh + (I - U U^H) gU S^-1 Vh
    + U S^-1 gV^H (I - V V^H), J = U^H gU, K = V^H gV, F_ij = 1 / (s_j^2 - s_i^2) off the diagonal."""
    k = S.shape[-1]
    U, Vh = U[..., :, :k], Vh[..., :k, :]
    cdt = U._dtype
    Sc = S.to(cdt) if cdt.category == 3 else S
    inner = _diag(gS.to(cdt) if (gS is not None and cdt.category == 3) else gS) if gS is not None else 0
    extra = 0
    if gU is not None or gVh is not None:
        S2 = S * S
        F = _off_diag_inverse(S2.unsqueeze(-2) - S2.unsqueeze(-1))
        Sr = Sc.unsqueeze(-2)                       # scales columns: X * Sr == X @ diag(S)
        if gU is not None:
            gU = gU[..., :, :k]
            J = matmul(_mH(U), gU)
            inner = inner + F * (J - _mH(J)) * Sr
            if m > k:
                extra = extra + matmul((gU - matmul(U, J)) / Sr, Vh)
        if gVh is not None:
            gV = _mH(gVh[..., :k, :])
            V = _mH(Vh)
            K = matmul(Vh, gV)
            inner = inner + Sc.unsqueeze(-1) * (F * (K - _mH(K)))
            if n > k:
                extra = extra + matmul(U, _mH((gV - matmul(V, K)) / Sr))
    return matmul(matmul(U, inner), Vh) + extra


def linalg_svd(A, full_matrices=True, *, driver=None, out=None):
    """`linalg.svd`: (U, S, Vh) with A = U diag(S) Vh, S descending; full_matrices gives square U and Vh
    (their extra columns/rows get no gradient)."""
    _check_tensor(A, "linalg.svd", "A")
    if driver is not None:
        raise RuntimeError("torch.linalg.svd: keyword argument `driver=` is only supported on CUDA inputs "
                           "with cuSOLVER backend.")
    U, S, Vh = _svd_raw(A, "linalg.svd", full_matrices)
    if _rg(A):
        src = A
        m, n = A.shape[-2:]
        record_multi("LinalgSvdBackward0", [U, S, Vh], (src,),
                     lambda gs: (grad_for(_svd_backward(gs[0], gs[1], gs[2], U, S, Vh, m, n), src),),
                     saved=(U, S, Vh))
    if out is not None:
        _out(U, out[0]), _out(S, out[1]), _out(Vh, out[2])
    return SVD(U, S, Vh)


def svdvals(A, *, driver=None, out=None):
    """`linalg.svdvals`: the singular values of A, descending."""
    _check_tensor(A, "linalg.svdvals", "A")
    if not _rg(A):
        return _out(_svd_raw(A, "linalg.svdvals", False)[1], out)
    src = A                 # U, Vh from a recorded svd: the vjp reading them is differentiable again
    U, S0, Vh = linalg_svd(A, full_matrices=False)
    S = _wrap(S0._data, S0._dtype, S0)
    m, n = A.shape[-2:]
    record("LinalgSvdvalsBackward0", S, (src,),
           lambda g: (grad_for(_svd_backward(None, g, None, U, S0, Vh, m, n), src),), saved=(U, Vh))
    return _out(S, out)


def svd(input, some=True, compute_uv=True, *, out=None):
    """`torch.svd`: (U, S, V) with input = U diag(S) V^H (V, not Vh); some: reduced; without
    compute_uv, U and V are zero matrices of full size."""
    _check_tensor(input, "svd", "input")
    if not compute_uv:
        S = svdvals(input)
        m, n = input.shape[-2:]
        b = tuple(input.shape[:-2])
        U = _host_like(np.zeros(b + (m, m)), input)
        V = _host_like(np.zeros(b + (n, n)), input)
        return OldSVD(U, S, V)
    U, S, Vh = linalg_svd(input, full_matrices=not some)
    return OldSVD(U, S, _mH(Vh))


# -- pseudo-inverse, least squares, rank ------------------------------------------------------------
def _tolerance(A, S, atol, rtol, fname):
    """max(atol, rtol * largest singular value) per matrix, as a tensor of S's batch shape plus (1,)."""
    m, n = A.shape[-2:]
    if rtol is None:
        rtol = _EPS[A._dtype.name] * max(m, n) if (atol is None or (isinstance(atol, (int, float)) and atol <= 0)) \
            else 0.0
    smax = S.max(-1, keepdim=True).values if S.shape[-1] else S.sum(-1, keepdim=True)
    at = 0.0 if atol is None else atol
    tol = smax * rtol
    at_t = at if isinstance(at, Tensor) and at.ndim == 0 else (at.unsqueeze(-1) if isinstance(at, Tensor) else at)
    rt = tol if not isinstance(rtol, Tensor) else smax * rtol.unsqueeze(-1)
    from .pointwise import maximum
    return maximum(rt, at_t if isinstance(at_t, Tensor) else _host_like(np.asarray(at), S))


def _pinv_backward(g, A, P):
    """grad_A = -P^H g P^H + (I - A P) g^H P P^H + P^H P g^H (I - P A) (for A of locally constant rank)."""
    Ph = _mH(P)
    gh = _mH(g)
    m, n = A.shape[-2:]
    t1 = -matmul(matmul(Ph, g), Ph)
    t2 = matmul(matmul(_eye(m, A) - matmul(A, P), gh), matmul(P, Ph))
    t3 = matmul(matmul(Ph, P), matmul(gh, _eye(n, A) - matmul(P, A)))
    return t1 + t2 + t3


def pinv(A, *, atol=None, rtol=None, hermitian=False, out=None):
    """`linalg.pinv`: the Moore-Penrose pseudo-inverse from the SVD (eigh when hermitian), singular
    values below max(atol, rtol * largest) treated as zero (default rtol: eps * max(m, n))."""
    if (not isinstance(A, Tensor) or A.ndim < 2 or A._dtype.category not in (2, 3)
            or A._dtype in (_dt.float16, _dt.bfloat16)):
        if not isinstance(A, Tensor):
            raise TypeError(f"linalg_pinv(): argument 'input' (position 1) must be Tensor, not {type(A).__name__}")
        raise RuntimeError(f"linalg.pinv({_tn(A._dtype)}{{{list(A.shape)}}}): expected a tensor with 2 or more "
                           f"dimensions of float, double, cfloat or cdouble types")
    x = A.detach()
    if hermitian:
        _check_square(A, "linalg.pinv")
        w, V = _eigh_raw(x, "linalg.pinv", "L")
        tol = _tolerance(x, w.abs(), atol, rtol, "linalg.pinv")
        keep = w.abs() > tol
        winv = where(keep, 1.0 / where(keep, w, 1.0), 0.0)
        P = matmul(V * winv.to(V._dtype).unsqueeze(-2), _mH(V))
    else:
        U, S, Vh = _svd_raw(x, "linalg.pinv", False)
        tol = _tolerance(x, S, atol, rtol, "linalg.pinv")
        keep = S > tol
        sinv = where(keep, 1.0 / where(keep, S, 1.0), 0.0)
        P = matmul(_mH(Vh) * sinv.to(U._dtype).unsqueeze(-2), _mH(U))
    if _rg(A):
        src = A
        record("LinalgPinvBackward0", P, (src,), lambda g: (grad_for(_pinv_backward(g, src, P), src),),
               saved=(src, P))
    return _out(P, out)


def pinverse(input, rcond=1e-15):
    """`torch.pinverse`: `linalg.pinv` with rtol = rcond."""
    _check_tensor(input, "pinverse", "input")
    return pinv(input, rtol=rcond)


def matrix_rank(A, *, atol=None, rtol=None, hermitian=False, out=None):
    """`linalg.matrix_rank`: the number of singular values (|eigenvalues| when hermitian) above
    max(atol, rtol * largest), as int64."""
    _check_tensor(A, "linalg.matrix_rank", "input")
    if A.ndim < 2:
        raise RuntimeError("torch.linalg.matrix_rank: The input tensor input must have at least 2 dimensions.")
    x = A.detach()
    if hermitian:
        w, _ = _eigh_raw(x, "linalg.matrix_rank", "L")
        S = w.abs()
    else:
        S = _svd_raw(x, "linalg.matrix_rank", False)[1]
    tol = _tolerance(x, S, atol, rtol, "linalg.matrix_rank")
    return _out((S > tol).sum(-1), out)


_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


def lstsq(A, B, rcond=None, *, driver=None):
    """`linalg.lstsq`: the minimum-norm least-squares solution of A X = B (from the pseudo-inverse,
    singular values below rcond * largest dropped; default eps * max(m, n)); residuals (squared, per
    column) when m > n, A has full rank and driver is not gelsy; rank (not for gels); singular values
    for gelsd / gelss."""
    _check_tensor(A, "linalg.lstsq", "input")
    _check_tensor(B, "linalg.lstsq", "other")
    if driver is None:
        driver = "gelsy"
    if driver not in _DRIVERS:
        raise RuntimeError("torch.linalg.lstsq: parameter `driver` should be one of (gels, gelsy, gelsd, gelss)")
    _check_2d(A, "torch.linalg.lstsq", "input")
    _check_float(A, "torch.linalg.lstsq")
    check_same_device(A, B)
    if A._dtype is not B._dtype:
        raise RuntimeError(f"torch.linalg.lstsq: Expected input and other to have the same dtype, but got "
                           f"input's dtype {_tn(A._dtype)} and other's dtype {_tn(B._dtype)}")
    vector = B.ndim == A.ndim - 1
    if B.ndim < A.ndim - 1 or B.ndim > A.ndim:
        raise RuntimeError("torch.linalg.lstsq: input.dim() must be greater or equal to other.dim() and "
                           "(input.dim() - other.dim()) <= 1")
    Bm = B.unsqueeze(-1) if vector else B
    m, n = A.shape[-2:]
    if Bm.shape[-2] != m:
        raise RuntimeError("torch.linalg.lstsq: input.size(-2) should match other.size(-2)")
    rtol = _EPS[A._dtype.name] * max(m, n) if rcond is None or rcond < 0 else rcond
    S = _svd_raw(A.detach(), "torch.linalg.lstsq", False)[1]
    X = matmul(pinv(A, rtol=rtol), Bm)
    tol = _tolerance(A, S, None, rtol, "torch.linalg.lstsq")
    rank = (S > tol).sum(-1)
    empty = _host_like(np.zeros((0,)), A, _real_dt(A))
    residuals = empty
    if m > n and driver != "gelsy" and bool((rank == min(m, n)).all()):
        r = matmul(A, X) - Bm
        residuals = (r.abs() ** 2).sum(-2) if r._dtype.category == 3 else (r * r).sum(-2)
        if vector:
            residuals = residuals.squeeze(-1)
    if vector:
        X = X.squeeze(-1)
    if driver == "gels":
        rank = _host_like(np.zeros((0,)), A, _dt.int64)
    sv = S if driver in ("gelsd", "gelss") else empty
    return Lstsq(X, residuals, rank, sv)


# -- solve_ex / inv_ex ------------------------------------------------------------------------------
def _lu_info(A):
    """LAPACK getrf's info per matrix: 0, or 1 + the index of the first zero pivot."""
    lu, _ = _lu_host(A._host())
    d = np.diagonal(lu, axis1=-2, axis2=-1)
    zero = d == 0
    info = np.where(zero.any(-1), zero.argmax(-1) + 1, 0).astype(np.int32)
    return _host_like(info, A, _dt.int32)


def _ex(fn, A, check_errors, shape_of):
    try:
        return fn(), _host_like(np.zeros(A.shape[:-2], dtype=np.int32), A, _dt.int32)
    except LinAlgError:
        if check_errors:
            raise
    # a singular matrix: NaNs of the result's shape (LAPACK's would be garbage), getrf's info
    return _host_like(np.full(shape_of(), np.nan), A), _lu_info(A.detach())


def solve_ex(A, B, *, left=True, check_errors=False, out=None):
    """`linalg.solve_ex`: (result, info); info is getrf's (0, or 1 + the first zero pivot's index),
    and a singular system gives NaN results instead of an error (unless check_errors)."""
    _check_tensor(A, "linalg.solve_ex", "A")
    _check_tensor(B, "linalg.solve_ex", "B")
    eye = lambda: expand(_eye(A.shape[-1], A), tuple(A.shape))  # noqa: E731  (a solvable A of A's shape)
    r, info = _ex(lambda: solve(A, B, left=left), A, check_errors,
                  lambda: tuple(solve(eye(), B.detach(), left=left).shape))
    return SolveEx(_out(r, out[0] if out else None), _out(info, out[1] if out else None))


def inv_ex(A, *, check_errors=False, out=None):
    """`linalg.inv_ex`: (inverse, info); a singular matrix gives NaNs and info > 0 (unless check_errors)."""
    _check_tensor(A, "linalg.inv_ex", "A")
    r, info = _ex(lambda: inverse(A), A, check_errors, lambda: tuple(A.shape))
    return InvEx(_out(r, out[0] if out else None), _out(info, out[1] if out else None))


# -- Tensor methods --------------------------------------------------------------------------------
def _attach():
    T = Tensor
    T.cholesky = lambda self, upper=False: cholesky(self, upper)
    T.cholesky_solve = lambda self, input2, upper=False: cholesky_solve(self, input2, upper)
    T.cholesky_inverse = lambda self, upper=False: cholesky_inverse(self, upper)
    T.triangular_solve = lambda self, A, upper=True, transpose=False, unitriangular=False: \
        triangular_solve(self, A, upper, transpose, unitriangular)
    T.qr = lambda self, some=True: qr(self, some)
    T.svd = lambda self, some=True, compute_uv=True: svd(self, some, compute_uv)
    T.pinverse = lambda self, rcond=1e-15: pinverse(self, rcond)


_attach()

# top-level names: the older forms (tensorplug.linalg names the linalg_* ones)
PUBLIC = ["cholesky", "cholesky_solve", "cholesky_inverse", "triangular_solve", "qr", "svd", "pinverse"]
