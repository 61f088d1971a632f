"""Python source for a Graph: the `forward` a GraphModule runs and shows as `.code`.

One line per node (`add = x + y`, `relu = torch.relu(add)`, `linear = self.linear(x)`), each
followed by `;  a = b = None` for the values whose last use it is, so intermediates are freed as
early as in eager code. Functions of tensorplug print under their `torch.` names and run through the
global `torch` (tensorplug); other callables become globals named after their qualified name.
"""
from __future__ import annotations

import builtins
import math
import operator

from ._namespace import Namespace
from .node import Node, _type_repr, qualified_name

# operator functions the code spells as Python operators
BINARY = {operator.add: "{} + {}", operator.sub: "{} - {}", operator.mul: "{} * {}", operator.truediv: "{} / {}",
          operator.floordiv: "{} // {}", operator.mod: "{} % {}", operator.pow: "{} ** {}",
          operator.lshift: "{} << {}", operator.rshift: "{} >> {}", operator.and_: "{} & {}",
          operator.or_: "{} | {}", operator.xor: "{} ^ {}", operator.matmul: "{} @ {}",
          operator.eq: "{} == {}", operator.ne: "{} != {}", operator.lt: "{} < {}", operator.le: "{} <= {}",
          operator.gt: "{} > {}", operator.ge: "{} >= {}", operator.getitem: "{}[{}]"}
UNARY = {operator.neg: "-{}", operator.pos: "+{}", operator.invert: "~{}", operator.not_: "not {}"}


class PythonCode:
    """What python_code returns: `src` (the module text) and `globals` it runs with."""

    def __init__(self, src, globals_, wrapped=()):
        self.src = src
        self.globals = globals_
        self.wrapped = list(wrapped)


def format_target(base: str, target: str) -> str:
    """`self.a.b`, with getattr(...) for parts that are not identifiers (`getattr(self.seq, "0")`)."""
    r = base
    for e in target.split("."):
        r = f"{r}.{e}" if e.isidentifier() else f'getattr({r}, "{e}")'
    return r


