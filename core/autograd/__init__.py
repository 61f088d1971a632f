"""Automatic differentiation: backward, grad, grad modes, custom Functions, gradcheck."""
from __future__ import annotations

from .engine import run_backward
from .finite_differences import GradcheckError, gradcheck, gradgradcheck
from .grad_mode import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled

__all__ = ["backward", "grad", "no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled",
           "inference_mode", "Variable", "Function", "gradcheck", "gradgradcheck", "functional"]


def _as_tuple(x):
    if x is None:
        return None
    from ..tensor import Tensor
    if isinstance(x, Tensor):
        return (x,)
    return tuple(x)


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, grad_variables=None,
             inputs=None):
    """Accumulate d(tensors)/d(leaf) into each leaf's `.grad` (weighted by grad_tensors)."""
    tensors = _as_tuple(tensors)
    if grad_tensors is None:
        grad_tensors = grad_variables
    grads = _as_tuple(grad_tensors) if grad_tensors is not None else (None,) * len(tensors)
    if len(grads) != len(tensors):
        raise RuntimeError(f"grad_tensors has {len(grads)} entries for {len(tensors)} tensors")
    if retain_graph is None:
        retain_graph = create_graph
    if inputs is not None:
        inputs = _as_tuple(inputs)
        found = run_backward(tensors, grads, retain_graph, create_graph, targets=list(inputs),
                             allow_unused=True)
        from .engine import _accumulate
        for t, g in zip(inputs, found):
            if g is not None:
                _accumulate(t, g, create_graph)
        return
    run_backward(tensors, grads, retain_graph, create_graph)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, only_inputs=True,
         allow_unused=False, is_grads_batched=False, materialize_grads=False):
    """Gradients of outputs with respect to inputs, as a tuple; `.grad` is left untouched."""
    outputs = _as_tuple(outputs)
    inputs = _as_tuple(inputs)
    grads = _as_tuple(grad_outputs) if grad_outputs is not None else (None,) * len(outputs)
    if len(grads) != len(outputs):
        raise RuntimeError(f"grad_outputs has {len(grads)} entries for {len(outputs)} outputs")
    if retain_graph is None:
        retain_graph = create_graph
    res = run_backward(outputs, grads, retain_graph, create_graph, targets=list(inputs),
                       allow_unused=allow_unused or materialize_grads)
    if materialize_grads:
        from ..ops.creation import zeros_like
        res = tuple(g if g is not None else zeros_like(t) for g, t in zip(res, inputs))
    return res


def Variable(data, requires_grad=False, volatile=False):
    """The 0.2-era wrapper: returns `data` (a Tensor) with requires_grad set."""
    from ..tensor import Tensor
    if not isinstance(data, Tensor):
        raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
    if requires_grad:
        data.requires_grad_(True)
    return data


def __getattr__(name):
    # the heavier parts load on first use
    if name == "Function":
        from .function import Function
        return Function
    if name == "functional":
        from . import functional
        return functional
    raise AttributeError(f"module 'tensorplug.autograd' has no attribute {name!r}")
