"""Helpers every op family shares: wrapping arrays, operand preparation, broadcasting,
reducing gradients to an input's shape, and in-place bookkeeping."""
from __future__ import annotations

import numbers

from .. import dtypes as _dt
from ..autograd import grad_mode
from ..autograd.graph import needs_grad, record, record_multi  # noqa: F401  (re-exported for ops)
from ..tensor import Size, Tensor, _make, _wrap_dim  # noqa: F401

_gstate = grad_mode.state
_PROMOTE = _dt._PROMOTE
_result_type = _dt.result_type
_scalar_dtype = _dt.scalar_dtype

wrap_dim = _wrap_dim


def is_scalar(x) -> bool:
    return isinstance(x, numbers.Number) or _is_np_scalar(x)


def _is_np_scalar(x):
    return hasattr(x, "dtype") and hasattr(x, "item") and getattr(x, "shape", None) == () \
        and not isinstance(x, Tensor)


def scalar_value(x):
    return x.item() if _is_np_scalar(x) else x


# -- broadcasting ---------------------------------------------------------------------------
_bcast_cache: dict = {}
# tensorplug.utils.backcompat.broadcast_warning: a check of every newly computed broadcast (None: off;
# when on, nothing is cached so that each broadcast is checked), and whether the deprecated 1-d
# pointwise fallback ever ran (then sum_to reshapes its gradients back)
_bcast_hook = None
_fell_back = False


def broadcast_shapes(a, b):
    """The broadcast of two shapes (tuples), with PyTorch's error message."""
    key = (a, b)
    r = _bcast_cache.get(key)
    if r is not None:
        return r
    n = max(len(a), len(b))
    pa = (1,) * (n - len(a)) + tuple(a)
    pb = (1,) * (n - len(b)) + tuple(b)
    out = []
    for i, (x, y) in enumerate(zip(pa, pb)):
        if x == y or y == 1:
            out.append(x)
        elif x == 1:
            out.append(y)
        else:
            raise RuntimeError(f"The size of tensor a ({x}) must match the size of tensor b ({y}) "
                               f"at non-singleton dimension {i}")
    r = tuple(out)
    if _bcast_hook is not None:
        _bcast_hook(a, b)
    elif len(_bcast_cache) < 4096:
        _bcast_cache[key] = r
    return r


def broadcast_all_shapes(*shapes):
    r = ()
    for s in shapes:
        r = broadcast_shapes(r, tuple(s))
    return r


# -- devices and operands -------------------------------------------------------------------
class SparseOpError(NotImplementedError):
    """A dense op reached a sparse COO tensor (tensorplug.sparse raises it; the functional add/sub/mul/div
    catch it and hand over to the sparse ops)."""


def device_mismatch(a, b):
    if a.is_sparse or b.is_sparse:          # (a sparse tensor's kernel table is its own: tensorplug.sparse)
        from ..sparse._tensor import unsupported_mix
        return unsupported_mix(a if a.is_sparse else b)
    if a._dev is not b._dev:
        return RuntimeError(f"Expected all tensors to be on the same device, but found at least two "
                            f"devices, {a._dev} and {b._dev}!")
    return RuntimeError(f"tensors on {a._dev} come from two different backends "
                        f"({a.backend.name!r} and {b.backend.name!r}); move one with .to() first")


def check_same_device(*tensors):
    first = tensors[0]
    for t in tensors[1:]:
        if t._k is not first._k:
            raise device_mismatch(first, t)


def cast_data(t, dtype):
    """t's array in `dtype` (no copy when it already is)."""
    return t._data if t._dtype is dtype else t._k["astype"](t._data, dtype.name)


def as_tensor_like(x, like, dtype=None):
    """A Python scalar, sequence or array as a tensor on `like`'s device."""
    if isinstance(x, Tensor):
        return x
    from .creation import tensor
    return tensor(x, dtype=dtype, device=like._dev)


