"""Indexing ops: `x[key]` and `x[key] = value` with NumPy-style basic and advanced indexing, and the
index_select / masked_* / gather / scatter* / index_* / take / put / nonzero family.

An index key is planned once per call (`_plan`): it is validated against the tensor's shape and
split into a *basic* step (ints, slices, None: an aliasing view through the `slice` kernel) and an
optional *advanced* step (int64 index arrays, already made non-negative and checked in range, mixed
with full slices; run by the `index` / `index_put` kernels). As in PyTorch, integers are applied in
the basic step, so `x[0, :, [1, 2]]` has shape (x.size(1), 2) where NumPy would give (2, x.size(1));
everywhere else the semantics are NumPy's (index arrays broadcast together; the advanced dimensions
replace the indexed ones in place when the index arrays are adjacent, else they go first).

Two primitives carry autograd, and each one's vjp is written with the other, so gradients of any
order work:
- `_take(x, plan)` reads (a view for basic keys, a copy otherwise); its gradient puts g into zeros
  with accumulation (repeated indices add up);
- `_put(x, plan, value, accumulate)` writes in place; its gradient w.r.t. value is `_take` of g
  (reduced to value's shape), w.r.t. the old x it is g with the written region zeroed (unchanged
  when accumulating).
Every op of the family is built from these two, or from gather / scatter(_add) whose gradients are
each other.
"""
from __future__ import annotations

import operator

import numpy as np

from .. import dtypes as _dt
from ..compiler._state import opaque as _opaque
from ..amp.state import state as _amp
from ._core import (Tensor, _gstate, _make, broadcast_all_shapes, broadcast_shapes, cast_data,
                    check_inplace, device_mismatch, is_scalar, record, rewritten, scalar_value, sum_to,
                    wrap_dim)
from ._limits import check_fill
from .shape import make_view


class _IndexRangeError(IndexError, RuntimeError):
    """An out-of-range index in gather/scatter-like ops: PyTorch raises RuntimeError there, while
    subscripting raises IndexError; this is both."""


def _oob(bad, dim, n):
    return IndexError(f"index {bad} is out of bounds for dimension {dim} with size {n}")


def _oob_rt(bad, dim, n):
    return _IndexRangeError(f"index {bad} is out of bounds for dimension {dim} with size {n}")


def _oob_flat(bad, dim, n):
    return IndexError(f"out of range: tried to access index {bad} on a tensor of {n} elements.")


def _numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def _tname(dt):
    return dt._legacy[:-6]


_INT64 = np.dtype(np.int64)


def _is_int64(arr) -> bool:
    """arr (a backend array) holds int64: NumPy's dtype by identity, another library's by name (NumPy's
    dtype.name costs ~1.5 us a read)."""
    d = arr.dtype
    return d is _INT64 or (d.__class__ is not _INT64.__class__ and d.name == "int64")


@_opaque
def _norm_index(k, arr, n, dim, *, negative=True, err=_oob):
    """`arr` (an integer backend array) as a new int64 array of indices in [0, n), for a dimension
    of size n; negative entries count from the end when `negative`. Raises err(bad, dim, n)."""
    fresh = False
    if not _is_int64(arr):
        arr = k["astype"](arr, "int64")
        fresh = True
    if _numel(arr.shape) == 0:
        return arr if fresh else k["copy"](arr)
    lo = int(k["to_numpy"](k["min"](arr, None, False)))
    hi = int(k["to_numpy"](k["max"](arr, None, False)))
    low = -n if negative else 0
    if lo < low or hi >= n:
        flat = np.asarray(k["to_numpy"](arr)).reshape(-1)
        bad = int(flat[(flat < low) | (flat >= n)][0])
        raise err(bad, dim, n)
    if lo < 0:
        return k["where"](k["lt"](arr, 0), k["add"](arr, n), arr)
    return arr if fresh else k["copy"](arr)


def _on(t, like):
    """t's array on like's backend (index tensors may live on another device, as in PyTorch)."""
    if t._k is like._k:
        return t._data
    return like._k["from_numpy"](np.array(t._host(), copy=True))


def _index_tensor_data(index, like, what):
    if not isinstance(index, Tensor):
        raise TypeError(f"{what}(): argument 'index' must be Tensor, not {type(index).__name__}")
    if index._dtype.category != 1:
        raise RuntimeError(f"{what}(): Expected dtype int64 for index, got {_tname(index._dtype)}")
    return _on(index, like)


def _full0(k, value, dt):
    """A 0-d array holding the Python scalar `value` in dtype dt (overflow raises, as PyTorch)."""
    return k["full"]((), check_fill(value, dt), dt.name)


def _zeros(shape, dt, k, dev):
    return _make(k["full"](tuple(shape), 0, dt.name), dt, k, dev)


def _grad_to(g, shape, dt):
    """g reduced (summing broadcast dims) to `shape` and cast to dt, with differentiable ops."""
    g = sum_to(g, shape)
    if g._dtype is not dt:
        g = g.to(dt)
    return g


