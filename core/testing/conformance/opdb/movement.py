"""Records of the movement and view kernels: reshape, permute, broadcast_to, slice, diagonal, flip,
concat, pad. View kernels are also checked for aliasing (writes through the view reach the base, or
writes to the base show in a read-only view)."""
from __future__ import annotations

import numpy as np

from ._base import ALL, COMPLEX, A, ErrorCase, OpRecord, Sample, edges, register, scalar, values


def _torch():
    import tensorplug
    return tensorplug


def _v(rng, dt):
    return lambda *s: values(rng, dt, s)


# -- reshape ---------------------------------------------------------------------------------------
def _reshape_view_samples(dt, rng):
    v = _v(rng, dt)
    return [Sample((A(v(3, 4)), (2, 6))), Sample((A(v(12)), (3, 2, 2))), Sample((A(v(2, 3, 4)), (6, 4))),
            Sample((A(v(1)), ()))]


def _reshape_samples(dt, rng):
    v = _v(rng, dt)
    return _reshape_view_samples(dt, rng) + [
        Sample((A(v()), (1, 1))),
        Sample((A(v(0, 3)), (3, 0))),
        Sample((A(v(3, 4), "T"), (12,)), desc="transposed (3, 4) to (12,): a copy"),
        Sample((A(v(2, 6), "S"), (3, 4))),
        Sample((A(edges(dt)), (2, edges(dt).size // 2))),
    ]


register(OpRecord("reshape", "movement", ALL + COMPLEX, _reshape_samples, ref=lambda x, shape: np.reshape(x, shape),
                  view="write", view_samples=_reshape_view_samples,
                  errors=[ErrorCase("reshape of 6 elements to (4,)",
                                    lambda T: T([[1, 2, 3], [4, 5, 6]]).reshape(4))]))


# -- permute ---------------------------------------------------------------------------------------
def _permute_samples(dt, rng):
    v = _v(rng, dt)
    return [Sample((A(v(2, 3, 4)), (2, 0, 1))), Sample((A(v(3, 4), "T"), (1, 0))),
            Sample((A(v()), ())), Sample((A(v(5), "S"), (0,))), Sample((A(v(0, 2, 3)), (1, 2, 0))),
            Sample((A(v(2, 3, 4), "R"), (0, 2, 1)))]


register(OpRecord("permute", "movement", ALL + COMPLEX, _permute_samples, ref=lambda x, axes: np.transpose(x, axes),
                  view="write",
                  errors=[ErrorCase("permute of a 2-d tensor with 3 dims",
                                    lambda T: T([[1, 2], [3, 4]]).permute(0, 1, 2))]))


# -- broadcast_to ----------------------------------------------------------------------------------
def _broadcast_samples(dt, rng):
    v = _v(rng, dt)
    return [Sample((A(v(3)), (2, 3))), Sample((A(v(2, 1)), (2, 5))), Sample((A(v()), (3,))),
            Sample((A(v(1, 3), "S"), (4, 2, 3))), Sample((A(v(0)), (2, 0))), Sample((A(v(3, 1), "T"), (3, 4)))]


register(OpRecord("broadcast_to", "movement", ALL + COMPLEX, _broadcast_samples,
                  ref=lambda x, shape: np.broadcast_to(x, shape), view="read",
                  errors=[ErrorCase("expand of (3,) to (2, 4)", lambda T: T([1, 2, 3]).expand(2, 4))]))


# -- slice -----------------------------------------------------------------------------------------
def _slice_samples(dt, rng):
    v = _v(rng, dt)
    S = slice
    return [
        Sample((A(v(6, 4)), (S(1, 4),))),
        Sample((A(v(6, 4)), (S(None, None, 2), 1))),
        Sample((A(v(3, 5)), (Ellipsis, S(None, None, -1)))),
        Sample((A(v(3, 5), "T"), (None, S(0, 2)))),
        Sample((A(v(2, 3, 4)), (1, None, Ellipsis))),
        Sample((A(v(7)), (S(5, 10),))),
        Sample((A(v(7), "S"), (S(6, 0, -2),))),
        Sample((A(v(4, 4), "R"), (S(1, 3), S(None, None, 3)))),
        Sample((A(v(2, 3, 4)), (Ellipsis, 2))),
        Sample((A(v(3)), (0,))),
    ]


register(OpRecord("slice", "movement", ALL + COMPLEX, _slice_samples, ref=lambda x, key: x[key], view="write",
                  errors=[ErrorCase("index 5 of a dimension of size 3",
                                    lambda T: T([1, 2, 3])[5], IndexError)]))


# -- diagonal --------------------------------------------------------------------------------------
def _diagonal_samples(dt, rng):
    v = _v(rng, dt)
    return [Sample((A(v(3, 4)), 0, 0, 1)), Sample((A(v(3, 4)), 1, 0, 1)), Sample((A(v(4, 3), "T"), -1, 0, 1)),
            Sample((A(v(3, 3)), 5, 0, 1)), Sample((A(v(2, 3, 4)), 0, 1, 2)), Sample((A(v(2, 3, 4), "S"), 1, 0, 2)),
            Sample((A(v(3, 4)), 0, 1, 0))]


register(OpRecord("diagonal", "movement", ALL + COMPLEX, _diagonal_samples,
                  ref=lambda x, off, a1, a2: np.diagonal(x, off, a1, a2), view="read",
                  errors=[ErrorCase("diagonal with dim1 == dim2",
                                    lambda T: _torch().diagonal(T([[1, 2], [3, 4]]), 0, 1, 1))]))


# -- flip ------------------------------------------------------------------------------------------
def _flip_samples(dt, rng):
    v = _v(rng, dt)
    return [Sample((A(v(3, 4)), (0,))), Sample((A(v(3, 4), "T"), (1,))), Sample((A(v(2, 3, 4)), (0, 2))),
            Sample((A(v()), ())), Sample((A(v(0, 3)), (1,))), Sample((A(v(6), "S"), (0,)))]


register(OpRecord("flip", "movement", ALL + COMPLEX, _flip_samples, ref=lambda x, axes: np.flip(x, axes),
                  errors=[ErrorCase("flip with a repeated dim", lambda T: T([[1, 2]]).flip(0, 0))]))


# -- concat ----------------------------------------------------------------------------------------
def _concat_samples(dt, rng):
    v = _v(rng, dt)
    return [
        Sample(([A(v(2, 3)), A(v(4, 3))], 0)),
        Sample(([A(v(2, 3)), A(v(2, 0)), A(v(2, 1), "S")], 1)),
        Sample(([A(v(5))], 0)),
        Sample(([A(v(3, 2), "T"), A(v(3, 3)), A(v(3, 1))], 1)),
        Sample(([A(v(0)), A(v(0))], 0)),
        Sample(([A(v(1, 2, 3)), A(v(2, 2, 3), "R")], 0)),
    ]


register(OpRecord("concat", "movement", ALL + COMPLEX, _concat_samples, ref=lambda xs, axis: np.concatenate(xs, axis),
                  view="copy",
                  errors=[ErrorCase("cat of shapes (2, 3) and (2, 2) along dim 0",
                                    lambda T: _torch().cat([T([[1, 2, 3], [4, 5, 6]]), T([[1, 2], [3, 4]])], 0))]))


# -- pad -------------------------------------------------------------------------------------------
def _pad_samples(dt, rng):
    v = _v(rng, dt)
    fill = scalar(dt, 1)
    out = [
        Sample((A(v(3, 4)), ((1, 2), (0, 3)), "constant", fill)),
        Sample((A(v(3, 4), "T"), ((0, 0), (2, 1)), "constant", scalar(dt, 0))),
        Sample((A(v(5)), ((2, 3),), "reflect", scalar(dt, 0))),
        Sample((A(v(2, 3, 4), "S"), ((0, 0), (1, 1), (2, 3)), "reflect", scalar(dt, 0))),
        Sample((A(v(3, 4)), ((2, 2), (1, 0)), "replicate", scalar(dt, 0))),
        Sample((A(v(2, 3, 4), "R"), ((0, 0), (0, 0), (3, 1)), "replicate", scalar(dt, 0))),
        Sample((A(v(0, 3)), ((1, 1), (0, 0)), "constant", fill)),
        Sample((A(v(2)), ((0, 0),), "constant", fill)),
    ]
    if dt.startswith("float"):
        out.append(Sample((A(v(2, 2)), ((1, 1), (1, 1)), "constant", float("nan"))))
    return out


def _pad_ref(x, widths, mode, value):
    if mode == "constant":
        return np.pad(x, widths, mode="constant", constant_values=value)
    return np.pad(x, widths, mode={"reflect": "reflect", "replicate": "edge"}[mode])


def _pad_error(T):
    import tensorplug.nn.functional as F
    return F.pad(T([[1.0, 2.0, 3.0]]), (3, 3), mode="reflect")


register(OpRecord("pad", "movement", ALL + COMPLEX, _pad_samples, ref=_pad_ref, view="copy",
                  errors=[ErrorCase("reflect padding as wide as the dimension", _pad_error,
                                    (RuntimeError, ValueError))],
                  doc="modes constant (with value), reflect (no edge repeat), replicate (edge)"))
