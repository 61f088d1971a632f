"""Reductions, scans and sorting: sum mean prod max min amax argmax var std median logsumexp norm
any all cumsum cumprod cummax sort topk kthvalue unique softmax ... (dim, keepdim=False).

Each op validates its arguments, computes with kernels (or with Tensor ops under no_grad), and
when its input requires grad records a vjp written in Tensor ops, so it can be differentiated
again. `dim` is an int, a tuple of ints, or None for every dimension; 0-d inputs accept dim 0/-1.
"""
from __future__ import annotations

import builtins
import collections
import math
import warnings

from .. import dtypes as _dt
from ..amp.state import state as _amp
from ..autograd import grad_mode
from ._core import Tensor, _gstate, _make, cast_data, cast_grad, normalize_dims, record, wrap_dim
from ._float32 import in_float32
from .shape import make_view
from .complex import cj, not_for_complex

_INF = float("inf")


class _KeepdimDefault:
    """keepdim's default (False), told apart from an explicit False for utils.backcompat.keepdim_warning."""
    __slots__ = ()

    def __bool__(self):
        return False

    def __repr__(self):
        return "False"


_NO_KEEPDIM = _KeepdimDefault()
_WARN_KEEPDIM = [False]         # tensorplug.utils.backcompat.keepdim_warning.enabled


def _warn_keepdim(name, dim):
    """PyTorch 0.2's warning for a reduction over a dim without keepdim (not for full reductions, nor
    for var(x, True), whose second argument is `unbiased`, nor for max(x, other))."""
    if dim is not None and not isinstance(dim, (bool, Tensor)):
        from ..utils.backcompat._keepdim import warn_keepdim
        warn_keepdim(name)


# -- return types -----------------------------------------------------------------------------
class return_types:
    """Named tuples returned by ops with several outputs (like `torch.return_types`)."""


def _return_type(name, fields=("values", "indices")):
    cls = collections.namedtuple(name, fields)
    cls.__module__ = __name__
    cls.__qualname__ = f"return_types.{name}"

    def __repr__(self):
        body = ",\n".join(f"{f}={v!r}" for f, v in zip(fields, self))
        return f"tensorplug.return_types.{name}(\n{body})"
    cls.__repr__ = __repr__
    setattr(return_types, name, cls)
    return cls


for _n in ("max", "min", "median", "nanmedian", "mode", "kthvalue", "sort", "topk", "cummax", "cummin"):
    _return_type(_n)
_return_type("aminmax", ("min", "max"))


# -- helpers -----------------------------------------------------------------------------------
def _axes(input, dim):
    """(input shape, normalized axes or None for all). A 0-d input reduces to itself."""
    shape = input._data.shape
    axes = normalize_dims(dim, len(shape))
    if not shape:
        axes = None
    return shape, axes


def _count(shape, axes):
    n = 1
    for i, s in enumerate(shape):
        if axes is None or i in axes:
            n *= s
    return n


def _reduced_shape(shape, axes):
    return () if axes is None else tuple(s for i, s in enumerate(shape) if i not in axes)


def _kept_shape(shape, axes):
    return tuple(1 if axes is None or i in axes else s for i, s in enumerate(shape))


def _unsqueeze_to(g, shape, axes):
    """Reshape a reduced gradient so it broadcasts against the input `shape`."""
    if axes is None:
        return g.reshape((1,) * len(shape))
    return g.reshape(_kept_shape(shape, axes))


def _keep(t, shape, axes, keepdim):
    """A reduced tensor shaped to broadcast against the input (adds back reduced dims)."""
    return t if keepdim else _unsqueeze_to(t, shape, axes)


def _expand_grad(g, shape, axes, keepdim):
    if g._data.shape == ():
        if shape and not _gstate.enabled:
            # what g.expand(*shape) returns when nothing is recorded, without its argument checks
            # (shape is an existing tensor's): a large part of a tiny backward pass otherwise
            return make_view(g, g._k["broadcast_to"](g._data, shape), ("broadcast_to", (shape,)))
        return g.expand(*shape)         # a 0-d gradient expands to any shape directly
    return _keep(g, shape, axes, keepdim).expand(*shape)


def _dtype_label(dt):
    return dt._legacy[:-len("Tensor")]


def _wrap(t, data, dtype=None):
    return _make(data, t._dtype if dtype is None else dtype, t._k, t._dev)


def _check_nonempty(name, shape, axes):
    if axes is None:
        if _count(shape, None) == 0:
            raise RuntimeError(f"{name}(): Expected reduction dim to be specified for input.numel() == 0. "
                               "Specify the reduction dim with the 'dim' argument.")
        return
    for a in axes:
        if shape[a] == 0:
            raise IndexError(f"{name}(): Expected reduction dim {a} to have non-zero size.")


def _require_float(t, name):
    if t._dtype.category != 2:
        raise RuntimeError(f"{name}: expected a floating-point tensor, got {t._dtype!r}")


def _as_float(t):
    """t converted to the default float dtype when it is an integer or bool tensor."""
    return t if t._dtype.category == 2 else t.to(_dt.get_default_dtype())


def _isnan_data(t):
    k = t._k
    if t._dtype.category != 2:
        return k["full"](t._data.shape, False, "bool")
    return k["isnan"](t._data)


def _zeros_of(t):
    return _make(t._k["full"](t._data.shape, 0, t._dtype.name), t._dtype, t._k, t._dev)


def _index_tensor(like, data):
    return _make(data, _dt.int64, like._k, like._dev)


def _on_0d(fn, input, *args, **kwargs):
    """Run a (values, indices) op on a 0-d input as on shape (1,), dim 0, and squeeze back."""
    v, i = fn(input.reshape(1), 0, *args, **kwargs)
    return v.reshape(()), i.reshape(())


# -- differentiable gather / scatter_add (each one's vjp is the other) -------------------------
def _gather(x, d, idx, name="GatherBackward0"):
    """x's values at int64 indices `idx` (a Tensor with x's ndim) along dim d."""
    r = _make(x._k["gather"](x._data, idx._data, d), x._dtype, x._k, x._dev)
    if _gstate.enabled and x._rg:
        shape = x._data.shape
        record(name, r, (x,), lambda g: (_scatter_add_new(shape, d, idx, g),))
    return r


