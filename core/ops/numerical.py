"""Numerical ops: differences and integration (diff, trapezoid, cumulative_trapezoid), counting and
binning (bincount, histc, bucketize, searchsorted, isin), index helpers (unravel_index,
tril_indices, triu_indices), combinatorics (cartesian_prod, combinations), matrix builders
(block_diag, diagflat, vander, rot90), statistics (quantile, nanquantile, cov, corrcoef), distances
(cdist, dist, renorm), scatter variants (scatter_reduce, select/slice/diagonal_scatter) and
broadcast_shapes.

Differentiable ops are compositions of Tensor ops, so their gradients (of any order) come from
the parts; integer and bool results are computed with kernels. Two ops record their own node, with
vjps in Tensor ops: scatter_reduce ("ScatterReduceBackward0", PyTorch's rule: amax/amin split the
gradient evenly among ties) and cdist's matrix-product path ("EuclideanDistBackward0", gradient 0
at zero distance). Host reads happen only where a Python value is needed anyway (output sizes,
argument checks).
"""
from __future__ import annotations

import math
import numbers
import warnings

import numpy as np

from .. import dtypes as _dt
from ..amp.state import state as _amp
from ..autograd.grad_mode import no_grad
from ._core import (Size, Tensor, _gstate, _make, broadcast_shapes as _bshapes, check_inplace,
                    check_same_device, commit_inplace, grad_for, record, snapshot, wrap_dim)
from .distance import pdist
from .pointwise import _out, where

# -- helpers ---------------------------------------------------------------------------------------
def _label(dt):
    """PyTorch's ScalarType name of a dtype ("Float", "Long", ...)."""
    return dt._legacy[:-len("Tensor")]


def _need(x, fname, arg="input"):
    if not isinstance(x, Tensor):
        raise TypeError(f"{fname}(): argument '{arg}' must be Tensor, not {type(x).__name__}")


def _int_arg(v, fname, arg):
    if isinstance(v, Tensor) and v.numel() == 1 and v._dtype.category == 1:
        v = v.item()
    if isinstance(v, bool) or not isinstance(v, numbers.Integral):
        raise TypeError(f"{fname}(): argument '{arg}' must be int, not {type(v).__name__}")
    return int(v)


def _real_arg(v, fname, arg):
    if isinstance(v, Tensor) and v.numel() == 1:
        v = v.item()
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        raise TypeError(f"{fname}(): argument '{arg}' must be a real number, not {type(v).__name__}")
    return v


def _g(v):
    """A double as C++ streams print it (PyTorch's messages): 2, 1.5, inf, nan."""
    return f"{float(v):g}"


def _wrap(like, data, dtype):
    return _make(data, dtype, like._k, like._dev)


def _full(like, shape, value, dtype):
    return _wrap(like, like._k["full"](tuple(shape), value, dtype.name), dtype)


def _scalar_tensor(value, like, dtype):
    """A Python number as a 0-d tensor on like's device."""
    return _full(like, (), value, dtype)


def _any(t) -> bool:
    return bool(t._k["to_numpy"](t._k["any"](t._data, None, False)))


# -- differences and integration -------------------------------------------------------------------
def diff(input, n=1, dim=-1, prepend=None, append=None, *, out=None):
    """The n-th forward difference along `dim` (bool: logical xor), after joining `prepend` and
    `append` (tensors with input's shape except along dim) to input."""
    _need(input, "diff")
    if input.ndim == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    n = _int_arg(n, "diff", "n")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    d = wrap_dim(dim, input.ndim)
    x = input
    if prepend is not None or append is not None:
        from .shape import cat
        parts = []
        for name, t in (("prepend", prepend), (None, input), ("append", append)):
            if t is None:
                continue
            if name is not None:
                _need(t, "diff", name)
                if t.ndim != input.ndim:
                    raise RuntimeError("diff expects prepend or append to be the same dimension as input")
                for i in range(input.ndim):
                    if i != d and t.shape[i] != input.shape[i]:
                        raise RuntimeError(
                            "diff expects the shape of tensor to prepend or append to match that of input "
                            f"except along the differencing dimension; input.size({i}) = {input.shape[i]}, "
                            f"but got tensor.size({i}) = {t.shape[i]}")
            parts.append(t)
        x = cat(parts, d)
    for _ in range(n):
        m = x.shape[d]
        if m == 0:
            break
        hi, lo = x.narrow(d, 1, m - 1), x.narrow(d, 0, m - 1)
        x = hi != lo if x._dtype is _dt.bool_ else hi - lo
    return _out(input.clone() if x is input else x, out)


def _trapezoid_common(y, x, dx, dim, name, cumulative):
    _need(y, name, "y")
    if x is not None and dx is not None:
        raise TypeError(f"{name}(): pass either the sample points `x` or the spacing `dx`, not both")
    if x is not None and not isinstance(x, Tensor):
        raise TypeError(f"{name}(): argument 'x' must be Tensor, not {type(x).__name__}")
    if y.ndim == 0:
        if cumulative:
            raise IndexError("slice() cannot be applied to a 0-dim tensor.")
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    d = wrap_dim(dim, y.ndim)
    n = y.shape[d]
    if not cumulative and n == 0:
        # PyTorch (and NumPy) return zeros for an integral over no samples, in y's dtype
        return _full(y, y.shape[:d] + y.shape[d + 1:], 0, y._dtype)
    m = max(n - 1, 0)
    left, right = y.narrow(d, 0, m), y.narrow(d, min(1, n), m)
    if x is None:
        if y._dtype is _dt.bool_:
            raise RuntimeError(f"{name}: received a bool input for `y`, but bool is not supported")
        dx = 1 if dx is None else dx
        if isinstance(dx, bool) or not isinstance(dx, numbers.Real):
            raise RuntimeError(f"{name}: Currently, we only support dx as a real number.")
        if cumulative:
            return (dx / 2.0 * (left + right)).cumsum(d)
        # the constant-spacing rule: dx * (sum(y) - (y_first + y_last) / 2)
        return (y.sum(d) - (y.select(d, 0) + y.select(d, -1)) * 0.5) * dx
    if y._dtype is _dt.bool_ or x._dtype is _dt.bool_:
        raise RuntimeError(f"{name}: received a bool input for `x` or `y`, but bool is not supported")
    if x.ndim == 1:
        if x.shape[0] != n:
            raise RuntimeError(f"{name}: There must be one `x` value for each sample point")
        xv = x.reshape(tuple(n if i == d else 1 for i in range(y.ndim)))
    elif x.ndim < y.ndim:
        xv = x.reshape((1,) * (y.ndim - x.ndim) + tuple(x.shape))
    else:
        xv = x
    # NumPy's rule: the spacings broadcast against the sample pairs after differencing
    k = xv.shape[d]
    mx = max(k - 1, 0)
    spacing = xv.narrow(d, min(1, k), mx) - xv.narrow(d, 0, mx)
    if cumulative:
        return ((left + right) * spacing).cumsum(d) / 2.0
    return (spacing * (right + left)).sum(d) / 2.0


