"""Reductions of sparse COO tensors: tensorplug.sparse.sum, softmax, log_softmax."""
from __future__ import annotations

from ..autograd.graph import record
from ..tensor import _gstate, _make, _wrap_dim
from ._ops import coalesce
from ._tensor import _groups, coo, raw, values_at, values_of


def sum(input, dim=None, dtype=None):
    """Sum over all dims (a dense 0-d tensor), or over `dim` (an int or a tuple): sparse while some
    sparse dim remains, else dense (the dense dims left)."""
    v = values_of(input)
    if dtype is not None:
        v = v.to(dtype)
    if dim is None:
        return v.sum()
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    nd, sd = input.ndim, input.sparse_dim()
    dims = sorted({_wrap_dim(d, nd) for d in dims})
    dense_axes = [d - sd + 1 for d in dims if d >= sd]
    if dense_axes:
        v = v.sum(dense_axes)
    keep = [d for d in range(sd) if d not in dims]
    if not keep:
        return v.sum(0)
    shape = [s for d, s in enumerate(input.shape) if d not in dims]
    i = input._i[keep]
    return coalesce(coo(i, v, shape, False))


def _segment_total(x, gid, count):
    """For each entry, the sum of x over its group (Tensor ops: differentiable)."""
    return x.new_zeros((count,) + tuple(x.shape[1:])).index_add(0, gid, x).index_select(0, gid)


def _softmax(input, dim, dtype, log):
    nd, sd = input.ndim, input.sparse_dim()
    d = _wrap_dim(dim, nd)
    s = coalesce(input if dtype is None else input.to(dtype))
    if not s._dtype.is_floating_point:
        raise RuntimeError(f"\"softmax\" not implemented for '{s._dtype}'")
    if d >= sd:                                   # a dense dim: the values' own softmax
        v = values_of(s)
        f = v.log_softmax if log else v.softmax
        return coo(s._i, f(d - sd + 1), s.shape, True)
    K = s._v._k
    y = _make(K["sparse_softmax"](s._i._data, s._v._data, tuple(s.shape[:sd]), d, log), s._dtype, K, s._dev)
    out = coo(s._i, y, s.shape, True)
    if _gstate.enabled and s._rg:

        def vjp(g):
            gv = values_at(g, out)
            yv = values_of(out)
            gid, count, _ = _group_of_dim(s, d)
            if log:
                gx = gv - yv.exp() * _segment_total(gv, gid, count)
            else:
                gx = yv * (gv - _segment_total(gv * yv, gid, count))
            return (coo(s._i, gx, s.shape, True),)
        record("SparseLogSoftmaxBackward0" if log else "SparseSoftmaxBackward0", out, (s,), vjp)
    return out


def _group_of_dim(s, d):
    """Groups of entries agreeing in every sparse dim but d."""
    keep = [k for k in range(s.sparse_dim()) if k != d]
    shape = [s.shape[k] for k in keep] + list(s.shape[s.sparse_dim():])
    q = raw(s._i[keep] if keep else s._i[:0], s._v, shape, False)
    return _groups(q)


def softmax(input, dim, *, dtype=None):
    return _softmax(input, dim, dtype, False)


def log_softmax(input, dim, *, dtype=None):
    return _softmax(input, dim, dtype, True)
