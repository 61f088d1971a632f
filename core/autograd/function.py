"""Custom differentiable operations: `autograd.Function` in PyTorch's new style.

    class Exp(Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            y, = ctx.saved_tensors
            return g * y                      # Tensor ops: differentiable again

    y = Exp.apply(x)

`forward` runs with grad mode off and receives tensors and any other Python values;
`backward` receives one gradient per output of `forward` and returns one gradient per
input of `forward` (None for non-tensor inputs and inputs that need none). Because
`backward` is run by the engine like any other node's vjp, a backward written with
Tensor ops is recorded under `create_graph=True` and can be differentiated again.
"""
from __future__ import annotations

import functools
import inspect
import weakref

from . import grad_mode
from .engine import _FREED
from .graph import record, record_multi

_state = grad_mode.state


class FunctionCtx:
    """The `ctx` handed to forward and backward: a place to keep what backward needs."""

    def __init__(self, needs_input_grad):
        self.needs_input_grad = needs_input_grad
        self.materialize_grads = True
        self.to_save = ()
        self._non_differentiable = ()
        self._dirty = ()
        self._node_ref = None

    def save_for_backward(self, *tensors):
        """Keep tensors for backward; modifying one in place before backward is an error."""
        from ..tensor import Tensor
        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(f"save_for_backward can only save variables, but argument {i} is of "
                                f"type {type(t).__name__}")
        self.to_save = tensors

    @property
    def saved_tensors(self):
        if self._node_ref is not None:
            node = self._node_ref()
            if node is None or node.vjp is None:
                raise RuntimeError(_FREED)
        return tuple(self.to_save)

    saved_variables = saved_tensors

    def mark_non_differentiable(self, *tensors):
        """These outputs get no gradient (backward still receives zeros for them)."""
        self._non_differentiable = self._non_differentiable + tensors

    def mark_dirty(self, *tensors):
        """These inputs were modified in place by forward (and are returned as outputs)."""
        self._dirty = self._dirty + tensors

    def set_materialize_grads(self, value: bool):
        """With False, backward receives None (not zeros) for outputs that got no gradient."""
        self.materialize_grads = bool(value)


class _FunctionMeta(type):
    def __init__(cls, name, bases, attrs):
        super().__init__(name, bases, attrs)
        fwd = inspect.getattr_static(cls, "forward", None)
        cls._legacy = fwd is not None and not isinstance(fwd, (staticmethod, classmethod)) \
            and name != "Function"


class Function(metaclass=_FunctionMeta):
    """Base class of custom differentiable ops; subclass it and call `YourFn.apply(*args)`."""

    def __init__(self, *args, **kwargs):
        if type(self)._legacy:
            raise RuntimeError(_LEGACY)

    def __call__(self, *args, **kwargs):
        raise RuntimeError(_LEGACY)

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def setup_context(ctx, inputs, output):
        """Optional (PyTorch 2 style): with it, forward takes no ctx and this saves what backward needs."""
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for your custom "
                                  "autograd.Function to use it with backward mode AD.")

    vjp = backward

    @classmethod
    def apply(cls, *args, **kwargs):
        """Run forward (grad mode off) and, if an input requires grad, record a graph node."""
        from ..tensor import Tensor
        if cls._legacy:
            raise RuntimeError(_LEGACY)
        enabled = _state.enabled
        needs = tuple(isinstance(a, Tensor) and a._rg and enabled for a in args)
        ctx = FunctionCtx(needs)
        custom_setup = cls.setup_context is not Function.setup_context
        _state.enabled = False
        try:
            if custom_setup:
                output = cls.forward(*args, **kwargs)
                cls.setup_context(ctx, args, output)
            else:
                output = cls.forward(ctx, *args, **kwargs)
        finally:
            _state.enabled = enabled
        if not any(needs):
            return output
        return _connect(cls, ctx, args, output)


