"""Higher-level differentiation of functions: jacobian, hessian, vjp, jvp, hvp, vhp.

Every helper takes `func` (tensors -> a tensor or a tuple of tensors) and `inputs` (a
tensor or a tuple of tensors), like `torch.autograd.functional`. Results mirror the
structure of the arguments: a tuple where a tuple was given. With `create_graph=True`
the results are differentiable (the computation is recorded); otherwise they are
detached. With `strict=True` an output that is independent of an input is an error
instead of a zero. Forward-mode products (jvp, hvp) use the double-vjp trick, so they
need nothing beyond reverse mode.

    >>> jacobian(lambda x: x ** 2, tensor([1., 2.]))        # diag([2., 4.])
    >>> hessian(lambda x: (x ** 3).sum(), tensor([1., 2.]))  # diag([6., 12.])
"""
from __future__ import annotations

import numpy as np

from . import grad as _grad
from .grad_mode import enable_grad

__all__ = ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"]


# -- argument handling ---------------------------------------------------------------------------
def _as_tuple(x, arg_name, fn_name):
    from ..tensor import Tensor
    if isinstance(x, Tensor):
        return False, (x,)
    if not isinstance(x, tuple):
        x_t = tuple(x) if isinstance(x, list) else None
        if x_t is None:
            raise TypeError(f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of "
                            f"Tensors but the given {arg_name} has type {type(x).__name__}.")
        x = x_t
    for i, el in enumerate(x):
        if not isinstance(el, Tensor):
            raise TypeError(f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of "
                            f"Tensors but the value at index {i} has type {type(el).__name__}.")
    return True, x


def _tuple_post(res, is_tuple):
    """Undo _as_tuple: is_tuple is a bool, or a pair (outer, inner) for nested results."""
    if isinstance(is_tuple, tuple):
        outer, inner = is_tuple
        if not inner:
            res = tuple(r[0] for r in res)
        if not outer:
            res = res[0]
        return res
    return res if is_tuple else res[0]


def _preprocess(inputs, create_graph, need_graph):
    """Inputs as tensors that require grad: the originals when create_graph (so results connect
    to the caller's graph), fresh leaves sharing their data otherwise."""
    out = []
    for x in inputs:
        if create_graph and x.requires_grad:
            out.append(x)
        else:
            out.append(x.detach().requires_grad_(need_graph))
    return tuple(out)


def _postprocess(ts, create_graph):
    if create_graph:
        return ts
    return tuple(t.detach() if t is not None else None for t in ts)


def _validate_v(v, refs, is_tuple, what):
    if len(v) != len(refs):
        if is_tuple:
            raise RuntimeError(f"v is a tuple of invalid length: should be {len(refs)} but got {len(v)}.")
        raise RuntimeError("The given v should contain a single Tensor.")
    for i, (a, b) in enumerate(zip(v, refs)):
        if tuple(a.shape) != tuple(b.shape):
            raise RuntimeError(f"Entry {i} in v has invalid size: should be {list(b.shape)} (the size of "
                               f"the {what}) but got {list(a.shape)}.")


def _single_element_v(refs, what, fn_name):
    from ..ops.creation import ones_like
    if len(refs) != 1 or refs[0].numel() != 1:
        raise RuntimeError(f"The vector v can only be None if the {what} to {fn_name} is a single "
                           f"Tensor with a single element.")
    return (ones_like(refs[0]),)


def _autograd_grad(outputs, inputs, grad_outputs=None, create_graph=False, retain_graph=None):
    """autograd.grad over the outputs that require grad (None for every input if none does)."""
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    outs, gos = [], []
    for o, g in zip(outputs, grad_outputs):
        if o is not None and o.requires_grad:
            outs.append(o)
            gos.append(g)
    if not outs:
        return (None,) * len(inputs)
    return _grad(outs, inputs, gos, retain_graph=retain_graph, create_graph=create_graph, allow_unused=True)


