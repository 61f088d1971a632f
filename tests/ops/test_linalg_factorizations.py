"""Matrix factorizations (core/ops/factorizations.py): values against float64 NumPy (reconstructions,
eigen equations, the unique parts), named-tuple results, PyTorch's error types and messages, and
gradients of the older top-level forms (the linalg ones are in tests/autograd/cases_factorizations.py)."""
import numpy as np
import pytest

import tensorplug as torch
import tensorplug.linalg  # noqa: F401
from tensorplug.autograd import gradcheck, gradgradcheck

LA = torch.linalg


def rnd(*shape, seed=0):
    return np.random.default_rng(seed).uniform(-1, 1, size=shape)


def T(a, dtype=torch.float64):
    return torch.tensor(np.asarray(a), dtype=dtype)


def spd(*shape, seed=0):
    x = rnd(*shape, seed=seed)
    return x @ np.swapaxes(x, -1, -2) + shape[-1] * np.eye(shape[-1])


def H(x):
    return np.conj(np.swapaxes(x, -1, -2))


@pytest.mark.parametrize("dtype,tol", [(torch.float64, 1e-12), (torch.float32, 1e-5)])
def test_cholesky_reconstructs_and_reads_the_lower_triangle(dtype, tol):
    a = spd(2, 3, 4, 4)
    junk = np.tril(a) + np.triu(np.full(a.shape, 9.0), 1)      # the upper triangle must be ignored
    L = LA.cholesky(T(junk, dtype)).numpy().astype(np.float64)
    assert np.allclose(L, np.linalg.cholesky(a), atol=tol * 10)
    U = LA.cholesky(T(junk, dtype), upper=True).numpy().astype(np.float64)
    assert np.allclose(U, np.swapaxes(L, -1, -2), atol=tol * 10)
    assert L.dtype == np.float64 and LA.cholesky(T(a, dtype)).dtype is dtype


def test_cholesky_complex():
    x = rnd(3, 3) + 1j * rnd(3, 3, seed=1)
    a = x @ H(x) + 3 * np.eye(3)
    L = LA.cholesky(torch.tensor(a)).numpy()
    assert np.allclose(L @ H(L), a, atol=1e-12) and np.allclose(np.triu(L, 1), 0)


def test_cholesky_ex_info_and_errors():
    a = np.stack([np.eye(2), [[1.0, 2.0], [2.0, 1.0]]])
    r = LA.cholesky_ex(T(a))
    assert type(r).__name__ == "linalg_cholesky_ex" and r._fields == ("L", "info")
    assert r.info.dtype is torch.int32 and r.info.tolist() == [0, 2]
    with pytest.raises(LA.LinAlgError, match=r"linalg.cholesky: \(Batch element 1\): The factorization could not "
                                             r"be completed because the input is not positive-definite \(the leading "
                                             r"minor of order 2 is not positive-definite\)."):
        LA.cholesky(T(a))
    with pytest.raises(RuntimeError, match="linalg.cholesky: The factorization could not be completed"):
        LA.cholesky_ex(T(a[1]), check_errors=True)
    with pytest.raises(RuntimeError, match="A must be batches of square matrices, but they are 2 by 3 matrices"):
        LA.cholesky(T(np.ones((2, 3))))
    with pytest.raises(RuntimeError, match="Expected a floating point or complex tensor as input. Got Long"):
        LA.cholesky(torch.ones(2, 2, dtype=torch.int64))
    assert issubclass(LA.LinAlgError, RuntimeError)


def test_old_cholesky_forms():
    a = spd(3, 3)
    L = np.linalg.cholesky(a)
    b = rnd(3, 2)
    with pytest.warns(UserWarning, match="deprecated"):
        torch.cholesky(T(a))
    assert np.allclose(T(a).cholesky(upper=True).numpy(), L.T)
    assert np.allclose(torch.cholesky_solve(T(b), T(L)).numpy(), np.linalg.solve(a, b))
    assert np.allclose(torch.cholesky_solve(T(b), T(L.T), upper=True).numpy(), np.linalg.solve(a, b))
    assert np.allclose(torch.cholesky_inverse(T(L)).numpy(), np.linalg.inv(a))
    with pytest.raises(LA.LinAlgError, match="^cholesky: The factorization"):
        torch.cholesky(T([[1.0, 2.0], [2.0, 1.0]]))


