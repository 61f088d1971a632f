"""Graph nodes of the define-by-run tape.

An op that sees an input requiring grad (with grad mode on) calls `record`, which
attaches a `Node` to its output. A node holds the op's vector-Jacobian product
`vjp(grad) -> grads per input`, written with frontend Tensor ops, so running it with
grad mode on records the backward computation itself (higher-order gradients).

The engine (`engine.py`) drops `vjp` and `saved` as soon as a node has run (unless the
graph is retained), which frees the tensors the backward rule captured.
"""
from __future__ import annotations

import weakref

from . import grad_mode

_state = grad_mode.state


_V0 = (0,)


class Node:
    """A recorded op. `next_functions` mirrors PyTorch's: ((node, output_nr) | (None, 0), ...).

    `edges[i]` is where the gradient for input i goes; `n_out` is the number of
    differentiable outputs; `materialize` (default True) makes the engine pass zeros,
    not None, for outputs of a multi-output node that received no gradient."""
    __slots__ = ("_name", "vjp", "edges", "saved", "versions", "n_out", "out_meta", "tensor_hooks",
                 "retain_hooks", "hooks", "pre_hooks", "materialize", "__weakref__")

    def __init__(self, name, vjp, edges, saved=(), n_out=1):
        self._name = name
        self.vjp = vjp
        self.edges = edges
        self.saved = saved
        if not saved:
            self.versions = ()
        elif len(saved) == 1:           # the common case, without a comprehension (or a new tuple)
            v = saved[0]._ver
            self.versions = _V0 if v is None or v[0] == 0 else (v[0],)
        else:
            self.versions = tuple([0 if t._ver is None else t._ver[0] for t in saved])
        self.n_out = n_out
        self.out_meta = None
        self.tensor_hooks = None      # {output_nr: [hook(grad) -> grad | None]}
        self.retain_hooks = None      # {output_nr: [hook]} run after tensor_hooks (retain_grad)
        self.hooks = None             # [hook(grad_inputs, grad_outputs) -> grad_inputs | None]
        self.pre_hooks = None         # [hook(grad_outputs) -> grad_outputs | None]
        self.materialize = True

    def name(self) -> str:
        return self._name

    @property
    def next_functions(self):
        return tuple(e if e is not None else (None, 0) for e in self.edges)

    def register_hook(self, fn):
        """fn(grad_inputs, grad_outputs) runs after this node computed its input gradients;
        returning a tuple replaces grad_inputs."""
        if self.hooks is None:
            self.hooks = []
        self.hooks.append(fn)
        return _RemovableHandle(self.hooks, fn)

    def register_prehook(self, fn):
        """fn(grad_outputs) runs before this node; returning a tuple replaces grad_outputs."""
        if self.pre_hooks is None:
            self.pre_hooks = []
        self.pre_hooks.append(fn)
        return _RemovableHandle(self.pre_hooks, fn)

    def add_tensor_hook(self, output_nr, fn, retain=False):
        """A hook on output `output_nr`'s gradient (Tensor.register_hook on a non-leaf).
        `retain=True` (retain_grad's hook) runs after every ordinary hook, so the retained
        gradient is the final one."""
        attr = "retain_hooks" if retain else "tensor_hooks"
        table = getattr(self, attr)
        if table is None:
            table = {}
            setattr(self, attr, table)
        lst = table.setdefault(output_nr, [])
        lst.append(fn)
        return _RemovableHandle(lst, fn)

    def __repr__(self):
        return f"<{self._name} object at {hex(id(self))}>"


class AccumulateGrad(Node):
    """The sink of a leaf tensor: adds incoming gradients into `variable.grad`."""
    __slots__ = ("_variable",)

    def __init__(self, variable):
        # Node.__init__'s fields, set here: a leaf's sink is remade for every graph that reaches it
        self._name, self.vjp, self.edges, self.saved, self.versions = "AccumulateGrad", None, (), (), ()
        self.n_out, self.materialize = 1, True
        self.out_meta = self.tensor_hooks = self.retain_hooks = self.hooks = self.pre_hooks = None
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

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()
        return False


refresh_view = None     # ops.view_inplace.refresh: remakes the history of a view its root outdated


def edge_of(t):
    """Where a gradient for tensor `t` flows: (node, output_nr), or None if t needs none."""
    if not t._rg:
        return None
    base = t._base
    if base is not None and t._vgen != base._rebases:
        refresh_view(t)
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


def _edges(inputs):
    if len(inputs) == 1:                      # the common case, without a comprehension
        return (edge_of(inputs[0]),)
    return tuple([edge_of(t) for t in inputs])


def record(name, out, inputs, vjp, saved=()):
    """Attach a node computing `vjp(grad_out) -> (grad per input)` to `out` (one output)."""
    if len(inputs) == 1:
        t = inputs[0]
        fn = t.grad_fn
        # edge_of's answer for the commonest input, an op's output that is not a view, inline
        edges = ((fn, t._out_nr),) if fn is not None and t._base is None and t._rg else (edge_of(t),)
    elif len(inputs) == 2:
        edges = (edge_of(inputs[0]), edge_of(inputs[1]))
    else:
        edges = tuple([edge_of(t) for t in inputs])
    node = Node(name, vjp, edges, saved)
    out.grad_fn = node
    if out._out_nr:
        out._out_nr = 0
    out._rg = True
    return out


def record_multi(name, outs, inputs, vjp, saved=()):
    """Like `record` for an op with several differentiable outputs; vjp gets a list of grads
    (zeros for outputs that received none)."""
    if len(outs) == 1:              # the engine passes a lone output's grad bare
        many = vjp
        vjp = lambda g: many([g])   # noqa: E731
    node = Node(name, vjp, _edges(inputs), saved, n_out=len(outs))
    node.out_meta = [(o.shape, o._dtype, o.device) for o in outs]
    for i, o in enumerate(outs):
        o.grad_fn = node
        o._out_nr = i
        o._rg = True
    return outs
