"""NumPy native kernels of the attention family (specs in tensorplug.dispatch.optional_attention).

Both kernels run over tiles of (heads, query rows) whose score block holds at most _TILE elements,
so that the block stays in cache between its passes (scores, masks, exp, row sums, products) and
long sequences never materialise the whole (L, S) score matrix; a causal tile stops at its last
row's keys, and where whole rows fit a tile, causal rows come in two bands (the first half of the rows
reads the first half of the keys: a quarter of the scores, all masked, is never computed; nanoGPT-char's
12x4x64x16 forward 531 -> 496 us, forward + backward 1.18 -> 1.11 ms). Whole rows are in a tile, so every softmax is exact (no online rescaling).

The row shift before exp is not the row maximum (a reduction along a short last axis is NumPy's
slowest pass here, ~3x an exp) but an upper bound of it that costs two small reductions: by
Cauchy-Schwarz, scale * q_i . k_j <= |scale * q_i| * max_j |k_j|. Its rounding error is no larger
than the product's own. An added float mask adds its row maximum to the bound (computed once per
call; a 0 / -inf float mask so gives the bool mask's results bit for bit). A tile where a row sum
falls under e^-40 (the bound far above the true maximum, a row masked out, an overflow) is redone
with the exact maximum.
"""
from __future__ import annotations

import math

import numpy as np

_TILE = 1 << 16            # score elements per tile (256 KiB of float32)
_CAUSAL_SPLIT = 32        # causal with whole rows per tile from this many rows on: two bands of rows
_SMALL = math.exp(-40.0)   # a row sum below this: redo the tile with the exact row maximum
_LOW_KINDS = ("V",)        # ml_dtypes' bfloat16; float16 is checked by itemsize
_BIAS: dict = {}           # (L, S, dtype) -> the causal additive mask (0 / -inf)


def _compute_dtype(dt):
    return np.dtype(np.float32) if (dt.kind in _LOW_KINDS or dt == np.float16) else dt


def _causal_bias(L, S, dt):
    key = (L, S, dt)
    b = _BIAS.get(key)
    if b is None:
        if len(_BIAS) > 64:
            _BIAS.clear()
        b = np.where(np.arange(S)[None, :] <= np.arange(L)[:, None], dt.type(0), dt.type(-np.inf))
        _BIAS[key] = b
    return b


class _Masks:
    """The masks of one call, sliced per tile: bool masks stored negated (True = masked out)."""

    def __init__(self, mask, keep, lead, n, L, S):
        self.kind = None if mask is None else ("bool" if mask.dtype == np.bool_ else "float")
        m = None
        if mask is not None:
            if mask.ndim <= 2 or all(d == 1 for d in mask.shape[:-2]):
                m = mask.reshape(mask.shape[-2:]) if mask.ndim >= 2 else mask.reshape((1,) * (2 - mask.ndim)
                                                                                    + mask.shape)
                self.shared = True
            else:
                m = np.broadcast_to(mask, lead + (L, S)).reshape(n, L, S)
                self.shared = False
            if self.kind == "bool":
                m = ~m
        self.m, self.L, self.S = m, L, S
        self.keep = None if keep is None else np.broadcast_to(keep, lead + (L, S)).reshape(n, L, S)

    def row_max(self):
        """The float mask's maximum per row (-inf rows as 0: they are redone exactly anyway)."""
        r = self.m.max(axis=-1, keepdims=True)
        r[r == -np.inf] = 0
        return r

    def rows(self, r, h0, h1, r0, r1):
        if self.shared:
            return r[r0:r1] if r.shape[0] == self.L else r
        return r[h0:h1, r0:r1]

    def mask(self, h0, h1, r0, r1, s1):
        m = self.m
        if self.shared:
            return m[r0:r1 if m.shape[0] == self.L else slice(None), :s1 if m.shape[1] == self.S else slice(None)]
        return m[h0:h1, r0:r1, :s1]

    def apply(self, s, h0, h1, r0, r1, s1, causal, dt):
        """-inf / added mask values written into the score tile s (in place)."""
        if causal:
            s += _causal_bias(self.L, self.S, dt)[r0:r1, :s1]
        if self.kind == "bool":
            np.copyto(s, -np.inf, where=self.mask(h0, h1, r0, r1, s1))
        elif self.kind == "float":
            s += self.mask(h0, h1, r0, r1, s1)


