"""Optional kernels of the attention family (specs and decompositions into other kernels).

Each kernel named in OPTIONAL has a decomposition: a function of the same name here taking the
kernel table K first. A backend may provide the kernel natively instead.

`sdpa` is the forward of F.scaled_dot_product_attention, `sdpa_backward` its gradient for a
backward pass that is not itself differentiated (create_graph=False); the frontend differentiates
its Tensor-op formula otherwise, so a backend's kernels never limit the order of gradients.
Conventions shared by both:
- q (..., L, E), k (..., S, E), v (..., S, Ev) have the same leading dims (the frontend broadcasts
  them and repeats grouped-query heads); L, S > 0;
- scores = q k^T * scale, then `causal` (key j > query i is masked, top-left aligned) and `mask`
  (None; bool, True = takes part; or float in q's dtype, added), broadcastable to (..., L, S); a
  masked score is -inf. A row whose scores are all -inf gets weights 0 (output 0) and lse -inf;
- `keep` is None or a bool (..., L, S) dropout mask: weights of kept entries are scaled by
  1 / (1 - p), the others are 0 (p = 1: all 0);
- float16 / bfloat16 inputs are computed in float32: `lse` and `weights` are then float32 (else q's
  dtype); the gradients and the output have q's dtype.
"""
from __future__ import annotations

OPTIONAL: dict[str, str] = {
    "sdpa": (
        "sdpa(q, k, v, mask, keep, p, causal, scale, probs) -> (out, lse, weights): out (..., L, Ev) = "
        "dropout(softmax(scores)) @ v; lse (..., L) = log(sum(exp(scores))) per query row (what the "
        "backward recomputes the weights from); weights: when probs is True the softmax (..., L, S) "
        "before dropout, else None (see the module docstring for masks, dropout and dtypes)"),
    "sdpa_backward": (
        "sdpa_backward(g, q, k, v, out, lse, weights, mask, keep, p, causal, scale) -> (dq, dk, dv): "
        "the gradients of sum(out * g) for sdpa's q, k, v; out, lse and weights (None: recomputed from "
        "lse) are sdpa's results for the same arguments; results in q's dtype"),
}

_LOW = ("float16", "bfloat16")
_INF = float("inf")


def _dt(x):
    return x.dtype.name if hasattr(x.dtype, "name") else str(x.dtype)


def _swap(K, x):
    nd = len(x.shape)
    return K["permute"](x, tuple(range(nd - 2)) + (nd - 1, nd - 2))


def _const(K, value, dt):
    return K["full"]((), value, dt)


def _scores(K, q, k, mask, causal, scale, cdt):
    """q k^T * scale with the masks applied (-inf where masked)."""
    s = K["mul"](K["matmul"](q, _swap(K, k)), float(scale))
    L, S = q.shape[-2], k.shape[-2]
    ninf = _const(K, -_INF, cdt)
    if causal:
        rows = K["reshape"](K["arange"](0, L, 1, "int64"), (L, 1))
        cols = K["reshape"](K["arange"](0, S, 1, "int64"), (1, S))
        s = K["where"](K["le"](cols, rows), s, ninf)
    if mask is not None:
        if _dt(mask) == "bool":
            s = K["where"](mask, s, ninf)
        else:
            s = K["add"](s, mask if _dt(mask) == cdt else K["astype"](mask, cdt))
    return s


def _dropped(K, w, keep, p, cdt):
    if keep is None:
        return w
    c = 1.0 / (1.0 - p) if p < 1.0 else 0.0
    return K["where"](keep, K["mul"](w, c), _const(K, 0, cdt))


def _wide(K, arrays, low):
    return [a if (a is None or not low) else K["astype"](a, "float32") for a in arrays]


def sdpa(K, q, k, v, mask, keep, p, causal, scale, probs):
    dt = _dt(q)
    low = dt in _LOW
    cdt = "float32" if low else dt
    q, k, v = _wide(K, (q, k, v), low)
    s = _scores(K, q, k, mask, causal, scale, cdt)
    last = (len(s.shape) - 1,)
    m = K["max"](s, last, True)
    dead = K["eq"](m, _const(K, -_INF, cdt))                   # every key masked
    m = K["where"](dead, _const(K, 0, cdt), m)
    e = K["exp"](K["sub"](s, m))
    den = K["where"](dead, _const(K, 1, cdt), K["sum"](e, last, True))
    w = K["div"](e, den)
    lse = K["where"](dead, _const(K, -_INF, cdt), K["add"](m, K["log"](den)))
    lse = K["reshape"](lse, tuple(lse.shape[:-1]))
    out = K["matmul"](_dropped(K, w, keep, p, cdt), v)
    if low:
        out = K["astype"](out, dt)
    return out, lse, (w if probs else None)


def sdpa_backward(K, g, q, k, v, out, lse, weights, mask, keep, p, causal, scale):
    dt = _dt(q)
    low = dt in _LOW
    cdt = "float32" if low else dt
    g, q, k, v, out = _wide(K, (g, q, k, v, out), low)
    if weights is None:
        s = _scores(K, q, k, mask, causal, scale, cdt)
        lse = K["reshape"](lse, tuple(lse.shape) + (1,))
        # a dead row (lse -inf) has weights exp(-inf - inf) = 0
        lse = K["where"](K["eq"](lse, _const(K, -_INF, cdt)), _const(K, _INF, cdt), lse)
        weights = K["exp"](K["sub"](s, lse))
    last = (len(g.shape) - 1,)
    dv = K["matmul"](_swap(K, _dropped(K, weights, keep, p, cdt)), g)
    dp = _dropped(K, K["matmul"](g, _swap(K, v)), keep, p, cdt)
    rowdot = K["sum"](K["mul"](g, out), last, True)          # = sum_j weights * dp, per row
    ds = K["mul"](K["mul"](weights, K["sub"](dp, rowdot)), float(scale))
    dq = K["matmul"](ds, k)
    dk = K["matmul"](_swap(K, ds), q)
    if low:
        dq, dk, dv = (K["astype"](x, dt) for x in (dq, dk, dv))
    return dq, dk, dv