# -- planning an index key --------------------------------------------------------------------------
class _Plan:
    """A validated key: `key1` for the slice kernel (ends with Ellipsis), `trivial` when it selects
    everything; `key2` for the index kernels (None: basic indexing only); `out_shape` of x[key]."""
    __slots__ = ("key1", "key2", "out_shape", "trivial")

    def __init__(self, key1, key2, out_shape, trivial):
        self.key1, self.key2, self.out_shape, self.trivial = key1, key2, tuple(out_shape), trivial


_INT, _SLICE, _NONE, _ELL, _BOOL, _ARR, _MASK = range(7)
_BAD_DTYPE = "tensors used as indices must be long, int, byte or bool tensors"


def _classify(item, x):
    if item is None:
        return _NONE, None
    if item is Ellipsis:
        return _ELL, None
    cls = item.__class__
    if cls is int:
        return _INT, item
    if cls is slice:
        return _SLICE, item
    if cls is bool or isinstance(item, np.bool_):
        return _BOOL, bool(item)
    if isinstance(item, Tensor):
        dt = item._dtype
        if dt is _dt.bool_ or dt is _dt.uint8:
            if item.ndim == 0:
                return _BOOL, bool(item.item())
            data = _on(item, x)
            if dt is _dt.uint8:
                data = x._k["ne"](data, 0)
            return _MASK, data
        if dt.category == 1:
            if item.ndim == 0:
                return _INT, int(item.item())
            return _ARR, _on(item, x)
        raise IndexError(_BAD_DTYPE)
    if isinstance(item, int):
        return _INT, int(item)
    if isinstance(item, (np.ndarray, list, tuple, range, np.generic)):
        try:
            a = np.asarray(item)
        except (ValueError, TypeError):
            raise IndexError(f"invalid index {item!r}: index sequences must be rectangular and hold "
                             f"integers or booleans") from None
        if a.dtype.kind == "b":
            if a.ndim == 0:
                return _BOOL, bool(a)
            return _MASK, x._k["from_numpy"](np.array(a, copy=True))
        if a.dtype.kind in "iu":
            if a.ndim == 0:
                return _INT, int(a)
            return _ARR, x._k["from_numpy"](np.array(a, dtype=np.int64, copy=True))
        if a.size == 0 and not isinstance(item, np.ndarray):
            return _ARR, x._k["from_numpy"](np.zeros(a.shape, dtype=np.int64))
        raise IndexError(_BAD_DTYPE)
    if hasattr(item, "__index__"):
        return _INT, operator.index(item)
    raise IndexError(f"only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables "
                     f"are valid indices (got {type(item).__name__})")


def _plan(x, key):
    """Validate `key` against x's shape and turn it into a _Plan (see the module docstring)."""
    shape = x._data.shape
    nd = len(shape)
    if key.__class__ is slice and nd and (key.step is None or key.step.__class__ is int and key.step > 0):
        s = slice(*key.indices(shape[0]))              # x[a:b] (the common key): no per-item classification
        m = len(range(s.start, s.stop, s.step))
        return _Plan((s, Ellipsis), None, (m,) + shape[1:], m == shape[0])
    if key.__class__ is not tuple:
        key = (key,)
    items = [_classify(it, x) for it in key]
    consumed = n_ell = 0
    for kind, v in items:
        if kind <= _SLICE or kind == _ARR:
            consumed += 1
        elif kind == _MASK:
            consumed += len(v.shape)
        elif kind == _ELL:
            n_ell += 1
    if n_ell > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if consumed > nd:
        raise IndexError(f"too many indices for tensor of dimension {nd}")
    k = x._k
    key1, shape1, adv = [], [], []          # adv: per dimension of the basic result, None or indices
    trivial = True
    d = 0
    for kind, v in items:
        if kind == _INT:
            n = shape[d]
            if v < -n or v >= n:
                raise _oob(v, d, n)
            key1.append(v + n if v < 0 else v)
            trivial = False
            d += 1
        elif kind == _SLICE:
            n = shape[d]
            step = 1 if v.step is None else operator.index(v.step)
            if step <= 0:
                raise ValueError("step must be greater than zero")
            s = slice(*v.indices(n))
            m = len(range(s.start, s.stop, s.step))
            key1.append(s)
            shape1.append(m)
            adv.append(None)
            if m != n:
                trivial = False
            d += 1
        elif kind == _NONE:
            key1.append(None)
            shape1.append(1)
            adv.append(None)
            trivial = False
        elif kind == _ELL:
            for _ in range(nd - consumed):
                key1.append(slice(None))
                shape1.append(shape[d])
                adv.append(None)
                d += 1
        elif kind == _BOOL:
            # NumPy: a 0-d boolean adds a dimension indexed by [0] (True) or [] (False)
            key1.append(None)
            shape1.append(1)
            adv.append(k["full"]((1 if v else 0,), 0, "int64"))
            trivial = False
        elif kind == _ARR:
            n = shape[d]
            key1.append(slice(None))
            shape1.append(n)
            adv.append(_norm_index(k, v, n, d))
            d += 1
        else:
            ms = tuple(v.shape)
            if ms != tuple(shape[d:d + len(ms)]):
                j = next(i for i in range(len(ms)) if ms[i] != shape[d + i])
                raise IndexError(f"The shape of the mask {list(ms)} at index {j} does not match the shape "
                                 f"of the indexed tensor {list(shape)} at index {d + j}")
            for a in k["nonzero"](v):
                key1.append(slice(None))
                shape1.append(shape[d])
                adv.append(a if _is_int64(a) else k["astype"](a, "int64"))
                d += 1
    for i in range(d, nd):
        shape1.append(shape[i])
        adv.append(None)
    key1 = tuple(key1) + (Ellipsis,)
    pos = [i for i, a in enumerate(adv) if a is not None]
    if not pos:
        return _Plan(key1, None, shape1, trivial)
    shapes = [tuple(adv[i].shape) for i in pos]
    try:
        bshape = broadcast_all_shapes(*shapes)
    except RuntimeError:
        raise IndexError("shape mismatch: indexing tensors could not be broadcast together with shapes "
                         + ", ".join(str(list(s)) for s in shapes)) from None
    if pos[-1] - pos[0] + 1 == len(pos):
        out = tuple(shape1[:pos[0]]) + bshape + tuple(shape1[pos[-1] + 1:])
    else:
        out = bshape + tuple(s for i, s in enumerate(shape1) if adv[i] is None)
    key2 = tuple(slice(None) if a is None else a for a in adv[:pos[-1] + 1])
    return _Plan(key1, key2, out, trivial)


