"""gradcheck / gradgradcheck: compare autograd's Jacobians with central finite differences.

Inputs that require grad should be float64 or complex128 (finite differences in single
precision are too coarse). Inputs that are not tensors, or tensors that don't require grad
(integer index tensors, masks, constants), are passed through to `func` unchanged. Only
floating-point and complex outputs are compared; a function may return one tensor or a tuple
(other values are ignored).

Complex numbers are compared in real coordinates, as PyTorch's gradcheck does: a complex input
contributes finite differences of its real and of its imaginary parts, a complex output the rows
of its real and of its imaginary parts. Autograd's row for Re(out[j]) is the vjp with grad_output
e_j, the row for Im(out[j]) the vjp with 1j * e_j; a complex input's gradient g = dL/dRe + i dL/dIm
(PyTorch's convention) fills the real-part columns with Re(g) and the imaginary-part ones with Im(g).

    >>> gradcheck(lambda x, y: (x * y).sin(), (x64, y64))        # True, or GradcheckError
"""
from __future__ import annotations

import warnings

import numpy as np


class GradcheckError(RuntimeError):
    """Raised by gradcheck / gradgradcheck when autograd disagrees with finite differences."""


def _is_tensor(x):
    from ..tensor import Tensor
    return isinstance(x, Tensor)


def _diff_outputs(out):
    """The floating-point and complex tensor outputs of func, in order."""
    outs = [out] if _is_tensor(out) else [o for o in out if _is_tensor(o)] \
        if isinstance(out, (tuple, list)) else []
    return [o for o in outs if o.dtype.is_floating_point or o.dtype.is_complex]


def _host(t):
    return np.array(t.detach()._host(), dtype=np.complex128 if t.dtype.is_complex else np.float64, copy=True)


def _real_coords(a):
    """A host array as its real coordinates: the values, or [real parts, imaginary parts]."""
    flat = a.reshape(-1)
    return np.concatenate([flat.real, flat.imag]) if np.iscomplexobj(a) else flat


def _n_real(t):
    return t.numel() * (2 if t.dtype.is_complex else 1)


def _with_value(inputs, i, arr):
    from ..ops.creation import tensor
    x = inputs[i]
    new = list(inputs)
    new[i] = tensor(arr, dtype=x.dtype, device=x.device, requires_grad=x.requires_grad)
    return new


def _diff_inputs(inputs):
    return [i for i, x in enumerate(inputs) if _is_tensor(x) and x.requires_grad]


def numerical_jacobian(func, inputs, eps=1e-6):
    """Per input: J of shape (real coordinates of the outputs, real coordinates of the input), or
    None for inputs that don't require grad. Central differences, computed in float64 on the host."""
    n_out = sum(_n_real(o) for o in _diff_outputs(func(*inputs)))
    jac = []
    for i, x in enumerate(inputs):
        if not (_is_tensor(x) and x.requires_grad):
            jac.append(None)
            continue
        base = _host(x)
        steps = (eps, 1j * eps) if np.iscomplexobj(base) else (eps,)
        J = np.zeros((n_out, base.size * len(steps)))
        for s, step in enumerate(steps):
            for j in range(base.size):
                vals = []
                for sign in (1, -1):
                    arr = base.copy()
                    arr.reshape(-1)[j] += sign * step
                    # grad mode stays on: func may itself differentiate (gradgradcheck)
                    outs = _diff_outputs(func(*_with_value(inputs, i, arr)))
                    vals.append(np.concatenate([_real_coords(_host(o)) for o in outs]) if outs else np.zeros(0))
                J[:, s * base.size + j] = (vals[0] - vals[1]) / (2 * eps)
        jac.append(J)
    return jac


def analytical_jacobian(func, inputs):
    """Per input: the Jacobian autograd computes (one vjp per output element), or None."""
    from . import grad as autograd_grad
    from ..ops.creation import tensor
    idx = _diff_inputs(inputs)
    diff = [inputs[i] for i in idx]
    outs = _diff_outputs(func(*inputs))
    rows = []
    for k, o in enumerate(outs):
        if not o.requires_grad:
            rows.extend([[np.zeros(_n_real(x)) for x in diff]] * _n_real(o))
            continue
        # one row per real coordinate of o: grad_output e_j (its real parts), then 1j * e_j
        for unit in ((1, 1j) if o.dtype.is_complex else (1,)):
            for j in range(o.numel()):
                flat = np.zeros(o.numel(), dtype=type(unit))
                flat[j] = unit
                g = tensor(flat.reshape(tuple(o.shape)), dtype=o.dtype, device=o.device)
                grads = autograd_grad([o], diff, grad_outputs=[g], retain_graph=True, allow_unused=True)
                rows.append(_analytical_row(grads, diff, idx, k))
    jac, n = [], 0
    for x in inputs:
        if _is_tensor(x) and x.requires_grad:
            jac.append(np.stack([r[n] for r in rows], axis=0) if rows else np.zeros((0, _n_real(x))))
            n += 1
        else:
            jac.append(None)
    return jac