def _tiles(n, L, S, causal):
    """(h0, h1, r0, r1, s1) blocks covering (n heads, L rows); keys [0, s1) take part."""
    rb = L if L * S <= _TILE else max(1, _TILE // S)
    if rb == L and causal and L >= _CAUSAL_SPLIT:
        # whole rows fit: two bands of rows, the first reading only the first half of the keys (a quarter
        # of the score elements, all masked, never computed), each band's tiles as many heads as fit
        for r0, r1 in ((0, L // 2), (L // 2, L)):
            s1 = min(S, r1)
            hb = max(1, _TILE // ((r1 - r0) * s1))
            for h0 in range(0, n, hb):
                yield h0, min(n, h0 + hb), r0, r1, s1
        return
    hb = max(1, _TILE // (rb * S)) if rb == L else 1
    for h0 in range(0, n, hb):
        h1 = min(n, h0 + hb)
        for r0 in range(0, L, rb):
            r1 = min(L, r0 + rb)
            yield h0, h1, r0, r1, (min(S, r1) if causal else S)


def _scaled(q, n, dt, scale):
    """q * scale as a new C-contiguous (n, L, E) array of dt, in one pass: q is usually a transposed view
    of the qkv projection, which a reshape would copy first."""
    out = np.empty(q.shape, dt)
    np.multiply(q, dt.type(scale), out=out)
    return out.reshape((n,) + q.shape[-2:])


def _flat(x, n):
    return x.reshape((n,) + x.shape[-2:])


def _row_sums(x):
    """Sums over the last axis of a C-contiguous array, keepdims: one GEMV (NumPy's sum along a short
    last axis is several times slower)."""
    n = x.shape[-1]
    return np.matmul(x.reshape(-1, n), np.ones(n, dtype=x.dtype)).reshape(x.shape[:-1] + (1,))


def _sq_norms(x):
    """Squared norms along the last axis: a square and a GEMV (einsum "...e,...e" took 1.5x as long)."""
    sq = x * x
    return sq @ np.ones(x.shape[-1], dtype=x.dtype)


def _scores(qs, k, masks, h0, h1, r0, r1, s1, causal, dt):
    s = np.matmul(qs[h0:h1, r0:r1], k[h0:h1, :s1].swapaxes(1, 2))
    masks.apply(s, h0, h1, r0, r1, s1, causal, dt)
    return s


def _exact_exp(s):
    """exp(s - rowmax) in place; (row sums with dead rows as 1, shifts with dead rows as -inf)."""
    m = s.max(axis=-1, keepdims=True)
    dead = m == -np.inf
    m[dead] = 0
    s -= m
    np.exp(s, out=s)
    l = s.sum(axis=-1, keepdims=True)
    l[dead] = 1
    m[dead] = -np.inf
    return l, m


def sdpa(q, k, v, mask, keep, p, causal, scale, probs):
    dt0 = q.dtype
    dt = _compute_dtype(dt0)
    lead, L, S, Ev = q.shape[:-2], q.shape[-2], k.shape[-2], v.shape[-1]
    n = math.prod(lead)
    qs = _scaled(q, n, dt, scale)
    k3, v3 = _flat(k, n).astype(dt, copy=False), _flat(v, n).astype(dt, copy=False)
    masks = _Masks(mask if mask is None or mask.dtype == np.bool_ else mask.astype(dt, copy=False), keep,
                   lead, n, L, S)
    qn = np.sqrt(_sq_norms(qs))
    kmax = np.sqrt(_sq_norms(k3).max(axis=1))
    mrow = masks.row_max() if masks.kind == "float" else None
    c = (1.0 / (1.0 - p) if p < 1.0 else 0.0)
    out = np.empty((n, L, Ev), dtype=dt)
    lse = np.empty((n, L), dtype=dt)
    w = (np.zeros if causal else np.empty)((n, L, S), dtype=dt) if probs else None
    for h0, h1, r0, r1, s1 in _tiles(n, L, S, causal):
        s = _scores(qs, k3, masks, h0, h1, r0, r1, s1, causal, dt)
        shift = qn[h0:h1, r0:r1, None] * kmax[h0:h1, None, None]
        if mrow is not None:
            shift = shift + masks.rows(mrow, h0, h1, r0, r1)
        s -= shift                               # in place: the rare redo recomputes the scores
        np.exp(s, out=s)
        l = _row_sums(s)
        if l.min() < _SMALL:
            s = _scores(qs, k3, masks, h0, h1, r0, r1, s1, causal, dt)
            l, shift = _exact_exp(s)
        inv = 1.0 / l
        if probs or keep is not None:
            s *= inv
            if probs:
                w[h0:h1, r0:r1, :s1] = s
            if keep is not None:
                s = s * masks.keep[h0:h1, r0:r1, :s1]
                s *= dt.type(c)
            out[h0:h1, r0:r1] = np.matmul(s, v3[h0:h1, :s1])
        else:
            np.multiply(np.matmul(s, v3[h0:h1, :s1]), inv, out=out[h0:h1, r0:r1])
        np.log(l, out=l)
        l += shift
        lse[h0:h1, r0:r1] = l[..., 0]
    out = out.reshape(lead + (L, Ev))
    if dt != dt0:
        out = out.astype(dt0)
    return out, lse.reshape(lead + (L,)), (None if w is None else w.reshape(lead + (L, S)))


def sdpa_backward(g, q, k, v, out, lse, weights, mask, keep, p, causal, scale):
    dt0 = q.dtype
    dt = _compute_dtype(dt0)
    lead, L, S, E, Ev = q.shape[:-2], q.shape[-2], k.shape[-2], q.shape[-1], v.shape[-1]
    n = math.prod(lead)
    qs = _scaled(q, n, dt, scale)
    k3, v3 = _flat(k, n).astype(dt, copy=False), _flat(v, n).astype(dt, copy=False)
    g3 = _flat(g, n).astype(dt, copy=False)
    masks = _Masks(mask if mask is None or mask.dtype == np.bool_ else mask.astype(dt, copy=False), keep,
                   lead, n, L, S)
    # sum_j weights * dp per row, from the output: sum(g * out) (flash attention's D)
    rowdot = _row_sums(g3 * _flat(out, n).astype(dt, copy=False))            # (n, L, 1)
    if weights is None:
        nl = lse.reshape(n, L, 1).astype(dt, copy=True)
        nl[nl == -np.inf] = np.inf                                             # dead rows: weights 0
    else:
        w3 = _flat(weights, n)
    c = dt.type(1.0 / (1.0 - p) if p < 1.0 else 0.0)
    dq = np.empty((n, L, E), dtype=dt)
    dk = np.zeros((n, S, E), dtype=dt)
    dv = np.zeros((n, S, Ev), dtype=dt)
    for h0, h1, r0, r1, s1 in _tiles(n, L, S, causal):
        if weights is None:
            P = _scores(qs, k3, masks, h0, h1, r0, r1, s1, causal, dt)
            P -= nl[h0:h1, r0:r1]
            np.exp(P, out=P)
        else:
            P = w3[h0:h1, r0:r1, :s1]
        gt = g3[h0:h1, r0:r1]
        if keep is None:
            Pd = P
        else:
            kt = masks.keep[h0:h1, r0:r1, :s1]
            Pd = P * kt
            Pd *= c
        dv[h0:h1, :s1] += np.matmul(Pd.swapaxes(1, 2), gt)
        dp = np.matmul(gt, v3[h0:h1, :s1].swapaxes(1, 2))
        if keep is not None:
            dp *= kt
            dp *= c
        dp -= rowdot[h0:h1, r0:r1]
        dp *= P
        np.matmul(dp, k3[h0:h1, :s1], out=dq[h0:h1, r0:r1])
        dk[h0:h1, :s1] += np.matmul(dp.swapaxes(1, 2), qs[h0:h1, r0:r1])
    dq *= dt.type(scale)
    res = (dq.reshape(lead + (L, E)), dk.reshape(lead + (S, E)), dv.reshape(lead + (S, Ev)))
    if dt != dt0:
        res = tuple(x.astype(dt0) for x in res)
    return res


def build() -> dict:
    return {"sdpa": sdpa, "sdpa_backward": sdpa_backward}