def trapezoid(y, x=None, *, dx=None, dim=-1):
    """The trapezoidal rule along `dim`: with sample points `x` (a tensor) or a constant spacing `dx`
    (default 1)."""
    return _trapezoid_common(y, x, dx, dim, "trapezoid", False)


trapz = trapezoid


def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    """The running trapezoidal integral along `dim` (one entry fewer than y along dim)."""
    return _trapezoid_common(y, x, dx, dim, "cumulative_trapezoid", True)


# -- counting and binning --------------------------------------------------------------------------
def bincount(input, weights=None, minlength=0):
    """Occurrences of each value 0..max(input) (at least `minlength` bins) of a 1-d non-negative
    integer tensor; with `weights`, their sums instead (float32/float64 weights keep their dtype,
    other weights give float64). Not differentiable (as in PyTorch)."""
    _need(input, "bincount")
    if input._dtype.category != 1:
        raise NotImplementedError(f"\"bincount\" not implemented for '{_label(input._dtype)}'")
    minlength = _int_arg(minlength, "bincount", "minlength")
    if input.ndim != 1:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    if weights is not None:
        _need(weights, "bincount", "weights")
        if weights.ndim != 1 or weights.shape[0] != input.shape[0]:
            raise RuntimeError("weights should be 1-d and have the same length as input")
        check_same_device(input, weights)
    k = input._k
    size = minlength
    if input.shape[0]:
        lo = int(k["to_numpy"](k["min"](input._data, None, False)))
        if lo < 0:
            raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
        size = max(size, int(k["to_numpy"](k["max"](input._data, None, False))) + 1)
    idx = k["astype"](input._data, "int64")
    if weights is None:
        dt = _dt.int64
        src = k["full"](idx.shape, 1, "int64")
    else:
        dt = weights._dtype if weights._dtype in (_dt.float32, _dt.float64) else _dt.float64
        src = k["astype"](weights._data, dt.name)
    data = k["full"]((size,), 0, dt.name)
    k["scatter_add"](data, idx, src, 0)
    return _wrap(input, data, dt)


def histc(input, bins=100, min=0, max=0, *, out=None):
    """Counts of input's elements in `bins` equal-width bins over [min, max] (both 0: the data's
    range); elements outside are ignored, the maximum falls in the last bin. Float inputs only."""
    _need(input, "histc")
    dt = input._dtype
    if dt.category != 2:
        raise NotImplementedError(f"\"histc\" not implemented for '{_label(dt)}'")
    bins = _int_arg(bins, "histc", "bins")
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")
    lo, hi = float(_real_arg(min, "histc", "min")), float(_real_arg(max, "histc", "max"))
    k = input._k
    flat = k["reshape"](input._data, (-1,))
    if lo == hi and input.numel() > 0:
        lo = float(k["to_numpy"](k["min"](flat, None, False)))
        hi = float(k["to_numpy"](k["max"](flat, None, False)))
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise RuntimeError(f"torch.histc: range of [{_g(lo)}, {_g(hi)}] is not finite")
    if not lo < hi:
        raise RuntimeError("torch.histc: max must be larger than min")
    if isinstance(out, Tensor) and out._dtype is not dt:
        raise RuntimeError(f"torch.histc: input tensor and hist tensor should have the same dtype, but got "
                           f"input {dt.name} and hist {out._dtype.name}")
    # PyTorch bins in the input's dtype with edges rounded to it: (x - lo) * bins / (hi - lo)
    lo_d, hi_d = (float(np.asarray(v, dtype=dt.name)) for v in (lo, hi))
    inside = k["logical_and"](k["ge"](flat, lo_d), k["le"](flat, hi_d))       # False for NaN
    safe = k["where"](inside, flat, lo_d)
    pos = k["floor"](k["div"](k["mul"](k["sub"](safe, lo_d), float(bins)), hi_d - lo_d))
    pos = k["astype"](k["clip"](pos, 0, bins - 1), "int64")
    data = k["full"]((bins,), 0, dt.name)
    k["scatter_add"](data, pos, k["astype"](inside, dt.name), 0)
    return _out(_wrap(input, data, dt), out)


def _search_rows(k, seq, vals, after):
    """Insertion points (int64) of vals (B, M) into the sorted rows of seq (B, N), by a vectorised
    binary search; after(s, v) -> bool array: v goes after the sequence entry s."""
    n = seq.shape[1]
    lo = k["full"](vals.shape, 0, "int64")
    if n == 0 or 0 in vals.shape:
        return lo
    hi = k["full"](vals.shape, n, "int64")
    for _ in range(n.bit_length()):          # ceil(log2(n + 1)) halvings empty every interval
        active = k["lt"](lo, hi)
        mid = k["floor_divide"](k["add"](lo, hi), 2)
        below = after(k["gather"](seq, k["minimum"](mid, n - 1), 1), vals)
        lo = k["where"](k["logical_and"](active, below), k["add"](mid, 1), lo)
        hi = k["where"](k["logical_and"](active, k["logical_not"](below)), mid, hi)
    return lo


def _check_search_out(out, out_int32):
    if isinstance(out, Tensor) and out._dtype is not (_dt.int32 if out_int32 else _dt.int64):
        raise RuntimeError(
            "torch.searchsorted(): output tensor's dtype is wrong, it can only be Int(int32) or Long(int64) "
            f"depending on whether out_int32 flag is True, but we got output tensor's dtype "
            f"{_label(out._dtype)} and out_int32 flag is {bool(out_int32)}")


def _values_tensor(values, like):
    """`values` (a Tensor or a Python number) as a tensor on like's device."""
    if isinstance(values, Tensor):
        return values
    if isinstance(values, bool) or not isinstance(values, numbers.Real):
        raise TypeError(f"expected a Tensor or a number, got {type(values).__name__}")
    return _scalar_tensor(values, like, _dt.result_type(like, values))