@pytest.mark.parametrize("n", [3, 40])          # both the substitution and the larger-n path
def test_solve_triangular_values(n):
    a = rnd(2, n, n) + 2 * np.eye(n)
    b = rnd(2, n, 3, seed=1)
    up = np.triu(a)
    assert np.allclose(LA.solve_triangular(T(a), T(b), upper=True).numpy(), np.linalg.solve(up, b))
    lo_unit = np.tril(a, -1) + np.eye(n)
    got = LA.solve_triangular(T(a), T(b), upper=False, unitriangular=True).numpy()
    assert np.allclose(got, np.linalg.solve(lo_unit, b))
    bt = rnd(3, n, seed=2)                       # X A = B, A broadcast over B's batch
    got = LA.solve_triangular(T(a[0]), T(np.stack([bt, bt])), upper=True, left=False).numpy()
    assert np.allclose(got, np.stack([bt, bt]) @ np.linalg.inv(up[0]))


def test_solve_triangular_errors_and_zero_diagonal():
    with pytest.raises(TypeError, match="missing|upper"):
        LA.solve_triangular(T(np.eye(2)), T(np.ones((2, 1))))
    with pytest.raises(RuntimeError, match=r"Incompatible shapes of A and B for the equation AX = B \(2x2 and 3x1\)"):
        LA.solve_triangular(T(np.eye(2)), T(np.ones((3, 1))), upper=True)
    x = LA.solve_triangular(T([[0.0, 1.0], [0.0, 1.0]]), T([[1.0], [1.0]]), upper=True).numpy()
    assert not np.isfinite(x).all()              # a zero pivot gives inf/nan, as LAPACK's trtrs
    r = torch.triangular_solve(T([[1.0], [1.0]]), T([[2.0, 1.0], [0.0, 1.0]]))
    assert r._fields == ("solution", "cloned_coefficient")
    assert np.allclose(r.solution.numpy(), [[0.0], [1.0]]) and np.allclose(r.cloned_coefficient.numpy(),
                                                                           [[2.0, 1.0], [0.0, 1.0]])
    r = torch.triangular_solve(T([[1.0], [1.0]]), T([[2.0, 1.0], [0.0, 1.0]]), transpose=True)
    assert np.allclose(r.solution.numpy(), np.linalg.solve([[2.0, 0.0], [1.0, 1.0]], [[1.0], [1.0]]))


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 4)])
@pytest.mark.parametrize("mode", ["reduced", "complete", "r"])
def test_qr(shape, mode):
    a = rnd(*shape)
    Q, R = LA.qr(T(a), mode=mode)
    m, n = shape[-2:]
    k = m if mode == "complete" else min(m, n)
    assert tuple(R.shape) == shape[:-2] + (k, n) and np.allclose(np.tril(R.numpy(), -1), 0)
    if mode == "r":
        assert Q.numel() == 0
        assert np.allclose(np.abs(R.numpy()), np.abs(np.linalg.qr(a, mode="r")))
        return
    q = Q.numpy()
    assert np.allclose(q @ R.numpy(), a) and np.allclose(H(q) @ q, np.eye(k))
    old = torch.qr(T(a), some=(mode == "reduced"))
    assert type(old).__name__ == "qr" and type(LA.qr(T(a))).__name__ == "linalg_qr"
    assert np.allclose(old.Q.numpy() @ old.R.numpy(), a)