_STRICT = {
    "back": "The output of the user-provided function is independent of input {i}. This is not allowed "
            "in strict mode.",
    "back_trick": "The gradient with respect to the input is independent of entry {i} in the grad_outputs "
                  "when using the double backward trick to compute forward mode gradients. This is not "
                  "allowed in strict mode.",
    "double_back": "The jacobian of the user-provided function is independent of input {i}. This is not "
                   "allowed in strict mode.",
    "double_back_trick": "The hessian of the user-provided function is independent of entry {i} in the "
                         "grad_jacobian. This is not allowed in strict mode as it prevents from using the "
                         "double backward trick to replace forward mode AD.",
}


def _fill_in_zeros(grads, refs, strict, stage):
    from ..ops.creation import zeros_like
    res = []
    for i, (g, r) in enumerate(zip(grads, refs)):
        if g is None:
            if strict:
                raise RuntimeError(_STRICT[stage].format(i=i))
            g = zeros_like(r)
        res.append(g)
    return tuple(res)


def _check_requires_grad(ts, what, strict):
    if not strict:
        return
    for i, t in enumerate(ts):
        if t is None:
            raise RuntimeError(f"The output of the user-provided function is independent of input {i}. "
                               "This is not allowed in strict mode.")
        if not t.requires_grad:
            raise RuntimeError(f"The {what} of the user-provided function is independent of input {i}. "
                               "This is not allowed in strict mode.")


def _single_output(out, fn_name):
    from ..tensor import Tensor
    if not isinstance(out, Tensor):
        raise RuntimeError(f"The function given to {fn_name} should return a single Tensor")
    if out.numel() != 1:
        raise RuntimeError(f"The Tensor returned by the function given to {fn_name} should contain a "
                           f"single element")
    return out.reshape(())


# -- vector products ------------------------------------------------------------------------------
def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T J): the vector-Jacobian product at inputs. v may be None only when
    func returns a single-element tensor."""
    with enable_grad():
        is_in_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
        inputs = _preprocess(inputs, create_graph, need_graph=True)
        outputs = func(*inputs)
        is_out_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", "vjp")
        if v is not None:
            _, v = _as_tuple(v, "v", "vjp")
            _validate_v(v, outputs, is_out_tuple, "output of the user-provided function")
        else:
            _single_element_v(outputs, "user-provided function", "vjp")
        grads = _autograd_grad(outputs, inputs, v, create_graph=create_graph)
        res = _fill_in_zeros(grads, inputs, strict, "back")
    return (_tuple_post(_postprocess(outputs, create_graph), is_out_tuple),
            _tuple_post(_postprocess(res, create_graph), is_in_tuple))


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), J v): the Jacobian-vector product at inputs, by the double-vjp trick
    (J v = d/du (u^T J) v). v may be None only when inputs is a single-element tensor."""
    from ..ops.creation import zeros_like
    with enable_grad():
        is_in_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
        inputs = _preprocess(inputs, create_graph, need_graph=True)
        if v is not None:
            _, v = _as_tuple(v, "v", "jvp")
            _validate_v(v, inputs, is_in_tuple, "input")
        else:
            v = _single_element_v(inputs, "input", "jvp")
        outputs = func(*inputs)
        is_out_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", "jvp")
        us = tuple(zeros_like(o, requires_grad=True) for o in outputs)
        grad_inputs = _autograd_grad(outputs, inputs, us, create_graph=True)
        _check_requires_grad(grad_inputs, "grad_inputs", strict)
        grads = _autograd_grad(grad_inputs, us, v, create_graph=create_graph)
        res = _fill_in_zeros(grads, outputs, strict, "back_trick")
    return (_tuple_post(_postprocess(outputs, create_graph), is_out_tuple),
            _tuple_post(_postprocess(res, create_graph), is_out_tuple))


