"""repr/str of tensors, laid out exactly as PyTorch does (`torch/_tensor_str.py`), on host arrays:
`tensor([1., 2.], dtype=tensorplug.float64)`, `tensor([ True, False])`, scientific notation when
the magnitudes call for it, `...` summaries past `threshold` elements. `set_printoptions` as in PyTorch.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from . import dtypes as _dt

__all__ = ["set_printoptions", "format_tensor"]


@dataclass
class _PrintOptions:
    precision: int = 4
    threshold: float = 1000
    edgeitems: int = 3
    linewidth: int = 80
    sci_mode: bool | None = None


PRINT_OPTS = _PrintOptions()
_PROFILES = {"default": (4, 1000, 3, 80), "short": (2, 1000, 2, 80), "full": (4, math.inf, 3, 80)}


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None,
                     sci_mode=None):
    """Printing options, as `torch.set_printoptions` (profiles "default", "short", "full")."""
    if profile is not None:
        if profile not in _PROFILES:
            raise ValueError(f"unknown print profile {profile!r}; known: {', '.join(_PROFILES)}")
        (PRINT_OPTS.precision, PRINT_OPTS.threshold, PRINT_OPTS.edgeitems,
         PRINT_OPTS.linewidth) = _PROFILES[profile]
    if precision is not None:
        PRINT_OPTS.precision = precision
    if threshold is not None:
        PRINT_OPTS.threshold = threshold
    if edgeitems is not None:
        PRINT_OPTS.edgeitems = edgeitems
    if linewidth is not None:
        PRINT_OPTS.linewidth = linewidth
    PRINT_OPTS.sci_mode = sci_mode


class _Formatter:
    """Chooses int / fixed / scientific mode and the common width from the values shown."""

    def __init__(self, arr: np.ndarray, floating: bool):
        self.floating = floating
        self.int_mode, self.sci_mode, self.max_width = True, False, 1
        p = PRINT_OPTS.precision
        flat = arr.reshape(-1)
        if not floating:
            for v in flat.tolist():
                self.max_width = max(self.max_width, len(f"{v}"))
            return
        vals = flat[np.isfinite(flat) & (flat != 0)].astype(np.float64)
        if vals.size == 0:
            return
        absv = np.abs(vals)
        lo, hi = float(absv.min()), float(absv.max())
        self.int_mode = bool(np.all(vals == np.ceil(vals)))
        self.sci_mode = (hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4) if PRINT_OPTS.sci_mode is None \
            else PRINT_OPTS.sci_mode
        for v in vals.tolist():
            if self.sci_mode:
                n = len(f"{v:.{p}e}")
            elif self.int_mode:
                n = len(f"{v:.0f}") + 1
            else:
                n = len(f"{v:.{p}f}")
            self.max_width = max(self.max_width, n)

    def format(self, v) -> str:
        if self.floating:
            if self.sci_mode:
                s = f"{v:{self.max_width}.{PRINT_OPTS.precision}e}"
            elif self.int_mode:
                s = f"{v:.0f}"
                if not (math.isinf(v) or math.isnan(v)):
                    s += "."
            else:
                s = f"{v:.{PRINT_OPTS.precision}f}"
        else:
            s = f"{v}"
        return s.rjust(self.max_width)


class _ComplexFormatter:
    """Complex values as PyTorch prints them: the real and imaginary parts each laid out by a
    formatter of their own (`1.0000+2.j`, `0.+1.0000e-03j`)."""

    def __init__(self, arr: np.ndarray):
        self.re, self.im = _Formatter(arr.real, True), _Formatter(arr.imag, True)
        self.max_width = self.re.max_width + self.im.max_width + 1     # (+1: the "j")

    def format(self, v) -> str:
        re = self.re.format(v.real)
        im = (self.im.format(v.imag) + "j").lstrip()
        return re + im if im[0] in "+-" else re + "+" + im


def _summarized(arr: np.ndarray) -> np.ndarray:
    """The elements a summarized print shows (PyTorch's get_summarized_data)."""
    e = PRINT_OPTS.edgeitems
    if arr.ndim == 0:
        return arr
    if arr.ndim == 1:
        return np.concatenate((arr[:e], arr[-e:])) if arr.shape[0] > 2 * e else arr
    if not e:
        return np.empty((0,) * arr.ndim, dtype=arr.dtype)
    rows = [arr[i] for i in range(e)] + [arr[i] for i in range(len(arr) - e, len(arr))] \
        if arr.shape[0] > 2 * e else list(arr)
    return np.stack([_summarized(r) for r in rows])


def _vector_str(arr, indent, summarize, fmt):
    e = PRINT_OPTS.edgeitems
    per_line = max(1, math.floor((PRINT_OPTS.linewidth - indent) / (fmt.max_width + 2)))
    if summarize and not e:
        data = ["..."]
    elif summarize and arr.shape[0] > 2 * e:
        data = [fmt.format(v) for v in arr[:e].tolist()] + [" ..."] + \
               [fmt.format(v) for v in arr[-e:].tolist()]
    else:
        data = [fmt.format(v) for v in arr.tolist()]
    lines = [", ".join(data[i:i + per_line]) for i in range(0, len(data), per_line)]
    return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"


def _body(arr, indent, summarize, fmt):
    if arr.ndim == 0:
        return fmt.format(arr.item())
    if arr.ndim == 1:
        return _vector_str(arr, indent, summarize, fmt)
    e = PRINT_OPTS.edgeitems
    if summarize and arr.shape[0] > 2 * e:
        slices = [_body(arr[i], indent + 1, summarize, fmt) for i in range(e)] + ["..."] + \
                 [_body(arr[i], indent + 1, summarize, fmt) for i in range(len(arr) - e, len(arr))]
    else:
        slices = [_body(arr[i], indent + 1, summarize, fmt) for i in range(arr.shape[0])]
    return "[" + ("," + "\n" * (arr.ndim - 1) + " " * (indent + 1)).join(slices) + "]"


def _add_suffixes(text, suffixes, indent):
    parts = [text]
    last = len(text) - text.rfind("\n") + 1
    for s in suffixes:
        if last + len(s) + 2 > PRINT_OPTS.linewidth:
            parts.append(",\n" + " " * indent + s)
            last = indent + len(s)
        else:
            parts.append(", " + s)
            last += len(s) + 2
    return "".join(parts) + ")"


def format_tensor(t) -> str:
    prefix = "tensor("
    indent = len(prefix)
    arr = np.asarray(t._k["to_numpy"](t._data))
    dtype = t._dtype
    suffixes = []
    if t.device.type != "cpu":
        suffixes.append(f"device='{t.device}'")
    if arr.size == 0:
        if arr.ndim != 1:
            suffixes.append(f"size={tuple(arr.shape)}")
        if dtype is not _dt.get_default_dtype():
            suffixes.append(f"dtype={dtype!r}")
        body = "[]"
    else:
        if not PRINT_OPTS.edgeitems:
            suffixes.append(f"size={tuple(arr.shape)}")
        if dtype not in (_dt.get_default_dtype(), _dt.int64, _dt.bool_, _dt.scalar_dtype(1j)):
            suffixes.append(f"dtype={dtype!r}")     # (the default complex dtype is not named either)
        if dtype.name in ("float16", "bfloat16"):     # formatted from float32 values, as PyTorch
            arr = arr.astype(np.float32)
        summarize = arr.size > PRINT_OPTS.threshold
        shown = _summarized(arr) if summarize else arr
        fmt = _ComplexFormatter(shown) if dtype.is_complex else _Formatter(shown, dtype.is_floating_point)
        body = _body(arr, indent, summarize, fmt)
    if t.grad_fn is not None:
        suffixes.append(f"grad_fn=<{t.grad_fn.name()}>")
    elif t._rg:
        suffixes.append("requires_grad=True")
    return _add_suffixes(prefix + body, suffixes, indent)