def _dim_plan(shape, dim, idx):
    """The plan of indexing dimension `dim` with a 1-d index array (self.index_select's)."""
    if len(shape) == 0:
        return _Plan((None, Ellipsis), (idx,), tuple(idx.shape), False)
    out = tuple(shape[:dim]) + tuple(idx.shape) + tuple(shape[dim + 1:])
    return _Plan((Ellipsis,), (slice(None),) * dim + (idx,), out, True)


def _prefix_plan(shape):
    """The plan of x[:shape[0], :shape[1], ...]."""
    return _Plan(tuple(slice(0, n, 1) for n in shape) + (Ellipsis,), None, shape, False)


# -- the two primitives ----------------------------------------------------------------------------
def _take(x, p, name=None):
    """x[plan]: an aliasing view for basic keys, else a new tensor."""
    k = x._k
    if p.key2 is None:
        r = make_view(x, k["slice"](x._data, p.key1), ("slice", (p.key1,)))
    else:
        data = x._data if p.trivial else k["slice"](x._data, p.key1)
        r = _make(k["index"](data, p.key2), x._dtype, k, x._dev)
    if x._rg and _gstate.enabled:
        shape = x._data.shape
        record(name or ("SliceBackward0" if p.key2 is None else "IndexBackward0"), r, (x,),
               lambda g: (_embed(g, shape, p),))
    return r


def _embed(g, shape, p):
    """zeros(shape) with g added at the plan's positions (repeated positions accumulate)."""
    z = _zeros(shape, g._dtype, g._k, g._dev)
    return _put(z, p, g, accumulate=True, name="IndexPutBackward0")


def _strip_ones(shape):
    i = 0
    while i < len(shape) and shape[i] == 1:
        i += 1
    return tuple(shape[i:])


def _put(x, p, value, accumulate=False, name=None):
    """x[plan] = value (or += with repeated positions summed), in place; value is a number or a
    tensor broadcastable to the indexed shape, converted to x's dtype. Returns x."""
    k = x._k
    target = p.out_shape
    grad_on = _gstate.enabled
    check_inplace(x, isinstance(value, Tensor) and value._rg)
    vt = None
    if isinstance(value, Tensor):
        if value._k is not k:
            if value.ndim == 0:
                value = value.item() if not value._rg else value.to(x._dev)
            else:
                raise device_mismatch(x, value)
    if isinstance(value, Tensor):
        vt = value
        vs = value._data.shape
        core = _strip_ones(vs)      # PyTorch drops leading 1s of the value before broadcasting
        ok = True
        try:
            ok = broadcast_shapes(core, target) == target
        except RuntimeError:
            ok = False
        if not ok:
            raise RuntimeError(f"shape mismatch: value tensor of shape {list(vs)} cannot be broadcast to "
                               f"indexing result of shape {list(target)}")
        vd = value._data
        if value._dtype is not x._dtype:
            vd = k["astype"](vd, x._dtype.name)
        elif value._ver is not None and value._ver is x._ver:
            vd = k["copy"](vd)      # the value aliases x: read it before writing
        if core != vs:
            vd = k["reshape"](vd, core)
        if core != target:
            vd = k["broadcast_to"](vd, target)
    elif is_scalar(value):
        vd = _full0(k, scalar_value(value), x._dtype)
        if p.key2 is not None:      # (assign and add broadcast a 0-d value themselves: np.broadcast_to costs ~3 us)
            vd = k["broadcast_to"](vd, target)
    else:
        from .creation import tensor
        return _put(x, p, tensor(value, dtype=x._dtype, device=x._dev), accumulate, name)
    data = x._data
    if p.key2 is None:
        view = k["slice"](data, p.key1)
        if accumulate:
            k["assign"](view, k["add"](view, vd))
        else:
            k["assign"](view, vd)
    else:
        view = data if p.trivial else k["slice"](data, p.key1)
        k["index_put"](view, p.key2, vd, bool(accumulate))
    x._bump_version()
    v_rg = vt is not None and vt._rg
    if grad_on and (x._rg or v_rg) and x._dtype.category >= 2:
        x_rg = x._rg
        if vt is not None:
            vshape, vdt, vcore = vt._data.shape, vt._dtype, _strip_ones(vt._data.shape)

        def vjp(g):
            gx = (g if accumulate else _zeroed(g, p)) if x_rg else None
            if vt is None:
                return (gx,)
            gv = None
            if v_rg:
                gv = _grad_to(_take(g, p), vcore, vdt)
                if vcore != vshape:
                    gv = gv.reshape(vshape)
            return (gx, gv)
        record(name or ("CopySlices" if p.key2 is None else "IndexPutBackward0"), x,
               (x, vt) if vt is not None else (x,), vjp)
        rewritten(x)
    return x