def searchsorted(sorted_sequence, values, *, out_int32=False, right=False, side=None, sorter=None, out=None):
    """Indices where `values` would be inserted into the innermost dimension of `sorted_sequence`
    to keep it sorted (side 'left': before equal entries; 'right' / right=True: after them).
    `sorter`: int64 indices that sort an unsorted sequence. Returns int64 (int32 with out_int32)."""
    _need(sorted_sequence, "searchsorted", "sorted_sequence")
    seq = sorted_sequence
    if sorter is not None:
        _need(sorter, "searchsorted", "sorter")
        if sorter._dtype is not _dt.int64:
            raise RuntimeError(f"torch.searchsorted(): sorter must be a tensor of long dtype but got dtype "
                               f"{_label(sorter._dtype)}")
        if tuple(sorter.shape) != tuple(seq.shape):
            raise RuntimeError(f"torch.searchsorted(): boundary and sorter must have the same size, but got "
                               f"boundary tensor {list(seq.shape)}and got sorter tensor {list(sorter.shape)}")
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but got {side}")
        if right and side == "left":
            raise RuntimeError("torch.searchsorted(): side and right can't be set to opposites, got side of "
                               "left while right was True")
        right = side == "right"
    v = _values_tensor(values, seq)
    check_same_device(seq, v, *(() if sorter is None else (sorter,)))
    if not (v.ndim > 0 or seq.ndim == 1):
        raise RuntimeError(f"torch.searchsorted(): input value can be a scalar only when boundaries tensor "
                           f"dimension is 1, but we got boundaries tensor dim({seq.ndim}) and input value's "
                           f"dim({v.ndim}) numel({v.numel()})")
    if seq.ndim == 0:
        raise RuntimeError("torch.searchsorted(): boundaries tensor should have positive dimension, but got "
                           "0 dimension")
    if seq.ndim != 1 and (seq.ndim != v.ndim or tuple(seq.shape[:-1]) != tuple(v.shape[:-1])):
        raise RuntimeError(
            "torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 dimensions of "
            f"boundaries tensor and input value tensor must match, but we got boundaries tensor "
            f"{list(seq.shape)} and input value tensor {list(v.shape)}")
    _check_search_out(out, out_int32)
    for t in (seq, v):
        if t._dtype is _dt.bool_:
            raise NotImplementedError("\"searchsorted\" not implemented for 'Bool'")
    if out_int32 and seq.shape[-1] >= 2**31 - 1:
        raise RuntimeError(f"torch.searchsorted(): the size of boundaries' last dimension should be less than "
                           f"2147483647, but we got {seq.shape[-1]}")
    k = seq._k
    dt = _dt.promote_types(seq._dtype, v._dtype)
    n = seq.shape[-1]
    sd = seq._data if seq._dtype is dt else k["astype"](seq._data, dt.name)
    if sorter is not None:
        from .indexing import _norm_index
        try:
            sidx = _norm_index(k, sorter._data, n, seq.ndim - 1, negative=False)
        except IndexError:
            raise RuntimeError("torch.searchsorted(): sorter index out of range") from None
        sd = k["gather"](sd, sidx, seq.ndim - 1)
    vd = v._data if v._dtype is dt else k["astype"](v._data, dt.name)
    if seq.ndim == 1:
        rows, vrows = k["reshape"](sd, (1, n)), k["reshape"](vd, (1, v.numel()))
    else:
        b = math.prod(seq.shape[:-1])
        rows, vrows = k["reshape"](sd, (b, n)), k["reshape"](vd, (b, v.shape[-1]))
    # PyTorch's comparisons: !(s >= v) (left) / !(s > v) (right), so NaN values go last
    cmp = k["gt" if right else "ge"]
    idx = _search_rows(k, rows, vrows, lambda s_, v_: k["logical_not"](cmp(s_, v_)))
    idx = k["reshape"](idx, tuple(v.shape))
    rdt = _dt.int32 if out_int32 else _dt.int64
    if out_int32:
        idx = k["astype"](idx, "int32")
    return _out(_wrap(seq, idx, rdt), out)


def bucketize(input, boundaries, *, out_int32=False, right=False, out=None):
    """The index of the bucket of each input value, buckets bounded by the sorted 1-d `boundaries`:
    boundaries[i-1] < x <= boundaries[i] (right=True: boundaries[i-1] <= x < boundaries[i])."""
    _need(boundaries, "bucketize", "boundaries")
    if boundaries.ndim != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim({boundaries.ndim})")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right, out=out)


def isin(elements, test_elements, *, assume_unique=False, invert=False, out=None):
    """True where an element of `elements` occurs in `test_elements` (either may be a number);
    compared in the promoted dtype (NaN is never in). Sorts the test elements and binary-searches."""
    if not isinstance(elements, Tensor) and not isinstance(test_elements, Tensor):
        raise TypeError("isin(): at least one of 'elements' and 'test_elements' must be a Tensor")
    like = elements if isinstance(elements, Tensor) else test_elements
    el, te = _values_tensor(elements, like), _values_tensor(test_elements, like)
    check_same_device(el, te)
    for t in (el, te):
        if t._dtype is _dt.bool_:
            raise RuntimeError("Unsupported input type encountered for isin(): Bool")
    if isinstance(out, Tensor) and out._dtype is not _dt.bool_:
        raise RuntimeError(f"Expected out tensor to have dtype bool, but got {out._dtype.name} instead")
    k = el._k
    dt = _dt.result_type(elements, test_elements)
    ed = k["reshape"](el._data if el._dtype is dt else k["astype"](el._data, dt.name), (1, el.numel()))
    td = te._data if te._dtype is dt else k["astype"](te._data, dt.name)
    nt = te.numel()
    if nt == 0:
        found = k["full"](ed.shape, False, "bool")
    else:
        flat = k["reshape"](td, (nt,))
        srt = k["reshape"](k["gather"](flat, k["argsort"](flat, 0, False, True), 0), (1, nt))
        # s < v: NaN entries (sorted last) and NaN values never match
        pos = k["minimum"](_search_rows(k, srt, ed, k["lt"]), nt - 1)
        found = k["eq"](k["gather"](srt, pos, 1), ed)
    if invert:
        found = k["logical_not"](found)
    return _out(_wrap(el, k["reshape"](found, tuple(el.shape)), _dt.bool_), out)


# -- index helpers ---------------------------------------------------------------------------------
def unravel_index(indices, shape):
    """Flat indices as a tuple of coordinate tensors (int64) into a tensor of `shape`. Like
    PyTorch, indices outside the shape wrap around instead of raising."""
    _need(indices, "unravel_index", "indices")
    if indices._dtype.category != 1:
        raise TypeError(f"expected 'indices' to be integer dtype, but got {indices._dtype}")
    if isinstance(shape, numbers.Integral) and not isinstance(shape, bool):
        shape = (int(shape),)
    elif isinstance(shape, (tuple, list)):
        for s in shape:
            if isinstance(s, bool) or not isinstance(s, numbers.Integral):
                raise TypeError(f"expected 'shape' sequence to only contain ints, but got {type(s)}")
        shape = tuple(int(s) for s in shape)
    else:
        raise TypeError(f"expected 'shape' to be int or sequence of ints, but got {type(shape)}")
    if any(s < 0 for s in shape):
        raise ValueError(f"'shape' cannot have negative values, but got {shape}")
    coefs = [1] * len(shape)
    for i in range(len(shape) - 2, -1, -1):
        coefs[i] = coefs[i + 1] * shape[i + 1]
    from .creation import tensor
    c = tensor(coefs, dtype=_dt.int64, device=indices.device)
    s = tensor(list(shape), dtype=_dt.int64, device=indices.device)
    return tuple(indices.unsqueeze(-1).floor_divide(c).remainder(s).unbind(-1))