def _analytical_row(grads, diff, idx, k):
    """One Jacobian row per differentiable input, in its real coordinates."""
    row = []
    for gr, x, i in zip(grads, diff, idx):
        if gr is None:
            row.append(np.zeros(_n_real(x)))
            continue
        if tuple(gr.shape) != tuple(x.shape):
            raise GradcheckError(f"Gradient of output {k} with respect to input {i} has shape "
                                 f"{list(gr.shape)}, expected {list(x.shape)}")
        if gr.dtype is not x.dtype:
            raise GradcheckError(f"Gradient of output {k} with respect to input {i} has dtype "
                                 f"{gr.dtype.name}, expected {x.dtype.name}")
        row.append(_real_coords(_host(gr)))
    return row


def _fail(msg, raise_exception):
    if raise_exception:
        raise GradcheckError(msg)
    return False


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True, **_ignored):
    """True if autograd's gradients of func at inputs match central finite differences.

    On a mismatch raises GradcheckError naming the output and input (or returns False when
    raise_exception=False)."""
    inputs = (inputs,) if _is_tensor(inputs) else tuple(inputs)
    idx = _diff_inputs(inputs)
    if not idx:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but none "
                         "of the them have requires_grad=True.")
    for i in idx:
        if inputs[i].dtype.name not in ("float64", "complex128"):
            warnings.warn(f"gradcheck: input {i} requires grad and is of dtype {inputs[i].dtype.name}, not "
                          "float64 or complex128; finite differences will be imprecise", stacklevel=2)
    sizes = [_n_real(o) for o in _diff_outputs(func(*inputs))]
    num = numerical_jacobian(func, inputs, eps)
    ana = analytical_jacobian(func, inputs)
    bounds = np.cumsum([0] + sizes)
    for i, (n, a) in enumerate(zip(num, ana)):
        if n is None:
            continue
        if n.shape != a.shape:
            return _fail(f"Jacobian shape mismatch for input {i}: numerical {n.shape}, analytical "
                         f"{a.shape}", raise_exception)
        for k in range(len(sizes)):
            nk, ak = n[bounds[k]:bounds[k + 1]], a[bounds[k]:bounds[k + 1]]
            if not np.allclose(ak, nk, atol=atol, rtol=rtol):
                return _fail(f"Jacobian mismatch for output {k} with respect to input {i},\n"
                             f"numerical:{nk}\nanalytical:{ak}\n"
                             f"max abs difference: {np.abs(ak - nk).max()}", raise_exception)
    return True


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  gen_non_contig_grad_outputs=False, raise_exception=True, **_ignored):
    """True if second derivatives of func (through create_graph=True) match finite differences.

    Checks the Jacobian of (inputs, grad_outputs) -> vjp(func at inputs, grad_outputs) against
    finite differences; grad_outputs default to random float values (fixed seed)."""
    from . import grad as autograd_grad
    from ..ops.creation import tensor, zeros_like
    inputs = (inputs,) if _is_tensor(inputs) else tuple(inputs)
    outs = _diff_outputs(func(*inputs))
    if grad_outputs is None:
        rng = np.random.default_rng(0)

        def rand(shape, cx):
            v = rng.standard_normal(shape)
            return v + 1j * rng.standard_normal(shape) if cx else v
        grad_outputs = tuple(tensor(rand(tuple(o.shape), o.dtype.is_complex), dtype=o.dtype, device=o.device,
                                    requires_grad=True) for o in outs)
    else:
        grad_outputs = (grad_outputs,) if _is_tensor(grad_outputs) else tuple(grad_outputs)
    if len(grad_outputs) != len(outs):
        raise ValueError(f"gradgradcheck: {len(grad_outputs)} grad_outputs for {len(outs)} outputs")
    n_in = len(inputs)
    diff_idx = _diff_inputs(inputs)

    def first_grads(*args):
        xs, gos = args[:n_in], args[n_in:]
        pairs = [(o, g) for o, g in zip(_diff_outputs(func(*xs)), gos) if o.requires_grad]
        wrt = [xs[i] for i in diff_idx]
        if not pairs:
            return tuple(zeros_like(x) for x in wrt)
        grads = autograd_grad([o for o, _ in pairs], wrt, grad_outputs=[g for _, g in pairs],
                              create_graph=True, allow_unused=True)
        return tuple(g if g is not None else zeros_like(x) for g, x in zip(grads, wrt))

    return gradcheck(first_grads, tuple(inputs) + tuple(grad_outputs), eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception)
