"""Decompositions of the structural kernels API version 2 made optional: reductions and scans (prod,
any, all, argmax, argmin, cumsum, cumprod), movement (flip, pad), indexing (gather, scatter,
scatter_add, nonzero) and linear algebra (inv, solve).

Each function has the signature and semantics backend_api documents for the kernel, with the kernel
table `K` first. They call the version-2 required kernels, plus, through K, abs and (inside inv/solve)
argmax, gather, scatter and any - never in a cycle. They run only for backends that lack the native
kernel. Shapes are Python tuples: loops over dimensions, scan levels and matrix columns run on the
host, the arithmetic in whole-array kernels.
"""
from __future__ import annotations

import math

import numpy as np


def _dt(x):
    return x.dtype.name if hasattr(x.dtype, "name") else str(x.dtype)


def _zero(dt):
    """0 as a Python scalar of dt's category (binary kernels take scalars of the array's kind)."""
    if dt == "bool":
        return False
    if dt.startswith("complex"):
        return 0j
    return 0.0 if "float" in dt else 0


def _along(axis, s):
    """A slice key selecting `s` along `axis` (a slice or an int) and everything elsewhere."""
    return (slice(None),) * axis + (s,)


def _iota(K, n, axis, ndim):
    """int64 0..n-1 laid along `axis` of an ndim-d array (size 1 elsewhere), for index grids."""
    r = K["arange"](0, n, 1, "int64")
    return K["reshape"](r, tuple(n if d == axis else 1 for d in range(ndim))) if ndim > 1 else r


def _axes(axes, ndim):
    return tuple(range(ndim)) if axes is None else tuple(axes)


def _drop(shape, axes):
    return tuple(n for d, n in enumerate(shape) if d not in axes)


# -- reductions ----------------------------------------------------------------------------------
def prod(K, x, axes, keepdims, dtype=None):
    if dtype is not None and dtype != _dt(x):
        x = K["astype"](x, dtype)
    shape = tuple(x.shape)
    axes = _axes(axes, len(shape))
    y = x
    for ax in axes:
        y = _fold(K, y, ax)
    if y is x:                           # nothing reduced: still a new array
        y = K["copy"](x)
    return y if keepdims else K["reshape"](y, _drop(shape, axes))


def _fold(K, y, ax):
    """The product along `ax`, kept as a size-1 dimension: log2(n) halvings, each multiplying the
    first half by the second (an odd last element is folded into element 0)."""
    n = y.shape[ax]
    if n == 0:
        return K["full"](tuple(1 if d == ax else s for d, s in enumerate(y.shape)), 1, _dt(y))
    while n > 1:
        h = n // 2
        z = K["mul"](K["slice"](y, _along(ax, slice(0, h))), K["slice"](y, _along(ax, slice(h, 2 * h))))
        if n % 2:
            first = K["slice"](z, _along(ax, slice(0, 1)))
            K["assign"](first, K["mul"](first, K["slice"](y, _along(ax, slice(n - 1, n)))))
        y, n = z, h
    return y


def _zero_count(K, x, axes, keepdims):
    return K["sum"](K["eq"](x, _zero(_dt(x))), axes, keepdims, dtype="int64")


def any(K, x, axes, keepdims):  # noqa: A001 - the kernel's name
    # true where some element is nonzero (NaN counts): fewer zeros than elements
    shape = tuple(x.shape)
    n = math.prod(shape[a] for a in _axes(axes, len(shape)))
    return K["lt"](_zero_count(K, x, axes, keepdims), n)


def all(K, x, axes, keepdims):  # noqa: A001
    return K["eq"](_zero_count(K, x, axes, keepdims), 0)


def _arg(K, x, axis, keepdims, extreme):
    shape = tuple(x.shape)
    nd = len(shape)
    flat = axis is None
    if flat:                             # flat index over the row-major order
        x, axis = K["reshape"](x, (math.prod(shape),)), 0
    elif nd == 0:
        return K["full"]((), 0, "int64")
    m = K[extreme](x, (axis,), True)
    if "float" in _dt(x):
        # NaN is the extreme (max/min propagate it): a miss is neither equal to m nor NaN (x == x)
        miss = K["lt"](K["eq"](x, m), K["eq"](x, x))
    else:
        miss = K["lt"](x, m) if extreme == "max" else K["lt"](m, x)
    n = x.shape[axis]
    if flat:
        r = _first_hit(K, miss, n) if n > 4096 else K["min"](K["where"](miss, n, _iota(K, n, 0, 1)), (0,), False)
        return K["reshape"](r, (1,) * nd) if keepdims else r
    # the smallest position holding the extreme: first occurrence
    return K["min"](K["where"](miss, n, _iota(K, n, axis, nd)), (axis,), keepdims)


