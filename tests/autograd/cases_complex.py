"""Gradient cases of complex numbers (core/ops/complex.py, and the complex paths of the pointwise,
reduction and linalg ops), appended to the table of test_op_gradients.py: each runs gradcheck and
gradgradcheck, which compare finite differences of the real and imaginary parts (PyTorch's
convention: the gradient of z is dL/dRe(z) + i dL/dIm(z))."""
import numpy as np
from opcases import Case, pos, r

import tensorplug as torch


def c(*shape, seed=0, scale=1.0):
    """A complex128 leaf requiring grad."""
    rng = np.random.default_rng(seed + 31 * len(shape))
    v = rng.uniform(-1, 1, shape) + 1j * rng.uniform(-1, 1, shape)
    return torch.tensor(v * scale, dtype=torch.complex128, requires_grad=True)


def cpos(*shape, seed=0):
    """Complex values with real parts in [0.5, 2) (away from the branch cut of log / sqrt / pow)."""
    rng = np.random.default_rng(seed + 7)
    v = rng.uniform(0.5, 2.0, shape) + 1j * rng.uniform(-1, 1, shape)
    return torch.tensor(v, dtype=torch.complex128, requires_grad=True)


CASES = [
    Case("complex_real", lambda z: z.real * z.imag, lambda: (c(2, 3),)),
    Case("complex_imag_view", lambda z: torch.imag(z[1:]) ** 2, lambda: (c(3),)),
    Case("complex_conj", lambda z: z.conj() * z, lambda: (c(4),)),
    Case("complex_conj_physical", lambda z: torch.conj_physical(z).exp(), lambda: (c(4),)),
    Case("complex_angle", lambda z: z.angle(), lambda: (c(5),)),
    Case("complex_angle_real_input", lambda x: x.angle() + x, lambda: (r(3),)),
    Case("complex_sgn", lambda z: z.sgn(), lambda: (c(4),)),
    Case("complex_abs", lambda z: z.abs(), lambda: (c(2, 2),)),
    Case("complex_view_as_real", lambda z: torch.view_as_real(z) * 2, lambda: (c(3),)),
    Case("complex_view_as_complex", lambda x: torch.view_as_complex(x) ** 2, lambda: (r(3, 2),)),
    Case("complex_from_parts", lambda a, b: torch.complex(a, b).log(), lambda: (pos(3), r(3))),
    Case("complex_polar", lambda m, t: torch.polar(m, t), lambda: (pos(3), r(3))),
    Case("complex_mul_div", lambda a, b: a * b / (b + 2), lambda: (c(3), c(3, seed=1))),
    Case("complex_mul_real", lambda a, x: a * x + x * 1j, lambda: (c(2, 3), r(3))),
    Case("complex_pow", lambda a, b: a ** b, lambda: (cpos(3), c(3, seed=2))),
    Case("complex_pow_scalar", lambda a: a ** (1.5 - 0.5j), lambda: (cpos(3),)),
    Case("complex_unary", lambda z: z.sin() * z.cos() + z.tanh() - z.sqrt() + z.sigmoid(), lambda: (cpos(4),)),
    Case("complex_sum_mean_prod", lambda z: z.sum(0) * z.mean(1).prod(), lambda: (c(2, 3),)),
    Case("complex_matmul", lambda a, b: a @ b, lambda: (c(2, 3), c(3, 2, seed=3))),
    Case("complex_to", lambda x: x.to(torch.complex128) * (1 - 2j), lambda: (r(3),)),
]
