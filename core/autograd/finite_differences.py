"""gradcheck / gradgradcheck: compare autograd's Jacobians with central finite differences.

Inputs that require grad should be float64 (finite differences in float32 are too coarse).
"""
from __future__ import annotations

import numpy as np


class GradcheckError(RuntimeError):
    pass


def _tensors(xs):
    from ..tensor import Tensor
    return [x for x in xs if isinstance(x, Tensor)]


def _flat_outputs(out):
    from ..tensor import Tensor
    if isinstance(out, Tensor):
        return [out]
    return [o for o in out if isinstance(o, Tensor)]


def _host(t):
    return np.array(t.detach()._host(), dtype=np.float64, copy=True)


def _rebuilt(inputs, i, arr):
    from ..ops.creation import tensor
    x = inputs[i]
    new = list(inputs)
    new[i] = tensor(arr, dtype=x.dtype, device=x.device, requires_grad=x.requires_grad)
    return new


def numerical_jacobian(func, inputs, eps=1e-6):
    """J[i] of shape (numel of all outputs, numel of input i), for inputs that require grad."""
    from ..tensor import Tensor
    jac = []
    for i, x in enumerate(inputs):
        if not (isinstance(x, Tensor) and x.requires_grad):
            jac.append(None)
            continue
        base = _host(x)
        cols = []
        for j in range(base.size):
            vals = []
            for sign in (1, -1):
                arr = base.copy()
                arr.reshape(-1)[j] += sign * eps
                # grad mode stays on: func may itself differentiate (gradgradcheck)
                outs = _flat_outputs(func(*_rebuilt(inputs, i, arr)))
                vals.append(np.concatenate([_host(o).reshape(-1) for o in outs]) if outs else np.zeros(0))
            cols.append((vals[0] - vals[1]) / (2 * eps))
        n_out = sum(o.numel() for o in _flat_outputs(func(*inputs)))
        jac.append(np.stack(cols, axis=1) if cols else np.zeros((n_out, 0)))
    return jac


def analytical_jacobian(func, inputs):
    from . import grad as autograd_grad
    from ..tensor import Tensor
    diff = [x for x in inputs if isinstance(x, Tensor) and x.requires_grad]
    outs = _flat_outputs(func(*inputs))
    rows = []
    for o in outs:
        if not o.requires_grad:
            rows.extend([[np.zeros(x.numel()) for x in diff]] * o.numel())
            continue
        for j in range(o.numel()):
            flat = np.zeros(o.numel())
            flat[j] = 1
            from ..ops.creation import tensor
            g = tensor(flat.reshape(tuple(o.shape)), dtype=o.dtype, device=o.device)
            grads = autograd_grad([o], diff, grad_outputs=[g], retain_graph=True, allow_unused=True)
            rows.append([_host(gr).reshape(-1) if gr is not None else np.zeros(x.numel())
                         for gr, x in zip(grads, diff)])
    jac, k = [], 0
    for x in inputs:
        if isinstance(x, Tensor) and x.requires_grad:
            jac.append(np.stack([r[k] for r in rows], axis=0) if rows else np.zeros((0, x.numel())))
            k += 1
        else:
            jac.append(None)
    return jac


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True, **_ignored):
    """True if autograd's gradients of func at inputs match finite differences."""
    from ..tensor import Tensor
    inputs = (inputs,) if isinstance(inputs, Tensor) else tuple(inputs)
    for x in _tensors(inputs):
        if x.requires_grad and x.dtype.name != "float64":
            import warnings
            warnings.warn(f"gradcheck: input of dtype {x.dtype.name} is not float64; finite differences "
                          "will be imprecise", stacklevel=2)
    num = numerical_jacobian(func, inputs, eps)
    ana = analytical_jacobian(func, inputs)
    for i, (n, a) in enumerate(zip(num, ana)):
        if n is None:
            continue
        if n.shape != a.shape or not np.allclose(a, n, atol=atol, rtol=rtol, equal_nan=False):
            diff = np.abs(a - n).max() if n.shape == a.shape else "shape mismatch"
            msg = (f"Jacobian mismatch for output 0 with respect to input {i},\n"
                   f"numerical:{n}\nanalytical:{a}\nmax abs difference: {diff}")
            if raise_exception:
                raise GradcheckError(msg)
            return False
    return True


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  gen_non_contig_grad_outputs=False, raise_exception=True, **_ignored):
    """True if second derivatives of func (through create_graph=True) match finite differences."""
    from . import grad as autograd_grad
    from ..ops.random import randn
    from ..tensor import Tensor
    inputs = (inputs,) if isinstance(inputs, Tensor) else tuple(inputs)
    outs = _flat_outputs(func(*inputs))
    if grad_outputs is None:
        grad_outputs = tuple(randn(*o.shape, dtype=o.dtype, device=o.device, requires_grad=True) for o in outs)
    else:
        grad_outputs = (grad_outputs,) if isinstance(grad_outputs, Tensor) else tuple(grad_outputs)
    n_in = len(inputs)
    diff_idx = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]

    def first_grads(*args):
        xs, gos = args[:n_in], args[n_in:]
        outs = [o for o in _flat_outputs(func(*xs)) if o.requires_grad]
        gos = [g for g, o in zip(gos, _flat_outputs(func(*xs))) if o.requires_grad]
        grads = autograd_grad(outs, [xs[i] for i in diff_idx], grad_outputs=gos, create_graph=True,
                              allow_unused=True)
        from ..ops.creation import zeros_like
        return tuple(g if g is not None else zeros_like(xs[i]) * 0 for g, i in zip(grads, diff_idx))

    return gradcheck(first_grads, tuple(inputs) + tuple(grad_outputs), eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception)
