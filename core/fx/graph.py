"""Graph: the ordered list of Nodes an fx program is, with the methods that build and edit it.

Nodes live in a doubly linked list (a sentinel `root` node closes the ring) so insertion and erasure
are O(1); `inserting_before` / `inserting_after` move the insertion point that every create_node
uses. Names come from the graph's Namespace (see _namespace.py).
"""
from __future__ import annotations

import inspect

from ._codegen import python_code as _python_code
from ._namespace import Namespace, snake_case
from .node import Node, map_arg


class _NodeList:
    """The graph's nodes in order (reversible); iteration tolerates erasing the current node."""

    def __init__(self, graph, reverse=False):
        self.graph = graph
        self.reverse = reverse

    def __len__(self):
        return self.graph._len

    def __iter__(self):
        root = self.graph._root
        cur = root._prev if self.reverse else root._next
        while cur is not root:
            nxt = cur._prev if self.reverse else cur._next
            if not cur._erased:
                yield cur
            cur = nxt

    def __reversed__(self):
        return _NodeList(self.graph, not self.reverse)

    def __repr__(self):
        return repr(list(self))


class _InsertPoint:
    def __init__(self, graph, fn):
        self.graph, self.fn = graph, fn

    def __enter__(self):
        self.orig, self.graph._insert = self.graph._insert, self.fn

    def __exit__(self, *exc):
        self.graph._insert = self.orig