def test_qr_complex_and_errors():
    a = rnd(4, 3) + 1j * rnd(4, 3, seed=3)
    Q, R = LA.qr(torch.tensor(a))
    assert np.allclose(Q.numpy() @ R.numpy(), a)
    with pytest.raises(RuntimeError, match="qr received unrecognized mode 'x'"):
        LA.qr(T(np.eye(2)), mode="x")
    x = T(rnd(4, 3)).requires_grad_()
    with pytest.raises(RuntimeError, match="depends on Q, which is not computed when mode='r'"):
        LA.qr(x, mode="r").R.sum().backward()


@pytest.mark.parametrize("UPLO", ["L", "U"])
def test_eigh(UPLO):
    x = rnd(2, 4, 4)
    a = x + np.swapaxes(x, -1, -2)
    junk = np.tril(a) + np.triu(np.full(a.shape, 5.0), 1) if UPLO == "L" else \
        np.triu(a) + np.tril(np.full(a.shape, 5.0), -1)
    r = LA.eigh(T(junk), UPLO=UPLO)
    assert r._fields == ("eigenvalues", "eigenvectors")
    w, V = r.eigenvalues.numpy(), r.eigenvectors.numpy()
    assert np.allclose(w, np.linalg.eigvalsh(a)) and np.allclose(a @ V, V * w[..., None, :])
    assert np.allclose(LA.eigvalsh(T(junk), UPLO=UPLO).numpy(), np.linalg.eigvalsh(a))
    with pytest.raises(RuntimeError, match="Expected UPLO argument to be 'L' or 'U', but got X"):
        LA.eigh(T(a), UPLO="X")


def test_eigh_complex_has_real_eigenvalues():
    x = rnd(3, 3) + 1j * rnd(3, 3, seed=4)
    a = x + H(x)
    w, V = LA.eigh(torch.tensor(a))
    assert w.dtype is torch.float64 and V.dtype is torch.complex128
    assert np.allclose(a @ V.numpy(), V.numpy() * w.numpy())


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 3, 3)])
@pytest.mark.parametrize("full", [True, False])
def test_svd(shape, full):
    a = rnd(*shape)
    r = LA.svd(T(a), full_matrices=full)
    assert r._fields == ("U", "S", "Vh")
    U, S, Vh = (t.numpy() for t in r)
    m, n = shape[-2:]
    k = min(m, n)
    assert U.shape[-2:] == ((m, m) if full else (m, k)) and Vh.shape[-2:] == ((n, n) if full else (k, n))
    assert np.allclose(S, np.linalg.svd(a, compute_uv=False))
    assert np.allclose((U[..., :, :k] * S[..., None, :]) @ Vh[..., :k, :], a)
    assert np.allclose(LA.svdvals(T(a)).numpy(), S)
    old = torch.svd(T(a), some=not full)
    assert old._fields == ("U", "S", "V")
    assert np.allclose((old.U.numpy()[..., :, :k] * old.S.numpy()[..., None, :]) @ H(old.V.numpy()[..., :, :k]), a)


def test_svd_compute_uv_false_and_errors():
    r = torch.svd(T(rnd(3, 2)), compute_uv=False)
    assert np.allclose(r.S.numpy(), np.linalg.svd(rnd(3, 2), compute_uv=False))
    assert r.U.shape == (3, 3) and r.V.shape == (2, 2) and not r.U.numpy().any()
    with pytest.raises(RuntimeError, match="linalg.svd: The input tensor A must have at least 2 dimensions."):
        LA.svd(T([1.0, 2.0]))