def _tri_indices(row, col, offset, dtype, device, lower, fname):
    from .creation import resolve_device
    row, col = _int_arg(row, fname, "row"), _int_arg(col, fname, "col")
    offset = _int_arg(offset, fname, "offset")
    if row < 0:
        raise RuntimeError(f"row must be non-negative, got {row}")
    if col < 0:
        raise RuntimeError(f"col must be non-negative, got {col}")
    dt = _dt.int64 if dtype is None else _dt.as_dtype(dtype)
    if dt not in (_dt.int32, _dt.int64):
        raise NotImplementedError(f"\"{fname}\" not implemented for '{_label(dt)}'")
    k, dev = resolve_device(device)
    with k["__backend__"].device_context(dev.index):
        rows = k["reshape"](k["arange"](0, row, 1, "int64"), (row, 1))
        cols = k["reshape"](k["arange"](0, col, 1, "int64"), (1, col))
        diff = k["sub"](cols, rows)
        mask = k["le"](diff, offset) if lower else k["ge"](diff, offset)
        i, j = k["nonzero"](mask)          # row-major order, as PyTorch lists them
        data = k["concat"]([k["reshape"](k["astype"](a, dt.name), (1, a.shape[0])) for a in (i, j)], 0)
    return _make(data, dt, k, dev)


def tril_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    """The (2, N) coordinates of the lower triangle (j - i <= offset) of a row x col matrix."""
    return _tri_indices(row, col, offset, dtype, device, True, "tril_indices")


def triu_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    """The (2, N) coordinates of the upper triangle (j - i >= offset) of a row x col matrix."""
    return _tri_indices(row, col, offset, dtype, device, False, "triu_indices")


# -- combinatorics ---------------------------------------------------------------------------------
def _check_1d(t):
    if t.ndim != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(t.shape)}")


def cartesian_prod(*tensors):
    """Every combination of one element from each 1-d tensor, as rows (itertools.product order);
    one tensor is returned as it is."""
    from .shape import _tensor_list, meshgrid, stack
    tensors = _tensor_list(tensors, "cartesian_prod")
    for t in tensors:
        _check_1d(t)
    if len(tensors) == 1:
        return tensors[0]
    return stack([g.reshape(-1) for g in meshgrid(*tensors, indexing="ij")], 1)


def combinations(input, r=2, with_replacement=False):
    """The length-r combinations of a 1-d tensor's elements as rows (itertools.combinations order;
    with_replacement: combinations_with_replacement)."""
    _need(input, "combinations")
    _check_1d(input)
    r = _int_arg(r, "combinations", "r")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    k = input._k
    if r == 0:
        return _full(input, (0,), 0, input._dtype)
    n = input.shape[0]
    # the index tuples i1 < i2 < ... (<= with replacement) of an n^r grid, like PyTorch's mask
    ar = k["arange"](0, n, 1, "int64")
    axes = [k["reshape"](ar, tuple(n if a == j else 1 for a in range(r))) for j in range(r)]
    mask = k["full"]((n,) * r, True, "bool")
    for a, b in zip(axes, axes[1:]):
        mask = k["logical_and"](mask, k["le" if with_replacement else "lt"](a, b))
    coords = k["nonzero"](mask)
    m = coords[0].shape[0]
    flat = k["reshape"](k["concat"]([k["reshape"](c, (m, 1)) for c in coords], 1), (m * r,))
    idx = _make(k["astype"](flat, "int64"), _dt.int64, k, input._dev)
    return input.index_select(0, idx).reshape(m, r)


# -- matrix builders -------------------------------------------------------------------------------
def block_diag(*tensors):
    """A block-diagonal matrix of the given 0-, 1- or 2-d tensors (0-d: 1x1, 1-d: one row)."""
    from .shape import _pad_along, _tensor_list, cat
    tensors = _tensor_list(tensors, "block_diag")
    for i, t in enumerate(tensors):
        if t.ndim > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {i} has "
                               f"{t.ndim} dimensions")
    if not tensors:
        from .creation import zeros
        return zeros(1, 0)
    check_same_device(*tensors)
    dt = tensors[0]._dtype
    for t in tensors[1:]:
        dt = _dt.promote_types(dt, t._dtype)
    mats = [t.reshape(1, -1) if t.ndim < 2 else t for t in tensors]
    mats = [m if m._dtype is dt else m.to(dt) for m in mats]
    total = sum(m.shape[1] for m in mats)
    rows, col = [], 0
    for m in mats:
        w = m.shape[1]
        rows.append(_pad_along(m, 1, col, total - col - w))
        col += w
    return cat(rows, 0)


def diagflat(input, offset=0):
    """A 2-d matrix with the flattened input on diagonal `offset`, zeros elsewhere."""
    _need(input, "diagflat")
    from .shape import diag
    return diag(input.reshape(-1), _int_arg(offset, "diagflat", "offset"))


def vander(x, N=None, increasing=False):
    """The Vandermonde matrix of a 1-d tensor: columns x^(N-1), ..., x^0 (increasing: x^0 first).
    Integer and bool inputs give int64."""
    _need(x, "vander", "x")
    if x.ndim != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else _int_arg(N, "vander", "N")
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    dt = _dt.promote_types(x._dtype, _dt.int64)
    xs = x if x._dtype is dt else x.to(dt)
    ones = _full(x, (x.shape[0], min(n, 1)), 1, dt)
    if n <= 1:
        r = ones
    else:
        from .shape import cat
        # cumulative products of [1, x, x, ...]: differentiable, exact with zeros in x
        r = cat([ones, xs.unsqueeze(1).expand(x.shape[0], n - 1)], 1).cumprod(1)
    return r if increasing else r.flip(1)


def rot90(input, k=1, dims=(0, 1)):
    """input rotated by k * 90 degrees in the plane of `dims`, from the first towards the second."""
    _need(input, "rot90")
    dims = list(dims)
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if input.ndim < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {input.ndim}")
    a, b = wrap_dim(dims[0], input.ndim), wrap_dim(dims[1], input.ndim)
    if a == b:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {dims[0]} and dim1 = {dims[1]}")
    k = _int_arg(k, "rot90", "k") % 4
    if k == 1:
        return input.flip(b).transpose(a, b)
    if k == 2:
        return input.flip(a, b)
    if k == 3:
        return input.flip(a).transpose(a, b)
    return input.clone()


