"""tensorplug.fx: torch.fx's program capture and transformation toolkit.

`symbolic_trace` runs a Module on Proxies and returns a GraphModule (its Graph of Nodes plus
generated Python); Graph and Node edit programs; Interpreter / Transformer run or rebuild them;
`replace_pattern` rewrites subgraphs; `passes.shape_prop.ShapeProp` records tensor metadata.
"""
from . import node, graph, proxy, graph_module, interpreter, _symbolic_trace  # noqa: F401
from ._symbolic_trace import Tracer, symbolic_trace, wrap
from .graph import Graph
from .graph_module import GraphModule
from .interpreter import Interpreter, Transformer
from .node import Node, has_side_effect, map_arg
from .proxy import Proxy
from .subgraph_rewriter import replace_pattern
from . import subgraph_rewriter, passes  # noqa: F401
from . import _dispatch

_dispatch.install()      # tensorplug's functions record on Proxies from here on (see _dispatch.py)

__all__ = ["symbolic_trace", "Tracer", "wrap", "Graph", "GraphModule", "Interpreter", "Transformer", "Node",
           "Proxy", "map_arg", "replace_pattern", "has_side_effect"]
