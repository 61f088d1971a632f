"""Conversions and elementwise ops of sparse COO tensors: to_sparse, to_dense, coalesce, t / transpose,
neg, mul / div by a scalar, add / sub (sparse + sparse, dense + sparse). Ops PyTorch does not run on
sparse tensors raise its NotImplementedError (see _tensor.py)."""
from __future__ import annotations

import numbers

from .. import dtypes as _dt
from ..autograd.graph import record
from ..tensor import Tensor, _gstate, _make, _wrap_dim
from ._tensor import SparseTensor, coo, raw, unsupported, values_of


def _int64(data, like):
    return _make(data, _dt.int64, like._k, like._dev)


def to_sparse(input, *args, layout=None, blocksize=None, dense_dim=None):
    """Dense -> sparse COO: the nonzero positions over the first `sparse_dim` dims (default all);
    the result is coalesced. Differentiable (the gradient is the dense gradient)."""
    from .._layout import sparse_coo, strided
    if layout not in (None, sparse_coo, strided):
        raise NotImplementedError(f"to_sparse: layout {layout} is not supported (only tensorplug.sparse_coo)")
    sd = args[0] if args else input.ndim - (dense_dim or 0)
    if not 0 <= sd <= input.ndim:
        raise RuntimeError(f"sparse_dim must be in [0, {input.ndim}], got {sd}")
    K = input._k
    x = input._data
    mask = K["ne"](x, 0) if input._dtype is not _dt.bool_ else x
    if sd < input.ndim:
        mask = K["any"](mask, tuple(range(sd, input.ndim)), False)
    if sd == 0:
        nz = ()                                     # one entry holding the whole tensor
        idx = K["full"]((0, 1), 0, "int64")
    else:
        nz = K["nonzero"](mask)
        n = nz[0].shape[0]
        idx = K["concat"]([K["reshape"](r, (1, n)) for r in nz], 0)
    i = _int64(idx, input)
    v = input[tuple(_int64(r, input) for r in nz)] if sd else input.unsqueeze(0)
    return coo(i, v, input.shape, True)


def to_dense(s, dtype=None, *, masked_grad=None):
    """The dense tensor of s (duplicates summed); its gradient is the dense gradient read at s's pattern."""
    K = s._v._k
    out = K["full"](tuple(s._data.shape), 0, s._dtype.name)
    if s._nnz():
        key = tuple(K["slice"](s._i._data, (d,)) for d in range(s.sparse_dim()))
        K["index_put"](out, key, s._v._data, True)
    r = _make(out, s._dtype, K, s._dev)
    if _gstate.enabled and s._rg:
        record("ToDenseBackward0", r, (s,), lambda g: (sparse_mask(g, s),))
    return r if dtype is None else r.to(dtype)


def sparse_mask(g, s):
    """Dense g read at the coalesced pattern of s, as a sparse tensor (differentiable in g)."""
    c = s if s._coal else coalesce(s.detach())
    return coo(c._i, g[tuple(c._i[d] for d in range(c.sparse_dim()))], s.shape, True)


def coalesce(s):
    """Duplicates summed, entries in row-major order; s itself when already coalesced."""
    if s._coal:
        return s
    K = s._v._k
    sizes = tuple(s._data.shape[:s.sparse_dim()])
    ci, cv = K["sparse_coalesce"](s._i._data, s._v._data, sizes)
    r = raw(_int64(ci, s._v), _make(cv, s._dtype, K, s._dev), s._data.shape, True)
    if _gstate.enabled and s._rg:
        record("CoalesceBackward0", r, (s,), lambda g: (g,))
    return r


def transpose(s, dim0, dim1):
    nd = len(s._data.shape)
    d0, d1 = _wrap_dim(dim0, nd), _wrap_dim(dim1, nd)
    sd = s.sparse_dim()
    shape = list(s.shape)
    shape[d0], shape[d1] = shape[d1], shape[d0]
    if d0 == d1:
        return coo(s._i, values_of(s), shape, s._coal)
    if (d0 < sd) != (d1 < sd):
        raise RuntimeError(f"transpose(): cannot transpose a sparse dim with a dense dim ({dim0}, {dim1})")
    if d0 >= sd:
        return coo(s._i, values_of(s).transpose(d0 - sd + 1, d1 - sd + 1), shape, s._coal)
    K = s._v._k
    perm = list(range(sd))
    perm[d0], perm[d1] = perm[d1], perm[d0]
    rows = [K["reshape"](K["slice"](s._i._data, (p,)), (1, s._nnz())) for p in perm]
    return coo(_int64(K["concat"](rows, 0), s._v), values_of(s), shape, False)