def _connect(cls, ctx, args, output):
    """Attach the node of one `apply` call to forward's outputs."""
    from ..tensor import Tensor
    is_tuple = isinstance(output, tuple)
    outs = list(output) if is_tuple else [output]
    t_inputs = [a for a in args if isinstance(a, Tensor)]
    t_pos = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
    input_ids = {id(a) for a in t_inputs}
    dirty = {id(t) for t in ctx._dirty}
    non_diff = {id(t) for t in ctx._non_differentiable}
    for t in ctx._dirty:
        if t._rg and t.grad_fn is None:
            raise RuntimeError("a leaf Variable that requires grad has been used in an in-place operation.")

    seen = set()
    diff = []                              # positions in outs of differentiable outputs
    for i, o in enumerate(outs):
        if not isinstance(o, Tensor):
            continue
        oid = id(o)
        is_dirty = oid in dirty
        if (not is_dirty and (oid in input_ids or o._rg)) or oid in seen:
            o = o.detach()                 # never re-parent an input, a leaf or a repeated output
            outs[i] = o
        seen.add(oid)
        if oid not in non_diff and o._dtype.category >= 2:        # floating point or complex
            diff.append(i)
    if not diff:
        return output

    meta = [(o.shape, o._dtype, o.device) if isinstance(o, Tensor) else None for o in outs]
    n_args = len(args)
    name = cls.__name__ + "Backward"
    one = len(diff) == 1

    def vjp(grads):
        gl = [grads] if one else grads
        full = [None] * len(meta)
        for pos, g in zip(diff, gl):
            full[pos] = g
        if ctx.materialize_grads:
            from ..ops.creation import zeros
            for pos, m in enumerate(meta):
                if m is not None and full[pos] is None:
                    full[pos] = zeros(m[0], dtype=m[1], device=m[2])
        res = cls.backward(ctx, *full)
        if not isinstance(res, tuple):
            res = res if isinstance(res, list) else (res,)
        if len(res) != n_args:
            if len(res) > n_args and all(r is None for r in res[n_args:]):
                res = res[:n_args]
            else:
                raise RuntimeError(f"function {name} returned an incorrect number of gradients "
                                   f"(expected {n_args}, got {len(res)})")
        in_grads = []
        for i, r in enumerate(res):
            if i not in t_pos:
                if r is not None:
                    raise RuntimeError(f"function {name} returned a gradient different than None at "
                                       f"position {i + 1}, but the corresponding forward input was not "
                                       "a Variable")
                continue
            in_grads.append(_validate(name, i, r, args[i]))
        return tuple(in_grads)

    saved = tuple(t for t in ctx.to_save if t is not None)
    diff_outs = [outs[i] for i in diff]
    if one:
        record(name, diff_outs[0], t_inputs, vjp, saved=saved)
    else:
        record_multi(name, diff_outs, t_inputs, vjp, saved=saved)
    node = diff_outs[0].grad_fn
    node.materialize = ctx.materialize_grads
    ctx._node_ref = weakref.ref(node)
    return tuple(outs) if is_tuple else outs[0]


def _validate(name, i, g, x):
    """Gradient g returned for input x: None if x needs none, else shaped and typed like x."""
    if g is None or not x._rg:
        return None
    from ..tensor import Tensor
    if not isinstance(g, Tensor):
        raise TypeError(f"function {name} returned a {type(g).__name__} as the gradient of input {i}; "
                        "expected a Tensor or None")
    if tuple(g.shape) != tuple(x.shape):
        from ..ops._core import broadcast_shapes, sum_to
        try:
            ok = broadcast_shapes(tuple(g.shape), tuple(x.shape)) == tuple(g.shape)
        except RuntimeError:
            ok = False
        if not ok:
            raise RuntimeError(f"Function {name} returned an invalid gradient at index {i} - got "
                               f"{list(g.shape)} but expected shape compatible with {list(x.shape)}")
        g = sum_to(g, tuple(x.shape))
    if g._dtype is not x._dtype:
        g = g.to(x._dtype)
    return g


def once_differentiable(backward):
    """Decorator for a Function's backward that is not itself differentiable: it runs with grad
    mode off, and differentiating its result raises instead of silently giving wrong answers."""
    @functools.wraps(backward)
    def wrapper(ctx, *grads):
        from ..tensor import Tensor
        enabled = _state.enabled
        _state.enabled = False
        try:
            result = backward(ctx, *grads)
        finally:
            _state.enabled = enabled
        if not enabled:
            return result
        req = [g for g in grads if isinstance(g, Tensor) and g._rg]
        if not req:
            return result
        tup = result if isinstance(result, tuple) else (result,)
        out = []
        for r in tup:
            if isinstance(r, Tensor) and r._dtype.category >= 2:
                r = r.detach()
                record("DelayedError", r, req, _delayed_error)
            out.append(r)
        return tuple(out) if isinstance(result, tuple) else out[0]
    return wrapper


def _delayed_error(g):
    raise RuntimeError("trying to differentiate twice a function that was marked with "
                       "@once_differentiable")


_LEGACY = ("Legacy autograd function with non-static forward method is deprecated. Please use new-style "
           "autograd function with static forward method, and call it as Fn.apply(...)")

# PyTorch spells the ctx type this way in a few places
BackwardCFunction = FunctionCtx
InplaceFunction = Function
