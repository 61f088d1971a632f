"""Tracer / symbolic_trace / wrap: run a Module's forward on Proxies and keep what it did as a Graph.

While `Tracer.trace` runs, `nn.Module.__call__` asks `call_module` (leaf modules — tensorplug.nn's
own, except Sequential — become call_module nodes, others are traced through), `nn.Module.__getattr__`
turns parameters (and buffers) of the root into get_attr nodes, and the functions registered with
`wrap` are replaced in the globals that registered them so they become call_function leaves.
"""
from __future__ import annotations

import builtins
import functools
import inspect
import math

from .graph import Graph
from .proxy import TracerBase

# (id(globals dict), function name) -> that globals dict, for every wrap() call
_wrapped_fns_to_patch: dict = {}


def wrap(fn_or_name):
    """Record calls of a module-level function as call_function nodes instead of tracing into it.
    Call it at the top level of the module that defines (or imports) the function."""
    frame = inspect.currentframe().f_back
    if frame.f_code.co_name != "<module>":
        raise NotImplementedError("wrap must be called at the top level of a module")
    if callable(fn_or_name):
        name = getattr(fn_or_name, "__name__", None) or fn_or_name.__code__.co_name
    elif isinstance(fn_or_name, str):
        name = fn_or_name
    else:
        raise AssertionError("wrap must be called with the name of a function or the function itself")
    _wrapped_fns_to_patch[(id(frame.f_globals), name)] = frame.f_globals
    return fn_or_name


def _assert(condition, message):
    """torch._assert: raise AssertionError(message) unless condition; recorded when traced."""
    from ._dispatch import _proxy_in
    p = _proxy_in((condition,), {})
    if p is not None:
        return p.tracer.create_proxy("call_function", _assert, (condition, message), {})
    assert condition, message


def _assert_is_none(value, msg):
    assert value is None, msg


_assert.__qualname__ = _assert.__name__ = "_assert"
_assert._fx_side_effect = True
_assert_is_none._fx_side_effect = True


def _wrapped(orig):
    @functools.wraps(orig)
    def wrapper(*args, **kwargs):
        from ._dispatch import _proxy_in
        p = _proxy_in(args, kwargs)
        if p is None:
            return orig(*args, **kwargs)
        out = p.tracer.create_proxy("call_function", orig, args, kwargs)
        out.node.meta["is_wrapped"] = True
        return out
    return wrapper


class _Patcher:
    """Attribute / dict-entry replacements undone in reverse order."""

    def __init__(self):
        self._undo = []

    def setattr(self, owner, name, new):
        had = name in owner.__dict__
        self._undo.append((lambda o=owner, n=name, old=owner.__dict__.get(name), h=had:
                           setattr(o, n, old) if h else delattr(o, n)))
        setattr(owner, name, new)

    def setitem(self, d, name, new):
        had, old = name in d, d.get(name)
        self._undo.append(lambda: d.__setitem__(name, old) if had else d.pop(name, None))
        d[name] = new

    def restore(self):
        while self._undo:
            self._undo.pop()()


def _is_module(x):
    from ..nn.modules.module import Module
    return isinstance(x, Module)


