"""Op record of the optimizer family (tensorplug.dispatch.optional_optim): adam_step, which updates p, m,
v (and AMSGrad's vmax) in place. Its check runs a few steps on the backend's arrays and compares every
updated array with a float64 reference of PyTorch's algorithm."""
from __future__ import annotations

import numpy as np

from ._base import OpRecord, register, rng_for

_TOL = {"float16": (2e-2, 2e-3), "bfloat16": (5e-2, 1e-2), "float32": (2e-5, 1e-6), "float64": (1e-12, 1e-15)}


def _reference(p, g, m, v, vmax, lr, beta1, beta2, eps, decay, step):
    p = p * (1 - decay)
    m = m + (1 - beta1) * (g - m)
    v = v * beta2 + (1 - beta2) * g * g
    vmax = None if vmax is None else np.maximum(vmax, v)
    d = np.sqrt(v if vmax is None else vmax) / np.sqrt(1 - beta2 ** step) + eps
    return p - lr / (1 - beta1 ** step) * m / d, m, v, vmax


def _check_adam_step(K, dtype):
    from ..checks import CheckFailure, host
    rng = rng_for("adam_step", dtype)
    rtol, atol = _TOL.get(dtype, (1e-5, 1e-6))
    for amsgrad, beta1, decay in ((False, 0.9, 0.0), (True, 0.9, 1e-3), (False, 0.3, 1e-2)):
        shape = (7, 5)
        ref = [rng.standard_normal(shape), None, rng.standard_normal(shape) * 0.1, rng.uniform(0, 0.01, shape),
               rng.uniform(0, 0.01, shape) if amsgrad else None]
        ref = [None if a is None else a.astype(dtype).astype(np.float64) for a in ref]
        arrays = [None if a is None else K["from_numpy"](a.astype(dtype)) for a in ref]
        for step in (1, 2, 3):
            g = rng.standard_normal(shape).astype(dtype)
            gk = K["from_numpy"](g)
            r = K["adam_step"](arrays[0], gk, arrays[2], arrays[3], arrays[4], 1e-2, beta1, 0.999, 1e-8, decay,
                               step)
            if r is not None:
                raise CheckFailure(f"adam_step[{dtype}]: returned {type(r).__name__}, expected None")
            if not np.array_equal(host(K, gk), g):
                raise CheckFailure(f"adam_step[{dtype}]: wrote into its gradient argument")
            p, m, v, vmax = _reference(ref[0], g.astype(np.float64), ref[2], ref[3], ref[4], 1e-2, beta1, 0.999,
                                       1e-8, decay, step)
            ref = [p, None, m, v, vmax]
            # compare against the reference, then continue from the backend's own rounded values
            for name, i in (("p", 0), ("m", 2), ("v", 3), ("vmax", 4)):
                if ref[i] is None:
                    continue
                got = host(K, arrays[i]).astype(np.float64)
                if not np.allclose(got, ref[i], rtol=rtol, atol=atol * max(1.0, float(np.abs(ref[i]).max()))):
                    err = float(np.max(np.abs(got - ref[i])))
                    raise CheckFailure(f"adam_step[{dtype}] (amsgrad={amsgrad}, beta1={beta1}, decay={decay}), "
                                       f"step {step}: {name} differs from the reference by {err:.3g}")
                ref[i] = got


register(OpRecord("adam_step", "optional", ("float32", "float64"), lambda dt, rng: [],
                  multi_inplace=_check_adam_step,
                  doc="one parameter's Adam / AdamW step in place (p, m, v and AMSGrad's vmax)"))