def test_pinv_matrix_rank_and_lstsq():
    a = rnd(5, 3)
    assert np.allclose(LA.pinv(T(a)).numpy(), np.linalg.pinv(a))
    low = rnd(5, 2) @ rnd(2, 4, seed=5)                  # rank 2
    assert np.allclose(LA.pinv(T(low)).numpy(), np.linalg.pinv(low))
    assert np.allclose(torch.pinverse(T(low)).numpy(), np.linalg.pinv(low))
    s = spd(3, 3) - 2.5 * np.eye(3)                      # symmetric, possibly indefinite
    assert np.allclose(LA.pinv(T(s), hermitian=True).numpy(), np.linalg.pinv(s))
    assert LA.matrix_rank(T(low)).item() == 2 and LA.matrix_rank(T(low)).dtype is torch.int64
    assert LA.matrix_rank(T(low), atol=1e9).item() == 0
    assert LA.matrix_rank(T(np.stack([np.eye(3), np.diag([1.0, 1.0, 0.0])])), hermitian=True).tolist() == [3, 2]
    b = rnd(5, 2, seed=6)
    x = np.linalg.lstsq(a, b, rcond=None)[0]
    r = LA.lstsq(T(a), T(b))
    assert r._fields == ("solution", "residuals", "rank", "singular_values")
    assert np.allclose(r.solution.numpy(), x) and r.rank.item() == 3 and r.residuals.numel() == 0
    r = LA.lstsq(T(a), T(b), driver="gelsd")
    assert np.allclose(r.residuals.numpy(), ((a @ x - b) ** 2).sum(0))
    assert np.allclose(r.singular_values.numpy(), np.linalg.svd(a, compute_uv=False))
    with pytest.raises(RuntimeError, match="parameter `driver` should be one of"):
        LA.lstsq(T(a), T(b), driver="foo")
    with pytest.raises(RuntimeError, match=r"input.size\(-2\) should match other.size\(-2\)"):
        LA.lstsq(T(a), T(rnd(3, 1)))
    with pytest.raises(RuntimeError, match="expected a tensor with 2 or more dimensions"):
        LA.pinv(T([1.0, 2.0]))


def test_solve_ex_and_inv_ex():
    a = np.stack([np.eye(2) * 2, [[1.0, 2.0], [2.0, 4.0]]])
    r = LA.inv_ex(T(a))
    assert r._fields == ("inverse", "info") and r.info.tolist() == [0, 2] and r.info.dtype is torch.int32
    r = LA.inv_ex(T(a[0]))
    assert np.allclose(r.inverse.numpy(), np.eye(2) / 2) and r.info.item() == 0
    r = LA.solve_ex(T(a[0]), T([1.0, 2.0]))
    assert r._fields == ("result", "info") and np.allclose(r.result.numpy(), [0.5, 1.0])
    r = LA.solve_ex(T(np.zeros((2, 2))), T([1.0, 2.0]))
    assert r.info.item() == 1 and r.result.shape == (2,)
    with pytest.raises(LA.LinAlgError):
        LA.inv_ex(T(a), check_errors=True)


def test_empty_inputs():
    assert LA.cholesky(T(np.zeros((0, 0)))).shape == (0, 0)
    Q, R = LA.qr(T(np.zeros((3, 0))))
    assert Q.shape == (3, 0) and R.shape == (0, 0)
    assert LA.svd(T(np.zeros((2, 0, 3)))).S.shape == (2, 0)
    assert LA.eigh(T(np.zeros((2, 0, 0)))).eigenvalues.shape == (2, 0)


def test_gradients_of_the_older_forms():
    rng = np.random.default_rng(7)
    a = torch.tensor(rng.uniform(-1, 1, (3, 3)), requires_grad=True)
    b = torch.tensor(rng.uniform(-1, 1, (3, 2)), requires_grad=True)

    def chol_inv(x):
        return torch.cholesky_inverse(torch.linalg.cholesky(x @ x.mT + 3 * torch.eye(3, dtype=torch.float64)))

    def tri(x, y):
        return torch.triangular_solve(y, x + 3 * torch.eye(3, dtype=torch.float64), upper=False).solution

    def svd_v(x):
        U, S, V = torch.svd(x)
        return S, U @ V.mT
    for f, ins in ((chol_inv, (a,)), (tri, (a, b)), (svd_v, (a,)), (torch.pinverse, (a,))):
        assert gradcheck(f, ins) and gradgradcheck(f, ins)