class Tracer(TracerBase):
    """Builds a Graph by running a Module (or function) on Proxies; subclass it to change what
    becomes a leaf (`is_leaf_module`), how nodes are made (`create_node` / `create_proxy`), or what
    attribute reads give (`getattr`)."""

    def __init__(self, autowrap_modules=(math,), autowrap_functions=(), param_shapes_constant=False):
        super().__init__()
        self._autowrap_functions = tuple(autowrap_functions)
        self.param_shapes_constant = param_shapes_constant
        self.proxy_buffer_attributes = True
        self.submodule_paths = None
        self.root = None
        self.graph = None
        self.tensor_attrs = {}

    # -- hooks -----------------------------------------------------------------------------------------
    def is_leaf_module(self, m, module_qualified_name: str) -> bool:
        """Whether m appears as one call_module node (tensorplug.nn's modules but Sequential do)."""
        from ..nn.modules.container import Sequential
        mod = type(m).__module__
        return (mod.startswith("tensorplug.nn") or mod.startswith("torch.nn")) and not isinstance(m, Sequential)

    def path_of_module(self, mod) -> str:
        """The qualified name of mod inside the root module."""
        if self.submodule_paths is not None:
            path = self.submodule_paths.get(id(mod))
            if path is None:
                raise NameError("module is not installed as a submodule")
            return path
        for n, p in self.root.named_modules():
            if mod is p:
                return n
        raise NameError("module is not installed as a submodule")

    def call_module(self, m, forward, args, kwargs):
        """What a module call during tracing gives: a call_module node for a leaf, else its traced forward."""
        name = self.path_of_module(m)
        if not self.is_leaf_module(m, name):
            return forward(*args, **kwargs)
        return self.create_proxy("call_module", name, args, kwargs)

    def getattr(self, attr: str, attr_val, parameter_proxy_cache: dict):
        """What reading a module attribute gives: a get_attr Proxy for the root's parameters and buffers."""
        from ..nn.parameter import Parameter
        from ..tensor import Tensor

        def lookup(collection):
            for n, p in collection:
                if attr_val is p:
                    if n not in parameter_proxy_cache:
                        parameter_proxy_cache[n] = self.create_proxy("get_attr", n, (), {})
                    return parameter_proxy_cache[n]
            return None
        if isinstance(attr_val, Parameter):
            hit = lookup(self.root.named_parameters())
            if hit is not None:
                return hit
        if self.proxy_buffer_attributes and isinstance(attr_val, Tensor):
            hit = lookup(self.root.named_buffers())
            if hit is not None:
                return hit
        return attr_val

    def create_arg(self, a):
        """Besides TracerBase's: parameters and submodules of the root become get_attr nodes, other
        tensors are stored on the root as `_tensor_constant<i>` and read with get_attr."""
        from ..nn.parameter import Parameter
        from ..tensor import Tensor
        if isinstance(a, Parameter):
            for n, p in self.root.named_parameters():
                if a is p:
                    return self.create_node("get_attr", n, (), {})
            raise NameError("parameter is not a member of this module")
        if _is_module(a):
            for n, p in self.root.named_modules():
                if a is p:
                    return self.create_node("get_attr", n, (), {})
            raise NameError("module is not installed as a submodule")
        if isinstance(a, Tensor):
            q = self.tensor_attrs.get(id(a))
            if q is None:
                for n, b in self.root.named_buffers():
                    if b is a:
                        q = n
                        break
            if q is None:
                i = 0
                while hasattr(self.root, f"_tensor_constant{i}"):
                    i += 1
                q = f"_tensor_constant{i}"
                setattr(self.root, q, a)
                self.tensor_attrs[id(a)] = q
                self._keep.append(a)
            return self.create_node("get_attr", q, (), {})
        return super().create_arg(a)

    # -- tracing ---------------------------------------------------------------------------------------
    def create_args_for_root(self, root_fn, is_module, concrete_args=None):
        """The placeholders (Proxies) root_fn is called with, one per parameter (self is the root)."""
        sig = inspect.signature(root_fn)
        params = list(sig.parameters.values())
        args = []
        if is_module:
            if not params or params[0].kind not in (params[0].POSITIONAL_ONLY, params[0].POSITIONAL_OR_KEYWORD):
                raise RuntimeError("``self`` argument cannot be part of *args expansion!")
            params = params[1:]
            args.append(self.root)
        concrete_args = dict(concrete_args or {})
        annotations = getattr(root_fn, "__annotations__", {})
        kw = {}
        for p in params:
            if p.name in concrete_args:
                value = self._concrete(p, concrete_args[p.name])
            else:
                prefix = "*" if p.kind is p.VAR_POSITIONAL else "**" if p.kind is p.VAR_KEYWORD else ""
                default = () if p.default is inspect.Parameter.empty else (p.default,)
                value = self.create_proxy("placeholder", prefix + p.name, default, {},
                                          name=p.name if prefix else None,
                                          type_expr=annotations.get(p.name))
            if p.kind is p.VAR_POSITIONAL:
                return root_fn, args, value, kw, True
            if p.kind is p.KEYWORD_ONLY:
                kw[p.name] = value
            elif p.kind is not p.VAR_KEYWORD:
                args.append(value)
        return root_fn, args, None, kw, False

    def _concrete(self, p, value):
        """A concrete argument still gets a placeholder (`name_1`), checked against the value it was
        specialized to; the traced code sees the value itself."""
        default = () if p.default is inspect.Parameter.empty else (p.default,)
        ph = self.create_proxy("placeholder", f"{p.name}_1", default, {})
        if value is None:
            self.create_proxy("call_function", _assert_is_none,
                              (ph, f"{p.name} has been specialized to have value None but got another value"), {})
        elif type(value) in (bool, int, float, str, complex):
            _assert(ph == value, f"{p.name} has been specialized to have value {value} but got another value")
        return value

    def trace(self, root, concrete_args=None) -> Graph:
        """The Graph of root (a Module's forward, or a function) called on placeholder Proxies."""
        from ..nn.modules.module import Module
        from . import _dispatch
        _dispatch.install()
        _dispatch.refresh()             # layers of modules imported since fx was
        if isinstance(root, Module):
            self.root = root
            fn = type(root).forward
            self.submodule_paths = {id(m): n for n, m in root.named_modules()}
        else:
            self.root = Module()
            fn = root
        self.graph = Graph(tracer_cls=getattr(self, "__class__", None))
        self.tensor_attrs = {}
        self._keep = []

        def collect(m, prefix):
            from ..tensor import Tensor
            for k, v in m.__dict__.items():
                if isinstance(v, Tensor):
                    self.tensor_attrs[id(v)] = ".".join(prefix + [k])
                    self._keep.append(v)
            for k, sub in m._modules.items():
                if sub is not None:
                    collect(sub, prefix + [k])
        collect(self.root, [])

        fn, args, varargs, kw, has_var = self.create_args_for_root(fn, isinstance(root, Module), concrete_args)
        cache = {}
        orig_getattr = Module.__getattr__
        orig_call = Module.__call__
        tracer = self

        def module_getattr(mod, attr):
            return tracer.getattr(attr, orig_getattr(mod, attr), cache)

        def module_call(mod, *a, **k):
            def forward(*a, **k):
                return orig_call(mod, *a, **k)
            return tracer.call_module(mod, forward, a, k)

        patcher = _Patcher()
        try:
            patcher.setattr(Module, "__getattr__", module_getattr)
            patcher.setattr(Module, "__call__", module_call)
            for (_, name), g in list(_wrapped_fns_to_patch.items()):
                orig = g.get(name, builtins.__dict__.get(name))
                if orig is not None:
                    patcher.setitem(g, name, _wrapped(orig))
            for f in self._autowrap_functions:
                g = getattr(f, "__globals__", None)
                if g is not None and g.get(f.__name__) is f:
                    patcher.setitem(g, f.__name__, _wrapped(f))
            if has_var:
                result = fn(*args, *_iter_varargs(varargs), **kw)
            else:
                result = fn(*args, **kw)
            self.create_node("output", "output", (self.create_arg(result),), {},
                             type_expr=getattr(fn, "__annotations__", {}).get("return"))
        finally:
            patcher.restore()
            self.submodule_paths = None
        return self.graph


def _iter_varargs(p):
    raise NotImplementedError("tracing a function with *args is not supported; pass concrete_args")


def symbolic_trace(root, concrete_args=None):
    """A GraphModule computing what root (a Module or function) computes, built by tracing it."""
    from .graph_module import GraphModule
    tracer = Tracer()
    graph = tracer.trace(root, concrete_args)
    name = type(root).__name__ if _is_module(root) else root.__name__
    return GraphModule(tracer.root, graph, name)



