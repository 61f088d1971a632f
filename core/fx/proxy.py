"""Proxy: the stand-in value symbolic tracing runs a program on, recording what is done to it.

Every operator, method call, attribute read and call of a tensorplug function on a Proxy appends a
Node to its tracer's graph and gives back a new Proxy. Functions of tensorplug see Proxies through
the recording stand-ins of `_dispatch.py` (tensorplug has no `__torch_function__`); operators and
methods through the dunders below. Python control flow on a Proxy (`bool`, `len`, iteration other
than unpacking) raises `TraceError`, as it cannot be recorded.
"""
from __future__ import annotations

import dis
import operator
import sys
from bisect import bisect_left

from .graph import Graph
from .node import Node


class TraceError(ValueError):
    pass


class TracerBase:
    """What Proxies need of a tracer: create nodes and proxies, turn arguments into graph values."""
    graph: Graph
    record_stack_traces = False
    check_mutable_operations = False
    trace_asserts = False
    proxy_buffer_attributes = False
    traced_func_name = "forward"

    def create_node(self, kind, target, args, kwargs, name=None, type_expr=None) -> Node:
        """Insert a node into the graph (the hook a subclass overrides to tag or redirect nodes)."""
        return self.graph.create_node(kind, target, args, kwargs, name, type_expr)

    def proxy(self, node: Node) -> "Proxy":
        return Proxy(node, self)

    def create_proxy(self, kind, target, args, kwargs, name=None, type_expr=None, proxy_factory_fn=None):
        """A node for target applied to args / kwargs (Proxies in them become their nodes), as a Proxy."""
        args_ = self.create_arg(args)
        kwargs_ = self.create_arg(kwargs)
        assert isinstance(args_, tuple) and isinstance(kwargs_, dict)
        node = self.create_node(kind, target, args_, kwargs_, name, type_expr)
        return self.proxy(node) if proxy_factory_fn is None else proxy_factory_fn(node)

    def create_arg(self, a):
        """a as a graph argument: Proxies become Nodes, containers are mapped, constants stay."""
        if isinstance(a, Proxy):
            return a.node
        if isinstance(a, tuple) and hasattr(a, "_fields"):
            return type(a)(*(self.create_arg(e) for e in a))
        if isinstance(a, (tuple, list)):
            return type(a)(self.create_arg(e) for e in a)
        if isinstance(a, dict):
            out = {}
            for k, v in a.items():
                k = self.create_arg(k)
                if isinstance(k, Node):
                    raise RuntimeError(f"Keys for dictionaries used as an argument cannot contain a Node. Got key: {k}")
                out[k] = self.create_arg(v)
            return out
        if isinstance(a, slice):
            return slice(self.create_arg(a.start), self.create_arg(a.stop), self.create_arg(a.step))
        if isinstance(a, range):
            return range(self.create_arg(a.start), self.create_arg(a.stop), self.create_arg(a.step))
        if a is None or a is Ellipsis or isinstance(a, (Node, str, int, float, bool, complex, type)) or callable(a):
            return a
        from ..dtypes import dtype
        from ..device import device
        from ..tensor import Tensor
        if isinstance(a, (dtype, device, Tensor)):
            return a
        raise NotImplementedError(f"argument of type: {type(a)}")

    def to_bool(self, obj: "Proxy") -> bool:
        raise TraceError("symbolically traced variables cannot be used as inputs to control flow")

    def iter(self, obj: "Proxy"):
        raise TraceError("Proxy object cannot be iterated. This can be attempted when the Proxy is used in a "
                         "loop or as a *args or **kwargs function argument. See the torch.fx docs on "
                         "pytorch.org for a more detailed explanation of what types of control flow can be "
                         "traced, and check out the Proxy docstring for help troubleshooting Proxy iteration "
                         "errors")

    def keys(self, obj: "Proxy"):
        return Attribute(obj, "keys")()


class GraphAppendingTracer(TracerBase):
    """A tracer that appends to an existing graph (for Proxies made from a graph's own nodes)."""

    def __init__(self, graph: Graph):
        super().__init__()
        self.graph = graph
        self.scope = None
        self.module_stack = {}
        self.node_name_to_scope = {}


class Proxy:
    """A value of the graph being built (see the module docstring); `node` is the Node it stands for."""

    def __init__(self, node: Node, tracer: TracerBase | None = None):
        if tracer is None:
            tracer = GraphAppendingTracer(node.graph)
        self.tracer = tracer
        self.node = node
        from . import _dispatch
        _dispatch.install()

    def __repr__(self):
        return f"Proxy({self.node.name})"

    __hash__ = object.__hash__

    def __getattr__(self, k):
        if k.startswith("__") and k.endswith("__"):
            raise AttributeError(k)          # protocol probes (copy, pickle, numpy) are no ops to record
        return Attribute(self, k)

    def __call__(self, *args, **kwargs):
        return self.tracer.create_proxy("call_method", "__call__", (self,) + args, kwargs)

    def __iter__(self):
        # `a, b = proxy` unpacks into indexing; any other iteration cannot be traced
        frame = sys._getframe(1)
        insts = list(dis.get_instructions(frame.f_code))
        i = bisect_left([x.offset for x in insts], frame.f_lasti)
        if i < len(insts) and insts[i].opname == "UNPACK_SEQUENCE":
            return (self[j] for j in range(insts[i].argval))
        return self.tracer.iter(self)

    def __bool__(self):
        return self.tracer.to_bool(self)

    def __len__(self):
        raise RuntimeError("'len' is not supported in symbolic tracing by default. If you want this call to be "
                           "recorded, please call torch.fx.wrap('len') at module scope")

    def keys(self):
        return self.tracer.keys(self)

    def __setitem__(self, key, value):
        self.tracer.create_proxy("call_function", operator.setitem, (self, key, value), {})


class Attribute(Proxy):
    """`proxy.name`: a call of it records a call_method node; any other use a getattr node (made lazily)."""

    def __init__(self, root: Proxy, attr: str):
        self.root = root
        self.attr = attr
        self.tracer = root.tracer
        self._node = None

    @property
    def node(self):
        if self._node is None:
            self._node = self.tracer.create_proxy("call_function", getattr, (self.root, self.attr), {}).node
        return self._node

    def __call__(self, *args, **kwargs):
        return self.tracer.create_proxy("call_method", self.attr, (self.root,) + args, kwargs)


_BINARY = ("add", "sub", "mul", "floordiv", "truediv", "mod", "pow", "lshift", "rshift", "and_", "or_", "xor",
           "matmul")
_COMPARE = ("eq", "ne", "lt", "gt", "le", "ge")


def _define(name):
    target = getattr(operator, name)

    def impl(*args, **kwargs):
        return args[0].tracer.create_proxy("call_function", target, args, kwargs)
    impl.__name__ = f"__{name.strip('_')}__"
    setattr(Proxy, impl.__name__, impl)


def _define_reflected(name):
    target = getattr(operator, name)

    def impl(self, rhs):
        return self.tracer.create_proxy("call_function", target, (rhs, self), {})
    impl.__name__ = f"__r{name.strip('_')}__"
    setattr(Proxy, impl.__name__, impl)


for _n in (*_BINARY, *_COMPARE, "getitem", "neg", "pos", "invert", "abs"):
    _define(_n)
for _n in _BINARY:
    _define_reflected(_n)
