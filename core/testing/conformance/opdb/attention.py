"""Op records of the attention family (tensorplug.dispatch.optional_attention): sdpa, sdpa_backward.
The reference is softmax attention written directly in float64 NumPy, its gradients by the chain rule."""
from __future__ import annotations

import numpy as np

from ._base import FLOAT, A, OpRecord, Sample, register, values

ATT_TOL = {"float16": (1e-2, 1e-2), "bfloat16": (3e-2, 3e-2), "float32": (1e-5, 1e-5), "float64": (1e-10, 1e-11)}


def _weights(q, k, mask, causal, scale):
    s = q @ np.swapaxes(k, -1, -2) * scale
    L, S = s.shape[-2:]
    if causal:
        s = np.where(np.tril(np.ones((L, S), bool)), s, -np.inf)
    if mask is not None:
        s = np.where(mask, s, -np.inf) if mask.dtype == bool else s + mask
    top = s.max(axis=-1, keepdims=True)
    dead = top == -np.inf
    e = np.exp(s - np.where(dead, 0.0, top))
    tot = e.sum(axis=-1, keepdims=True)
    w = np.where(dead, 0.0, e / np.where(dead, 1.0, tot))
    lse = np.where(dead, -np.inf, np.log(np.where(dead, 1.0, tot)) + np.where(dead, 0.0, top))[..., 0]
    return w, lse


def _drop(w, keep, p):
    return w if keep is None else np.where(keep, w * (1.0 / (1.0 - p) if p < 1.0 else 0.0), 0.0)


def sdpa_ref(q, k, v, mask, keep, p, causal, scale, probs):
    w, lse = _weights(q, k, mask, causal, scale)
    return _drop(w, keep, p) @ v, lse, (w if probs else None)


def sdpa_backward_ref(g, q, k, v, out, lse, weights, mask, keep, p, causal, scale):
    w, _ = _weights(q, k, mask, causal, scale)
    dv = np.swapaxes(_drop(w, keep, p), -1, -2) @ g
    dp = _drop(g @ np.swapaxes(v, -1, -2), keep, p)
    ds = w * (dp - (dp * w).sum(axis=-1, keepdims=True)) * scale
    return ds @ k, np.swapaxes(ds, -1, -2) @ q, dv


def _cases(dt, rng):
    """(q, k, v, mask, keep, p, causal, scale, description) in NumPy, of dtype dt."""
    v = lambda *s: values(rng, dt, s, -2, 2)  # noqa: E731
    bm = rng.random((4, 6)) > 0.4
    bm[:, 0] = True
    dead = bm.copy()
    dead[2] = False                                  # a query row with no key
    fm = values(rng, dt, (4, 6), -1, 1)
    keep = rng.random((2, 3, 4, 6)) >= 0.25
    return [
        (v(2, 3, 4, 5), v(2, 3, 6, 5), v(2, 3, 6, 3), None, None, 0.0, False, 0.45, "(2, 3) heads"),
        (v(2, 5, 4), v(2, 5, 4), v(2, 5, 4), None, None, 0.0, True, 0.5, "causal"),
        (v(3, 6, 4), v(3, 4, 4), v(3, 4, 2), None, None, 0.0, True, 0.5, "causal, more queries than keys"),
        (v(2, 4, 5), v(2, 6, 5), v(2, 6, 3), bm, None, 0.0, False, 0.45, "bool mask"),
        (v(2, 4, 5), v(2, 6, 5), v(2, 6, 3), dead, None, 0.0, False, 0.45, "bool mask, a fully masked row"),
        (v(2, 4, 5), v(2, 6, 5), v(2, 6, 3), fm, None, 0.0, False, 1.0, "float mask"),
        (v(2, 3, 4, 5), v(2, 3, 6, 5), v(2, 3, 6, 3), None, keep, 0.25, False, 0.45, "dropout keep mask"),
        (v(2, 3, 4, 5), v(2, 3, 6, 5), v(2, 3, 6, 3), None, keep, 0.25, True, 0.45, "causal, dropout"),
    ]


def _lse_dt(dt):
    return "float32" if dt in ("float16", "bfloat16") else dt


def _sdpa_samples(dt, rng):
    out = []
    for q, k, vv, m, keep, p, causal, scale, desc in _cases(dt, rng):
        mask = None if m is None else A(m)
        kp = None if keep is None else A(keep)
        for probs in (False, True):
            layout = "T" if probs and desc == "bool mask" else "C"
            out.append(Sample((A(q, layout), A(k), A(vv), mask, kp, p, causal, scale, probs),
                              desc=f"{desc}{', weights' if probs else ''}"))
    return out


def _sdpa_backward_samples(dt, rng):
    out = []
    ldt = _lse_dt(dt)
    for q, k, vv, m, keep, p, causal, scale, desc in _cases(dt, rng):
        f = lambda a: None if a is None else (a if a.dtype == bool else a.astype(np.float64))  # noqa: E731
        o, lse, w = sdpa_ref(f(q), f(k), f(vv), f(m), keep, p, causal, scale, True)
        g = values(rng, dt, o.shape, -1, 1)
        mask = None if m is None else A(m)
        kp = None if keep is None else A(keep)
        for weights in (None, A(w.astype(ldt))):
            out.append(Sample((A(g), A(q), A(k), A(vv), A(o.astype(dt)), A(lse.astype(ldt)), weights, mask, kp, p,
                               causal, scale), desc=f"{desc}{', saved weights' if weights is not None else ''}"))
    return out


register(OpRecord("sdpa", "nn", FLOAT, _sdpa_samples, ref=sdpa_ref, tol=ATT_TOL,
                  out_dtype=lambda dt, s: (dt, _lse_dt(dt), _lse_dt(dt) if s.args[8] else None),
                  doc="softmax attention with masks, causal, dropout keep mask; output, row lse, weights"))
register(OpRecord("sdpa_backward", "nn", FLOAT, _sdpa_backward_samples, ref=sdpa_backward_ref, tol=ATT_TOL,
                  doc="gradients of sum(out * g) for q, k, v, from the row lse or the saved weights"))