def _first_derivative(func, inputs, v, create_graph, strict, name):
    """The common start of vhp / hvp: (is_in_tuple, inputs, v, out, d out / d inputs with a graph)."""
    is_in_tuple, inputs = _as_tuple(inputs, "inputs", name)
    inputs = _preprocess(inputs, create_graph, need_graph=True)
    if v is not None:
        _, v = _as_tuple(v, "v", name)
        _validate_v(v, inputs, is_in_tuple, "input")
    else:
        v = _single_element_v(inputs, "input", name)
    out = _single_output(func(*inputs), name)
    jac = _autograd_grad((out,), inputs, create_graph=True)
    _check_requires_grad(jac, "jacobian", strict)
    return is_in_tuple, inputs, v, out, jac


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T H) for a func returning a single-element tensor."""
    with enable_grad():
        is_in_tuple, inputs, v, out, jac = _first_derivative(func, inputs, v, create_graph, strict, "vhp")
        grads = _autograd_grad(jac, inputs, v, create_graph=create_graph)
        res = _fill_in_zeros(grads, inputs, strict, "double_back")
    return (_postprocess((out,), create_graph)[0], _tuple_post(_postprocess(res, create_graph), is_in_tuple))


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), H v) for a func returning a single-element tensor (double-vjp trick; equal
    to vhp for twice continuously differentiable functions)."""
    from ..ops.creation import zeros_like
    with enable_grad():
        is_in_tuple, inputs, v, out, jac = _first_derivative(func, inputs, v, create_graph, strict, "hvp")
        grad_jac = tuple(zeros_like(x, requires_grad=True) for x in inputs)
        double_back = _autograd_grad(jac, inputs, grad_jac, create_graph=True)
        _check_requires_grad(double_back, "hessian", strict)
        grads = _autograd_grad(double_back, grad_jac, v, create_graph=create_graph)
        res = _fill_in_zeros(grads, inputs, strict, "double_back_trick")
    return (_postprocess((out,), create_graph)[0], _tuple_post(_postprocess(res, create_graph), is_in_tuple))


# -- full matrices ---------------------------------------------------------------------------------
def _stack(ts):
    import tensorplug
    return tensorplug.stack(ts)


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False, strategy="reverse-mode"):
    """The Jacobian of func at inputs: entry [i][j] has shape outputs[i].shape + inputs[j].shape
    (a plain tensor when func has one input and one output). Computed with one vjp per output
    element (`vectorize` and `strategy` are accepted for compatibility)."""
    if strategy not in ("reverse-mode", "forward-mode"):
        raise ValueError('Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your '
                         'function has more outputs than inputs, "forward-mode" tends to be more '
                         'performant. Otherwise, prefer to use "reverse-mode".')
    from ..ops.creation import tensor, zeros
    with enable_grad():
        is_in_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        inputs = _preprocess(inputs, create_graph, need_graph=True)
        outputs = func(*inputs)
        is_out_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", "jacobian")
        jac = []
        for i, out in enumerate(outputs):
            n = out.numel()
            rows = [[] for _ in inputs]
            for j in range(n):
                onehot = np.zeros(n)
                onehot[j] = 1.0
                go = tensor(onehot.reshape(tuple(out.shape)), dtype=out.dtype, device=out.device)
                vj = _autograd_grad((out,), inputs, (go,), create_graph=create_graph, retain_graph=True)
                for k, (g, x) in enumerate(zip(vj, inputs)):
                    if g is None:
                        if strict:
                            raise RuntimeError(f"Output {i} of the user-provided function is independent of "
                                               f"input {k}. This is not allowed in strict mode.")
                        g = zeros(tuple(x.shape), dtype=x.dtype, device=x.device)
                    rows[k].append(g)
            blocks = []
            for k, x in enumerate(inputs):
                shape = tuple(out.shape) + tuple(x.shape)
                if n == 0:
                    blocks.append(zeros(shape, dtype=x.dtype, device=x.device))
                elif n == 1:
                    blocks.append(rows[k][0].reshape(shape))
                else:
                    blocks.append(_stack(rows[k]).reshape(shape))
            jac.append(_postprocess(tuple(blocks), create_graph))
    return _tuple_post(tuple(jac), (is_out_tuple, is_in_tuple))


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False,
            outer_jacobian_strategy="reverse-mode"):
    """The Hessian of a func returning a single-element tensor: entry [i][j] has shape
    inputs[i].shape + inputs[j].shape (a plain tensor for one input)."""
    is_in_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")

    def ensure_single(*inp):
        return _single_output(func(*inp), "hessian")

    def jac_func(*inp):
        j = jacobian(ensure_single, inp, create_graph=True)
        _check_requires_grad(j, "jacobian", strict)
        return j

    res = jacobian(jac_func, inputs, create_graph=create_graph, strict=strict, vectorize=vectorize,
                   strategy=outer_jacobian_strategy)
    return _tuple_post(res, (is_in_tuple, is_in_tuple))
