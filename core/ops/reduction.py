"""Reductions: sum mean prod max min argmax argmin var std median any all ... (dim, keepdim=False)."""
from __future__ import annotations

from .. import dtypes as _dt
from ._core import Tensor, _gstate, _make, normalize_dims, record


def _unsqueeze_to(g, shape, axes):
    """Reshape a reduced gradient so it broadcasts against the input `shape`."""
    if axes is None:
        return g.reshape((1,) * len(shape))
    kept = list(shape)
    for a in axes:
        kept[a] = 1
    return g.reshape(tuple(kept))


def sum(input, dim=None, keepdim=False, *, dtype=None):
    """Sum over `dim` (int, tuple or None for all). Integer and bool inputs sum in int64."""
    shape = input._data.shape
    axes = normalize_dims(dim, len(shape))
    if dtype is not None:
        dt = _dt.as_dtype(dtype)
    else:
        dt = input._dtype if input._dtype.category == 2 else _dt.int64
    k = input._k
    data = input._data if dt is input._dtype else k["astype"](input._data, dt.name)
    r = _make(k["sum"](data, axes, keepdim), dt, k, input._dev)
    if input._rg and _gstate.enabled:
        x = input

        def vjp(g):
            if not keepdim:
                g = _unsqueeze_to(g, shape, axes)
            g = g.expand(*shape)
            return (g if g._dtype is x._dtype else g.to(x._dtype),)
        record("SumBackward1" if axes is not None else "SumBackward0", r, (x,), vjp)
    return r


def _attach():
    Tensor.sum = sum


_attach()
PUBLIC = ["sum"]