def _scatter_add_new(shape, d, idx, src):
    """zeros(shape).scatter_add(d, idx, src) with idx and src of one shape."""
    k = src._k
    data = k["full"](tuple(shape), 0, src._dtype.name)
    if src._data.shape != idx._data.shape:
        src = src.expand(*idx._data.shape)
    k["scatter_add"](data, idx._data, src._data, d)
    r = _make(data, src._dtype, k, src._dev)
    if _gstate.enabled and src._rg:
        record("ScatterAddBackward0", r, (src,), lambda g: (_gather(g, d, idx),))
    return r


def _select(x, d, idx, keepdim, name):
    """(values, indices) of a value-selecting reduction along d; idx has size 1 along d.
    The gradient flows to the selected index."""
    k = x._k
    shape = x._data.shape
    vals = k["gather"](x._data, idx._data, d)
    if not keepdim:
        out_shape = shape[:d] + shape[d + 1:]
        vals = k["reshape"](vals, out_shape)
        out_idx = _index_tensor(x, k["reshape"](idx._data, out_shape))
    else:
        out_idx = idx
    r = _wrap(x, vals)
    if _gstate.enabled and x._rg:
        kept = idx._data.shape
        record(name, r, (x,), lambda g: (_scatter_add_new(shape, d, idx, g.reshape(kept)),))
    return r, out_idx


def _evenly(g, x, r, axes=None, keepdim=False):
    """Gradient of a value-selecting reduction split evenly among the elements equal to it."""
    shape = x._data.shape
    rk = _keep(r, shape, axes, keepdim)
    from .pointwise import isnan
    mask = (x == rk) | (isnan(x) & isnan(rk))
    mask = mask.to(g.dtype)
    count = mask.sum(axes, keepdim=True)
    return _expand_grad(g, shape, axes, keepdim) * mask / count


# -- sums and means -----------------------------------------------------------------------------
def sum(input, dim=None, keepdim=_NO_KEEPDIM, *, dtype=None):
    """Sum over `dim` (int, tuple or None for all). Integer and bool inputs sum in int64.
    >>> sum(tensor([[1, 2], [3, 4]]), 1) -> tensor([3, 7])"""
    if keepdim is _NO_KEEPDIM:
        keepdim = False
        if _WARN_KEEPDIM[0]:
            _warn_keepdim("sum", dim)
    if _amp.on:
        return _amp.run("sum", sum, (input, dim, keepdim), {"dtype": dtype})
    shape, axes = _axes(input, dim)
    if dtype is not None:
        dt = _dt.as_dtype(dtype)
    else:
        dt = input._dtype if input._dtype.category >= 2 else _dt.int64
    k = input._k
    data = input._data if dt is input._dtype else k["astype"](input._data, dt.name)
    r = _make(k["sum"](data, axes, keepdim), dt, k, input._dev)
    if input._rg and _gstate.enabled and dt.category >= 2:
        _record_sum(r, input, shape, axes, keepdim)
    return r


def _record_sum(r, x, shape, axes, keepdim):
    # (its own function: sum itself then makes no closure cells, which a no-grad sum would pay for)
    def vjp(g):
        g = _expand_grad(g, shape, axes, keepdim)
        return (g if g._dtype is x._dtype else cast_grad(g, x._dtype),)
    record("SumBackward1" if axes is not None else "SumBackward0", r, (x,), vjp)


def _mean_dtype(input, dtype):
    if dtype is not None:
        dt = _dt.as_dtype(dtype)
        if dt.category < 2:
            raise RuntimeError("mean(): could not infer output dtype. Optional dtype must be either a "
                               f"floating point or complex dtype. Got: {_dtype_label(dt)}")
        return dt
    if input._dtype.category < 2:
        raise RuntimeError("mean(): could not infer output dtype. Input dtype must be either a floating "
                           f"point or complex dtype. Got: {_dtype_label(input._dtype)}")
    return input._dtype


def mean(input, dim=None, keepdim=_NO_KEEPDIM, *, dtype=None):
    """Arithmetic mean over `dim` (floating-point inputs, or pass dtype=). Empty -> nan.
    >>> mean(tensor([[1., 2.], [3., 4.]]), 0) -> tensor([2., 3.])"""
    if keepdim is _NO_KEEPDIM:
        keepdim = False
        if _WARN_KEEPDIM[0]:
            _warn_keepdim("mean", dim)
    dt = _mean_dtype(input, dtype)
    x = input if dt is input._dtype else input.to(dt)
    shape, axes = _axes(x, dim)
    n = _count(shape, axes)
    k = x._k
    if dt is _dt.bfloat16:      # PyTorch divides the float32 sum and rounds once
        s = k["sum"](x._data, axes, keepdim, dtype="float32")
        data = k["full"](s.shape, math.nan, dt.name) if n == 0 else k["astype"](k["div"](s, float(n)), dt.name)
    else:
        s = k["sum"](x._data, axes, keepdim)
        data = k["full"](s.shape, math.nan, dt.name) if n == 0 else k["div"](s, float(n))
    r = _make(data, dt, k, x._dev)
    if x._rg and _gstate.enabled:
        record("MeanBackward1" if axes is not None else "MeanBackward0", r, (x,),
               lambda g: (_expand_grad(g, shape, axes, keepdim) / float(builtins.max(n, 1)),))
    return r


def nansum(input, dim=None, keepdim=False, *, dtype=None):
    """Sum treating NaN as zero."""
    if input._dtype.category == 3:
        raise RuntimeError("nansum on CPU does not support complex inputs")
    if input._dtype.category == 2:
        from .pointwise import isnan, where
        input = where(isnan(input), 0.0, input)
    return sum(input, dim, keepdim, dtype=dtype)