# -- statistics ------------------------------------------------------------------------------------
_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _lerp(a, b, w):
    # PyTorch's lerp: from the nearer end, so w = 1 gives b exactly
    return where(w < 0.5, a + w * (b - a), b - (b - a) * (1 - w))


def _quantile(input, q, dim, keepdim, interpolation, out, ignore_nan):
    fname = "nanquantile" if ignore_nan else "quantile"
    _need(input, fname)
    if not isinstance(q, Tensor) and (isinstance(q, bool) or not isinstance(q, numbers.Real)):
        raise TypeError(f"{fname}(): argument 'q' must be float or Tensor, not {type(q).__name__}")
    if input.numel() == 0:
        raise RuntimeError("quantile() input tensor must be non-empty")
    if isinstance(q, Tensor) and q.ndim > 1:
        raise RuntimeError("quantile() q must be a scalar or 1D tensor")
    dt = input._dtype
    if dt not in (_dt.float32, _dt.float64):
        raise RuntimeError("quantile() input tensor must be either float or double dtype")
    if isinstance(q, Tensor):
        if q._dtype is not dt:
            raise RuntimeError("quantile() q tensor must be same dtype as the input tensor")
        check_same_device(input, q)
        if q.numel() and _any(~((q >= 0) & (q <= 1))):
            raise RuntimeError("quantile() q values must be in the range [0, 1]")
    elif not 0 <= q <= 1:
        raise RuntimeError(f"quantile() q must be in the range [0, 1] but got {_g(q)}")
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError(f"quantile() interpolation must be one of linear, lower, higher, midpoint or nearest, "
                           f"but got {interpolation}")
    if isinstance(out, Tensor) and out._dtype is not dt:
        raise RuntimeError("quantile() out tensor must be same dtype as the input tensor")
    if dim is None:
        x, d = input.reshape(-1), 0
    else:
        d = wrap_dim(dim, input.ndim)
        x = input.reshape(1) if input.ndim == 0 else input
    n = x.shape[d]
    if n > 2 ** 24:
        raise RuntimeError("quantile() input tensor is too large")
    from .pointwise import isnan
    from .reduction import sort
    srt = sort(x.movedim(d, -1), -1).values                  # NaN last
    qt = q.reshape(-1) if isinstance(q, Tensor) else _full(input, (1,), float(q), dt)
    with no_grad():
        # fractional positions, in input's dtype as PyTorch computes them
        if ignore_nan:
            valid = (~isnan(srt)).sum(-1, keepdim=True)
            ranks = qt * (valid - 1)
            ranks = where(ranks < 0, 0.0, ranks)             # all NaN: position 0, a NaN
        else:
            ranks = (qt * (n - 1)).expand(tuple(srt.shape[:-1]) + (qt.shape[0],))
            ranks = where(isnan(srt).any(-1, keepdim=True), float(n - 1), ranks)    # any NaN: the NaN
        if interpolation == "lower":
            ranks = ranks.floor()
        elif interpolation == "higher":
            ranks = ranks.ceil()
        elif interpolation == "nearest":
            ranks = ranks.round()                            # half to even, as PyTorch
        below = ranks.to(_dt.int64)
        if interpolation in ("linear", "midpoint"):
            above = ranks.ceil().to(_dt.int64)
            weights = ranks - below if interpolation == "linear" else _full(ranks, ranks.shape, 0.5, dt)
    r = srt.gather(-1, below)
    if interpolation in ("linear", "midpoint"):
        r = _lerp(r, srt.gather(-1, above), weights)
    r = r.movedim(-1, 0)                                     # (q, remaining dims...)
    if keepdim:
        if dim is None:
            r = r.reshape((r.shape[0],) + (1,) * input.ndim)
        elif input.ndim:
            r = r.unsqueeze(d + 1)
    if not isinstance(q, Tensor) or q.ndim == 0:
        r = r.squeeze(0)
    return _out(r, out)


def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None):
    """The q-th quantiles (q a number or a 1-d tensor in [0, 1]) along `dim` (None: all elements);
    a tensor q adds a leading dimension. interpolation between neighbouring order statistics:
    linear, lower, higher, midpoint or nearest. A slice containing NaN gives NaN."""
    if _amp.on:
        return _amp.run("quantile", quantile, (input, q, dim, keepdim),
                        {"interpolation": interpolation, "out": out})
    return _quantile(input, q, dim, keepdim, interpolation, out, False)


def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None):
    """quantile ignoring NaN values (a slice of NaN only gives NaN)."""
    if _amp.on:
        return _amp.run("nanquantile", nanquantile, (input, q, dim, keepdim),
                        {"interpolation": interpolation, "out": out})
    return _quantile(input, q, dim, keepdim, interpolation, out, True)


def cov(input, *, correction=1, fweights=None, aweights=None):
    """Covariance matrix of the variables in input's rows, observations in its columns (a 1-d input:
    one variable), with integer frequency weights and/or float observation weights."""
    _need(input, "cov")
    if input.ndim > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an input with "
                           f"{input.ndim} dimensions")
    if input._dtype is _dt.bool_:
        raise RuntimeError("cov(): bool dtype is not supported for input")
    correction = _int_arg(correction, "cov", "correction")
    x = input.reshape(1, -1) if input.ndim < 2 else input
    nobs = x.shape[1]
    w = None
    for name, wt, integral in (("fweights", fweights, True), ("aweights", aweights, False)):
        if wt is None:
            continue
        _need(wt, "cov", name)
        if wt.ndim > 1:
            raise RuntimeError(f"cov(): expected {name} to have one or fewer dimensions but got {name} with "
                               f"{wt.ndim} dimensions")
        if integral and wt._dtype.category != 1:
            raise RuntimeError(f"cov(): expected fweights to have integral dtype but got fweights with "
                               f"{_label(wt._dtype)} dtype")
        if not integral and wt._dtype.category != 2:
            raise RuntimeError(f"cov(): expected aweights to have floating point dtype but got aweights with "
                               f"{_label(wt._dtype)} dtype")
        if wt.numel() != nobs:
            raise RuntimeError(f"cov(): expected {name} to have the same numel as there are observations in the "
                               f"input but got {wt.numel()} != {nobs}")
        check_same_device(input, wt)
        if nobs and _any(wt < 0):
            raise RuntimeError(f"cov(): {name} cannot be negative")
        w = wt if w is None else w * wt
    if w is not None:
        w_sum = w.sum()
        if not _any(w_sum != 0):
            raise RuntimeError("cov(): weights sum to zero, can't be normalized")
    else:
        w_sum = nobs
    avg = (x if w is None else x * w).sum(1) / w_sum
    if w is not None and correction != 0 and aweights is not None:
        norm = w_sum - correction * (w * aweights).sum() / w_sum
    else:
        norm = w_sum - correction
    if (norm <= 0) if not isinstance(norm, Tensor) else _any(norm <= 0):
        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less than the number of "
                      "observations.", UserWarning, stacklevel=2)
        norm = norm * 0
    xc = x - avg.unsqueeze(1)
    c = xc.matmul((xc if w is None else xc * w).t())
    return (c / norm).squeeze()


