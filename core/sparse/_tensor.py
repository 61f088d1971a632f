"""The sparse COO tensor: a Tensor subclass holding `_i` (int64 indices, sparse_dim x nnz) and `_v`
(values, nnz x *dense_shape), both ordinary dense tensors on one device.

A sparse tensor has no dense array: its `_data` is a stand-in that knows only shape and dtype, and
its kernel table `_k` holds only `__backend__`. So a dense op that reaches a sparse tensor fails in
its first kernel lookup with PyTorch's NotImplementedError ("Could not run 'aten::exp' with
arguments from the 'SparseCPU' backend"), never with a silently wrong dense result.

Autograd: a gradient flowing into a sparse tensor stands for a dense gradient (a dense tensor, or a
sparse one whose duplicate entries add up). The differentiable primitives are `coo` (values ->
sparse), `values_of` (sparse -> values), `values_at` (a gradient read at a pattern) and the ops of
this package; every backward is written with Tensor ops, so higher-order gradients work.
"""
from __future__ import annotations

from .. import dtypes as _dt
from .._layout import sparse_coo
from ..autograd.graph import record
from ..ops._core import SparseOpError
from ..tensor import Tensor, _gstate, _make

_HELP = ("tensorplug supports on sparse COO tensors only the operations of tensorplug.sparse "
         "(see its docstring); call .to_dense() first")


def backend_name(dev):
    return "Sparse" + dev.type.upper()


def unsupported(op, dev):
    return SparseOpError(f"Could not run 'aten::{op}' with arguments from the '{backend_name(dev)}' "
                               f"backend. {_HELP}")


def unsupported_mix(s):
    return SparseOpError(f"Could not run this operator with a dense and a sparse argument on the "
                               f"'{backend_name(s._dev)}' backend. {_HELP}")


class _SparseData:
    """Stands in for a sparse tensor's array: shape and dtype only; any other use raises."""
    __slots__ = ("shape", "dtype", "_dev")

    def __init__(self, shape, dtype, dev):
        self.shape, self.dtype, self._dev = shape, dtype, dev

    @property
    def ndim(self):
        return len(self.shape)

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        raise unsupported(name, self._dev)

    def __getitem__(self, key):
        raise unsupported("index", self._dev)

    def __array__(self, *a, **k):
        raise unsupported("to_numpy", self._dev)

    def __array_ufunc__(self, ufunc, method, *a, **k):
        raise unsupported(ufunc.__name__, self._dev)

    def __array_function__(self, func, types, args, kwargs):
        raise unsupported(func.__name__, self._dev)


class _SparseTable(dict):
    """A sparse tensor's kernel table: only `__backend__`; a lookup of any kernel raises."""

    def __init__(self, dense_table, dev):
        super().__init__(__backend__=dense_table["__backend__"], __check__=None)
        self.dense, self.dev = dense_table, dev

    def __missing__(self, name):
        raise unsupported(name, self.dev)


_TABLES: dict = {}


def _table(k, dev):
    t = _TABLES.get(id(k))
    if t is None or t.dense is not k:
        t = _TABLES[id(k)] = _SparseTable(k, dev)
    return t


class SparseTensor(Tensor):
    """A sparse COO tensor (torch.sparse_coo layout); make one with tensorplug.sparse_coo_tensor or
    Tensor.to_sparse()."""
    is_sparse = True

    @property
    def layout(self):
        return sparse_coo

    # -- structure -----------------------------------------------------------------------------
    def sparse_dim(self):
        return self._i._data.shape[0]

    def dense_dim(self):
        return len(self._data.shape) - self._i._data.shape[0]

    def _nnz(self):
        return self._i._data.shape[1]

    def is_coalesced(self):
        return self._coal

    def _indices(self):
        return self._i

    def _values(self):
        return self._v

    def indices(self):
        if not self._coal:
            raise RuntimeError("Cannot get indices on an uncoalesced tensor, please call .coalesce() first")
        return self._i

    def values(self):
        if not self._coal:
            raise RuntimeError("Cannot get values on an uncoalesced tensor, please call .coalesce() first")
        return values_of(self)

    def to_sparse(self, *args, layout=None, **kwargs):
        if layout not in (None, sparse_coo) or args and args[0] != self.sparse_dim():
            raise RuntimeError("to_sparse: converting a sparse COO tensor to another layout or sparse_dim "
                               "is not supported")
        return self

    to_sparse_coo = to_sparse

    # -- conversion ------------------------------------------------------------------------------
    def to(self, *args, **kwargs):
        from ..ops.creation import _parse_to
        device, dtype, copy = _parse_to(args, dict(kwargs))
        i = self._i if device is None else self._i.to(device)
        if i is self._i and (dtype is None or _dt.as_dtype(dtype) is self._dtype):
            return self.clone() if copy else self
        return coo(i, values_of(self).to(device=device, dtype=dtype), self.shape, self._coal)

    def cpu(self):
        return self.to("cpu")

    def cuda(self, device=None, non_blocking=False):
        return self.to("cuda" if device is None else device)

    def type(self, dtype=None, non_blocking=False):
        if dtype is None:
            return "tensorplug.sparse." + self._dtype._legacy
        return self.to(dtype)

    def float(self):
        return self.to(_dt.float32)

    def double(self):
        return self.to(_dt.float64)

    def half(self):
        return self.to(_dt.float16)

    def bfloat16(self):
        return self.to(_dt.bfloat16)

    def long(self):
        return self.to(_dt.int64)

    def int(self):
        return self.to(_dt.int32)

    def short(self):
        return self.to(_dt.int16)

    def bool(self):
        return self.to(_dt.bool_)

    def clone(self, *, memory_format=None):
        return coo(self._i.clone(), values_of(self).clone(), self.shape, self._coal)

    def detach(self):
        return raw(self._i, self._v, self._data.shape, self._coal)

    @property
    def data(self):
        return self.detach()

    def numpy(self, *, force=False):
        raise TypeError("can't convert Sparse layout tensor to numpy. Use Tensor.to_dense() first.")

    def tolist(self):
        raise RuntimeError("Cannot access data pointer of Tensor that doesn't have storage")

    def __array__(self, dtype=None, copy=None):
        raise TypeError("can't convert Sparse layout tensor to numpy. Use Tensor.to_dense() first.")

    def __getitem__(self, key):
        raise unsupported("index", self._dev)

    def __setitem__(self, key, value):
        raise unsupported("index_put_", self._dev)

    def __reduce_ex__(self, protocol):
        return (_rebuild_sparse, (self._i.detach(), self._v.detach(), tuple(self._data.shape), self._coal, self._rg))

    def __deepcopy__(self, memo):
        if self.grad_fn is not None:
            raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) support "
                               "the deepcopy protocol")
        t = raw(self._i.clone(), self._v.clone(), self._data.shape, self._coal)
        t._rg = self._rg
        memo[id(self)] = t
        return t

    def __repr__(self):
        from ._format import format_sparse
        return format_sparse(self)

    __str__ = __repr__

    # -- what the autograd engine needs --------------------------------------------------------
    def _clone_data(self):
        return raw(self._i.detach().clone(), self._v.detach().clone(), self._data.shape, self._coal)

    def _iadd_data(self, other):
        """self += other (gradient accumulation): entries appended, as PyTorch accumulates sparse grads."""
        if not other.is_sparse:
            raise unsupported("add_", self._dev)
        K = self._v._k
        self._i = _make(K["concat"]([self._i._data, other._i._data], 1), _dt.int64, K, self._dev)
        ov = other._v._data if other._dtype is self._dtype else K["astype"](other._v._data, self._dtype.name)
        self._v = _make(K["concat"]([self._v._data, ov], 0), self._dtype, K, self._dev)
        self._coal = False
        self.__dict__.pop("_groups", None)
        self._bump_version()



