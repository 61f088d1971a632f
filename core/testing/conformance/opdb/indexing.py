"""Records of the indexing kernels: index (NumPy advanced indexing), index_put, gather, scatter,
scatter_add, nonzero. Index arrays are int64, in range and non-negative (the frontend normalizes
negative indices and checks bounds; the error cases check that it does on the backend's device)."""
from __future__ import annotations

import numpy as np

from ._base import ALL, COMPLEX, A, ErrorCase, OpRecord, Sample, register, values


def _torch():
    import tensorplug
    return tensorplug


def _ix(arr, layout="C"):
    return A(np.asarray(arr, dtype=np.int64), layout)


# -- index -----------------------------------------------------------------------------------------
def _index_samples(dt, rng):
    v = lambda *s: values(rng, dt, s)  # noqa: E731
    S = slice(None)
    x43 = v(4, 3)
    return [
        Sample((A(x43), (_ix([0, 2, 2, 1]),)), desc="rows [0, 2, 2, 1] (repeated)"),
        Sample((A(v(4, 3), "T"), (S, _ix([2, 0]))), desc="transposed x, [:, [2, 0]]"),
        Sample((A(v(4, 3)), (_ix([[0], [3]]), _ix([0, 2, 1]))), desc="broadcast index arrays (2,1) and (3,)"),
        Sample((A(x43), (A(x43.real.astype(np.float64) > 0 if dt != "bool" else x43),)), desc="bool mask of x's shape"),
        Sample((A(v(4, 3)), (A(np.array([True, False, True, True])),)), desc="bool mask of the rows"),
        Sample((A(v(2, 3, 4)), (1, S, _ix([3, 0, 3]))), desc="[1, :, [3, 0, 3]]"),
        Sample((A(v(2, 3, 4)), (_ix([1, 0]), S, _ix([2, 2]))),
               desc="advanced indices separated by a slice (their dims go first)"),
        Sample((A(v(5)), (None, _ix([4, 0]))), desc="[None, [4, 0]]"),
        Sample((A(v(2, 3, 4), "S"), (Ellipsis, _ix([1, 1, 0]))), desc="strided x, [..., [1, 1, 0]]"),
        Sample((A(v(4, 3)), (_ix(np.zeros(0, np.int64)),)), desc="an empty index array"),
        Sample((A(v(4, 3), "R"), (_ix([[0, 1], [3, 3]]),)), desc="a 2-d index array"),
        Sample((A(v(0, 3)), (S, _ix([0, 2]))), desc="empty x, [:, [0, 2]]"),
        Sample((A(v(3, 3)), (_ix([2, 0], "R"), _ix([1, 1]))), desc="a reversed (negative-stride) index array"),
    ]


register(OpRecord("index", "indexing", ALL + COMPLEX, _index_samples, ref=lambda x, key: x[key],
                  errors=[ErrorCase("index 5 into a dimension of size 3",
                                    lambda T: T([1.0, 2.0, 3.0])[T([0, 5])], IndexError),
                          ErrorCase("a bool mask of the wrong shape",
                                    lambda T: T([1.0, 2.0, 3.0])[T([True, False])], IndexError)]))


# -- index_put -------------------------------------------------------------------------------------
def _index_put_samples(dt, rng):
    v = lambda *s: values(rng, dt, s)  # noqa: E731
    S = slice(None)
    x = v(5, 3)
    return [
        Sample((A(v(5, 3)), (_ix([0, 3]),), A(v(2, 3)), False)),
        Sample((A(v(5, 3)), (_ix([1, 1, 4, 1]),), A(v(4, 3)), True), desc="repeated rows, accumulate"),
        Sample((A(v(5, 3), "T"), (S, _ix([2, 0])), A(v(5, 2)), False), desc="transposed x"),
        Sample((A(v(4, 6), "S"), (_ix([0, 0, 3]), _ix([5, 5, 1])), A(v(3)), True),
               desc="strided x, repeated points, accumulate"),
        Sample((A(x), (A(x.real.astype(np.float64) > 0 if dt != "bool" else x),), A(v(1)), False),
               desc="bool mask, one value broadcast"),
        Sample((A(v(2, 3, 4)), (1, S, _ix([3, 0])), A(v(2, 3)), True),
               desc="[1, :, [3, 0]] += values: the int and the array broadcast, their dim goes first"),
        Sample((A(v(5, 3)), (_ix(np.zeros(0, np.int64)),), A(v(0, 3)), True), desc="empty index"),
        Sample((A(v(5, 3)), (_ix([4, 2]),), A(v(1, 3)), False), desc="values broadcast over the rows"),
    ]


def _index_put_ref(x, key, values, accumulate):
    x = np.array(x, copy=True)
    if accumulate:
        np.add.at(x, key, values)
    else:
        x[key] = values
    return x


# float16 / bfloat16 sums of repeated indices round at each step
ACCUMULATE_TOL = {"float16": (1e-2, 1e-3), "bfloat16": (8e-2, 1e-2)}

register(OpRecord("index_put", "indexing", ALL + COMPLEX, _index_put_samples, ref=_index_put_ref, inplace=0,
                  tol=ACCUMULATE_TOL,
                  errors=[ErrorCase("index 7 into a dimension of size 3",
                                    lambda T: T([1.0, 2.0, 3.0]).index_put_((T([7]),), T([1.0])), IndexError)],
                  doc="in place; accumulate sums repeated indices"))