def corrcoef(input):
    """Pearson correlation coefficients of the variables in input's rows (clipped to [-1, 1])."""
    _need(input, "corrcoef")
    if input.ndim > 2:
        raise RuntimeError(f"corrcoef(): expected input to have two or fewer dimensions but got an input with "
                           f"{input.ndim} dimensions")
    c = cov(input)
    if c.ndim == 0:
        return c / c                       # NaN for a degenerate variance, else 1
    sd = c.diagonal().sqrt()
    c = c / sd.reshape(-1, 1)
    c = c / sd.reshape(1, -1)
    return c.clamp(-1, 1)


# -- distances -------------------------------------------------------------------------------------
_CDIST_MODES = ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist")


def _euclidean_dist(x1, x2, inputs):
    """Euclidean distances between the rows of x1 (..., P, M) and x2 (..., R, M) from one matrix
    product ([-2 x1, |x1|^2, 1] @ [x2, 1, |x2|^2]^T), like PyTorch's mm path. `inputs`: the tensors
    the gradient goes to (x1, x2 before batch broadcasting)."""
    from .shape import cat
    with no_grad():
        n1, n2 = (x1 * x1).sum(-1, keepdim=True), (x2 * x2).sum(-1, keepdim=True)
        one1, one2 = _full(x1, n1.shape, 1, x1._dtype), _full(x2, n2.shape, 1, x2._dtype)
        sq = cat([x1 * -2, n1, one1], -1).matmul(cat([x2, one2, n2], -1).mT)
        r = sq.clamp(min=0).sqrt()
    r = _wrap(r, r._data, r._dtype)
    a, b = inputs
    if _gstate.enabled and (a._rg or b._rg):
        def vjp(g):
            zero = r == 0
            ratio = where(zero, 0.0, g / where(zero, 1.0, r))      # 0 at zero distance, as PyTorch
            g1 = x1 * ratio.sum(-1, keepdim=True) - ratio.matmul(x2) if a._rg else None
            g2 = x2 * ratio.sum(-2).unsqueeze(-1) - ratio.mT.matmul(x1) if b._rg else None
            return (None if g1 is None else grad_for(g1, a), None if g2 is None else grad_for(g2, b))
        record("EuclideanDistBackward0", r, (a, b), vjp, saved=(a, b, r))
    return r


def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """p-norm distances between each row of x1 (..., P, M) and each row of x2 (..., R, M), batch
    dimensions broadcast: shape (..., P, R). For p = 2, compute_mode selects PyTorch's faster
    matrix-product formulation (used when P or R exceeds 25 by default), which loses precision for
    nearby points; otherwise the differences are reduced directly."""
    if _amp.on:
        return _amp.run("cdist", cdist, (x1, x2, p, compute_mode))
    if compute_mode not in _CDIST_MODES:
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    _need(x1, "cdist", "x1")
    _need(x2, "cdist", "x2")
    for name, t in (("X1", x1), ("X2", x2)):
        if t.ndim < 2:
            raise RuntimeError(f"cdist only supports at least 2D tensors, {name} got: {t.ndim}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} X2: {x2.shape[-1]}")
    for name, t in (("X1", x1), ("X2", x2)):
        if t._dtype.category != 2:
            raise RuntimeError(f"cdist only supports floating-point dtypes, {name} got: {_label(t._dtype)}")
    for t in (x1, x2):
        if t._dtype is _dt.float16 or t._dtype is _dt.bfloat16:
            raise NotImplementedError(f"\"cdist\" not implemented for '{_label(t._dtype)}'")
    if x1._dtype is not x2._dtype:
        raise RuntimeError(f"expected scalar type {_label(x1._dtype)} but found {_label(x2._dtype)}")
    check_same_device(x1, x2)
    p = float(_real_arg(p, "cdist", "p"))
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    batch = _bshapes(tuple(x1.shape[:-2]), tuple(x2.shape[:-2]))
    P, R, M = x1.shape[-2], x2.shape[-2], x1.shape[-1]
    a = x1.expand(*batch, P, M) if tuple(x1.shape[:-2]) != batch else x1
    b = x2.expand(*batch, R, M) if tuple(x2.shape[:-2]) != batch else x2
    if M == 0:          # no features: every distance is 0 (and x1, x2 have no elements to differentiate)
        return _full(x1, batch + (P, R), 0, x1._dtype)
    if p == 2 and (compute_mode == "use_mm_for_euclid_dist" or
                   (compute_mode == "use_mm_for_euclid_dist_if_necessary" and (P > 25 or R > 25))):
        return _euclidean_dist(a, b, (x1, x2))
    from .linalg import vector_norm
    return vector_norm(a.unsqueeze(-2) - b.unsqueeze(-3), p, -1)


def dist(input, other, p=2):
    """The p-norm of input - other (broadcast), a 0-d tensor."""
    if _amp.on:
        return _amp.run("dist", dist, (input, other, p))
    _need(input, "dist")
    _need(other, "dist", "other")
    p = float(_real_arg(p, "dist", "p"))
    d = input - other
    if d._dtype.category != 2:
        raise RuntimeError(f"norm(): input dtype should be either floating point or complex. Got "
                           f"{_label(d._dtype)} instead.")
    from .linalg import vector_norm
    return vector_norm(d, p)


def renorm(input, p, dim, maxnorm, *, out=None):
    """input with every slice along `dim` whose p-norm exceeds `maxnorm` scaled down to norm
    maxnorm (by maxnorm / (norm + 1e-7), as PyTorch)."""
    if _amp.on:
        return _amp.run("renorm", renorm, (input, p, dim, maxnorm), {"out": out})
    _need(input, "renorm")
    p = float(_real_arg(p, "renorm", "p"))
    maxnorm = float(_real_arg(maxnorm, "renorm", "maxnorm"))
    if p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {_g(maxnorm)}")
    if input.ndim <= 1:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {input.ndim} dimensions")
    d = wrap_dim(dim, input.ndim)
    from .linalg import vector_norm
    norm = vector_norm(input, p, tuple(i for i in range(input.ndim) if i != d), keepdim=True)
    factor = where(norm > maxnorm, maxnorm / (norm + 1e-7), 1.0)
    return _out(input * factor, out)