def _first_hit(K, miss, n):
    """0-d index of the first False of a 1-d bool array that has one, in two levels of sqrt(n) blocks
    (the first block holding a False, then the first False in it): only bool-sized passes over n."""
    c = math.isqrt(n)
    r = -(-n // c)
    if r * c > n:
        miss = K["concat"]([miss, K["full"]((r * c - n,), True, "bool")], 0)
    blocks = K["reshape"](miss, (r, c))
    row = K["min"](K["where"](K["min"](blocks, (1,), False), r, _iota(K, r, 0, 1)), (0,), True)
    col = K["min"](K["where"](K["index"](blocks, (row,)), c, _iota(K, c, 1, 2)), (1,), False)
    return K["reshape"](K["add"](K["mul"](row, c), col), ())


def argmax(K, x, axis, keepdims):
    return _arg(K, x, axis, keepdims, "max")


def argmin(K, x, axis, keepdims):
    return _arg(K, x, axis, keepdims, "min")


# -- scans -----------------------------------------------------------------------------------------
def cumsum(K, x, axis):
    return _scan(K, x, axis, K["add"])


def cumprod(K, x, axis):
    return _scan(K, x, axis, K["mul"])


def _scan(K, x, axis, op):
    if len(x.shape) == 0 or x.shape[axis] <= 1:
        return K["copy"](x)
    dt = _dt(x)
    half = dt in ("float16", "bfloat16")     # accumulate in float32, round once (as PyTorch's CPU kernels)
    r = _prefix(K, K["astype"](x, "float32") if half else x, axis, op, "float32" if half else dt)
    return K["astype"](r, dt) if half else r


def _prefix(K, L, axis, op, dt):
    """Inclusive scan, work-efficient (Blelloch): combine neighbour pairs, scan the pairs (half the
    length), then odd positions are the pairs' prefixes and even ones a pair prefix op one element.
    O(n) work in about 8 kernels per level, log2(n) levels."""
    n = L.shape[axis]
    if n == 1:
        return K["copy"](L)
    m = n // 2
    sl = K["slice"]
    S = lambda a, b, step=None: _along(axis, slice(a, b, step))  # noqa: E731
    pairs = _prefix(K, op(sl(L, S(0, 2 * m, 2)), sl(L, S(1, 2 * m, 2))), axis, op, dt)
    out = K["full"](tuple(L.shape), 0, dt)
    K["assign"](sl(out, S(1, n, 2)), pairs)
    K["assign"](sl(out, S(0, 1)), sl(L, S(0, 1)))
    if n > 2:                            # positions 2, 4, ...: n - m - 1 of them
        K["assign"](sl(out, S(2, n, 2)), op(sl(pairs, S(0, n - m - 1)), sl(L, S(2, n, 2))))
    return out


# -- movement --------------------------------------------------------------------------------------
def flip(K, x, axes):
    key = [slice(None)] * len(x.shape)
    for a in axes:
        key[a] = slice(None, None, -1)
    return K["slice"](x, tuple(key))        # a view, as numpy.flip's


def pad(K, x, widths, mode, value=0):
    dt = _dt(x)
    if mode == "constant":
        shape = tuple(n + b + a for n, (b, a) in zip(x.shape, widths))
        out = K["full"](shape, value, dt)
        K["assign"](K["slice"](out, tuple(slice(b, b + n) for n, (b, _) in zip(x.shape, widths))), x)
        return out
    if mode not in ("reflect", "replicate", "circular"):
        raise ValueError(f"unknown padding mode {mode!r}")
    y = x
    for ax, (b, a) in enumerate(widths):
        if b or a:
            y = _pad_axis(K, y, ax, b, a, mode)
    return K["copy"](x) if y is x else y


def _pad_axis(K, y, ax, b, a, mode):
    n = y.shape[ax]
    if n == 0:
        raise ValueError(f"can't pad an empty dimension (axis {ax}) in {mode} mode")
    S = lambda *s: K["slice"](y, _along(ax, slice(*s)))  # noqa: E731
    if mode == "replicate":
        edge = lambda s, w: K["broadcast_to"](S(s, s + 1), tuple(w if d == ax else k  # noqa: E731
                                                                 for d, k in enumerate(y.shape)))
        parts = [edge(0, b), y, edge(n - 1, a)]
    elif mode == "reflect" and max(b, a) < n:
        parts = [S(b, 0, -1), y, S(n - 2, n - 2 - a if n - 2 - a >= 0 else None, -1)]
    elif mode == "circular" and max(b, a) <= n:
        parts = [S(n - b, n), y, S(0, a)]
    else:                                # wider than the dimension: numpy.pad's periodic source index
        j = np.arange(-b, n + a, dtype=np.int64)
        if mode == "circular":
            src = np.mod(j, n)
        elif n == 1:
            src = np.zeros_like(j)
        else:                            # period 2(n - 1), mirrored without repeating the edge
            t = np.mod(j, 2 * (n - 1))
            src = np.where(t < n, t, 2 * (n - 1) - t)
        return K["index"](y, _along(ax, K["from_numpy"](src)))
    return K["concat"]([p for p in parts if p.shape[ax]], ax)


# -- indexing --------------------------------------------------------------------------------------
def _grid_key(K, idx, axis, shape):
    """The advanced-indexing key placing idx along `axis` at every position of `shape` elsewhere."""
    nd = len(shape)
    return tuple(idx if d == axis else _iota(K, shape[d], d, nd) for d in range(nd))


def gather(K, x, idx, axis):
    xs, ish = tuple(x.shape), tuple(idx.shape)
    # non-axis dimensions broadcast, as numpy.take_along_axis's
    out = tuple(i if d == axis else (i if s == 1 else s) for d, (s, i) in enumerate(zip(xs, ish)))
    xb = K["broadcast_to"](x, tuple(xs[axis] if d == axis else n for d, n in enumerate(out)))
    return K["index"](xb, _grid_key(K, idx, axis, out))


def _scatter(K, x, idx, src, axis, accumulate):
    ish = tuple(idx.shape)
    if isinstance(src, (bool, int, float, complex)):
        src = K["full"]((), src, _dt(x))
    elif len(src.shape) == len(ish) and tuple(src.shape) != ish:
        src = K["slice"](src, tuple(slice(0, n) for n in ish))   # src may be larger than idx
    K["index_put"](x, _grid_key(K, idx, axis, ish), src, accumulate)


def scatter(K, x, idx, src, axis):
    # NumPy's assignment semantics: of repeated positions the last write wins
    _scatter(K, x, idx, src, axis, False)


def scatter_add(K, x, idx, src, axis):
    _scatter(K, x, idx, src, axis, True)


def nonzero(K, x):
    shape = tuple(x.shape)
    if not shape:
        return ()
    dt = _dt(x)
    mask = x if dt == "bool" else K["eq"](K["eq"](x, _zero(dt)), False)
    n = math.prod(shape)
    # flat row-major positions of the nonzeros (a bool-mask index keeps that order), then unravelled
    flat = K["index"](K["arange"](0, n, 1, "int64"), (K["reshape"](mask, (n,)),))
    coords = []
    for d in range(len(shape) - 1, 0, -1):
        coords.append(K["remainder"](flat, shape[d]))
        flat = K["floor_divide"](flat, shape[d])
    coords.append(flat if len(shape) > 1 else K["copy"](flat))
    return tuple(reversed(coords))


# -- linear algebra --------------------------------------------------------------------------------
def inv(K, a):
    n = a.shape[-1]
    if n == 0:
        return K["copy"](a)
    r = _iota(K, n, 0, 2)
    eye = K["astype"](K["eq"](r, K["reshape"](r, (1, n))), _dt(a))
    return _gauss_jordan(K, a, K["broadcast_to"](eye, tuple(a.shape)))


def solve(K, a, b):
    n = a.shape[-1]
    if len(b.shape) == 1:                # a vector right-hand side (numpy >= 2: only when b is 1-d)
        x = solve(K, a, K["reshape"](b, (n, 1)))
        return K["reshape"](x, tuple(x.shape[:-1]))
    batch = np.broadcast_shapes(tuple(a.shape[:-2]), tuple(b.shape[:-2]))
    a = K["broadcast_to"](a, batch + (n, n))
    b = K["broadcast_to"](b, batch + tuple(b.shape[-2:]))
    if n == 0:
        return K["copy"](b)
    return _gauss_jordan(K, a, b)


def _gauss_jordan(K, a, b):
    """x with a @ x = b (same batch shape): Gauss-Jordan elimination with partial pivoting on [a | b],
    all matrices of the batch at once. Raises numpy.linalg.LinAlgError("Singular matrix"), as the
    native kernels do, when a pivot is exactly zero (LAPACK's getrf criterion)."""
    n, nd = a.shape[-1], len(a.shape)
    M = K["concat"]([a, b], nd - 1)                      # a new array, updated in place below
    m = M.shape[-1]
    rows = lambda s: (Ellipsis, s, slice(None))  # noqa: E731
    pivots = []
    for j in range(n):
        col = K["slice"](M, (Ellipsis, slice(j, n), slice(j, j + 1)))
        p = K["add"](K["argmax"](K["abs"](col), nd - 2, True), j)             # (..., 1, 1)
        p_rows = K["broadcast_to"](p, tuple(M.shape[:-2]) + (1, m))
        prow = K["gather"](M, p_rows, nd - 2)                                  # the pivot row
        K["scatter"](M, p_rows, K["copy"](K["slice"](M, rows(slice(j, j + 1)))), nd - 2)   # row p := row j
        piv = K["slice"](prow, (Ellipsis, slice(0, 1), slice(j, j + 1)))
        pivots.append(piv)
        rj = K["div"](prow, piv)
        f = K["neg"](K["slice"](M, (Ellipsis, slice(None), slice(j, j + 1))))  # -multipliers of row j
        K["assign"](K["slice"](f, rows(slice(j, j + 1))), 0)
        M = K["add"](M, K["mul"](f, rj))
        K["assign"](K["slice"](M, rows(slice(j, j + 1))), rj)
    zero = K["eq"](K["concat"](pivots, nd - 1), 0)
    if bool(np.asarray(K["to_numpy"](K["any"](zero, None, False)))):
        raise np.linalg.LinAlgError("Singular matrix")
    return K["copy"](K["slice"](M, (Ellipsis, slice(None), slice(n, m))))