def prep_binary(a, b, float_result=False):
    """Operands of a binary op as (a data, b data, dtype, kernel table, device, result shape).

    One of a, b is a Tensor; the other is a Tensor or a Python/NumPy scalar (passed to the
    kernel as a Python scalar). Both are converted to the promoted dtype (a floating type
    when `float_result`). The result shape is the broadcast of two tensors' shapes (already
    computed for the broadcasting check), None for a tensor and a scalar: checked backends'
    results are compared with it (tensorplug.dispatch.kernel_check)."""
    if a.__class__ is Tensor or isinstance(a, Tensor):
        t = a
        if b.__class__ is Tensor or isinstance(b, Tensor):
            if a._k is not b._k:
                raise device_mismatch(a, b)
            sa, sb = a._data.shape, b._data.shape
            if sa != sb:
                try:
                    sa = broadcast_shapes(sa, sb)
                except RuntimeError as e:
                    dt = _result_type(a, b)
                    dt = _dt._default[0] if float_result and dt.category < 2 else dt
                    return cast_data(a, dt), _not_broadcastable(a, b, dt, e), dt, a._k, a._dev, None
            if a._dtype is b._dtype:
                dt = a._dtype
                if not (float_result and dt.category < 2):
                    return a._data, b._data, dt, a._k, a._dev, sa
                dt = _dt._default[0]
            else:
                dt = _result_type(a, b)
                if float_result and dt.category < 2:
                    dt = _dt._default[0]
            return cast_data(a, dt), cast_data(b, dt), dt, a._k, a._dev, sa
        cls = b.__class__
        if cls is float or cls is int:
            # a Python float or int with a floating tensor (or a float result): the common case,
            # without the general scalar steps (same result as below)
            dt = a._dtype
            c = dt.category
            if c >= 2 or float_result or cls is float:
                if c < 2:
                    dt = _dt._default[0]
                    c = 2
                return cast_data(a, dt), (float(b) if c == 2 else complex(b)), dt, a._k, a._dev, None
            if c == 1 and dt.is_signed and dt.itemsize >= 4 and -2**31 <= b < 2**31:
                return a._data, b, dt, a._k, a._dev, None       # an int that needs no wrapping
        if not is_scalar(b):
            raise TypeError(f"unsupported operand type: {type(b).__name__} (expected a Tensor or a number)")
        b = scalar_value(b)
        dt = _combine_scalar(a._dtype, b)
        if float_result and dt.category < 2:
            dt = _dt._default[0]
        return cast_data(a, dt), _scalar_as(b, dt), dt, a._k, a._dev, None
    t = b
    cls = a.__class__
    if cls is float or cls is int:
        dt = t._dtype
        c = dt.category
        if c >= 2 or float_result or cls is float:
            if c < 2:
                dt = _dt._default[0]
                c = 2
            return (float(a) if c == 2 else complex(a)), cast_data(t, dt), dt, t._k, t._dev, None
    if not is_scalar(a):
        raise TypeError(f"unsupported operand type: {type(a).__name__} (expected a Tensor or a number)")
    a = scalar_value(a)
    dt = _combine_scalar(t._dtype, a)
    if float_result and dt.category < 2:
        dt = _dt._default[0]
    return _scalar_as(a, dt), cast_data(t, dt), dt, t._k, t._dev, None


def _not_broadcastable(a, b, dt, error):
    """b's data for the deprecated 1-d pointwise fallback of tensorplug.utils.backcompat, or `error`."""
    from ..utils.backcompat import pointwise_fallback
    return pointwise_fallback(a, b, dt, error)


def _combine_scalar(tdt, s):
    sdt = bool if isinstance(s, bool) else (int if isinstance(s, int) else
                                            complex if isinstance(s, complex) else float)
    if sdt is float:
        return tdt if tdt.category >= 2 else _dt._default[0]
    if sdt is int:
        return tdt if tdt.category >= 1 else _dt.int64
    if sdt is complex:      # a float tensor keeps its precision: float64 * 1j -> complex128
        return tdt if tdt.category == 3 else _dt._combine(tdt, _dt.scalar_dtype(s))
    return tdt


def _scalar_as(s, dt):
    if dt.category == 2:
        return float(s)
    if dt.category == 3:
        return complex(s)
    if dt.category == 1:
        s = int(s)
        bits = 8 * dt.itemsize
        lo = -(1 << (bits - 1)) if dt.is_signed else 0
        if not lo <= s < lo + (1 << bits):
            s = (s - lo) % (1 << bits) + lo      # wrap like a C cast, as PyTorch does
        return s
    return bool(s)