# -- scatter variants ------------------------------------------------------------------------------
_REDUCES = ("sum", "prod", "mean", "amax", "amin")
_COMBINE = {"prod": "mul", "amax": "maximum", "amin": "minimum"}


def _scatter_reduce_data(k, xd, idx, sd, d, reduce, include_self, dt):
    """The forward of scatter_reduce on arrays; idx and sd have one shape, idx in range."""
    name = dt.name
    if dt is _dt.bool_ and reduce in ("sum", "prod"):
        reduce = "amax" if reduce == "sum" else "amin"          # logical or / and, as PyTorch
    counts = k["full"](xd.shape, 0, "int64")
    k["scatter_add"](counts, idx, k["full"](idx.shape, 1, "int64"), d)
    touched = k["gt"](counts, 0)
    if reduce in ("sum", "mean"):
        acc = k["copy"](xd) if include_self else k["where"](touched, k["full"]((), 0, name), xd)
        k["scatter_add"](acc, idx, sd, d)
        if reduce == "sum":
            return acc
        cnt = k["add"](counts, 1) if include_self else k["where"](touched, counts, 1)
        cnt = k["astype"](cnt, name)
        return k["div"](acc, cnt) if dt.category == 2 else k["floor_divide"](acc, cnt)
    # prod / amax / amin: sort the entries of each fiber by target, combine each run of equal targets
    # with an inclusive segmented scan (log2(L) doubling steps), then write the runs' last entries
    # (scatter is last-write-wins in row-major order)
    op = k[_COMBINE[reduce]]
    order = k["argsort"](idx, d, False, True)
    keys, vals = k["gather"](idx, order, d), k["gather"](sd, order, d)
    L = idx.shape[d]
    pre = (slice(None),) * d
    step = 1
    while step < L:
        cur, prev = pre + (slice(step, L),), pre + (slice(0, L - step),)
        vc = k["slice"](vals, cur)
        same = k["eq"](k["slice"](keys, cur), k["slice"](keys, prev))
        tail = k["where"](same, op(vc, k["slice"](vals, prev)), vc)
        vals = k["concat"]([k["slice"](vals, pre + (slice(0, step),)), tail], d)
        step *= 2
    red = k["copy"](xd)
    k["scatter"](red, keys, vals, d)
    return k["where"](touched, op(xd, red), xd) if include_self else red


def _scatter_reduce_vjp(g, x, d, it, s, r, reduce, include_self):
    """PyTorch's scatter_reduce_backward in Tensor ops: (grad of self, grad of src)."""
    from .indexing import scatter_add
    if reduce == "sum":
        gx, gs = g, g.gather(d, it)
    elif reduce == "mean":
        n = _full(g, g.shape, 1 if include_self else 0, g._dtype)
        n = scatter_add(n, d, it, _full(g, it.shape, 1, g._dtype))
        n = where(n == 0, 1.0, n)
        gx, gs = g / n, g.gather(d, it) / n.gather(d, it)
    elif reduce == "prod":
        # exclusive products, exact where self or a single src entry of a target is 0
        masked_x = where(x == 0, 1.0, x)
        gx = g * scatter_reduce(masked_x, d, it, s, "prod", include_self=include_self) / masked_x
        s_zero = s == 0
        zeros_at = scatter_add(_full(g, g.shape, 0, g._dtype), d, it, s_zero.to(g._dtype)).gather(d, it)
        single = s_zero & (zeros_at == 1)
        masked_s_result = scatter_reduce(x, d, it, where(single, 1.0, s), "prod", include_self=include_self)
        gs = where(single, (g * masked_s_result).gather(d, it), (g * r).gather(d, it) / where(s_zero, 1.0, s))
    else:
        # amax / amin: split evenly among the entries equal to the result (self counted as PyTorch does)
        value = r.gather(d, it)
        x_is = x == r
        s_is = s == value
        share = g / scatter_add(x_is.to(g._dtype), d, it, s_is.to(g._dtype))
        gx, gs = x_is * share, s_is * share.gather(d, it)
    if not include_self:
        gx = gx.scatter(d, it, 0)
    return gx, gs


def _scatter_reduce(self, dim, index, src, reduce, include_self, fname):
    _need(self, fname)
    _need(index, fname, "index")
    if not isinstance(src, Tensor):
        raise TypeError(f"{fname}(): argument 'src' (position 4) must be Tensor, not {type(src).__name__}")
    if reduce not in _REDUCES:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    if index._dtype not in (_dt.int32, _dt.int64):
        raise RuntimeError("scatter(): Expected dtype int32/int64 for index")
    if src._dtype is not self._dtype:
        raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
    if reduce == "mean" and self._dtype is _dt.bool_:
        raise NotImplementedError("\"scatter_reduce_mean\" not implemented for 'Bool'")
    check_same_device(self, index, src)
    nd = max(self.ndim, 1)
    if max(index.ndim, 1) != nd:
        raise RuntimeError("Index tensor must have the same number of dimensions as self tensor")
    if max(src.ndim, 1) != nd:
        raise RuntimeError("Index tensor must have the same number of dimensions as src tensor")
    d = wrap_dim(dim, self.ndim)
    if min(self.ndim, index.ndim, src.ndim) == 0:     # 0-d operands count as 1-d (PyTorch)
        r = _scatter_reduce(self.reshape(-1), 0, index.reshape(-1), src.reshape(-1), reduce, include_self, fname)
        return r.reshape(tuple(self.shape))
    xs, ish, ssh = tuple(self.shape), tuple(index.shape), tuple(src.shape)
    if any(ish[i] > ssh[i] or (i != d and ish[i] > xs[i]) for i in range(nd)):
        raise RuntimeError(f"Expected index {list(ish)} to be no larger than self {list(xs)} apart from dimension "
                           f"{d} and to be no larger size than src {list(ssh)}")
    from .indexing import _norm_index, _oob_rt, _pad_to
    k = self._k
    idx = _norm_index(k, index._data, xs[d], d, negative=False, err=_oob_rt)
    s = src if ssh == ish else src[tuple(slice(0, m) for m in ish)]
    if index.numel() == 0:
        data = k["copy"](self._data)
    else:
        data = _scatter_reduce_data(k, self._data, idx, s._data, d, reduce, include_self, self._dtype)
    r = _wrap(self, data, self._dtype)
    if _gstate.enabled and (self._rg or src._rg) and self._dtype.category == 2:
        it = _make(idx, _dt.int64, k, self._dev)
        x = self

        def vjp(g):
            gx, gs = _scatter_reduce_vjp(g, x, d, it, s, r, reduce, include_self)
            return (gx if x._rg else None, _pad_to(gs, ssh) if src._rg else None)
        record("ScatterReduceBackward0", r, (self, src), vjp, saved=(self, src, r))
    return r


