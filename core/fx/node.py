"""Node: one operation of an fx Graph, and map_arg / map_aggregate over argument structures.

A node's `op` is one of placeholder / get_attr / call_function / call_method / call_module / output;
`args` / `kwargs` hold other Nodes wherever values flow, so the use-def links (`users`,
`all_input_nodes`) are kept up to date whenever they are assigned.
"""
from __future__ import annotations

import builtins
import operator

Argument = object   # what args hold: Nodes, (nested) tuples / lists / dicts / slices of them, constants

OPS = ("placeholder", "get_attr", "call_function", "call_method", "call_module", "output",
       "root")   # root: the sentinel closing a graph's node ring


def map_aggregate(a, fn):
    """fn applied to every leaf of a nested tuple / list / dict / slice structure (structure kept)."""
    if type(a) is tuple or (isinstance(a, tuple) and not hasattr(a, "_fields")):
        return tuple(map_aggregate(e, fn) for e in a)
    if isinstance(a, tuple):                              # namedtuple: rebuilt with its type
        return type(a)(*(map_aggregate(e, fn) for e in a))
    if isinstance(a, list):
        return [map_aggregate(e, fn) for e in a]
    if isinstance(a, dict):
        return {k: map_aggregate(v, fn) for k, v in a.items()}
    if isinstance(a, slice):
        return slice(map_aggregate(a.start, fn), map_aggregate(a.stop, fn), map_aggregate(a.step, fn))
    return fn(a)


def map_arg(a, fn):
    """fn applied to every Node inside the argument structure `a` (other leaves unchanged)."""
    assert callable(fn), "torch.fx.map_arg(a, fn): fn must be a callable"
    return map_aggregate(a, lambda x: fn(x) if isinstance(x, Node) else x)


def qualified_name(fn) -> str:
    """The dotted name a target prints with: `operator.add`, `builtins.getattr`, `torch.relu`,
    `__main__.my_fn` (the recording stand-ins of tensorplug's functions carry their `torch.` path)."""
    q = getattr(fn, "_fx_qualname", None)
    if q is not None:
        return q
    from . import _dispatch
    q = _dispatch.qualname(fn)
    if q is not None:
        return q
    if getattr(builtins, getattr(fn, "__name__", ""), None) is fn:
        return f"builtins.{fn.__name__}"
    name = getattr(fn, "__qualname__", None) or fn.__name__
    module = getattr(fn, "__module__", None) or "builtins"
    if module == "_operator":
        module = "operator"
    elif module.startswith("tensorplug"):
        module = "torch" + module[len("tensorplug"):]
    return f"{module}.{name}"


def _format_arg(a) -> str:
    if isinstance(a, Node):
        return "%" + a.name
    if isinstance(a, tuple):
        items = ", ".join(_format_arg(x) for x in a)
        return f"({items},)" if len(a) == 1 else f"({items})"
    if isinstance(a, list):
        return "[" + ", ".join(_format_arg(x) for x in a) + "]"
    if isinstance(a, dict):
        return "{" + ", ".join(f"{k}: {_format_arg(v)}" for k, v in a.items()) + "}"
    return str(a)