# -- autograd helpers -----------------------------------------------------------------------
def sum_to(g, shape):
    """Reduce gradient g (a broadcast result) back to `shape` with differentiable ops."""
    gs = g._data.shape
    shape = tuple(shape)
    if gs == shape:
        return g
    if _fell_back:              # g may be the gradient of a 1-d pointwise fallback (utils.backcompat)
        from ..utils.backcompat import fallback_grad
        r = fallback_grad(g, shape)
        if r is not None:
            return r
    lead = len(gs) - len(shape)
    axes = tuple(range(lead)) + tuple(i + lead for i, s in enumerate(shape) if s == 1 and gs[i + lead] != 1)
    if axes:
        g = g.sum(dim=axes, keepdim=True)
    if lead:
        g = g.reshape(shape)
    return g


def grad_for(g, t):
    """Gradient g shaped and typed for input t."""
    if g._dtype is t._dtype and g._data.shape == t._data.shape:
        return g                # the common case: nothing to reduce or cast
    g = sum_to(g, t._data.shape)
    if g._dtype is not t._dtype:
        g = cast_grad(g, t._dtype)
    return g


def cast_grad(g, dt):
    """g as dtype dt; a real input of a complex computation gets the real part (no discard warning)."""
    if g._dtype.category == 3 and dt.category != 3:
        g = g.real
    return g.to(dt)


def zeros_like_grad(t):
    return _make(t._k["full"](t._data.shape, 0, t._dtype.name), t._dtype, t._k, t._dev)


# -- in-place bookkeeping -------------------------------------------------------------------
def check_inplace(t, incoming_grad=False):
    """Raise if an in-place op on t would corrupt autograd. `incoming_grad`: the written value
    requires grad. Every in-place path that passes this check calls rewritten(t) after recording t's
    new history."""
    if t._base is not None:
        steps = t._vsteps
        if steps is not None and any(step[0] == "broadcast_to" for step in steps):
            raise RuntimeError("unsupported operation: more than one element of the written-to tensor refers to "
                               "a single memory location. Please clone() the tensor before performing the "
                               "operation.")
    if _gstate.enabled:
        if t._rg and t.grad_fn is None:
            raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
        if t._base is not None:
            from . import view_inplace
            view_inplace.check(t, incoming_grad)


def rewritten(t):
    """t got new history from an in-place op. A view: rebase its root's history onto it
    (view_inplace.py). A root: its existing views' histories are now stale (remade when used)."""
    if t._rg and _gstate.enabled:
        if t._base is not None:
            from . import view_inplace
            view_inplace.rebase(t)
        else:
            t._rebases += 1


def snapshot(t):
    """A handle on t's current value and graph position that later in-place writes don't touch."""
    s = _make(t._k["copy"](t._data), t._dtype, t._k, t._dev)
    if t._rg:
        s.grad_fn, s._out_nr, s._rg = t.grad_fn, t._out_nr, True
    return s


def commit_inplace(t, result):
    """Write `result` (computed out of place) into t, adopting its graph node."""
    rs, ts = result._data.shape, t._data.shape
    if rs != ts:
        raise RuntimeError(f"output with shape {list(ts)} doesn't match the broadcast shape {list(rs)}")
    check_cast(result._dtype, t._dtype)
    t._k["assign"](t._data, result._data)
    t._bump_version()
    if result._rg and _gstate.enabled:
        if result.grad_fn is None:      # a leaf (copy_(w)): t must not become a leaf itself
            record("CopyBackwards", t, (result,), lambda g: (g,))
        else:
            t.grad_fn, t._out_nr, t._rg = result.grad_fn, result._out_nr, True
    elif t._rg and _gstate.enabled:
        # overwritten by values that don't depend on the old ones: no gradient flows back
        record("FillBackward0", t, (t,), lambda g: (None,))
    rewritten(t)
    return t


def check_cast(src, dst):
    if src.category > dst.category:
        names = {0: "Bool", 1: "Long", 2: "Float", 3: "Complex"}
        raise RuntimeError(f"result type {src.name} can't be cast to the desired output type {dst.name} "
                           f"({names[src.category]} -> {names[dst.category]} would lose information)")


def normalize_dims(dim, ndim):
    """dim (None, int or sequence) as a sorted tuple of non-negative axes, or None for all."""
    if dim is None:
        return None
    if isinstance(dim, (list, tuple)):
        if len(dim) == 0:
            return None
        axes = tuple(sorted({wrap_dim(d, ndim) for d in dim}))
        if len(axes) != len(dim):
            raise RuntimeError(f"dim {list(dim)} appears multiple times in the list of dims")
        return axes
    return (wrap_dim(dim, ndim),)