def nanmean(input, dim=None, keepdim=False, *, dtype=None):
    """Mean of the non-NaN elements."""
    dt = _mean_dtype(input, dtype)
    x = input if dt is input._dtype else input.to(dt)
    from .pointwise import isnan
    notnan = ~isnan(x)
    return nansum(x, dim, keepdim) / notnan.sum(dim, keepdim).to(dt)


def prod(input, dim=None, keepdim=_NO_KEEPDIM, *, dtype=None):
    """Product over `dim`. Integer and bool inputs multiply in int64. Empty -> 1.
    The gradient is exact when inputs contain zeros."""
    if keepdim is _NO_KEEPDIM:
        keepdim = False
        if _WARN_KEEPDIM[0]:
            _warn_keepdim("prod", dim)
    if _amp.on:
        return _amp.run("prod", prod, (input, dim, keepdim), {"dtype": dtype})
    shape, axes = _axes(input, dim)
    if dtype is not None:
        dt = _dt.as_dtype(dtype)
    else:
        dt = input._dtype if input._dtype.category >= 2 else _dt.int64
    x = input if dt is input._dtype else input.to(dt)
    k = x._k
    r = _make(k["prod"](x._data, axes, keepdim), dt, k, x._dev)
    if x._rg and _gstate.enabled and dt.category >= 2:
        from .pointwise import where

        def vjp(g):
            ge = _expand_grad(g, shape, axes, keepdim)
            rk = _keep(r, shape, axes, keepdim)
            zero = x == 0
            x_safe = where(zero, 1.0, x)
            # where x == 0 the product of the others is nonzero only if x is the slice's sole zero
            n_zero = zero.sum(axes, keepdim=True)
            others_at_zero = where(n_zero == 1, prod(x_safe, axes, keepdim=True), 0.0)
            return (ge * cj(where(zero, others_at_zero, rk / x_safe)),)
        record("ProdBackward1" if axes is not None else "ProdBackward0", r, (x,), vjp, saved=(x, r))
    return r


# -- max / min ----------------------------------------------------------------------------------
def _full_minmax(input, kname, name):
    if input._dtype.category == 3:
        raise not_for_complex(f"{kname}_all", input._dtype)
    shape = input._data.shape
    _check_nonempty(name, shape, None)
    r = _wrap(input, input._k[kname](input._data, None, False))
    if input._rg and _gstate.enabled:
        x = input
        record(f"{name.capitalize()}Backward1", r, (x,), lambda g: (_evenly(g, x, r),), saved=(x, r))
    return r


def _minmax_dim(input, dim, keepdim, argk, name):
    if not isinstance(dim, int) and not hasattr(dim, "__index__"):
        raise TypeError(f"{name}(): argument 'dim' must be int, not {type(dim).__name__}")
    if input._dtype.category == 3:
        raise RuntimeError(f"{name}(): does not support complex input")
    if input.ndim == 0:
        wrap_dim(dim, 0)
        return getattr(return_types, name)(*_on_0d(_minmax_dim, input, True, argk, name))
    shape = input._data.shape
    d = wrap_dim(dim, len(shape))
    _check_nonempty(name, shape, (d,))
    k = input._k
    idx = _index_tensor(input, k[argk](input._data, d, True))
    return getattr(return_types, name)(*_select(input, d, idx, keepdim, f"{name.capitalize()}Backward0"))


def max(input, dim=None, keepdim=_NO_KEEPDIM, *, other=None):
    """max(x) -> 0-d maximum (NaN propagates); max(x, dim, keepdim=False) -> (values, indices);
    max(x, other) -> elementwise maximum."""
    if keepdim is _NO_KEEPDIM:
        keepdim = False
        if _WARN_KEEPDIM[0]:
            _warn_keepdim("max", dim)
    if isinstance(dim, Tensor) or other is not None:
        from .pointwise import maximum
        return maximum(input, other if other is not None else dim)
    if dim is None:
        return _full_minmax(input, "max", "max")
    return _minmax_dim(input, dim, keepdim, "argmax", "max")


def min(input, dim=None, keepdim=_NO_KEEPDIM, *, other=None):
    """min(x) -> 0-d minimum (NaN propagates); min(x, dim, keepdim=False) -> (values, indices);
    min(x, other) -> elementwise minimum."""
    if keepdim is _NO_KEEPDIM:
        keepdim = False
        if _WARN_KEEPDIM[0]:
            _warn_keepdim("min", dim)
    if isinstance(dim, Tensor) or other is not None:
        from .pointwise import minimum
        return minimum(input, other if other is not None else dim)
    if dim is None:
        return _full_minmax(input, "min", "min")
    return _minmax_dim(input, dim, keepdim, "argmin", "min")


def _amaxmin(input, dim, keepdim, kname, name):
    if input._dtype.category == 3:
        raise not_for_complex(f"{kname}_values_cpu", input._dtype)
    shape, axes = _axes(input, dim)
    _check_nonempty(name, shape, axes)
    r = _wrap(input, input._k[kname](input._data, axes, keepdim))
    if input._rg and _gstate.enabled:
        x = input
        record(f"{name.capitalize()}Backward0", r, (x,), lambda g: (_evenly(g, x, r, axes, keepdim),),
               saved=(x, r))
    return r


def amax(input, dim=(), keepdim=False):
    """Maximum over `dim` (default: all); the gradient is split evenly among ties."""
    return _amaxmin(input, dim, keepdim, "max", "amax")


def amin(input, dim=(), keepdim=False):
    """Minimum over `dim` (default: all); the gradient is split evenly among ties."""
    return _amaxmin(input, dim, keepdim, "min", "amin")


def aminmax(input, *, dim=None, keepdim=False):
    """(min, max) over `dim` (None: all)."""
    d = () if dim is None else dim
    return return_types.aminmax(amin(input, d, keepdim), amax(input, d, keepdim))


def _arg(input, dim, keepdim, kname):
    if input._dtype.category == 3:
        raise RuntimeError(f"{kname}(): does not support complex input")
    shape = input._data.shape
    if dim is None:
        _check_nonempty(kname, shape, None)
        data = input._k[kname](input._data, None, keepdim)
        return _index_tensor(input, data)
    d = wrap_dim(dim, len(shape))
    if not shape:
        return _index_tensor(input, input._k["full"]((), 0, "int64"))
    _check_nonempty(kname, shape, (d,))
    return _index_tensor(input, input._k[kname](input._data, d, keepdim))


