"""GraphModule: an nn.Module whose forward is Python generated from its Graph.

It holds copies of exactly the submodules, parameters and buffers the graph reads (get_attr /
call_module targets, with plain Modules standing in for the containers on the way), and compiles
the graph's code into `forward` on every `recompile()` (assigning `graph` recompiles). Each
instance gets its own class, so instances with different graphs keep different forwards.
"""
from __future__ import annotations

import copy
import itertools
import linecache
import os

from ..nn.modules.module import Module
from .graph import Graph

_counter = itertools.count()


def _copy_attr(from_module, to_module, target: str):
    *prefix, field = target.split(".")
    for item in prefix:
        f = getattr(from_module, item)
        t = getattr(to_module, item, None)
        if f is t:
            return
        if t is None:
            t = Module()
            setattr(to_module, item, t)
        from_module, to_module = f, t
    orig = getattr(from_module, field)
    from ..nn.parameter import Parameter
    from ..tensor import Tensor
    if isinstance(orig, Tensor) and not isinstance(orig, Parameter):
        to_module.register_buffer(field, orig)
    else:
        setattr(to_module, field, orig)


def _assign_attr(value, to_module, target: str):
    *prefix, field = target.split(".")
    for item in prefix:
        t = getattr(to_module, item, None)
        if t is None:
            t = Module()
            setattr(to_module, item, t)
        to_module = t
    from ..nn.parameter import Parameter
    from ..tensor import Tensor
    if isinstance(value, Tensor) and not isinstance(value, Parameter):
        to_module.register_buffer(field, value)
    else:
        setattr(to_module, field, value)


def _exec(src: str, globals_: dict):
    """Compile src under a unique file name that linecache knows (tracebacks show the code)."""
    key = f"<eval_with_key>.{next(_counter)}"
    linecache.cache[key] = (len(src), None, src.splitlines(True), key)
    exec(compile(src, key, "exec"), globals_)
    return globals_


class GraphModule(Module):
    """Module running `graph` (see the module docstring); root: the Module (or a dict name -> value)
    the graph's get_attr / call_module targets are copied from."""

    def __new__(cls, *args, **kwargs):
        for base in cls.__mro__:
            if base.__name__ == "GraphModuleImpl":
                cls = base.__mro__[1]
                break

        class GraphModuleImpl(cls):
            pass
        return super().__new__(GraphModuleImpl)

    def __init__(self, root, graph: Graph, class_name: str = "GraphModule"):
        super().__init__()
        self.__class__.__name__ = class_name
        self.__class__.__qualname__ = class_name
        if isinstance(root, Module):
            if hasattr(root, "training"):
                self.training = root.training
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    _copy_attr(root, self, node.target)
        elif isinstance(root, dict):
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    if node.target not in root:
                        raise RuntimeError(f"Node {node} referenced target {node.target} but that target "
                                           f"was not provided in ``root``!")
                    _assign_attr(root[node.target], self, node.target)
        else:
            raise RuntimeError("Unsupported type " + str(root) + " passed for root!")
        self.graph = graph
        self._tracer_cls = graph._tracer_cls

    @property
    def graph(self) -> Graph:
        return self.__dict__["_graph"]

    @graph.setter
    def graph(self, g: Graph):
        assert isinstance(g, Graph), f"Expected a Graph instance, but got {type(g)}"
        self.__dict__["_graph"] = g
        g.owning_module = self
        self.recompile()

    @property
    def code(self) -> str:
        """The Python source of forward, as generated from the graph at the last recompile()."""
        if "_code" not in self.__dict__:
            raise RuntimeError("Code has not been generated! Please report a bug to PyTorch")
        return self.__dict__["_code"]

    def recompile(self):
        """Regenerate forward from the graph (call after editing it); returns the PythonCode."""
        pc = self.graph.python_code(root_module="self")
        self.__dict__["_code"] = pc.src
        g = _exec(pc.src, dict(pc.globals))
        type(self).forward = g["forward"]
        return pc

    def __str__(self):
        return "\n".join([super().__str__(), self.code,
                          "# To see more debug info, please use `graph_module.print_readable()`"])

    def print_readable(self, print_output=True, include_stride=False, include_device=False, colored=False):
        """forward's code as a class definition (what `print(gm)` shows, more readable); returns it."""
        src = self.graph.python_code(root_module="self", verbose=True).src.lstrip("\n")
        text = f"class {type(self).__name__}(torch.nn.Module):\n" + src
        lines = text.split("\n")
        text = lines[0] + "\n" + "\n".join("    " + ln if ln.strip() else "" for ln in lines[1:])
        text = text.rstrip() + "\n"
        if print_output:
            print(text)
        return text

    def to_folder(self, folder, module_name: str = "FxModule"):
        """Write the module as importable source: `module.py` (a class `module_name` with this
        forward), `state_dict.pt` and a `.pt` per submodule without a source form; `__init__.py`."""
        import tensorplug
        os.makedirs(folder, exist_ok=True)
        tensorplug.save(self.state_dict(), os.path.join(folder, "state_dict.pt"))
        tab = " " * 4
        lines = []
        for name, mod in self._modules.items():
            r = repr(mod)
            std = type(mod).__module__.startswith("tensorplug.nn") and "\n" not in r and type(mod) is not Module
            if std:
                lines.append(f"{tab * 2}self.{name} = torch.nn.{r}")
            else:
                tensorplug.save(mod, os.path.join(folder, f"{name}.pt"))
                lines.append(f"{tab * 2}self.{name} = torch.load(r'{folder}/{name}.pt', weights_only=False)")
        for name, buf in self._buffers.items():
            if buf is not None:
                lines.append(f"{tab * 2}self.register_buffer('{name}', torch.empty({list(buf.shape)}, "
                             f"dtype=torch.{str(buf.dtype).split('.')[-1]}))")
        for name, p in self._parameters.items():
            if p is not None:
                lines.append(f"{tab * 2}self.{name} = torch.nn.Parameter(torch.empty({list(p.shape)}, "
                             f"dtype=torch.{str(p.dtype).split('.')[-1]}))")
        lines.append(f"{tab * 2}self.load_state_dict(torch.load(r'{folder}/state_dict.pt'))")
        forward = "\n".join(tab + ln for ln in self.code.strip("\n").split("\n"))
        # tensorplug under the name the code uses (a plain `import torch` could find PyTorch)
        src = ("import tensorplug as torch\nfrom tensorplug.nn import *  # noqa: F401,F403\n"
               f"class {module_name}(torch.nn.Module):\n{tab}def __init__(self):\n{tab * 2}super().__init__()\n"
               + "\n".join(lines) + "\n\n" + forward + "\n")
        with open(os.path.join(folder, "module.py"), "w") as f:
            f.write(src)
        with open(os.path.join(folder, "__init__.py"), "w") as f:
            f.write(f"from .module import {module_name}\n")

    def __deepcopy__(self, memo):
        res = Module.__new__(Module)
        memo[id(self)] = res
        fake = Module()
        fake.__dict__ = copy.deepcopy({k: v for k, v in self.__dict__.items() if k not in ("_graph", "_code")}, memo)
        graph = copy.deepcopy(self.graph, memo)
        out = GraphModule(fake, graph, type(self).__name__)
        memo[id(self)] = out
        return out

    def __copy__(self):
        out = GraphModule(self, self.graph, type(self).__name__)
        return out

    def __reduce__(self):
        raise TypeError("pickling a GraphModule is not supported; use to_folder()")
