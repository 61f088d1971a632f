"""Op records of the loss family (tensorplug.dispatch.optional_loss): cross_entropy_loss and its
backward. The reference is log-softmax + negative log-likelihood written directly in float64 NumPy,
the gradient by the chain rule."""
from __future__ import annotations

import numpy as np

from ._base import FLOAT, A, OpRecord, Sample, register, values

TOL = {"float16": (1e-2, 1e-2), "bfloat16": (3e-2, 3e-2), "float32": (2e-5, 2e-5), "float64": (1e-10, 1e-11)}


def _parts(x, target, weight, ignore_index):
    m, c = x.shape
    valid = target != ignore_index
    safe = np.where(valid, target, 0)
    w = np.ones(c) if weight is None else weight
    wt = w[safe] * valid
    top = x.max(1, keepdims=True)
    lse = np.log(np.exp(x - top).sum(1)) + top[:, 0]
    return valid, safe, w, wt, lse


def cross_entropy_loss_ref(x, target, weight, ignore_index, s, reduction):
    m, c = x.shape
    valid, safe, w, wt, lse = _parts(x, target, weight, ignore_index)
    logp = x - lse[:, None]
    rows = -(1 - s) * wt * logp[np.arange(m), safe] - (s / c) * valid * (logp * w).sum(1)
    denom = wt.sum()
    loss = rows if reduction == "none" else rows.sum() if reduction == "sum" else rows.sum() / denom
    return loss, lse, denom


def cross_entropy_loss_backward_ref(g, x, target, weight, lse, denom, ignore_index, s, reduction):
    m, c = x.shape
    valid, safe, w, wt, _ = _parts(x, target, weight, ignore_index)
    gi = np.broadcast_to(g / denom if reduction == "mean" else g, (m,)) * valid
    p = np.exp(x - lse[:, None])
    onehot = np.eye(c)[safe]
    return gi[:, None] * ((1 - s) * wt[:, None] * (p - onehot) + (s / c) * (w.sum() * p - w))


# (shape, weight, ignored rows, label_smoothing, reduction, layout)
_CASES = [((5, 4), False, 0, 0.0, "mean", "C"), ((6, 65), True, 2, 0.1, "mean", "C"),
          ((4, 10), False, 1, 0.2, "sum", "T"), ((3, 7), True, 0, 0.0, "none", "C"),
          ((1, 3), False, 0, 1.0, "none", "C")]


def _target(rng, m, c, ignored):
    t = rng.integers(0, c, m)
    t[:ignored] = -100
    return t


def _fw_samples(dt, rng):
    out = []
    for (m, c), w, ign, s, red, layout in _CASES:
        w = A(values(rng, dt, (c,), 0.1, 2)) if w else None
        out.append(Sample((A(values(rng, dt, (m, c), -4, 4), layout), A(_target(rng, m, c, ign)), w, -100, s, red),
                          desc=f"({m}, {c}) weight {w is not None} ignored {ign} smoothing {s} {red} {layout}"))
    return out


def _bw_samples(dt, rng):
    out = []
    for (m, c), w, ign, s, red, layout in _CASES:
        x = values(rng, "float64", (m, c), -4, 4)
        t = _target(rng, m, c, ign)
        w64 = values(rng, "float64", (c,), 0.1, 2) if w else None
        _, lse, denom = cross_entropy_loss_ref(x, t, w64, -100, s, red)
        g = values(rng, dt, (m,) if red == "none" else ())
        out.append(Sample((A(g), A(x.astype(dt), layout), A(t), None if w64 is None else A(w64.astype(dt)),
                           A(lse.astype(dt)), A(np.asarray(denom).astype(dt)), -100, s, red),
                          desc=f"({m}, {c}) weight {w} ignored {ign} smoothing {s} {red} {layout}"))
    return out


register(OpRecord("cross_entropy_loss", "nn", FLOAT, _fw_samples, ref=cross_entropy_loss_ref, tol=TOL,
                  doc="log_softmax + (smoothed, weighted) nll per row, reduced; returns (loss, lse, denom)"))
register(OpRecord("cross_entropy_loss_backward", "nn", FLOAT, _bw_samples, ref=cross_entropy_loss_backward_ref,
                  tol=TOL, doc="(softmax - smoothed one-hot) scaled by the output gradient and weight"))