def _zeroed(g, p):
    """g with the plan's region set to zero (out of place, differentiable)."""
    return _put(g.clone(), p, 0, accumulate=False)


# -- subscripting ---------------------------------------------------------------------------------
def getitem(self, key):
    """self[key] with NumPy-style indexing; basic keys (ints, slices, None, ...) give views."""
    if key.__class__ is int and self._data.shape:
        n = self._data.shape[0]
        if -n <= key < n:
            return _take(self, _Plan((key + n if key < 0 else key, Ellipsis), None, self._data.shape[1:],
                                     False), "SelectBackward0")
    return _take(self, _plan(self, key))


def setitem(self, key, value):
    """self[key] = value: value (a number or tensor) is broadcast to self[key]'s shape and cast to
    self's dtype. Recorded by autograd as an in-place op."""
    _put(self, _plan(self, key), value, accumulate=False)


# -- index_select / masked_select / take ---------------------------------------------------------------
def index_select(input, dim, index, *, out=None):
    """The entries of `input` at positions `index` (1-d) along `dim`."""
    data = _index_tensor_data(index, input, "index_select")
    if index.ndim > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    nd = input.ndim
    dim = wrap_dim(dim, nd)
    n = input._data.shape[dim] if nd else 1
    if index.ndim == 0:
        data = input._k["reshape"](data, (1,))
    if nd == 0 and _numel(data.shape) != 1:
        raise RuntimeError(f"index_select(): Index to scalar can have only 1 value, got "
                           f"{_numel(data.shape)} value(s)")
    idx = _norm_index(input._k, data, n, dim, negative=False, err=_oob_rt)
    r = _take(input, _dim_plan(input._data.shape, dim, idx), "IndexSelectBackward0")
    if nd == 0:
        r = r.reshape(())
    return _out(r, out)


def _check_mask(mask, what):
    if not isinstance(mask, Tensor):
        raise TypeError(f"{what}(): argument 'mask' must be Tensor, not {type(mask).__name__}")
    if mask._dtype is not _dt.bool_:
        raise RuntimeError(f"{what} only supports boolean masks, but got mask with dtype "
                           f"{mask._dtype.name}")


def _expand_to(t, shape):
    return t if tuple(t._data.shape) == shape else t.expand(*shape)


def masked_select(input, mask, *, out=None):
    """The entries of `input` where `mask` (broadcast together) is True, as a 1-d tensor."""
    if not isinstance(mask, Tensor) or mask._dtype is not _dt.bool_:
        raise RuntimeError("masked_select: expected BoolTensor for mask")
    if mask._k is not input._k:
        raise device_mismatch(input, mask)
    shape = broadcast_shapes(input._data.shape, mask._data.shape)
    a = _expand_to(input, shape)
    m = _expand_to(mask, shape)
    return _out(_take(a, _plan(a, (m,)), "MaskedSelectBackward0"), out)


def take(input, index):
    """`input` read as 1-d at `index` (negative indices count from the end); result: index's shape."""
    data = _index_tensor_data(index, input, "take")
    idx = _norm_index(input._k, data, input.numel(), 0, err=_oob_flat)
    flat = input.reshape(-1)
    return _take(flat, _Plan((Ellipsis,), (idx,), idx.shape, True), "TakeBackward0")


def take_along_dim(input, indices, dim=None, *, out=None):
    """Pick values along `dim` at `indices` (broadcast with input apart from dim); dim None: flat."""
    _index_tensor_data(indices, input, "take_along_dim")
    if dim is None:
        return _out(take_along_dim(input.reshape(-1), indices.reshape(-1), 0), out)
    nd = input.ndim
    if indices.ndim != nd:
        raise RuntimeError(f"torch.take_along_dim(): input and indices should have the same number of "
                           f"dimensions, but got {nd} dimensions for input, and {indices.ndim} dimensions "
                           f"for indices")
    dim = wrap_dim(dim, nd)
    k = input._k
    ishape, xshape = tuple(indices._data.shape), tuple(input._data.shape)
    n = xshape[dim] if nd else 1
    idx = _norm_index(k, _on(indices, input), n, dim, err=_oob_rt)
    if nd == 0:
        return _out(gather(input, 0, _make(idx, _dt.int64, k, input._dev)), out)
    b = broadcast_shapes(xshape[:dim] + (1,) + xshape[dim + 1:], ishape[:dim] + (1,) + ishape[dim + 1:])
    xe = _expand_to(input, b[:dim] + (xshape[dim],) + b[dim + 1:])
    it = b[:dim] + (ishape[dim],) + b[dim + 1:]
    if it != ishape:
        idx = k["broadcast_to"](idx, it)
    return _out(gather(xe, dim, _make(idx, _dt.int64, k, input._dev)), out)


