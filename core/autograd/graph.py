"""Graph nodes of the define-by-run tape.

An op that sees an input requiring grad (with grad mode on) calls `record`, which
attaches a `Node` to its output. A node holds the op's vector-Jacobian product
`vjp(grad) -> grads per input`, written with frontend Tensor ops, so running it with
grad mode on records the backward computation itself (higher-order gradients).
"""
from __future__ import annotations

import weakref

from . import grad_mode

_state = grad_mode.state


class Node:
    """A recorded op. `next_functions` mirrors PyTorch's: ((node, output_nr) | (None, 0), ...)."""
    __slots__ = ("_name", "vjp", "edges", "saved", "versions", "n_out", "out_meta", "tensor_hooks",
                 "hooks", "__weakref__")

    def __init__(self, name, vjp, edges, saved=(), n_out=1):
        self._name = name
        self.vjp = vjp
        self.edges = edges
        self.saved = saved
        self.versions = tuple(t._version for t in saved) if saved else ()
        self.n_out = n_out
        self.out_meta = None
        self.tensor_hooks = None      # {output_nr: [hook(grad) -> grad | None]}
        self.hooks = None             # [hook(grad_inputs, grad_outputs)] after this node ran

    def name(self) -> str:
        return self._name

    @property
    def next_functions(self):
        return tuple(e if e is not None else (None, 0) for e in self.edges)

    def register_hook(self, fn):
        """fn(grad_inputs, grad_outputs) called after this node computed its input gradients."""
        if self.hooks is None:
            self.hooks = []
        self.hooks.append(fn)
        return _RemovableHandle(self.hooks, fn)

    def add_tensor_hook(self, output_nr, fn):
        if self.tensor_hooks is None:
            self.tensor_hooks = {}
        lst = self.tensor_hooks.setdefault(output_nr, [])
        lst.append(fn)
        return _RemovableHandle(lst, fn)

    def __repr__(self):
        return f"<{self._name} object at {hex(id(self))}>"


class AccumulateGrad(Node):
    """The sink of a leaf tensor: adds incoming gradients into `variable.grad`."""
    __slots__ = ("_variable",)

    def __init__(self, variable):
        super().__init__("AccumulateGrad", None, ())
        self._variable = variable

    @property
    def variable(self):
        return self._variable


class _RemovableHandle:
    __slots__ = ("_list", "_fn")

    def __init__(self, lst, fn):
        self._list, self._fn = lst, fn

    def remove(self):
        try:
            self._list.remove(self._fn)
        except ValueError:
            pass


def edge_of(t):
    """Where a gradient for tensor `t` flows: (node, output_nr), or None if t needs none."""
    if not t._rg:
        return None
    fn = t.grad_fn
    if fn is not None:
        return (fn, t._out_nr)
    acc = t._acc() if t._acc is not None else None
    if acc is None:
        acc = AccumulateGrad(t)
        t._acc = weakref.ref(acc)
    return (acc, 0)


def needs_grad(*tensors) -> bool:
    """True when grad mode is on and some input requires grad (the only time to record)."""
    if not _state.enabled:
        return False
    for t in tensors:
        if t._rg:
            return True
    return False


def record(name, out, inputs, vjp, saved=()):
    """Attach a node computing `vjp(grad_out) -> (grad per input)` to `out` (one output)."""
    node = Node(name, vjp, tuple(edge_of(t) for t in inputs), saved)
    out.grad_fn = node
    out._out_nr = 0
    out._rg = True
    return out


def record_multi(name, outs, inputs, vjp, saved=()):
    """Like `record` for an op with several differentiable outputs; vjp gets a list of grads
    (zeros for outputs that received none)."""
    node = Node(name, vjp, tuple(edge_of(t) for t in inputs), saved, n_out=len(outs))
    node.out_meta = [(o.shape, o._dtype, o.device) for o in outs]
    for i, o in enumerate(outs):
        o.grad_fn = node
        o._out_nr = i
        o._rg = True
    return outs