class _Emitter:
    def __init__(self, graph, root_module):
        self.graph = graph
        self.root = root_module
        self.ns = Namespace()
        self.globals = {"inf": math.inf, "nan": math.nan, "NoneType": type(None)}
        self.wrapped = []
        for n in graph.nodes:                       # values keep their node names
            self.ns.create_name(n.name, None)

    def add_global(self, obj) -> str:
        """The name the code calls obj by, registering it among the globals."""
        q = qualified_name(obj)
        if q.startswith("torch."):
            import tensorplug
            self.globals["torch"] = tensorplug
            return q
        if q.startswith("builtins.") and getattr(builtins, q[9:], None) is obj:
            return q[9:]
        name = self.ns.create_name(q, obj)
        self.globals[name] = obj
        return name

    def repr_arg(self, a) -> str:
        if isinstance(a, Node):
            return a.name
        if isinstance(a, tuple):
            if hasattr(a, "_fields"):
                name = self.add_global(type(a))
                return f"{name}({', '.join(self.repr_arg(x) for x in a)})"
            inner = ", ".join(self.repr_arg(x) for x in a)
            return f"({inner},)" if len(a) == 1 else f"({inner})"
        if isinstance(a, list):
            return "[" + ", ".join(self.repr_arg(x) for x in a) + "]"
        if isinstance(a, dict):
            return "{" + ", ".join(f"{self.repr_arg(k)}: {self.repr_arg(v)}" for k, v in a.items()) + "}"
        if isinstance(a, slice):
            return f"slice({self.repr_arg(a.start)}, {self.repr_arg(a.stop)}, {self.repr_arg(a.step)})"
        from ..dtypes import dtype
        if isinstance(a, dtype):
            import tensorplug
            self.globals["torch"] = tensorplug
            return f"torch.{str(a).split('.')[-1]}"
        if isinstance(a, float) and not math.isfinite(a):
            return "nan" if a != a else ("inf" if a > 0 else "-inf")
        if a is None or a is Ellipsis or isinstance(a, (bool, int, float, complex, str, bytes)):
            return repr(a)
        if isinstance(a, type) or callable(a):
            return self.add_global(a)
        from ..device import device
        if isinstance(a, device):
            self.globals["device"] = device
            return repr(a)
        name = self.ns.create_name("_" + type(a).__name__.lower(), a)   # no source form: a global
        self.globals[name] = a
        return name

    def call_args(self, args, kwargs) -> str:
        parts = [self.repr_arg(a) for a in args] + [f"{k} = {self.repr_arg(v)}" for k, v in kwargs.items()]
        return ", ".join(parts)

    def type_annotation(self, t) -> str:
        if t is None:
            return ""
        s = _type_repr(t)
        if s.startswith("torch."):
            import tensorplug
            self.globals["torch"] = tensorplug
        elif "." in s:
            s = self.add_global(t)
        return " : " + s

    def emit(self, root_module: str, verbose=False):
        nodes = list(self.graph.nodes)
        last_uses: dict = {}
        seen: set = set()
        for node in reversed(nodes):
            for n in node.all_input_nodes:
                if n not in seen:
                    seen.add(n)
                    last_uses.setdefault(node, []).append(n)
        free_vars, body = [], []
        stack_note = verbose
        ret_type = ""
        for node in nodes:
            op, name = node.op, node.name
            if op == "placeholder":
                default = f" = {self.repr_arg(node.args[0])}" if node.args else ""
                free_vars.append(f"{node.target}{self.type_annotation(node.type)}{default}")
                raw = node.target.replace("*", "")
                if raw != name:
                    body.append(f"{name} = {raw}\n")
                continue
            if stack_note:
                body.append("# No stacktrace found for following nodes\n")
                stack_note = False
            if op == "output":
                if node.type is not None:
                    ret_type = " -> " + self.type_annotation(node.type)[3:]
                body.append(f"return {self.repr_arg(node.args[0])}\n")
                continue
            a, k = node.args, node.kwargs
            if op == "call_method":
                line = f"{name} = {self.repr_arg(a[0])}.{node.target}({self.call_args(a[1:], k)})"
            elif op == "call_module":
                line = f"{name} = {format_target(root_module, node.target)}({self.call_args(a, k)})"
            elif op == "get_attr":
                line = f"{name} = {format_target(root_module, node.target)}"
            else:
                t = node.target
                if t in BINARY and len(a) == 2 and not k and type(t) is type(operator.add):
                    line = f"{name} = " + BINARY[t].format(self.repr_arg(a[0]), self.repr_arg(a[1]))
                elif t in UNARY and len(a) == 1 and not k and type(t) is type(operator.add):
                    line = f"{name} = " + UNARY[t].format(self.repr_arg(a[0]))
                elif t is getattr and len(a) == 2 and not k and isinstance(a[1], str) and a[1].isidentifier():
                    line = f"{name} = {self.repr_arg(a[0])}.{a[1]}"
                else:
                    g = self.add_global(t)
                    if node.meta.get("is_wrapped", False) and g not in self.wrapped:
                        self.wrapped.append(g)
                    line = f"{name} = {g}({self.call_args(a, k)})"
            dead = list(last_uses.get(node, ()))
            if not node.users:
                dead.append(node)
            if dead:
                line += ";  " + " = ".join([n.name for n in dead] + ["None"])
            body.append(line + "\n")
        if not body:
            body.append("pass\n")
        code = "".join(body)
        code = "\n".join("    " + ln for ln in code.split("\n"))
        wrap_stmts = "\n".join(f'torch.fx._symbolic_trace.wrap("{w}")' for w in self.wrapped)
        if self.wrapped:
            import tensorplug
            self.globals["torch"] = tensorplug
        prologue = f"def forward({', '.join([root_module] + free_vars)}){ret_type}:"
        src = f"\n{wrap_stmts}\n\n{prologue}\n{code}"
        return PythonCode(src, self.globals, self.wrapped)


def python_code(graph, root_module: str = "self", verbose: bool = False) -> PythonCode:
    """The source (and globals) of `def forward(root_module, ...)` computing graph."""
    return _Emitter(graph, root_module).emit(root_module, verbose)

