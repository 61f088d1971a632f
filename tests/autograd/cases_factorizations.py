"""Gradient cases of the matrix factorizations (core/ops/factorizations.py), appended to the table of
test_op_gradients.py: each runs gradcheck and gradgradcheck. Factorized inputs are made from free
leaves (symmetric / positive-definite where the op needs it), and losses of eigen- and singular
vectors fix their signs, so every case is gauge-invariant."""
from opcases import Case, r

import tensorplug as torch


def _spd(x):
    return x @ x.mT + 3 * torch.eye(x.shape[-1], dtype=torch.float64)


def _signfix(V):
    return V * V[..., :1, :].sign()          # each column's first entry made positive


CASES = [
    Case("cholesky", lambda a: torch.linalg.cholesky(_spd(a)), lambda: (r(2, 3, 3),)),
    Case("cholesky_upper", lambda a: torch.linalg.cholesky(_spd(a), upper=True), lambda: (r(3, 3),)),
    Case("solve_triangular", lambda a, b: torch.linalg.solve_triangular(a + 3 * torch.eye(3, dtype=torch.float64),
                                                                        b, upper=True), lambda: (r(3, 3), r(2, 3, 2))),
    Case("solve_triangular_right_unit", lambda a, b: torch.linalg.solve_triangular(
        a, b, upper=False, left=False, unitriangular=True), lambda: (r(3, 3), r(2, 3))),
    Case("qr_tall", lambda a: torch.linalg.qr(a), lambda: (r(4, 3),)),
    Case("qr_wide", lambda a: torch.linalg.qr(a), lambda: (r(2, 2, 4),)),
    Case("eigh", lambda a: (lambda w, V: (w, _signfix(V)))(*torch.linalg.eigh(a + a.mT)), lambda: (r(3, 3),)),
    Case("eigvalsh", lambda a: torch.linalg.eigvalsh(a + a.mT, UPLO="U"), lambda: (r(2, 3, 3),)),
    Case("svd", lambda a: (lambda U, S, Vh: (_signfix(U), S, _signfix(Vh.mT)))(
        *torch.linalg.svd(a, full_matrices=False)), lambda: (r(4, 3),)),
    Case("svd_wide", lambda a: (lambda U, S, Vh: (U @ Vh[..., :2, :], S))(*torch.linalg.svd(a)), lambda: (r(2, 4),)),
    Case("svdvals", torch.linalg.svdvals, lambda: (r(3, 4),)),
    Case("pinv", torch.linalg.pinv, lambda: (r(4, 3),)),
    Case("pinv_hermitian", lambda a: torch.linalg.pinv(a + a.mT, hermitian=True), lambda: (r(3, 3),)),
    Case("lstsq", lambda a, b: torch.linalg.lstsq(a, b).solution, lambda: (r(5, 3), r(5, 2))),
    Case("cholesky_solve", lambda a, b: torch.cholesky_solve(b, torch.linalg.cholesky(_spd(a))),
         lambda: (r(3, 3), r(3, 2))),
]