class Graph:
    """A program as a list of Nodes (see the module docstring)."""

    def __init__(self, owning_module=None, tracer_cls=None, tracer_extras=None):
        self._root = Node(self, "", "root", "", (), {})
        self._len = 0
        self._graph_namespace = Namespace()
        self._owning_module = owning_module
        self._tracer_cls = tracer_cls
        self._tracer_extras = tracer_extras
        self._insert = self._root.prepend
        self._co_fields: dict = {}

    @property
    def owning_module(self):
        return self._owning_module

    @owning_module.setter
    def owning_module(self, mod):
        self._owning_module = mod

    @property
    def nodes(self) -> _NodeList:
        return _NodeList(self)

    # -- building --------------------------------------------------------------------------------------
    def create_node(self, op, target, args=None, kwargs=None, name=None, type_expr=None) -> Node:
        """A new node at the insertion point (by default the end); name defaults to one from target."""
        args = () if args is None else args
        kwargs = {} if kwargs is None else kwargs
        assert isinstance(args, tuple), "args must be a tuple"
        assert isinstance(kwargs, dict), "kwargs must be a dict"
        candidate = name if name is not None else self._target_to_str(target)
        name = self._graph_namespace.create_name(candidate, None)
        n = Node(self, name, op, target, args, kwargs, type_expr)
        self._insert(n)
        self._len += 1
        return n

    def _target_to_str(self, target) -> str:
        if callable(target) and not isinstance(target, str):
            op = getattr(target, "__name__", None) or type(target).__name__
        else:
            op = target
            if op.startswith("__") and op.endswith("__") and len(op) > 4:
                op = op[2:-2]
        return snake_case(op)

    def placeholder(self, name, type_expr=None, default_value=inspect.Signature.empty) -> Node:
        """An input of the program, named `name` (`default_value`: its default when not passed)."""
        args = () if default_value is inspect.Signature.empty else (default_value,)
        return self.create_node("placeholder", name, args=args, type_expr=type_expr)

    def get_attr(self, qualified_name, type_expr=None) -> Node:
        """A read of the owning module's attribute `qualified_name` (`linear.weight`)."""
        return self.create_node("get_attr", qualified_name, type_expr=type_expr)

    def call_function(self, the_function, args=None, kwargs=None, type_expr=None) -> Node:
        return self.create_node("call_function", the_function, args, kwargs, type_expr=type_expr)

    def call_method(self, method_name, args=None, kwargs=None, type_expr=None) -> Node:
        return self.create_node("call_method", method_name, args, kwargs, type_expr=type_expr)

    def call_module(self, module_name, args=None, kwargs=None, type_expr=None) -> Node:
        return self.create_node("call_module", module_name, args, kwargs, type_expr=type_expr)

    def output(self, result, type_expr=None) -> Node:
        """The program's return value (a Node or a structure of Nodes)."""
        return self.create_node("output", "output", (result,), type_expr=type_expr)

    def inserting_before(self, n: Node | None = None):
        """Context manager: nodes created inside go right before n (the start of the graph if None)."""
        if n is None:
            return self.inserting_after(self._root)
        assert n.graph is self, "Node to insert before is not in graph."
        return _InsertPoint(self, n.prepend)

    def inserting_after(self, n: Node | None = None):
        """Context manager: each node created inside goes right after n (so several come out in
        reverse creation order, as in torch.fx); at the end of the graph if n is None."""
        if n is None:
            return self.inserting_before(self._root)
        assert n.graph is self, "Node to insert after is not in graph."
        return _InsertPoint(self, n.append)

    # -- editing ---------------------------------------------------------------------------------------
    def erase_node(self, to_erase: Node) -> None:
        """Remove a node that has no users."""
        if len(to_erase.users) > 0:
            raise RuntimeError(f"Tried to erase Node {to_erase} but it still had {len(to_erase.users)} "
                               f"users in the graph: {to_erase.users}!")
        if to_erase.graph is not self:
            raise RuntimeError(f"Attempting to remove {to_erase} from wrong graph!")
        if to_erase._erased:
            return
        to_erase._remove_from_list()
        to_erase._erased = True
        self._len -= 1
        to_erase._update_args_kwargs((), {})

    def node_copy(self, node: Node, arg_transform=lambda x: x) -> Node:
        """A copy of node (from any graph) at the insertion point, its input Nodes mapped by arg_transform."""
        args = map_arg(node.args, arg_transform)
        kwargs = map_arg(node.kwargs, arg_transform)
        assert isinstance(args, tuple) and isinstance(kwargs, dict)
        result = self.create_node(node.op, node.target, args, kwargs, node.name, node.type)
        result.meta = dict(node.meta)
        return result

    def graph_copy(self, g: "Graph", val_map: dict, return_output_node=False):
        """Copy every node of g but its output into self; val_map (old -> new node) is filled in and
        may be pre-seeded (to substitute inputs). Returns what g's output returns, mapped."""
        for node in g.nodes:
            if node in val_map:
                continue
            if node.op == "output":
                rv = map_arg(node.args[0], lambda n: val_map[n])
                return (rv, node) if return_output_node else rv
            val_map[node] = self.node_copy(node, lambda n: val_map[n])
        return None

    def eliminate_dead_code(self, is_impure_node=None) -> bool:
        """Erase the nodes whose values nothing uses (impure ones stay); True if any was erased."""
        changed = False
        for node in reversed(self.nodes):
            impure = is_impure_node(node) if is_impure_node is not None else node.is_impure()
            if not impure and len(node.users) == 0:
                self.erase_node(node)
                changed = True
        return changed

    def lint(self) -> None:
        """Check the graph's invariants: each input defined earlier in this graph, names unique,
        targets well typed, get_attr / call_module targets present in the owning module."""
        seen_names, seen = set(), set()
        for node in self.nodes:
            if node.graph is not self:
                raise RuntimeError(f"Node '{node}' does not belong to this Graph!")
            for inp in node.all_input_nodes:
                if inp.graph is not self:
                    raise RuntimeError(f"Argument '{inp}' of Node '{node}' does not belong to this Graph, "
                                       f"but was used as an argument! If you are copying nodes from another "
                                       f"graph, make sure to use ``arg_transform`` on node_copy() to remap "
                                       f"values\n{self}")
                if inp not in seen:
                    raise RuntimeError(f"Argument '{inp}' of Node '{node}' was used before it has been "
                                       f"defined! Please check that Nodes in the graph are topologically "
                                       f"ordered\n{self}")
                if node not in inp.users:
                    raise RuntimeError(f"Node '{node}' is missing from the users of '{inp}'")
            if node.name in seen_names:
                raise RuntimeError(f"Node redefined name {node.name}!")
            seen_names.add(node.name)
            seen.add(node)
        mod = self._owning_module
        if mod is not None:
            for node in self.nodes:
                if node.op in ("get_attr", "call_module"):
                    obj = mod
                    for i, atom in enumerate(node.target.split(".")):
                        if not hasattr(obj, atom):
                            raise RuntimeError(f"Node {node.name} target {node.target} references "
                                               f"nonexistent attribute {atom} of "
                                               f"{'.'.join(node.target.split('.')[:i]) or 'root'}")
                        obj = getattr(obj, atom)

    # -- printing / code -------------------------------------------------------------------------------
    def python_code(self, root_module: str = "self", *, verbose: bool = False, **_):
        """The source of `def forward(root_module, <placeholders>)` running this graph (`.src`) and
        the globals it needs (`.globals`)."""
        return _python_code(self, root_module, verbose)

    def __str__(self):
        lines = []
        for node in self.nodes:
            s = node.format_node()
            if s:
                lines.append("    " + s)
        return "graph():\n" + "\n".join(lines)

    def print_tabular(self):
        """Print the nodes as a table (opcode, name, target, args, kwargs); needs `tabulate`."""
        try:
            from tabulate import tabulate
        except ImportError:
            print("`print_tabular` relies on the library `tabulate`, which could not be found on this "
                  "machine. Run `pip install tabulate` to install the library.")
            raise
        rows = [[n.op, n.name, n.target, n.args, n.kwargs] for n in self.nodes]
        print(tabulate(rows, headers=["opcode", "name", "target", "args", "kwargs"]))

    def find_nodes(self, *, op, target=None):
        return [n for n in self.nodes if n.op == op and (target is None or n.target == target)]

    def __deepcopy__(self, memo):
        g = Graph(tracer_cls=self._tracer_cls)
        memo = memo if memo is not None else {}
        out = g.graph_copy(self, memo, return_output_node=True)
        if out is not None:
            rv, old_out = out
            g.output(rv, type_expr=old_out.type)
        return g