# -- masked_fill / masked_scatter -------------------------------------------------------------------
def _masked_fill(self, mask, value, inplace):
    what = "masked_fill_"
    _check_mask(mask, what)
    if mask._k is not self._k:
        raise device_mismatch(self, mask)
    k = self._k
    vt = None
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise RuntimeError(f"{what} only supports a 0-dimensional value tensor, but got tensor with "
                               f"{value.ndim} dimension(s).")
        if value._k is k:
            vt = value
            vd = cast_data(value, self._dtype)
        else:
            vd = _full0(k, value.item(), self._dtype)
    elif is_scalar(value):
        vd = _full0(k, scalar_value(value), self._dtype)
    else:
        raise TypeError(f"masked_fill(): argument 'value' must be Number or Tensor, not {type(value).__name__}")
    xshape = tuple(self._data.shape)
    shape = broadcast_shapes(xshape, mask._data.shape)
    grad_on = _gstate.enabled
    if inplace:
        if shape != xshape:
            raise RuntimeError(f"output with shape {list(xshape)} doesn't match the broadcast shape "
                               f"{list(shape)}")
        check_inplace(self, vt is not None and vt._rg)
        k["assign"](self._data, k["where"](mask._data, vd, self._data))
        self._bump_version()
        out = self
    else:
        data = k["where"](mask._data, vd, self._data)
        if tuple(data.shape) != shape:
            data = k["copy"](k["broadcast_to"](data, shape))
        out = _make(data, self._dtype, k, self._dev)
    s_rg, v_rg = self._rg, vt is not None and vt._rg
    if grad_on and (s_rg or v_rg) and self._dtype.category >= 2:
        m, sdt = mask, self._dtype
        vdt = vt._dtype if vt is not None else None

        def vjp(g):
            gs = _grad_to(masked_fill(g, m, 0), xshape, sdt) if s_rg else None
            if vt is None:
                return (gs,)
            gv = _grad_to(masked_fill(g, ~m, 0).sum(), (), vdt) if v_rg else None
            return (gs, gv)
        record("MaskedFillBackward0", out, (self, vt) if vt is not None else (self,), vjp)
        if inplace:
            rewritten(out)
    return out


def masked_fill(input, mask, value):
    """`input` with `value` (a number or 0-d tensor) where `mask` is True (broadcast together)."""
    return _masked_fill(input, mask, value, False)


def masked_fill_(self, mask, value):
    return _masked_fill(self, mask, value, True)


def _masked_scatter(self, mask, source, inplace):
    _check_mask(mask, "masked_scatter_")
    if not isinstance(source, Tensor):
        raise TypeError(f"masked_scatter(): argument 'source' must be Tensor, not {type(source).__name__}")
    if mask._k is not self._k:
        raise device_mismatch(self, mask)
    if source._k is not self._k:
        raise device_mismatch(self, source)
    if source._dtype is not self._dtype:
        raise RuntimeError(f"masked_scatter: expected self and source to have same dtypes but got "
                           f"{_tname(self._dtype)} and {_tname(source._dtype)}")
    xshape = tuple(self._data.shape)
    shape = broadcast_shapes(xshape, mask._data.shape)
    if inplace:
        if shape != xshape:
            raise RuntimeError(f"output with shape {list(xshape)} doesn't match the broadcast shape "
                               f"{list(shape)}")
        check_inplace(self)
        target = self
    else:
        target = _expand_to(self, shape).clone()
    p = _plan(target, (_expand_to(mask, shape),))
    n = p.out_shape[0]
    if source.numel() < n:
        raise RuntimeError("Number of elements of source < number of ones in mask")
    src = source.reshape(-1)
    if src._data.shape[0] != n:
        src = _take(src, _prefix_plan((n,)))
    return _put(target, p, src, accumulate=False, name="MaskedScatterBackward0")


def masked_scatter(input, mask, source):
    """`input` with the positions where `mask` is True filled, in order, from source's elements."""
    return _masked_scatter(input, mask, source, False)


def masked_scatter_(self, mask, source):
    return _masked_scatter(self, mask, source, True)


