"""Printing a sparse COO tensor as PyTorch does: its indices, values, size, nnz, then the suffixes."""
from __future__ import annotations

import numpy as np

from .. import dtypes as _dt
from .._formatting import PRINT_OPTS, _body, _ComplexFormatter, _Formatter, _summarized, _add_suffixes


def _inner(t, indent):
    """`tensor([...])` of dense t, its continuation lines indented for a start at column `indent`."""
    arr = np.asarray(t._k["to_numpy"](t._data))
    if arr.size == 0:
        return f"tensor([], size={tuple(arr.shape)})"
    if t._dtype.name in ("float16", "bfloat16"):
        arr = arr.astype(np.float32)
    summarize = arr.size > PRINT_OPTS.threshold
    shown = _summarized(arr) if summarize else arr
    fmt = _ComplexFormatter(shown) if t._dtype.is_complex else _Formatter(shown, t._dtype.is_floating_point)
    return "tensor(" + _body(arr, indent + len("tensor("), summarize, fmt) + ")"


def format_sparse(s) -> str:
    head, pad = "tensor(indices=", " " * len("tensor(")
    text = head + _inner(s._i, len(head)) + ",\n" + pad + "values=" + _inner(s._v, len(pad) + len("values="))
    suffixes = []
    if s.device.type != "cpu":
        suffixes.append(f"device='{s.device}'")
    suffixes += [f"size={tuple(s.shape)}", f"nnz={s._nnz()}"]
    if s._dtype not in (_dt.get_default_dtype(), _dt.int64, _dt.bool_):
        suffixes.append(f"dtype={s._dtype!r}")
    suffixes.append(f"layout={s.layout!r}")
    if s.grad_fn is not None:
        suffixes.append(f"grad_fn=<{s.grad_fn.name()}>")
    elif s._rg:
        suffixes.append("requires_grad=True")
    return _add_suffixes(text + ",\n" + pad + suffixes[0], suffixes[1:], len(pad))