# -- gather / scatter ------------------------------------------------------------------------------
def _gather_samples(dt, rng):
    v = lambda *s: values(rng, dt, s)  # noqa: E731
    r = lambda n, *s: _ix(rng.integers(0, n, s))  # noqa: E731
    return [
        Sample((A(v(3, 4)), r(4, 3, 6), 1)),
        Sample((A(v(3, 4), "T"), r(3, 2, 4), 0)),
        Sample((A(v(2, 3, 4), "S"), r(3, 2, 5, 4), 1)),
        Sample((A(v(5)), _ix([4, 4, 0, 2]), 0)),
        Sample((A(v(3, 4)), _ix(np.zeros((3, 0), np.int64)), 1)),
        Sample((A(v(3, 4)), A(rng.integers(0, 4, (3, 5)).astype(np.int64), "T"), 1), desc="transposed index"),
    ]


register(OpRecord("gather", "indexing", ALL + COMPLEX, _gather_samples,
                  ref=lambda x, idx, axis: np.take_along_axis(x, idx, axis),
                  errors=[ErrorCase("gather with index 4 on a dimension of size 2",
                                    lambda T: _torch().gather(T([[1.0, 2.0]]), 1, T([[0, 4]])),
                                    (RuntimeError, IndexError))]))


def _unique_lines(rng, n, shape, axis):
    """int64 indices < n of `shape`, distinct along `axis` (so 'last write wins' is unambiguous)."""
    out = np.empty(shape, dtype=np.int64)
    moved = np.moveaxis(out, axis, -1)
    for pos in np.ndindex(moved.shape[:-1]):
        moved[pos] = rng.permutation(n)[:moved.shape[-1]]
    return out


def _scatter_samples(dt, rng, unique=True):
    v = lambda *s: values(rng, dt, s)  # noqa: E731

    def idx(n, shape, axis, layout="C"):
        a = _unique_lines(rng, n, shape, axis) if unique else rng.integers(0, n, shape).astype(np.int64)
        return _ix(a, layout)
    return [
        Sample((A(v(3, 5)), idx(5, (3, 3), 1), A(v(3, 3)), 1)),
        Sample((A(v(4, 3), "T"), idx(4, (2, 3), 0), A(v(2, 3)), 0), desc="transposed x"),
        Sample((A(v(4, 5)), idx(5, (2, 3), 1), A(v(2, 3), "S"), 1), desc="index smaller than x, strided src"),
        Sample((A(v(2, 3, 4), "S"), idx(3, (2, 2, 4), 1), A(v(2, 2, 4)), 1)),
        Sample((A(v(6)), idx(6, (4,), 0), A(np.repeat(v(1), 4), "B"), 0), desc="src broadcast (stride 0)"),
        Sample((A(v(3, 4)), _ix(np.zeros((3, 0), np.int64)), A(v(3, 0)), 1), desc="empty index"),
    ]


def _scatter_ref(add):
    def ref(x, idx, src, axis):
        x = np.array(x, copy=True)
        src = np.broadcast_to(src, idx.shape)
        for pos in np.ndindex(idx.shape):
            tgt = list(pos)
            tgt[axis] = idx[pos]
            if add:
                x[tuple(tgt)] += src[pos]
            else:
                x[tuple(tgt)] = src[pos]
        return x
    return ref


def _scatter_error(fname):
    return ErrorCase(f"{fname} with index 3 on a dimension of size 2",
                     lambda T: getattr(T([[1.0, 2.0]]), fname)(1, T([[3]]), T([[5.0]])),
                     (RuntimeError, IndexError))


register(OpRecord("scatter", "indexing", ALL + COMPLEX, _scatter_samples, ref=_scatter_ref(False), inplace=0,
                  errors=[_scatter_error("scatter")], doc="in place; indices distinct along the axis here"))
register(OpRecord("scatter_add", "indexing", ALL + COMPLEX, lambda dt, rng: _scatter_samples(dt, rng, unique=False),
                  ref=_scatter_ref(True), inplace=0, tol=ACCUMULATE_TOL, errors=[_scatter_error("scatter_add")],
                  doc="in place; repeated indices are summed"))


# -- nonzero ---------------------------------------------------------------------------------------
def _nonzero_samples(dt, rng):
    v = lambda *s: values(rng, dt, s, -1, 1)  # noqa: E731
    z = np.zeros((3, 2), dtype=dt)
    return [Sample((A(v(7)),)), Sample((A(v(3, 4), "T"),)), Sample((A(v(2, 3, 4), "S"),)),
            Sample((A(v(0, 3)),)), Sample((A(z),), desc="all zeros"), Sample((A(v(5), "R"),))]


def _nonzero_dtypes(dt, sample):
    return ("int64",) * sample.args[0].value.ndim


register(OpRecord("nonzero", "indexing", ALL, _nonzero_samples, ref=lambda x: np.nonzero(x),
                  out_dtype=_nonzero_dtypes, doc="a tuple of int64 arrays, one per axis, row-major order"))
