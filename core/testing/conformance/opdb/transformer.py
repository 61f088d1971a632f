"""Records of the transformer-block kernels (tensorplug.dispatch.optional_transformer): softmax and
log_softmax backwards, layer_norm and its backward, gelu and its backward, embedding_backward.
References are the float64 formulas written out directly."""
from __future__ import annotations

import math

import numpy as np

from ._base import FLOAT, A, OpRecord, Sample, register, values

TOL = {"float16": (1e-2, 1e-2), "bfloat16": (3e-2, 3e-2), "float32": (2e-5, 2e-5), "float64": (1e-10, 1e-11)}


def _softmax(x, axis):
    e = np.exp(x - x.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


def _sm_samples(log):
    def samples(dt, rng):
        out = []
        for shape, axis, layout in (((4, 5), 1, "C"), ((3, 4, 2), 1, "C"), ((2, 40), 1, "T"), ((6,), 0, "C")):
            y = _softmax(values(rng, "float64", shape, -3, 3), axis)
            y = np.log(y) if log else y
            out.append(Sample((A(values(rng, dt, shape)), A(y.astype(dt), layout), axis),
                              desc=f"{shape} axis {axis} {layout}"))
        return out
    return samples


register(OpRecord("softmax_backward", "nn", FLOAT, _sm_samples(False), tol=TOL,
                  ref=lambda g, y, axis: y * (g - (g * y).sum(axis, keepdims=True)),
                  doc="out * (grad - sum(grad * out))"))
register(OpRecord("log_softmax_backward", "nn", FLOAT, _sm_samples(True), tol=TOL,
                  ref=lambda g, y, axis: g - np.exp(y) * g.sum(axis, keepdims=True),
                  doc="grad - exp(out) * sum(grad)"))


def layer_norm_ref(x, w, b, eps):
    mu = x.mean(1, keepdims=True)
    rs = 1 / np.sqrt(((x - mu) ** 2).mean(1, keepdims=True) + eps)
    y = (x - mu) * rs * (1 if w is None else w) + (0 if b is None else b)
    return y, mu[:, 0], rs[:, 0]


def layer_norm_backward_ref(g, x, mean, rstd, w):
    xh = (x - mean[:, None]) * rstd[:, None]
    gx = g * (1 if w is None else w)
    dx = rstd[:, None] * (gx - gx.mean(1, keepdims=True) - xh * (gx * xh).mean(1, keepdims=True))
    return dx, (g * xh).sum(0), g.sum(0)


def _ln_samples(dt, rng):
    v = lambda *s, lo=-3, hi=3: values(rng, dt, s, lo, hi)  # noqa: E731
    return [
        Sample((A(v(4, 6)), A(v(6)), A(v(6)), 1e-5), desc="affine"),
        Sample((A(v(3, 5), "T"), None, None, 1e-3), desc="transposed, no affine"),
        Sample((A(v(1, 40)), A(v(40)), None, 0.1), desc="one row, weight only"),
    ]


def _lnb_samples(dt, rng):
    out = []
    for m, n, w, layout in ((4, 6, True, "C"), (3, 5, False, "T"), (2, 33, True, "C")):
        x = values(rng, "float64", (m, n), -3, 3)
        mu = x.mean(1)
        rs = 1 / np.sqrt(x.var(1) + 1e-5)
        out.append(Sample((A(values(rng, dt, (m, n)), layout), A(x.astype(dt)), A(mu.astype(dt)), A(rs.astype(dt)),
                           A(values(rng, dt, (n,))) if w else None), desc=f"({m}, {n}) weight {w}"))
    return out


register(OpRecord("layer_norm", "nn", FLOAT, _ln_samples, ref=layer_norm_ref, tol=TOL,
                  doc="rows normalized, scaled and shifted; returns (y, mean, rstd)"))
register(OpRecord("layer_norm_backward", "nn", FLOAT, _lnb_samples, ref=layer_norm_backward_ref, tol=TOL,
                  doc="(dx, dweight, dbias) of layer_norm"))


def gelu_ref(x, approximate):
    if approximate == "tanh":
        return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    return 0.5 * x * np.vectorize(math.erfc)(-x / math.sqrt(2))


def gelu_backward_ref(g, x, approximate):
    if approximate == "tanh":
        c = math.sqrt(2 / math.pi)
        t = np.tanh(c * (x + 0.044715 * x ** 3))
        return g * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * c * (1 + 3 * 0.044715 * x * x))
    return g * (0.5 * np.vectorize(math.erfc)(-x / math.sqrt(2)) + x * np.exp(-x * x / 2) / math.sqrt(2 * math.pi))


def _gelu_samples(dt, rng):
    return [Sample((A(values(rng, dt, (3, 7), -4, 4), layout), ap), desc=f"{ap} {layout}")
            for ap in ("none", "tanh") for layout in ("C", "T")]


def _gelub_samples(dt, rng):
    return [Sample((A(values(rng, dt, (3, 7))), A(values(rng, dt, (3, 7), -4, 4), layout), ap), desc=f"{ap} {layout}")
            for ap in ("none", "tanh") for layout in ("C", "T")]


register(OpRecord("gelu", "nn", FLOAT, _gelu_samples, ref=gelu_ref, tol=TOL, doc="x * Phi(x), or the tanh form"))
register(OpRecord("gelu_backward", "nn", FLOAT, _gelub_samples, ref=gelu_backward_ref, tol=TOL,
                  doc="grad * gelu'(x)"))


def embedding_backward_ref(g, idx, num, padding_idx):
    out = np.zeros((num, g.shape[1]))
    for i, r in zip(idx, g):
        out[i] += r
    if padding_idx is not None:
        out[padding_idx] = 0
    return out


def _eb_samples(dt, rng):
    def i(*v):
        return A(np.array(v, dtype=np.int64))
    return [
        Sample((A(values(rng, dt, (5, 3))), i(0, 2, 2, 4, 2), 6, None), desc="repeats, unused rows"),
        Sample((A(values(rng, dt, (3, 4)), "T"), i(1, 1, 0), 3, 1), desc="transposed grad, padding row"),
        Sample((A(values(rng, dt, (6, 2))), i(150, 3, 150, 0, 199, 3), 200, 0), desc="many rows (sorted path)"),
        Sample((A(np.zeros((0, 3), dtype=dt)), A(np.zeros(0, np.int64)), 4, None), desc="no indices"),
    ]


register(OpRecord("embedding_backward", "nn", FLOAT, _eb_samples, ref=embedding_backward_ref, tol=TOL,
                  doc="row sums of grad by index; padding row zero"))