def argmax(input, dim=None, keepdim=False):
    """Index of the first maximum along `dim` (None: index into the flattened tensor)."""
    return _arg(input, dim, keepdim, "argmax")


def argmin(input, dim=None, keepdim=False):
    """Index of the first minimum along `dim` (None: index into the flattened tensor)."""
    return _arg(input, dim, keepdim, "argmin")


# -- variance and standard deviation -------------------------------------------------------------
def _correction(dim, unbiased, correction, name):
    if isinstance(dim, bool):          # var(False): the legacy positional `unbiased`
        dim, unbiased = None, dim
    if unbiased is not None and correction is not None:
        raise RuntimeError(f"{name}(): cannot specify both 'unbiased' and 'correction'")
    if correction is None:
        correction = 1 if unbiased is None else int(bool(unbiased))
    return dim, correction


def _var_forward(x, axes, keepdim, correction, name, root=False):
    """(variance, or its square root when `root`, as a tensor; the divisor)."""
    shape = x._data.shape
    n = _count(shape, axes)
    denom = builtins.max(0, n - correction)
    if denom == 0:
        warnings.warn(f"{name}(): degrees of freedom is <= 0. Correction should be strictly less than the "
                      "reduction factor (input numel divided by output numel).", UserWarning, stacklevel=3)
    k = x._k
    low = x._dtype is _dt.bfloat16          # PyTorch works in float32 and rounds once
    data, wd = (k["astype"](x._data, "float32"), "float32") if low else (x._data, x._dtype.name)
    s = k["sum"](data, axes, True)
    mu = k["full"](s.shape, math.nan, wd) if n == 0 else k["div"](s, float(n))
    dev = k["sub"](data, mu)
    ss = k["sum"](k["mul"](dev, dev), axes, keepdim)
    if denom == 0:
        var = k["where"](k["gt"](ss, 0), _INF, k["where"](k["eq"](ss, 0), math.nan, ss))
    else:
        var = k["div"](ss, float(denom))
    if root:
        var = k["sqrt"](var)
    return _wrap(x, k["astype"](var, x._dtype.name) if low else var), denom


def _var_grad_factor(x, axes, denom):
    """d var / d x without the incoming gradient: 2 (x - mean) / denom."""
    centered = x - mean(x, axes, keepdim=True)
    return centered * (2.0 / denom if denom else _INF)


def var(input, dim=None, unbiased=None, keepdim=_NO_KEEPDIM, *, correction=None):
    """Variance over `dim` with Bessel's correction by default (`unbiased=False` or
    `correction=0` for the population variance). >>> var(tensor([1., 2., 3.])) -> tensor(1.)"""
    if keepdim is _NO_KEEPDIM:
        keepdim = False
        if _WARN_KEEPDIM[0]:
            _warn_keepdim("var", dim)
    dim, c = _correction(dim, unbiased, correction, "var")
    if input._dtype.category == 3:      # E|z - mean|^2 = var(Re z) + var(Im z)
        return var(input.real, dim, keepdim=keepdim, correction=c) + var(input.imag, dim, keepdim=keepdim,
                                                                           correction=c)
    if input._dtype.category != 2:
        raise RuntimeError("std and var only support floating point and complex dtypes")
    shape, axes = _axes(input, dim)
    r, denom = _var_forward(input, axes, keepdim, c, "var")
    if input._rg and _gstate.enabled:
        x = input
        record("VarBackward0", r, (x,),
               lambda g: (_expand_grad(g, shape, axes, keepdim) * _var_grad_factor(x, axes, denom),),
               saved=(x,))
    return r


def std(input, dim=None, unbiased=None, keepdim=_NO_KEEPDIM, *, correction=None):
    """Standard deviation over `dim` (see `var` for `unbiased` / `correction`)."""
    if keepdim is _NO_KEEPDIM:
        keepdim = False
        if _WARN_KEEPDIM[0]:
            _warn_keepdim("std", dim)
    dim, c = _correction(dim, unbiased, correction, "std")
    if input._dtype.category == 3:
        return var(input, dim, keepdim=keepdim, correction=c).sqrt()
    if input._dtype.category != 2:
        raise RuntimeError("std and var only support floating point and complex dtypes")
    shape, axes = _axes(input, dim)
    r, denom = _var_forward(input, axes, keepdim, c, "std", root=True)
    if input._rg and _gstate.enabled:
        x = input
        from .pointwise import where

        def vjp(g):
            ge = _expand_grad(g, shape, axes, keepdim)
            rk = _keep(r, shape, axes, keepdim)
            zero = rk == 0
            gv = where(zero, 0.0, ge / (2 * where(zero, 1.0, rk)))
            return (gv * _var_grad_factor(x, axes, denom),)
        record("StdBackward0", r, (x,), vjp, saved=(x, r))
    return r


def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """(var, mean) over `dim`."""
    dim, c = _correction(dim, unbiased, correction, "var_mean")
    return var(input, dim, keepdim=keepdim, correction=c), mean(input, dim, keepdim)


def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """(std, mean) over `dim`."""
    dim, c = _correction(dim, unbiased, correction, "std_mean")
    return std(input, dim, keepdim=keepdim, correction=c), mean(input, dim, keepdim)


# -- sorting-based selections -----------------------------------------------------------------------
def _select_sorted(input, d, keepdim, pos_fn, name):
    """Values and indices at a position of the ascending (stable, NaN-last) order along d.
    pos_fn(k, n, nan_count_data) -> int64 position array of the kept shape."""
    k = input._k
    order = k["argsort"](input._data, d, False, True)
    nanc = k["sum"](_isnan_data(input), (d,), True, dtype="int64")
    pos = pos_fn(k, input._data.shape[d], nanc)
    idx = _index_tensor(input, k["gather"](order, pos, d))
    node = "KthvalueBackward0" if name == "kthvalue" else f"{name.capitalize()}Backward1"
    return getattr(return_types, name)(*_select(input, d, idx, keepdim, node))