class Node:
    """One operation of a Graph (see the module docstring); create nodes through Graph methods."""

    def __init__(self, graph, name, op, target, args, kwargs, return_type=None):
        if op not in OPS:
            raise ValueError(f"unknown op kind {op!r}")
        if op == "call_function" and not callable(target):
            raise ValueError(f"Node [graph = {graph}, name = '{name}'] target {target} has type "
                             f"{type(target)} but a Callable is expected")
        if op in ("placeholder", "get_attr", "call_method", "call_module", "output") and not isinstance(target, str):
            raise ValueError(f"Node [graph = {graph}, name = '{name}'] target {target} has type "
                             f"{type(target)} but a str is expected")
        self.graph = graph
        self.name = name
        self.op = op
        self.target = target
        self._input_nodes: dict = {}
        self.users: dict = {}
        self.type = return_type
        self._prev = self._next = self
        self._erased = False
        self.meta: dict = {}
        self._args = ()
        self._kwargs = {}
        self._update_args_kwargs(map_arg(args, lambda x: x), map_arg(kwargs, lambda x: x))

    # -- linked list -----------------------------------------------------------------------------------
    @property
    def next(self):
        return self._next

    @property
    def prev(self):
        return self._prev

    def prepend(self, x: "Node") -> None:
        """Move (or insert) node x to right before self."""
        assert self.graph is x.graph, "Attempting to move a Node into a different Graph"
        if self is x:
            return
        x._remove_from_list()
        p = self._prev
        p._next, x._prev = x, p
        x._next, self._prev = self, x

    def append(self, x: "Node") -> None:
        """Move (or insert) node x to right after self."""
        self._next.prepend(x)

    def _remove_from_list(self):
        p, n = self._prev, self._next
        p._next, n._prev = n, p
        self._prev = self._next = self

    # -- arguments -------------------------------------------------------------------------------------
    @property
    def args(self) -> tuple:
        return self._args

    @args.setter
    def args(self, a):
        self._update_args_kwargs(map_arg(a, lambda x: x), self._kwargs)

    @property
    def kwargs(self) -> dict:
        return self._kwargs

    @kwargs.setter
    def kwargs(self, k):
        self._update_args_kwargs(self._args, map_arg(k, lambda x: x))

    def update_arg(self, idx, arg):
        args = list(self.args)
        args[idx] = arg
        self.args = tuple(args)

    def update_kwarg(self, key, arg):
        self.kwargs = {**self.kwargs, key: arg}

    @property
    def all_input_nodes(self) -> list:
        """The Nodes this node reads, in the order args then kwargs name them first."""
        return list(self._input_nodes)

    def _update_args_kwargs(self, new_args, new_kwargs):
        self._args, self._kwargs = tuple(new_args) if not isinstance(new_args, tuple) else new_args, new_kwargs
        for old in self._input_nodes:
            old.users.pop(self, None)
        self._input_nodes = {}
        map_arg(self._args, lambda n: self._input_nodes.setdefault(n))
        map_arg(self._kwargs, lambda n: self._input_nodes.setdefault(n))
        for n in self._input_nodes:
            n.users.setdefault(self)

    def replace_all_uses_with(self, replace_with: "Node", delete_user_cb=lambda user: True, *,
                              propagate_meta=False) -> list:
        """Make every user of self read `replace_with` instead; returns the users changed."""
        if propagate_meta:
            for k, v in self.meta.items():
                replace_with.meta.setdefault(k, v)
        to_process = [u for u in self.users if delete_user_cb(u)]
        for use in to_process:
            use.replace_input_with(self, replace_with)
        return to_process

    def replace_input_with(self, old_input: "Node", new_input: "Node") -> None:
        """Every occurrence of old_input in self's args / kwargs becomes new_input."""
        def sub(n):
            return new_input if n is old_input else n
        self._update_args_kwargs(map_arg(self._args, sub), map_arg(self._kwargs, sub))

    def is_impure(self) -> bool:
        """Whether removing the node could change the program (placeholders, outputs, in-place ops,
        functions marked with has_side_effect, asserts); dead-code elimination keeps those."""
        if self.op in ("placeholder", "output"):
            return True
        if self.op == "call_function":
            return getattr(self.target, "_fx_side_effect", False) or self.target in _side_effectful
        if self.op == "call_method":
            return self.target.endswith("_") and not self.target.endswith("__")
        if self.op == "call_module":
            mod = self.graph.owning_module
            if mod is not None:
                try:
                    sub = mod.get_submodule(self.target)
                except AttributeError:
                    return False
                return getattr(sub, "_is_impure", False)
        return False

    # -- printing --------------------------------------------------------------------------------------
    def __repr__(self):
        return self.name

    def _pretty_target(self):
        if isinstance(self.target, str):
            return self.target
        return qualified_name(self.target)

    def format_node(self, placeholder_names=None, maybe_return_typename=None) -> str:
        """The node as Graph.__str__ shows it (`%add : [num_users=1] = call_function[...](...)`)."""
        if self.op == "placeholder":
            assert isinstance(self.target, str)
            arg_str = self.target
            if self.type is not None:
                arg_str += ": " + _type_repr(self.type)
            if placeholder_names is not None:
                placeholder_names.append(arg_str)
                return None
            typ = f"{_type_repr(self.type)} " if self.type is not None else ""
            default = f"(default={self.args[0]})" if self.args else ""
            return f"%{self.name} : {typ}[num_users={len(self.users)}] = {self.op}[target={self.target}]{default}"
        if self.op == "get_attr":
            typ = f"{_type_repr(self.type)} " if self.type is not None else ""
            return f"%{self.name} : {typ}[num_users={len(self.users)}] = {self.op}[target={self._pretty_target()}]"
        if self.op == "output":
            if self.type is not None and maybe_return_typename is not None:
                maybe_return_typename[0] = f" -> {_type_repr(self.type)}"
            return f"return {_plain(self.args[0])}"
        typ = f"{_type_repr(self.type)} " if self.type is not None else ""
        return (f"%{self.name} : {typ}[num_users={len(self.users)}] = {self.op}[target={self._pretty_target()}]"
                f"(args = {_format_arg(self.args)}, kwargs = {_format_arg(self.kwargs)})")


def _plain(a):
    """An output value as `return ...` prints it: Node names bare, containers with repr of keys."""
    if isinstance(a, Node):
        return a.name
    return repr(map_arg(a, lambda n: _Bare(n.name)))


class _Bare:
    __slots__ = ("s",)

    def __init__(self, s):
        self.s = s

    def __repr__(self):
        return self.s


def _type_repr(t) -> str:
    if isinstance(t, type):
        if t.__module__ == "builtins":
            return t.__qualname__
        mod = t.__module__
        from ..tensor import Tensor
        if t is Tensor:
            return "torch.Tensor"
        return f"{mod}.{t.__qualname__}"
    return repr(t)


# functions whose calls dead-code elimination keeps (has_side_effect adds to it)
_side_effectful: set = {operator.setitem}


def has_side_effect(fn):
    """Mark fn so that dead-code elimination never removes its calls; returns fn."""
    _side_effectful.add(fn)
    return fn