def scatter_reduce(input, dim, index, src, reduce, *, include_self=True, out=None):
    """A copy of input where the src entries sent to each position (`index` along `dim`, as in
    scatter) are reduced with "sum", "prod", "mean", "amax" or "amin", together with input's own
    value when include_self. Integer mean rounds down."""
    r = _scatter_reduce(input, dim, index, src, reduce, include_self, "scatter_reduce")
    if isinstance(out, Tensor) and out._dtype is not r._dtype:
        raise RuntimeError(f"Expected out tensor to have dtype {r._dtype.name}, but got {out._dtype.name} instead")
    return _out(r, out)


def scatter_reduce_(self, dim, index, src, reduce, *, include_self=True):
    check_inplace(self, isinstance(src, Tensor) and src._rg)
    grad = _gstate.enabled and (self._rg or isinstance(src, Tensor) and src._rg)
    s = snapshot(self) if grad else self        # the vjp reads the old values
    return commit_inplace(self, _scatter_reduce(s, dim, index, src, reduce, include_self, "scatter_reduce_"))


def _check_src_shape(src, expected):
    if tuple(src.shape) != tuple(expected):
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = {list(src.shape)}, "
                           f"slice size = {list(expected)}")


def _embed_at(input, key, src):
    """A copy of input with input[key] = src (cast to input's dtype); gradients reach both."""
    r = input.clone()
    r[key] = src
    return r


def select_scatter(input, src, dim, index):
    """A copy of input with src written at `index` along `dim` (src: input.select(dim, index)'s shape)."""
    _need(input, "select_scatter")
    _need(src, "select_scatter", "src")
    if input.ndim == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = wrap_dim(dim, input.ndim)
    n = input.shape[d]
    i = _int_arg(index, "select_scatter", "index")
    if not -n <= i < n:
        raise IndexError(f"select(): index {i} out of range for tensor of size {list(input.shape)} at dimension {d}")
    _check_src_shape(src, input.shape[:d] + input.shape[d + 1:])
    return _embed_at(input, (slice(None),) * d + (i % n,), src)


def slice_scatter(input, src, dim=0, start=None, end=None, step=1, *, out=None):
    """A copy of input with src written at input[start:end:step] along `dim`."""
    _need(input, "slice_scatter")
    _need(src, "slice_scatter", "src")
    if input.ndim == 0:
        raise IndexError("slice() cannot be applied to a 0-dim tensor.")
    d = wrap_dim(dim, input.ndim)
    step = _int_arg(step, "slice_scatter", "step")
    if step <= 0:
        raise RuntimeError("slice step must be positive")
    sl = slice(*slice(None if start is None else _int_arg(start, "slice_scatter", "start"),
                      None if end is None else _int_arg(end, "slice_scatter", "end"), step).indices(input.shape[d]))
    expected = list(input.shape)
    expected[d] = len(range(sl.start, sl.stop, sl.step))
    _check_src_shape(src, expected)
    return _out(_embed_at(input, (slice(None),) * d + (sl,), src), out)


def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):
    """A copy of input with src written on the diagonal `offset` of the (dim1, dim2) planes (src:
    input.diagonal(offset, dim1, dim2)'s shape)."""
    _need(input, "diagonal_scatter")
    _need(src, "diagonal_scatter", "src")
    offset = _int_arg(offset, "diagonal_scatter", "offset")
    _check_src_shape(src, input.diagonal(offset, dim1, dim2).shape)
    from .shape import _embed
    nd = input.ndim
    a, b = wrap_dim(dim1, nd), wrap_dim(dim2, nd)
    n1, n2 = input.shape[a], input.shape[b]
    v = src if src._dtype is input._dtype else src.to(input._dtype)
    placed = _embed(v, n1, n2, offset).movedim((nd - 2, nd - 1), (a, b))
    k = input._k
    on = k["eq"](k["sub"](k["reshape"](k["arange"](0, n2, 1, "int64"), (1, n2)),
                          k["reshape"](k["arange"](0, n1, 1, "int64"), (n1, 1))), offset)
    if a > b:
        on = k["permute"](on, (1, 0))
    mask = k["reshape"](on, tuple(input.shape[i] if i in (a, b) else 1 for i in range(nd)))
    return where(_wrap(input, mask, _dt.bool_), placed, input)


# -- shapes ----------------------------------------------------------------------------------------
def broadcast_shapes(*shapes):
    """The shape all given shapes (ints or sequences of ints) broadcast to, as a Size."""
    shapes = [(s,) if isinstance(s, numbers.Integral) and not isinstance(s, bool) else s
              for s in shapes if s is not None]
    for s in shapes:
        if not isinstance(s, (tuple, list)):
            raise RuntimeError(f"Input shapes should be of type ints, a tuple of ints, or a list of ints, got {s}")
        for v in s:
            if isinstance(v, bool) or not isinstance(v, numbers.Integral):
                raise TypeError(f"broadcast_shapes(): shapes must hold ints, got {type(v).__name__} ({v!r})")
    common = [1] * max((len(s) for s in shapes), default=0)
    for i, s in enumerate(shapes):
        for j in range(-1, -1 - len(s), -1):
            v = s[j]
            if v == common[j]:
                continue
            if common[j] == 1:
                if v < 0:
                    raise ValueError("Attempting to broadcast a dimension with negative length!")
                common[j] = v
            elif v != 1:
                raise RuntimeError(f"Attempting to broadcast a dimension of length {v} at {j}! Mismatching argument "
                                   f"at index {i} had {s}; but expected shape should be broadcastable to {common}")
    return Size(int(v) for v in common)


# -- Tensor methods --------------------------------------------------------------------------------
def _attach():
    T = Tensor
    for name in ("diff", "bincount", "histc", "rot90", "quantile", "nanquantile", "cov", "corrcoef", "dist",
                 "renorm", "scatter_reduce", "scatter_reduce_", "select_scatter", "slice_scatter",
                 "diagonal_scatter", "diagflat"):
        setattr(T, name, globals()[name])
    from .linalg import _inplace          # the in-place form: computed on a snapshot, written into self
    T.renorm_ = _inplace(renorm)


_attach()

PUBLIC = ["diff", "bincount", "histc", "bucketize", "searchsorted", "isin", "unravel_index", "tril_indices",
          "triu_indices", "cartesian_prod", "combinations", "block_diag", "rot90", "trapezoid", "trapz",
          "cumulative_trapezoid", "vander", "quantile", "nanquantile", "cov", "corrcoef", "cdist", "dist", "renorm",
          "scatter_reduce", "select_scatter", "slice_scatter", "diagonal_scatter", "diagflat", "broadcast_shapes",
          "pdist"]
