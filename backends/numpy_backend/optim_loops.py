"""The NumPy backend's `adam_step` (spec in tensorplug.dispatch.optional_optim): one parameter's Adam /
AdamW update as one numba loop over its elements (the `fast` extra), the spec's operations in its order,
in the parameter's dtype, so the results equal the decomposition's (a dozen pointwise kernel calls) bit
for bit. minGPT-adder's 41 parameters took ~530 kernel calls per step through the decomposition.

Taken: float32 / float64 C-contiguous arrays of one shape and dtype; anything else (and no numba, or
TENSORPLUG_NUMBA=0) runs the decomposition on the backend's own kernels.
"""
from __future__ import annotations

import numpy as np

from . import numba_loops

_state = {}
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def kernels():
    """{"adam": f(p, g, m, v, vmax_or_empty, scalars...)} compiled loops, or None without numba."""
    return numba_loops.cached(_state, _build)


def _build(numba):
    jit = numba.njit(nogil=True, error_model="numpy")

    @jit
    def adam(p, g, m, v, vmax, keep, w1, lerp_small, one_minus_w1, beta2, w2, bc2_sqrt, eps, neg_step):
        # flat C-contiguous arrays; vmax empty for no AMSGrad; keep = 1 - decay (1: no decay)
        ams = vmax.shape[0] > 0
        for i in range(p.shape[0]):
            gi = g[i]
            pi = p[i] * keep if keep != 1 else p[i]
            t = gi - m[i]
            if lerp_small:
                mi = m[i] + t * w1
            else:
                mi = gi - t * one_minus_w1
            m[i] = mi
            vi = v[i] * beta2 + (gi * w2) * gi
            v[i] = vi
            if ams:
                a = vmax[i]
                a = a if (a > vi or a != a) else vi
                vmax[i] = a
                vi = a
            d = np.sqrt(vi) / bc2_sqrt + eps
            p[i] = pi + (mi * neg_step) / d

    return {"adam": adam}


def make_adam_step(decomposed):
    """The native kernel: the loop where it applies, else `decomposed` (the decomposition bound to this
    backend's kernel table)."""
    def adam_step(p, g, m, v, vmax, lr, beta1, beta2, eps, decay, step):
        dt = p.dtype
        arrays = (p, g, m, v) if vmax is None else (p, g, m, v, vmax)
        loops = kernels() if dt in _FLOATS else None
        if loops is None or any(a.dtype != dt or a.shape != p.shape or not a.flags.c_contiguous for a in arrays):
            return decomposed(p, g, m, v, vmax, lr, beta1, beta2, eps, decay, step)
        f = dt.type
        w1 = 1 - beta1
        flat = [a.reshape(-1) for a in arrays]
        vm = flat[4] if vmax is not None else np.empty(0, dt)
        # each scalar rounded to the arrays' dtype first, as NumPy's kernels take a Python number
        loops["adam"](flat[0], flat[1], flat[2], flat[3], vm, f(1 - decay), f(w1), w1 < 0.5, f(1.0 - w1),
                      f(beta2), f(1 - beta2), f((1 - beta2 ** step) ** 0.5), f(eps),
                      f(-(lr / (1 - beta1 ** step))))
    return adam_step


def build(k) -> dict:
    from tensorplug.dispatch import optional_optim

    def decomposed(*args):
        return optional_optim.adam_step(k, *args)
    return {"adam_step": make_adam_step(decomposed)}
