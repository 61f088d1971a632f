"""Gradient-table cases of the numerical family (core/ops/numerical.py), appended to
test_op_gradients.CASES: gradcheck and gradgradcheck of each, and a run on the CUDA stand-in.
Index and weight tensors are made on the input's device (new_tensor), so the cases run on any device."""
from opcases import Case, nc, pos, r

import tensorplug as torch

NAN = float("nan")


def _i(like, values):
    """An int64 tensor on like's device."""
    return like.new_tensor(values, dtype=torch.int64)


def _with_nans(a):
    """a with NaN at (0, 1) and (2, 3): nanquantile must skip them (their gradient is 0)."""
    return a.index_put((_i(a, [0, 2]), _i(a, [1, 3])), a.new_full((2,), NAN))


# one index for every scatter_reduce case: targets 0..2 of a length-3 dim, some hit several times
_SR_INDEX = [[0, 1, 0, 2], [2, 2, 1, 1], [0, 0, 0, 0]]


def _sr(reduce, include_self, dim=1):
    return lambda a, s: torch.scatter_reduce(a, dim, _i(a, _SR_INDEX), s, reduce, include_self=include_self)


def _zero_at(s, i, j):
    """s with an exact zero at (i, j): prod's gradient rule for a single zero among a target's entries."""
    return s * s.new_ones(tuple(s.shape)).index_put((_i(s, [i]), _i(s, [j])), s.new_zeros(1))


CASES = [
    Case("diff_prepend_n2", lambda a, p: torch.diff(a, n=2, dim=0, prepend=p), lambda: (nc(3, 4), r(1, 4, seed=1))),
    Case("diff_append", lambda a, q: a.diff(dim=-1, append=q), lambda: (r(2, 3), r(2, 2, seed=1))),
    Case("trapezoid_x", lambda y, x: torch.trapezoid(y, x, dim=1), lambda: (r(3, 4), r(4, seed=1))),
    Case("trapezoid_dx", lambda y: torch.trapezoid(y, dx=0.3, dim=0), lambda: (nc(3, 4),)),
    Case("cumulative_trapezoid_x", lambda y, x: torch.cumulative_trapezoid(y, x),
         lambda: (r(2, 3, 5), r(3, 5, seed=1))),
    Case("cumulative_trapezoid_dx", lambda y: torch.cumulative_trapezoid(y, dx=2.0, dim=1), lambda: (r(2, 3, 5),)),
    Case("quantile_linear", lambda a: torch.quantile(a, a.new_tensor([0.1, 0.5, 0.8]), dim=1, keepdim=True),
         lambda: (r(2, 5, 3),)),
    Case("quantile_midpoint_all", lambda a: torch.quantile(a, 0.35, interpolation="midpoint"), lambda: (nc(3, 4),)),
    Case("quantile_nearest", lambda a: a.quantile(0.6, 0, interpolation="nearest"), lambda: (r(5, 2),)),
    Case("nanquantile_linear", lambda a: torch.nanquantile(_with_nans(a), a.new_tensor([0.3, 0.9]), dim=1),
         lambda: (r(3, 4),)),
    Case("cov_weighted", lambda x, aw: torch.cov(x, fweights=_i(x, [1, 2, 1, 3]), aweights=aw),
         lambda: (r(3, 4), pos(4, seed=1))),
    Case("cov_1d", lambda x: x.cov(correction=0), lambda: (r(5),)),
    Case("corrcoef", torch.corrcoef, lambda: (r(3, 5),)),
    Case("cdist_p2_batched", torch.cdist, lambda: (r(2, 3, 4), r(5, 4, seed=1))),
    Case("cdist_p1", lambda a, b: torch.cdist(a, b, p=1), lambda: (r(3, 2), nc(4, 2, seed=1))),
    Case("cdist_p3", lambda a, b: torch.cdist(a, b, p=3), lambda: (r(3, 2), r(4, 2, seed=1))),
    Case("cdist_mm", lambda a, b: torch.cdist(a, b, compute_mode="use_mm_for_euclid_dist"),
         lambda: (r(2, 3, 4), r(1, 5, 4, seed=1))),
    Case("dist_p3_broadcast", lambda a, b: torch.dist(a, b, 3), lambda: (r(3, 4), r(4, seed=1))),
    Case("renorm", lambda a: torch.renorm(a, 2, 0, 1.0), lambda: (r(4, 3, low=-1.0, high=1.0),)),
    Case("renorm_inplace_p1", lambda a: (a * 1).renorm_(1, 1, 1.2), lambda: (r(3, 4),)),
    Case("scatter_reduce_sum", _sr("sum", False), lambda: (r(3, 3), r(3, 4, seed=1))),
    Case("scatter_reduce_prod", _sr("prod", True), lambda: (r(3, 3), r(3, 4, seed=1))),
    Case("scatter_reduce_prod_zero", lambda a, s: _sr("prod", False)(a, _zero_at(s, 0, 2)),
         lambda: (r(3, 3), r(3, 4, seed=1))),
    Case("scatter_reduce_mean", _sr("mean", False), lambda: (nc(3, 3), r(3, 4, seed=1))),
    Case("scatter_reduce_amax", _sr("amax", True), lambda: (r(3, 3), r(3, 4, seed=1))),
    Case("scatter_reduce_amin", _sr("amin", False), lambda: (r(3, 3), r(3, 4, seed=1))),
    Case("scatter_reduce_src_larger", lambda a, s: a.scatter_reduce(0, _i(a, [[0, 1], [0, 0]]), s, "mean"),
         lambda: (r(2, 3), r(3, 3, seed=1))),
    Case("scatter_reduce_inplace", lambda a, s: (a * 1).scatter_reduce_(1, _i(a, _SR_INDEX), s, "amax"),
         lambda: (r(3, 3), r(3, 4, seed=1))),
    Case("select_scatter", lambda a, s: torch.select_scatter(a, s, 1, -1), lambda: (r(3, 4), r(3, seed=1))),
    Case("slice_scatter_step", lambda a, s: a.slice_scatter(s, 1, 1, None, 2), lambda: (nc(3, 5), r(3, 2, seed=1))),
    Case("diagonal_scatter_3d", lambda a, s: torch.diagonal_scatter(a, s, -1, 2, 0), lambda: (r(2, 3, 5), r(3, 2))),
    Case("block_diag", torch.block_diag, lambda: (r(2, 3), r(2, seed=1), r(seed=2))),
    Case("rot90_k1", lambda a: torch.rot90(a, 1, (2, 0)), lambda: (r(2, 3, 4),)),
    Case("rot90_k3", lambda a: a.rot90(-1), lambda: (nc(2, 3),)),
    Case("vander", lambda a: torch.vander(a, 4), lambda: (r(3),)),
    Case("cartesian_prod", torch.cartesian_prod, lambda: (r(2), r(3, seed=1), r(2, seed=2))),
    Case("combinations_replacement", lambda a: torch.combinations(a, 3, with_replacement=True), lambda: (r(4),)),
    Case("diagflat", lambda a: torch.diagflat(a, -1), lambda: (r(2, 2),)),
]
