"""Automatic differentiation: backward, grad, grad modes, custom Functions, gradcheck.

    x = tensorplug.tensor([3.], requires_grad=True)
    y = x ** 2
    g, = autograd.grad(y, x, create_graph=True)     # 6, with a graph of its own
    g2, = autograd.grad(g, x)                       # 2
"""
from __future__ import annotations

from .engine import _accumulate, anomaly, run_backward
from .finite_differences import GradcheckError, gradcheck, gradgradcheck
from .grad_mode import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled

__all__ = ["backward", "grad", "no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled",
           "inference_mode", "Variable", "Function", "gradcheck", "gradgradcheck", "functional",
           "detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled", "GradcheckError"]


def _as_tuple(x):
    if x is None:
        return None
    from ..tensor import Tensor
    if isinstance(x, Tensor):
        return (x,)
    return tuple(x)


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, grad_variables=None,
             inputs=None):
    """Accumulate d(tensors)/d(leaf) into each leaf's `.grad` (weighted by grad_tensors).

    The graph is freed afterwards unless retain_graph (default: create_graph). With
    `inputs`, only those tensors' `.grad` are accumulated (leaves or not)."""
    tensors = _as_tuple(tensors)
    if grad_tensors is None:
        grad_tensors = grad_variables
    grads = _as_tuple(grad_tensors) if grad_tensors is not None else (None,) * len(tensors)
    if len(grads) != len(tensors):
        raise RuntimeError(f"grad can be implicitly created only for scalar outputs; got {len(grads)} "
                           f"gradients for {len(tensors)} tensors")
    if retain_graph is None:
        retain_graph = create_graph
    if inputs is not None:
        inputs = _as_tuple(inputs)
        if not inputs:
            raise RuntimeError("'inputs' argument to backward() cannot be empty.")
        found = run_backward(tensors, grads, retain_graph, create_graph, targets=list(inputs),
                             allow_unused=True)
        for t, g in zip(inputs, found):
            if g is not None and not (t.grad_fn is not None and t.retains_grad):
                _accumulate(t, g, create_graph)
        return
    run_backward(tensors, grads, retain_graph, create_graph)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, only_inputs=True,
         allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """Gradients of outputs with respect to inputs, as a tuple; `.grad` is left untouched.

    With create_graph=True the gradients have a graph of their own (higher-order gradients).
    An input the outputs don't depend on is an error unless allow_unused (then None, or zeros
    with materialize_grads)."""
    outputs = _as_tuple(outputs)
    inputs = _as_tuple(inputs)
    if not inputs:
        raise RuntimeError("grad requires non-empty inputs.")
    if allow_unused is None:
        allow_unused = materialize_grads
    elif materialize_grads and not allow_unused:
        raise ValueError("Expected allow_unused to be True or not passed when materialize_grads=True, "
                         "but got: allow_unused=False.")
    grads = _as_tuple(grad_outputs) if grad_outputs is not None else (None,) * len(outputs)
    if len(grads) != len(outputs):
        raise RuntimeError(f"grad_outputs has {len(grads)} entries for {len(outputs)} outputs")
    if retain_graph is None:
        retain_graph = create_graph
    if is_grads_batched:
        return _batched_grad(outputs, inputs, grads, retain_graph, create_graph, allow_unused)
    res = run_backward(outputs, grads, retain_graph, create_graph, targets=list(inputs),
                       allow_unused=allow_unused)
    if materialize_grads:
        from ..ops.creation import zeros_like
        res = tuple(g if g is not None else zeros_like(t) for g, t in zip(res, inputs))
    return res


def _batched_grad(outputs, inputs, grads, retain_graph, create_graph, allow_unused):
    """is_grads_batched: the first dim of each grad_output indexes independent vjps."""
    from ..ops.creation import zeros_like
    from .. import stack
    n = grads[0].shape[0]
    per = []
    for b in range(n):
        res = run_backward(outputs, [g[b] for g in grads], True if b < n - 1 else retain_graph,
                           create_graph, targets=list(inputs), allow_unused=allow_unused)
        per.append(res)
    out = []
    for j, t in enumerate(inputs):
        col = [r[j] for r in per]
        if all(c is None for c in col):
            out.append(None)
        else:
            out.append(stack([c if c is not None else zeros_like(t) for c in col]))
    return tuple(out)


def Variable(data, requires_grad=False, volatile=False):
    """The 0.2-era wrapper: returns `data` (a Tensor) with requires_grad set."""
    from ..tensor import Tensor
    if not isinstance(data, Tensor):
        raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
    if requires_grad:
        data.requires_grad_(True)
    return data


class detect_anomaly:
    """Context manager / decorator: backward raises as soon as a node returns NaN gradients."""

    def __init__(self, check_nan: bool = True):
        self._check = bool(check_nan)

    def __enter__(self):
        self._prev = anomaly.enabled
        anomaly.enabled = self._check

    def __exit__(self, *exc):
        anomaly.enabled = self._prev
        return False

    def __call__(self, fn):
        import functools

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.__class__(self._check):
                return fn(*args, **kwargs)
        return wrapper


class set_detect_anomaly:
    """Turn anomaly detection on or off (immediately; restored on exit when used with `with`)."""

    def __init__(self, mode: bool, check_nan: bool = True):
        self._prev = anomaly.enabled
        anomaly.enabled = bool(mode) and check_nan

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        anomaly.enabled = self._prev
        return False


def is_anomaly_enabled() -> bool:
    return anomaly.enabled


def __getattr__(name):
    # the heavier parts load on first use
    import importlib
    if name in ("Function", "FunctionCtx", "once_differentiable", "function"):
        mod = importlib.import_module(f"{__name__}.function")
        return mod if name == "function" else getattr(mod, name)
    if name in ("functional", "profiler"):
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'tensorplug.autograd' has no attribute {name!r}")