def t(s):
    if s.sparse_dim() > 2 or s.dense_dim():
        raise RuntimeError(f"t() expects a tensor with <= 2 sparse and 0 dense dimensions, but got "
                           f"{s.sparse_dim()} sparse and {s.dense_dim()} dense dimensions")
    return s if s.ndim < 2 else transpose(s, 0, 1)


def _scalar(other, op, s):
    if isinstance(other, Tensor):
        if other.is_sparse or other.ndim:
            raise unsupported(op, s._dev)
        return other
    if isinstance(other, (numbers.Number,)):
        return other
    return NotImplemented


def neg(s):
    return coo(s._i, -values_of(s), s.shape, s._coal)


def mul(s, other):
    o = _scalar(other, "mul", s)
    if o is NotImplemented:
        return o
    return coo(s._i, values_of(s) * o, s.shape, s._coal)


def div(s, other):
    o = _scalar(other, "div", s)
    if o is NotImplemented:
        return o
    return coo(s._i, values_of(s) / o, s.shape, s._coal)


def _same_size(a, b):
    if tuple(a.shape) != tuple(b.shape):
        raise RuntimeError(f"add: expected sizes of 'self' and 'other' to match, but {list(a.shape)} != "
                           f"{list(b.shape)}")


def add(input, other, *, alpha=1):
    """sparse + sparse -> sparse (coalesced when both are); dense + sparse -> dense."""
    if not isinstance(other, Tensor):
        raise unsupported("add", input._dev)
    if input.is_sparse and not other.is_sparse:
        raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) instead.")
    if not input.is_sparse:                         # dense + sparse
        if tuple(input.shape) != tuple(other.shape):
            raise RuntimeError(f"add: expected 'self' and 'other' to have same size, but self has size "
                               f"{list(input.shape)} while other has size {list(other.shape)} (FYI: dense-sparse "
                               f"addition does not currently support broadcasting)")
        d = to_dense(other)
        return input + (d if alpha == 1 else d * alpha)
    _same_size(input, other)
    if input.sparse_dim() != other.sparse_dim():
        raise RuntimeError(f"add: expected 'self' and 'other' to have same sparse dimensions, but got "
                           f"{input.sparse_dim()} and {other.sparse_dim()}")
    if input._dev is not other._dev:
        raise RuntimeError(f"Expected all tensors to be on the same device, but found at least two devices, "
                           f"{input._dev} and {other._dev}!")
    dt = _dt.promote_types(input._dtype, other._dtype)
    va, vb = values_of(input), values_of(other)
    if alpha != 1:
        vb = vb * alpha
    from ..ops.shape import cat
    K = input._v._k
    i = _int64(K["concat"]([input._i._data, other._i._data], 1), input._v)
    r = coo(i, cat([va.to(dt), vb.to(dt)], 0), input.shape, False)
    return coalesce(r) if input._coal and other._coal else r


def sub(input, other, *, alpha=1):
    return add(input, other, alpha=-alpha)


def _attach():
    S = SparseTensor
    S.to_dense, S.coalesce, S.transpose, S.t = to_dense, coalesce, transpose, t
    S.neg, S.__neg__, S.mul, S.__mul__, S.__rmul__ = neg, neg, mul, mul, mul
    S.div, S.__truediv__ = div, div
    S.add, S.__add__, S.sub, S.__sub__ = add, add, sub, sub
    S.__radd__ = lambda self, other: add(other, self) if isinstance(other, Tensor) else _raise("add", self)
    S.__rsub__ = lambda self, other: add(other, self, alpha=-1) if isinstance(other, Tensor) else _raise("sub", self)


def _raise(op, s):
    raise unsupported(op, s._dev)


_attach()
