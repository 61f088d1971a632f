"""Padding ops of nn.functional: `pad` with the constant, reflect, replicate and circular modes.

The pad list follows PyTorch: (left, right) of the last dimension first, then of the one before,
...; negative widths crop. Constant padding runs the backend's `pad` kernel and its gradient is a
slice of the incoming gradient. The other modes are an `index_select` per padded dimension with
the source index of every output position, so their gradient (a scatter-add of g back to the
sources) and every higher-order gradient come from the indexing ops.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes as _dt
from ..amp.state import state as _amp
from ._core import Tensor, _gstate, _make, record

_MODES = ("constant", "reflect", "replicate", "circular")


def _check_pad(input, pad):
    if not isinstance(input, Tensor):
        raise TypeError(f"pad(): argument 'input' must be Tensor, not {type(input).__name__}")
    if not isinstance(pad, (list, tuple)):
        raise TypeError(f"pad(): argument 'pad' must be tuple of ints, not {type(pad).__name__}")
    pad = tuple(int(p) for p in pad)
    nd = input.ndim
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(pad) > 2 * nd:
        raise RuntimeError(f"Padding length should be less than or equal to two times the input dimension "
                           f"but got padding length {len(pad)} and input of dimension {nd}")
    return pad


def _widths(pad, nd):
    """{dim: (before, after)} for the padded dims (pad lists the last dim first)."""
    out = {}
    for i in range(len(pad) // 2):
        out[nd - 1 - i] = (pad[2 * i], pad[2 * i + 1])
    return out


def _constant(input, widths, value):
    shape = tuple(input._data.shape)
    x = input
    # crop first (negative widths): narrow is a differentiable view
    for d, (b, a) in widths.items():
        n = shape[d]
        if n + b + a < 0:
            raise RuntimeError(f"The input size {n}, plus negative padding {b} and {a} resulted in a negative "
                               f"output size, which is invalid. Check dimension {d} of your input.")
        lo, hi = max(-b, 0), max(-a, 0)
        if lo + hi > n:
            raise RuntimeError("narrow(): length must be non-negative.")
        if lo or hi:
            x = x.narrow(d, lo, n - lo - hi)
    pw = tuple((max(widths.get(d, (0, 0))[0], 0), max(widths.get(d, (0, 0))[1], 0)) for d in range(len(shape)))
    if not any(b or a for b, a in pw):
        return x.clone()      # PyTorch's pad never returns (a view of) its input
    k = x._k
    dt = x._dtype
    v = 0 if value is None else value
    if dt.category == 1:
        v = int(v)
    elif dt.category == 0:
        v = bool(v)
    else:
        v = float(v)
    r = _make(k["pad"](x._data, pw, "constant", v), dt, k, x._dev)
    if x._rg and _gstate.enabled:
        xs = tuple(x._data.shape)
        key = tuple(slice(b, b + n) for (b, _), n in zip(pw, xs))
        record("ConstantPadNdBackward0", r, (x,), lambda g: (g[key],))
    return r


def _source_index(n, b, a, mode):
    """The source index (into a dim of size n) of each output position for padding (b, a)."""
    m = n + b + a
    if mode == "circular":
        # PyTorch crops (negative widths) first, then wraps around the cropped range
        lo, hi = max(-b, 0), max(-a, 0)
        b2 = max(b, 0)
        return lo + np.mod(np.arange(m, dtype=np.int64) - b2, n - lo - hi)
    s = np.arange(m, dtype=np.int64) - b
    if mode == "reflect":
        s = np.abs(s)
        s = np.where(s >= n, 2 * (n - 1) - s, s)
    else:
        s = np.clip(s, 0, n - 1)
    return s


_NONCONST = ("Supported combinations for non-constant padding:\n"
             "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
             "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
             "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")


def _indexed(input, widths, mode):
    shape = tuple(input._data.shape)
    nd = len(shape)
    npad = len(widths)
    if not ((npad == 1 and nd in (2, 3)) or (npad == 2 and nd in (3, 4)) or (npad == 3 and nd in (4, 5))):
        raise NotImplementedError(f"Padding size {2 * npad} is not supported for {nd}D input tensor.\n"
                                  + _NONCONST)
    names = "DHW"[3 - npad:]
    for i, (d, (b, a)) in enumerate(sorted(widths.items())):
        n = shape[d]
        m = n + b + a
        if mode != "circular" and any(s == 0 for s in shape[1:]):
            raise RuntimeError(f"Expected {nd - 1}D or {nd}D (batch mode) tensor with possibly 0 batch size "
                               f"and other non-zero dimensions for input, but got: {list(shape)}")
        if mode == "reflect" and (b >= n or a >= n):
            raise RuntimeError(f"Argument #4: Padding size should be less than the corresponding input "
                               f"dimension, but got: padding ({b}, {a}) at dimension {d} of input "
                               f"{list(shape)}")
        if mode == "circular":
            lo, hi = max(-b, 0), max(-a, 0)
            if b > n or a > n or (n - lo - hi <= 0 and m > 0) or lo + hi > n:
                raise RuntimeError("Padding value causes wrapping around more than once.")
        elif m < 1:
            raise RuntimeError(f"input ({names[i]}: {n}) is too small. Calculated output {names[i]}: {m}")
    from .creation import tensor
    from .indexing import index_select
    x = input
    for d, (b, a) in sorted(widths.items()):
        if b == 0 and a == 0:
            continue
        idx = tensor(_source_index(shape[d], b, a, mode), dtype=_dt.int64, device=input._dev)
        x = index_select(x, d, idx)
    if x is input:
        x = x.clone()
    return x


def pad(input, pad, mode="constant", value=None):
    """Pad (or, with negative widths, crop) `input`. `pad` lists (left, right) widths starting from
    the last dimension: pad(x, (1, 1, 2, 0)) pads the last dim by 1 on both sides and the one before
    by 2 at the front. mode: 'constant' (fill with value, default 0), 'reflect' (mirror without
    repeating the edge), 'replicate' (repeat the edge), 'circular' (wrap around)."""
    if _amp.on and mode in _AUTOCAST_NAMES:      # PyTorch's kernels reflection_pad1d, replication_pad3d, ...
        n = len(pad) // 2 if isinstance(pad, (list, tuple)) else 0
        return _amp.run(f"{_AUTOCAST_NAMES[mode]}_pad{n}d", _pad, (input, pad, mode, value))
    pad = _check_pad(input, pad)
    if mode not in _MODES:
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    widths = _widths(pad, input.ndim)
    if mode == "constant":
        return _constant(input, widths, value)
    if value is not None and value != 0:
        raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument')
    return _indexed(input, widths, mode)


_pad = pad
_AUTOCAST_NAMES = {"reflect": "reflection", "replicate": "replication"}

FUNCTIONAL = ["pad"]