def raw(i, v, shape, coalesced):
    """A sparse tensor of index tensor i and value tensor v (used as they are; no autograd)."""
    t = _make(_SparseData(tuple(shape), v._data.dtype, v._dev), v._dtype, _table(v._k, v._dev), v._dev, SparseTensor)
    t._i, t._v, t._coal = i, (v.detach() if v._rg else v), bool(coalesced)
    return t


def coo(i, v, shape, coalesced=False):
    """The sparse tensor of indices i and values v, differentiable with respect to v."""
    t = raw(i, v, shape, coalesced)
    if _gstate.enabled and v._rg:
        record("SparseCooTensorWithDimsAndTensorsBackward0", t, (v,), lambda g: (values_at(g, t),))
    return t


def values_of(s):
    """s's values, differentiable with respect to s (duplicates share their position's gradient)."""
    v = s._v
    if not (_gstate.enabled and s._rg):
        return v
    out = _make(v._data, v._dtype, v._k, v._dev)

    def vjp(g):
        return (pattern_grad(s, g),)
    record("ValuesBackward0", out, (s,), vjp)
    return out


def pattern_grad(s, g):
    """The sparse gradient of s whose entry k has per-entry gradient g[k] (equal for duplicates, as every
    op here depends on s only through its dense sum): coalesced when s has duplicates."""
    if s._coal:
        return coo(s._i, g, s.shape, True)
    from ._ops import coalesce
    mult = _groups(s)[2].reshape((-1,) + (1,) * (g.ndim - 1))
    return coalesce(coo(s._i, g / mult, s.shape, False))


def values_at(g, s):
    """The gradient g (dense, or sparse standing for its dense sum) read at each entry of s's pattern."""
    if not g.is_sparse:
        return g[tuple(s._i[d] for d in range(s.sparse_dim()))]
    if g._i is s._i:
        gv = values_of(g)
        if s._coal:
            return gv
        gid, count, _ = _groups(s)
        total = gv.new_zeros((count,) + tuple(gv.shape[1:])).index_add(0, gid, gv)
        return total.index_select(0, gid)
    from ._ops import to_dense
    return values_at(to_dense(g), s)


def _groups(s):
    """(group id of each entry, number of distinct positions, entries per position as values' dtype);
    computed once per tensor."""
    got = s.__dict__.get("_groups")
    if got is None:
        from ..dispatch.optional_sparse import _linear, _segments
        K = s._v._k
        order, _, _, seg, count = _segments(K, _linear(K, s._i._data, tuple(s.shape[:s.sparse_dim()])))
        gid = K["full"]((s._nnz(),), 0, "int64")
        K["scatter"](gid, order, seg, 0)
        gid_t = _make(gid, _dt.int64, K, s._dev)
        cnt = K["full"]((count,), 0, s._dtype.name)
        K["scatter_add"](cnt, gid, K["full"]((s._nnz(),), 1, s._dtype.name), 0)
        mult = _make(K["gather"](cnt, gid, 0), s._dtype, K, s._dev)
        got = s.__dict__["_groups"] = (gid_t, count, mult)
    return got


def _rebuild_sparse(i, v, shape, coalesced, requires_grad):
    t = raw(i, v, shape, coalesced)
    t._rg = requires_grad
    return t