# -- gather / scatter / scatter_add ---------------------------------------------------------------------
def gather(input, dim, index, *, sparse_grad=False, out=None):
    """out[i][j][k] = input[index[i][j][k]][j][k] (dim 0), for every position of `index`."""
    data = _index_tensor_data(index, input, "gather")
    nd = input.ndim
    dim = wrap_dim(dim, nd)
    if nd == 0:
        if index.ndim > 1 or index.numel() != 1:
            raise RuntimeError("Index tensor must have the same number of dimensions as input tensor")
        r = gather(input.reshape(1), 0, index.reshape(1))
        return _out(r.reshape(tuple(index.shape)), out)
    if index.ndim != nd:
        raise RuntimeError("Index tensor must have the same number of dimensions as input tensor")
    k = input._k
    xshape, ishape = tuple(input._data.shape), tuple(data.shape)
    for d in range(nd):
        if d != dim and ishape[d] > xshape[d]:
            raise RuntimeError(f"Size does not match at dimension {d} expected index {list(ishape)} to be "
                               f"no larger than self {list(xshape)} apart from dimension {dim}")
    idx = _norm_index(k, data, xshape[dim], dim, negative=False, err=_oob_rt)
    src = input._data
    if any(ishape[d] != xshape[d] for d in range(nd) if d != dim):
        src = k["slice"](src, tuple(slice(None) if d == dim else slice(0, ishape[d]) for d in range(nd))
                         + (Ellipsis,))
    r = _make(k["gather"](src, idx, dim), input._dtype, k, input._dev)
    if input._rg and _gstate.enabled:
        it = _make(idx, _dt.int64, k, input._dev)
        dt, dev = input._dtype, input._dev
        record("GatherBackward0", r, (input,),
               lambda g: (scatter_add_(_zeros(xshape, dt, k, dev), dim, it, g),))   # fresh zeros: no clone
    return _out(r, out)


def _scatter_impl(self, dim, index, src, add, inplace, what):
    data = _index_tensor_data(index, self, what)
    nd = self.ndim
    dim = wrap_dim(dim, nd)
    if nd == 0:
        s = src.reshape(1) if isinstance(src, Tensor) else src
        r = _scatter_impl(self.reshape(1), 0, index.reshape(1), s, add, False, what).reshape(())
        if not inplace:
            return r
        return _put(self, _Plan((Ellipsis,), None, (), True), r, name="CopySlices")
    if index.ndim != nd:
        raise RuntimeError("Index tensor must have the same number of dimensions as self tensor")
    k = self._k
    xshape, ishape = tuple(self._data.shape), tuple(data.shape)
    st = None
    if isinstance(src, Tensor):
        if src._k is not k:
            raise device_mismatch(self, src)
        if src._dtype is not self._dtype:
            raise RuntimeError(f"{what}(): Expected self.dtype to be equal to src.dtype")
        sshape = tuple(src._data.shape)
        if src.ndim != nd or any(ishape[d] > sshape[d] or (d != dim and ishape[d] > xshape[d])
                                 for d in range(nd)):
            if src.ndim != nd:
                raise RuntimeError("Index tensor must have the same number of dimensions as src tensor")
            raise RuntimeError(f"Expected index {list(ishape)} to be no larger than self {list(xshape)} "
                               f"apart from dimension {dim} and to be no larger size than src {list(sshape)}")
        st = src
        sd = src._data
        if sshape != ishape:
            sd = k["slice"](sd, tuple(slice(0, n) for n in ishape) + (Ellipsis,))
    elif is_scalar(src):
        for d in range(nd):
            if d != dim and ishape[d] > xshape[d]:
                raise RuntimeError(f"Expected index {list(ishape)} to be no larger than self {list(xshape)} "
                                   f"apart from dimension {dim}")
        sd = k["broadcast_to"](_full0(k, scalar_value(src), self._dtype), ishape)
    else:
        raise TypeError(f"{what}(): argument 'src' must be Tensor or a number, not {type(src).__name__}")
    idx = _norm_index(k, data, xshape[dim], dim, negative=False, err=_oob_rt)
    target = self if inplace else self.clone()
    check_inplace(target, st is not None and st._rg)
    k["scatter_add" if add else "scatter"](target._data, idx, sd, dim)
    target._bump_version()
    s_rg, v_rg = target._rg, st is not None and st._rg
    if _gstate.enabled and (s_rg or v_rg):
        it = _make(idx, _dt.int64, k, self._dev)

        def vjp(g):
            gs = None
            if s_rg:
                gs = g if add else scatter(g, dim, it, 0)
            if st is None:
                return (gs,)
            gv = _pad_to(gather(g, dim, it), sshape) if v_rg else None
            return (gs, gv)
        record("ScatterAddBackward0" if add else ("ScatterBackward0" if st is not None else "ScatterBackward1"),
               target, (target, st) if st is not None else (target,), vjp)
        if inplace:
            rewritten(target)
    return target


def _pad_to(t, shape):
    """zeros(shape) with t in its leading corner (differentiable in t)."""
    if tuple(t._data.shape) == shape:
        return t
    z = _zeros(shape, t._dtype, t._k, t._dev)
    return _put(z, _prefix_plan(tuple(t._data.shape)), t)


def _scatter_src(src, value, what):
    if src is None and value is None:
        raise TypeError(f"{what}() missing 1 required positional argument: 'src' (or 'value')")
    return src if src is not None else value