def _median_pos(k, n, nanc):
    # a slice with NaN has median NaN: the first NaN in sorted order sits at n - nan_count
    return k["where"](k["gt"](nanc, 0), k["sub"](n, nanc), k["full"](nanc.shape, (n - 1) // 2, "int64"))


def _nanmedian_pos(k, n, nanc):
    valid = k["sub"](n, nanc)
    return k["maximum"](k["floor_divide"](k["sub"](valid, 1), 2), 0)


def _median_impl(input, dim, keepdim, pos_fn, name):
    if input._dtype.category == 3:
        raise not_for_complex(f"{name}_cpu", input._dtype)
    if dim is None:
        if input.numel() == 0:
            if input._dtype.category != 2:
                raise RuntimeError(f"{name}() of an empty integer tensor is undefined")
            return _wrap(input, input._k["full"]((), math.nan, input._dtype.name))
        flat = input.detach().reshape(-1)
        with grad_mode.no_grad():
            r = _select_sorted(flat, 0, False, pos_fn, name)[0]
        r = _make(r._data, r._dtype, r._k, r._dev)
        if input._rg and _gstate.enabled:
            x = input
            record(f"{name.capitalize()}Backward0", r, (x,), lambda g: (_evenly(g, x, r),), saved=(x, r))
        return r
    if input.ndim == 0:
        wrap_dim(dim, 0)
        return getattr(return_types, name)(*_on_0d(_median_impl, input, True, pos_fn, name))
    d = wrap_dim(dim, input.ndim)
    _check_nonempty(name, input._data.shape, (d,))
    return _select_sorted(input, d, keepdim, pos_fn, name)


def median(input, dim=None, keepdim=_NO_KEEPDIM):
    """median(x) -> lower median of all elements (0-d; NaN if any is NaN);
    median(x, dim, keepdim=False) -> (values, indices)."""
    if keepdim is _NO_KEEPDIM:
        keepdim = False
        if _WARN_KEEPDIM[0]:
            _warn_keepdim("median", dim)
    return _median_impl(input, dim, keepdim, _median_pos, "median")


def nanmedian(input, dim=None, keepdim=False):
    """Like `median`, ignoring NaN values."""
    return _median_impl(input, dim, keepdim, _nanmedian_pos, "nanmedian")


def kthvalue(input, k, dim=-1, keepdim=_NO_KEEPDIM):
    """The k-th smallest element (k counts from 1) along `dim`: (values, indices)."""
    if keepdim is _NO_KEEPDIM:
        keepdim = False
        if _WARN_KEEPDIM[0]:
            _warn_keepdim("kthvalue", dim)
    if input._dtype.category == 3:
        raise not_for_complex("kthvalue_cpu", input._dtype)
    if input.ndim == 0:
        wrap_dim(dim, 0)
        if k != 1:
            raise RuntimeError(f"kthvalue(): selected number k out of range for dimension 0")
        return return_types.kthvalue(*_on_0d(_kthvalue_dim, input, k, keepdim=True))
    return _kthvalue_dim(input, dim, k, keepdim)


def _kthvalue_dim(input, dim, k, keepdim=False):
    d = wrap_dim(dim, input.ndim)
    n = input._data.shape[d]
    if not 1 <= k <= n:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d}")
    return _select_sorted(input, d, keepdim, lambda K, n_, nanc: K["full"](nanc.shape, k - 1, "int64"),
                          "kthvalue")


def mode(input, dim=-1, keepdim=_NO_KEEPDIM):
    """Most frequent value along `dim` (the smallest among equally frequent ones) and the index of
    its last occurrence: (values, indices). Computed on the host."""
    if keepdim is _NO_KEEPDIM:
        keepdim = False
        if _WARN_KEEPDIM[0]:
            _warn_keepdim("mode", dim)
    import numpy as np
    if input.ndim == 0:
        wrap_dim(dim, 0)
        return return_types.mode(*_on_0d(mode, input, keepdim=True))
    d = wrap_dim(dim, input.ndim)
    shape = input._data.shape
    _check_nonempty("mode", shape, (d,))
    a = np.moveaxis(input._host(), d, -1)
    rows = a.reshape(-1, shape[d])
    out = np.empty(rows.shape[0], dtype=np.int64)
    for i, row in enumerate(rows):
        u, counts = np.unique(row, return_counts=True)
        v = u[np.argmax(counts)]
        out[i] = np.nonzero(row == v)[0][-1] if v == v else np.nonzero(row != row)[0][-1]
    kept = list(a.shape[:-1]) + [1]
    idx_host = np.moveaxis(out.reshape(kept), -1, d)
    k = input._k
    idx = _index_tensor(input, k["from_numpy"](np.ascontiguousarray(idx_host)))
    return return_types.mode(*_select(input, d, idx, keepdim, "ModeBackward0"))


def sort(input, dim=-1, descending=False, stable=False):
    """Sorted values along `dim` and the indices that sort (ties keep their order; NaN sorts as the
    largest value): (values, indices)."""
    _sortable(input, "Sort")
    if input.ndim == 0:
        wrap_dim(dim, 0)
        return return_types.sort(*_on_0d(sort, input, descending, stable))
    d = wrap_dim(dim, input.ndim)
    idx = _index_tensor(input, input._k["argsort"](input._data, d, bool(descending), True))
    return return_types.sort(_gather(input, d, idx, "SortBackward0"), idx)


def argsort(input, dim=-1, descending=False, stable=False):
    """Indices that sort `input` along `dim` (stable)."""
    _sortable(input, "Sort")
    if input.ndim == 0:
        wrap_dim(dim, 0)
        return _index_tensor(input, input._k["full"]((), 0, "int64"))
    d = wrap_dim(dim, input.ndim)
    return _index_tensor(input, input._k["argsort"](input._data, d, bool(descending), True))


def _sortable(input, what):
    if input._dtype.category == 3:
        raise RuntimeError(f" {what} does not support complex dtypes on CPU")     # (PyTorch's leading space)


def msort(input):
    """Sorted along the first dimension."""
    return sort(input, 0)[0]


def topk(input, k, dim=-1, largest=True, sorted=True):
    """The k largest (or smallest) elements along `dim`, in sorted order: (values, indices)."""
    _sortable(input, "topk")
    if input.ndim == 0:
        wrap_dim(dim, 0)
        if k not in (0, 1):
            raise RuntimeError("selected index k out of range")
        v, i = topk(input.reshape(1), k, 0, largest, sorted)
        return return_types.topk(v.reshape(()), i.reshape(())) if k == 1 else return_types.topk(v, i)
    d = wrap_dim(dim, input.ndim)
    n = input._data.shape[d]
    if not 0 <= k <= n:
        raise RuntimeError("selected index k out of range")
    K = input._k
    order = K["argsort"](input._data, d, bool(largest), True)
    key = (slice(None),) * d + (slice(0, k),)
    idx = _index_tensor(input, K["copy"](K["slice"](order, key)))
    return return_types.topk(_gather(input, d, idx, "TopkBackward0"), idx)


# -- logical and counting -----------------------------------------------------------------------------
def any(input, dim=None, keepdim=False):
    """True where any element along `dim` is nonzero."""
    shape, axes = _axes(input, dim)
    return _wrap(input, input._k["any"](input._data, axes, keepdim), _dt.bool_)


def all(input, dim=None, keepdim=False):
    """True where every element along `dim` is nonzero."""
    shape, axes = _axes(input, dim)
    return _wrap(input, input._k["all"](input._data, axes, keepdim), _dt.bool_)


def count_nonzero(input, dim=None):
    """Number of nonzero elements along `dim` (int64)."""
    shape, axes = _axes(input, dim)
    k = input._k
    return _wrap(input, k["sum"](k["ne"](input._data, 0), axes, False, dtype="int64"), _dt.int64)


# -- log-sum-exp and norms ------------------------------------------------------------------------------
def logsumexp(input, dim=None, keepdim=False):
    """log(sum(exp(x))) over `dim`, computed stably (shifted by the maximum)."""
    if _amp.on:
        return _amp.run("logsumexp", logsumexp, (input, dim, keepdim))
    x = _as_float(input)
    shape, axes = _axes(x, dim)
    k = x._k
    if _count(shape, axes) == 0:
        out = k["sum"](x._data, axes, keepdim)
        data = k["full"](out.shape, -_INF, x._dtype.name)
    else:
        m = k["max"](x._data, axes, True)
        m = k["where"](k["isfinite"](m), m, 0.0)
        low = x._dtype is _dt.bfloat16      # PyTorch: log(sum(exp)) in float32, rounded, then + max
        xd, md = (k["astype"](x._data, "float32"), k["astype"](m, "float32")) if low else (x._data, m)
        s = k["sum"](k["exp"](k["sub"](xd, md)), axes, True)
        zero = k["eq"](s, 0)
        logs = k["where"](zero, -_INF, k["log"](k["where"](zero, 1.0, s)))
        data = k["add"](k["astype"](logs, "bfloat16") if low else logs, m)
        if not keepdim:
            data = k["reshape"](data, _reduced_shape(shape, axes))
    r = _wrap(x, data)
    if x._rg and _gstate.enabled:
        record("LogsumexpBackward0", r, (x,),
               lambda g: (_expand_grad(g, shape, axes, keepdim) * (x - _keep(r, shape, axes, keepdim)).exp(),),
               saved=(x, r))
    return r


@in_float32         # bfloat16: accumulated in float32, rounded once (PyTorch's kernel)
def norm(input, p="fro", dim=None, keepdim=_NO_KEEPDIM, dtype=None):
    """Vector p-norm over `dim` (None: all elements). p: 'fro' (= 2), inf, -inf, 0, or a number.
    The p=2 gradient at a zero norm is 0 (the subgradient PyTorch uses)."""
    if keepdim is _NO_KEEPDIM:
        keepdim = False
        if _WARN_KEEPDIM[0]:
            _warn_keepdim("norm", dim)
    if _amp.on:
        return _amp.run("norm", norm, (input, p, dim, keepdim), {"dtype": dtype})
    x = input if dtype is None else input.to(dtype)
    if x._dtype.category != 2:
        raise RuntimeError("linalg.vector_norm: Expected a floating point or complex tensor as input. "
                           f"Got {_dtype_label(x._dtype)}")
    if p is None or p == "fro":
        if p == "fro" and isinstance(dim, (tuple, list)) and len(dim) > 2:
            got = " ".join(str(d) for d in dim)
            raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {got}")
        p = 2.0
    elif p == "nuc":
        from .linalg import matrix_norm
        return matrix_norm(input, "nuc", dim if dim is not None else (-2, -1), keepdim)
    elif isinstance(p, str):
        raise RuntimeError(f"norm(): p={p!r} is not supported; use 'fro', 'nuc' or a number")
    p = float(p)
    shape, axes = _axes(x, dim)
    with grad_mode.no_grad():
        ax = x.abs()
        if p == _INF:
            r = amax(ax, axes if axes is not None else (), keepdim)
        elif p == -_INF:
            r = amin(ax, axes if axes is not None else (), keepdim)
        elif p == 0:
            r = sum(x != 0, axes, keepdim).to(x._dtype)
        elif p == 1:
            r = sum(ax, axes, keepdim)
        elif p == 2:
            r = sum(x * x, axes, keepdim).sqrt()
        else:
            r = sum(ax ** p, axes, keepdim) ** (1.0 / p)
    r = _make(r._data, r._dtype, r._k, r._dev)
    if x._rg and _gstate.enabled:
        record("NormBackward1", r, (x,), lambda g: (_norm_grad(g, x, r, p, shape, axes, keepdim),),
               saved=(x, r))
    return r


def _norm_grad(g, x, r, p, shape, axes, keepdim):
    from .pointwise import where
    if p == 0:
        return _zeros_of(x)
    ge = _expand_grad(g, shape, axes, keepdim)
    if p == 1:
        return ge * x.sign()
    if p in (_INF, -_INF):
        return x.sign() * _evenly(g, x.abs(), r, axes, keepdim)
    rk = _keep(r, shape, axes, keepdim)
    rz = rk == 0
    r_safe = where(rz, 1.0, rk)
    if p == 2:
        return where(rz, 0.0, ge * x / r_safe)
    if p < 1:
        xz = x == 0
        scaled = x.sign() * where(xz, 0.0, where(xz, 1.0, x.abs()) ** (p - 1))
        return scaled * ge * rk ** (1 - p)
    scaled = x.sign() * x.abs() ** (p - 1) if p < 2 else x * x.abs() ** (p - 2)
    return scaled * where(rz, 0.0, ge / r_safe ** (p - 1))


# -- scans ----------------------------------------------------------------------------------------------
def _scan_setup(input, dim, dtype):
    if dtype is not None:
        dt = _dt.as_dtype(dtype)
    else:
        dt = input._dtype if input._dtype.category >= 2 else _dt.int64
    x = input if dt is input._dtype else input.to(dt)
    return x, wrap_dim(dim, x.ndim)


def _rev_cumsum(g, d):
    """sum over k >= i of g_k along d, in Tensor ops."""
    return g.sum(d, keepdim=True) - cumsum(g, d) + g


def cumsum(input, dim, *, dtype=None):
    """Inclusive prefix sums along `dim` (integer and bool inputs accumulate in int64)."""
    if _amp.on:
        return _amp.run("cumsum", cumsum, (input, dim), {"dtype": dtype})
    x, d = _scan_setup(input, dim, dtype)
    if x.ndim == 0:
        return cumsum(x.reshape(1), 0).reshape(())
    r = _wrap(x, x._k["cumsum"](x._data, d))
    if x._rg and _gstate.enabled and x._dtype.category >= 2:
        record("CumsumBackward0", r, (x,), lambda g: (_rev_cumsum(g, d),))
    return r


def cumprod(input, dim, *, dtype=None):
    """Inclusive prefix products along `dim`; the gradient is exact with zeros in the input."""
    if _amp.on:
        return _amp.run("cumprod", cumprod, (input, dim), {"dtype": dtype})
    x, d = _scan_setup(input, dim, dtype)
    if x.ndim == 0:
        return cumprod(x.reshape(1), 0).reshape(())
    r = _wrap(x, x._k["cumprod"](x._data, d))
    if x._rg and _gstate.enabled and x._dtype.category == 2:
        from .pointwise import where

        def vjp(g):
            zero = x == 0
            zeros_so_far = cumsum(zero, d)
            before = zeros_so_far == 0
            first = zero & (zeros_so_far == 1)
            # before the first zero: sum_{k>=i} g_k out_k / x_i
            a = _rev_cumsum(g * r, d) / where(zero, 1.0, x)
            # at the first zero z: sum_{k>=z} g_k prod_{j<=k, j!=z} x_j
            b = _rev_cumsum(g * cumprod(where(first, 1.0, x), d), d)
            return (where(before, a, where(first, b, 0.0)),)
        record("CumprodBackward0", r, (x,), vjp, saved=(x, r))
    return r


def _cum_extreme(input, dim, better, name):
    if input._dtype.category == 3:
        raise not_for_complex(f"{name}_cpu", input._dtype)
    d = wrap_dim(dim, input.ndim)
    if input.ndim == 0:
        return getattr(return_types, name)(*_on_0d(_cum_extreme, input, better, name))
    shape = input._data.shape
    n = shape[d]
    k = input._k
    if n == 0 or input.numel() == 0:
        idx = _index_tensor(input, k["full"](shape, 0, "int64"))
        return getattr(return_types, name)(_gather(input, d, idx, f"{name.capitalize()}Backward0"), idx)
    floating = input._dtype.category == 2
    kept = shape[:d] + (1,) + shape[d + 1:]
    pre = (slice(None),) * d

    def at(i):
        return k["reshape"](k["slice"](input._data, pre + (slice(i, i + 1),)), kept)
    best = at(0)
    best_i = k["full"](kept, 0, "int64")
    idx_parts = [best_i]
    for i in range(1, n):
        xi = at(i)
        take = k[better](xi, best)           # ties move to the later index, like PyTorch
        if floating:
            take = k["logical_and"](k["logical_or"](take, k["isnan"](xi)), k["logical_not"](k["isnan"](best)))
        best = k["where"](take, xi, best)
        best_i = k["where"](take, i, best_i)
        idx_parts.append(best_i)
    idx = _index_tensor(input, k["concat"](idx_parts, d))
    return getattr(return_types, name)(_gather(input, d, idx, f"{name.capitalize()}Backward0"), idx)


def cummax(input, dim):
    """Running maximum along `dim` and where it was found: (values, indices)."""
    return _cum_extreme(input, dim, "ge", "cummax")


def cummin(input, dim):
    """Running minimum along `dim` and where it was found: (values, indices)."""
    return _cum_extreme(input, dim, "le", "cummin")


def logcumsumexp(input, dim):
    """log(cumsum(exp(x))) along `dim`, shifted by the maximum for stability."""
    x = _as_float(input)
    d = wrap_dim(dim, x.ndim)
    if x.numel() == 0:
        return x.clone()
    from .pointwise import where
    with grad_mode.no_grad():
        m = amax(x, d, keepdim=True)
        m = where(m.isfinite(), m, 0.0)
    return cumsum((x - m).exp(), d).log() + m


# -- softmax ---------------------------------------------------------------------------------------------
def _softmax_dim(ndim):
    warnings.warn("Implicit dimension choice for softmax has been deprecated. Change the call to include "
                  "dim=X as an argument.", UserWarning, stacklevel=3)
    return 0 if ndim in (0, 1, 3) else 1


def _softmax_grad(kname, grad_rule):
    """The backward rule: the backend's fused `<kname>_backward` kernel when no graph of the backward
    is being built, else grad_rule in Tensor ops (differentiable again)."""
    def rule(g, y, d):
        if _gstate.enabled:
            return grad_rule(g, y, d)
        gd = cast_data(g, y._dtype)
        return _wrap(y, y._k[kname + "_backward"](gd, y._data, d))
    return rule


def _softmax_common(kname, input, dim, dtype, name, grad_rule):
    if input._dtype.category == 3:
        raise not_for_complex(f"{kname}_lastdim_kernel_impl", input._dtype)
    x = input.to(dtype) if dtype is not None else _as_float(input)
    if dim is None:
        dim = _softmax_dim(x.ndim)
    d = wrap_dim(dim, x.ndim)
    if x.ndim == 0:
        return _softmax_common(kname, x.reshape(1), 0, None, name, grad_rule).reshape(())
    k = x._k
    data = k["copy"](x._data) if x.numel() == 0 else k[kname](x._data, d)
    r = _wrap(x, data)
    if x._rg and _gstate.enabled:
        rule = _softmax_grad(kname, grad_rule)
        record(name, r, (x,), lambda g: (rule(g, r, d),), saved=(r,))
    return r


def softmax(input, dim=None, dtype=None):
    """exp(x) / sum(exp(x)) along `dim` (the backend's softmax kernel, or its decomposition)."""
    if _amp.on:
        return _amp.run("softmax", softmax, (input, dim), {"dtype": dtype})
    return _softmax_common("softmax", input, dim, dtype, "SoftmaxBackward0",
                           lambda g, y, d: y * (g - (g * y).sum(d, keepdim=True)))


def log_softmax(input, dim=None, dtype=None):
    """log(softmax(x)) along `dim`, computed stably."""
    if _amp.on:
        return _amp.run("log_softmax", log_softmax, (input, dim), {"dtype": dtype})
    return _softmax_common("log_softmax", input, dim, dtype, "LogSoftmaxBackward0",
                           lambda g, y, d: g - y.exp() * g.sum(d, keepdim=True))


# -- unique (data-dependent output size: computed on the host) -------------------------------------------
def _host_tensor(arr, dtype, like):
    from .creation import tensor
    return tensor(arr, dtype=dtype, device=like._dev)


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """The distinct elements (always sorted), optionally with the inverse indices (input shape) and
    the counts. With `dim`, the distinct slices along that dimension."""
    import numpy as np
    a = input._host()
    if dim is None:
        u, inv, cnt = np.unique(a.reshape(-1), return_inverse=True, return_counts=True)
        inv = inv.reshape(a.shape)
    else:
        d = wrap_dim(dim, a.ndim)
        u, inv, cnt = np.unique(a, return_inverse=True, return_counts=True, axis=d)
        inv = inv.reshape(-1)
    out = [_host_tensor(u, input._dtype, input)]
    if return_inverse:
        out.append(_host_tensor(inv.astype(np.int64), _dt.int64, input))
    if return_counts:
        out.append(_host_tensor(cnt.astype(np.int64), _dt.int64, input))
    return out[0] if len(out) == 1 else tuple(out)


def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    """Collapse runs of equal consecutive elements (slices along `dim` when given)."""
    import numpy as np
    a = input._host()
    if dim is None:
        a = a.reshape(-1)
        d = 0
    else:
        d = wrap_dim(dim, a.ndim)
    moved = np.moveaxis(a, d, 0)
    n = moved.shape[0]
    if n == 0:
        starts = np.zeros(0, dtype=np.int64)
    else:
        flat = moved.reshape(n, -1)
        change = np.ones(n, dtype=bool)
        change[1:] = (flat[1:] != flat[:-1]).any(axis=1) if flat.shape[1] else False
        starts = np.nonzero(change)[0]
    u = np.moveaxis(moved[starts], 0, d)
    out = [_host_tensor(u, input._dtype, input)]
    if return_inverse:
        inv = (np.cumsum(change) - 1) if n else np.zeros(0, dtype=np.int64)
        if dim is None:
            inv = inv.reshape(input._data.shape)
        out.append(_host_tensor(inv.astype(np.int64), _dt.int64, input))
    if return_counts:
        cnt = np.diff(np.append(starts, n))
        out.append(_host_tensor(cnt.astype(np.int64), _dt.int64, input))
    return out[0] if len(out) == 1 else tuple(out)


# -- Tensor methods ------------------------------------------------------------------------------------
def _attach():
    T = Tensor
    for name in ("sum", "mean", "nansum", "nanmean", "prod", "max", "min", "amax", "amin", "aminmax",
                 "argmax", "argmin", "var", "std", "median", "nanmedian", "kthvalue", "mode", "sort",
                 "argsort", "msort", "topk", "any", "all", "count_nonzero", "logsumexp", "norm", "cumsum",
                 "cumprod", "cummax", "cummin", "logcumsumexp", "softmax", "log_softmax", "unique",
                 "unique_consecutive"):
        setattr(T, name, globals()[name])
    T.cumsum_ = _scan_inplace(cumsum)
    T.cumprod_ = _scan_inplace(cumprod)


def _scan_inplace(fn):
    def op_(self, dim, *, dtype=None):
        from ._core import check_inplace, commit_inplace, snapshot
        check_inplace(self)
        src = snapshot(self) if (self._rg and _gstate.enabled) else self
        return commit_inplace(self, fn(src, dim, dtype=dtype if dtype is not None else self._dtype))
    op_.__name__ = fn.__name__ + "_"
    return op_


_attach()
PUBLIC = ["sum", "mean", "nansum", "nanmean", "prod", "max", "min", "amax", "amin", "aminmax", "argmax",
          "argmin", "var", "std", "var_mean", "std_mean", "median", "nanmedian", "kthvalue", "mode", "sort",
          "argsort", "msort", "topk", "any", "all", "count_nonzero", "logsumexp", "norm", "cumsum", "cumprod",
          "cummax", "cummin", "logcumsumexp", "softmax", "log_softmax", "unique", "unique_consecutive",
          "return_types"]
