"""repr/str of tensors in PyTorch's style: `tensor([1., 2.], dtype=tensorplug.float64)`."""
from __future__ import annotations

import numpy as np

_SHOWN_DTYPES_SKIP = ("float32", "int64", "bool")


def _float_formatter(values: np.ndarray):
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return lambda v: _special(v) or f"{v:.4f}"
    absmax = float(np.max(np.abs(finite)))
    nonzero = np.abs(finite[finite != 0])
    absmin = float(np.min(nonzero)) if nonzero.size else 0.0
    if np.all(finite == np.round(finite)) and absmax < 1e8:
        width = max(len(f"{v:.0f}") for v in finite.tolist()) + 1
        return lambda v: (_special(v) or f"{v:.0f}.").rjust(width)
    if absmax >= 1e8 or (absmin and absmin < 1e-4) or (absmin and absmax / absmin > 1e3 and absmax >= 1e3):
        return lambda v: (_special(v) or f"{v:.4e}").rjust(10)
    width = max(len(f"{v:.4f}") for v in finite.tolist())
    return lambda v: (_special(v) or f"{v:.4f}").rjust(width)


def _special(v):
    if v != v:
        return "nan"
    if v == float("inf"):
        return "inf"
    if v == float("-inf"):
        return "-inf"
    return None


def format_tensor(t) -> str:
    arr = np.asarray(t._k["to_numpy"](t._data))
    dtype = t._dtype
    suffix = []
    if t.device.type != "cpu":
        suffix.append(f"device='{t.device}'")
    if arr.size == 0 and arr.ndim != 1:
        suffix.insert(0, f"size={tuple(arr.shape)}")
    if dtype.name not in _SHOWN_DTYPES_SKIP or (arr.size == 0 and dtype.name == "int64"):
        suffix.append(f"dtype={dtype!r}")
    if t.grad_fn is not None:
        suffix.append(f"grad_fn=<{t.grad_fn.name()}>")
    elif t._rg:
        suffix.append("requires_grad=True")
    if arr.size == 0:
        body = "[]"
    else:
        if dtype.is_floating_point:
            fmt = {"float_kind": _float_formatter(arr.astype(np.float64))}
        elif dtype.name == "bool":
            fmt = {"bool": lambda v: "True" if v else "False"}
        else:
            fmt = {"int": lambda v: str(v)}
        body = np.array2string(arr, separator=", ", formatter=fmt, prefix="tensor(",
                               threshold=1000, edgeitems=3, max_line_width=80)
    return "tensor(" + body + "".join(", " + s for s in suffix) + ")"