def scatter(input, dim, index, src=None, *, value=None, reduce=None):
    """A copy of input with src's values (or a number) written at `index` along `dim`."""
    s = _scatter_src(src, value, "scatter")
    if reduce is None:
        return _scatter_impl(input, dim, index, s, False, False, "scatter")
    if reduce == "add":
        return _scatter_impl(input, dim, index, s, True, False, "scatter")
    raise NotImplementedError(f"scatter(reduce={reduce!r}) is not supported (only reduce='add')")


def scatter_(self, dim, index, src=None, *, value=None, reduce=None):
    s = _scatter_src(src, value, "scatter_")
    if reduce is None:
        return _scatter_impl(self, dim, index, s, False, True, "scatter_")
    if reduce == "add":
        return _scatter_impl(self, dim, index, s, True, True, "scatter_")
    raise NotImplementedError(f"scatter_(reduce={reduce!r}) is not supported (only reduce='add')")


def scatter_add(input, dim, index, src):
    """A copy of input with src's values added at `index` along `dim` (duplicates summed)."""
    if _amp.on:
        return _amp.run("scatter_add", scatter_add, (input, dim, index, src))
    if not isinstance(src, Tensor):
        raise TypeError(f"scatter_add(): argument 'src' must be Tensor, not {type(src).__name__}")
    return _scatter_impl(input, dim, index, src, True, False, "scatter_add")


def scatter_add_(self, dim, index, src):
    if not isinstance(src, Tensor):
        raise TypeError(f"scatter_add_(): argument 'src' must be Tensor, not {type(src).__name__}")
    return _scatter_impl(self, dim, index, src, True, True, "scatter_add_")


# -- index_add / index_copy / index_fill / index_put / put --------------------------------------------
def _index_dim(self, dim, index, what, negative):
    data = _index_tensor_data(index, self, what)
    if index.ndim > 1:
        raise IndexError(f"{what}(): Index is supposed to be a vector")
    nd = self.ndim
    dim = wrap_dim(dim, nd)
    if index.ndim == 0:
        data = self._k["reshape"](data, (1,))
    n = self._data.shape[dim] if nd else 1
    idx = _norm_index(self._k, data, n, dim, negative=negative, err=_oob_rt)
    return dim, _dim_plan(self._data.shape, dim, idx)


def _check_source(self, source, p, dim, what):
    if not isinstance(source, Tensor):
        raise TypeError(f"{what}(): argument 'source' must be Tensor, not {type(source).__name__}")
    if source._k is not self._k:
        raise device_mismatch(self, source)
    if source._dtype is not self._dtype:
        raise RuntimeError(f"{what}(): self ({_tname(self._dtype)}) and source ({_tname(source._dtype)}) "
                           f"must have the same scalar type")
    ss = tuple(source._data.shape)
    if ss != p.out_shape and not (self.ndim == 0 and _numel(ss) == 1 and _numel(p.out_shape) == 1):
        n = p.out_shape[dim] if self.ndim else p.out_shape[0]
        if len(ss) == self.ndim and self.ndim and ss[dim] != n:
            raise RuntimeError(f"{what}(): Number of indices ({n}) should be equal to source.size(dim): "
                               f"({ss[dim]}), for dim: {dim}")
        raise RuntimeError(f"{what}(): source of shape {list(ss)} doesn't match the expected shape "
                           f"{list(p.out_shape)} (self's shape with dim {dim} sized as the index)")


def _index_add(self, dim, index, source, alpha, inplace):
    what = "index_add_"
    dim, p = _index_dim(self, dim, index, what, False)
    _check_source(self, source, p, dim, what)
    v = source if alpha == 1 else source * alpha
    return _put(self if inplace else self.clone(), p, v, accumulate=True, name="IndexAddBackward0")


def index_add(input, dim, index, source, *, alpha=1):
    """A copy of input with alpha * source added at positions `index` along `dim` (duplicates summed)."""
    return _index_add(input, dim, index, source, alpha, False)


def index_add_(self, dim, index, source, *, alpha=1):
    return _index_add(self, dim, index, source, alpha, True)


def _index_copy(self, dim, index, source, inplace):
    what = "index_copy_"
    dim, p = _index_dim(self, dim, index, what, False)
    _check_source(self, source, p, dim, what)
    return _put(self if inplace else self.clone(), p, source, accumulate=False, name="IndexCopyBackward0")


def index_copy(input, dim, index, source):
    """A copy of input with source's slices written at positions `index` along `dim`."""
    if _amp.on:
        return _amp.run("index_copy", index_copy, (input, dim, index, source))
    return _index_copy(input, dim, index, source, False)


def index_copy_(self, dim, index, source):
    return _index_copy(self, dim, index, source, True)


def _index_fill(self, dim, index, value, inplace):
    what = "index_fill_"
    dim, p = _index_dim(self, dim, index, what, True)
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise RuntimeError(f"{what} only supports a 0-dimensional value tensor, but got tensor with "
                               f"{value.ndim} dimension(s).")
    elif not is_scalar(value):
        raise TypeError(f"index_fill(): argument 'value' must be Number or Tensor, not {type(value).__name__}")
    return _put(self if inplace else self.clone(), p, value, accumulate=False, name="IndexFillBackward0")


