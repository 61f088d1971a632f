"""Records of the linear-algebra kernels: matmul, inv, solve."""
from __future__ import annotations

import numpy as np

from ._base import COMPLEX, FLOAT, INT, A, ErrorCase, OpRecord, Sample, register, values


def _torch():
    import tensorplug
    return tensorplug


MATMUL_TOL = {"float16": (1e-2, 1e-2), "bfloat16": (2e-2, 2e-2), "float32": (1e-5, 1e-5), "float64": (1e-11, 1e-11),
              "complex64": (1e-5, 1e-5), "complex128": (1e-11, 1e-11)}
SOLVE_TOL = {"float32": (1e-4, 1e-4), "float64": (1e-9, 1e-10)}


def _matmul_samples(dt, rng):
    v = lambda *s: values(rng, dt, s, -3, 3)  # noqa: E731
    return [
        Sample((A(v(3, 4)), A(v(4, 5)))),
        Sample((A(v(4)), A(v(4))), desc="1-d @ 1-d: a 0-d result"),
        Sample((A(v(4)), A(v(4, 3))), desc="1-d @ 2-d"),
        Sample((A(v(2, 3, 4)), A(v(4))), desc="3-d @ 1-d"),
        Sample((A(v(2, 1, 3, 4)), A(v(5, 4, 2))), desc="batch dims broadcast (2, 1) with (5,)"),
        Sample((A(v(4, 3), "T"), A(v(3, 5), "S"))),
        Sample((A(v(3, 0)), A(v(0, 2))), desc="inner size 0: zeros"),
        Sample((A(v(0, 3)), A(v(3, 2)))),
        Sample((A(v(2, 3, 4), "R"), A(v(2, 4, 3), "T"))),
    ]


register(OpRecord("matmul", "linalg", FLOAT + INT + COMPLEX, _matmul_samples, ref=np.matmul, tol=MATMUL_TOL,
                  errors=[ErrorCase("matmul of (2, 3) and (2, 3)",
                                    lambda T: _torch().matmul(T([[1., 2., 3.], [4., 5., 6.]]),
                                                              T([[1., 2., 3.], [4., 5., 6.]])))],
                  doc="numpy.matmul semantics"))


def _well_conditioned(rng, dt, *shape):
    n = shape[-1]
    a = rng.uniform(-1, 1, shape) + n * np.eye(n)
    return a.astype(dt)


def _inv_samples(dt, rng):
    m = lambda *s: _well_conditioned(rng, dt, *s)  # noqa: E731
    return [Sample((A(m(3, 3)),)), Sample((A(m(2, 4, 4)),)), Sample((A(m(1, 1)),)),
            Sample((A(m(3, 3), "T"),)), Sample((A(np.repeat(m(1, 2, 2), 3, 0), "B"),), desc="broadcast batch"),
            Sample((A(m(2, 3, 3), "R"),))]


def _singular(T):
    return _torch().inverse(T([[1.0, 2.0], [2.0, 4.0]]))


register(OpRecord("inv", "linalg", ("float32", "float64"), _inv_samples, ref=np.linalg.inv, tol=SOLVE_TOL,
                  errors=[ErrorCase("inverse of a singular matrix", _singular),
                          ErrorCase("inverse of a (2, 3) matrix",
                                    lambda T: _torch().inverse(T([[1., 2., 3.], [4., 5., 6.]])))],
                  doc="(batches of) square matrices; the frontend reports singular ones"))


def _solve_samples(dt, rng):
    m = lambda *s: _well_conditioned(rng, dt, *s)  # noqa: E731
    v = lambda *s: values(rng, dt, s, -2, 2)  # noqa: E731
    return [Sample((A(m(3, 3)), A(v(3, 2)))), Sample((A(m(2, 4, 4)), A(v(2, 4, 1)))),
            Sample((A(m(3, 3), "T"), A(v(3, 4), "S"))),
            Sample((A(np.repeat(m(1, 3, 3), 2, 0), "B"), A(v(2, 3, 2))), desc="broadcast batch of a"),
            Sample((A(m(1, 1)), A(v(1, 3))))]


register(OpRecord("solve", "linalg", ("float32", "float64"), _solve_samples, ref=np.linalg.solve, tol=SOLVE_TOL,
                  errors=[ErrorCase("solve with a singular matrix",
                                    lambda T: _torch().linalg.solve(T([[1.0, 2.0], [2.0, 4.0]]),
                                                                    T([[1.0], [2.0]])))]))