def index_fill(input, dim, index, value):
    """A copy of input with `value` (a number or 0-d tensor) at positions `index` along `dim`."""
    return _index_fill(input, dim, index, value, False)


def index_fill_(self, dim, index, value):
    return _index_fill(self, dim, index, value, True)


def _index_put(self, indices, values, accumulate, inplace):
    if not isinstance(indices, (tuple, list)):
        raise TypeError(f"index_put(): argument 'indices' must be tuple of Tensors, not "
                        f"{type(indices).__name__}")
    if isinstance(values, Tensor) and values._dtype is not self._dtype:
        raise RuntimeError(f"Index put requires the source and destination dtypes match, got "
                           f"{_tname(self._dtype)} for the destination and {_tname(values._dtype)} for "
                           f"the source.")
    key = tuple(slice(None) if i is None else i for i in indices)
    p = _plan(self, key)
    return _put(self if inplace else self.clone(), p, values, accumulate=accumulate,
                name="IndexPutBackward0")


def index_put(input, indices, values, accumulate=False):
    """A copy of input with input[indices] = values (accumulate: +=, duplicates summed)."""
    if _amp.on:
        return _amp.run("index_put", index_put, (input, indices, values, accumulate))
    return _index_put(input, indices, values, accumulate, False)


def index_put_(self, indices, values, accumulate=False):
    return _index_put(self, indices, values, accumulate, True)


def _put_flat(self, index, source, accumulate, inplace):
    what = "put_"
    data = _index_tensor_data(index, self, what)
    if not isinstance(source, Tensor):
        raise TypeError(f"{what}(): argument 'source' must be Tensor, not {type(source).__name__}")
    if source._dtype is not self._dtype:
        raise RuntimeError(f"{what}(): self and source expected to have the same dtype, but got "
                           f"self.dtype = {_tname(self._dtype)} and source.dtype = {_tname(source._dtype)}")
    if source.numel() != index.numel():
        raise RuntimeError(f"{what}(): Expected source and index to have the same number of elements, but "
                           f"got source.numel() = {source.numel()}, index.numel() = {index.numel()}")
    k = self._k
    shape = tuple(self._data.shape)
    idx = _norm_index(k, data, _numel(shape), 0, err=_oob_flat)
    if not shape:
        p = _Plan((None, Ellipsis), (idx,), idx.shape, False)
    else:
        coords, rem = [], idx
        for n in reversed(shape):
            if n == 0:
                coords.append(rem)
                continue
            coords.append(k["remainder"](rem, n))
            rem = k["floor_divide"](rem, n)
        p = _Plan((Ellipsis,), tuple(reversed(coords)), idx.shape, True)
    v = source if tuple(source._data.shape) == tuple(idx.shape) else source.reshape(tuple(idx.shape))
    return _put(self if inplace else self.clone(), p, v, accumulate=accumulate, name="PutBackward0")


def put_(self, index, source, accumulate=False):
    """self read as 1-d: self[index] = source (accumulate: +=); negative indices count from the end."""
    return _put_flat(self, index, source, accumulate, True)


def put(input, index, source, accumulate=False):
    return _put_flat(input, index, source, accumulate, False)


# -- nonzero -----------------------------------------------------------------------------------------
def nonzero(input, *, as_tuple=False, out=None):
    """Indices of the nonzero elements: an (n, ndim) int64 tensor, or one 1-d tensor per dimension."""
    k, dev = input._k, input._dev
    data = input._data
    nd = len(data.shape)
    if nd == 0:
        data = k["reshape"](data, (1,))
    arrs = [a if _is_int64(a) else k["astype"](a, "int64") for a in k["nonzero"](data)]
    if as_tuple:
        return tuple(_make(a, _dt.int64, k, dev) for a in arrs)
    n = arrs[0].shape[0]
    if nd == 0:
        r = k["full"]((n, 0), 0, "int64")
    elif nd == 1:
        r = k["reshape"](arrs[0], (n, 1))
    else:
        r = k["concat"]([k["reshape"](a, (n, 1)) for a in arrs], 1)
    return _out(_make(r, _dt.int64, k, dev), out)


def argwhere(input):
    """nonzero(input): an (n, ndim) tensor of the indices of nonzero elements."""
    return nonzero(input)


def _out(r, out):
    if out is None:
        return r
    from .pointwise import _out as pointwise_out
    return pointwise_out(r, out)


def _attach():
    T = Tensor
    T.__getitem__ = getitem
    T.__setitem__ = setitem
    for name in ("index_select", "masked_select", "masked_fill", "masked_fill_", "masked_scatter",
                 "masked_scatter_", "gather", "scatter", "scatter_", "scatter_add", "scatter_add_",
                 "index_add", "index_add_", "index_copy", "index_copy_", "index_fill", "index_fill_",
                 "index_put", "index_put_", "take", "take_along_dim", "put_", "put", "nonzero", "argwhere"):
        setattr(T, name, globals()[name])


_attach()

PUBLIC = ["index_select", "masked_select", "masked_fill", "masked_scatter", "gather", "scatter",
          "scatter_add", "index_add", "index_copy", "index_fill", "index_put", "index_put_", "take",
          "take_along_dim", "put", "nonzero", "argwhere"]
